/*
 * ipcserve: the executor process serving the engine (see ipcserve.h).
 *
 * Nothing the engine sends is trusted: a submit names an executor by the
 * index this side published, its alert must decode exactly (msg_decode
 * using every byte), and a frame of any other form or type is refused,
 * counted and logged (at most once a minute, with the count).  The alert
 * is only data: what is sent, where and how (templates, targets, programs,
 * secrets) is this process's own configuration.
 *
 * Nor can the engine exhaust this process: an alert is at most a frame
 * (4 MiB), a queue holds at most QUEUE_MAX_BYTES of alerts and keep=1
 * submits go at most QUEUE_KEEP_EXTRA past its size (queue.h), and the
 * value names and tags the engine's alerts bring into this process's
 * registries (which its own configuration needs for every reload) are
 * bounded: at most IPCSERVE_ALERT_NEW_NAMES per alert and
 * IPCSERVE_NEW_NAMES in all; an alert that would go past either is refused
 * and counted before anything of it is registered.
 */
#include "actions/ipcserve.h"

#include <stdlib.h>
#include <string.h>

#include "actions/ipc.h"
#include "engine/log.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "engine/wire.h"
#include "engine/xalloc.h"

struct slot {
    struct ipcserve *s;
    uint32_t index;
    bool full, low;          /* as last told to the engine */
    struct queue_stats sent; /* as last sent */
};

struct ipcserve {
    uv_loop_t *loop;
    struct ipc_conn *conn;
    struct queue **queues;
    struct slot *slots;
    size_t n;
    uv_timer_t stats_timer;
    struct buf frame; /* reused for every frame built */
    struct ipcserve_stats stats, stats_sent;
    bool served_told; /* the x frame has been sent once (at hello) */
    size_t new_names; /* value names and tags the engine's alerts have registered */
    uint64_t last_reject_log, rejects_unlogged;
    ipcserve_end_fn on_end;
    void *arg;
    ipcserve_control_fn control;
    void *control_arg;
    void (*notify)(void *arg, const char *state);
    void *notify_arg;
    struct buf answer; /* reused: a control command's answer */
    ipcserve_reload_fn reload;
    void *reload_arg;
    bool hello; /* the engine's hello (H) has come, of our version */
    bool ended;
    bool terminating;      /* T came: the queues are closing or closed */
    size_t queues_closing; /* of them, still closing */
    size_t closing;        /* handles and queues still to close */
    void (*done)(void *arg);
    void *done_arg;
};

static void
send_frame(struct ipcserve *s, size_t start)
{
    if (ipc_end(&s->frame, start) == 0 && s->conn) ipc_send_frames(s->conn, &s->frame);
    buf_reset(&s->frame);
}

static void
tell_pressure(struct slot *sl, bool force)
{
    struct ipcserve *s = sl->s;
    struct queue *q = s->queues[sl->index];
    bool full = queue_full(q), low = queue_low(q);
    size_t start;

    if (!force && full == sl->full && low == sl->low) return;
    sl->full = full;
    sl->low = low;
    start = ipc_begin(&s->frame, IPC_X_PRESSURE);
    wire_put32(&s->frame, sl->index);
    wire_put32(&s->frame, (full ? 1u : 0u) | (low ? 2u : 0u));
    send_frame(s, start);
}

void
ipcserve_put_stats(struct buf *out, uint32_t index, const struct queue_stats *st)
{
    const uint64_t *f = (const uint64_t *)st;
    size_t i;

    /* struct queue_stats is uint64_t fields only: sent in their order */
    wire_put32(out, index);
    wire_put32(out, (uint32_t)(sizeof(*st) / sizeof(uint64_t)));
    for (i = 0; i < sizeof(*st) / sizeof(uint64_t); i++) wire_put64(out, f[i]);
}

static void
send_stats(struct ipcserve *s)
{
    size_t i, start;

    /* this side's own counters, for the engine's /metrics (it serves them) */
    if (memcmp(&s->stats, &s->stats_sent, sizeof(s->stats)) != 0 || !s->served_told) {
        s->served_told = true;
        s->stats_sent = s->stats;
        start = ipc_begin(&s->frame, IPC_X_SERVED);
        wire_put64(&s->frame, s->stats.submitted);
        wire_put64(&s->frame, s->stats.rejected);
        send_frame(s, start);
    }

    for (i = 0; i < s->n; i++) {
        const struct queue_stats *st = queue_get_stats(s->queues[i]);
        if (memcmp(st, &s->slots[i].sent, sizeof(*st)) == 0) continue;
        s->slots[i].sent = *st;
        start = ipc_begin(&s->frame, IPC_X_STATS);
        ipcserve_put_stats(&s->frame, (uint32_t)i, st);
        send_frame(s, start);
    }
}

