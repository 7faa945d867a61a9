/*
 * in_common: what the input modules (in_udp.c, in_stream.c, in_unix.c,
 * in_file.c, in_stdin.c) share: the common head of every input, delivery of
 * a message to the input's sink with its counters, where a datagram's message
 * ends, and socket helpers.  Private to the inputs; the rest of corrald sees
 * only input.h.
 */
#ifndef CORRAL_IN_COMMON_H
#define CORRAL_IN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <uv.h>

#include "engine/buf.h"
#include "agent/conf/conf.h"
#include "agent/input/input.h"

/* The first member of every module's input structure. */
struct input {
    /* a copy of the configuration it was opened with (always named), for input_conf() */
    struct conf_input conf;

    struct input_sink sink; /* where its messages go */
    uv_loop_t *loop;
    /* limits, from struct conf at opening time */
    size_t max_message_size;
    size_t max_connections;
    size_t max_per_peer;      /* connections from one address (TCP); 0: no limit */
    uint64_t idle_timeout_ms; /* 0: connections never idle out */

    struct input_stats stats;
    bool finished; /* read everything it ever will (stdin at EOF) */
    bool paused;   /* reading is stopped: an output or executor queue is full (input_pause) */
    /* closes the module's handles; the module frees the input when libuv is done with them */
    void (*close)(struct input *in);
    /* optional: the limits changed (input_set_limits) */
    void (*limits_changed)(struct input *in);
    /*
     * Stream inputs (TCP, unix-stream, files, stdin): stop reading (pause) or
     * go on (!pause); NULL for datagram inputs, which cannot make a sender wait.
     */
    void (*pause)(struct input *in, bool pause);
    /*
     * Datagram inputs that can (UDP): stop reading while corrald's worker
     * threads have no room (input_hold); NULL otherwise.  Never called from
     * inside the input's own read callback.
     */
    void (*hold)(struct input *in, bool hold);
    bool held;
    /* optional: what input_reload_prepare() and input_reload_commit() do (TLS) */
    int (*reload_prepare)(struct input *in, const struct conf_input *ci, struct buf *err);
    void (*reload_commit)(struct input *in);
    const char *tls_peer; /* input_tls_peer(): set while a TLS client's messages are submitted */
};

/* The module constructors input_open() dispatches to; each returns NULL with err set on failure. */
struct input *in_udp_open(const struct input_sink *sink, uv_loop_t *loop,
                          const struct conf_input *ci, const struct conf *conf, struct buf *err);
struct input *in_stream_open(const struct input_sink *sink, uv_loop_t *loop,
                             const struct conf_input *ci, const struct conf *conf, struct buf *err);
struct input *in_unix_dgram_open(const struct input_sink *sink, uv_loop_t *loop,
                                 const struct conf_input *ci, const struct conf *conf,
                                 struct buf *err);
struct input *in_file_open(const struct input_sink *sink, uv_loop_t *loop,
                           const struct conf_input *ci, const struct conf *conf, struct buf *err);
struct input *in_snmptrap_open(const struct input_sink *sink, uv_loop_t *loop,
                               const struct conf_input *ci, const struct conf *conf,
                               struct buf *err);
struct input *in_stdin_open(const struct input_sink *sink, uv_loop_t *loop,
                            const struct conf_input *ci, const struct conf *conf, struct buf *err);

/* Fills the common head from the configuration (copies ci). */
void input_init(struct input *in, const struct input_sink *sink, uv_loop_t *loop,
                const struct conf_input *ci, const struct conf *conf);
/* Frees what input_init() allocated (not in itself). */
void input_fini(struct input *in);

/* One message to the sink: counts it (received, bytes, truncated) and delivers it. */
void input_deliver(struct input *in, const char *data, size_t len, bool truncated,
                   const char *peer);

/*
 * The length of a datagram's message (UDP, unix-dgram): what senders end a
 * datagram with (a newline, NULs, or both) is not part of it, unless the
 * datagram was already cut (*truncated: its end is not there); a message
 * longer than max-message-size is cut and *truncated set.  0: nothing to
 * deliver.
 */
size_t input_datagram_len(const struct input *in, const char *p, size_t n, bool *truncated);

/* A peer's address as text; IPv4-mapped IPv6 addresses are written as IPv4. */
void input_peer_name(const struct sockaddr *sa, char *out, size_t outlen);
/*
 * Asks for a receive buffer of `want` bytes on a datagram socket: with
 * SO_RCVBUFFORCE when privileged (past net.core.rmem_max), else SO_RCVBUF;
 * logs what the kernel granted.
 */
void input_set_rcvbuf(int fd, int want, const char *name);

/*
 * Unix socket paths.  input_unix_prepare() checks the path fits in
 * sun_path and removes a socket file left there (never anything else);
 * input_unix_created() records the new socket's inode and applies the mode;
 * input_unix_remove() removes the socket at close, unless something else
 * has replaced it (a reloaded input re-creates the same path before the old
 * one closes).
 */
int input_unix_prepare(const char *path, struct buf *err);
int input_unix_created(const char *path, uint32_t mode, dev_t *dev, ino_t *ino, struct buf *err);
void input_unix_remove(const char *path, dev_t dev, ino_t ino);

/* Limits the rate of a repeated log line: true at most once per `every_ms` per limiter. */
bool input_log_allowed(uint64_t *last_ms, uint64_t now_ms, uint64_t every_ms);

#endif
