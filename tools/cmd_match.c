/*
 * corral match: classifies one message (-P/-M) or every line of a syslog
 * file (-f), printing what the rules extracted.  Output is pdbtool's
 * NAME=value form by default, one JSON object a message with --json (a
 * stable contract, see json.h), or a template with -T.  A file is replayed
 * on -j threads by the parallel pipeline (engine/pipeline.h), with the
 * output of one thread; -j 1 (and --dry-run, whose executors render on one
 * thread) runs corr directly.  --snmptrapd replays a file of SNMP traps in
 * snmptrapd's output (the -F format of corral(1)), each converted to the
 * line the daemon's snmp-trap input makes of it (agent/input/snmptrap_fmt.h).
 */
#include "tools/cmd.h"
#include "agent/conf/conf.h"
#include "engine/civil.h"
#include "engine/clock.h"
#include "engine/corr.h"
#include "engine/durable.h"
#include "actions/queue.h"
#include "agent/alerting/route.h"
#include "agent/input/snmptrap_fmt.h"
#include "engine/json.h"
#include "engine/par.h"
#include "engine/pipeline.h"
#include "engine/syslogfmt.h"
#include "engine/template.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum format { FMT_PAIRS, FMT_JSON, FMT_TEMPLATE };

/* --dry-run: the executors of a configuration, rendering instead of sending. */
struct dryrun {
    uv_loop_t loop;
    const struct conf *conf; /* the matcher's */
    struct queue **queues;
    const char **names;
    size_t n;
    struct route_table *routes;
};

struct matcher {
    struct pdb *db;
    struct corr *corr;
    struct conf *conf; /* -c: its rules (without -r) and correlation limits */
    struct dryrun *dry;
    FILE *traps;       /* --snmptrapd: the file converted (convert_traps), read instead */
    bool failed;       /* writing output failed */
    int64_t fixed_now; /* --now, in ms; 0: the real clock */
    uint64_t line_ms;  /* the receive time of the message in hand, in ms; 0: none */
    enum format format;
    struct template *tpl;
    struct buf out;
    FILE *fp;
    unsigned jobs;   /* -j */
    unsigned shards; /* -j: the correlation shards (--stats says how many) */
    size_t max_line; /* max-message-size: -c's, or corrald's default */
};

/*
 * The lines of a file, each at most max bytes, as corrald's inputs take a
 * message: a longer one is cut to max bytes (and counted), the rest of it
 * read and dropped, so that a file without newlines (/dev/zero) costs a
 * buffer of max bytes and no more.  Read in blocks; a line points into the
 * buffer and is good until the next call.
 */
struct lines {
    FILE *in;
    char *buf;
    size_t cap, pos, len, max;
    bool eof, skipping; /* skipping: the rest of a line already cut */
    int err;            /* errno of a failed read */
    uint64_t truncated; /* lines cut */
};

static void
lines_init(struct lines *l, FILE *in, size_t max)
{
    memset(l, 0, sizeof(*l));
    l->in = in;
    l->max = max;
    l->cap = max + 65536; /* room for a whole line and a block after it */
    l->buf = xmalloc(l->cap);
}

/* The next line, without its newline, into *line; its length, or -1 at the end (or an error). */
static ssize_t
lines_next(struct lines *l, const char **line)
{
    for (;;) {
        char *start = l->buf + l->pos;
        size_t avail = l->len - l->pos, n;
        char *nl = avail ? memchr(start, '\n', avail) : NULL;
        ssize_t got;

        if (l->skipping) {
            l->pos = nl ? (size_t)(nl - l->buf) + 1 : l->len;
            l->skipping = !nl;
            if (nl) continue;
        } else if (nl || avail > l->max || (l->eof && avail)) {
            n = nl ? (size_t)(nl - start) : avail;
            *line = start;
            if (nl)
                l->pos += n + 1;
            else if (l->eof)
                l->pos = l->len;
            else {
                l->pos = l->len; /* no newline within max + 1 bytes: drop up to the next one */
                l->skipping = true;
            }
            if (n > l->max) {
                l->truncated++;
                n = l->max;
            }
            return (ssize_t)n;
        }
        if (l->eof) return -1;
        /* what is left of the buffer to its start, then a block after it */
        memmove(l->buf, l->buf + l->pos, l->len - l->pos);
        l->len -= l->pos;
        l->pos = 0;
        /* read(), not fread(): from a pipe (tail -f | corral match -f -) a line goes on when it
         * has come, not once a block has */
        do got = read(fileno(l->in), l->buf + l->len, l->cap - l->len);
        while (got < 0 && errno == EINTR);
        if (got <= 0) {
            l->eof = true;
            l->err = got < 0 ? errno : 0;
        } else {
            l->len += (size_t)got;
        }
    }
}