static void
on_stats_timer(uv_timer_t *t)
{
    struct ipcserve *s = t->data;

    if (!s->terminating) send_stats(s); /* the queues are closing, or closed and freed */
}

static void
on_queue_event(void *arg, const char *executor, const struct msg *m, enum queue_event ev)
{
    struct slot *sl = arg;
    struct ipcserve *s = sl->s;
    size_t start, at;

    (void)executor;
    start = ipc_begin(&s->frame, IPC_X_EVENT);
    wire_put32(&s->frame, sl->index);
    wire_put32(&s->frame, (uint32_t)ev);
    at = s->frame.len;
    wire_put32(&s->frame, 0); /* the alert's length, known once encoded */
    msg_encode(m, &s->frame);
    wire_store32((unsigned char *)s->frame.p + at, (uint32_t)(s->frame.len - at - 4));
    send_frame(s, start); /* an alert too long for a frame: the event is left out */
    tell_pressure(sl, false);
}

static void
reject(struct ipcserve *s, char type, const char *why)
{
    uint64_t now = uv_now(s->loop);

    s->stats.rejected++;
    if (s->last_reject_log && now - s->last_reject_log < 60000) {
        s->rejects_unlogged++;
        return;
    }
    log_msg(LOG_WARNING,
            "privsep: refused a request of the engine process (%s, type 0x%02x): %s (%llu refused "
            "in all)",
            ipc_type_name(type), (unsigned char)type, why, (unsigned long long)s->stats.rejected);
    s->last_reject_log = now ? now : 1;
    s->rejects_unlogged = 0;
}

/* A submit's fields, not its alert: 0, or -1 with why. */
static int
split_submit(const void *body, size_t len, size_t nexecutors, struct ipcserve_submit *out,
             const char **why)
{
    struct wire_reader r;

    wire_reader_init(&r, body, len);
    out->index = wire_get32(&r);
    out->keep = wire_get32(&r);
    out->alert = wire_get_bytes(&r, &out->alert_len);
    if (r.bad || r.p != r.end || out->keep > 1) {
        *why = "malformed submit";
        return -1;
    }
    if (out->index >= nexecutors) {
        *why = "no such executor";
        return -1;
    }
    return 0;
}

size_t
ipcserve_new_names(const void *alert, size_t len)
{
    struct wire_reader r;
    const char *name;
    size_t fresh = 0, nlen, vlen;
    uint32_t n, i;

    /* msg_encode's form: pri, flags, two times (u64, u32, u32), the values, the tags */
    wire_reader_init(&r, alert, len);
    wire_get32(&r);
    wire_get32(&r);
    for (i = 0; i < 2; i++) {
        wire_get64(&r);
        wire_get32(&r);
        wire_get32(&r);
    }
    n = wire_get32(&r);
    for (i = 0; i < n && !r.bad; i++) {
        name = wire_get_bytes(&r, &nlen);
        wire_get_bytes(&r, &vlen);
        if (!r.bad && nlen && !nv_lookup(name, nlen)) fresh++;
    }
    n = r.bad ? 0 : wire_get32(&r);
    for (i = 0; i < n && !r.bad; i++) {
        name = wire_get_bytes(&r, &nlen);
        if (!r.bad && !tag_lookup(name, nlen)) fresh++;
    }
    return fresh; /* a malformed alert: msg_decode refuses it */
}

int
ipcserve_parse_submit(const void *body, size_t len, size_t nexecutors, struct ipcserve_submit *out,
                      const char **why)
{
    if (split_submit(body, len, nexecutors, out, why) < 0) return -1;
    if (msg_decode(out->msg, out->alert, out->alert_len) != out->alert_len) {
        *why = "the alert does not decode";
        return -1;
    }
    return 0;
}

