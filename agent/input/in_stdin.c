/*
 * in_stdin: messages from standard input, one per line, until end of input
 * (`corrald -f config < file`, or a pipe).  At EOF a last unterminated line
 * is delivered and the input is finished: it stays listed, with its
 * counters, but reads nothing more.
 *
 * Standard input may be a pipe, a terminal, a socket or a regular file.
 * libuv streams serve the first three; a regular file cannot be polled, so it
 * is read with uv_fs_read on libuv's thread pool, which keeps the loop free
 * while the disk works.
 *
 * Back-pressure (input_pause): a paused input stops reading (uv_read_stop,
 * or no next uv_fs_read) until resumed.
 */
#include "agent/net/framer.h"
#include "agent/input/in_common.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define READ_BUF_SIZE (64 * 1024)

union stdin_handle {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tty_t tty;
    uv_tcp_t tcp;
};

struct stdin_input {
    struct input base;
    union stdin_handle h;
    bool handle_open; /* a stream handle exists and is not closed yet */
    uv_fs_t req;      /* regular file: the read in progress */
    bool req_busy;
    bool is_file; /* read with uv_fs_read, not a stream */
    char *rbuf;
    struct framer fr;
    bool closing;
};

static void
stdin_maybe_free(struct stdin_input *s)
{
    if (!s->closing || s->handle_open || s->req_busy) return;
    framer_free(&s->fr);
    free(s->rbuf);
    input_fini(&s->base);
    free(s);
}

static void
stdin_message(void *arg, const char *data, size_t len, bool truncated)
{
    struct stdin_input *s = arg;

    input_deliver(&s->base, data, len, truncated, NULL);
}

static void
handle_closed(uv_handle_t *h)
{
    struct stdin_input *s = h->data;

    s->handle_open = false;
    stdin_maybe_free(s);
}

/* End of input (or a read error): deliver what is left, stop reading. */
static void
stdin_finish(struct stdin_input *s)
{
    if (s->base.finished) return;
    framer_eof(&s->fr);
    s->base.finished = true;
    log_msg(LOG_INFO, "%s: end of input after %llu messages", s->base.conf.name,
            (unsigned long long)s->base.stats.received);
    if (s->handle_open && !uv_is_closing(&s->h.handle)) uv_close(&s->h.handle, handle_closed);
}

/* ---- pipes, terminals, sockets ---- */

static void
stream_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct stdin_input *s = h->data;

    (void)suggested;
    buf->base = s->rbuf;
    buf->len = READ_BUF_SIZE;
}

static void
stream_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct stdin_input *s = st->data;

    if (nread > 0) {
        framer_feed(&s->fr, buf->base, (size_t)nread); /* newline framing cannot fail */
        return;
    }
    if (nread == 0) return;
    if (nread != UV_EOF) {
        s->base.stats.errors++;
        log_msg(LOG_ERR, "%s: read error: %s", s->base.conf.name, uv_strerror((int)nread));
    }
    stdin_finish(s);
}

/* ---- regular files ---- */

static void file_read(struct stdin_input *s);

static void
file_done(uv_fs_t *req)
{
    struct stdin_input *s = req->data;
    ssize_t n = req->result;

    uv_fs_req_cleanup(req);
    s->req_busy = false;
    if (s->closing) {
        stdin_maybe_free(s);
        return;
    }
    if (n > 0) {
        framer_feed(&s->fr, s->rbuf, (size_t)n);
        if (!s->base.paused) file_read(s); /* else stdin_pause reads on */
        return;
    }
    if (n < 0) {
        s->base.stats.errors++;
        log_msg(LOG_ERR, "%s: read error: %s", s->base.conf.name, uv_strerror((int)n));
    }
    stdin_finish(s);
}

