/*
 * queue: spool, scheduling, retries and dead letters for one executor,
 * and delivery control (list, retry dead letters, drop; the dead-letter
 * file itself is deadletter.c's).  See queue.h for the guarantees.  Alerts
 * wait in a FIFO list; each pass starts the oldest ready ones up to the
 * executor's max_inflight, and a timer wakes the queue when the next retry
 * is due.
 */
#include "actions/queue.h"
#include "actions/deadletter.h"
#include "actions/jsonval.h"
#include "engine/clock.h"
#include "engine/durable.h"
#include "engine/hash.h"
#include "engine/log.h"
#include "engine/macros.h"
#include "engine/template.h"
#include "engine/wire.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_ALERT QUEUE_REC_ALERT
#define REC_DONE  QUEUE_REC_DONE
#define REC_RETRY QUEUE_REC_RETRIED
#define REC_HEAD  25   /* magic, type, seq, length, payload CRC, header CRC */
#define RETRY_MS  1000 /* while the spool cannot be written: try again this often */
/* Done records owed to the spool while it could not be written: past this, rewrite it instead. */
#define DONE_OWED_MAX 65536
#define LOG_EVERY     60000 /* repeated errors: one line a minute */

/* One line, then at most one a minute saying how many more there were. */
struct ratelog {
    uint64_t last; /* ms; 0: never */
    uint64_t more; /* not logged since */
};

struct item {
    struct item *next;
    struct queue *q;
    uint64_t seq;
    uint32_t attempts;
    uint64_t not_before; /* monotonic ms (clock_mono_ms) */
    bool inflight;
    bool spooled; /* false: in memory only (the spool could not be written) */
    size_t bytes; /* msg_memory of msg, counted in queue.bytes */
    struct msg *msg;
    char *id, *severity;
    /* the dead letter this is a retry of, while the dead-letter file may still hold it */
    char *dead_id;
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
    struct template *dedupe_key, *alert_id, *severity;

    char *spool_path, *dead_path;
    int spool_fd;
    bool dirty;
    bool spool_failed; /* a write failed: nothing is appended until the spool catches up */
    /*
     * Catching up is appending (spool_catch_up) unless the file cannot be
     * trusted to end with what spool_size says: a sync failed, or it was not
     * written at start; then only a rewrite (spool_compact) will do.
     */
    bool rewrite_needed;
    uint64_t *done_owed; /* done records not written while failed (catching up writes them) */
    size_t ndone_owed, capdone_owed;
    off_t spool_size; /* bytes of whole records: a failed append is cut back to this */
    uint64_t next_seq;
    size_t spool_records;     /* records in the file, good or dead */
    uint64_t compact_after;   /* ms: a rewrite failed, the next not before */
    struct ratelog spool_log; /* write errors */
    uv_timer_t spool_timer;   /* tries to catch up while spool_failed */

    struct item *head, *tail;
    size_t nitems, ninflight;
    size_t bytes; /* memory of the alerts held (QUEUE_MAX_BYTES) */
    uv_timer_t timer;
    uv_check_t check;
    bool kicking, kick_again, closing;
    void (*closed)(void *);
    void *closed_arg;
    int handles;

    struct queue_stats st;
    struct buf scratch;
    uint64_t last_drop_log;

    /* a reload: heir takes what this queue still holds when it closes (see queue_handover) */
    struct queue *heir, *donor;

    queue_observer_fn observer; /* what became of each alert (the alert store); may be NULL */
    void *observer_arg;
};

static void
observe(struct queue *q, const struct msg *m, enum queue_event ev)
{
    if (q->observer) q->observer(q->observer_arg, q->name, m, ev);
}

void
queue_set_observer(struct queue *q, queue_observer_fn fn, void *arg)
{
    q->observer = fn;
    q->observer_arg = arg;
}

/* ---- the spool file ---- */

/* True when a line may be logged now; *more: how many were held back since the last. */
static bool
ratelog_allow(struct ratelog *r, uint64_t *more)
{
    uint64_t now = clock_mono_ms();

    if (r->last && now - r->last < LOG_EVERY) {
        r->more++;
        return false;
    }
    *more = r->more;
    r->more = 0;
    r->last = now;
    return true;
}

/* A spool write, sync or rewrite failed with errno err: counted, logged (rate-limited). */
static void
spool_error(struct queue *q, const char *what, int err)
{
    uint64_t more;

    q->st.spool_errors++;
    if (ratelog_allow(&q->spool_log, &more))
        log_msg(LOG_ERR, "executor %s: %s spool %s: %s (%llu spool errors in all, %llu not logged)",
                q->name, what, q->spool_path, strerror(err), (unsigned long long)q->st.spool_errors,
                (unsigned long long)more);
}

void
queue_spool_frame(struct buf *out, char type, uint64_t seq, const void *payload, size_t len)
{
    unsigned char h[REC_HEAD];

    memcpy(h, QUEUE_SPOOL_MAGIC, 4);
    h[4] = (unsigned char)type;
    wire_store32(h + 5, (uint32_t)seq);
    wire_store32(h + 9, (uint32_t)(seq >> 32));
    wire_store32(h + 13, (uint32_t)len);
    wire_store32(h + 17, durable_crc32(0, payload, len));
    wire_store32(h + 21, durable_crc32(0, h, 21));
    buf_append(out, h, REC_HEAD);
    buf_append(out, payload, len);
}

/*
 * The record at pos: 1 when whole and good (*len: its payload's length), 0
 * when its header checks out but its payload does not (skip it by *len), -1
 * when there is no trustworthy header there.
 */
static int
record_at(const unsigned char *d, size_t size, size_t pos, size_t *len)
{
    const unsigned char *p = d + pos;

    if (size - pos < REC_HEAD || memcmp(p, QUEUE_SPOOL_MAGIC, 4) != 0 ||
        durable_crc32(0, p, 21) != wire_load32(p + 21))
        return -1;
    *len = wire_load32(p + 13);
    if (*len > size - pos - REC_HEAD) return -1; /* torn, or a header forged by chance */
    return durable_crc32(0, p + REC_HEAD, *len) == wire_load32(p + 17) ? 1 : 0;
}

/* The next offset after pos where a record's magic begins (size: none). */
static size_t
next_magic(const unsigned char *d, size_t size, size_t pos)
{
    const unsigned char *m;

    if (pos + 1 >= size) return size;
    m = memmem(d + pos + 1, size - pos - 1, QUEUE_SPOOL_MAGIC, 4);
    return m ? (size_t)(m - d) : size;
}

