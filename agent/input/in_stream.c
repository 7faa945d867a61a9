/*
 * in_stream: syslog over stream sockets, TCP (RFC 6587), TLS (RFC 5425)
 * and unix-stream: a listener, its connections, and their framing
 * (framer.c).
 *
 * A TLS connection is a TCP connection whose bytes go through its TLS
 * engine (tls.c) before the framer: what it reads is fed to the engine, the
 * plaintext that comes out is framed (as configured: RFC 5425 senders use
 * octet counting, others lines), and what the engine has to say (the
 * handshake, alerts) is written back.  While its messages are submitted the
 * input names the client's certificate (input_tls_peer).  The limits are the
 * TCP ones: a connection still in its handshake counts against
 * max-connections and per peer, and idles out like a silent one.  A failed
 * handshake is counted by reason (tls_failures), logged at most every
 * LOG_EVERY_MS, and the connection closed.  The certificate is reloaded on
 * reload (reload_prepare/commit): connections open keep the one they began
 * with.
 *
 * Every connection reads into one buffer owned by the input (the server
 * handles each message before the read callback returns, so the bytes are
 * never needed after it); only a message split across reads is copied, into
 * the connection's framer, which is bounded by max-message-size.
 *
 * One client must not keep the others out.  A TCP client address may hold
 * max-connections-per-peer connections; more from it are accepted and closed
 * at once (so that they do not wait in the backlog) and counted as rejected.
 * At max-connections, a new connection closes the one idle longest (counted
 * as evicted) rather than being refused: a client that holds many connections
 * open and silent loses them to clients that send.  Activity is a complete
 * message, not a byte: a client dribbling a byte now and then is as idle as
 * a silent one.  Connections are kept in order of their last message, oldest
 * first, so that the idle timer and eviction find the oldest without
 * scanning.  max-connections is also capped so that the connections fit the
 * open files limit (RLIMIT_NOFILE) beside a reserve for the rest of corrald:
 * outputs, files, the stats and control connections (see reserve_fds).
 *
 * Back-pressure (input_pause): a paused input stops reading every connection
 * and accepts new ones without reading them; idle time does not run while
 * paused.
 *
 * Turns: libuv reads a readable connection up to 32 times in one loop
 * iteration, 2 MiB of ours, all handled before anything else runs; under a
 * flood over many connections one iteration took seconds, and the control
 * socket, /metrics and the status page waited that long.  A connection that
 * has read READ_TURN bytes in this iteration stops reading (counted in
 * yields) and starts again in the check phase (on_turn), after the rest of
 * the loop has had its turn.
 */
#include "agent/net/framer.h"
#include "agent/net/connlimits.h"
#include "agent/input/in_common.h"
#include "agent/net/tls.h"
#include "engine/hash.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define READ_BUF_SIZE (64 * 1024)
/* What one connection reads in one loop iteration before the others' turn. */
#define READ_TURN READ_BUF_SIZE
/* Plaintext out of TLS: a record holds at most 16 KiB. */
#define PLAIN_BUF_SIZE (16 * 1024)
/* The kernel caps it at net.core.somaxconn; thousands of clients may connect at once. */
#define BACKLOG 4096
/* Repeated warnings (rejections, accept errors) at most this often. */
#define LOG_EVERY_MS 10000
/*
 * Open files kept for the rest of corrald beside the stream connections:
 * outputs, followed files, state and spool files, executors' children and
 * libuv's own, plus the most the stats (HTTP_MAX_FDS) and control
 * (CONTROL_MAX_CONNS) endpoints hold at once.
 */
#define FD_RESERVE (128 + HTTP_MAX_FDS + CONTROL_MAX_CONNS)

union stream_handle {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
};

/* The connections of one TCP client address. */
struct peer {
    struct hash_node node;
    size_t conns;
    char name[64];
};

struct conn {
    union stream_handle h;
    struct stream_input *s;
    struct peer *p;           /* TCP: counted in its address's connections */
    struct conn *prev, *next; /* activity order */
    uint64_t last;            /* uv_now() at the last complete message */
    bool listed;              /* counted as active, in the list */
    struct framer fr;
    struct tls_conn *tls; /* TLS: its engine */
    bool tls_counted;     /* its failed handshake is counted */
    bool yielded;         /* stopped reading for the rest of this loop iteration */
    uint64_t turn;        /* the iteration (stream_input.turn) turn_bytes count in */
    size_t turn_bytes;
    char peer[64]; /* TCP: the client's address; unix: empty */
};

