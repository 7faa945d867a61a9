/*
 * test_queue: the crash-safety of an executor's queue (actions/queue.c),
 * through its public API only (queue_open, submit, sync, close, stats):
 * replay of the spool after a restart, a torn last record cut at every
 * byte, a damaged byte at every offset, version 1 spools, compaction, the
 * dedupe table's bound, and writes that fail (disk full: while running, and
 * at start; failed syncs, renames and short writes, from durable.c's fault
 * hook), and delivery control: dead letters retried exactly once,
 * also across a crash in the middle of a retry, and entries dropped.
 *
 * The executor is the real exec executor.  Its program is a symlink in a
 * private directory that the test points at one of three things:
 *   /bin/true           every delivery succeeds (exit 0);
 *   ok.sh               appends $CORRAL_ALERT_ID to a file, then succeeds;
 *   broken.sh           "#!/nonexistent": exec fails with ENOENT, which the
 *                       executor reports at once as "retry later", and with
 *                       backoff="1h" the alert just stays queued.
 * exec only checks the program when the queue opens, so the link can change
 * while a queue runs.  Nothing here waits on time: loops run until a
 * counter says so (with a generous guard).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "actions/queue.h"
#include "agent/conf/conf.h"
#include "engine/buf.h"
#include "engine/clock.h"
#include "engine/durable.h"
#include "engine/log.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

/* ---- the log, recorded ---- */

static struct buf logged;

static void
record_log(void *arg, int level, const char *text)
{
    (void)arg;
    if (getenv("TEST_QUEUE_VERBOSE")) fprintf(stderr, "log %d: %s\n", level, text);
    buf_printf(&logged, "%d %s\n", level, text);
}

/* True when a line at this level containing text was logged. */
static bool
log_has(int level, const char *text)
{
    char head[16];
    const char *p = buf_str(&logged);

    snprintf(head, sizeof(head), "%d ", level);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (strncmp(p, head, strlen(head)) == 0 && memmem(p, n, text, strlen(text))) return true;
        p += n + (nl != NULL);
    }
    return false;
}

/* How many lines at this level contain text. */
static int
log_count(int level, const char *text)
{
    char head[16];
    const char *p = buf_str(&logged);
    int n = 0;

    snprintf(head, sizeof(head), "%d ", level);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (strncmp(p, head, strlen(head)) == 0 && memmem(p, len, text, strlen(text))) n++;
        p += len + (nl != NULL);
    }
    return n;
}

/* ---- files ---- */

static void
setup(void)
{
    ck_assert_ptr_nonnull(ul_workdir_new("queue"));
    ul_write_file(ul_wpath("ok.sh"),
                  "#!/bin/sh\necho \"$CORRAL_ALERT_ID\" >> \"$0.out\"\n" /* $0: prog */);
    ck_assert_int_eq(chmod(ul_wpath("ok.sh"), 0755), 0);
    ul_write_file(ul_wpath("broken.sh"), "#!/nonexistent/interpreter\n");
    ck_assert_int_eq(chmod(ul_wpath("broken.sh"), 0755), 0);
    ck_assert_int_eq(mkdir(ul_wpath("spool"), 0700), 0);
    buf_reset(&logged);
    log_set_sink(record_log, NULL);
    srand(1);
}

static void
teardown(void)
{
    log_set_sink(NULL, NULL);
    buf_free(&logged);
    if (!getenv("TEST_QUEUE_KEEP")) ul_workdir_remove();
}

/* Points the executor's program at target (see the top of the file). */
static void
program(const char *target)
{
    unlink(ul_wpath("prog"));
    ck_assert_int_eq(symlink(target[0] == '/' ? target : ul_wpath(target), ul_wpath("prog")), 0);
}

static off_t
file_size(const char *path)
{
    struct stat st;

    if (stat(path, &st) < 0) return -1;
    return st.st_size;
}

static void
read_file(const char *path, struct buf *b)
{
    FILE *f = fopen(path, "rb");
    char chunk[4096];
    size_t n;

    buf_reset(b);
    if (!f) return;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(b, chunk, n);
    fclose(f);
}

static void
write_bytes(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, p, n), (ssize_t)n);
    close(fd);
}

/* ---- a queue on its own loop ---- */

struct harness {
    uv_loop_t loop;
    struct conf *conf;
    char file[512];
    struct queue *q;
};

/* Loads executor "alerts" (exec, program prog, retries an hour apart) with more attributes. */
static void
harness_load(struct harness *h, const char *attrs)
{
    char x[1024];

    uv_loop_init(&h->loop);
    snprintf(x, sizeof(x), "<exec name=\"alerts\" program=\"%s\" backoff=\"1h\" %s/>",
             ul_wpath("prog"), attrs ? attrs : "");
    h->conf = ul_load_executors(ul_workdir(), x, h->file, sizeof(h->file));
    h->q = NULL;
}

/* Loads, then opens its queue; spool: NULL or a directory. */
static struct queue *
harness_open(struct harness *h, const char *attrs, const char *spool, struct buf *err)
{
    harness_load(h, attrs);
    h->q = queue_open(&h->loop, &h->conf->executors[0], h->file, spool, err);
    return h->q;
}

static struct queue *
must_open(struct harness *h, const char *attrs, const char *spool)
{
    struct buf err = BUF_INIT;

    harness_open(h, attrs, spool, &err);
    ck_assert_msg(h->q != NULL, "queue_open: %s", buf_str(&err));
    ck_assert_uint_eq(err.len, 0);
    buf_free(&err);
    return h->q;
}

static void
harness_close(struct harness *h)
{
    if (h->q) {
        queue_close(h->q, NULL, NULL);
        h->q = NULL;
    }
    uv_run(&h->loop, UV_RUN_DEFAULT); /* until every handle (and child) is gone */
    ck_assert_int_eq(uv_loop_close(&h->loop), 0);
    conf_free(h->conf);
}

struct count_wait {
    struct queue *q;
    uint64_t delivered;
};

static bool
delivered_reached(void *arg)
{
    struct count_wait *w = arg;

    return queue_get_stats(w->q)->delivered >= w->delivered;
}

/* Runs the loop until n alerts in all were delivered. */
static void
wait_delivered(struct harness *h, uint64_t n)
{
    struct count_wait w = {h->q, n};

    ck_assert_msg(ul_run_until(&h->loop, delivered_reached, &w, 60), "delivered %llu of %llu",
                  (unsigned long long)queue_get_stats(h->q)->delivered, (unsigned long long)n);
}