/* Version 1: u32 length of the rest, u32 CRC of the rest, type, u64 seq, payload; ends at the first
 * bad record. */
static size_t
scan_v1(const unsigned char *d, size_t size, size_t pos, queue_scan_fn *fn, void *arg,
        struct queue_scan *res)
{
    while (size - pos >= 8) {
        const unsigned char *p = d + pos;
        uint32_t len = wire_load32(p), crc = wire_load32(p + 4);
        if (len < 9 || len > size - pos - 8 || durable_crc32(0, p + 8, len) != crc) break;
        fn(arg, (char)p[8], (uint64_t)wire_load32(p + 9) | (uint64_t)wire_load32(p + 13) << 32,
           p + 17, len - 9);
        res->records++;
        pos += 8 + len;
    }
    return pos;
}

void
queue_spool_scan(const void *data, size_t size, queue_scan_fn *fn, void *arg,
                 struct queue_scan *res)
{
    const unsigned char *d = data;
    size_t hl = strlen(QUEUE_SPOOL_HEADER), pos = 0, bad = SIZE_MAX, len;

    memset(res, 0, sizeof(*res));
    if (size >= hl && memcmp(d, QUEUE_SPOOL_HEADER_V1, hl) == 0) {
        res->version = 1;
        pos = scan_v1(d, size, hl, fn, arg, res);
        if (pos < size) res->corrupt = 1, res->corrupt_bytes = res->tail_bytes = size - pos;
        return;
    }
    if (size >= hl && memcmp(d, QUEUE_SPOOL_HEADER, hl) == 0) {
        res->version = 2;
        pos = hl;
    } else if (size > 0) {
        bad = 0; /* a damaged header: look for records all the same */
    }
    while (pos < size) {
        int r = record_at(d, size, pos, &len);
        if (r < 0) { /* no header here: a bad stretch runs to the next record that checks out */
            if (bad == SIZE_MAX) bad = pos;
            pos = next_magic(d, size, pos);
            continue;
        }
        if (bad != SIZE_MAX) {
            res->corrupt++;
            res->corrupt_bytes += pos - bad;
            bad = SIZE_MAX;
        }
        if (r == 0) {
            res->corrupt++;
            res->corrupt_bytes += REC_HEAD + len;
        } else {
            fn(arg, (char)d[pos + 4],
               (uint64_t)wire_load32(d + pos + 5) | (uint64_t)wire_load32(d + pos + 9) << 32,
               d + pos + REC_HEAD, len);
            res->records++;
        }
        pos += REC_HEAD + len;
    }
    if (bad != SIZE_MAX) {
        res->corrupt++;
        res->corrupt_bytes += size - bad;
        res->tail_bytes = size - bad;
    }
}

static void spool_fail(struct queue *q, bool can_append);

/* A retried dead letter's payload: u32 length of the dead letter's id, the id, the alert. */
static void
retry_payload(struct buf *out, const char *dead_id, const struct msg *m)
{
    unsigned char n[4];

    wire_store32(n, (uint32_t)strlen(dead_id));
    buf_append(out, n, 4);
    buf_puts(out, dead_id);
    msg_encode(m, out);
}

bool
queue_spool_retried(const void *payload, size_t len, const char **dead_id, size_t *idlen,
                    const void **alert, size_t *alen)
{
    const unsigned char *p = payload;
    uint32_t n;

    if (len < 4) return false;
    n = wire_load32(p);
    if (n == 0 || n > len - 4 || memchr(p + 4, '\0', n)) return false;
    *dead_id = (const char *)p + 4;
    *idlen = n;
    *alert = p + 4 + n;
    *alen = len - 4 - n;
    return true;
}

/* Frames an alert's record: 'A', or 'R' with the dead letter it retries. */
static void
frame_alert(struct buf *rec, uint64_t seq, const struct msg *m, const char *dead_id,
            struct buf *payload)
{
    buf_reset(payload);
    if (dead_id) {
        retry_payload(payload, dead_id, m);
        queue_spool_frame(rec, REC_RETRY, seq, payload->p, payload->len);
    } else {
        msg_encode(m, payload);
        queue_spool_frame(rec, REC_ALERT, seq, payload->p, payload->len);
    }
}

/* Appends a record; false when the spool is not being written (none, or failed). */
static bool
spool_append(struct queue *q, char type, uint64_t seq, const struct msg *m, const char *dead_id)
{
    struct buf rec = BUF_INIT, payload = BUF_INIT;
    bool ok = true;

    if (q->spool_fd < 0 || q->spool_failed) return false;
    if (m)
        frame_alert(&rec, seq, m, dead_id, &payload);
    else
        queue_spool_frame(&rec, type, seq, NULL, 0);
    if (durable_write_all(q->spool_fd, rec.p, rec.len) < 0) {
        spool_error(q, "writing", errno);
        /* no torn bytes may stay in front of later records */
        if (ftruncate(q->spool_fd, q->spool_size) < 0) {
            spool_error(q, "cutting back", errno);
            spool_fail(q, false);
        } else {
            spool_fail(q, true);
        }
        ok = false;
    } else {
        q->spool_size += (off_t)rec.len;
        q->dirty = true;
        q->spool_records++;
    }
    buf_free(&rec);
    buf_free(&payload);
    return ok;
}

/*
 * Rewrites the spool with just the pending alerts, all of them, including
 * those that were in memory only.  Written in chunks, so that on a full
 * disk an attempt costs little.  On failure the old file stays as it was.
 */
static int
spool_compact(struct queue *q)
{
    struct buf tmp = BUF_INIT, data = BUF_INIT, payload = BUF_INIT;
    struct item *it;
    off_t size = 0;
    int fd, rc = -1, err = 0;
    bool written = true;

    buf_printf(&tmp, "%s.tmp", q->spool_path);
    fd = durable_open(buf_str(&tmp), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        err = errno;
        goto out;
    }
    buf_append(&data, QUEUE_SPOOL_HEADER, strlen(QUEUE_SPOOL_HEADER));
    for (it = q->head;; it = it->next) {
        if (it) frame_alert(&data, it->seq, it->msg, it->dead_id, &payload);
        if (data.len >= 65536 || (!it && data.len)) {
            if (durable_write_all(fd, data.p, data.len) < 0) {
                written = false;
                break;
            }
            size += (off_t)data.len;
            buf_reset(&data);
        }
        if (!it) break;
    }
    if (!written || durable_sync(fd, 1) < 0 || durable_rename(buf_str(&tmp), q->spool_path) < 0) {
        err = errno;
        close(fd);
        unlink(buf_str(&tmp));
        goto out;
    }
    durable_sync_dir(q->spool_path);
    if (q->spool_fd >= 0) close(q->spool_fd);
    q->spool_fd = fd;
    lseek(fd, 0, SEEK_END);
    q->spool_size = size;
    q->spool_records = q->nitems;
    q->dirty = false;
    q->rewrite_needed = false;
    q->ndone_owed = 0; /* the rewrite left out what they were for */
    rc = 0;
out:
    if (rc < 0) spool_error(q, "rewriting", err);
    buf_free(&tmp);
    buf_free(&data);
    buf_free(&payload);
    return rc;
}