static void
file_read(struct stdin_input *s)
{
    uv_buf_t b = uv_buf_init(s->rbuf, READ_BUF_SIZE);
    int rc;

    /* offset -1: read on from the current position, as a shell redirection expects */
    rc = uv_fs_read(s->base.loop, &s->req, 0, &b, 1, -1, file_done);
    if (rc < 0) {
        s->base.stats.errors++;
        log_msg(LOG_ERR, "%s: read error: %s", s->base.conf.name, uv_strerror(rc));
        stdin_finish(s);
        return;
    }
    s->req_busy = true;
}

/* ---- the input ---- */

static void
stdin_pause(struct input *in, bool pause)
{
    struct stdin_input *s = (struct stdin_input *)in;

    if (s->closing || s->base.finished) return;
    if (s->is_file) {
        if (!pause && !s->req_busy) file_read(s);
    } else if (s->handle_open && !uv_is_closing(&s->h.handle)) {
        int rc = pause ? uv_read_stop(&s->h.stream)
                       : uv_read_start(&s->h.stream, stream_alloc, stream_read);
        if (rc < 0) {
            s->base.stats.errors++;
            log_msg(LOG_ERR, "%s: read error: %s", s->base.conf.name, uv_strerror(rc));
            stdin_finish(s);
        }
    }
}

static void
stdin_close(struct input *in)
{
    struct stdin_input *s = (struct stdin_input *)in;

    s->closing = true;
    /* a read not yet started on the thread pool can be called off; one running completes */
    if (s->req_busy) uv_cancel((uv_req_t *)&s->req);
    if (s->handle_open && !uv_is_closing(&s->h.handle)) uv_close(&s->h.handle, handle_closed);
    stdin_maybe_free(s);
}

struct input *
in_stdin_open(const struct input_sink *sink, uv_loop_t *loop, const struct conf_input *ci,
              const struct conf *conf, struct buf *err)
{
    struct stdin_input *s = xcalloc(1, sizeof(*s));
    uv_handle_type type = uv_guess_handle(0);
    int rc = 0;

    input_init(&s->base, sink, loop, ci, conf);
    s->base.close = stdin_close;
    s->base.pause = stdin_pause;
    /* always lines: auto framing would take a file of "12 apples" lines for octet counting */
    framer_init(&s->fr, CONF_FRAMING_NEWLINE, s->base.max_message_size, stdin_message, s);
    s->rbuf = xmalloc(READ_BUF_SIZE);
    s->req.data = s;

    if (type == UV_FILE) {
        /* regular files and character devices such as /dev/null */
        uv_buf_t b = uv_buf_init(s->rbuf, READ_BUF_SIZE);
        s->is_file = true;
        rc = uv_fs_read(loop, &s->req, 0, &b, 1, -1, file_done);
        if (rc < 0) goto fail;
        s->req_busy = true;
        return &s->base;
    }
    switch (type) {
    case UV_TTY: rc = uv_tty_init(loop, &s->h.tty, 0, 1); break;
    case UV_NAMED_PIPE: rc = uv_pipe_init(loop, &s->h.pipe, 0); break;
    case UV_TCP: rc = uv_tcp_init(loop, &s->h.tcp); break;
    default:
        buf_printf(err, "input %s: standard input is not readable (closed, or a UDP socket)",
                   s->base.conf.name);
        stdin_close(&s->base);
        return NULL;
    }
    if (rc < 0) goto fail;
    s->handle_open = true;
    s->h.handle.data = s;
    if (type == UV_NAMED_PIPE) rc = uv_pipe_open(&s->h.pipe, 0);
    if (type == UV_TCP) rc = uv_tcp_open(&s->h.tcp, 0);
    if (rc == 0) rc = uv_read_start(&s->h.stream, stream_alloc, stream_read);
    if (rc < 0) goto fail;
    return &s->base;

fail:
    buf_printf(err, "input %s: cannot read standard input: %s", s->base.conf.name, uv_strerror(rc));
    stdin_close(&s->base);
    return NULL;
}