/* An alert whose id is id (corral.alert_id). */
static void
submit(struct queue *q, const char *id)
{
    struct msg *m = msg_new();

    msg_set(m, nv_intern_str("corral.alert_id"), id, strlen(id));
    msg_set(m, nv_intern_str("MESSAGE"), id, strlen(id));
    queue_submit(q, m);
    msg_unref(m);
}

static const char *
spool_file(void)
{
    return ul_wpath("spool/alerts.spool");
}

/* ---- replay ---- */

START_TEST(test_replay_pending_only)
{
    struct harness h;
    struct buf out = BUF_INIT;

    /* run 1: three alerts delivered, so done */
    program("/bin/true");
    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "done-1");
    submit(h.q, "done-2");
    submit(h.q, "done-3");
    wait_delivered(&h, 3);
    harness_close(&h);

    /* run 2: nothing to take over; two alerts that cannot be delivered stay pending */
    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 0);
    submit(h.q, "pending-1");
    submit(h.q, "pending-2");
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 2);
    ck_assert_uint_eq(queue_get_stats(h.q)->retries, 2);
    ck_assert_uint_eq(queue_get_stats(h.q)->delivered, 0);
    queue_sync(h.q);
    harness_close(&h);

    /* run 3: exactly the pending ones are delivered again, in order (one child at a time) */
    program("ok.sh");
    must_open(&h, "max-children=\"1\"", ul_wpath("spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 2);
    wait_delivered(&h, 2);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "pending-1\npending-2\n");

    /* run 4: all done, nothing comes back */
    must_open(&h, NULL, ul_wpath("spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 0);
    harness_close(&h);
    buf_free(&out);
}
END_TEST

/* Alerts queued in memory only (no spool directory) are gone after a restart. */
START_TEST(test_no_spool)
{
    struct harness h;

    program("broken.sh");
    must_open(&h, NULL, NULL);
    submit(h.q, "a");
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 1);
    harness_close(&h);
    ck_assert_int_eq(file_size(spool_file()), -1);
    must_open(&h, NULL, NULL);
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 0);
    harness_close(&h);
}
END_TEST

/* ---- a reload: the queue handed to the executor configured anew ---- */

/*
 * Without a spool, the alerts a changed executor holds go to its successor
 * (queue_handover), not with it; the successor delivers every one, once,
 * at once: the retries the old configuration scheduled (an hour away) do
 * not hold the new one back.
 */
START_TEST(test_handover_no_spool)
{
    struct harness h;
    struct buf err = BUF_INIT, out = BUF_INIT;
    struct queue *next;

    program("broken.sh");
    must_open(&h, "max-children=\"1\"", NULL);
    submit(h.q, "a");
    submit(h.q, "b");
    submit(h.q, "c");
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 3);
    program("ok.sh");
    next = queue_open(&h.loop, &h.conf->executors[0], h.file, NULL, &err);
    ck_assert_msg(next != NULL, "queue_open: %s", buf_str(&err));
    queue_handover(h.q, next);
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 0);
    ck_assert_uint_eq(queue_get_stats(next)->queued, 3);
    queue_close(h.q, NULL, NULL);
    h.q = next;
    wait_delivered(&h, 3);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "a\nb\nc\n");
    buf_free(&err);
    buf_free(&out);
}
END_TEST

/* With the same spool, the successor read the alerts from it when it opened: nothing is moved. */
START_TEST(test_handover_same_spool)
{
    struct harness h;
    struct buf err = BUF_INIT, out = BUF_INIT;
    struct queue *next;

    program("broken.sh");
    must_open(&h, "max-children=\"1\"", ul_wpath("spool"));
    submit(h.q, "a");
    submit(h.q, "b");
    queue_sync(h.q);
    program("ok.sh");
    next = queue_open(&h.loop, &h.conf->executors[0], h.file, ul_wpath("spool"), &err);
    ck_assert_msg(next != NULL, "queue_open: %s", buf_str(&err));
    ck_assert_uint_eq(queue_get_stats(next)->recovered, 2);
    queue_handover(h.q, next);
    ck_assert_uint_eq(queue_get_stats(next)->queued, 2);
    queue_close(h.q, NULL, NULL);
    h.q = next;
    wait_delivered(&h, 2);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "a\nb\n");
    buf_free(&err);
    buf_free(&out);
}
END_TEST

/* A full queue drops, unless the alert comes from an input the server pauses (back-pressure). */
START_TEST(test_full_keep)
{
    struct harness h;
    struct msg *m = msg_new();
    const struct queue_stats *st;
    int i;

    program("broken.sh");
    must_open(&h, "queue=\"4\"", NULL);
    st = queue_get_stats(h.q);
    msg_set(m, nv_intern_str("MESSAGE"), "x", 1);
    for (i = 0; i < 2; i++) queue_submit(h.q, m);
    ck_assert(!queue_full(h.q));
    ck_assert(queue_low(h.q)); /* 2 of 4: half */
    queue_submit(h.q, m);
    ck_assert(!queue_low(h.q));
    queue_submit(h.q, m);
    ck_assert(queue_full(h.q));
    queue_submit(h.q, m);
    ck_assert_uint_eq(st->dropped_full, 1);
    for (i = 0; i < 3; i++) queue_submit_keep(h.q, m);
    ck_assert_uint_eq(st->dropped_full, 1);
    ck_assert_uint_eq(st->queued, 7);
    harness_close(&h);
    msg_unref(m);
}
END_TEST

/* ---- torn records ---- */

/*
 * Writes a spool with three pending alerts, noting its size after each
 * (sizes[0]: just the header).  Every alert is the same length.
 */
static void
three_pending(struct buf *spool, off_t sizes[4])
{
    struct harness h;
    int i;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    sizes[0] = file_size(spool_file());
    for (i = 1; i <= 3; i++) {
        char id[32];
        snprintf(id, sizeof(id), "alert-%d", i);
        submit(h.q, id);
        queue_sync(h.q);
        sizes[i] = file_size(spool_file());
    }
    harness_close(&h);
    read_file(spool_file(), spool);
    ck_assert_uint_eq(spool->len, (size_t)sizes[3]);
}

/* Reopens a spool cut to len bytes: how many alerts come back, and the file after. */
static uint64_t
reopen_cut(const struct buf *spool, size_t len, off_t *after)
{
    struct harness h;
    uint64_t n;

    write_bytes(spool_file(), spool->p, len);
    must_open(&h, NULL, ul_wpath("spool"));
    n = queue_get_stats(h.q)->recovered;
    harness_close(&h);
    *after = file_size(spool_file());
    return n;
}