/*
 * Appends to the spool as it is what it lacks: the done records owed, then
 * the alerts held in memory only.  The failed write was cut back, so the
 * file ends with a whole record at spool_size; this needs room for the
 * missing records only, where a rewrite needs room for a second copy of the
 * whole spool.  On failure the file is cut back to spool_size again.
 */
static int
spool_catch_up(struct queue *q)
{
    struct buf data = BUF_INIT, payload = BUF_INIT;
    struct item *it = q->head;
    off_t size = q->spool_size;
    size_t records = 0, i = 0;
    struct stat st;
    int fd, err = 0, rc = -1;

    fd = durable_open(q->spool_path, O_WRONLY, 0);
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < size) {
        /* gone or shorter than what was written: not the file to append to */
        err = fd < 0 ? errno : EIO;
        q->rewrite_needed = true;
        goto out;
    }
    if (ftruncate(fd, size) < 0 || lseek(fd, size, SEEK_SET) < 0) {
        err = errno;
        goto out;
    }
    for (;;) {
        if (i < q->ndone_owed) {
            queue_spool_frame(&data, REC_DONE, q->done_owed[i++], NULL, 0);
            records++;
        } else if (it) {
            if (!it->spooled) {
                frame_alert(&data, it->seq, it->msg, it->dead_id, &payload);
                records++;
            }
            it = it->next;
        }
        if (data.len >= 65536 || (!it && i >= q->ndone_owed && data.len)) {
            if (durable_write_all(fd, data.p, data.len) < 0) {
                err = errno;
                goto out;
            }
            size += (off_t)data.len;
            buf_reset(&data);
        }
        if (!it && i >= q->ndone_owed) break;
    }
    if (durable_sync(fd, 1) < 0) {
        err = errno;
        q->rewrite_needed = true; /* what the file holds now is not known */
        goto out;
    }
    if (q->spool_fd >= 0) close(q->spool_fd);
    q->spool_fd = fd;
    q->spool_size = size;
    q->spool_records += records;
    q->ndone_owed = 0;
    q->dirty = false;
    rc = 0;
out:
    if (rc < 0) {
        spool_error(q, "appending to", err);
        if (fd >= 0) {
            if (ftruncate(fd, q->spool_size) < 0) q->rewrite_needed = true;
            close(fd);
        }
    }
    buf_free(&data);
    buf_free(&payload);
    return rc;
}

/* The done record of a spooled alert could not be written: owed until the spool catches up. */
static void
owe_done(struct queue *q, uint64_t seq)
{
    if (q->rewrite_needed) return; /* the rewrite leaves the alert out */
    if (q->ndone_owed >= DONE_OWED_MAX) {
        q->rewrite_needed = true;
        q->ndone_owed = 0;
        return;
    }
    q->done_owed = xgrow(q->done_owed, &q->capdone_owed, q->ndone_owed + 1, sizeof(*q->done_owed));
    q->done_owed[q->ndone_owed++] = seq;
}

/* An alert is done with: its done record, now or owed. */
static void
spool_done(struct queue *q, const struct item *it)
{
    if (!spool_append(q, REC_DONE, it->seq, NULL, NULL) && it->spooled && q->spool_path)
        owe_done(q, it->seq);
}

static void on_spool_timer(uv_timer_t *t);

/*
 * A write failed: go on in memory only, and catch up once the spool can be
 * written again.  can_append: the file ends with a whole record at
 * spool_size, so appending what is missing will do; else only a rewrite.
 */
static void
spool_fail(struct queue *q, bool can_append)
{
    if (!can_append) q->rewrite_needed = true;
    if (!q->spool_failed)
        log_msg(LOG_WARNING,
                "executor %s: spool %s cannot be written: new alerts are kept in memory only "
                "(at most queue=%zu) until it can",
                q->name, q->spool_path, q->max_queued);
    q->spool_failed = true;
    q->dirty = false;
    if (q->spool_fd >= 0) close(q->spool_fd);
    q->spool_fd = -1;
    if (q->handles && !q->closing && !uv_is_active((uv_handle_t *)&q->spool_timer))
        uv_timer_start(&q->spool_timer, on_spool_timer, RETRY_MS, RETRY_MS);
}

/* While failed: tries to append what the spool lacks, or to rewrite it when it must. */
static void
spool_retry(struct queue *q)
{
    struct item *it;
    uint64_t n = q->st.unspooled;

    if (!q->spool_failed) return;
    if (!q->rewrite_needed && spool_catch_up(q) < 0 && !q->rewrite_needed) return;
    if (q->rewrite_needed && spool_compact(q) < 0) return;
    q->spool_failed = false;
    for (it = q->head; it; it = it->next) it->spooled = true;
    q->st.unspooled = 0;
    if (q->handles) uv_timer_stop(&q->spool_timer);
    log_msg(LOG_WARNING,
            "executor %s: spool %s written again, with %llu alerts that were in memory only "
            "(%llu spool errors in all)",
            q->name, q->spool_path, (unsigned long long)n, (unsigned long long)q->st.spool_errors);
}

static void
on_spool_timer(uv_timer_t *t)
{
    spool_retry(t->data);
}

static struct item *enqueue(struct queue *q, struct msg *m, uint64_t seq);
static void settle_retried(struct queue *q);

struct replay {
    struct rec {
        uint64_t seq;
        const char *p;
        size_t len, order;
        const char *dead_id; /* a retried dead letter's id (not NUL-terminated), or NULL */
        size_t idlen;
    } * alerts;
    size_t nalerts, capalerts;
    uint64_t *done;
    size_t ndone, capdone;
    uint64_t max_seq;
    bool any;
};

