/*
 * control: the control socket.  Requests are tiny and answers are built in
 * memory, so each connection is: read one line (bounded), answer, close.
 * `save` answers once the background save it started has finished.
 * The socket is created owner-only (0600): it can reload the daemon.
 */
#include "agent/control.h"
#include "engine/log.h"
#include "agent/server.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_REQUEST 256

struct control {
    uv_pipe_t listener;
    struct server *srv;
    control_reload_fn reload;
    void *arg;
    char *path;
};

struct conn {
    uv_pipe_t pipe;
    struct control *ctl;
    char req[MAX_REQUEST];
    size_t len;
    struct buf answer;
    uv_write_t wr;
};

static void
conn_closed(uv_handle_t *h)
{
    struct conn *c = h->data;

    buf_free(&c->answer);
    free(c);
}

static void
written(uv_write_t *wr, int status)
{
    struct conn *c = wr->data;

    (void)status;
    uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

static void
send_answer(struct conn *c)
{
    uv_buf_t b;

    b = uv_buf_init(c->answer.p ? c->answer.p : (char *)"", (unsigned)c->answer.len);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->pipe, &b, 1, written) < 0)
        uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

static void
saved(void *arg, int rc)
{
    struct conn *c = arg;

    buf_puts(&c->answer, rc == 0 ? "OK\n" : "FAILED\n");
    send_answer(c);
}

static void
answer(struct conn *c)
{
    struct control *ctl = c->ctl;

    c->req[c->len] = '\0';
    c->req[strcspn(c->req, "\r\n")] = '\0';
    uv_read_stop((uv_stream_t *)&c->pipe);
    if (strcmp(c->req, "stats") == 0) {
        server_metrics(ctl->srv, &c->answer);
    } else if (strcmp(c->req, "contexts") == 0) {
        server_contexts_json(ctl->srv, &c->answer);
    } else if (strcmp(c->req, "reload") == 0) {
        if (ctl->reload(ctl->arg, &c->answer) < 0)
            buf_puts(&c->answer, "FAILED\n");
        else
            buf_puts(&c->answer, "OK\n");
    } else if (strcmp(c->req, "save") == 0) {
        server_save_state(ctl->srv, saved, c);
        return;
    } else {
        buf_printf(&c->answer, "unknown command '%s' (stats, contexts, reload, save)\n", c->req);
    }
    send_answer(c);
}

static void
alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct conn *c = h->data;

    (void)suggested;
    *b = uv_buf_init(c->req + c->len, (unsigned)(MAX_REQUEST - 1 - c->len));
}

static void
read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct conn *c = s->data;

    (void)b;
    if (n < 0) {
        if (n == UV_EOF && c->len) {
            answer(c);
            return;
        }
        uv_close((uv_handle_t *)s, conn_closed);
        return;
    }
    c->len += (size_t)n;
    if (memchr(c->req, '\n', c->len) || c->len >= MAX_REQUEST - 1) answer(c);
}

static void
on_connect(uv_stream_t *l, int status)
{
    struct control *ctl = l->data;
    struct conn *c;

    if (status < 0) return;
    c = xcalloc(1, sizeof(*c));
    c->ctl = ctl;
    uv_pipe_init(l->loop, &c->pipe, 0);
    c->pipe.data = c;
    if (uv_accept(l, (uv_stream_t *)&c->pipe) < 0 ||
        uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb) < 0)
        uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

static void control_closed(uv_handle_t *h);

struct control *
control_open(uv_loop_t *loop, const char *path, struct server *srv, control_reload_fn reload,
             void *arg, struct buf *err)
{
    struct control *ctl = xcalloc(1, sizeof(*ctl));
    struct stat st;
    mode_t old;
    int rc;

    ctl->srv = srv;
    ctl->reload = reload;
    ctl->arg = arg;
    ctl->path = xstrdup(path);
    /* a stale socket from a previous run is replaced; anything else is left alone */
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path);
    uv_pipe_init(loop, &ctl->listener, 0);
    ctl->listener.data = ctl;
    old = umask(0077);
    rc = uv_pipe_bind(&ctl->listener, path);
    umask(old);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&ctl->listener, 16, on_connect);
    if (rc < 0) {
        buf_printf(err, "control socket %s: %s\n", path, uv_strerror(rc));
        uv_close((uv_handle_t *)&ctl->listener, control_closed);
        return NULL;
    }
    return ctl;
}

static void
control_closed(uv_handle_t *h)
{
    struct control *ctl = h->data;

    free(ctl->path);
    free(ctl);
}

void
control_close(struct control *ctl)
{
    if (!ctl) return;
    if (ctl->path) unlink(ctl->path);
    uv_close((uv_handle_t *)&ctl->listener, control_closed);
}
