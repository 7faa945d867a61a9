/*
 * queue: spool, scheduling, retries and dead letters for one executor.
 * See queue.h for the guarantees.  Alerts wait in a FIFO list; each pass
 * starts the oldest ready ones up to the executor's max_inflight, and a
 * timer wakes the queue when the next retry is due.
 */
#include "actions/queue.h"
#include "engine/clock.h"
#include "engine/durable.h"
#include "engine/hash.h"
#include "engine/json.h"
#include "engine/log.h"
#include "engine/macros.h"
#include "engine/template.h"
#include "engine/wire.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_ALERT   'A'
#define REC_DONE    'D'
#define SPOOL_MAGIC "CORRALSP1\n"

struct item {
    struct item *next;
    struct queue *q;
    uint64_t seq;
    uint32_t attempts;
    uint64_t not_before; /* ms */
    bool inflight;
    struct msg *msg;
    char *id, *severity;
};

struct dedupe_entry {
    uint64_t hash; /* 0: empty */
    uint64_t when; /* ms */
};

struct queue {
    uv_loop_t *loop;
    const struct executor_kind *kind;
    void *impl;
    char *name;

    size_t max_queued;
    uint32_t max_attempts;
    double backoff, max_backoff; /* seconds */
    uint32_t rate_n, rate_s;
    double tokens;
    uint64_t refilled; /* ms */
    double dedupe;     /* seconds; 0: off */
    struct dedupe_entry *seen;
    size_t nseen, capseen;
    struct tpl *dedupe_key, *alert_id, *severity;

    char *spool_path, *dead_path;
    int spool_fd;
    bool dirty;
    uint64_t next_seq;
    size_t spool_records, spool_done;

    struct item *head, *tail;
    size_t nitems, ninflight;
    uv_timer_t timer;
    uv_check_t check;
    bool kicking, kick_again, closing;
    void (*closed)(void *);
    void *closed_arg;
    int handles;

    struct queue_stats st;
    struct buf scratch;
    uint64_t last_drop_log;
};

/* ---- the spool file ---- */

/* A record: u32 length of the rest, u32 CRC of the rest, type, u64 sequence, payload. */
static void
frame(struct buf *out, char type, uint64_t seq, const char *payload, size_t len)
{
    unsigned char head[8] = {0};
    size_t start = out->len;

    buf_append(out, head, 8); /* length and CRC, filled in below */
    buf_putc(out, type);
    wire_store32(head, (uint32_t)seq);
    buf_append(out, head, 4);
    wire_store32(head, (uint32_t)(seq >> 32));
    buf_append(out, head, 4);
    buf_append(out, payload, len);
    wire_store32((unsigned char *)out->p + start, (uint32_t)(out->len - start - 8));
    wire_store32((unsigned char *)out->p + start + 4,
                 durable_crc32(0, out->p + start + 8, out->len - start - 8));
}

static void
spool_append(struct queue *q, char type, uint64_t seq, const struct msg *m)
{
    struct buf rec = BUF_INIT, payload = BUF_INIT;

    if (q->spool_fd < 0) return;
    if (m) msg_encode(m, &payload);
    frame(&rec, type, seq, payload.p, payload.len);
    if (durable_write_all(q->spool_fd, rec.p, rec.len) < 0)
        log_msg(LOG_ERR, "executor %s: writing spool %s: %s", q->name, q->spool_path,
                strerror(errno));
    q->dirty = true;
    q->spool_records++;
    if (type == REC_DONE) q->spool_done++;
    buf_free(&rec);
    buf_free(&payload);
}