static void
replay_record(void *arg, char type, uint64_t seq, const void *payload, size_t len)
{
    struct replay *r = arg;

    if (!r->any || seq > r->max_seq) r->max_seq = seq;
    r->any = true;
    if (type == REC_ALERT || type == REC_RETRY) {
        struct rec rec = {seq, payload, len, r->nalerts, NULL, 0};
        const void *alert;
        if (type == REC_RETRY &&
            !queue_spool_retried(payload, len, &rec.dead_id, &rec.idlen, &alert, &rec.len))
            return; /* checks out, yet is not one: counted when it does not decode below */
        if (type == REC_RETRY) rec.p = alert;
        r->alerts = xgrow(r->alerts, &r->capalerts, r->nalerts + 1, sizeof(*r->alerts));
        r->alerts[r->nalerts] = rec;
        r->nalerts++;
    } else if (type == REC_DONE) {
        r->done = xgrow(r->done, &r->capdone, r->ndone + 1, sizeof(*r->done));
        r->done[r->ndone++] = seq;
    }
}

static int
by_seq(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;

    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * Reads the spool left by the previous run; pending alerts are queued
 * again, in the order they were submitted (their seq), each once.
 */
static int
spool_replay(struct queue *q, struct buf *err)
{
    struct replay r = {0};
    struct queue_scan scan;
    char *data;
    size_t size, i;

    data = durable_read_file(q->spool_path, DURABLE_MAX_STATE, &size);
    if (!data) {
        if (errno == ENOENT) return 0;
        buf_printf(err, "executor %s: cannot read spool %s: %s\n", q->name, q->spool_path,
                   durable_strerror(errno));
        return -1;
    }
    queue_spool_scan(data, size, replay_record, &r, &scan);
    if (size && !scan.version && !scan.records) {
        log_msg(LOG_ERR, "executor %s: %s is not a spool; starting a new one", q->name,
                q->spool_path);
    } else if (scan.corrupt) {
        struct buf keep = BUF_INIT;
        size_t middle = scan.corrupt - (scan.tail_bytes > 0);
        q->st.spool_corrupt += scan.corrupt;
        if (scan.tail_bytes)
            log_msg(LOG_WARNING, "executor %s: spool %s: %zu bytes of a torn record cut off",
                    q->name, q->spool_path, scan.tail_bytes);
        if (middle) {
            /* keep what could not be read, for a look by hand: the rewrite drops it */
            buf_printf(&keep, "%s.corrupt", q->spool_path);
            unlink(buf_str(&keep));
            if (link(q->spool_path, buf_str(&keep)) < 0) buf_reset(&keep);
            log_msg(LOG_ERR,
                    "executor %s: spool %s: %zu corrupt records (%zu bytes) skipped; the %zu "
                    "good records after them are kept%s%s",
                    q->name, q->spool_path, middle, scan.corrupt_bytes - scan.tail_bytes,
                    scan.records, keep.len ? "; the file as it was is " : "", buf_str(&keep));
        }
        buf_free(&keep);
    }
    if (r.any) q->next_seq = r.max_seq + 1;
    /* qsort and bsearch take no NULL array, even with no elements */
    if (r.nalerts) qsort(r.alerts, r.nalerts, sizeof(*r.alerts), by_seq);
    if (r.ndone) qsort(r.done, r.ndone, sizeof(*r.done), cmp_u64);
    for (i = 0; i < r.nalerts; i++) {
        struct msg *m;
        if (i && r.alerts[i].seq == r.alerts[i - 1].seq) continue; /* once */
        if (r.ndone && bsearch(&r.alerts[i].seq, r.done, r.ndone, sizeof(*r.done), cmp_u64))
            continue;
        m = msg_new();
        if (msg_decode(m, r.alerts[i].p, r.alerts[i].len)) {
            struct item *it = enqueue(q, m, r.alerts[i].seq);
            it->spooled = true;
            if (r.alerts[i].dead_id) it->dead_id = xstrndup(r.alerts[i].dead_id, r.alerts[i].idlen);
            q->st.recovered++;
        } else {
            q->st.spool_corrupt++; /* checks out, yet does not decode: written by a bug */
            log_msg(LOG_ERR, "executor %s: spool %s: alert %llu does not decode; skipped", q->name,
                    q->spool_path, (unsigned long long)r.alerts[i].seq);
        }
        msg_unref(m);
    }
    free(r.alerts);
    free(r.done);
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
    settle_retried(q);
    /*
     * Start from a compact file holding exactly the pending alerts.  When
     * that cannot be written (a full disk), start all the same: the old file
     * stays, and new alerts live in memory until the spool can be written.
     */
    if (spool_compact(q) < 0) spool_fail(q, false);
    if (q->st.recovered)
        log_msg(LOG_INFO, "executor %s: %llu alerts from the spool will be delivered", q->name,
                (unsigned long long)q->st.recovered);
    return 0;
}

/* ---- dead letters ---- */

static void
dead_letter(struct queue *q, struct item *it, const char *reason)
{
    struct buf line = BUF_INIT;

    q->st.dead++;
    deadletter_format(&line, clock_wall_ms(), it->seq, q->name, reason, it->attempts, it->id,
                      it->msg);
    /* an alert nobody was told of: an error, whereas a failed attempt to be retried warns */
    log_msg(LOG_ERR, "executor %s: alert %s given up after %u attempts: %s", q->name, it->id,
            it->attempts, reason ? reason : "");
    if (q->dead_path && deadletter_append(q->dead_path, line.p, line.len) < 0)
        log_msg(LOG_ERR, "executor %s: writing dead letters to %s: %s", q->name, q->dead_path,
                strerror(errno));
    buf_free(&line);
}

/* ---- scheduling ---- */

static void kick(struct queue *q);

static void
item_free(struct item *it)
{
    msg_unref(it->msg);
    free(it->dead_id);
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
    q->bytes -= it->bytes;
    q->st.queued = q->nitems;
    if (!it->spooled) q->st.unspooled--;
    spool_done(q, it);
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
        observe(q, it->msg, QUEUE_EV_DELIVERED);
        remove_item(q, it);
    } else if (r == DELIVER_FAIL || it->attempts >= q->max_attempts) {
        dead_letter(q, it, reason);
        observe(q, it->msg, QUEUE_EV_DEAD);
        remove_item(q, it);
    } else {
        /* exponential backoff with jitter: retries of many alerts do not march in step */
        double delay = q->backoff * pow(2, it->attempts - 1);
        if (delay > q->max_backoff) delay = q->max_backoff;
        delay *= 0.5 + 0.5 * ((double)rand() / RAND_MAX);
        it->not_before = clock_mono_ms() + (uint64_t)(delay * 1000);
        q->st.retries++;
        observe(q, it->msg, QUEUE_EV_RETRYING);
        log_msg(LOG_WARNING, "executor %s: alert %s attempt %u failed (%s); retry in %.1fs",
                q->name, it->id, it->attempts, reason ? reason : "", delay);
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
    uint64_t now = clock_mono_ms(), next = UINT64_MAX;
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

/*
 * Makes appended records durable before the loop reads more input, and
 * rewrites the spool when mostly dead records: more than 1000, and 4 times
 * the alerts pending (so it stays within 5 times what it must hold); or,
 * for large alerts, more than QUEUE_MAX_BYTES and 4 times the memory of
 * the alerts pending (a few dead alerts of 1 MB each weigh more than
 * thousands of small ones).
 */
static void
on_check(uv_check_t *c)
{
    struct queue *q = c->data;
    size_t dead = q->spool_records > q->nitems ? q->spool_records - q->nitems : 0;
    bool many = dead > 1000 && dead > 4 * q->nitems;
    bool heavy = dead && (uint64_t)q->spool_size > QUEUE_MAX_BYTES &&
                 (uint64_t)q->spool_size > 4 * (uint64_t)q->bytes;
    uint64_t now;

    queue_sync(q);
    if (q->spool_fd < 0 || q->spool_failed || !(many || heavy)) return;
    now = clock_mono_ms();
    if (now < q->compact_after) return;
    /* a failed rewrite leaves the old file, still good: try again later, not on every pass */
    if (spool_compact(q) < 0) q->compact_after = now + LOG_EVERY;
}

void
queue_sync(struct queue *q)
{
    if (!q->dirty || q->spool_fd < 0) return;
    q->dirty = false;
    if (durable_sync(q->spool_fd, 1) < 0) {
        /* what was written may not be on disk (and the kernel may forget it): write it all again */
        spool_error(q, "syncing", errno);
        spool_fail(q, false);
    }
}

/* ---- submission ---- */

static char *
eval(struct template *t, const struct msg *m, struct buf *b)
{
    struct template_env env;
    struct msg *mm = (struct msg *)m;

    buf_reset(b);
    template_env_single(&env, &mm);
    template_eval(t, &env, b);
    if (b->len > 256) buf_truncate(b, 256);
    return xstrndup(buf_str(b), b->len);
}

static struct item *
enqueue(struct queue *q, struct msg *m, uint64_t seq)
{
    struct item *it = xcalloc(1, sizeof(*it));

    it->q = q;
    it->seq = seq;
    it->msg = msg_ref(m);
    it->bytes = msg_memory(m);
    q->bytes += it->bytes;
    it->id = eval(q->alert_id, m, &q->scratch);
    it->severity = eval(q->severity, m, &q->scratch);
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    q->nitems++;
    q->st.queued = q->nitems;
    return it;
}

static bool
rate_allows(struct queue *q)
{
    uint64_t now = clock_mono_ms();

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
    uint64_t now = clock_mono_ms(), h, window = (uint64_t)(q->dedupe * 1000);
    struct template_env env;
    struct msg *mm = (struct msg *)m;
    size_t i, mask;

    if (!q->dedupe) return false;
    buf_reset(&q->scratch);
    template_env_single(&env, &mm);
    template_eval(q->dedupe_key, &env, &q->scratch);
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
    uint64_t now = clock_mono_ms();

    /* at most one line a minute: a flood must not become a flood of log lines */
    if (now - q->last_drop_log < 60000) return;
    q->last_drop_log = now;
    log_msg(LOG_WARNING,
            "executor %s: dropping alerts (%s); so far %llu over the rate, %llu duplicates, "
            "%llu with the queue full",
            q->name, why, (unsigned long long)q->st.rate_limited,
            (unsigned long long)q->st.deduplicated, (unsigned long long)q->st.dropped_full);
}

bool
queue_full(const struct queue *q)
{
    return !q->closing && (q->nitems >= q->max_queued || q->bytes >= QUEUE_MAX_BYTES / 2);
}

bool
queue_low(const struct queue *q)
{
    return q->closing || (q->nitems <= q->max_queued / 2 && q->bytes <= QUEUE_MAX_BYTES / 4);
}

static void
submit(struct queue *q, const struct msg *m, bool keep)
{
    struct msg *copy;
    uint64_t seq;
    bool spooled;

    if (q->closing) return;
    q->st.submitted++;
    if (duplicate(q, m)) {
        q->st.deduplicated++;
        observe(q, m, QUEUE_EV_DROPPED);
        return;
    }
    if (!rate_allows(q)) {
        q->st.rate_limited++;
        log_drop(q, "rate");
        observe(q, m, QUEUE_EV_DROPPED);
        return;
    }
    /*
     * keep: the caller pauses its inputs right after (queue_full), so past
     * queue= by one read's worth at most; an engine process that does not
     * pause (a compromised one) meets the hard bounds all the same.
     */
    if (q->nitems >= q->max_queued + (keep ? QUEUE_KEEP_EXTRA : 0) ||
        q->bytes + msg_memory(m) > QUEUE_MAX_BYTES) {
        q->st.dropped_full++;
        log_drop(q, "queue full");
        observe(q, m, QUEUE_EV_DROPPED);
        return;
    }
    copy = msg_clone(m);
    seq = q->next_seq++;
    spooled = spool_append(q, REC_ALERT, seq, copy, NULL) || !q->spool_path;
    enqueue(q, copy, seq)->spooled = spooled;
    if (!spooled) {
        q->st.memory_only++;
        q->st.unspooled++;
    }
    observe(q, copy, QUEUE_EV_QUEUED);
    msg_unref(copy);
    kick(q);
}

void
queue_submit(struct queue *q, const struct msg *m)
{
    submit(q, m, false);
}

void
queue_submit_keep(struct queue *q, const struct msg *m)
{
    submit(q, m, true);
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
    free(q->done_owed);
    template_free(q->dedupe_key);
    template_free(q->alert_id);
    template_free(q->severity);
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
        q->refilled = clock_mono_ms();
    }
    q->dedupe_key = exconf_template(r, "dedupe-key", EXECUTOR_DEDUPE_KEY_DEFAULT);
    /* rule id/host/context id, the empty ones left out with their '/' */
    q->alert_id = exconf_template(r, "alert-id", QUEUE_ALERT_ID_DEFAULT);
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
        template_free(q->dedupe_key);
        template_free(q->alert_id);
        template_free(q->severity);
        while (q->head) {
            struct item *it = q->head;
            q->head = it->next;
            item_free(it);
        }
        free(q);
        return NULL;
    }
    uv_timer_init(loop, &q->timer);
    uv_timer_init(loop, &q->spool_timer);
    uv_check_init(loop, &q->check);
    q->timer.data = q->spool_timer.data = q->check.data = q;
    uv_check_start(&q->check, on_check);
    q->handles = 3;
    if (q->spool_failed) uv_timer_start(&q->spool_timer, on_spool_timer, RETRY_MS, RETRY_MS);
    kick(q);
    return q;
}

