/*
 * ipc: the framed byte stream between corrald's two processes when it runs
 * privilege-separated (doc/privsep.md): the engine, which reads the network
 * and holds no secret, and the executor, which holds the secrets and the
 * spools.  This module only frames; what the frames mean is the protocol in
 * doc/privsep.md.
 *
 * A frame is
 *   4 bytes  length L of what follows, little-endian, 1 <= L <= IPC_FRAME_MAX
 *   1 byte   type (a letter: doc/privsep.md lists them)
 *   L-1      body (wire.h encodings)
 * Lengths are bounded on both sides: the writer refuses a frame whose body
 * is too long (the caller counts and logs it), and the reader treats a
 * length of 0 or past the bound as a protocol error and stops for good,
 * since only a broken or compromised peer sends one.  So the reader holds
 * at most one frame and one read's worth of bytes.
 *
 * struct ipc_decoder is the reader without I/O (unit test, fuzzer);
 * struct ipc_conn runs it on a libuv pipe over one end of a socketpair and
 * queues frames for writing.
 */
#ifndef CORRAL_IPC_H
#define CORRAL_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "engine/buf.h"

/* The largest L (type + body): an alert's msg_encode form of up to 4 MiB and its header. */
#define IPC_FRAME_MAX (4u * 1024 * 1024 + 64)
/* The largest body: what fits in a frame beside its type byte. */
#define IPC_BODY_MAX    (IPC_FRAME_MAX - 1)
#define IPC_HEADER_SIZE 5

/*
 * The protocol's version, in both hellos (H, h): each side stops at a
 * version not its own.  2: the reload of the executors (L, R) and H,
 * and signals passed on (g).
 */
#define IPC_VERSION 2
/* engine -> executor */
#define IPC_HELLO     'H'
#define IPC_SUBMIT    'S'
#define IPC_SYNC      'Y'
#define IPC_RELOAD    'L'
#define IPC_QUEUECTL  'Q'
#define IPC_TERMINATE 'T'
#define IPC_NOTIFY    'N'
/* executor -> engine */
#define IPC_X_HELLO    'h'
#define IPC_X_EVENT    'e'
#define IPC_X_STATS    's'
#define IPC_X_SERVED   'x'
#define IPC_X_PRESSURE 'p'
#define IPC_X_RELOADED 'R'
#define IPC_X_ANSWER   'A'
#define IPC_X_BYE      'B'
#define IPC_X_SIGNAL                                                                               \
    'g' /* u32 SIGHUP, SIGTERM, SIGINT, SIGUSR1 or SIGUSR2: as if sent to the engine */

/*
 * A frame type's name for the log ("submit", "stats", as doc/privsep.md
 * calls them), or "unknown" for a byte that is no IPC_* type.
 */
const char *ipc_type_name(char type);

/* Appends one frame to out; -1 (out unchanged) when the body is longer than IPC_BODY_MAX. */
int ipc_frame(struct buf *out, char type, const void *body, size_t len);

/*
 * Building a body in place (wire_put* into out between the two calls):
 * ipc_begin writes the header with a placeholder length and returns where
 * the frame starts; ipc_end sets the length, or, when the body grew past
 * IPC_BODY_MAX, cuts the frame off again and returns -1.
 */
size_t ipc_begin(struct buf *out, char type);
int ipc_end(struct buf *out, size_t start);

struct ipc_decoder {
    struct buf in; /* bytes received and not yet handed out */
    size_t pos;    /* the next frame starts here */
    bool bad;      /* a bad length was seen: nothing more is decoded */
    uint32_t bad_len;
};

void ipc_decoder_init(struct ipc_decoder *d);
void ipc_decoder_free(struct ipc_decoder *d);
/* Takes n more bytes of the stream. */
void ipc_decoder_feed(struct ipc_decoder *d, const void *p, size_t n);
/*
 * The next whole frame: 1 with its type and body (valid until the next
 * feed), 0 when more bytes are needed, -1 after a bad length (for good).
 */
int ipc_decoder_next(struct ipc_decoder *d, char *type, const void **body, size_t *len);
/* Bytes held that are not yet a whole frame (0 at a clean end of stream). */
size_t ipc_decoder_pending(const struct ipc_decoder *d);

struct ipc_conn;

/* A frame has come: body is valid during the call only. */
typedef void (*ipc_frame_fn)(void *arg, char type, const void *body, size_t len);
/*
 * The connection is over: the peer closed it (reason "closed"), a read or
 * write failed, or the peer broke the framing (the reason says which).
 * Called once, then no more frames; ipc_close still has to be called.
 */
typedef void (*ipc_end_fn)(void *arg, const char *reason);

/* Runs the protocol on fd (one end of a socketpair, made non-blocking); NULL on error. */
struct ipc_conn *ipc_open(uv_loop_t *loop, int fd, ipc_frame_fn on_frame, ipc_end_fn on_end,
                          void *arg);
/* Queues one frame for writing; -1 when it is too long or the connection is over. */
int ipc_send(struct ipc_conn *c, char type, const void *body, size_t len);
/* Queues frames already built with ipc_frame/ipc_begin/ipc_end (frames is emptied). */
int ipc_send_frames(struct ipc_conn *c, struct buf *frames);
/*
 * Ends the connection from this side as a protocol error would (the peer
 * is not one to talk to: another protocol version): nothing more is read,
 * on_end(arg, reason) is called (from here), sends fail; ipc_close still
 * has to be called.
 */
void ipc_abort(struct ipc_conn *c, const char *reason);
/* Whether the connection is over (on_end has been called, or ipc_close). */
bool ipc_ended(const struct ipc_conn *c);
/* Bytes queued and not yet written (for back-pressure and tests). */
size_t ipc_write_queued(const struct ipc_conn *c);
/*
 * Closes the pipe (and fd); done(arg) once libuv has let go of it.  Frames
 * already queued are written first (a bye must reach the peer), unless the
 * connection is already over: a peer that stops reading holds the close
 * until it reads or dies.  No callback but done runs after this call.
 */
void ipc_close(struct ipc_conn *c, void (*done)(void *arg), void *arg);

#endif