/* Rewrites the spool with just the pending alerts (at start, and when mostly done records). */
static int
spool_compact(struct queue *q)
{
    struct buf tmp = BUF_INIT, data = BUF_INIT, payload = BUF_INIT;
    struct item *it;
    int fd, rc = -1;

    buf_printf(&tmp, "%s.tmp", q->spool_path);
    buf_append(&data, SPOOL_MAGIC, strlen(SPOOL_MAGIC));
    for (it = q->head; it; it = it->next) {
        buf_reset(&payload);
        msg_encode(it->msg, &payload);
        frame(&data, REC_ALERT, it->seq, payload.p, payload.len);
    }
    fd = open(buf_str(&tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0 && durable_write_all(fd, data.p, data.len) == 0 && fdatasync(fd) == 0 &&
        rename(buf_str(&tmp), q->spool_path) == 0) {
        if (q->spool_fd >= 0) close(q->spool_fd);
        q->spool_fd = fd;
        lseek(fd, 0, SEEK_END);
        q->spool_records = q->nitems;
        q->spool_done = 0;
        rc = 0;
    } else {
        log_msg(LOG_ERR, "executor %s: compacting spool %s: %s", q->name, q->spool_path,
                strerror(errno));
        if (fd >= 0) close(fd);
        unlink(buf_str(&tmp));
    }
    buf_free(&tmp);
    buf_free(&data);
    buf_free(&payload);
    return rc;
}

static void enqueue(struct queue *q, struct msg *m, uint64_t seq);

/* Reads the spool left by the previous run; pending alerts are queued again. */
static int
spool_replay(struct queue *q, struct buf *err)
{
    char *data;
    size_t size, pos, nalerts = 0, cap = 0, i;
    struct {
        uint64_t seq;
        size_t off, len;
        bool done;
    } *alerts = NULL;

    data = durable_read_file(q->spool_path, &size);
    if (!data) {
        if (errno == ENOENT) return 0;
        buf_printf(err, "executor %s: cannot read spool %s: %s\n", q->name, q->spool_path,
                   strerror(errno));
        return -1;
    }
    pos = strlen(SPOOL_MAGIC);
    if (size < pos || memcmp(data, SPOOL_MAGIC, pos) != 0) {
        log_msg(LOG_ERR, "executor %s: %s is not a spool; starting a new one", q->name,
                q->spool_path);
        free(data);
        return 0;
    }
    while (pos + 8 <= size) {
        const unsigned char *p = (const unsigned char *)data + pos;
        uint32_t len = wire_load32(p), crc = wire_load32(p + 4);
        uint64_t seq;
        if (len < 9 || pos + 8 + len > size || durable_crc32(0, p + 8, len) != crc)
            break; /* torn tail */
        seq = (uint64_t)wire_load32(p + 9) | (uint64_t)wire_load32(p + 13) << 32;
        if (seq >= q->next_seq) q->next_seq = seq + 1;
        if (p[8] == REC_ALERT) {
            alerts = xgrow(alerts, &cap, nalerts + 1, sizeof(*alerts));
            alerts[nalerts].seq = seq;
            alerts[nalerts].off = pos + 8 + 9;
            alerts[nalerts].len = len - 9;
            alerts[nalerts].done = false;
            nalerts++;
        } else if (p[8] == REC_DONE) {
            for (i = nalerts; i-- > 0;)
                if (alerts[i].seq == seq) {
                    alerts[i].done = true;
                    break;
                }
        }
        pos += 8 + len;
    }
    if (pos < size)
        log_msg(LOG_WARNING, "executor %s: spool %s: %zu bytes of a torn record cut off", q->name,
                q->spool_path, size - pos);
    for (i = 0; i < nalerts; i++) {
        struct msg *m;
        if (alerts[i].done) continue;
        m = msg_new();
        if (msg_decode(m, data + alerts[i].off, alerts[i].len)) {
            enqueue(q, m, alerts[i].seq);
            q->st.recovered++;
        }
        msg_unref(m);
    }
    free(alerts);
    free(data);
    return 0;
}

static int
spool_open(struct queue *q, const char *dir, struct buf *err)
{
    struct buf path = BUF_INIT;

    q->spool_fd = -1;
    if (!dir) return 0;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        buf_printf(err, "executor %s: cannot create spool directory %s: %s\n", q->name, dir,
                   strerror(errno));
        return -1;
    }
    buf_printf(&path, "%s/%s.spool", dir, q->name);
    q->spool_path = xstrdup(buf_str(&path));
    buf_free(&path);
    if (spool_replay(q, err) < 0) return -1;
    /* start from a compact file holding exactly the pending alerts */
    if (spool_compact(q) < 0) {
        buf_printf(err, "executor %s: cannot write spool %s: %s\n", q->name, q->spool_path,
                   strerror(errno));
        return -1;
    }
    if (q->st.recovered)
        log_msg(LOG_INFO, "executor %s: %llu alerts from the spool will be delivered", q->name,
                (unsigned long long)q->st.recovered);
    return 0;
}