START_TEST(test_torn_every_byte)
{
    struct buf spool = BUF_INIT;
    off_t sizes[4], after;
    size_t len;

    three_pending(&spool, sizes);
    ck_assert_int_gt(sizes[0], 0);
    ck_assert_int_eq(sizes[2] - sizes[1], sizes[3] - sizes[2]);
    /* every cut inside the last record: the two before it come back, the rest is cut off */
    for (len = (size_t)sizes[2]; len <= (size_t)sizes[3]; len++) {
        bool whole = len == (size_t)sizes[3];
        buf_reset(&logged);
        ck_assert_uint_eq(reopen_cut(&spool, len, &after), whole ? 3 : 2);
        ck_assert_int_eq(after, whole ? sizes[3] : sizes[2]); /* compacted: the torn bytes gone */
        ck_assert_msg(whole || len == (size_t)sizes[2] ||
                          log_has(LOG_WARNING, "bytes of a torn record cut off"),
                      "len %zu: %s", len, buf_str(&logged));
    }
    /* and cuts earlier: whatever whole records are left come back, nothing crashes */
    for (len = 0; len < (size_t)sizes[2]; len++) {
        uint64_t want = len >= (size_t)sizes[1] ? 1 : 0;
        ck_assert_uint_eq(reopen_cut(&spool, len, &after), want);
        ck_assert_int_eq(after, want ? sizes[1] : sizes[0]);
    }
    buf_free(&spool);
}
END_TEST

/*
 * A record whose checksum does not match is skipped, counted and logged;
 * the one after it comes back, and the spool as it was is kept aside.
 */
START_TEST(test_bad_crc)
{
    struct buf spool = BUF_INIT, kept = BUF_INIT;
    off_t sizes[4], after;

    three_pending(&spool, sizes);
    spool.p[sizes[1] + (sizes[2] - sizes[1]) / 2] ^= 0x55; /* in the second alert */
    ck_assert_uint_eq(reopen_cut(&spool, spool.len, &after), 2);
    ck_assert_int_eq(after, sizes[0] + 2 * (sizes[2] - sizes[1]));
    ck_assert_msg(log_has(LOG_ERR, "1 corrupt records"), "%s", buf_str(&logged));
    read_file(ul_wpath("spool/alerts.spool.corrupt"), &kept);
    ck_assert_uint_eq(kept.len, spool.len);
    ck_assert(memcmp(kept.p, spool.p, spool.len) == 0);
    buf_free(&spool);
    buf_free(&kept);
}
END_TEST

static int
cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the lines of b (each ending in a newline). */
static void
sort_lines(struct buf *b)
{
    char *lines[64], *copy = strdup(buf_str(b)), *p, *save = NULL;
    size_t n = 0, i;

    for (p = strtok_r(copy, "\n", &save); p && n < 64; p = strtok_r(NULL, "\n", &save))
        lines[n++] = p;
    qsort(lines, n, sizeof(*lines), cmp_line);
    buf_reset(b);
    for (i = 0; i < n; i++) buf_printf(b, "%s\n", lines[i]);
    free(copy);
}

/*
 * One damaged byte at every offset of a spool of five pending alerts: the
 * alert whose record holds the byte is lost (none when the byte is in the
 * file's header), every other one is delivered, once, and the damage is
 * counted.  Records are framed so that the reader finds its way past any
 * damage (queue.h).  In CORRUPT_SLICES runs (each its own test, within the
 * timeout on a loaded machine), each taking every CORRUPT_SLICES-th offset.
 */
#define CORRUPT_SLICES 6

START_TEST(test_corrupt_every_byte)
{
    struct harness h;
    struct buf spool = BUF_INIT, out = BUF_INIT, want = BUF_INIT;
    off_t sizes[6];
    size_t off;
    int i;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    sizes[0] = file_size(spool_file());
    for (i = 1; i <= 5; i++) {
        char id[32];
        snprintf(id, sizeof(id), "alert-%d", i);
        submit(h.q, id);
        queue_sync(h.q);
        sizes[i] = file_size(spool_file());
    }
    harness_close(&h);
    read_file(spool_file(), &spool);
    ck_assert_uint_eq(spool.len, (size_t)sizes[5]);

    program("ok.sh");
    for (off = (size_t)_i; off < spool.len; off += CORRUPT_SLICES) {
        int lost = 0; /* the alert whose record holds off; 0: none */
        uint64_t n;
        for (i = 1; i <= 5; i++)
            if ((off_t)off >= sizes[i - 1] && (off_t)off < sizes[i]) lost = i;
        spool.p[off] ^= 0xff;
        write_bytes(spool_file(), spool.p, spool.len);
        spool.p[off] ^= 0xff;
        unlink(ul_wpath("prog.out"));
        buf_reset(&logged);
        must_open(&h, "max-children=\"5\"", ul_wpath("spool"));
        n = lost ? 4 : 5;
        ck_assert_msg(queue_get_stats(h.q)->recovered == n, "offset %zu: %llu recovered", off,
                      (unsigned long long)queue_get_stats(h.q)->recovered);
        ck_assert_msg(queue_get_stats(h.q)->spool_corrupt == 1, "offset %zu: %llu corrupt", off,
                      (unsigned long long)queue_get_stats(h.q)->spool_corrupt);
        wait_delivered(&h, n);
        harness_close(&h);
        /* each once: the list of ids, but for the lost one (sorted: delivered in parallel) */
        read_file(ul_wpath("prog.out"), &out);
        sort_lines(&out);
        buf_reset(&want);
        for (i = 1; i <= 5; i++)
            if (i != lost) buf_printf(&want, "alert-%d\n", i);
        ck_assert_msg(strcmp(buf_str(&out), buf_str(&want)) == 0, "offset %zu: delivered %s", off,
                      buf_str(&out));
    }
    buf_free(&spool);
    buf_free(&out);
    buf_free(&want);
}
END_TEST

struct scanned {
    int alerts, done;
    uint64_t seqs[16];
};

static void
on_record(void *arg, char type, uint64_t seq, const void *payload, size_t len)
{
    struct scanned *sc = arg;

    (void)payload;
    (void)len;
    if (type == QUEUE_REC_ALERT && sc->alerts < 16) sc->seqs[sc->alerts] = seq;
    if (type == QUEUE_REC_ALERT) sc->alerts++;
    if (type == QUEUE_REC_DONE) sc->done++;
}

/* What the spool file holds now, read with the spool's own reader. */
static void
scan_spool(struct scanned *sc, struct queue_scan *res)
{
    struct buf b = BUF_INIT;

    memset(sc, 0, sizeof(*sc));
    read_file(spool_file(), &b);
    queue_spool_scan(b.p, b.len, on_record, sc, res);
    buf_free(&b);
}

