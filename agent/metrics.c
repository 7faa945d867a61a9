/*
 * metrics: HTTP/1.0, one request per connection: read the request head
 * (bounded to 4 KiB, 5 s), answer GET /metrics (or /) with the counters,
 * anything else with 404, close.  Enough for Prometheus and curl; it is not a
 * general web server.
 *
 * Idle clients must not hold descriptors corrald needs: at most
 * METRICS_MAX_CONNS connections are open at once, a new one closes the
 * oldest (a scraper answers at once, only an idle client lingers), and one
 * that has not sent its request head within the timeout is closed.  Both
 * are counted (server_endpoint_stats) and logged, at most every 10 s.
 */
#include "agent/metrics.h"
#include "agent/conf.h"
#include "agent/input.h"
#include "engine/log.h"
#include "agent/server.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define MAX_HEAD     4096
#define TIMEOUT_MS   5000
#define LOG_EVERY_MS 10000

struct metrics {
    uv_tcp_t listener;
    struct server *srv;
    struct hconn *head, *tail; /* open connections, oldest first */
    size_t nconns;
    uint64_t last_log; /* uv_now() of the last warning; 0: none */
};

struct hconn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct metrics *m;
    struct hconn *prev, *next;
    bool listed;
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

/* One warning per LOG_EVERY_MS at most: a flood of clients must not flood the log. */
static bool
log_allowed(struct metrics *m)
{
    uint64_t now = uv_now(m->listener.loop);

    if (m->last_log && now - m->last_log < LOG_EVERY_MS) return false;
    m->last_log = now ? now : 1;
    return true;
}

static void
hconn_close(struct hconn *c)
{
    struct metrics *m = c->m;

    if (c->listed) {
        if (c->prev)
            c->prev->next = c->next;
        else
            m->head = c->next;
        if (c->next)
            c->next->prev = c->prev;
        else
            m->tail = c->prev;
        c->listed = false;
        m->nconns--;
    }
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
    struct hconn *c = t->data;
    struct server_endpoint_stats *st = server_endpoint_stats(c->m->srv, SERVER_EP_STATS);

    st->timed_out++;
    if (log_allowed(c->m))
        log_msg(LOG_WARNING, "stats: a client sent no request within %d s, closed (%llu so far)",
                TIMEOUT_MS / 1000, (unsigned long long)st->timed_out);
    hconn_close(c);
}

static void
on_connect(uv_stream_t *l, int status)
{
    struct metrics *m = l->data;
    struct hconn *c;
    struct server_endpoint_stats *st = server_endpoint_stats(m->srv, SERVER_EP_STATS);

    if (status < 0) {
        /* EMFILE and the like: libuv has shed the connection */
        st->accept_errors++;
        if (log_allowed(m)) log_msg(LOG_WARNING, "stats: cannot accept: %s", uv_strerror(status));
        return;
    }
    if (m->nconns >= METRICS_MAX_CONNS && m->head) {
        st->evicted++;
        if (log_allowed(m))
            log_msg(LOG_WARNING,
                    "stats: %d connections open, closing the oldest for a new one (%llu so far)",
                    METRICS_MAX_CONNS, (unsigned long long)st->evicted);
        hconn_close(m->head);
    }
    c = xcalloc(1, sizeof(*c));
    c->m = m;
    c->prev = m->tail;
    if (m->tail)
        m->tail->next = c;
    else
        m->head = c;
    m->tail = c;
    c->listed = true;
    m->nconns++;
    uv_tcp_init(l->loop, &c->tcp);
    uv_timer_init(l->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) < 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) < 0) {
        hconn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_timeout, TIMEOUT_MS, 0);
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
    if (!m) return;
    while (m->head) hconn_close(m->head);
    uv_close((uv_handle_t *)&m->listener, metrics_closed);
}