/* Says how many lines were cut, once the file is read. */
static void
lines_end(struct lines *l, const char *path)
{
    if (l->truncated)
        fprintf(stderr,
                "corral match: %s: %llu line%s longer than %zu bytes (max-message-size) cut to "
                "it, as corrald's inputs cut them\n",
                path, (unsigned long long)l->truncated, l->truncated == 1 ? "" : "s", l->max);
    free(l->buf);
}

/* C escapes in a -T template, as pdbtool's g_strcompress() does them. */
static char *
unescape(const char *s)
{
    struct buf b = BUF_INIT;

    for (; *s; s++) {
        if (*s != '\\' || !s[1]) {
            buf_putc(&b, *s);
            continue;
        }
        s++;
        switch (*s) {
        case 'n': buf_putc(&b, '\n'); break;
        case 't': buf_putc(&b, '\t'); break;
        case 'r': buf_putc(&b, '\r'); break;
        case 'b': buf_putc(&b, '\b'); break;
        case 'f': buf_putc(&b, '\f'); break;
        case 'v': buf_putc(&b, '\v'); break;
        default: buf_putc(&b, *s); break;
        }
    }
    buf_reserve(&b, 0);
    return b.p;
}

static void
print_pairs(const struct msg *m, struct buf *out)
{
    size_t i, n = msg_nvalues(m), len;

    for (i = 0; i < n; i++) {
        const char *val, *name;
        size_t vlen;
        nv_handle h = msg_value_at(m, i, &val, &vlen);
        name = nv_name(h, &len);
        buf_append(out, name, len);
        buf_putc(out, '=');
        buf_append(out, val, vlen);
        buf_putc(out, '\n');
    }
    buf_puts(out, "TAGS=");
    for (i = 0; i < msg_ntags(m); i++) {
        const char *t = tag_name(msg_tag_at(m, i), &len);
        if (i) buf_putc(out, ',');
        buf_append(out, t, len);
    }
    buf_puts(out, "\n\n");
}

static int
flush(struct matcher *mt, bool force)
{
    if (mt->out.len && (force || mt->out.len >= 65536)) {
        if (fwrite(mt->out.p, 1, mt->out.len, mt->fp) != mt->out.len) return -1;
        buf_reset(&mt->out);
    }
    return 0;
}

/* Renders m into out; reads only what stays constant while a replay runs (pipeline.h). */
static void
render(const struct matcher *mt, struct msg *m, struct buf *out)
{
    struct template_env env;

    switch (mt->format) {
    case FMT_PAIRS: print_pairs(m, out); break;
    case FMT_JSON:
        json_format_msg(m, out);
        buf_putc(out, '\n');
        break;
    case FMT_TEMPLATE:
        template_env_single(&env, &m);
        template_eval(mt->tpl, &env, out);
        break;
    }
}

static int
emit(struct matcher *mt, struct msg *m)
{
    render(mt, m, &mt->out);
    return flush(mt, false);
}

struct render {
    struct matcher *mt;
    const struct msg *m;
};