/* The reader on its own: records framed by hand, garbage between them, a torn tail. */
START_TEST(test_scan)
{
    struct buf b = BUF_INIT;
    struct scanned sc = {0};
    struct queue_scan res;

    buf_puts(&b, QUEUE_SPOOL_HEADER);
    queue_spool_frame(&b, QUEUE_REC_ALERT, 1, "one", 3);
    buf_puts(&b, "garbage " QUEUE_SPOOL_MAGIC " more garbage");
    queue_spool_frame(&b, QUEUE_REC_ALERT, (uint64_t)1 << 40, "two", 3);
    queue_spool_frame(&b, QUEUE_REC_DONE, 1, NULL, 0);
    queue_spool_frame(&b, QUEUE_REC_ALERT, 3, "three", 5);
    queue_spool_scan(b.p, b.len - 1, on_record, &sc, &res);
    ck_assert_int_eq(res.version, 2);
    ck_assert_int_eq(sc.alerts, 2);
    ck_assert_int_eq(sc.done, 1);
    ck_assert_uint_eq(sc.seqs[1], (uint64_t)1 << 40);
    ck_assert_uint_eq(res.records, 3);
    ck_assert_uint_eq(res.corrupt, 2);
    ck_assert_uint_eq(res.tail_bytes, 25 + 5 - 1);
    ck_assert_uint_eq(res.corrupt_bytes, strlen("garbage  more garbage") + 4 + 25 + 5 - 1);
    buf_free(&b);
}
END_TEST

/* A version 1 spool (before records had a magic) is read, and rewritten as version 2. */
START_TEST(test_version_1)
{
    struct harness h;
    struct buf b = BUF_INIT, payload = BUF_INIT, out = BUF_INIT;
    struct scanned sc;
    struct queue_scan res;
    int i;

    buf_puts(&b, QUEUE_SPOOL_HEADER_V1);
    for (i = 1; i <= 3; i++) {
        /* u32 length of the rest, u32 CRC of the rest, type, u64 seq, payload */
        unsigned char head[17];
        struct msg *m = msg_new();
        char id[32];
        int n = snprintf(id, sizeof(id), "v1-%d", i);
        msg_set(m, nv_intern_str("corral.alert_id"), id, (size_t)n);
        buf_reset(&payload);
        msg_encode(m, &payload);
        msg_unref(m);
        head[8] = i == 3 ? QUEUE_REC_DONE : QUEUE_REC_ALERT;
        memset(head + 9, 0, 8);
        head[9] = (unsigned char)(i == 3 ? 1 : i);
        if (i == 3) buf_reset(&payload); /* alert 1 is done */
        {
            uint32_t len = (uint32_t)(9 + payload.len), crc;
            crc = durable_crc32(0, head + 8, 9);
            crc = durable_crc32(crc, payload.p, payload.len);
            for (n = 0; n < 4; n++) {
                head[n] = (unsigned char)(len >> (8 * n));
                head[4 + n] = (unsigned char)(crc >> (8 * n));
            }
        }
        buf_append(&b, head, 17);
        buf_append(&b, payload.p, payload.len);
    }
    write_bytes(spool_file(), b.p, b.len);
    program("ok.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 1);
    ck_assert_uint_eq(queue_get_stats(h.q)->spool_corrupt, 0);
    scan_spool(&sc, &res); /* converted at start */
    ck_assert_int_eq(res.version, 2);
    ck_assert_int_eq(sc.alerts, 1);
    ck_assert_uint_eq(sc.seqs[0], 2);
    wait_delivered(&h, 1);
    submit(h.q, "new"); /* seq 3: after the old ones */
    wait_delivered(&h, 2);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "v1-2\nnew\n");
    buf_free(&b);
    buf_free(&payload);
    buf_free(&out);
}
END_TEST

/* A file that is not a spool is replaced by an empty one, with a log line. */
START_TEST(test_not_a_spool)
{
    struct harness h;

    ul_write_file(spool_file(), "this is not a spool at all\n");
    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 0);
    ck_assert(log_has(LOG_ERR, "is not a spool"));
    harness_close(&h);
}
END_TEST

/* ---- compaction ---- */

/*
 * Three alerts that stay pending, then n that are delivered (each leaves an
 * alert and a done record in the spool).  Returns the spool's size once
 * the n were submitted but none delivered yet.
 */
static off_t
pending_then_flood(struct harness *h, int n)
{
    off_t full;
    int i;

    program("broken.sh");
    must_open(h, "max-children=\"8\"", ul_wpath("spool"));
    submit(h->q, "keep-1");
    submit(h->q, "keep-2");
    submit(h->q, "keep-3");
    ck_assert_uint_eq(queue_get_stats(h->q)->queued, 3);
    program("/bin/true");
    for (i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "flood-%d", i);
        submit(h->q, id);
    }
    queue_sync(h->q);
    full = file_size(spool_file());
    wait_delivered(h, (uint64_t)n);
    queue_sync(h->q);
    ck_assert_uint_eq(queue_get_stats(h->q)->queued, 3);
    return full;
}

/* The pending alerts come back after a restart, and only they. */
static void
reopen_delivers_kept(void)
{
    struct harness h;
    struct buf out = BUF_INIT;

    program("ok.sh");
    must_open(&h, "max-children=\"1\"", ul_wpath("spool")); /* in order */
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 3);
    wait_delivered(&h, 3);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "keep-1\nkeep-2\nkeep-3\n");
    buf_free(&out);
}

/* At start the spool is rewritten with just the pending alerts. */
START_TEST(test_compaction_at_start)
{
    struct harness h;
    off_t full, closed, reopened;

    full = pending_then_flood(&h, 200);
    harness_close(&h);
    closed = file_size(spool_file());
    ck_assert_int_gt(closed, full); /* the done records */
    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    reopened = file_size(spool_file());
    harness_close(&h);
    ck_assert_msg(reopened * 50 < full, "%lld bytes after the restart, %lld before",
                  (long long)reopened, (long long)full);
    reopen_delivers_kept();
}
END_TEST

/*
 * While running, the spool is rewritten when mostly dead records (queue.h).
 * (Once, the condition compared done records with all alert records, of
 * which there are always at least as many, so it never held.)
 */
START_TEST(test_compaction_while_running)
{
    struct harness h;
    off_t full, end;

    full = pending_then_flood(&h, 1200);
    end = file_size(spool_file());
    /* without compaction it would have grown by 1200 done records */
    ck_assert_msg(end < full / 2, "spool %lld bytes after, %lld before", (long long)end,
                  (long long)full);
    harness_close(&h);
    reopen_delivers_kept();
}
END_TEST