/* ---- dead letters ---- */

static void
dead_letter(struct queue *q, struct item *it, const char *reason)
{
    struct buf line = BUF_INIT, when = BUF_INIT;
    struct msg_time t = {(int64_t)(clock_wall_ms() / 1000), 0, 0};
    int fd;

    q->st.dead++;
    macro_format_iso(&t, 0, &when);
    buf_puts(&line, "{\"time\":");
    json_string(&line, when.p, when.len);
    buf_puts(&line, ",\"executor\":");
    json_string(&line, q->name, strlen(q->name));
    buf_puts(&line, ",\"reason\":");
    json_string(&line, reason ? reason : "", reason ? strlen(reason) : 0);
    buf_printf(&line, ",\"attempts\":%u,\"alert_id\":", it->attempts);
    json_string(&line, it->id, strlen(it->id));
    buf_puts(&line, ",\"message\":");
    json_format_msg(it->msg, &line);
    buf_puts(&line, "}\n");
    log_msg(LOG_WARNING, "executor %s: alert %s given up after %u attempts: %s", q->name, it->id,
            it->attempts, reason ? reason : "");
    if (q->dead_path) {
        fd = open(q->dead_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || durable_write_all(fd, line.p, line.len) < 0 || fdatasync(fd) < 0)
            log_msg(LOG_ERR, "executor %s: writing dead letters to %s: %s", q->name, q->dead_path,
                    strerror(errno));
        if (fd >= 0) close(fd);
    }
    buf_free(&line);
    buf_free(&when);
}

/* ---- scheduling ---- */

static void kick(struct queue *q);

static void
item_free(struct item *it)
{
    msg_unref(it->msg);
    free(it->id);
    free(it->severity);
    free(it);
}

static void
remove_item(struct queue *q, struct item *it)
{
    struct item **p = &q->head, *prev = NULL;

    while (*p && *p != it) {
        prev = *p;
        p = &(*p)->next;
    }
    if (!*p) return;
    *p = it->next;
    if (q->tail == it) q->tail = prev;
    q->nitems--;
    q->st.queued = q->nitems;
    spool_append(q, REC_DONE, it->seq, NULL);
    item_free(it);
}

static void
on_done(void *token, enum deliver_result r, const char *reason)
{
    struct item *it = token;
    struct queue *q = it->q;

    it->inflight = false;
    q->ninflight--;
    q->st.inflight = q->ninflight;
    it->attempts++;
    if (r == DELIVER_OK) {
        q->st.delivered++;
        remove_item(q, it);
    } else if (r == DELIVER_FAIL || it->attempts >= q->max_attempts) {
        dead_letter(q, it, reason);
        remove_item(q, it);
    } else {
        /* exponential backoff with jitter: retries of many alerts do not march in step */
        double delay = q->backoff * pow(2, it->attempts - 1);
        if (delay > q->max_backoff) delay = q->max_backoff;
        delay *= 0.5 + 0.5 * ((double)rand() / RAND_MAX);
        it->not_before = clock_wall_ms() + (uint64_t)(delay * 1000);
        q->st.retries++;
        log_msg(LOG_INFO, "executor %s: alert %s attempt %u failed (%s); retry in %.1fs", q->name,
                it->id, it->attempts, reason ? reason : "", delay);
    }
    if (!q->closing) kick(q);
}

static void
on_timer(uv_timer_t *t)
{
    kick(t->data);
}

static void
kick(struct queue *q)
{
    uint64_t now = clock_wall_ms(), next = UINT64_MAX;
    struct item *it, *nextit;
    unsigned max = q->kind->max_inflight(q->impl);

    if (q->kicking) {
        q->kick_again = true; /* a synchronous done() inside deliver() */
        return;
    }
    q->kicking = true;
    do {
        q->kick_again = false;
        for (it = q->head; it && q->ninflight < max; it = nextit) {
            nextit = it->next;
            if (it->inflight) continue;
            if (it->not_before > now) {
                if (it->not_before < next) next = it->not_before;
                continue;
            }
            it->inflight = true;
            q->ninflight++;
            q->st.inflight = q->ninflight;
            {
                struct alert a = {it->seq, it->id, it->severity, it->msg, it->attempts};
                q->kind->deliver(q->impl, &a, on_done, it);
            }
            if (q->kick_again) break; /* the list may have changed under us */
        }
    } while (q->kick_again);
    q->kicking = false;
    for (it = q->head; it; it = it->next)
        if (!it->inflight && it->not_before > now && it->not_before < next) next = it->not_before;
    if (next != UINT64_MAX)
        uv_timer_start(&q->timer, on_timer, next - now, 0);
    else
        uv_timer_stop(&q->timer);
}