static void
render_to(size_t index, void *arg)
{
    struct render *r = arg;
    struct dryrun *d = r->mt->dry;

    buf_printf(&r->mt->out, "--- would send through executor %s (%s):\n", d->names[index],
               d->conf->executors[index].kind);
    queue_render(d->queues[index], r->m, &r->mt->out);
    buf_puts(&r->mt->out, "---\n");
}

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action)
{
    struct matcher *mt = arg;
    struct render r = {mt, m};

    (void)kind;
    if (!mt->failed && emit(mt, m) < 0) mt->failed = true;
    if (mt->dry && !mt->failed) {
        /* what corrald's executors would get: the generating rule's id, class and program */
        struct msg *alert = pdb_action_alert(action, m);
        if (alert) r.m = alert;
        route_message(mt->dry->routes, r.m, action, render_to, &r);
        if (alert) msg_unref(alert);
    }
}

/* Closes what dryrun_open opened, also when it failed half way. */
static void
dryrun_close(struct dryrun *d)
{
    size_t i;

    if (!d) return;
    for (i = 0; i < d->n; i++) queue_close(d->queues[i], NULL, NULL);
    uv_run(&d->loop, UV_RUN_DEFAULT);
    uv_loop_close(&d->loop);
    route_free(d->routes);
    free(d->queues);
    free(d->names);
    free(d);
}

/* Opens the executors and routes of a corrald configuration without sending anything. */
static struct dryrun *
dryrun_open(const struct conf *conf, const char *config)
{
    struct dryrun *d = xcalloc(1, sizeof(*d));
    struct buf err = BUF_INIT;
    size_t i;

    uv_loop_init(&d->loop);
    d->conf = conf;
    d->queues = xcalloc(d->conf->nexecutors + 1, sizeof(*d->queues));
    d->names = xcalloc(d->conf->nexecutors + 1, sizeof(*d->names));
    for (i = 0; i < d->conf->nexecutors; i++) {
        d->names[i] = d->conf->executors[i].name;
        d->queues[i] = queue_open(&d->loop, &d->conf->executors[i], config, NULL, &err);
        if (!d->queues[i]) goto fail;
        d->n++;
    }
    d->routes = route_new(d->conf, d->names, d->conf->nexecutors, &err);
    if (!d->routes) goto fail;
    buf_free(&err);
    return d;
fail:
    fputs(buf_str(&err), stderr);
    buf_free(&err);
    dryrun_close(d);
    return NULL;
}

static void
on_log(void *arg, const char *text)
{
    (void)arg;
    fprintf(stderr, "corral match: %s\n", text);
}

static uint64_t
fixed_clock(void *arg)
{
    return (uint64_t)((struct matcher *)arg)->fixed_now;
}

/* The correlation clock of a replay on one thread: the time the message in hand was read. */
static uint64_t
line_clock(void *arg)
{
    const struct matcher *mt = arg;

    return mt->line_ms ? mt->line_ms : clock_wall_ms();
}

/*
 * -j N: the same replay on the parallel pipeline (engine/pipeline.h), which
 * renders on its threads; the lines go in batches of REPLAY_BATCH through a
 * ring of REPLAY_RING and the output of the batches every shard is done
 * with is written in order, with writev() from where the threads rendered
 * it, a batch at a time: copying it first would cost this thread, which
 * shares the CPUs with the workers, a pass over every output byte.  The
 * replay waits only when the ring is full, and then until half of it is
 * done: a sleep and a wake-up every REPLAY_RING / 2 batches, not every
 * batch, while the busiest shard sets the pace (doc/parallel.md).
 */
#define REPLAY_BATCH 256
#define REPLAY_RING  8

struct replay {
    struct matcher *mt;
    struct pipeline *pl;
    int fd;            /* mt->fp's */
    struct iovec *iov; /* the output collected and not written yet */
    size_t niov, capiov;
    bool failed; /* writing failed: the rest is not written */
};

/* Writes what replay_write gathered. */
static void
replay_flush(struct replay *r)
{
    size_t n = r->niov;

    r->niov = 0;
    if (n && !r->failed && durable_writev_all(r->fd, r->iov, n) < 0) {
        cmd_error("match", "writing output: %s", strerror(errno));
        r->failed = true;
    }
}