/* Whether to's spool already holds from's alerts: the same file, which to read when it opened. */
static bool
same_spool(const struct queue *from, const struct queue *to)
{
    return from->spool_path && to->spool_path && strcmp(from->spool_path, to->spool_path) == 0;
}

/*
 * Moves from's alerts that are not being delivered to the end of to's
 * queue, as if submitted there (but past rate limits and dedupe: they were
 * accepted once), keeping their attempts but not their retry times.  What exceeds to's queue= is
 * counted as dropped_full.  from's spool gets their done records: they are
 * to's now.
 */
static void
move_items(struct queue *from, struct queue *to)
{
    struct item *it, *next, **p = &from->head;
    size_t moved = 0, dropped = 0;

    from->tail = NULL;
    for (it = from->head; it; it = next) {
        next = it->next;
        if (it->inflight) {
            *p = it;
            p = &it->next;
            from->tail = it;
            continue;
        }
        from->nitems--;
        from->bytes -= it->bytes;
        if (!it->spooled) from->st.unspooled--;
        spool_done(from, it);
        if (to->nitems >= to->max_queued || to->bytes + it->bytes > QUEUE_MAX_BYTES) {
            to->st.dropped_full++;
            dropped++;
            item_free(it);
            continue;
        }
        it->next = NULL;
        it->q = to;
        it->not_before = 0; /* the new configuration may be what it needed: try it now */
        it->seq = to->next_seq++;
        it->spooled = spool_append(to, REC_ALERT, it->seq, it->msg, it->dead_id) || !to->spool_path;
        if (!it->spooled) {
            to->st.memory_only++;
            to->st.unspooled++;
        }
        free(it->id);
        free(it->severity);
        it->id = eval(to->alert_id, it->msg, &to->scratch);
        it->severity = eval(to->severity, it->msg, &to->scratch);
        if (to->tail)
            to->tail->next = it;
        else
            to->head = it;
        to->tail = it;
        to->nitems++;
        to->bytes += it->bytes;
        moved++;
    }
    *p = NULL;
    from->st.queued = from->nitems;
    to->st.queued = to->nitems;
    if (moved)
        log_msg(LOG_INFO, "executor %s: %zu alerts handed to its new configuration", to->name,
                moved);
    if (dropped) {
        log_msg(LOG_WARNING,
                "executor %s: %zu alerts not handed to its new configuration: its queue is full",
                to->name, dropped);
        log_drop(to, "queue full");
    }
    if (moved && !to->closing) kick(to);
}

