/*
 * ipc: frames over the socketpair between the engine and executor
 * processes (see ipc.h for the format, doc/privsep.md for the protocol).
 *
 * Writes are coalesced: frames sent while a write is in flight gather in
 * one buffer that is written, whole, when that write completes, so a burst
 * of alerts costs one system call, not one per frame.
 */
#include "actions/ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/wire.h"
#include "engine/xalloc.h"

const char *
ipc_type_name(char type)
{
    static const struct {
        char type;
        const char *name;
    } names[] = {
        {IPC_HELLO, "hello"},
        {IPC_SUBMIT, "submit"},
        {IPC_SYNC, "sync"},
        {IPC_RELOAD, "reload"},
        {IPC_QUEUECTL, "queue control"},
        {IPC_TERMINATE, "terminate"},
        {IPC_NOTIFY, "notify"},
        {IPC_X_HELLO, "executor hello"},
        {IPC_X_EVENT, "event"},
        {IPC_X_STATS, "stats"},
        {IPC_X_SERVED, "served"},
        {IPC_X_PRESSURE, "pressure"},
        {IPC_X_RELOADED, "reload result"},
        {IPC_X_ANSWER, "answer"},
        {IPC_X_BYE, "bye"},
        {IPC_X_SIGNAL, "signal"},
    };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].type == type) return names[i].name;
    return "unknown";
}

int
ipc_frame(struct buf *out, char type, const void *body, size_t len)
{
    unsigned char h[IPC_HEADER_SIZE];

    if (len > IPC_BODY_MAX) return -1;
    wire_store32(h, (uint32_t)(len + 1));
    h[4] = (unsigned char)type;
    buf_append(out, h, sizeof(h));
    if (len) buf_append(out, body, len);
    return 0;
}

size_t
ipc_begin(struct buf *out, char type)
{
    size_t start = out->len;
    unsigned char h[IPC_HEADER_SIZE] = {0, 0, 0, 0, (unsigned char)type};

    buf_append(out, h, sizeof(h));
    return start;
}

int
ipc_end(struct buf *out, size_t start)
{
    size_t body = out->len - start - IPC_HEADER_SIZE;

    if (body > IPC_BODY_MAX) {
        buf_truncate(out, start);
        return -1;
    }
    wire_store32((unsigned char *)out->p + start, (uint32_t)(body + 1));
    return 0;
}

/* ---- the decoder ---- */

void
ipc_decoder_init(struct ipc_decoder *d)
{
    memset(d, 0, sizeof(*d));
    buf_init(&d->in);
}

void
ipc_decoder_free(struct ipc_decoder *d)
{
    buf_free(&d->in);
    memset(d, 0, sizeof(*d));
}

void
ipc_decoder_feed(struct ipc_decoder *d, const void *p, size_t n)
{
    if (d->bad) return;
    /* what was handed out is done with: drop it before taking more (bodies stay valid until now) */
    if (d->pos) {
        size_t rest = d->in.len - d->pos;
        if (rest) memmove(d->in.p, d->in.p + d->pos, rest);
        buf_truncate(&d->in, rest);
        d->pos = 0;
    }
    if (n) buf_append(&d->in, p, n);
}

int
ipc_decoder_next(struct ipc_decoder *d, char *type, const void **body, size_t *len)
{
    const unsigned char *at;
    size_t avail;
    uint32_t l;

    if (d->bad) return -1;
    avail = d->in.len - d->pos;
    if (avail < 4) return 0;
    at = (const unsigned char *)d->in.p + d->pos;
    l = wire_load32(at);
    if (l < 1 || l > IPC_FRAME_MAX) {
        d->bad = true;
        d->bad_len = l;
        return -1;
    }
    if (avail - 4 < l) return 0;
    *type = (char)at[4];
    *body = at + IPC_HEADER_SIZE;
    *len = l - 1;
    d->pos += 4 + (size_t)l;
    return 1;
}

size_t
ipc_decoder_pending(const struct ipc_decoder *d)
{
    return d->in.len - d->pos;
}

/* ---- on a libuv pipe ---- */

#define IPC_READ_SIZE 65536

struct ipc_conn {
    uv_pipe_t pipe;
    uv_write_t wreq;
    struct ipc_decoder dec;
    struct buf pending;  /* frames waiting for the write in flight to finish */
    struct buf inflight; /* the frames being written */
    bool writing, ended, closing, closed;
    ipc_frame_fn on_frame;
    ipc_end_fn on_end;
    void *arg;
    void (*done)(void *arg);
    void *done_arg;
    char rbuf[IPC_READ_SIZE];
};

static void
end(struct ipc_conn *c, const char *reason)
{
    if (c->ended) return;
    c->ended = true;
    uv_read_stop((uv_stream_t *)&c->pipe);
    if (c->on_end && !c->closing) c->on_end(c->arg, reason);
}