static void
on_submit(struct ipcserve *s, const void *body, size_t len)
{
    struct ipcserve_submit sub;
    const char *why = NULL;
    size_t fresh;

    /* the names it would register, counted before msg_decode registers them */
    if (split_submit(body, len, s->n, &sub, &why) < 0) {
        reject(s, IPC_SUBMIT, why);
        return;
    }
    fresh = ipcserve_new_names(sub.alert, sub.alert_len);
    if (fresh > IPCSERVE_ALERT_NEW_NAMES) {
        reject(s, IPC_SUBMIT, "an alert with too many value names or tags new to this process");
        return;
    }
    if (s->new_names + fresh > IPCSERVE_NEW_NAMES) {
        reject(s, IPC_SUBMIT,
               "the engine's alerts have brought all the new value names and tags this "
               "process takes");
        return;
    }
    sub.msg = msg_new();
    if (ipcserve_parse_submit(body, len, s->n, &sub, &why) < 0) {
        msg_unref(sub.msg);
        reject(s, IPC_SUBMIT, why);
        return;
    }
    s->new_names += fresh;
    s->stats.submitted++;
    if (sub.keep)
        queue_submit_keep(s->queues[sub.index], sub.msg);
    else
        queue_submit(s->queues[sub.index], sub.msg);
    msg_unref(sub.msg);
    tell_pressure(&s->slots[sub.index], false);
}

static void closed_one(void *arg);

static void
queue_closed_on_terminate(void *arg)
{
    struct ipcserve *s = arg;
    size_t start;

    if (s->closing) { /* ipcserve_close came meanwhile and counts this queue */
        closed_one(s);
        return;
    }
    if (--s->queues_closing) return;
    /* every queue has closed: what is undelivered is in its spool; say bye */
    start = ipc_begin(&s->frame, IPC_X_BYE);
    send_frame(s, start);
    if (!s->ended) {
        s->ended = true;
        if (s->on_end) s->on_end(s->arg, "terminated");
    }
}

/* T: the engine is stopping; close the queues, then answer B. */
static void
on_terminate(struct ipcserve *s)
{
    size_t i;

    if (s->terminating) return;
    s->terminating = true;
    send_stats(s); /* the last counters, for the engine's final log */
    /*
     * No more: the queues close now and are freed once closed, while this
     * side may stay open a while (corrald closes it once the engine has
     * exited); a later tick read freed queues (ASan, privsep.sh).
     */
    uv_timer_stop(&s->stats_timer);
    s->queues_closing = s->n + 1;
    for (i = 0; i < s->n; i++) {
        queue_set_observer(s->queues[i], NULL, NULL);
        queue_close(s->queues[i], queue_closed_on_terminate, s);
    }
    queue_closed_on_terminate(s); /* the + 1: B even without executors */
}

/* Q: u32 request id, bytes command (text without NUL); answered by A with the same id. */
static void
on_control(struct ipcserve *s, const void *body, size_t len)
{
    struct wire_reader r;
    uint32_t id;
    const char *cmd;
    size_t clen, start;
    char *line;

    wire_reader_init(&r, body, len);
    id = wire_get32(&r);
    cmd = wire_get_bytes(&r, &clen);
    if (r.bad || r.p != r.end || clen > IPCSERVE_CONTROL_MAX || memchr(cmd, '\0', clen)) {
        reject(s, IPC_QUEUECTL, "malformed queue control request");
        return;
    }
    buf_reset(&s->answer);
    if (s->control) {
        line = xmalloc(clen + 1);
        memcpy(line, cmd, clen);
        line[clen] = '\0';
        s->control(s->control_arg, s->queues, s->n, line, &s->answer);
        free(line);
    } else {
        buf_puts(&s->answer, "ERROR queue control is not available\n");
    }
    if (s->answer.len > IPC_BODY_MAX - 8) { /* too long for a frame: say so instead */
        buf_reset(&s->answer);
        buf_puts(&s->answer, "FAILED the answer is too long\n");
    }
    start = ipc_begin(&s->frame, IPC_X_ANSWER);
    wire_put32(&s->frame, id);
    wire_put_bytes(&s->frame, s->answer.p, s->answer.len);
    send_frame(s, start);
    /* a retry or drop changes the counters: the engine sees them now, not a second later */
    send_stats(s);
}

/* N: one of the states systemd knows corrald by; the executor process (MAINPID) tells it. */
static void
on_notify(struct ipcserve *s, const void *body, size_t len)
{
    static const char *const states[] = {"READY=1", "RELOADING=1", "STOPPING=1"};
    size_t i;

    for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        if (len == strlen(states[i]) && memcmp(body, states[i], len) == 0) {
            if (s->notify) s->notify(s->notify_arg, states[i]);
            return;
        }
    reject(s, IPC_NOTIFY, "not a state corrald notifies");
}