/* Make appended records durable before the loop reads more input. */
static void
on_check(uv_check_t *c)
{
    struct queue *q = c->data;

    queue_sync(q);
    if (q->spool_done > 1000 && q->spool_done > 4 * (q->spool_records - q->spool_done))
        spool_compact(q);
}

void
queue_sync(struct queue *q)
{
    if (!q->dirty || q->spool_fd < 0) return;
    if (fdatasync(q->spool_fd) < 0)
        log_msg(LOG_ERR, "executor %s: syncing spool: %s", q->name, strerror(errno));
    q->dirty = false;
}

/* ---- submission ---- */

static char *
eval(struct tpl *t, const struct msg *m, struct buf *b)
{
    struct tpl_env env;
    struct msg *mm = (struct msg *)m;

    buf_reset(b);
    tpl_env_single(&env, &mm);
    tpl_eval(t, &env, b);
    if (b->len > 256) buf_truncate(b, 256);
    return xstrndup(buf_str(b), b->len);
}

static void
enqueue(struct queue *q, struct msg *m, uint64_t seq)
{
    struct item *it = xcalloc(1, sizeof(*it));

    it->q = q;
    it->seq = seq;
    it->msg = msg_ref(m);
    it->id = eval(q->alert_id, m, &q->scratch);
    it->severity = eval(q->severity, m, &q->scratch);
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    q->nitems++;
    q->st.queued = q->nitems;
}

static bool
rate_allows(struct queue *q)
{
    uint64_t now = clock_wall_ms();

    if (!q->rate_n) return true;
    q->tokens += (double)(now - q->refilled) / 1000.0 * q->rate_n / q->rate_s;
    if (q->tokens > q->rate_n) q->tokens = q->rate_n;
    q->refilled = now;
    if (q->tokens < 1) return false;
    q->tokens -= 1;
    return true;
}

static int
newest_first(const void *a, const void *b)
{
    const struct dedupe_entry *x = a, *y = b;

    return x->when > y->when ? -1 : x->when < y->when;
}

/*
 * Rebuilds the dedupe table, forgetting keys older than the window, and the
 * oldest ones beyond QUEUE_DEDUPE_MAX: a flood of distinct alerts must not
 * grow the table without end (a duplicate of a forgotten key gets through).
 * Called when the table is half full or holds 1.5 times QUEUE_DEDUPE_MAX
 * keys, so it never takes more than 4 * QUEUE_DEDUPE_MAX slots (4 MiB).
 */
static void
dedupe_rebuild(struct queue *q, uint64_t now, uint64_t window)
{
    struct dedupe_entry *old = q->seen;
    size_t oldcap = q->capseen, live = 0, i;

    for (i = 0; i < oldcap; i++)
        if (old[i].hash && now - old[i].when < window) old[live++] = old[i];
    if (live > QUEUE_DEDUPE_MAX) {
        qsort(old, live, sizeof(*old), newest_first);
        q->st.dedupe_forgotten += live - QUEUE_DEDUPE_MAX;
        live = QUEUE_DEDUPE_MAX;
        log_msg(LOG_WARNING,
                "executor %s: more than %d distinct dedupe keys within the window: the oldest "
                "forgotten early (%llu so far)",
                q->name, QUEUE_DEDUPE_MAX, (unsigned long long)q->st.dedupe_forgotten);
    }
    q->capseen = 1024;
    while (q->capseen < live * 4) q->capseen *= 2;
    q->seen = xcalloc(q->capseen, sizeof(*q->seen));
    q->nseen = 0;
    for (i = 0; i < live; i++) {
        size_t j = old[i].hash & (q->capseen - 1);
        while (q->seen[j].hash) j = (j + 1) & (q->capseen - 1);
        q->seen[j] = old[i];
        q->nseen++;
    }
    free(old);
}