static int
replay_write(void *arg, const struct pipeline_out *o)
{
    struct replay *r = arg;
    struct iovec *last = r->niov ? &r->iov[r->niov - 1] : NULL;

    if (r->failed) return 1;
    /* a shard's records follow each other in its text */
    if (last && (const char *)last->iov_base + last->iov_len == o->text) {
        last->iov_len += o->len;
    } else {
        r->iov = xgrow(r->iov, &r->capiov, r->niov + 1, sizeof(*r->iov));
        r->iov[r->niov].iov_base = (void *)o->text;
        r->iov[r->niov++].iov_len = o->len;
    }
    /* the batch's text is reused once this returns */
    if (o->batch_end) replay_flush(r);
    return r->failed;
}

/* Writes the batches done; first waits until the batches before upto are. */
static void
replay_collect(struct replay *r, uint64_t upto)
{
    if (pipeline_collected(r->pl) < upto) pipeline_wait(r->pl, upto);
    (void)pipeline_collect(r->pl, replay_write, r);
}

static void
replay_submit(struct replay *r, unsigned flags)
{
    const struct matcher *mt = r->mt;

    if (!pipeline_can_submit(r->pl))
        replay_collect(r, pipeline_submitted(r->pl) + 2 - REPLAY_RING / 2);
    (void)pipeline_submit(r->pl, mt->fixed_now > 0 ? (uint64_t)mt->fixed_now : clock_wall_ms(),
                          flags);
    replay_collect(r, 0);
}

/* Every line handed over written; with expire, after every pending timeout (corr_expire_all). */
static void
replay_finish(struct replay *r, bool expire)
{
    if (pipeline_filling(r->pl)) replay_submit(r, 0);
    replay_collect(r, pipeline_submitted(r->pl));
    if (expire && !r->failed) {
        replay_submit(r, PIPELINE_EXPIRE);
        replay_collect(r, pipeline_submitted(r->pl));
    }
}

static void
replay_render(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action,
              struct buf *out)
{
    (void)kind;
    (void)action;
    render(arg, m, out);
}

/*
 * glibc gives each thread a heap of its own (an arena of at most 64 MiB, reserved whole) and
 * makes it writable one page at a time as it grows, unless a top pad asks for more: the shards'
 * contexts then cost an mprotect() a page, about 27,000 calls and 0.05 to 0.08 s of system time
 * on the bench/parallel.py corpus, where one thread's heap grows by brk() 128 KiB at a time.
 * With a top pad of a whole heap, each is writable at once (the pages still come as they are
 * touched); a replay ends soon, so what the pad keeps from being given back does not matter.
 * It is set before the rules load: the threads that build their trees leave their heaps to the
 * workers started after them, and a heap is padded when it is made.
 */
static void
pad_thread_heaps(void)
{
    (void)mallopt(M_TOP_PAD, 64 << 20);
}

static int
match_file_par(struct matcher *mt, FILE *in, const char *path, bool keep_open,
               struct corr_stats *stats)
{
    struct pipeline_opts po;
    struct msg_time now;
    struct replay r = {mt, NULL, -1, NULL, 0, 0, false};
    struct lines lines;
    const char *line;
    ssize_t n;
    int rc = 0;

    memset(&po, 0, sizeof(po));
    po.threads = mt->jobs;
    po.batch = REPLAY_BATCH;
    po.nbatches = REPLAY_RING;
    /* each shard gets the limits one thread has (corr's defaults, or -c's): the output is then
     * that of -j 1 unless -j 1 reaches a limit (see -j in corral(1)) */
    if (mt->conf) conf_corr_limits(mt->conf, &po.corr);
    po.corr.log = on_log;
    po.corr.clock = NULL; /* each batch carries its clock */
    if (mt->fixed_now > 0) {
        now.sec = mt->fixed_now / 1000;
        now.usec = (int32_t)(mt->fixed_now % 1000) * 1000;
        now.gmtoff = 0;
        po.parse.now = &now;
    }
    po.render = replay_render;
    po.arg = mt;
    r.pl = pipeline_new(mt->db, &po);
    if (!r.pl) {
        cmd_error("match", "cannot start %u threads", mt->jobs);
        return 1;
    }
    mt->shards = pipeline_nshards(r.pl);
    /* what is buffered goes first */
    if (flush(mt, true) != 0 || fflush(mt->fp) != 0) r.failed = true;
    r.fd = fileno(mt->fp);
    lines_init(&lines, in, mt->max_line);
    while ((n = lines_next(&lines, &line)) >= 0) {
        if (r.failed) break;
        if (pipeline_add(r.pl, line, (size_t)n, NULL, 0, NULL, 0, false) == REPLAY_BATCH)
            replay_submit(&r, 0);
    }
    lines_end(&lines, path);
    if (lines.err) {
        cmd_error("match", "%s: %s", path, strerror(lines.err));
        rc = 1;
    }
    /* the counters as -j 1 prints them: before the final expiry */
    replay_finish(&r, false);
    pipeline_stats(r.pl, stats);
    if (!keep_open) replay_finish(&r, true);
    if (r.failed) mt->failed = true;
    /* the threads finish what was handed over */
    pipeline_free(r.pl);
    free(r.iov);
    return rc;
}