struct stream_input {
    struct input base;
    union stream_handle listener;
    uv_timer_t idle;
    uv_check_t turn_check; /* each loop iteration: turn++, yielded connections read again */
    uint64_t turn;
    size_t nyielded;
    char *rbuf;
    struct conn *head, *tail;
    struct hash_table peers; /* struct peer by address */
    size_t fd_cap;           /* connections the open files limit leaves room for; 0: no limit */
    uint64_t paused_at;      /* uv_now() when paused */
    unsigned handles;        /* handles not yet closed: the input is freed when none are left */
    bool closing;
    bool is_unix;
    struct tls_ctx *tls, *tls_next; /* TLS: for new connections; loaded by a reload */
    char *pbuf;                     /* TLS: plaintext */
    uint64_t last_tls_log;
    bool unix_created; /* the socket file is ours: remove it at close */
    dev_t dev;
    ino_t ino;
    size_t fd_reserved;
    uint64_t last_reject_log, last_evict_log, last_error_log, last_frame_log;
};

/* File descriptors the open stream inputs may need together (for RLIMIT_NOFILE). */
static size_t fds_needed;

static void stream_maybe_free(struct stream_input *s);

/* ---- connections ---- */

/* The most connections open at once: max-connections, within the open files limit. */
static size_t
stream_cap(const struct stream_input *s)
{
    size_t max = s->base.max_connections;

    if (s->fd_cap && (!max || s->fd_cap < max)) max = s->fd_cap;
    return max;
}

static void
list_remove(struct stream_input *s, struct conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        s->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        s->tail = c->prev;
    c->prev = c->next = NULL;
}

static void
list_append(struct stream_input *s, struct conn *c)
{
    c->next = NULL;
    c->prev = s->tail;
    if (s->tail)
        s->tail->next = c;
    else
        s->head = c;
    s->tail = c;
}

/* ---- client addresses ---- */

static struct peer *
peer_find(struct stream_input *s, const char *name, uint64_t h)
{
    struct hash_node *n;

    for (n = hash_table_find(&s->peers, h); n; n = hash_table_find_next(n)) {
        struct peer *p = hash_entry(n, struct peer, node);
        if (strcmp(p->name, name) == 0) return p;
    }
    return NULL;
}

/* Counts a connection of c's address. */
static void
peer_add(struct stream_input *s, struct conn *c)
{
    uint64_t h = hash_string(c->peer, strlen(c->peer));
    struct peer *p = peer_find(s, c->peer, h);

    if (!p) {
        p = xcalloc(1, sizeof(*p));
        memcpy(p->name, c->peer, sizeof(p->name));
        hash_table_add(&s->peers, &p->node, h);
    }
    p->conns++;
    c->p = p;
}

static void
peer_remove(struct stream_input *s, struct conn *c)
{
    struct peer *p = c->p;

    c->p = NULL;
    if (!p || --p->conns > 0) return;
    hash_table_remove(&s->peers, &p->node);
    free(p);
}

static const char *
conn_name(const struct conn *c)
{
    return c->peer[0] ? c->peer : "a client";
}

static void
conn_message(void *arg, const char *data, size_t len, bool truncated)
{
    struct conn *c = arg;
    struct stream_input *s = c->s;

    /* a complete message is activity: most recently active last, the idle timer looks at the head
     */
    if (c->listed) {
        c->last = uv_now(s->base.loop);
        if (c != s->tail) {
            list_remove(s, c);
            list_append(s, c);
        }
    }
    input_deliver(&s->base, data, len, truncated, c->peer[0] ? c->peer : NULL);
}

static void
conn_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct stream_input *s = c->s;

    framer_free(&c->fr);
    tls_conn_free(c->tls);
    free(c);
    s->handles--;
    stream_maybe_free(s);
}