int
ipcserve_parse_hello(const void *body, size_t len, uint32_t *version)
{
    struct wire_reader r;

    wire_reader_init(&r, body, len);
    *version = wire_get32(&r);
    return r.bad || r.p != r.end ? -1 : 0;
}

int
ipcserve_parse_reload(const void *body, size_t len, uint64_t *generation)
{
    struct wire_reader r;

    wire_reader_init(&r, body, len);
    *generation = wire_get64(&r);
    return r.bad || r.p != r.end ? -1 : 0;
}

/* H: the engine's protocol version; another one is not an engine this process can serve. */
static void
on_hello(struct ipcserve *s, const void *body, size_t len)
{
    uint32_t version;

    if (s->hello || ipcserve_parse_hello(body, len, &version) < 0) {
        reject(s, IPC_HELLO, s->hello ? "a second hello" : "malformed hello");
        return;
    }
    if (version != IPC_VERSION) {
        log_msg(LOG_ERR,
                "privsep: the engine process speaks protocol version %u, this executor process "
                "%u: stopping",
                version, IPC_VERSION);
        ipc_abort(s->conn, "protocol version mismatch"); /* on_end, as when the engine is gone */
        return;
    }
    s->hello = true;
}

/* The queues are queues[0..n) from now on: each one's slot, observer, and what the engine knows. */
static void
set_queues(struct ipcserve *s, struct queue **queues, size_t n)
{
    size_t i;

    free(s->queues);
    free(s->slots);
    s->n = n;
    s->queues = xcalloc(n + 1, sizeof(*s->queues));
    s->slots = xcalloc(n + 1, sizeof(*s->slots));
    for (i = 0; i < n; i++) {
        s->queues[i] = queues[i];
        s->slots[i].s = s;
        s->slots[i].index = (uint32_t)i;
        queue_set_observer(queues[i], on_queue_event, &s->slots[i]);
    }
}

/* The executors' names: u32 n, then each name (the end of h and of R). */
static void
put_names(struct ipcserve *s)
{
    size_t i;
    const char *name;

    wire_put32(&s->frame, (uint32_t)s->n);
    for (i = 0; i < s->n; i++) {
        name = queue_name(s->queues[i]);
        wire_put_bytes(&s->frame, name, strlen(name));
    }
}

/* What a hello or a reload tells of every queue: its pressure and its counters. */
static void
tell_all(struct ipcserve *s)
{
    size_t i;

    for (i = 0; i < s->n; i++) tell_pressure(&s->slots[i], true);
    send_stats(s);
}

/*
 * L: the reload function reads the configuration file again (this process
 * trusts no configuration from the engine) and replaces the queues, in one
 * go, as a reload without privilege separation does; R says how it went,
 * with the new list.  The engine holds its submits until R (ipcproxy.h),
 * so every S after this one names an executor of the new list.
 */
static void
on_reload(struct ipcserve *s, const void *body, size_t len)
{
    struct buf report = BUF_INIT;
    struct queue **now = NULL;
    size_t i, n = 0, start;
    uint64_t gen;
    int rc = -1;

    if (ipcserve_parse_reload(body, len, &gen) < 0) {
        reject(s, IPC_RELOAD, "malformed reload");
        return;
    }
    if (!s->reload)
        buf_puts(&report, "the executor process cannot reload its executors\n");
    else
        rc = s->reload(s->reload_arg, s->queues, s->n, &now, &n, &report);
    if (rc == 0) {
        /* the queues it closed learn nothing more (their slots go); the others their new slot */
        for (i = 0; i < s->n; i++) queue_set_observer(s->queues[i], NULL, NULL);
        set_queues(s, now, n);
        free(now);
    }
    if (report.len > IPC_BODY_MAX / 2) { /* too long for a frame beside the list */
        buf_reset(&report);
        buf_puts(&report, "(the report is too long)\n");
    }
    start = ipc_begin(&s->frame, IPC_X_RELOADED);
    wire_put64(&s->frame, gen);
    wire_put32(&s->frame, rc == 0 ? 1 : 0);
    wire_put_bytes(&s->frame, report.p, report.len);
    if (rc == 0)
        put_names(s);
    else
        wire_put32(&s->frame, 0);
    send_frame(s, start);
    if (rc == 0) {
        tell_all(s); /* the engine's list is new: every queue's pressure and counters again */
    }
    buf_free(&report);
}

