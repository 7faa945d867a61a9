/*
 * ipcproxy: the executor process's queues as the engine process sees them
 * (see ipcproxy.h).  Frames from the executor process are parsed as
 * carefully as the other way round (a frame that does not parse is counted
 * and ignored), though that process is the more trusted one.
 */
#include "actions/ipcproxy.h"

#include <stdlib.h>
#include <string.h>

#include "actions/ipc.h"
#include "engine/log.h"
#include "engine/wire.h"
#include "engine/xalloc.h"

struct remote {
    char *name;
    bool full, low;
    struct queue_stats stats;
};

/* A queue control command waiting for its answer. */
struct pending {
    struct pending *next;
    uint32_t id;
    ipcproxy_answer_fn fn;
    void *arg;
};

struct ipcproxy {
    struct pending *pending; /* oldest first */
    uint32_t next_id;
    struct ipc_conn *conn;
    struct remote *x;
    size_t n;
    bool ready;
    bool said_bye;    /* B came: the executor process closed its queues as asked */
    struct buf frame; /* reused: the frame being built */
    struct ipcproxy_stats stats;
    queue_observer_fn observer;
    void *observer_arg;
    void (*on_ready)(void *arg);
    void (*on_end)(void *arg, const char *reason);
    void *arg;
    void (*done)(void *arg); /* ipcproxy_close's */
    void *done_arg;
    void (*bye)(void *arg); /* ipcproxy_terminate's */
    void *bye_arg;
};

static void
bad_frame(struct ipcproxy *p, char type)
{
    if (!p->stats.bad++)
        log_msg(LOG_WARNING, "privsep: a frame of the executor process did not parse (type 0x%02x)",
                (unsigned char)type);
}

static void
on_hello(struct ipcproxy *p, struct wire_reader *r)
{
    uint32_t n, i;
    const char *name;
    size_t len;

    if (p->ready || wire_get32(r) != IPC_VERSION) {
        bad_frame(p, IPC_X_HELLO);
        return;
    }
    n = wire_get32(r);
    /* every name takes at least its 4-byte length: n cannot exceed what the frame holds */
    if (r->bad || n > (size_t)(r->end - r->p) / 4) {
        bad_frame(p, IPC_X_HELLO);
        return;
    }
    p->x = xcalloc(n + 1, sizeof(*p->x));
    for (i = 0; i < n; i++) {
        name = wire_get_bytes(r, &len);
        p->x[i].name = xmalloc(len + 1);
        memcpy(p->x[i].name, name, len);
        p->x[i].name[len] = '\0';
        p->x[i].low = true;
    }
    p->n = n;
    if (r->bad || r->p != r->end) bad_frame(p, IPC_X_HELLO);
    p->ready = true;
    if (p->on_ready) p->on_ready(p->arg);
}

static void
on_event(struct ipcproxy *p, struct wire_reader *r)
{
    uint32_t i = wire_get32(r), ev = wire_get32(r);
    const char *alert;
    size_t len;
    struct msg *m;

    alert = wire_get_bytes(r, &len);
    if (r->bad || r->p != r->end || i >= p->n || ev > QUEUE_EV_DROPPED) {
        bad_frame(p, IPC_X_EVENT);
        return;
    }
    if (!p->observer) return;
    m = msg_new();
    if (msg_decode(m, alert, len) == len)
        p->observer(p->observer_arg, p->x[i].name, m, (enum queue_event)ev);
    else
        bad_frame(p, IPC_X_EVENT);
    msg_unref(m);
}

static void
on_pressure(struct ipcproxy *p, struct wire_reader *r)
{
    uint32_t i = wire_get32(r), flags = wire_get32(r);

    if (r->bad || r->p != r->end || i >= p->n) {
        bad_frame(p, IPC_X_PRESSURE);
        return;
    }
    p->x[i].full = flags & 1;
    p->x[i].low = (flags & 2) != 0;
}