/* Closes a connection; flush delivers a last unterminated message first. */
static void
conn_close(struct conn *c, bool flush)
{
    struct stream_input *s = c->s;

    if (c->listed) {
        /* closed, idle or evicted in the middle of its handshake */
        if (c->tls && !tls_conn_established(c->tls) && !c->tls_counted) {
            s->base.stats.tls_failures[TLS_FAIL_CLOSED]++;
            c->tls_counted = true;
        }
        if (flush) {
            /* a last unterminated line is the client's as much as the others */
            const char *name = c->tls ? tls_conn_peer_name(c->tls) : "";
            s->base.tls_peer = name[0] ? name : NULL;
            if (framer_eof(&c->fr) < 0) s->base.stats.errors++;
            s->base.tls_peer = NULL;
        }
        list_remove(s, c);
        c->listed = false;
        s->base.stats.active--;
        peer_remove(s, c);
    }
    if (!uv_is_closing(&c->h.handle)) uv_close(&c->h.handle, conn_closed);
}

static void
conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;

    (void)suggested;
    buf->base = c->s->rbuf;
    buf->len = READ_BUF_SIZE;
}

/* Plaintext out of a TLS connection. */
static int
conn_plain(void *arg, const char *data, size_t len)
{
    struct conn *c = arg;
    struct stream_input *s = c->s;
    const char *name = tls_conn_peer_name(c->tls);

    s->base.tls_peer = name[0] ? name : NULL;
    if (framer_feed(&c->fr, data, len) < 0) {
        s->base.stats.errors++;
        if (input_log_allowed(&s->last_frame_log, uv_now(s->base.loop), LOG_EVERY_MS))
            log_msg(LOG_WARNING, "%s: malformed octet count from %s, connection closed",
                    s->base.conf.name, conn_name(c));
        return -1;
    }
    return 0;
}

/* Ciphertext from a TLS connection. */
static void
conn_read_tls(struct stream_input *s, struct conn *c, const char *data, size_t len)
{
    bool was = tls_conn_established(c->tls);
    const char *why;
    enum tls_fail f;
    int rc, wr;

    rc = tls_conn_feed(c->tls, data, len, s->pbuf, PLAIN_BUF_SIZE, conn_plain, c);
    s->base.tls_peer = NULL;
    if (rc == 1) tls_conn_shutdown(c->tls); /* the client is done: close_notify back */
    /* the handshake's next flight, or the alert that tells the client why it failed */
    wr = tls_conn_flush(c->tls, &c->h.stream);
    if (!was && tls_conn_established(c->tls)) {
        char how[96];
        tls_conn_describe(c->tls, how, sizeof(how));
        log_msg(LOG_DEBUG, "%s: TLS from %s: %s, certificate name \"%s\"", s->base.conf.name,
                conn_name(c), how, tls_conn_peer_name(c->tls));
    }
    if (rc == -1) {
        f = tls_conn_failure(c->tls, &why);
        if (!tls_conn_established(c->tls)) {
            s->base.stats.tls_failures[f]++;
            c->tls_counted = true;
            if (input_log_allowed(&s->last_tls_log, uv_now(s->base.loop), LOG_EVERY_MS))
                log_msg(LOG_WARNING,
                        "%s: TLS handshake with %s failed (%s): %s; connection closed "
                        "(corral_tls_handshake_failures_total)",
                        s->base.conf.name, conn_name(c), tls_fail_name(f), why);
        } else {
            s->base.stats.errors++;
            if (input_log_allowed(&s->last_tls_log, uv_now(s->base.loop), LOG_EVERY_MS))
                log_msg(LOG_WARNING, "%s: TLS error from %s: %s; connection closed",
                        s->base.conf.name, conn_name(c), why);
        }
    }
    if (rc < 0 || wr < 0) {
        conn_close(c, false);
    } else if (rc == 1) {
        conn_close(c, true); /* close_notify: the client is done */
    }
}

/* Counts n bytes read by c in this loop iteration; at READ_TURN, c waits for the next one. */
static void
take_turn(struct stream_input *s, struct conn *c, size_t n)
{
    if (c->turn != s->turn) {
        c->turn = s->turn;
        c->turn_bytes = 0;
    }
    c->turn_bytes += n;
    if (c->turn_bytes < READ_TURN || c->yielded || s->base.paused || s->closing ||
        uv_is_closing(&c->h.handle))
        return;
    uv_read_stop(&c->h.stream);
    c->yielded = true;
    s->nyielded++;
    s->base.stats.yields++;
}