static void
on_frame(void *arg, char type, const void *body, size_t len)
{
    struct ipcserve *s = arg;
    size_t i;

    if (s->terminating) {
        reject(s, type, "a request after terminate");
        return;
    }
    if (!s->hello && type != IPC_HELLO) {
        reject(s, type, "a request before the hello");
        return;
    }
    switch (type) {
    case IPC_HELLO: on_hello(s, body, len); break;
    case IPC_RELOAD: on_reload(s, body, len); break;
    case IPC_SUBMIT: on_submit(s, body, len); break;
    case IPC_QUEUECTL: on_control(s, body, len); break;
    case IPC_NOTIFY: on_notify(s, body, len); break;
    case IPC_TERMINATE:
        if (len)
            reject(s, type, "malformed terminate");
        else
            on_terminate(s);
        break;
    case IPC_SYNC:
        if (len) {
            reject(s, type, "malformed sync");
            break;
        }
        for (i = 0; i < s->n; i++) queue_sync(s->queues[i]);
        break;
    default: reject(s, type, "unknown request"); break;
    }
}

static void
on_conn_end(void *arg, const char *reason)
{
    struct ipcserve *s = arg;

    if (s->ended) return;
    s->ended = true;
    if (s->on_end) s->on_end(s->arg, reason);
}

static void
send_hello(struct ipcserve *s)
{
    size_t start = ipc_begin(&s->frame, IPC_X_HELLO);

    wire_put32(&s->frame, IPC_VERSION);
    put_names(s);
    send_frame(s, start);
    tell_all(s);
}

struct ipcserve *
ipcserve_new(uv_loop_t *loop, int fd, struct queue **queues, size_t n, ipcserve_end_fn on_end,
             void *arg)
{
    struct ipcserve *s = xcalloc(1, sizeof(*s));

    s->loop = loop;
    s->on_end = on_end;
    s->arg = arg;
    buf_init(&s->frame);
    buf_init(&s->answer);
    s->conn = ipc_open(loop, fd, on_frame, on_conn_end, s);
    if (!s->conn) {
        free(s);
        return NULL;
    }
    set_queues(s, queues, n);
    uv_timer_init(loop, &s->stats_timer);
    s->stats_timer.data = s;
    uv_timer_start(&s->stats_timer, on_stats_timer, 1000, 1000);
    send_hello(s);
    return s;
}

void
ipcserve_set_control(struct ipcserve *s, ipcserve_control_fn fn, void *arg)
{
    s->control = fn;
    s->control_arg = arg;
}

void
ipcserve_set_reload(struct ipcserve *s, ipcserve_reload_fn fn, void *arg)
{
    s->reload = fn;
    s->reload_arg = arg;
}

int
ipcserve_signal(struct ipcserve *s, int sig)
{
    size_t start;

    if (s->ended || sig <= 0) return -1;
    start = ipc_begin(&s->frame, IPC_X_SIGNAL);
    wire_put32(&s->frame, (uint32_t)sig);
    send_frame(s, start);
    return 0;
}

void
ipcserve_set_notify(struct ipcserve *s, void (*fn)(void *arg, const char *state), void *arg)
{
    s->notify = fn;
    s->notify_arg = arg;
}

const struct ipcserve_stats *
ipcserve_get_stats(const struct ipcserve *s)
{
    return &s->stats;
}

static void
closed_one(void *arg)
{
    struct ipcserve *s = arg;
    void (*done)(void *);
    void *done_arg;

    if (--s->closing) return;
    done = s->done;
    done_arg = s->done_arg;
    buf_free(&s->frame);
    buf_free(&s->answer);
    free(s->queues);
    free(s->slots);
    free(s);
    if (done) done(done_arg);
}

static void
timer_closed(uv_handle_t *h)
{
    closed_one(h->data);
}

void
ipcserve_close(struct ipcserve *s, void (*done)(void *arg), void *arg)
{
    size_t i;

    s->done = done;
    s->done_arg = arg;
    s->ended = true;
    /* the connection, the timer, and the queues unless terminate closes them */
    s->closing = 2 + (s->terminating ? s->queues_closing : s->n);
    ipc_close(s->conn, closed_one, s);
    s->conn = NULL;
    uv_close((uv_handle_t *)&s->stats_timer, timer_closed);
    for (i = 0; i < s->n && !s->terminating; i++) {
        queue_set_observer(s->queues[i], NULL, NULL);
        queue_close(s->queues[i], closed_one, s);
    }
}