/*
 * Large alerts are compacted away by their bytes, not only their number:
 * 40 alerts of 1 MB delivered one after the other leave a spool of at
 * most QUEUE_MAX_BYTES and the records since the last rewrite, not of
 * 40 MB.  (Once, only more than 1000 dead records started a rewrite.)
 */
START_TEST(test_compaction_by_bytes)
{
    struct harness h;
    struct msg *m = msg_new();
    char *pad = malloc(1000000);
    off_t end;
    int i;

    program("ok.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    memset(pad, 'x', 1000000);
    msg_set(m, nv_intern_str("MESSAGE"), pad, 1000000);
    for (i = 1; i <= 40; i++) {
        queue_submit(h.q, m);
        wait_delivered(&h, (uint64_t)i);
    }
    end = file_size(spool_file());
    ck_assert_msg(end < QUEUE_MAX_BYTES + 2000000, "spool of %lld bytes", (long long)end);
    harness_close(&h);
    msg_unref(m);
    free(pad);
}
END_TEST

/* ---- dedupe ---- */

static void
submit_key(struct queue *q, struct msg *m, unsigned k)
{
    char key[32];
    int n = snprintf(key, sizeof(key), "key-%u", k);

    msg_set(m, nv_intern_str("k"), key, (size_t)n);
    queue_submit(q, m);
}

/* The queue's clock, stopped at the test's start and moved on by the test alone. */
static uint64_t clock_skip, clock_wall0, clock_mono0;

static uint64_t
stopped_clock(clockid_t id)
{
    return (id == CLOCK_MONOTONIC ? clock_mono0 : clock_wall0) + clock_skip;
}

/*
 * A key is a duplicate for the window after it went through, however often
 * it comes meanwhile; after the window it goes through again and starts a
 * new window.  Other keys are not held up.
 */
START_TEST(test_dedupe_window)
{
    struct harness h;
    struct msg *m = msg_new();
    const struct queue_stats *st;

    clock_skip = 0;
    clock_wall0 = clock_system_ms(CLOCK_REALTIME);
    clock_mono0 = clock_system_ms(CLOCK_MONOTONIC);
    clock_set_source(stopped_clock);
    program("broken.sh");
    must_open(&h, "dedupe=\"2s\" dedupe-key=\"${k}\"", NULL);
    st = queue_get_stats(h.q);
    submit_key(h.q, m, 1);
    submit_key(h.q, m, 2);
    submit_key(h.q, m, 1);
    ck_assert_uint_eq(st->deduplicated, 1);
    clock_skip += 1999; /* within the window of the first: still a duplicate */
    submit_key(h.q, m, 1);
    ck_assert_uint_eq(st->deduplicated, 2);
    clock_skip += 1; /* the window is over: through, and a new window from now */
    submit_key(h.q, m, 1);
    ck_assert_uint_eq(st->deduplicated, 2);
    submit_key(h.q, m, 1); /* a duplicate again */
    submit_key(h.q, m, 2); /* its window is over too */
    ck_assert_uint_eq(st->deduplicated, 3);
    clock_skip += 1999;
    submit_key(h.q, m, 1);
    ck_assert_uint_eq(st->deduplicated, 4);
    clock_skip += 1;
    submit_key(h.q, m, 1);
    ck_assert_uint_eq(st->deduplicated, 4);
    ck_assert_uint_eq(st->submitted, 9);
    clock_set_source(NULL);
    harness_close(&h);
    msg_unref(m);
}
END_TEST

START_TEST(test_dedupe_bounded)
{
    struct harness h;
    struct msg *m = msg_new();
    const struct queue_stats *st;
    /* the table is rebuilt (and trimmed) when it holds 1.5 times the maximum */
    unsigned n = QUEUE_DEDUPE_MAX + QUEUE_DEDUPE_MAX / 2 + 1, k;
    uint64_t limited;

    /* one alert a day gets through: the rest are counted, not delivered, but remembered */
    program("broken.sh");
    must_open(&h, "dedupe=\"1h\" dedupe-key=\"${k}\" rate=\"1/86400\"", NULL);
    st = queue_get_stats(h.q);
    for (k = 0; k < n; k++) submit_key(h.q, m, k);
    ck_assert_uint_eq(st->submitted, n);
    ck_assert_uint_eq(st->deduplicated, 0);
    ck_assert_uint_eq(st->rate_limited, n - 1);
    ck_assert_uint_eq(st->dedupe_forgotten, n - 1 - QUEUE_DEDUPE_MAX);
    ck_assert(log_has(LOG_WARNING, "distinct dedupe keys within the window"));

    /* the newest is still known: a duplicate */
    submit_key(h.q, m, n - 1);
    ck_assert_uint_eq(st->deduplicated, 1);
    /* the oldest was forgotten: it gets past the dedupe (and is stopped by the rate) */
    limited = st->rate_limited;
    submit_key(h.q, m, 0);
    ck_assert_uint_eq(st->deduplicated, 1);
    ck_assert_uint_eq(st->rate_limited, limited + 1);
    harness_close(&h);
    msg_unref(m);
}
END_TEST

/* ---- writes that fail ---- */

/*
 * A disk that fills up, injected with RLIMIT_FSIZE (the process may not
 * grow a file past the limit: write() fails with EFBIG), which needs no
 * privileges; Check runs each test in a child process, so the limit stays
 * there.  What queue.c does (queue.h): the error is logged, the record cut
 * off again, the alert queued in memory only and delivered in this run;
 * once a second, and at close, the spool is rewritten from memory.
 */
static void
limit_file_size(rlim_t bytes)
{
    struct rlimit rl = {bytes, RLIM_INFINITY};

    signal(SIGXFSZ, SIG_IGN); /* else the kernel kills the process */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

/* Check writes its results to a file too: the limit goes before any assertion. */
static void
unlimit_file_size(void)
{
    struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};

    setrlimit(RLIMIT_FSIZE, &rl);
}

START_TEST(test_disk_full_logged_and_delivered)
{
    struct harness h;
    struct buf out = BUF_INIT;

    program("ok.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    limit_file_size((rlim_t)file_size(spool_file()) + 10); /* not room for one alert */
    submit(h.q, "no-room");
    unlimit_file_size();
    ck_assert(log_has(LOG_ERR, "writing spool"));
    wait_delivered(&h, 1);
    ck_assert_uint_eq(queue_get_stats(h.q)->dead, 0);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "no-room\n");
    buf_free(&out);
}
END_TEST

static bool
all_spooled(void *arg)
{
    return queue_get_stats(arg)->unspooled == 0;
}

/* Runs the loop until the queue has written what it held in memory only to the spool. */
static void
wait_spooled(struct harness *h)
{
    ck_assert_msg(ul_run_until(&h->loop, all_spooled, h->q, 60), "%llu alerts still unspooled",
                  (unsigned long long)queue_get_stats(h->q)->unspooled);
}

/* Reopens with ok.sh: every alert in ids comes back and is delivered, once, in order. */
static void
reopen_delivers(const char *ids)
{
    struct harness h;
    struct buf out = BUF_INIT;
    uint64_t n = 0;
    const char *p;

    for (p = ids; *p; p++) n += *p == '\n';
    unlink(ul_wpath("prog.out"));
    program("ok.sh");
    must_open(&h, "max-children=\"1\"", ul_wpath("spool")); /* in order */
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, n);
    ck_assert_uint_eq(queue_get_stats(h.q)->spool_corrupt, 0);
    wait_delivered(&h, n);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), ids);
    buf_free(&out);
}