/*
 * The records of snmptrapd's output in path, as the snmp-trap input's
 * lines, in a temporary file: read by match_file like a syslog file.  A
 * record that does not read is reported at path:line and skipped (*bad).
 */
static FILE *
convert_traps(const char *path, const char *mibs, bool *bad)
{
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r"), *out;
    struct buf err = BUF_INIT, line = BUF_INIT;
    char *rec = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;

    if (!in) {
        cmd_error("match", "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (snmptrap_fmt_init(mibs, &err) < 0 || !(out = tmpfile())) {
        cmd_error("match", "%s", err.len ? buf_str(&err) : strerror(errno));
        buf_free(&err);
        if (in != stdin) fclose(in);
        return NULL;
    }
    while ((n = getline(&rec, &cap, in)) >= 0) {
        const char *host = NULL, *source = NULL;
        netsnmp_pdu *pdu;
        lineno++;
        while (n > 0 && (rec[n - 1] == '\n' || rec[n - 1] == '\r')) rec[--n] = '\0';
        /* snmptrapd's own lines in the same log ("NET-SNMP version ..."): not traps */
        if (n == 0 || !strchr(rec, '\t')) continue;
        buf_reset(&err);
        if (!(pdu = snmptrap_fmt_parse_record(rec, &host, &source, &err))) {
            fprintf(stderr, "%s:%zu: %s\n", path, lineno, buf_str(&err));
            *bad = true;
            continue;
        }
        {
            struct snmptrap_origin o = {host && *host ? host : "-", source, 16 * 8 + 5};
            buf_reset(&line);
            snmptrap_fmt_line(&line, pdu, &o);
            buf_putc(&line, '\n');
            fwrite(line.p, 1, line.len, out);
        }
        snmp_free_pdu(pdu);
    }
    free(rec);
    buf_free(&err);
    buf_free(&line);
    if (in != stdin) fclose(in);
    rewind(out);
    return out;
}

static int
match_file(struct matcher *mt, const char *path, bool keep_open, struct corr_stats *stats)
{
    FILE *in = mt->traps ? mt->traps : strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    struct msg *m = msg_new();
    struct msg_time now;
    struct syslogfmt_opts opts = {NULL};
    struct lines lines;
    const char *line;
    ssize_t n;
    int rc = 0;

    if (!in) {
        cmd_error("match", "%s: %s", path, strerror(errno));
        msg_unref(m);
        return 1;
    }
    if (mt->jobs > 1) {
        msg_unref(m);
        rc = match_file_par(mt, in, path, keep_open, stats);
        if (in != stdin) fclose(in);
        return rc;
    }
    if (mt->fixed_now) {
        now.sec = mt->fixed_now / 1000;
        now.usec = (int32_t)(mt->fixed_now % 1000) * 1000;
        now.gmtoff = 0;
        opts.now = &now;
    }
    lines_init(&lines, in, mt->max_line);
    while (!mt->failed && (n = lines_next(&lines, &line)) >= 0) {
        if (!mt->fixed_now) {
            /* one clock read a message, for its receive time and the correlation clock */
            syslogfmt_now(&now);
            mt->line_ms = (uint64_t)now.sec * 1000 + (uint64_t)now.usec / 1000;
            opts.now = &now;
        }
        syslogfmt_parse(m, line, (size_t)n, &opts);
        corr_process(mt->corr, m);
    }
    mt->line_ms = 0;
    lines_end(&lines, path);
    if (lines.err) {
        cmd_error("match", "%s: %s", path, strerror(lines.err));
        rc = 1;
    }
    msg_unref(m);
    if (in != stdin) fclose(in);
    corr_stats(mt->corr, stats);
    if (!keep_open) corr_expire_all(mt->corr);
    return rc;
}

/* The time of the single message (-M): --now, or the wall clock in the local zone. */
static struct msg_time
single_message_time(const struct matcher *mt)
{
    uint64_t ms = mt->fixed_now ? (uint64_t)mt->fixed_now : clock_wall_ms();
    struct msg_time t = {(int64_t)(ms / 1000), 0, 0}; /* whole seconds, as a syslog header has */
    time_t sec = (time_t)t.sec;
    struct tm tm;

    if (!mt->fixed_now && localtime_r(&sec, &tm)) t.gmtoff = (int32_t)tm.tm_gmtoff;
    return t;
}

/*
 * --now: seconds since the epoch or an ISO 8601 time (civil.h), in ms; -1 when malformed or not
 * from 1 s to 9999-12-31T23:59:59Z (whose milliseconds fit any clock here).
 */
static int64_t
parse_now(const char *s)
{
    int64_t ms;

    if (civil_parse_time(s, &ms) < 0) return -1;
    return ms >= 1000 && ms / 1000 <= CIVIL_MAX_SEC ? ms : -1;
}

static void
usage(FILE *out)
{
    fputs("usage: corral match -r RULES [-r RULES...] -P PROGRAM -M MESSAGE [options]\n"
          "       corral match -r RULES [-r RULES...] -f LOG [options]\n"
          "\n"
          "  -r, --rules PATH       rule file or directory (repeatable)\n"
          "      --sigma PATH       Sigma rule file or directory, run beside the rules\n"
          "      --sigma-mapping FILE  its logsource and field mapping (default: the shipped one)\n"
          "  -P, --program NAME     program of the single message\n"
          "  -M, --message TEXT     text of the single message\n"
          "  -f, --file LOG         classify every line of a syslog file ('-': stdin)\n"
          "      --snmptrapd        the file (-f) holds SNMP traps as snmptrapd writes them\n"
          "                         with the -F format of corral(1), converted as corrald's\n"
          "                         snmp-trap input converts traps\n"
          "      --mibs DIRS        MIB directories for --snmptrapd (colon separated;\n"
          "                         default: the system's)\n"
          "  -j, --jobs N           replay the file on N threads, with the output of one\n"
          "                         (default: the number of processors; 1: one thread)\n"
          "      --json             one JSON object a message\n"
          "  -T, --template TPL     print a template for each message (\\n etc. allowed)\n"
          "      --keep-open        leave open contexts open at the end of the file (by\n"
          "                         default they expire, firing their timeout actions)\n"
          "  -c, --config FILE      a corrald configuration: its rules (unless -r is\n"
          "                         given) and correlation limits; with --dry-run, its\n"
          "                         executors and routes too\n"
          "      --dry-run          show, per executor, exactly what each generated message\n"
          "                         would send (trap varbinds, mail, script argv and\n"
          "                         environment), without sending anything (needs -c)\n"
          "      --stats            print counters and memory per open context to stderr\n"
          "      --now TIME         take TIME (epoch seconds or 2026-12-03T10:00:00Z) as the\n"
          "                         current time: year guessing and the clamp on message\n"
          "                         times then give the same result on every run\n",
          out);
}

int
cmd_match(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"rules", required_argument, NULL, 'r'},    {"program", required_argument, NULL, 'P'},
        {"message", required_argument, NULL, 'M'},  {"file", required_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'J'},           {"jobs", required_argument, NULL, 'j'},
        {"template", required_argument, NULL, 'T'}, {"keep-open", no_argument, NULL, 'k'},
        {"now", required_argument, NULL, 'n'},      {"config", required_argument, NULL, 'c'},
        {"dry-run", no_argument, NULL, 'd'},        {"stats", no_argument, NULL, 's'},
        {"snmptrapd", no_argument, NULL, 'S'},      {"mibs", required_argument, NULL, 'm'},
        {"sigma", required_argument, NULL, 'G'},    {"sigma-mapping", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    char **rules = xcalloc((size_t)argc, sizeof(char *));
    const char *sigma = NULL, *sigma_mapping = NULL;
    const char *program = NULL, *message = NULL, *file = NULL, *template_src = NULL;
    struct matcher mt = {.format = FMT_PAIRS, .fp = stdout};
    int nrules = 0, c, rc = 0;
    bool keep_open = false, dry_run = false, stats = false, snmptrapd = false, bad_traps = false;
    const char *mibs = NULL;
    const char *config = NULL;
    struct corr_opts copts = {0};
    struct corr_stats cs = {0};
    char *end;
    long jobs;

    mt.jobs = par_default_threads();

    while ((c = getopt_long(argc, argv, "r:P:M:f:T:c:j:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': rules[nrules++] = optarg; break;
        case 'P': program = optarg; break;
        case 'M': message = optarg; break;
        case 'f': file = optarg; break;
        case 'J': mt.format = FMT_JSON; break;
        case 'j':
            jobs = strtol(optarg, &end, 10);
            if (*end || end == optarg || jobs < 1 || jobs > 64) {
                cmd_error("match", "bad -j '%s' (1 to 64 threads)", optarg);
                free(rules);
                return 2;
            }
            mt.jobs = (unsigned)jobs;
            break;
        case 'T':
            template_src = optarg;
            mt.format = FMT_TEMPLATE;
            break;
        case 'k': keep_open = true; break;
        case 'S': snmptrapd = true; break;
        case 'm': mibs = optarg; break;
        case 'G': sigma = optarg; break;
        case 'g': sigma_mapping = optarg; break;
        case 'c': config = optarg; break;
        case 'd': dry_run = true; break;
        case 's': stats = true; break;
        case 'n':
            mt.fixed_now = parse_now(optarg);
            if (mt.fixed_now <= 0) {
                cmd_error("match",
                          "bad --now '%s' (epoch seconds from 1 to %lld, or an ISO 8601 time from "
                          "1970-01-01T00:00:01Z to 9999-12-31T23:59:59Z)",
                          optarg, CIVIL_MAX_SEC);
                free(rules);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            free(rules);
            return 0;
        default: free(rules); return 2;
        }
    }
    if (dry_run && !config) {
        cmd_error("match", "--dry-run needs --config");
        free(rules);
        return 2;
    }
    if (config) {
        struct buf err = BUF_INIT;
        /* NULL: the built-in schema */
        mt.conf = conf_load(config, getenv("CORRAL_SCHEMA"), &err);
        if (!mt.conf) {
            fputs(buf_str(&err), stderr);
            buf_free(&err);
            free(rules);
            return 1;
        }
        buf_free(&err);
        if (dry_run) {
            mt.jobs = 1; /* the executors render on one thread */
            mt.dry = dryrun_open(mt.conf, config);
            if (!mt.dry) {
                conf_free(mt.conf);
                free(rules);
                return 1;
            }
        }
        if (nrules == 0) {
            size_t i;
            for (i = 0; i < mt.conf->nrules && (int)i < argc; i++)
                rules[nrules++] = mt.conf->rules[i];
        }
        if (!sigma && mt.conf->nsigma) {
            sigma = mt.conf->sigma[0].rules;
            sigma_mapping = mt.conf->sigma[0].mapping;
        }
    }
    if ((nrules == 0 && !sigma) || (!file && !message) || (file && (message || program)) ||
        (snmptrapd && !file)) {
        usage(stderr);
        free(rules);
        dryrun_close(mt.dry);
        conf_free(mt.conf);
        return 2;
    }
    if (template_src) {
        struct buf err = BUF_INIT;
        char *src = unescape(template_src);
        mt.tpl = template_compile_str(src, &err);
        free(src);
        if (!mt.tpl) {
            cmd_error("match", "bad template: %s", buf_str(&err));
            buf_free(&err);
            free(rules);
            dryrun_close(mt.dry);
            conf_free(mt.conf);
            return 2;
        }
        buf_free(&err);
    }
    mt.max_line = mt.conf && mt.conf->max_message_size ? mt.conf->max_message_size
                                                       : CONF_MESSAGE_SIZE_DEFAULT;
    /* -j N builds the rule trees on N threads too */
    if (mt.jobs > 1) pad_thread_heaps();
    mt.db = cmd_load_rules(rules, nrules, false, mt.jobs);
    if (mt.db && sigma && cmd_load_sigma(mt.db, sigma, sigma_mapping) < 0) {
        pdb_free(mt.db);
        mt.db = NULL;
    }
    if (mt.db && pdb_nrules(mt.db) == 0 && nrules) {
        /* nothing would match: a wrong path, not a result */
        int i;
        fputs("corral match: no rules in", stderr);
        for (i = 0; i < nrules; i++) fprintf(stderr, " %s", rules[i]);
        fputs(" (no rule file, *.xml or *.pdb, with a rule)\n", stderr);
        pdb_free(mt.db);
        mt.db = NULL;
    }
    free(rules);
    if (!mt.db) {
        template_free(mt.tpl);
        dryrun_close(mt.dry);
        conf_free(mt.conf);
        return 1;
    }

    copts.emit = on_emit;
    copts.log = on_log;
    copts.clock = mt.fixed_now ? fixed_clock : line_clock;
    copts.arg = &mt;
    if (mt.conf) {
        /* corrald's limits (one worker's: workers="N" divides the totals among the shards) */
        conf_corr_limits(mt.conf, &copts);
    }
    /* with -j N a file goes through the pipeline, whose shards are engines of their own */
    if (!file || mt.jobs <= 1) mt.corr = corr_new(mt.db, &copts);
    if (file && snmptrapd && !(mt.traps = convert_traps(file, mibs, &bad_traps))) {
        rc = 1;
    } else if (file) {
        rc = match_file(&mt, file, keep_open, &cs);
        if (bad_traps) rc = 1;
    } else {
        struct msg *m = msg_new();
        struct msg_time t = single_message_time(&mt);
        /* dated now, as pdbtool does: a timeout it starts is then dated now too, not 1970 */
        msg_set_stamp(m, &t);
        msg_set_recvd(m, &t);
        msg_set(m, NV_MESSAGE, message, strlen(message));
        if (program && program[0]) msg_set(m, NV_PROGRAM, program, strlen(program));
        corr_process(mt.corr, m);
        msg_unref(m);
        corr_stats(mt.corr, &cs);
        if (!keep_open) corr_expire_all(mt.corr);
    }
    if (stats) {
        fprintf(stderr,
                "corral match: %llu messages, %llu matched, %llu unknown, %llu generated; "
                "%llu contexts created, %llu open holding %llu bytes (%llu bytes each)\n",
                (unsigned long long)cs.processed, (unsigned long long)cs.matched,
                (unsigned long long)cs.unknown, (unsigned long long)cs.generated,
                (unsigned long long)cs.contexts_created, (unsigned long long)cs.contexts_open,
                (unsigned long long)cs.context_bytes,
                (unsigned long long)(cs.contexts_open ? cs.context_bytes / cs.contexts_open : 0));
        if (mt.shards)
            fprintf(stderr, "corral match: %u threads, correlation in %u shards\n", mt.jobs,
                    mt.shards);
    }
    corr_free(mt.corr);
    if (mt.failed) rc = 1;
    if (flush(&mt, true) < 0) rc = 1;
    dryrun_close(mt.dry);
    conf_free(mt.conf);
    if (flush(&mt, true) < 0 || fflush(stdout) != 0) {
        cmd_error("match", "writing output: %s", strerror(errno));
        rc = 1;
    }
    buf_free(&mt.out);
    template_free(mt.tpl);
    pdb_free(mt.db);
    return rc;
}