/* True when the same key was seen within the window (and records it). */
static bool
duplicate(struct queue *q, const struct msg *m)
{
    uint64_t now = clock_wall_ms(), h, window = (uint64_t)(q->dedupe * 1000);
    struct tpl_env env;
    struct msg *mm = (struct msg *)m;
    size_t i, mask;

    if (!q->dedupe) return false;
    buf_reset(&q->scratch);
    tpl_env_single(&env, &mm);
    tpl_eval(q->dedupe_key, &env, &q->scratch);
    h = hash_string(q->scratch.p ? q->scratch.p : "", q->scratch.len);
    if (!h) h = 1; /* 0 marks an empty slot */
    if (q->nseen * 2 >= q->capseen || q->nseen >= QUEUE_DEDUPE_MAX + QUEUE_DEDUPE_MAX / 2)
        dedupe_rebuild(q, now, window);
    mask = q->capseen - 1;
    for (i = h & mask; q->seen[i].hash; i = (i + 1) & mask)
        if (q->seen[i].hash == h) {
            if (now - q->seen[i].when < window) return true;
            q->seen[i].when = now;
            return false;
        }
    q->seen[i].hash = h;
    q->seen[i].when = now;
    q->nseen++;
    return false;
}

static void
log_drop(struct queue *q, const char *why)
{
    uint64_t now = clock_wall_ms();

    /* at most one line a minute: a flood must not become a flood of log lines */
    if (now - q->last_drop_log < 60000) return;
    q->last_drop_log = now;
    log_msg(LOG_WARNING,
            "executor %s: dropping alerts (%s); so far %llu over the rate, %llu duplicates, "
            "%llu with the queue full",
            q->name, why, (unsigned long long)q->st.rate_limited,
            (unsigned long long)q->st.deduplicated, (unsigned long long)q->st.dropped_full);
}

void
queue_submit(struct queue *q, const struct msg *m)
{
    struct msg *copy;
    uint64_t seq;

    if (q->closing) return;
    q->st.submitted++;
    if (duplicate(q, m)) {
        q->st.deduplicated++;
        return;
    }
    if (!rate_allows(q)) {
        q->st.rate_limited++;
        log_drop(q, "rate");
        return;
    }
    if (q->nitems >= q->max_queued) {
        q->st.dropped_full++;
        log_drop(q, "queue full");
        return;
    }
    copy = msg_clone(m);
    seq = q->next_seq++;
    spool_append(q, REC_ALERT, seq, copy);
    enqueue(q, copy, seq);
    msg_unref(copy);
    kick(q);
}

void
queue_render(struct queue *q, const struct msg *m, struct buf *out)
{
    struct alert a;
    char *id = eval(q->alert_id, m, &q->scratch), *sev = eval(q->severity, m, &q->scratch);

    a.seq = 0;
    a.id = id;
    a.severity = sev;
    a.msg = (struct msg *)m;
    a.attempts = 0;
    q->kind->render(q->impl, &a, out);
    free(id);
    free(sev);
}

/* ---- setup ---- */

static void
handle_closed(uv_handle_t *h)
{
    struct queue *q = h->data;

    if (--q->handles > 0) return;
    if (q->closed) q->closed(q->closed_arg);
    free(q->name);
    free(q->spool_path);
    free(q->dead_path);
    free(q->seen);
    tpl_free(q->dedupe_key);
    tpl_free(q->alert_id);
    tpl_free(q->severity);
    buf_free(&q->scratch);
    free(q);
}

