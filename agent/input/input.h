/*
 * input: where corrald's messages come from.  One module per kind (in_udp.c,
 * in_stream.c for TCP, TLS and unix-stream, in_unix.c for unix-dgram, in_file.c,
 * in_stdin.c); each frames the bytes it receives into messages and hands them
 * to the sink it was opened with (struct input_sink: corrald's server, or a
 * test's).  All run on the server's libuv loop and never block it.
 */
#ifndef CORRAL_INPUT_H
#define CORRAL_INPUT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "engine/buf.h"
#include "agent/conf/conf.h"
#include "agent/net/tls.h"
#include "agent/input/in_snmptrap.h"

struct input;

/*
 * Where an input's messages go.  deliver() gets each message, framed, with
 * the input it came from (for input_can_pause(), input_tls_peer()) and the
 * sender's address (NULL: none); it may pause or hold the inputs
 * (input_pause, input_hold).  The inputs know nothing else of their
 * receiver.  Copied by input_open().
 */
struct input_sink {
    void (*deliver)(void *ctx, struct input *in, const char *data, size_t len, const char *peer);
    void *ctx;
};

/* Counters every input keeps (exposed as metrics and by `corral stats`). */
struct input_stats {
    uint64_t received;    /* messages handed to the server */
    uint64_t bytes;       /* bytes of those messages */
    uint64_t truncated;   /* messages longer than max-message-size, cut */
    uint64_t errors;      /* framing errors, read errors */
    uint64_t connections; /* accepted connections (stream inputs) */
    uint64_t rejected;    /* connections refused: max-connections-per-peer reached */
    uint64_t evicted;     /* connections closed for a new one: max-connections reached */
    uint64_t idle_closed; /* connections closed for idling */
    uint64_t active;      /* connections open now */
    uint64_t yields;      /* reads stopped for the rest of a loop iteration (in_stream.c) */
    /* datagrams the kernel dropped, its receive buffer full (UDP) */
    uint64_t kernel_drops;
    uint64_t tls_failures[TLS_FAIL_N];      /* TLS handshakes that failed, by reason (tls.h) */
    uint64_t snmp_dropped[SNMPTRAP_DROP_N]; /* snmp-trap: datagrams dropped, by reason */
    uint64_t snmp_informs;                  /* snmp-trap: informs answered */
};

/*
 * Opens an input (binds sockets, opens files) that delivers to sink (NULL:
 * messages are counted and go nowhere).  Returns NULL with a message in err
 * on failure.  conf is the whole configuration, for the limits.
 */
struct input *input_open(const struct input_sink *sink, uv_loop_t *loop,
                         const struct conf_input *ci, const struct conf *conf, struct buf *err);
/*
 * What input_open() would refuse short of binding: an address that does not
 * resolve, a unix socket path too long or naming a file that is not a
 * socket.  For `corrald -t` and `corral check-config`.  Returns 0, or -1
 * with a "file:line: input NAME: message" line in err.
 */
int input_check(const struct conf_input *ci, const struct conf *conf, struct buf *err);
/* Closes the input; its memory is freed once libuv has released every handle. */
void input_close(struct input *in);
const char *input_name(const struct input *in);
const struct input_stats *input_get_stats(const struct input *in);
/* Applies new limits (max-connections, idle-timeout, max-message-size) to a kept input. */
void input_set_limits(struct input *in, const struct conf *conf);
/*
 * Back-pressure: a stream input (TCP, unix-stream, file, stdin) stops
 * reading while paused, so that its senders wait rather than its messages
 * being dropped; a paused TCP connection does not idle out.  Datagram inputs
 * cannot pause (input_can_pause() is false): what they cannot pass on is
 * dropped and counted.
 */
bool input_can_pause(const struct input *in);
void input_pause(struct input *in, bool pause);
/*
 * A UDP input stops reading while held: when the queue to corrald's worker
 * threads (<engine workers>) is full, datagrams wait in the socket's large
 * receive buffer, as they do while the loop is busy with one engine, and
 * what the kernel drops is counted there.  Not to be called from inside the
 * input's read callback (libuv would drop the rest of a batched read).
 */
bool input_can_hold(const struct input *in);
void input_hold(struct input *in, bool hold);
/*
 * The name in the TLS certificate of the client whose message is being
 * delivered (the sink asks during the call), or NULL: not TLS, or no
 * certificate.
 */
const char *input_tls_peer(const struct input *in);
/*
 * A reload keeps an input configured alike; what it reads at opening is
 * read again all the same: a TLS input's certificate, key and CA.
 * input_reload_prepare() loads them (-1 with a "file:line: input NAME:
 * message" line in err: the reload fails, the input keeps what it has);
 * input_reload_commit() puts them in place for the connections accepted
 * from then on.
 */
int input_reload_prepare(struct input *in, const struct conf_input *ci, const struct conf *conf,
                         struct buf *err);
void input_reload_commit(struct input *in);
/* True when the input has ended for good (stdin at its end). */
bool input_finished(const struct input *in);
/* The configuration the input runs with (conf_input_equal() tells whether a reload keeps it). */
const struct conf_input *input_conf(const struct input *in);
/*
 * The address a socket is bound to, as "host:port" or "[v6-host]:port".
 * With port 0 in the configuration the kernel picks the port; the
 * "listening on" lines logged with it are how one learns it.  False if the
 * socket has no address.
 */
bool input_bound_name(uv_os_fd_t fd, char *out, size_t outlen);
/*
 * Resolves a "host:port" listen address for bind(): an IP literal, a name
 * (resolved now, blocking) or an empty host or "*" for every address: "::"
 * (which takes IPv4 too) where the system has IPv6, "0.0.0.0" elsewhere.
 * The one reading of a listen address, for inputs and the stats endpoint
 * alike.  Returns 0, or -1 with a message in err.
 */
int input_resolve(const char *listen, int socktype, struct sockaddr_storage *ss, struct buf *err);

#endif