/*
 * The disk fills up in the middle of a record, then has room again: the
 * torn bytes are cut off at once, and alerts spooled after that come back
 * after a restart, the one that found no room included.  (Once, later
 * records were appended after the torn bytes, and the replay stopped there.)
 */
START_TEST(test_disk_full_then_room)
{
    struct harness h;
    off_t before;
    struct scanned sc;
    struct queue_scan res;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "before");
    queue_sync(h.q);
    before = file_size(spool_file());
    limit_file_size((rlim_t)before + 40); /* part of a record fits */
    submit(h.q, "during");
    unlimit_file_size();
    ck_assert(log_has(LOG_ERR, "writing spool"));
    ck_assert(log_has(LOG_WARNING, "kept in memory only"));
    ck_assert_int_eq(file_size(spool_file()), before); /* the torn bytes cut off */
    submit(h.q, "after");
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 3);
    ck_assert_uint_eq(queue_get_stats(h.q)->memory_only, 2);
    ck_assert_uint_eq(queue_get_stats(h.q)->spool_errors, 1);
    /* room again: the spool is rewritten from memory while running, without a restart */
    wait_spooled(&h);
    ck_assert(log_has(LOG_WARNING, "written again, with 2 alerts"));
    scan_spool(&sc, &res);
    ck_assert_int_eq(sc.alerts, 3);
    ck_assert_uint_eq(res.corrupt, 0);
    submit(h.q, "later"); /* appended as usual */
    harness_close(&h);
    reopen_delivers("before\nduring\nafter\nlater\n");
}
END_TEST

/*
 * An alert delivered while the spool cannot be written owes the spool its
 * done record: catching up (an append, queue.h) writes it with the alerts
 * held in memory, so after a restart the delivered alert does not come
 * back and the pending one does.
 */
START_TEST(test_catch_up_writes_owed_done)
{
    struct harness h;
    struct count_wait w;

    /* "first" is delivered, every other alert fails for now (retried in an hour) */
    ul_write_file(ul_wpath("sel.sh"), "#!/bin/sh\n[ \"$CORRAL_ALERT_ID\" = first ] || exit 75\n");
    ck_assert_int_eq(chmod(ul_wpath("sel.sh"), 0755), 0);
    program("sel.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "first"); /* spooled; its delivery ends when the loop runs */
    limit_file_size((rlim_t)file_size(spool_file()));
    submit(h.q, "second"); /* the spool fails: in memory only */
    w.q = h.q;
    w.delivered = 1;
    ul_run_until(&h.loop, delivered_reached, &w, 60); /* "first"'s done record: owed */
    unlimit_file_size();
    ck_assert_uint_eq(queue_get_stats(h.q)->delivered, 1);
    ck_assert_uint_eq(queue_get_stats(h.q)->unspooled, 1);
    wait_spooled(&h);
    harness_close(&h);
    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 1);
    harness_close(&h);
}
END_TEST

/* A write error in the middle of a run of alerts, then a restart: each one comes back once. */
START_TEST(test_write_error_in_the_middle)
{
    struct harness h;
    int i;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    for (i = 1; i <= 5; i++) {
        char id[32];
        snprintf(id, sizeof(id), "alert-%d", i);
        if (i == 3) limit_file_size((rlim_t)file_size(spool_file()) + 30);
        submit(h.q, id);
        if (i == 3) unlimit_file_size();
    }
    ck_assert_uint_eq(queue_get_stats(h.q)->memory_only, 3); /* 3, and 4 and 5 after it */
    ck_assert_uint_eq(queue_get_stats(h.q)->unspooled, 3);
    harness_close(&h); /* the rewrite at close */
    reopen_delivers("alert-1\nalert-2\nalert-3\nalert-4\nalert-5\n");
}
END_TEST

/*
 * The same faults, and those RLIMIT_FSIZE cannot make, injected with
 * durable.c's fault hook.
 */

/* The sync after a write fails: logged and counted, the spool written again from memory. */
START_TEST(test_sync_fails)
{
    struct harness h;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "first");
    durable_fault_set(DURABLE_OP_SYNC, 1, DURABLE_FAULT_ONCE, EIO);
    queue_sync(h.q);
    ck_assert_uint_eq(durable_fault_failed(DURABLE_OP_SYNC), 1);
    ck_assert(log_has(LOG_ERR, "syncing spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->spool_errors, 1);
    submit(h.q, "second");
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 2);
    wait_spooled(&h);
    durable_fault_clear();
    harness_close(&h);
    reopen_delivers("first\nsecond\n");
}
END_TEST

/* A short write then a full disk, in the middle of a record: the torn bytes cut off. */
START_TEST(test_short_write)
{
    struct harness h;
    off_t before;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "before");
    before = file_size(spool_file());
    durable_fault_set(DURABLE_OP_WRITE, 1, DURABLE_FAULT_SHORT, ENOSPC);
    submit(h.q, "during");
    ck_assert_uint_eq(durable_fault_failed(DURABLE_OP_WRITE), 1);
    durable_fault_clear();
    ck_assert(log_has(LOG_ERR, "writing spool"));
    ck_assert_int_eq(file_size(spool_file()), before);
    ck_assert_uint_eq(queue_get_stats(h.q)->memory_only, 1);
    submit(h.q, "after");
    wait_spooled(&h);
    harness_close(&h);
    reopen_delivers("before\nduring\nafter\n");
}
END_TEST

/*
 * The rewrite at start cannot be renamed into place: the queue opens all
 * the same, the old spool stays as it was (and no temporary file), and its
 * alerts are delivered.
 */