static void
conn_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = st->data;
    struct stream_input *s = c->s;

    if (nread > 0 && c->tls) {
        conn_read_tls(s, c, buf->base, (size_t)nread);
        take_turn(s, c, (size_t)nread);
        return;
    }
    if (nread > 0) {
        if (framer_feed(&c->fr, buf->base, (size_t)nread) < 0) {
            s->base.stats.errors++;
            if (input_log_allowed(&s->last_frame_log, uv_now(st->loop), LOG_EVERY_MS))
                log_msg(LOG_WARNING, "%s: malformed octet count from %s, connection closed",
                        s->base.conf.name, conn_name(c));
            conn_close(c, false);
        }
        take_turn(s, c, (size_t)nread);
        return;
    }
    if (nread == 0) return; /* EAGAIN */
    if (nread != UV_EOF) {
        s->base.stats.errors++;
        log_msg(LOG_DEBUG, "%s: read from %s: %s", s->base.conf.name,
                c->peer[0] ? c->peer : "a client", uv_strerror((int)nread));
    }
    conn_close(c, true);
}

static void
idle_check(uv_timer_t *t)
{
    struct stream_input *s = t->data;
    uint64_t now = uv_now(t->loop), idle = s->base.idle_timeout_ms;

    if (s->base.paused) return; /* nothing is read: nothing idles; resuming starts the timer */
    while (s->head && now - s->head->last >= idle) {
        struct conn *c = s->head;
        s->base.stats.idle_closed++;
        log_msg(LOG_DEBUG, "%s: closing %s, silent for %.1f s", s->base.conf.name,
                c->peer[0] ? c->peer : "a client", (double)(now - c->last) / 1000.0);
        conn_close(c, true);
    }
    if (s->head) uv_timer_start(&s->idle, idle_check, s->head->last + idle - now, 0);
}

static int
conn_init_handle(struct stream_input *s, struct conn *c)
{
    if (s->is_unix) return uv_pipe_init(s->base.loop, &c->h.pipe, 0);
    return uv_tcp_init(s->base.loop, &c->h.tcp);
}

/* Starts reading c; false when it could not, and c is closed (counted, logged). */
static bool
start_reading(struct stream_input *s, struct conn *c)
{
    int rc = uv_read_start(&c->h.stream, conn_alloc, conn_read);

    if (rc == 0) return true;
    s->base.stats.errors++;
    log_msg(LOG_WARNING, "%s: cannot read from %s: %s", s->base.conf.name, conn_name(c),
            uv_strerror(rc));
    conn_close(c, false);
    return false;
}

/* The check phase, once a loop iteration: a new turn; the connections that yielded read again. */
static void
on_turn(uv_check_t *h)
{
    struct stream_input *s = h->data;
    struct conn *c, *next;

    s->turn++;
    if (!s->nyielded) return;
    s->nyielded = 0;
    for (c = s->head; c; c = next) {
        next = c->next; /* start_reading may close c */
        if (!c->yielded) continue;
        c->yielded = false;
        if (!s->base.paused && !s->closing) start_reading(s, c);
    }
}

