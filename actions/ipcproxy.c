/*
 * ipcproxy: the executor process's queues as the engine process sees them
 * (see ipcproxy.h).  Frames from the executor process are parsed as
 * carefully as the other way round (a frame that does not parse is counted
 * and ignored), though that process is the more trusted one.
 */
#include "actions/ipcproxy.h"

#include <signal.h>
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
    void (*on_signal)(void *arg, int sig);
    void *signal_arg;
    void (*on_ready)(void *arg);
    void (*on_end)(void *arg, const char *reason);
    void *arg;
    void (*done)(void *arg); /* ipcproxy_close's */
    void *done_arg;
    void (*bye)(void *arg); /* ipcproxy_terminate's */
    void *bye_arg;
    /* a reload of the executors (L) waiting for its answer (R); see ipcproxy_reload */
    bool reloading;
    uint64_t reload_gen;
    ipcproxy_reload_fn reload_fn;
    void *reload_arg;
    struct buf held; /* the submits made meanwhile, whole frames in the old list's indexes */
    size_t held_count;
    bool terminate_deferred; /* ipcproxy_terminate came meanwhile: T goes after them */
};

static void
bad_frame(struct ipcproxy *p, char type)
{
    if (!p->stats.bad++)
        log_msg(LOG_WARNING,
                "privsep: a frame of the executor process did not parse (%s, type 0x%02x)",
                ipc_type_name(type), (unsigned char)type);
}

/*
 * The executors' names of a hello or a reload answer: u32 n, then n names
 * (bytes, no NUL: they are looked up as strings).  The names, n + 1 of
 * them allocated (free_names), or NULL when they do not parse.
 */
static char **
parse_names(struct wire_reader *r, size_t *count)
{
    char **names;
    uint32_t n = wire_get32(r), i;
    const char *name;
    size_t len;

    /* every name takes at least its 4-byte length: n cannot exceed what the frame holds */
    if (r->bad || n > (size_t)(r->end - r->p) / 4) return NULL;
    names = xcalloc((size_t)n + 1, sizeof(*names));
    for (i = 0; i < n; i++) {
        name = wire_get_bytes(r, &len);
        if (r->bad || memchr(name, '\0', len)) break;
        names[i] = xmalloc(len + 1);
        memcpy(names[i], name, len);
        names[i][len] = '\0';
    }
    if (i < n) {
        for (n = i, i = 0; i < n; i++) free(names[i]);
        free(names);
        return NULL;
    }
    *count = n;
    return names;
}

static void
free_names(char **names)
{
    size_t i;

    for (i = 0; names && names[i]; i++) free(names[i]);
    free(names);
}

/* The executors by index, from their names (which they take over; names itself is freed). */
static struct remote *
remotes_of(char **names, size_t n)
{
    struct remote *x = xcalloc(n + 1, sizeof(*x));
    size_t i;

    for (i = 0; i < n; i++) {
        x[i].name = names[i];
        x[i].low = true;
    }
    free(names);
    return x;
}

static void
free_remotes(struct remote *x, size_t n)
{
    size_t i;

    for (i = 0; x && i < n; i++) free(x[i].name);
    free(x);
}

/* Ends the connection from this side: the executor process is not one this engine can talk to. */
static void
give_up(struct ipcproxy *p, const char *reason)
{
    ipc_abort(p->conn, reason);
}