static void
on_stats(struct ipcproxy *p, struct wire_reader *r)
{
    uint32_t i = wire_get32(r), n = wire_get32(r), k;
    uint64_t f[sizeof(struct queue_stats) / sizeof(uint64_t)] = {0};

    /* a newer executor may send more fields, an older fewer: take those both know */
    for (k = 0; k < n && !r->bad; k++) {
        uint64_t v = wire_get64(r);
        if (k < sizeof(f) / sizeof(f[0])) f[k] = v;
    }
    if (r->bad || r->p != r->end || i >= p->n) {
        bad_frame(p, IPC_X_STATS);
        return;
    }
    memcpy(&p->x[i].stats, f, sizeof(f));
}

/* Hands each waiting command its answer; gone: "FAILED ..." to all. */
static void
answer(struct ipcproxy *p, uint32_t id, const char *text, size_t len, bool all)
{
    struct pending **pp = &p->pending, *w;

    while ((w = *pp)) {
        if (!all && w->id != id) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        w->fn(w->arg, text, len);
        free(w);
        if (!all) return;
    }
}

static void
on_answer(struct ipcproxy *p, struct wire_reader *r)
{
    uint32_t id = wire_get32(r);
    const char *text;
    size_t len;

    text = wire_get_bytes(r, &len);
    if (r->bad || r->p != r->end) {
        bad_frame(p, IPC_X_ANSWER);
        return;
    }
    answer(p, id, text, len, false);
}

static void
on_frame(void *arg, char type, const void *body, size_t len)
{
    struct ipcproxy *p = arg;
    struct wire_reader r;

    wire_reader_init(&r, body, len);
    if (type != IPC_X_HELLO && !p->ready) {
        bad_frame(p, type);
        return;
    }
    switch (type) {
    case IPC_X_HELLO: on_hello(p, &r); break;
    case IPC_X_EVENT: on_event(p, &r); break;
    case IPC_X_PRESSURE: on_pressure(p, &r); break;
    case IPC_X_STATS: on_stats(p, &r); break;
    case IPC_X_ANSWER: on_answer(p, &r); break;
    case IPC_X_SERVED:
        p->stats.served_submitted = wire_get64(&r);
        p->stats.served_rejected = wire_get64(&r);
        if (r.bad || r.p != r.end) bad_frame(p, type);
        break;
    case IPC_X_BYE:
        p->said_bye = true;
        if (p->bye) {
            void (*bye)(void *) = p->bye;
            p->bye = NULL;
            bye(p->bye_arg);
        }
        break;
    default: bad_frame(p, type); break;
    }
}

#define GONE "FAILED the executor process is gone\n"

static void
on_conn_end(void *arg, const char *reason)
{
    struct ipcproxy *p = arg;

    if (p->bye) { /* gone before its bye: the caller stops waiting all the same */
        void (*bye)(void *) = p->bye;
        p->bye = NULL;
        bye(p->bye_arg);
    }

    answer(p, 0, GONE, sizeof(GONE) - 1, true);
    if (p->on_end) p->on_end(p->arg, reason);
}

struct ipcproxy *
ipcproxy_new(uv_loop_t *loop, int fd, void (*on_ready)(void *arg),
             void (*on_end)(void *arg, const char *reason), void *arg)
{
    struct ipcproxy *p = xcalloc(1, sizeof(*p));

    p->on_ready = on_ready;
    p->on_end = on_end;
    p->arg = arg;
    buf_init(&p->frame);
    p->conn = ipc_open(loop, fd, on_frame, on_conn_end, p);
    if (!p->conn) {
        free(p);
        return NULL;
    }
    return p;
}

bool
ipcproxy_ready(const struct ipcproxy *p)
{
    return p->ready;
}

size_t
ipcproxy_count(const struct ipcproxy *p)
{
    return p->n;
}

int
ipcproxy_find(const struct ipcproxy *p, const char *name)
{
    size_t i;

    for (i = 0; i < p->n; i++)
        if (strcmp(p->x[i].name, name) == 0) return (int)i;
    return -1;
}

const char *
ipcproxy_name(const struct ipcproxy *p, size_t i)
{
    return i < p->n ? p->x[i].name : NULL;
}