/* The queue's own attributes (executor_common_attr lists them). */
static void
read_settings(struct queue *q, const struct exconf_reader *r, const char *spool_dir)
{
    unsigned long n = 10000, attempts = 10;
    const char *v;

    exconf_uint(r, "queue", 1, 0, &n);
    exconf_uint(r, "attempts", 1, UINT32_MAX, &attempts);
    q->max_queued = n;
    q->max_attempts = (uint32_t)attempts;
    exconf_duration(r, "backoff", true, 0, &q->backoff);
    exconf_duration(r, "max-backoff", true, 0, &q->max_backoff);
    exconf_duration(r, "dedupe", true, 0, &q->dedupe);
    if ((v = exconf_attr(r->cfg, "rate"))) {
        char *end;
        long a = strtol(v, &end, 10), b = 1;
        if (*end == '/') b = strtol(end + 1, &end, 10);
        if (a <= 0 || b <= 0 || *end) exconf_error(r, "bad rate=\"%s\" (N or N/SECONDS)", v);
        q->rate_n = (uint32_t)(a > 0 ? a : 0);
        q->rate_s = (uint32_t)(b > 0 ? b : 1);
        q->tokens = q->rate_n;
        q->refilled = clock_wall_ms();
    }
    q->dedupe_key = exconf_template(r, "dedupe-key", "${.classifier.rule_id}|${HOST}|${MESSAGE}");
    /* rule id/host/context id, the empty ones left out with their '/' */
    q->alert_id =
        exconf_template(r, "alert-id",
                        "$(or ${corral.alert_id} ${.classifier.rule_id}"
                        "$(if (\"${.classifier.rule_id}\" ne \"\" and \"${HOST}\" ne \"\") / \"\")"
                        "${HOST}"
                        "$(if (\"${.classifier.context_id}\" ne \"\" and "
                        "\"${.classifier.rule_id}${HOST}\" ne \"\") / \"\")"
                        "${.classifier.context_id})");
    q->severity =
        exconf_template(r, "severity", "${corral.severity:-" EXECUTOR_SEVERITY_DEFAULT "}");
    if ((v = exconf_attr(r->cfg, "dead-letter")))
        q->dead_path = xstrdup(v);
    else if (spool_dir) {
        struct buf p = BUF_INIT;
        buf_printf(&p, "%s/%s.dead.jsonl", spool_dir, r->cfg->name);
        q->dead_path = xstrdup(buf_str(&p));
        buf_free(&p);
    }
}

struct queue *
queue_open(uv_loop_t *loop, const struct exconf *cfg, const char *conf_file, const char *spool_dir,
           struct buf *err)
{
    const struct exconf_reader r = {cfg, conf_file, err};
    struct queue *q = xcalloc(1, sizeof(*q));
    size_t before = err->len;

    q->loop = loop;
    q->name = xstrdup(cfg->name);
    q->kind = executor_kind_find(cfg->kind);
    if (!q->kind) {
        buf_printf(err, "%s:%d: unknown executor kind <%s>\n", conf_file, cfg->line, cfg->kind);
        free(q->name);
        free(q);
        return NULL;
    }
    q->backoff = 1;
    q->max_backoff = 600;
    q->spool_fd = -1;
    read_settings(q, &r, spool_dir);
    if (err->len == before) q->impl = q->kind->open(loop, cfg, conf_file, err);
    if (err->len != before || !q->impl || spool_open(q, spool_dir, err) < 0) {
        if (q->impl) q->kind->close(q->impl, NULL, NULL);
        if (q->spool_fd >= 0) close(q->spool_fd);
        q->handles = 0;
        free(q->name);
        free(q->spool_path);
        free(q->dead_path);
        tpl_free(q->dedupe_key);
        tpl_free(q->alert_id);
        tpl_free(q->severity);
        while (q->head) {
            struct item *it = q->head;
            q->head = it->next;
            item_free(it);
        }
        free(q);
        return NULL;
    }
    uv_timer_init(loop, &q->timer);
    uv_check_init(loop, &q->check);
    q->timer.data = q->check.data = q;
    uv_check_start(&q->check, on_check);
    q->handles = 2;
    kick(q);
    return q;
}

/* The executor has finished or abandoned every delivery: nothing refers to the items any more. */
static void
impl_closed(void *arg)
{
    struct queue *q = arg;
    struct item *it;

    queue_sync(q);
    if (q->spool_fd >= 0) close(q->spool_fd);
    q->spool_fd = -1;
    while ((it = q->head)) {
        q->head = it->next;
        item_free(it);
    }
    uv_close((uv_handle_t *)&q->timer, handle_closed);
    uv_close((uv_handle_t *)&q->check, handle_closed);
}

/* Alerts still queued stay in the spool (no done record) and are delivered after a restart. */
void
queue_close(struct queue *q, void (*done)(void *), void *arg)
{
    q->closing = true;
    q->closed = done;
    q->closed_arg = arg;
    uv_timer_stop(&q->timer);
    uv_check_stop(&q->check);
    q->kind->close(q->impl, impl_closed, q);
}

const char *
queue_name(const struct queue *q)
{
    return q->name;
}

const struct queue_stats *
queue_get_stats(const struct queue *q)
{
    return &q->st;
}