bool
queue_same_spool(const struct queue *a, const struct queue *b)
{
    return same_spool(a, b);
}

void
queue_respool(struct queue *q)
{
    if (!q->spool_path || q->closing) return;
    /* q's records went on to the file another queue replaced: q's pending alerts, anew */
    if (spool_compact(q) < 0) spool_fail(q, false);
}

void
queue_handover(struct queue *from, struct queue *to)
{
    if (same_spool(from, to)) return; /* to read them from the spool when it opened */
    if (to->donor) to->donor->heir = NULL;
    from->heir = to;
    to->donor = from;
    move_items(from, to);
}

/* The executor has finished or abandoned every delivery: nothing refers to the items any more. */
static void
impl_closed(void *arg)
{
    struct queue *q = arg;
    struct item *it;

    if (q->heir) {
        /* deliveries the close cut short (or that failed for now) go on in the successor */
        move_items(q, q->heir);
        q->heir->donor = NULL;
        q->heir = NULL;
    }
    queue_sync(q);
    if (!q->spool_path && q->nitems)
        log_msg(LOG_ERR, "executor %s: %zu queued alerts lost: it has no spool", q->name,
                q->nitems);
    spool_retry(q); /* a last chance for alerts in memory only */
    if (q->spool_failed && q->st.unspooled)
        log_msg(LOG_ERR, "executor %s: %llu alerts were in memory only (spool not writable): lost",
                q->name, (unsigned long long)q->st.unspooled);
    if (q->spool_fd >= 0) close(q->spool_fd);
    q->spool_fd = -1;
    while ((it = q->head)) {
        q->head = it->next;
        item_free(it);
    }
    uv_close((uv_handle_t *)&q->timer, handle_closed);
    uv_close((uv_handle_t *)&q->spool_timer, handle_closed);
    uv_close((uv_handle_t *)&q->check, handle_closed);
}