void
ipcproxy_submit(struct ipcproxy *p, size_t i, const struct msg *m, bool keep)
{
    size_t start, at, len = 0;

    if (i >= p->n) {
        p->stats.refused++;
        return;
    }
    /* the alert is encoded straight into the frame, its length stored once known */
    buf_reset(&p->frame);
    start = ipc_begin(&p->frame, IPC_SUBMIT);
    wire_put32(&p->frame, (uint32_t)i);
    wire_put32(&p->frame, keep ? 1 : 0);
    at = p->frame.len;
    wire_put32(&p->frame, 0);
    msg_encode(m, &p->frame);
    len = p->frame.len - at - 4;
    wire_store32((unsigned char *)p->frame.p + at, (uint32_t)len);
    if (ipc_end(&p->frame, start) < 0 || ipc_send_frames(p->conn, &p->frame) < 0) {
        if (!p->stats.refused++)
            log_msg(LOG_WARNING,
                    "privsep: an alert for executor %s was not sent to the executor process "
                    "(%zu bytes encoded, or the process is gone)",
                    p->x[i].name, len);
        return;
    }
    p->stats.sent++;
}

bool
ipcproxy_full(const struct ipcproxy *p, size_t i)
{
    return i < p->n && p->x[i].full;
}

bool
ipcproxy_low(const struct ipcproxy *p, size_t i)
{
    return i >= p->n || p->x[i].low;
}

void
ipcproxy_sync(struct ipcproxy *p)
{
    ipc_send(p->conn, IPC_SYNC, NULL, 0);
}

int
ipcproxy_notify(struct ipcproxy *p, const char *state)
{
    return ipc_send(p->conn, IPC_NOTIFY, state, strlen(state));
}

void
ipcproxy_control(struct ipcproxy *p, const char *args, ipcproxy_answer_fn fn, void *arg)
{
    struct pending *w, **tail;
    size_t start, len = strlen(args);

    if (len > IPCPROXY_CONTROL_MAX) {
        static const char too_long[] = "ERROR the command is too long\n";
        fn(arg, too_long, sizeof(too_long) - 1);
        return;
    }
    buf_reset(&p->frame);
    start = ipc_begin(&p->frame, IPC_QUEUECTL);
    wire_put32(&p->frame, ++p->next_id);
    wire_put_bytes(&p->frame, args, len);
    if (ipc_end(&p->frame, start) < 0 || ipc_send_frames(p->conn, &p->frame) < 0) {
        fn(arg, GONE, sizeof(GONE) - 1);
        return;
    }
    w = xcalloc(1, sizeof(*w));
    w->id = p->next_id;
    w->fn = fn;
    w->arg = arg;
    for (tail = &p->pending; *tail; tail = &(*tail)->next) {
    }
    *tail = w;
}

int
ipcproxy_terminate(struct ipcproxy *p, void (*bye)(void *arg), void *arg)
{
    if (ipc_send(p->conn, IPC_TERMINATE, NULL, 0) < 0) return -1;
    p->bye = bye;
    p->bye_arg = arg;
    return 0;
}

const struct queue_stats *
ipcproxy_queue_stats(const struct ipcproxy *p, size_t i)
{
    static const struct queue_stats none;

    return i < p->n ? &p->x[i].stats : &none;
}

void
ipcproxy_set_observer(struct ipcproxy *p, queue_observer_fn fn, void *arg)
{
    p->observer = fn;
    p->observer_arg = arg;
}

bool
ipcproxy_said_bye(const struct ipcproxy *p)
{
    return p->said_bye;
}

const struct ipcproxy_stats *
ipcproxy_get_stats(const struct ipcproxy *p)
{
    return &p->stats;
}

static void
conn_closed(void *arg)
{
    struct ipcproxy *p = arg;
    void (*done)(void *) = p->done;
    void *done_arg = p->done_arg;
    size_t i;

    for (i = 0; i < p->n; i++) free(p->x[i].name);
    free(p->x);
    buf_free(&p->frame);
    free(p);
    if (done) done(done_arg);
}

void
ipcproxy_close(struct ipcproxy *p, void (*done)(void *arg), void *arg)
{
    /* no callback of the caller's runs after this but done */
    p->on_ready = NULL;
    p->on_end = NULL;
    p->observer = NULL;
    p->bye = NULL;
    while (p->pending) { /* the caller is going away: nobody to answer */
        struct pending *w = p->pending;
        p->pending = w->next;
        free(w);
    }
    p->done = done;
    p->done_arg = arg;
    ipc_close(p->conn, conn_closed, p);
}