static void
on_connection(uv_stream_t *server, int status)
{
    struct stream_input *s = server->data;
    struct conn *c;
    int rc;

    if (status < 0) {
        /* EMFILE and the like: libuv has already shed the connection */
        s->base.stats.errors++;
        if (input_log_allowed(&s->last_error_log, uv_now(server->loop), LOG_EVERY_MS))
            log_msg(LOG_WARNING, "%s: cannot accept: %s", s->base.conf.name, uv_strerror(status));
        return;
    }
    c = xcalloc(1, sizeof(*c));
    c->s = s;
    framer_init(&c->fr, s->base.conf.framing, s->base.max_message_size, conn_message, c);
    rc = conn_init_handle(s, c);
    if (rc < 0) {
        s->base.stats.errors++;
        log_msg(LOG_ERR, "%s: %s", s->base.conf.name, uv_strerror(rc));
        free(c);
        return;
    }
    c->h.handle.data = c;
    s->handles++;
    rc = uv_accept(server, &c->h.stream);
    if (rc < 0) {
        s->base.stats.errors++;
        if (input_log_allowed(&s->last_error_log, uv_now(server->loop), LOG_EVERY_MS))
            log_msg(LOG_WARNING, "%s: cannot accept: %s", s->base.conf.name, uv_strerror(rc));
        conn_close(c, false);
        return;
    }
    if (s->tls) c->tls = tls_conn_new(s->tls, NULL);
    if (!s->is_unix) {
        struct sockaddr_storage ss;
        int len = sizeof(ss);
        if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &len) == 0)
            input_peer_name((struct sockaddr *)&ss, c->peer, sizeof(c->peer));
    }
    if (c->peer[0] && s->base.max_per_peer) {
        struct peer *p = peer_find(s, c->peer, hash_string(c->peer, strlen(c->peer)));
        if (p && p->conns >= s->base.max_per_peer) {
            s->base.stats.rejected++;
            if (input_log_allowed(&s->last_reject_log, uv_now(server->loop), LOG_EVERY_MS))
                log_msg(LOG_WARNING,
                        "%s: %s has %zu connections open, refusing another "
                        "(max-connections-per-peer; %llu refused so far)",
                        s->base.conf.name, c->peer, p->conns,
                        (unsigned long long)s->base.stats.rejected);
            conn_close(c, false);
            return;
        }
    }
    if (stream_cap(s) && s->base.stats.active >= stream_cap(s) && s->head) {
        /* full: the connection idle longest makes room (it may be this client's own) */
        struct conn *old = s->head;
        uint64_t now = uv_now(server->loop);
        s->base.stats.evicted++;
        if (input_log_allowed(&s->last_evict_log, now, LOG_EVERY_MS))
            log_msg(LOG_WARNING,
                    "%s: %zu connections open (max-connections), closing the one idle longest "
                    "(%s, %.1f s) for %s; %llu closed so far",
                    s->base.conf.name, stream_cap(s), conn_name(old),
                    (double)(now - old->last) / 1000.0, conn_name(c),
                    (unsigned long long)s->base.stats.evicted);
        conn_close(old, true);
    }
    if (!s->base.paused) {
        if (!start_reading(s, c)) return;
    }
    c->last = uv_now(server->loop);
    c->listed = true;
    list_append(s, c);
    if (c->peer[0]) peer_add(s, c);
    s->base.stats.connections++;
    s->base.stats.active++;
    if (s->base.idle_timeout_ms && !s->base.paused && !uv_is_active((uv_handle_t *)&s->idle))
        uv_timer_start(&s->idle, idle_check, s->base.idle_timeout_ms, 0);
}

/* ---- the input ---- */

static void
stream_limits_changed(struct input *in)
{
    struct stream_input *s = (struct stream_input *)in;

    /* the timer runs only while there are connections and a timeout; it may be needed now */
    uv_timer_stop(&s->idle);
    if (s->base.idle_timeout_ms && s->head && !s->base.paused) idle_check(&s->idle);
}

/* Back-pressure: stops or resumes reading every connection. */
static void
stream_pause(struct input *in, bool pause)
{
    struct stream_input *s = (struct stream_input *)in;
    struct conn *c, *next;
    uint64_t now = uv_now(s->base.loop);

    if (s->closing) return;
    if (pause) {
        s->paused_at = now;
        uv_timer_stop(&s->idle);
        for (c = s->head; c; c = c->next) uv_read_stop(&c->h.stream);
        return;
    }
    s->nyielded = 0;
    for (c = s->head; c; c = next) {
        next = c->next;
        c->yielded = false;
        /* the pause does not count as idle time; the order stays (one accepted while paused: now)
         */
        c->last += now - s->paused_at;
        if (c->last > now) c->last = now;
        start_reading(s, c);
    }
    if (s->base.idle_timeout_ms && s->head) idle_check(&s->idle);
}

static void
stream_maybe_free(struct stream_input *s)
{
    if (!s->closing || s->handles > 0) return;
    hash_table_free(&s->peers);
    fds_needed -= s->fd_reserved;
    free(s->rbuf);
    free(s->pbuf);
    tls_ctx_unref(s->tls);
    tls_ctx_unref(s->tls_next);
    input_fini(&s->base);
    free(s);
}

static void
handle_closed(uv_handle_t *h)
{
    struct stream_input *s = h->data;

    s->handles--;
    stream_maybe_free(s);
}