static void
on_hello(struct ipcproxy *p, struct wire_reader *r)
{
    uint32_t version;
    char **names;
    size_t n = 0;

    if (p->ready) {
        bad_frame(p, IPC_X_HELLO);
        return;
    }
    version = wire_get32(r);
    if (r->bad) {
        bad_frame(p, IPC_X_HELLO);
        return;
    }
    if (version != IPC_VERSION) {
        /* built from another corral (one half upgraded under the other?): nothing it says is ours
         */
        log_msg(LOG_ERR,
                "privsep: the executor process speaks protocol version %u, this engine process "
                "%u: stopping",
                version, IPC_VERSION);
        give_up(p, "protocol version mismatch");
        return;
    }
    names = parse_names(r, &n);
    if (!names || r->p != r->end) {
        free_names(names);
        bad_frame(p, IPC_X_HELLO);
        give_up(p, "the hello does not parse");
        return;
    }
    p->x = remotes_of(names, n);
    p->n = n;
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

int
ipcproxy_parse_reloaded(const void *body, size_t len, struct ipcproxy_reloaded *out)
{
    struct wire_reader r;
    uint32_t ok;

    memset(out, 0, sizeof(*out));
    wire_reader_init(&r, body, len);
    out->generation = wire_get64(&r);
    ok = wire_get32(&r);
    out->report = wire_get_bytes(&r, &out->report_len);
    if (r.bad || ok > 1) return -1;
    out->ok = ok == 1;
    out->names = parse_names(&r, &out->n);
    if (!out->names) return -1;
    if (r.p != r.end || (!out->ok && out->n)) {
        ipcproxy_reloaded_free(out);
        return -1;
    }
    return 0;
}

void
ipcproxy_reloaded_free(struct ipcproxy_reloaded *r)
{
    free_names(r->names);
    r->names = NULL;
}

/*
 * The submits held while the executor process reloaded go out now.  On
 * success their executor's index is translated from the old list to the
 * new one by name; an alert for an executor the reload removed has nowhere
 * to go: dropped, counted (refused) and logged.  On failure the old list
 * still holds: they go out as they are.
 */
static void
send_held(struct ipcproxy *p, const struct remote *was, size_t nwas, bool ok)
{
    size_t at = 0, kept = 0, dropped = 0;
    struct buf out = BUF_INIT;

    while (ok && at + IPC_HEADER_SIZE + 4 <= p->held.len) {
        unsigned char *f = (unsigned char *)p->held.p + at;
        size_t flen = 4 + (size_t)wire_load32(f);
        uint32_t i = wire_load32(f + IPC_HEADER_SIZE);
        int now = i < nwas ? ipcproxy_find(p, was[i].name) : -1;
        if (now >= 0) {
            wire_store32(f + IPC_HEADER_SIZE, (uint32_t)now);
            buf_append(&out, f, flen);
            kept++;
        } else {
            dropped++;
            if (dropped == 1)
                log_msg(LOG_WARNING,
                        "privsep: an alert routed to executor %s before the reload removed it is "
                        "dropped",
                        i < nwas ? was[i].name : "?");
        }
        at += flen;
    }
    if (!ok) {
        buf_append(&out, p->held.p, p->held.len);
        kept = p->held_count;
    }
    p->stats.refused += dropped;
    if (dropped > 1)
        log_msg(LOG_WARNING, "privsep: %zu alerts for executors the reload removed were dropped",
                dropped);
    buf_reset(&p->held);
    p->held_count = 0;
    if (out.len && ipc_send_frames(p->conn, &out) < 0)
        p->stats.refused += kept; /* gone meanwhile: on_end follows */
    else
        p->stats.sent += kept;
    buf_free(&out);
}

/* R: the executor process has reloaded its executors (ok, and its new list), or could not. */
static void
on_reloaded(struct ipcproxy *p, const void *body, size_t len)
{
    struct ipcproxy_reloaded r;
    struct remote *was = p->x;
    size_t nwas = p->n;
    ipcproxy_reload_fn fn = p->reload_fn;
    void *arg = p->reload_arg;

    if (ipcproxy_parse_reloaded(body, len, &r) < 0 || !p->reloading ||
        r.generation != p->reload_gen) {
        if (r.names) ipcproxy_reloaded_free(&r);
        bad_frame(p, IPC_X_RELOADED);
        return;
    }
    p->reloading = false;
    p->reload_fn = NULL;
    if (r.ok) {
        /* the new list; full and low come in the pressure frames sent right after this one */
        p->x = remotes_of(r.names, r.n);
        p->n = r.n;
        r.names = NULL;
    }
    send_held(p, was, nwas, r.ok);
    if (r.ok) free_remotes(was, nwas);
    if (p->terminate_deferred) {
        p->terminate_deferred = false;
        ipc_send(p->conn, IPC_TERMINATE, NULL, 0);
    }
    if (fn) fn(arg, r.ok, r.report, r.report_len);
    ipcproxy_reloaded_free(&r);
}

/* g: a signal the executor process was sent, for the engine; only the five it passes on. */
static void
on_signal(struct ipcproxy *p, struct wire_reader *r)
{
    uint32_t sig = wire_get32(r);

    if (r->bad || r->p != r->end ||
        (sig != SIGHUP && sig != SIGTERM && sig != SIGINT && sig != SIGUSR1 && sig != SIGUSR2)) {
        bad_frame(p, IPC_X_SIGNAL);
        return;
    }
    if (p->on_signal) p->on_signal(p->signal_arg, (int)sig);
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
    case IPC_X_RELOADED: on_reloaded(p, body, len); break;
    case IPC_X_SIGNAL: on_signal(p, &r); break;
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
    if (p->reloading) {
        /* before on_end: the caller learns its reload failed, then that it must stop */
        static const char gone[] = "the executor process is gone\n";
        ipcproxy_reload_fn fn = p->reload_fn;
        p->reloading = false;
        p->reload_fn = NULL;
        buf_reset(&p->held); /* nowhere to send them: the spools keep what was queued before */
        if (p->held_count)
            log_msg(LOG_ERR, "privsep: %zu alerts held during a reload were not sent",
                    p->held_count);
        p->stats.refused += p->held_count;
        p->held_count = 0;
        if (fn) fn(p->reload_arg, false, gone, sizeof(gone) - 1);
    }
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
    buf_init(&p->held);
    p->conn = ipc_open(loop, fd, on_frame, on_conn_end, p);
    if (!p->conn) {
        free(p);
        return NULL;
    }
    /* the executor process checks the version before it takes any request */
    wire_put32(&p->frame, IPC_VERSION);
    ipc_send(p->conn, IPC_HELLO, p->frame.p, p->frame.len);
    buf_reset(&p->frame);
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
    if (ipc_end(&p->frame, start) == 0 && p->reloading) {
        /* held until the reload's answer says which list its index is in (see ipcproxy_reload) */
        buf_append(&p->held, p->frame.p, p->frame.len);
        buf_reset(&p->frame);
        p->held_count++;
        return;
    }
    if (p->frame.len == 0 || ipc_send_frames(p->conn, &p->frame) < 0) {
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
ipcproxy_reload(struct ipcproxy *p, uint64_t generation, ipcproxy_reload_fn fn, void *arg)
{
    size_t start;

    if (p->reloading || !p->ready) return -1;
    buf_reset(&p->frame);
    start = ipc_begin(&p->frame, IPC_RELOAD);
    wire_put64(&p->frame, generation);
    if (ipc_end(&p->frame, start) < 0 || ipc_send_frames(p->conn, &p->frame) < 0) return -1;
    p->reloading = true;
    p->reload_gen = generation;
    p->reload_fn = fn;
    p->reload_arg = arg;
    return 0;
}

bool
ipcproxy_reloading(const struct ipcproxy *p)
{
    return p->reloading;
}

int
ipcproxy_terminate(struct ipcproxy *p, void (*bye)(void *arg), void *arg)
{
    if (p->reloading && !p->terminate_deferred) {
        /* the held submits go first, once the answer says where (on_reloaded sends T then) */
        if (ipc_ended(p->conn)) return -1;
        p->terminate_deferred = true;
    } else if (ipc_send(p->conn, IPC_TERMINATE, NULL, 0) < 0) {
        return -1;
    }
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
ipcproxy_set_signal(struct ipcproxy *p, void (*fn)(void *arg, int sig), void *arg)
{
    p->on_signal = fn;
    p->signal_arg = arg;
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

    free_remotes(p->x, p->n);
    buf_free(&p->frame);
    buf_free(&p->held);
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
    p->reload_fn = NULL;
    while (p->pending) { /* the caller is going away: nobody to answer */
        struct pending *w = p->pending;
        p->pending = w->next;
        free(w);
    }
    p->done = done;
    p->done_arg = arg;
    ipc_close(p->conn, conn_closed, p);
}