START_TEST(test_rename_fails_at_open)
{
    struct harness h;
    struct buf was = BUF_INIT, is = BUF_INIT;
    struct buf out = BUF_INIT;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "one");
    submit(h.q, "two");
    harness_close(&h);
    read_file(spool_file(), &was);
    program("ok.sh");
    durable_fault_set(DURABLE_OP_RENAME, 1, DURABLE_FAULT_ONCE, EXDEV);
    must_open(&h, "max-children=\"1\"", ul_wpath("spool"));
    ck_assert_uint_eq(durable_fault_failed(DURABLE_OP_RENAME), 1);
    durable_fault_clear();
    ck_assert(log_has(LOG_ERR, "rewriting spool"));
    read_file(spool_file(), &is);
    ck_assert_uint_eq(is.len, was.len);
    ck_assert(memcmp(is.p, was.p, was.len) == 0);
    ck_assert_int_eq(file_size(ul_wpath("spool/alerts.spool.tmp")), -1);
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 2);
    wait_delivered(&h, 2);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "one\ntwo\n");
    buf_free(&was);
    buf_free(&is);
    buf_free(&out);
}
END_TEST

/* 50 alerts on a full disk: a line or two in the log, not 50; every one counted. */
START_TEST(test_disk_full_log_rate)
{
    struct harness h;
    int i;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "first");
    limit_file_size((rlim_t)file_size(spool_file()));
    for (i = 0; i < 50; i++) {
        submit(h.q, "full");
        queue_sync(h.q);
    }
    unlimit_file_size();
    ck_assert_uint_eq(queue_get_stats(h.q)->memory_only, 50);
    ck_assert_int_eq(log_count(LOG_ERR, "spool"), 1);
    ck_assert_int_eq(log_count(LOG_WARNING, "kept in memory only"), 1);
    harness_close(&h);
}
END_TEST

/*
 * No room for even the spool's header: the queue opens all the same, with
 * a warning, and keeps its alerts in memory until the spool can be
 * written; the spool left by the last run stays until then.  (Once,
 * queue_open failed, and corrald did not start.)
 */