static void
stream_close(struct input *in)
{
    struct stream_input *s = (struct stream_input *)in;

    s->closing = true;
    /* the socket file goes now, so that a restart or a reloaded input can take the path */
    if (s->unix_created) {
        input_unix_remove(s->base.conf.path, s->dev, s->ino);
        s->unix_created = false;
    }
    while (s->head) conn_close(s->head, true);
    if (!uv_is_closing(&s->listener.handle)) uv_close(&s->listener.handle, handle_closed);
    if (!uv_is_closing((uv_handle_t *)&s->idle)) {
        uv_timer_stop(&s->idle);
        uv_close((uv_handle_t *)&s->idle, handle_closed);
    }
    if (!uv_is_closing((uv_handle_t *)&s->turn_check)) {
        uv_check_stop(&s->turn_check);
        uv_close((uv_handle_t *)&s->turn_check, handle_closed);
    }
    stream_maybe_free(s);
}

/*
 * Raises the soft limit on open files to what max-connections needs, if the
 * hard limit allows; if it does not, caps this input's connections (fd_cap)
 * so that the stream inputs together leave FD_RESERVE descriptors for the
 * rest of corrald: a flood of syslog connections must not starve the
 * control socket, the stats endpoint, outputs or files.
 */
static void
reserve_fds(struct stream_input *s)
{
    struct rlimit rl;
    rlim_t need, old;

    s->fd_reserved = s->base.max_connections + 1;
    fds_needed += s->fd_reserved;
    need = (rlim_t)fds_needed + FD_RESERVE;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return;
    old = rl.rlim_cur;
    rl.rlim_cur = (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) ? need : rl.rlim_max;
    if (rl.rlim_cur > old && setrlimit(RLIMIT_NOFILE, &rl) == 0)
        log_msg(LOG_INFO, "%s: open files limit raised from %llu to %llu", s->base.conf.name,
                (unsigned long long)old, (unsigned long long)rl.rlim_cur);
    else
        rl.rlim_cur = old;
    if (rl.rlim_cur < need) {
        /* what the other stream inputs and the reserve leave, at least one */
        rlim_t others = (rlim_t)(fds_needed - s->fd_reserved) + FD_RESERVE + 1;
        s->fd_cap = rl.rlim_cur > others + 1 ? (size_t)(rl.rlim_cur - others) : 1;
        log_msg(LOG_WARNING,
                "%s: max-connections %zu needs about %llu open files, the limit is %llu: "
                "at most %zu connections at once",
                s->base.conf.name, s->base.max_connections, (unsigned long long)need,
                (unsigned long long)rl.rlim_cur, s->fd_cap);
    }
}

static int
stream_bind(struct stream_input *s, const struct conf_input *ci, struct buf *err)
{
    int rc;

    if (s->is_unix) {
        /*
         * The socket is made here, not by uv_pipe_bind(): libuv unlinks a path
         * it bound when the handle closes, even if another socket has replaced
         * it since (a reloaded input opens its new socket before the old one
         * closes).  A descriptor handed over with uv_pipe_open() is not unlinked.
         */
        struct sockaddr_un sun;
        int fd;

        if (input_unix_prepare(ci->path, err) < 0) return -1;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            buf_printf(err, "socket: %s", strerror(errno));
            return -1;
        }
        memset(&sun, 0, sizeof(sun));
        sun.sun_family = AF_UNIX;
        memcpy(sun.sun_path, ci->path, strlen(ci->path) + 1); /* length checked by prepare */
        if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
            buf_printf(err, "cannot bind %s: %s", ci->path, strerror(errno));
            close(fd);
            return -1;
        }
        s->unix_created = true; /* even if what follows fails: remove it at close */
        if (input_unix_created(ci->path, ci->mode, &s->dev, &s->ino, err) < 0) {
            /* the inode is unknown: remove by path now, it is the one just created */
            unlink(ci->path);
            s->unix_created = false;
            close(fd);
            return -1;
        }
        rc = uv_pipe_open(&s->listener.pipe, fd);
        if (rc < 0) {
            buf_printf(err, "%s: %s", ci->path, uv_strerror(rc));
            close(fd);
            return -1;
        }
    } else {
        struct sockaddr_storage ss;
        if (input_resolve(ci->listen, SOCK_STREAM, &ss, err) < 0) return -1;
        rc = uv_tcp_bind(&s->listener.tcp, (const struct sockaddr *)&ss, 0);
        if (rc < 0) {
            buf_printf(err, "cannot bind %s: %s", ci->listen, uv_strerror(rc));
            return -1;
        }
    }
    rc = uv_listen(&s->listener.stream, BACKLOG, on_connection);
    if (rc < 0) {
        /* libuv reports a bind conflict (EADDRINUSE) here rather than at bind */
        buf_printf(err, "cannot listen on %s: %s", s->is_unix ? ci->path : ci->listen,
                   uv_strerror(rc));
        return -1;
    }
    if (!s->is_unix) {
        uv_os_fd_t fd;
        char where[INET6_ADDRSTRLEN + 8];
        if (uv_fileno(&s->listener.handle, &fd) == 0 && input_bound_name(fd, where, sizeof(where)))
            log_msg(LOG_INFO, "input %s: listening on %s", s->base.conf.name, where);
    }
    return 0;
}