/* Alerts still queued stay in the spool (no done record) and are delivered after a restart. */
void
queue_close(struct queue *q, void (*done)(void *), void *arg)
{
    q->closing = true;
    q->closed = done;
    q->closed_arg = arg;
    if (q->donor) {
        /* closing before its predecessor finished: what that still holds stays in its spool */
        q->donor->heir = NULL;
        q->donor = NULL;
    }
    uv_timer_stop(&q->timer);
    uv_timer_stop(&q->spool_timer);
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

/* ---- delivery control: listing, retrying dead letters, dropping (corral queue) ---- */

static void
iso_time(json_t *o, const char *name, uint64_t ms)
{
    struct buf b = BUF_INIT;
    struct msg_time t = {(int64_t)(ms / 1000), 0, 0};

    macro_format_iso(&t, 0, &b);
    json_object_set_new(o, name, json_stringn(b.p, b.len));
    buf_free(&b);
}

/* Bytes from messages as a JSON string (jsonval_text never fails but for want of memory). */
static json_t *
textn(const char *s, size_t len)
{
    json_t *j = jsonval_text(s, len);

    return j ? j : json_stringn("", 0);
}

static json_t *
text(const char *s)
{
    return textn(s, strlen(s));
}

/* MESSAGE and HOST of an alert: what a person needs to tell it. */
static void
alert_text(json_t *o, const struct msg *m)
{
    const char *v;
    size_t len;

    if ((v = msg_get(m, NV_HOST, &len))) json_object_set_new(o, "host", textn(v, len));
    if ((v = msg_get(m, NV_MESSAGE, &len))) json_object_set_new(o, "message", textn(v, len));
}

json_t *
queue_list_json(struct queue *q, size_t max)
{
    json_t *o = json_object(), *queued = json_array(), *dead = json_array();
    struct item *it;
    size_t nq = 0, i;
    uint64_t held;

    json_object_set_new(o, "executor", text(q->name));
    for (it = q->head; it; it = it->next, nq++) {
        json_t *e;
        char id[32];
        if (nq >= max) continue;
        e = json_object();
        snprintf(id, sizeof(id), "q%llu", (unsigned long long)it->seq);
        json_object_set_new(e, "id", text(id));
        held = it->inflight && q->kind->held_until ? q->kind->held_until(q->impl, it) : 0;
        json_object_set_new(e, "state",
                            text(held               ? "grouped"
                                 : it->inflight     ? "delivering"
                                 : it->attempts > 0 ? "retrying"
                                                    : "queued"));
        json_object_set_new(e, "attempts", json_integer(it->attempts));
        if (held) iso_time(e, "sends_at", held);
        json_object_set_new(e, "alert_id", text(it->id));
        json_object_set_new(e, "severity", text(it->severity));
        if (!it->inflight && it->not_before)
            iso_time(e, "next_attempt", clock_mono_to_wall(it->not_before));
        alert_text(e, it->msg);
        json_array_append_new(queued, e);
    }
    json_object_set_new(o, "queued_total", json_integer((json_int_t)nq));
    json_object_set_new(o, "queued", queued);
    json_object_set_new(o, "dead_letter_file", q->dead_path ? text(q->dead_path) : json_null());
    if (q->dead_path) {
        struct deadletter_list l;
        char *data;
        size_t len, nd = 0;
        if (deadletter_read(q->dead_path, &l, &data, &len) < 0) {
            struct buf b = BUF_INIT;
            buf_printf(&b, "cannot read %s: %s", q->dead_path, durable_strerror(errno));
            json_object_set_new(o, "dead_error", text(buf_str(&b)));
            buf_free(&b);
        } else {
            for (i = 0; i < l.n; i++) {
                const struct deadletter *d = &l.v[i];
                json_t *e;
                if (strcmp(d->executor, q->name) != 0) continue;
                if (nd++ >= max) continue;
                e = json_object();
                json_object_set_new(e, "id", text(d->id));
                json_object_set_new(e, "state", text("dead"));
                json_object_set_new(e, "time", text(d->time));
                json_object_set_new(e, "attempts", json_integer(d->attempts));
                json_object_set_new(e, "alert_id", text(d->alert_id));
                json_object_set_new(e, "reason", text(d->reason));
                json_object_set_new(e, "retryable", json_boolean(d->msg != NULL));
                if (d->msg) alert_text(e, d->msg);
                json_array_append_new(dead, e);
            }
            if (l.unreadable)
                json_object_set_new(o, "dead_unreadable_lines",
                                    json_integer((json_int_t)l.unreadable));
            deadletter_list_free(&l);
            free(data);
        }
        json_object_set_new(o, "dead_total", json_integer((json_int_t)nd));
    }
    json_object_set_new(o, "dead", dead);
    return o;
}

/*
 * At start: retried dead letters still pending in the spool may still be in
 * the dead-letter file (a crash before it was rewritten): take them out now,
 * so that they are delivered once from the spool, not also retried again.
 */
static void
settle_retried(struct queue *q)
{
    struct deadletter_list l;
    struct durable_file df;
    struct item *it;
    char *data;
    size_t len, i, n = 0;
    bool *remove;

    for (it = q->head; it && !it->dead_id; it = it->next) {
    }
    if (!it) return;
    if (!q->dead_path || deadletter_read(q->dead_path, &l, &data, &len) < 0) {
        if (q->dead_path)
            log_msg(LOG_ERR, "executor %s: cannot read %s to settle retried dead letters: %s",
                    q->name, q->dead_path, durable_strerror(errno));
        return;
    }
    remove = xcalloc(l.n + 1, sizeof(*remove));
    for (i = 0; i < l.n; i++) {
        if (strcmp(l.v[i].executor, q->name) != 0) continue;
        for (it = q->head; it; it = it->next)
            if (it->dead_id && strcmp(it->dead_id, l.v[i].id) == 0) break;
        if (it) remove[i] = true, n++;
    }
    if (!n || (deadletter_remove_begin(&df, q->dead_path, data, len, &l, remove) == 0 &&
               durable_commit(&df) == 0)) {
        for (it = q->head; it; it = it->next) {
            free(it->dead_id);
            it->dead_id = NULL;
        }
        if (n)
            log_msg(LOG_WARNING,
                    "executor %s: %zu retried dead letters were still in %s (a crash during the "
                    "retry): removed; they are delivered from the spool",
                    q->name, n, q->dead_path);
    } else {
        log_msg(LOG_ERR, "executor %s: cannot rewrite %s: %s", q->name, q->dead_path,
                strerror(errno));
    }
    free(remove);
    deadletter_list_free(&l);
    free(data);
}

int
queue_retry_dead(struct queue *q, const char *id, struct buf *out)
{
    struct deadletter_list l;
    struct durable_file df;
    struct buf recs = BUF_INIT, payload = BUF_INIT;
    struct item *first = NULL, *it;
    char *data = NULL;
    size_t len, i, n = 0, unreadable = 0;
    bool *remove = NULL;
    uint64_t seq0 = q->next_seq;
    int rc = QUEUE_CTL_OK;

    if (!q->dead_path) {
        buf_printf(out, "executor %s has no dead-letter file\n", q->name);
        return id ? QUEUE_CTL_UNKNOWN : QUEUE_CTL_OK;
    }
    if (q->closing || (q->spool_path && (q->spool_fd < 0 || q->spool_failed))) {
        buf_printf(out, "executor %s: its spool cannot be written now: nothing retried\n", q->name);
        return QUEUE_CTL_FAILED;
    }
    if (deadletter_read(q->dead_path, &l, &data, &len) < 0) {
        buf_printf(out, "executor %s: cannot read %s: %s\n", q->name, q->dead_path,
                   durable_strerror(errno));
        return QUEUE_CTL_FAILED;
    }
    remove = xcalloc(l.n + 1, sizeof(*remove));
    for (i = 0; i < l.n; i++) {
        if (strcmp(l.v[i].executor, q->name) != 0 || (id && strcmp(l.v[i].id, id) != 0)) continue;
        if (!l.v[i].msg) {
            unreadable++;
            continue;
        }
        remove[i] = true;
        n++;
    }
    if (id && !n) {
        if (unreadable)
            buf_printf(out, "dead letter %s/%s cannot be read back as an alert: not retried\n",
                       q->name, id);
        else
            buf_printf(out, "no dead letter %s/%s\n", q->name, id);
        rc = unreadable ? QUEUE_CTL_FAILED : QUEUE_CTL_UNKNOWN;
        goto out;
    }
    if (!n) {
        buf_printf(out, "executor %s: no dead letters to retry\n", q->name);
        goto out;
    }
    /* 1. the dead-letter file without them, beside it (not in place yet) */
    if (deadletter_remove_begin(&df, q->dead_path, data, len, &l, remove) < 0) {
        buf_printf(out, "executor %s: cannot write beside %s: %s\n", q->name, q->dead_path,
                   strerror(errno));
        rc = QUEUE_CTL_FAILED;
        goto out;
    }
    /* 2. into the spool, each with the id of the dead letter it retries, in one write */
    for (i = 0; i < l.n; i++)
        if (remove[i]) frame_alert(&recs, q->next_seq++, l.v[i].msg, l.v[i].id, &payload);
    if (q->spool_path && durable_write_all(q->spool_fd, recs.p, recs.len) < 0) {
        int err = errno;
        if (ftruncate(q->spool_fd, q->spool_size) < 0) spool_error(q, "cutting back", errno);
        durable_abort(&df);
        q->next_seq = seq0;
        buf_printf(out, "executor %s: cannot write spool %s: %s: nothing retried\n", q->name,
                   q->spool_path, strerror(err));
        rc = QUEUE_CTL_FAILED;
        goto out;
    }
    if (q->spool_path) {
        q->spool_size += (off_t)recs.len;
        q->spool_records += n;
    }
    for (i = 0; i < l.n; i++) {
        if (!remove[i]) continue;
        it = enqueue(q, l.v[i].msg, seq0++);
        it->spooled = true;
        it->dead_id = xstrdup(l.v[i].id);
        if (!first) first = it;
    }
    q->st.retried += n;
    if (q->spool_path && durable_sync(q->spool_fd, 1) < 0) {
        /* not known to be on disk: they stay in the dead-letter file too (see queue.h) */
        spool_error(q, "syncing", errno);
        spool_fail(q, false);
        durable_abort(&df);
        buf_printf(out,
                   "executor %s: %zu dead letters queued, but the spool could not be synced: "
                   "they are still in %s\n",
                   q->name, n, q->dead_path);
        rc = QUEUE_CTL_FAILED;
        kick(q);
        goto out;
    }
    /* 3. the dead-letter file without them, in place */
    if (durable_commit(&df) < 0) {
        log_msg(LOG_ERR, "executor %s: cannot rewrite %s: %s", q->name, q->dead_path,
                strerror(errno));
        buf_printf(out,
                   "executor %s: %zu dead letters queued, but %s could not be rewritten (%s): "
                   "they are still in it until corrald restarts\n",
                   q->name, n, q->dead_path, strerror(errno));
        rc = QUEUE_CTL_FAILED;
    } else {
        for (it = first; it; it = it->next) {
            free(it->dead_id);
            it->dead_id = NULL;
        }
        buf_printf(out, "executor %s: %zu dead letter%s queued again\n", q->name, n,
                   n == 1 ? "" : "s");
    }
    log_msg(LOG_INFO, "executor %s: %zu dead letters queued again (corral queue retry)", q->name,
            n);
    kick(q);
out:
    free(remove);
    deadletter_list_free(&l);
    free(data);
    buf_free(&recs);
    buf_free(&payload);
    return rc;
}

int
queue_drop(struct queue *q, const char *id, struct buf *out)
{
    struct deadletter_list l;
    struct durable_file df;
    char *data, *end;
    size_t len, i;
    bool *remove;
    int rc = QUEUE_CTL_OK;

    if (id[0] == 'q' && id[1] >= '0' && id[1] <= '9') {
        unsigned long long seq = strtoull(id + 1, &end, 10);
        struct item *it;
        for (it = q->head; it && it->seq != seq; it = it->next) {
        }
        if (*end || !it) {
            buf_printf(out, "no queued alert %s/%s\n", q->name, id);
            return QUEUE_CTL_UNKNOWN;
        }
        /* held by its executor (a mail waiting for its group): taken back, then dropped */
        if (it->inflight && q->kind->cancel && q->kind->cancel(q->impl, it) == 0) {
            it->inflight = false;
            q->ninflight--;
            q->st.inflight = q->ninflight;
        }
        if (it->inflight) {
            buf_printf(out, "alert %s/%s is being delivered now: not dropped\n", q->name, id);
            return QUEUE_CTL_FAILED;
        }
        log_msg(LOG_WARNING, "executor %s: queued alert %s (%s) dropped (corral queue drop)",
                q->name, id, it->id);
        remove_item(q, it);
        queue_sync(q);
        q->st.dropped++;
        buf_printf(out, "executor %s: queued alert %s dropped\n", q->name, id);
        return QUEUE_CTL_OK;
    }
    if (!q->dead_path) {
        buf_printf(out, "no dead letter %s/%s (executor %s has no dead-letter file)\n", q->name, id,
                   q->name);
        return QUEUE_CTL_UNKNOWN;
    }
    if (deadletter_read(q->dead_path, &l, &data, &len) < 0) {
        buf_printf(out, "executor %s: cannot read %s: %s\n", q->name, q->dead_path,
                   durable_strerror(errno));
        return QUEUE_CTL_FAILED;
    }
    remove = xcalloc(l.n + 1, sizeof(*remove));
    for (i = 0; i < l.n; i++)
        if (strcmp(l.v[i].executor, q->name) == 0 && strcmp(l.v[i].id, id) == 0) break;
    if (i == l.n) {
        buf_printf(out, "no dead letter %s/%s\n", q->name, id);
        rc = QUEUE_CTL_UNKNOWN;
    } else {
        remove[i] = true;
        if (deadletter_remove_begin(&df, q->dead_path, data, len, &l, remove) < 0 ||
            durable_commit(&df) < 0) {
            buf_printf(out, "executor %s: cannot rewrite %s: %s: not dropped\n", q->name,
                       q->dead_path, strerror(errno));
            rc = QUEUE_CTL_FAILED;
        } else {
            q->st.dropped++;
            log_msg(LOG_WARNING, "executor %s: dead letter %s (%s) dropped (corral queue drop)",
                    q->name, id, l.v[i].alert_id);
            buf_printf(out, "executor %s: dead letter %s dropped\n", q->name, id);
        }
    }
    free(remove);
    deadletter_list_free(&l);
    free(data);
    return rc;
}