static void really_close(struct ipc_conn *c);

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct ipc_conn *c = h->data;

    (void)hint;
    *b = uv_buf_init(c->rbuf, sizeof(c->rbuf));
}

static void
on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct ipc_conn *c = s->data;
    const void *body;
    size_t len;
    char type;
    int rc;

    (void)b;
    if (n == UV_EOF) {
        end(c, ipc_decoder_pending(&c->dec) ? "closed in the middle of a frame" : "closed");
        return;
    }
    if (n < 0) {
        end(c, uv_strerror((int)n));
        return;
    }
    ipc_decoder_feed(&c->dec, c->rbuf, (size_t)n);
    while (!c->ended && !c->closing && (rc = ipc_decoder_next(&c->dec, &type, &body, &len)) != 0) {
        if (rc < 0) {
            end(c, "bad frame length (protocol error)");
            return;
        }
        c->on_frame(c->arg, type, body, len);
    }
}

static void start_write(struct ipc_conn *c);

static void
on_written(uv_write_t *w, int status)
{
    struct ipc_conn *c = w->data;

    c->writing = false;
    buf_reset(&c->inflight);
    if (status < 0) end(c, uv_strerror(status));
    if (!c->ended && c->pending.len) start_write(c);
    if (c->closing && !c->writing)
        really_close(c); /* everything queued is written, or never will be */
}

static void
start_write(struct ipc_conn *c)
{
    struct buf t;
    uv_buf_t b;
    int rc;

    if (c->writing || !c->pending.len) return;
    t = c->inflight; /* empty: swap the buffers, keeping both allocations */
    c->inflight = c->pending;
    c->pending = t;
    b = uv_buf_init(c->inflight.p, (unsigned)c->inflight.len);
    c->wreq.data = c;
    rc = uv_write(&c->wreq, (uv_stream_t *)&c->pipe, &b, 1, on_written);
    if (rc < 0) {
        buf_reset(&c->inflight);
        end(c, uv_strerror(rc));
        if (c->closing) really_close(c);
        return;
    }
    c->writing = true;
}

struct ipc_conn *
ipc_open(uv_loop_t *loop, int fd, ipc_frame_fn on_frame, ipc_end_fn on_end, void *arg)
{
    struct ipc_conn *c = xcalloc(1, sizeof(*c));

    ipc_decoder_init(&c->dec);
    c->on_frame = on_frame;
    c->on_end = on_end;
    c->arg = arg;
    if (uv_pipe_init(loop, &c->pipe, 0) < 0) {
        free(c);
        return NULL;
    }
    c->pipe.data = c;
    if (uv_pipe_open(&c->pipe, fd) < 0 ||
        uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) < 0) {
        /* the handle is initialised: it has to be closed through the loop */
        c->ended = true;
        c->closing = true;
        really_close(c);
        return NULL;
    }
    return c;
}

int
ipc_send(struct ipc_conn *c, char type, const void *body, size_t len)
{
    if (c->ended || c->closing) return -1;
    if (ipc_frame(&c->pending, type, body, len) < 0) return -1;
    start_write(c);
    return 0;
}

int
ipc_send_frames(struct ipc_conn *c, struct buf *frames)
{
    if (c->ended || c->closing) {
        buf_reset(frames);
        return -1;
    }
    buf_append(&c->pending, frames->p, frames->len);
    buf_reset(frames);
    start_write(c);
    return 0;
}

void
ipc_abort(struct ipc_conn *c, const char *reason)
{
    end(c, reason);
}

bool
ipc_ended(const struct ipc_conn *c)
{
    return c->ended || c->closing;
}

size_t
ipc_write_queued(const struct ipc_conn *c)
{
    return c->pending.len + c->inflight.len;
}

static void
on_closed(uv_handle_t *h)
{
    struct ipc_conn *c = h->data;
    void (*done)(void *) = c->done;
    void *arg = c->done_arg;

    ipc_decoder_free(&c->dec);
    buf_free(&c->pending);
    buf_free(&c->inflight);
    free(c);
    if (done) done(arg);
}

static void
really_close(struct ipc_conn *c)
{
    if (c->closed) return;
    c->closed = true;
    uv_close((uv_handle_t *)&c->pipe, on_closed);
}

void
ipc_close(struct ipc_conn *c, void (*done)(void *arg), void *arg)
{
    if (c->closing) return;
    c->closing = true;
    c->done = done;
    c->done_arg = arg;
    if (!c->ended) uv_read_stop((uv_stream_t *)&c->pipe);
    /* frames already sent are written first (a bye must reach the peer) */
    if (!c->ended && !c->writing) start_write(c);
    if (!c->writing) really_close(c);
}