/* A reload keeps the input: its certificate, key and CA are read again (tls.h). */
static int
stream_reload_prepare(struct input *in, const struct conf_input *ci, struct buf *err)
{
    struct stream_input *s = (struct stream_input *)in;
    struct tls_ctx *ctx = tls_ctx_new(&ci->tls, true, err);

    if (!ctx) return -1;
    tls_ctx_unref(s->tls_next);
    s->tls_next = ctx;
    return 0;
}

static void
stream_reload_commit(struct input *in)
{
    struct stream_input *s = (struct stream_input *)in;

    if (!s->tls_next) return;
    tls_ctx_unref(s->tls); /* connections open hold their own reference */
    s->tls = s->tls_next;
    s->tls_next = NULL;
    log_msg(LOG_INFO, "input %s: certificate and key loaded again", s->base.conf.name);
}

struct input *
in_stream_open(const struct input_sink *sink, uv_loop_t *loop, const struct conf_input *ci,
               const struct conf *conf, struct buf *err)
{
    struct stream_input *s = xcalloc(1, sizeof(*s));
    struct buf e = BUF_INIT;
    int rc;

    input_init(&s->base, sink, loop, ci, conf);
    s->base.close = stream_close;
    s->is_unix = ci->type == CONF_IN_UNIX_STREAM;
    rc =
        s->is_unix ? uv_pipe_init(loop, &s->listener.pipe, 0) : uv_tcp_init(loop, &s->listener.tcp);
    if (rc < 0) {
        buf_printf(err, "input %s: %s", s->base.conf.name, uv_strerror(rc));
        input_fini(&s->base);
        free(s);
        return NULL;
    }
    s->listener.handle.data = s;
    s->handles++;
    uv_timer_init(loop, &s->idle); /* cannot fail on Unix */
    s->idle.data = s;
    s->handles++;
    uv_check_init(loop, &s->turn_check); /* cannot fail either */
    s->turn_check.data = s;
    uv_check_start(&s->turn_check, on_turn);
    uv_unref((uv_handle_t *)&s->turn_check); /* it alone does not keep the loop running */
    s->handles++;
    s->base.limits_changed = stream_limits_changed;
    s->base.pause = stream_pause;
    hash_table_init(&s->peers, 16);
    s->rbuf = xmalloc(READ_BUF_SIZE);
    if (ci->type == CONF_IN_TLS) {
        /* before binding: a bad certificate must not leave a port that accepts and then fails */
        s->tls = tls_ctx_new(&ci->tls, true, &e);
        if (!s->tls) {
            buf_printf(err, "input %s: %s", s->base.conf.name, buf_str(&e));
            buf_free(&e);
            stream_close(&s->base);
            return NULL;
        }
        s->pbuf = xmalloc(PLAIN_BUF_SIZE);
        s->base.reload_prepare = stream_reload_prepare;
        s->base.reload_commit = stream_reload_commit;
    }
    reserve_fds(s);
    if (stream_bind(s, ci, &e) < 0) {
        buf_printf(err, "input %s: %s", s->base.conf.name, buf_str(&e));
        buf_free(&e);
        stream_close(&s->base);
        return NULL;
    }
    return &s->base;
}