START_TEST(test_disk_full_at_open)
{
    struct harness h;
    struct buf err = BUF_INIT;

    program("broken.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "old");
    harness_close(&h);

    harness_load(&h, NULL);
    limit_file_size(4);
    h.q = queue_open(&h.loop, &h.conf->executors[0], h.file, ul_wpath("spool"), &err);
    if (h.q) {
        submit(h.q, "new-1");
        submit(h.q, "new-2");
    }
    unlimit_file_size();
    ck_assert_msg(h.q != NULL, "%s", buf_str(&err));
    ck_assert_uint_eq(err.len, 0);
    ck_assert(log_has(LOG_ERR, "rewriting spool"));
    ck_assert(log_has(LOG_WARNING, "kept in memory only"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 1);
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 3);
    ck_assert_uint_eq(queue_get_stats(h.q)->memory_only, 2);
    ck_assert_uint_eq(queue_get_stats(h.q)->unspooled, 2);
    wait_spooled(&h);
    harness_close(&h);
    reopen_delivers("old\nnew-1\nnew-2\n");
    buf_free(&err);
}
END_TEST

/* ---- delivery control: retry and drop ---- */

static bool
dead_reached(void *arg)
{
    struct count_wait *w = arg;

    return queue_get_stats(w->q)->dead >= w->delivered;
}

static const char *
dead_file(void)
{
    return ul_wpath("spool/alerts.dead.jsonl");
}

/* The ids of the entries queue_list_json shows in state (alert ids in alert_ids, in order). */
static void
listed(struct queue *q, const char *state, struct buf *ids, struct buf *alert_ids)
{
    json_t *o = queue_list_json(q, 100), *e;
    const char *lists[] = {"queued", "dead"};
    size_t i, k;

    buf_reset(ids);
    buf_reset(alert_ids);
    for (k = 0; k < 2; k++) json_array_foreach(json_object_get(o, lists[k]), i, e)
        {
            if (strcmp(json_string_value(json_object_get(e, "state")), state) != 0) continue;
            buf_printf(ids, "%s\n", json_string_value(json_object_get(e, "id")));
            buf_printf(alert_ids, "%s\n", json_string_value(json_object_get(e, "alert_id")));
        }
    json_decref(o);
}

static size_t
count_lines(const char *path)
{
    struct buf b = BUF_INIT;
    size_t i, n = 0;

    read_file(path, &b);
    for (i = 0; i < b.len; i++) n += b.p[i] == '\n';
    buf_free(&b);
    return n;
}

/*
 * A retry whose dead-letter rewrite never happened (corrald killed between
 * the spool sync and the rename, simulated by putting the old file back):
 * the next start takes the dead letter out of the file and delivers it from
 * the spool, once; retrying its id again finds nothing.
 */
START_TEST(test_retry_crash_before_rename)
{
    struct harness h;
    struct buf before = BUF_INIT, out = BUF_INIT, said = BUF_INIT, ids = BUF_INIT,
               alerts = BUF_INIT;
    struct count_wait w;
    char first[64];

    program("broken.sh");
    must_open(&h, "attempts=\"1\"", ul_wpath("spool"));
    submit(h.q, "dead-1");
    submit(h.q, "dead-2");
    w = (struct count_wait){h.q, 2};
    ck_assert(ul_run_until(&h.loop, dead_reached, &w, 60));
    harness_close(&h);
    ck_assert_uint_eq(count_lines(dead_file()), 2);

    /* run 2: retry dead-1; it fails for now and stays queued (an hour's backoff) */
    must_open(&h, NULL, ul_wpath("spool"));
    listed(h.q, "dead", &ids, &alerts);
    ck_assert_str_eq(buf_str(&alerts), "dead-1\ndead-2\n");
    snprintf(first, sizeof(first), "%.*s", (int)(strchr(buf_str(&ids), '\n') - ids.p), ids.p);
    read_file(dead_file(), &before);
    ck_assert_int_eq(queue_retry_dead(h.q, first, &said), QUEUE_CTL_OK);
    ck_assert_msg(strstr(buf_str(&said), "1 dead letter queued again"), "%s", buf_str(&said));
    ck_assert_uint_eq(queue_get_stats(h.q)->retried, 1);
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 1);
    ck_assert_uint_eq(count_lines(dead_file()), 1);
    listed(h.q, "dead", &ids, &alerts);
    ck_assert_str_eq(buf_str(&alerts), "dead-2\n");
    /* the same id again: unknown, nothing changes */
    buf_reset(&said);
    ck_assert_int_eq(queue_retry_dead(h.q, first, &said), QUEUE_CTL_UNKNOWN);
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 1);
    queue_sync(h.q);
    write_bytes(dead_file(), before.p, before.len); /* the rename never happened */
    harness_close(&h);

    /* run 3: settled at start, delivered once */
    program("ok.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    ck_assert(log_has(LOG_WARNING, "1 retried dead letters were still in"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 1);
    ck_assert_uint_eq(count_lines(dead_file()), 1);
    listed(h.q, "dead", &ids, &alerts);
    ck_assert_str_eq(buf_str(&alerts), "dead-2\n");
    wait_delivered(&h, 1);
    buf_reset(&said);
    ck_assert_int_eq(queue_retry_dead(h.q, first, &said), QUEUE_CTL_UNKNOWN);
    ck_assert_msg(strstr(buf_str(&said), "no dead letter alerts/"), "%s", buf_str(&said));
    /* all the rest */
    buf_reset(&said);
    ck_assert_int_eq(queue_retry_dead(h.q, NULL, &said), QUEUE_CTL_OK);
    wait_delivered(&h, 2);
    ck_assert_uint_eq(count_lines(dead_file()), 0);
    buf_reset(&said);
    ck_assert_int_eq(queue_retry_dead(h.q, NULL, &said), QUEUE_CTL_OK);
    ck_assert_msg(strstr(buf_str(&said), "no dead letters to retry"), "%s", buf_str(&said));
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "dead-1\ndead-2\n");

    /* run 4: nothing comes back */
    must_open(&h, NULL, ul_wpath("spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 0);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &out);
    ck_assert_str_eq(buf_str(&out), "dead-1\ndead-2\n");
    buf_free(&before);
    buf_free(&out);
    buf_free(&said);
    buf_free(&ids);
    buf_free(&alerts);
}
END_TEST

/* A queued alert and a dead letter dropped: gone, counted, logged; unknown ids change nothing. */
START_TEST(test_drop)
{
    struct harness h;
    struct buf said = BUF_INIT, ids = BUF_INIT, alerts = BUF_INIT, before = BUF_INIT,
               after = BUF_INIT;
    struct count_wait w;
    char id[64];

    program("broken.sh");
    must_open(&h, "attempts=\"1\"", ul_wpath("spool"));
    submit(h.q, "dead-1");
    w = (struct count_wait){h.q, 1};
    ck_assert(ul_run_until(&h.loop, dead_reached, &w, 60));
    harness_close(&h);

    must_open(&h, NULL, ul_wpath("spool"));
    submit(h.q, "held-1");
    submit(h.q, "held-2");
    listed(h.q, "retrying", &ids, &alerts);
    ck_assert_str_eq(buf_str(&alerts), "held-1\nheld-2\n");
    read_file(dead_file(), &before);
    ck_assert_int_eq(queue_drop(h.q, "q999", &said), QUEUE_CTL_UNKNOWN);
    ck_assert_int_eq(queue_drop(h.q, "qx", &said), QUEUE_CTL_UNKNOWN);
    ck_assert_int_eq(queue_drop(h.q, "d1-1", &said), QUEUE_CTL_UNKNOWN);
    read_file(dead_file(), &after);
    ck_assert(before.len == after.len && memcmp(before.p, after.p, before.len) == 0);
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 2);
    snprintf(id, sizeof(id), "%.*s", (int)(strchr(buf_str(&ids), '\n') - ids.p), ids.p);
    ck_assert_int_eq(queue_drop(h.q, id, &said), QUEUE_CTL_OK);
    ck_assert_uint_eq(queue_get_stats(h.q)->queued, 1);
    ck_assert_uint_eq(queue_get_stats(h.q)->dropped, 1);
    ck_assert(log_has(LOG_WARNING, "(held-1) dropped"));
    listed(h.q, "dead", &ids, &alerts);
    ck_assert_str_eq(buf_str(&alerts), "dead-1\n");
    snprintf(id, sizeof(id), "%.*s", (int)(strchr(buf_str(&ids), '\n') - ids.p), ids.p);
    ck_assert_int_eq(queue_drop(h.q, id, &said), QUEUE_CTL_OK);
    ck_assert_uint_eq(queue_get_stats(h.q)->dropped, 2);
    ck_assert(log_has(LOG_WARNING, "(dead-1) dropped"));
    ck_assert_uint_eq(count_lines(dead_file()), 0);
    queue_sync(h.q);
    harness_close(&h);

    /* the dropped alert does not come back; the other does */
    program("ok.sh");
    must_open(&h, NULL, ul_wpath("spool"));
    ck_assert_uint_eq(queue_get_stats(h.q)->recovered, 1);
    wait_delivered(&h, 1);
    harness_close(&h);
    read_file(ul_wpath("prog.out"), &said);
    ck_assert_str_eq(buf_str(&said), "held-2\n");
    buf_free(&said);
    buf_free(&ids);
    buf_free(&alerts);
    buf_free(&before);
    buf_free(&after);
}
END_TEST

static Suite *
queue_suite(void)
{
    Suite *s = suite_create("queue");
    TCase *tc = tcase_create("spool");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_replay_pending_only);
    tcase_add_test(tc, test_no_spool);
    tcase_add_test(tc, test_handover_no_spool);
    tcase_add_test(tc, test_handover_same_spool);
    tcase_add_test(tc, test_full_keep);
    tcase_add_test(tc, test_torn_every_byte);
    tcase_add_test(tc, test_bad_crc);
    tcase_add_test(tc, test_not_a_spool);
    tcase_add_loop_test(tc, test_corrupt_every_byte, 0, CORRUPT_SLICES);
    tcase_add_test(tc, test_scan);
    tcase_add_test(tc, test_version_1);
    tcase_add_test(tc, test_compaction_at_start);
    tcase_add_test(tc, test_compaction_while_running);
    tcase_add_test(tc, test_compaction_by_bytes);
    tcase_add_test(tc, test_catch_up_writes_owed_done);
    tcase_add_test(tc, test_dedupe_bounded);
    tcase_add_test(tc, test_dedupe_window);
    tcase_add_test(tc, test_disk_full_logged_and_delivered);
    tcase_add_test(tc, test_disk_full_then_room);
    tcase_add_test(tc, test_write_error_in_the_middle);
    tcase_add_test(tc, test_disk_full_log_rate);
    tcase_add_test(tc, test_sync_fails);
    tcase_add_test(tc, test_short_write);
    tcase_add_test(tc, test_rename_fails_at_open);
    tcase_add_test(tc, test_disk_full_at_open);
    tcase_add_test(tc, test_retry_crash_before_rename);
    tcase_add_test(tc, test_drop);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(queue_suite());
}
