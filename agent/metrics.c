/*
 * metrics: HTTP/1.0, one request per connection: read the request head
 * (bounded to 4 KiB, 5 s), answer GET /metrics (or /) with the counters,
 * anything else with 404, close.  Enough for Prometheus and curl; it is not a
 * general web server.
 */
#include "agent/metrics.h"
#include "agent/conf.h"
#include "agent/input.h"
#include "engine/log.h"
#include "agent/server.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define MAX_HEAD 4096

struct metrics {
    uv_tcp_t listener;
    struct server *srv;
};

struct hconn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct metrics *m;
    char head[MAX_HEAD];
    size_t len;
    struct buf out;
    uv_write_t wr;
    int closing;
};

static void
hconn_closed(uv_handle_t *h)
{
    struct hconn *c = h->data;

    if (--c->closing == 0) {
        buf_free(&c->out);
        free(c);
    }
}

static void
hconn_close(struct hconn *c)
{
    if (c->closing) return;
    c->closing = 2;
    uv_close((uv_handle_t *)&c->timer, hconn_closed);
    uv_close((uv_handle_t *)&c->tcp, hconn_closed);
}

static void
written(uv_write_t *wr, int status)
{
    (void)status;
    hconn_close(wr->data);
}

static void
respond(struct hconn *c)
{
    struct buf body = BUF_INIT;
    const char *status = "200 OK";
    uv_buf_t b;

    uv_read_stop((uv_stream_t *)&c->tcp);
    if (strncmp(c->head, "GET /metrics ", 13) == 0 || strncmp(c->head, "GET / ", 6) == 0) {
        server_metrics(c->m->srv, &body);
    } else {
        status = "404 Not Found";
        buf_puts(&body, "corrald serves its counters at /metrics\n");
    }
    buf_printf(&c->out,
               "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %zu\r\n"
               "Connection: close\r\n\r\n",
               status, body.len);
    buf_append(&c->out, body.p, body.len);
    buf_free(&body);
    b = uv_buf_init(c->out.p, (unsigned)c->out.len);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, written) < 0) hconn_close(c);
}

static void
alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct hconn *c = h->data;

    (void)suggested;
    *b = uv_buf_init(c->head + c->len, (unsigned)(MAX_HEAD - 1 - c->len));
}

static void
read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct hconn *c = s->data;

    (void)b;
    if (n < 0) {
        hconn_close(c);
        return;
    }
    c->len += (size_t)n;
    c->head[c->len] = '\0';
    if (strstr(c->head, "\r\n\r\n") || strstr(c->head, "\n\n"))
        respond(c);
    else if (c->len >= MAX_HEAD - 1)
        hconn_close(c);
}

static void
on_timeout(uv_timer_t *t)
{
    hconn_close(t->data);
}

static void
on_connect(uv_stream_t *l, int status)
{
    struct metrics *m = l->data;
    struct hconn *c;

    if (status < 0) return;
    c = xcalloc(1, sizeof(*c));
    c->m = m;
    uv_tcp_init(l->loop, &c->tcp);
    uv_timer_init(l->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) < 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) < 0) {
        hconn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_timeout, 5000, 0);
}

static void
metrics_closed(uv_handle_t *h)
{
    free(h->data);
}

struct metrics *
metrics_open(uv_loop_t *loop, const char *listen, struct server *srv, struct buf *err)
{
    struct metrics *m = xcalloc(1, sizeof(*m));
    struct buf e = BUF_INIT;
    int rc;
    struct sockaddr_storage ss;

    m->srv = srv;
    uv_tcp_init(loop, &m->listener);
    m->listener.data = m;
    /* resolved as an input's listen address is: a name, a literal, or ":PORT" for every address */
    if (input_resolve(listen, SOCK_STREAM, &ss, &e) < 0) {
        buf_printf(err, "stats listener: %s\n", buf_str(&e));
        buf_free(&e);
        uv_close((uv_handle_t *)&m->listener, metrics_closed);
        return NULL;
    }
    rc = uv_tcp_bind(&m->listener, (struct sockaddr *)&ss, 0);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&m->listener, 64, on_connect);
    if (rc < 0) {
        buf_printf(err, "stats listener %s: %s\n", listen, uv_strerror(rc));
        uv_close((uv_handle_t *)&m->listener, metrics_closed);
        return NULL;
    }
    {
        uv_os_fd_t fd;
        char where[INET6_ADDRSTRLEN + 8];
        if (uv_fileno((uv_handle_t *)&m->listener, &fd) == 0 &&
            input_bound_name(fd, where, sizeof(where)))
            log_msg(LOG_INFO, "stats: listening on %s", where);
    }
    return m;
}

void
metrics_close(struct metrics *m)
{
    if (m) uv_close((uv_handle_t *)&m->listener, metrics_closed);
}
