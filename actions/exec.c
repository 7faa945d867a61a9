/*
 * exec: the exec executor.  Runs a configured program once per alert,
 *
 *   <exec name="block" program="/usr/share/corral/scripts/nft-block.sh"
 *         timeout="30s" kill-after="5s" max-children="4" stdin="none"
 *         fail-on-exit="yes" cwd="/" env-pass="PATH,LANG,TZ">
 *     <arg>--timeout</arg><arg>1h</arg>
 *     <arg>--</arg><arg>${usracct.device}</arg>
 *   </exec>
 *
 * with uv_spawn: the program gets argv[0] = program and one argv element per
 * <arg> (its template's expansion, exactly, spaces and all), never a shell,
 * so nothing in a message is ever interpreted.  program must be an absolute
 * path (nothing is looked up in PATH), cwd too.
 *
 * The environment is built from scratch, never inherited:
 *   - the variables named in env-pass, with the values corrald's own
 *     environment had when the configuration was loaded; PATH is always set:
 *     corrald's own when env-pass names it and it is set, else
 *     DEFAULT_PATH;
 *   - CORRAL_EXECUTOR (this executor's name), CORRAL_ALERT_ID,
 *     CORRAL_SEVERITY, CORRAL_STATUS ("firing", or "resolved" for a clear or
 *     corrald's resolved notification), CORRAL_ISODATE (the message's stamp, as in the JSON),
 *     CORRAL_ATTEMPT (1 for the first delivery, 2 for the first retry, ...),
 *     CORRAL_TAGS (the tags, comma-separated), CORRAL_URL (the alert's page,
 *     corral.url, when <stats external-url> is set);
 *   - every name-value pair of the message as CORRAL_<NAME>: the name
 *     upper-cased, every byte outside [A-Z0-9] replaced by '_', leading ones
 *     dropped (".classifier.rule_id" -> CORRAL_CLASSIFIER_RULE_ID,
 *     "usracct.username" -> CORRAL_USRACCT_USERNAME).  Names left empty by
 *     that ("..") are skipped;
 *   - CORRAL_TRUNCATED=1 when any value or argv element is not complete.
 * The prefix keeps message values away from PATH and friends.  When two
 * variables would get the same name, the first one wins, in the order
 * above: corrald's own variables (env-pass names and the CORRAL_* list,
 * CORRAL_TRUNCATED included, even when unset) are never replaced by a
 * message value, and between message values the one set first in the
 * message (its order in the JSON) wins; the later ones are left out.
 * Environment strings cannot hold NUL bytes: a value is cut at its first
 * NUL.  The whole environment is at most ENV_MAX bytes; a value that does
 * not fit is cut (at a UTF-8 character boundary) and the ones after it
 * left out.  An argv element is at most ARG_ONE_MAX bytes (the kernel's
 * limit), all of them together ARGV_MAX.
 *
 * stdin="json" writes the message as one JSON object (json_format_msg) and
 * a newline to the child's stdin, then closes it; corral.evidence, the log
 * lines of the alert (engine/evidence.h), is in it as an array of strings,
 * one per line, its last member.  stdin="none" (the default) gives the
 * child /dev/null.  stdout and stderr are read through pipes
 * into corrald's log, line by line, as "executor NAME[PID]: LINE" at
 * LOG_INFO (stdout) or LOG_WARNING (stderr), control characters made
 * visible; at most LOG_MAX bytes per child, the rest is read, counted and
 * dropped.
 *
 * Each child runs in a session and process group of its own, so the
 * timeout stops everything it started: after `timeout` (default 30s) the
 * group gets SIGTERM, after `kill-after` more (default 5s) SIGKILL.
 *
 * Outcomes:
 *   exit 0                               -> DELIVER_OK
 *   exit 75 (EX_TEMPFAIL)                -> DELIVER_RETRY
 *   any other exit status                -> DELIVER_FAIL with fail-on-exit="yes"
 *                                           (the default), DELIVER_OK with "no"
 *   stopped by the timeout or by close() -> DELIVER_RETRY (DELIVER_OK if it
 *                                           still exits 0)
 *   killed by a signal from elsewhere    -> DELIVER_RETRY: the OOM killer, or
 *                                           systemd stopping the unit, are
 *                                           temporary; a script that crashes
 *                                           every time ends in the dead
 *                                           letters after the queue's attempts
 *   cannot be started                    -> DELIVER_RETRY (program missing or
 *                                           not executable yet, no memory, no
 *                                           processes left), DELIVER_FAIL for
 *                                           E2BIG and ENOEXEC
 * The reason given with a failure carries the last line the child wrote on
 * stderr.
 *
 * At most max-children (default 4) children run at once; max_inflight()
 * tells the queue, and deliveries beyond it wait here in order.  close()
 * stops the children still running the same way as the timeout (SIGTERM,
 * then SIGKILL) and reports them when they are gone, so every done() is
 * called before close()'s own callback.
 *
 * The programs run as this process's user, or as the one exec_run_as set
 * (corrald's executor process under privilege separation stays root and
 * runs them as <daemon user>, as corrald without it would: exec_run_as).
 */
#include "actions/executor.h"
#include "actions/jsonval.h"
#include "engine/evidence.h"
#include "engine/hash.h"
#include "engine/json.h"
#include "engine/log.h"
#include "engine/macros.h"
#include "engine/nv.h"
#include "engine/strlist.h"
#include "engine/tags.h"
#include "engine/template.h"
#include "engine/units.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_PATH     "/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_ENV_PASS "PATH,LANG,TZ"
/* Bytes of "NAME=value" strings and their terminators in a child's environment. */
#define ENV_MAX (128u * 1024)
/* Linux refuses an argv or environment string of more than 32 pages (NUL included). */
#define ARG_ONE_MAX (128u * 1024 - 1)
/* All argv strings together: well below ARG_MAX (a quarter of the 8 MiB default stack). */
#define ARGV_MAX (1024u * 1024)
/* Bytes of a child's output that reach corrald's log; the rest is counted and dropped. */
#define LOG_MAX (64u * 1024)
/* A longer line is logged in pieces of this size. */
#define LOG_LINE_MAX 4096
/* After the child exits, how long its pipes may stay open (a grandchild holding them). */
#define DRAIN_MS      1000
#define EXIT_TEMPFAIL 75
#define CHILDREN_MAX  1024
#define TRUNCATED_VAR "CORRAL_TRUNCATED"

/* corrald's own variables: never taken from the message nor from env-pass. */
static const char *const own_vars[] = {
    "CORRAL_EXECUTOR", "CORRAL_ALERT_ID", "CORRAL_SEVERITY", "CORRAL_ISODATE", "CORRAL_ATTEMPT",
    "CORRAL_TAGS",     "CORRAL_STATUS",   "CORRAL_URL",      TRUNCATED_VAR,
};

struct exec_x;

enum phase {
    P_RUNNING, /* spawned, within its timeout */
    P_TERM,    /* SIGTERM sent, SIGKILL due after kill-after */
    P_KILL,    /* SIGKILL sent */
    P_DRAIN,   /* exited; reading what is left in its pipes */
};

struct out_stream {
    uv_pipe_t pipe;
    struct buf line; /* the unfinished line */
    bool open;       /* not yet handed to uv_close */
    int level;
};

struct child {
    struct child *next, *prev;
    struct exec_x *x;
    uv_process_t proc;
    uv_timer_t timer;
    uv_pipe_t in;
    struct out_stream out[2]; /* stdout, stderr */
    bool in_open;
    int handles; /* initialized and not yet closed */
    uv_write_t wreq;
    struct buf input;
    deliver_done_fn done;
    void *token;
    enum phase phase;
    bool reported, exited, timed_out, stopped;
    int64_t status;
    int sig;
    int pid;
    size_t logged, dropped; /* output bytes */
    char last_err[160];     /* the last line written on stderr, for the reason */
    char rbuf[16384];       /* read buffer, shared: libuv reads one stream at a time */
};

/* An alert waiting for a free child slot; the queue's alert is only valid during deliver(). */
struct waiting {
    struct waiting *next;
    struct alert a;
    deliver_done_fn done;
    void *token;
};

struct exec_x {
    uv_loop_t *loop;
    char *name, *program, *cwd;
    struct template **args;
    size_t nargs;
    double timeout, kill_after; /* seconds */
    unsigned max_children;
    bool stdin_json, fail_on_exit;
    char **pass; /* "NAME=value", PATH always among them */
    size_t npass;
    char **pass_names; /* every env-pass name, set or not */
    size_t npass_names;
    struct child *children; /* not yet freed */
    size_t nchildren;
    unsigned running; /* spawned and not yet reported */
    struct waiting *wait_head, *wait_tail;
    bool closing;
    void (*closed)(void *);
    void *closed_arg;
};

/* ---- a NULL-terminated vector of malloc'ed strings ---- */

struct strv {
    char **v;
    size_t n, cap;
};

static void
strv_push(struct strv *s, char *str)
{
    s->v = xgrow(s->v, &s->cap, s->n + 2, sizeof(*s->v));
    s->v[s->n++] = str;
    s->v[s->n] = NULL;
}

static void
strv_free(struct strv *s)
{
    size_t i;

    for (i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* Where to cut s to at most max bytes without splitting a UTF-8 character. */
static size_t
utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max) return len;
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80) max--;
    return max;
}

/* ---- the environment ---- */

/* A name taken; it points into the variables built or into longer-lived strings. */
struct name_slot {
    const char *name;
    size_t len;
};

struct envb {
    struct strv vars;
    size_t bytes, limit;
    bool truncated;
    struct name_slot *set; /* names taken, open addressing: one array, no allocation per name */
    size_t setcap;
};

static void
env_init(struct envb *e, size_t names)
{
    memset(e, 0, sizeof(*e));
    e->setcap = 64;
    while (e->setcap < names * 2) e->setcap *= 2;
    e->set = xcalloc(e->setcap, sizeof(*e->set));
    /* room is kept for CORRAL_TRUNCATED=1, added last when needed */
    e->limit = ENV_MAX - sizeof(TRUNCATED_VAR "=1");
}

static void
env_free(struct envb *e)
{
    strv_free(&e->vars);
    free(e->set);
}

static bool
env_taken(const struct envb *e, const char *name, size_t len)
{
    size_t mask = e->setcap - 1, i = hash_string(name, len) & mask;

    for (; e->set[i].name; i = (i + 1) & mask)
        if (e->set[i].len == len && memcmp(e->set[i].name, name, len) == 0) return true;
    return false;
}

/* Marks a name as taken (it must not be yet); name must outlive the builder. */
static void
env_claim(struct envb *e, const char *name, size_t len)
{
    size_t mask = e->setcap - 1, i = hash_string(name, len) & mask;

    while (e->set[i].name) i = (i + 1) & mask;
    e->set[i].name = name;
    e->set[i].len = len;
}

/* Keeps a name from ever being set from the message, whether or not it is set. */
static void
env_reserve(struct envb *e, const char *name)
{
    if (!env_taken(e, name, strlen(name))) env_claim(e, name, strlen(name));
}

/* Appends NAME=value within the size limit, whether or not the name is taken. */
static void
env_put(struct envb *e, const char *name, size_t nlen, const char *val, size_t vlen)
{
    const char *nul = memchr(val, '\0', vlen);
    size_t need, room;
    char *s;

    if (nul) {
        vlen = (size_t)(nul - val);
        e->truncated = true;
    }
    need = nlen + 1 + vlen + 1;
    if (e->bytes + need > e->limit) {
        e->truncated = true;
        room = e->limit - e->bytes;
        if (room < nlen + 2) return; /* not even the name fits: left out */
        vlen = utf8_cut(val, vlen, room - nlen - 2);
        need = nlen + 1 + vlen + 1;
    }
    s = xmalloc(need);
    memcpy(s, name, nlen);
    s[nlen] = '=';
    memcpy(s + nlen + 1, val, vlen);
    s[need - 1] = '\0';
    strv_push(&e->vars, s);
    e->bytes += need;
    if (!env_taken(e, s, nlen)) env_claim(e, s, nlen);
}

/* Adds NAME=value unless the name is taken: the first one wins. */
static void
env_add(struct envb *e, const char *name, size_t nlen, const char *val, size_t vlen)
{
    if (!env_taken(e, name, nlen)) env_put(e, name, nlen, val, vlen);
}

static void
env_add_str(struct envb *e, const char *name, const char *val)
{
    env_add(e, name, strlen(name), val, strlen(val));
}

/* CORRAL_ + the name upper-cased, [^A-Z0-9] as '_', leading ones dropped; false if empty. */
static bool
map_name(const char *name, size_t len, struct buf *out)
{
    size_t i = 0;

    buf_reset(out);
    buf_puts(out, "CORRAL_");
    for (; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) break;
    }
    if (i == len) return false;
    for (; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c >= 'a' && c <= 'z')
            c = (unsigned char)(c - 'a' + 'A');
        else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            c = '_';
        buf_putc(out, (char)c);
    }
    return true;
}

static void
build_env(const struct exec_x *x, const struct alert *a, bool argv_truncated, struct strv *env)
{
    const struct msg *m = a->msg;
    const struct msg_time *t = msg_stamp(m);
    struct buf b = BUF_INIT;
    struct envb e;
    size_t i, n = msg_nvalues(m);
    char num[32];

    env_init(&e, x->npass + x->npass_names + 10 + n);
    for (i = 0; i < x->npass; i++) {
        const char *eq = strchr(x->pass[i], '=');
        env_add(&e, x->pass[i], (size_t)(eq - x->pass[i]), eq + 1, strlen(eq + 1));
    }
    for (i = 0; i < x->npass_names; i++) env_reserve(&e, x->pass_names[i]);
    env_reserve(&e, TRUNCATED_VAR);
    env_add_str(&e, "CORRAL_EXECUTOR", x->name);
    env_add_str(&e, "CORRAL_ALERT_ID", a->id ? a->id : "");
    env_add_str(&e, "CORRAL_SEVERITY", a->severity ? a->severity : "");
    env_add_str(&e, "CORRAL_STATUS", executor_alert_resolved(a) ? "resolved" : "firing");
    {
        size_t ulen = 0;
        nv_handle hu = nv_lookup("corral.url", 10);
        const char *url = hu ? msg_get(m, hu, &ulen) : NULL;
        if (url)
            env_add(&e, "CORRAL_URL", strlen("CORRAL_URL"), url, ulen);
        else
            env_reserve(&e, "CORRAL_URL"); /* never a message's "url" */
    }
    macro_format_iso(t, t->usec ? 6 : 0, &b);
    env_add(&e, "CORRAL_ISODATE", strlen("CORRAL_ISODATE"), b.p ? b.p : "", b.len);
    snprintf(num, sizeof(num), "%lu", (unsigned long)a->attempts + 1);
    env_add_str(&e, "CORRAL_ATTEMPT", num);
    buf_reset(&b);
    for (i = 0; i < msg_ntags(m); i++) {
        size_t len;
        const char *tag = tag_name(msg_tag_at(m, i), &len);
        if (!tag) continue;
        if (b.len) buf_putc(&b, ',');
        buf_append(&b, tag, len);
    }
    env_add(&e, "CORRAL_TAGS", strlen("CORRAL_TAGS"), b.p ? b.p : "", b.len);
    for (i = 0; i < n; i++) {
        const char *val, *name;
        size_t vlen, nlen;
        nv_handle h = msg_value_at(m, i, &val, &vlen);
        name = nv_name(h, &nlen);
        if (!name || !map_name(name, nlen, &b)) continue;
        env_add(&e, b.p, b.len, val, vlen);
    }
    if (e.truncated || argv_truncated) {
        e.limit = ENV_MAX; /* its room was kept */
        env_put(&e, TRUNCATED_VAR, strlen(TRUNCATED_VAR), "1", 1);
    }
    *env = e.vars;
    e.vars.v = NULL;
    e.vars.n = e.vars.cap = 0;
    env_free(&e);
    buf_free(&b);
}

/* argv: the program, then each <arg> expanded; true in *truncated when one was cut. */
static void
build_argv(const struct exec_x *x, const struct alert *a, struct strv *argv, bool *truncated)
{
    struct template_env env;
    struct buf b = BUF_INIT;
    size_t i, total = strlen(x->program) + 1;

    *truncated = false;
    memset(argv, 0, sizeof(*argv));
    strv_push(argv, xstrdup(x->program));
    template_env_single(&env, &a->msg);
    for (i = 0; i < x->nargs; i++) {
        const char *nul;
        size_t len, max, room;
        buf_reset(&b);
        template_eval(x->args[i], &env, &b);
        len = b.len;
        if ((nul = memchr(buf_str(&b), '\0', len))) {
            len = (size_t)(nul - b.p);
            *truncated = true;
        }
        room = ARGV_MAX > total + 1 ? ARGV_MAX - total - 1 : 0;
        max = room < ARG_ONE_MAX ? room : ARG_ONE_MAX;
        if (len > max) {
            len = utf8_cut(b.p, len, max);
            *truncated = true;
        }
        strv_push(argv, xstrndup(buf_str(&b), len));
        total += len + 1;
    }
    buf_free(&b);
}

/* The message as JSON, corral.evidence (its lines joined by LF) as an array of lines, last. */
static void
build_input(const struct alert *a, struct buf *out)
{
    nv_handle h = nv_lookup(EVIDENCE_NAME, strlen(EVIDENCE_NAME));
    const char *ev;
    size_t len, i, start;
    json_t *j, *lines;
    struct msg *m;

    if (!h || !(ev = msg_get(a->msg, h, &len))) {
        json_format_msg(a->msg, out);
        buf_putc(out, '\n');
        return;
    }
    m = msg_clone(a->msg);
    msg_unset(m, h);
    j = jsonval_msg(m);
    msg_unref(m);
    lines = json_array();
    for (i = start = 0; len && i <= len; i++) {
        if (i < len && ev[i] != '\n') continue;
        json_array_append_new(lines, jsonval_text(ev + start, i - start));
        start = i + 1;
    }
    json_object_set_new(j, EVIDENCE_NAME, lines);
    jsonval_put_new(out, j);
    buf_putc(out, '\n');
}

/* ---- children ---- */

static void pump(struct exec_x *x);
static void finish(struct child *c);

static void
closed_done(struct exec_x *x)
{
    void (*cb)(void *) = x->closed;
    void *arg = x->closed_arg;
    size_t i;

    free(x->name);
    free(x->program);
    free(x->cwd);
    for (i = 0; i < x->nargs; i++) template_free(x->args[i]);
    free(x->args);
    for (i = 0; i < x->npass; i++) free(x->pass[i]);
    free(x->pass);
    for (i = 0; i < x->npass_names; i++) free(x->pass_names[i]);
    free(x->pass_names);
    free(x);
    if (cb) cb(arg);
}

static void
child_free(struct child *c)
{
    struct exec_x *x = c->x;

    if (c->prev)
        c->prev->next = c->next;
    else
        x->children = c->next;
    if (c->next) c->next->prev = c->prev;
    x->nchildren--;
    buf_free(&c->out[0].line);
    buf_free(&c->out[1].line);
    buf_free(&c->input);
    free(c);
    if (x->closing && x->nchildren == 0 && !x->wait_head) closed_done(x);
}

static void
on_handle_closed(uv_handle_t *h)
{
    struct child *c = h->data;

    if (--c->handles == 0) child_free(c);
}

static void
close_handle(uv_handle_t *h)
{
    if (!uv_is_closing(h)) uv_close(h, on_handle_closed);
}

/* Control characters as \xNN: a script's output must not forge log lines or drive a terminal. */
static void
put_visible(struct buf *out, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f || ch == '\\')
            buf_printf(out, "\\x%02x", ch);
        else
            buf_putc(out, (char)ch);
    }
}

static void
log_line(struct child *c, struct out_stream *s, const char *p, size_t n)
{
    struct buf b = BUF_INIT;

    if (n && p[n - 1] == '\r') n--;
    if (!n) return;
    if (c->logged >= LOG_MAX) {
        c->dropped += n;
        return;
    }
    if (n > LOG_MAX - c->logged) {
        c->dropped += n - (LOG_MAX - c->logged);
        n = LOG_MAX - c->logged;
    }
    c->logged += n;
    put_visible(&b, p, n);
    log_msg(s->level, "executor %s[%d]: %s", c->x->name, c->pid, buf_str(&b));
    if (s == &c->out[1]) {
        size_t keep = b.len < sizeof(c->last_err) ? b.len : sizeof(c->last_err) - 1;
        if (keep) {
            memcpy(c->last_err, b.p, keep);
            c->last_err[keep] = '\0';
        }
    }
    buf_free(&b);
}

static void
feed(struct child *c, struct out_stream *s, const char *p, size_t n)
{
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (s->line.len + take >= LOG_LINE_MAX) take = LOG_LINE_MAX - s->line.len;
        buf_append(&s->line, p, take);
        p += take;
        n -= take;
        if (n && *p == '\n') {
            p++;
            n--;
            log_line(c, s, s->line.p ? s->line.p : "", s->line.len);
            buf_reset(&s->line);
        } else if (s->line.len >= LOG_LINE_MAX) {
            log_line(c, s, s->line.p, s->line.len);
            buf_reset(&s->line);
        }
    }
}

static void
stream_close(struct child *c, struct out_stream *s)
{
    if (!s->open) return;
    s->open = false;
    if (s->line.len) log_line(c, s, s->line.p, s->line.len);
    buf_reset(&s->line);
    uv_read_stop((uv_stream_t *)&s->pipe);
    close_handle((uv_handle_t *)&s->pipe);
}

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct child *c = h->data;

    (void)suggested;
    b->base = c->rbuf;
    b->len = sizeof(c->rbuf);
}

static void
on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    struct child *c = st->data;
    struct out_stream *s = (uv_pipe_t *)st == &c->out[0].pipe ? &c->out[0] : &c->out[1];

    if (nread > 0) {
        feed(c, s, b->base, (size_t)nread);
        return;
    }
    if (nread == 0) return;
    if (nread != UV_EOF)
        log_msg(LOG_DEBUG, "executor %s[%d]: reading output: %s", c->x->name, c->pid,
                uv_strerror((int)nread));
    stream_close(c, s);
    if (c->exited && !c->out[0].open && !c->out[1].open) finish(c);
}

static void
on_written(uv_write_t *w, int status)
{
    struct child *c = w->data;

    /* EPIPE: the child closed its stdin or exited without reading all of it; its business */
    if (status < 0 && status != UV_ECANCELED)
        log_msg(LOG_DEBUG, "executor %s[%d]: writing stdin: %s", c->x->name, c->pid,
                uv_strerror(status));
    buf_free(&c->input);
    if (c->in_open) {
        c->in_open = false;
        close_handle((uv_handle_t *)&c->in);
    }
}

static void
signal_group(struct child *c, int sig)
{
    /* the child is a session leader: its pid is its process group's id */
    if (kill(-c->pid, sig) < 0 && errno == ESRCH) kill(c->pid, sig);
}

static void
on_timer(uv_timer_t *t)
{
    struct child *c = t->data;
    struct exec_x *x = c->x;

    switch (c->phase) {
    case P_RUNNING:
        c->timed_out = true;
        c->phase = P_TERM;
        log_msg(LOG_WARNING, "executor %s[%d]: still running after %gs; sending SIGTERM", x->name,
                c->pid, x->timeout);
        signal_group(c, SIGTERM);
        uv_timer_start(&c->timer, on_timer, (uint64_t)(x->kill_after * 1000), 0);
        break;
    case P_TERM:
        c->phase = P_KILL;
        log_msg(LOG_WARNING, "executor %s[%d]: still running %gs after SIGTERM; sending SIGKILL",
                x->name, c->pid, x->kill_after);
        signal_group(c, SIGKILL);
        break;
    case P_KILL: break;
    case P_DRAIN: finish(c); break;
    }
}

static void
on_child_exit(uv_process_t *p, int64_t status, int sig)
{
    struct child *c = p->data;

    c->exited = true;
    c->status = status;
    c->sig = sig;
    c->phase = P_DRAIN;
    uv_timer_stop(&c->timer);
    if (!c->out[0].open && !c->out[1].open) {
        finish(c);
        return;
    }
    /* what it wrote is in the pipes already; only a grandchild can keep them open */
    uv_timer_start(&c->timer, on_timer, DRAIN_MS, 0);
}

static const char *
signal_name(int sig)
{
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGKILL: return "SIGKILL";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "a signal";
    }
}

/* The outcome of an exited child (see the top of this file). */
static enum deliver_result
outcome(struct child *c, char *reason, size_t size)
{
    const struct exec_x *x = c->x;
    enum deliver_result r;
    int n;

    if ((c->timed_out || c->stopped) && !c->sig && c->status == 0) {
        snprintf(reason, size, "exit 0 after %s", c->timed_out ? "the timeout" : "being stopped");
        return DELIVER_OK;
    }
    if (c->timed_out) {
        snprintf(reason, size, "timed out after %gs", x->timeout);
        r = DELIVER_RETRY;
    } else if (c->stopped) {
        snprintf(reason, size, "stopped: executor closing");
        r = DELIVER_RETRY;
    } else if (c->sig) {
        snprintf(reason, size, "killed by %s (%d)", signal_name(c->sig), c->sig);
        r = DELIVER_RETRY;
    } else if (c->status == 0) {
        reason[0] = '\0';
        return DELIVER_OK;
    } else if (c->status == EXIT_TEMPFAIL) {
        snprintf(reason, size, "exit 75 (temporary failure)");
        r = DELIVER_RETRY;
    } else {
        snprintf(reason, size, "exit %d", (int)c->status);
        r = x->fail_on_exit ? DELIVER_FAIL : DELIVER_OK;
        if (r == DELIVER_OK)
            log_msg(LOG_INFO, "executor %s[%d]: exit %d counted as delivered (fail-on-exit=no)",
                    x->name, c->pid, (int)c->status);
    }
    n = (int)strlen(reason);
    if (c->last_err[0] && (size_t)n + 12 < size)
        snprintf(reason + n, size - (size_t)n, "; stderr: %s", c->last_err);
    return r;
}

static void
finish(struct child *c)
{
    struct exec_x *x = c->x;
    enum deliver_result r;
    char reason[256];

    if (c->reported) return;
    c->reported = true;
    uv_timer_stop(&c->timer);
    stream_close(c, &c->out[0]);
    stream_close(c, &c->out[1]);
    if (c->in_open) {
        c->in_open = false;
        close_handle((uv_handle_t *)&c->in); /* a pending write ends with UV_ECANCELED */
    }
    if (c->dropped)
        log_msg(LOG_WARNING, "executor %s[%d]: %zu more bytes of output not logged (limit %u)",
                x->name, c->pid, c->dropped, LOG_MAX);
    r = outcome(c, reason, sizeof(reason));
    log_msg(LOG_DEBUG, "executor %s[%d]: done: %s%s%s", x->name, c->pid,
            r == DELIVER_OK      ? "delivered"
            : r == DELIVER_RETRY ? "retry"
                                 : "failed",
            reason[0] ? ", " : "", reason);
    close_handle((uv_handle_t *)&c->timer);
    close_handle((uv_handle_t *)&c->proc);
    x->running--;
    c->done(c->token, r, reason[0] ? reason : NULL);
    pump(x);
}

/* Spawn failures worth retrying: the program may be back, memory and process slots free again. */
static enum deliver_result
spawn_result(int err)
{
    return err == UV_E2BIG || err == -ENOEXEC ? DELIVER_FAIL : DELIVER_RETRY;
}

/* exec_run_as: who the programs run as (process-wide: one service user) */
static bool run_as;
static uid_t run_uid;
static gid_t run_gid;

void
exec_run_as(uid_t uid, gid_t gid)
{
    run_as = true;
    run_uid = uid;
    run_gid = gid;
}

static void
start(struct exec_x *x, const struct alert *a, deliver_done_fn done, void *token)
{
    struct child *c = xcalloc(1, sizeof(*c));
    uv_process_options_t opt;
    uv_stdio_container_t stdio[3];
    struct strv argv, env;
    bool truncated;
    int err, i;

    c->x = x;
    c->done = done;
    c->token = token;
    c->next = x->children;
    if (x->children) x->children->prev = c;
    x->children = c;
    x->nchildren++;
    uv_timer_init(x->loop, &c->timer);
    c->timer.data = c;
    c->handles++;
    for (i = 0; i < 2; i++) {
        uv_pipe_init(x->loop, &c->out[i].pipe, 0);
        c->out[i].pipe.data = c;
        c->out[i].open = true;
        c->out[i].level = i == 0 ? LOG_INFO : LOG_WARNING;
        c->handles++;
    }
    memset(stdio, 0, sizeof(stdio));
    stdio[0].flags = UV_IGNORE; /* /dev/null */
    if (x->stdin_json) {
        uv_pipe_init(x->loop, &c->in, 0);
        c->in.data = c;
        c->in_open = true;
        c->handles++;
        stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
        stdio[0].data.stream = (uv_stream_t *)&c->in;
    }
    for (i = 1; i <= 2; i++) {
        stdio[i].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
        stdio[i].data.stream = (uv_stream_t *)&c->out[i - 1].pipe;
    }
    build_argv(x, a, &argv, &truncated);
    build_env(x, a, truncated, &env);
    memset(&opt, 0, sizeof(opt));
    opt.exit_cb = on_child_exit;
    opt.file = x->program;
    opt.args = argv.v;
    opt.env = env.v;
    opt.cwd = x->cwd;
    opt.flags = UV_PROCESS_DETACHED; /* setsid(): its own process group, for the timeout */
    if (run_as) {
        /* libuv also drops the supplementary groups (setgroups(0)) */
        opt.flags |= UV_PROCESS_SETUID | UV_PROCESS_SETGID;
        opt.uid = run_uid;
        opt.gid = run_gid;
    }
    opt.stdio_count = 3;
    opt.stdio = stdio;
    err = uv_spawn(x->loop, &c->proc, &opt);
    /* uv_spawn initializes the handle even when it fails */
    c->proc.data = c;
    c->handles++;
    strv_free(&argv);
    strv_free(&env);
    if (err) {
        char reason[256];
        snprintf(reason, sizeof(reason), "cannot run %s: %s", x->program, uv_strerror(err));
        log_msg(LOG_WARNING, "executor %s: %s", x->name, reason);
        c->reported = true;
        c->exited = true;
        stream_close(c, &c->out[0]);
        stream_close(c, &c->out[1]);
        if (c->in_open) {
            c->in_open = false;
            close_handle((uv_handle_t *)&c->in);
        }
        close_handle((uv_handle_t *)&c->timer);
        close_handle((uv_handle_t *)&c->proc);
        done(token, spawn_result(err), reason);
        return;
    }
    c->pid = c->proc.pid;
    x->running++;
    log_msg(LOG_DEBUG, "executor %s[%d]: started %s for alert %s (attempt %u)", x->name, c->pid,
            x->program, a->id ? a->id : "", a->attempts + 1);
    for (i = 0; i < 2; i++) uv_read_start((uv_stream_t *)&c->out[i].pipe, on_alloc, on_read);
    if (x->stdin_json) {
        uv_buf_t b;
        build_input(a, &c->input);
        b = uv_buf_init(c->input.p, (unsigned)c->input.len);
        c->wreq.data = c;
        if (uv_write(&c->wreq, (uv_stream_t *)&c->in, &b, 1, on_written) < 0) {
            c->in_open = false;
            close_handle((uv_handle_t *)&c->in);
        }
    }
    /* the loop's cached time may be well behind after a fork: count from now */
    uv_update_time(x->loop);
    uv_timer_start(&c->timer, on_timer, (uint64_t)(x->timeout * 1000), 0);
}

/* Starts waiting deliveries while there are free slots. */
static void
pump(struct exec_x *x)
{
    while (x->wait_head && !x->closing && x->running < x->max_children) {
        struct waiting *w = x->wait_head;
        x->wait_head = w->next;
        if (!x->wait_head) x->wait_tail = NULL;
        start(x, &w->a, w->done, w->token);
        msg_unref(w->a.msg);
        free((char *)w->a.id);
        free((char *)w->a.severity);
        free(w);
    }
}

/* ---- the executor interface ---- */

static void
exec_deliver(void *impl, const struct alert *a, deliver_done_fn done, void *token)
{
    struct exec_x *x = impl;
    struct waiting *w;

    if (x->closing) {
        done(token, DELIVER_RETRY, "executor closing");
        return;
    }
    if (x->running < x->max_children && !x->wait_head) {
        start(x, a, done, token);
        return;
    }
    /* only when the caller asks for more than max_inflight(): keep the limit anyway */
    w = xcalloc(1, sizeof(*w));
    w->a = *a;
    w->a.msg = msg_ref(a->msg);
    w->a.id = xstrdup(a->id ? a->id : "");
    w->a.severity = xstrdup(a->severity ? a->severity : "");
    w->done = done;
    w->token = token;
    if (x->wait_tail)
        x->wait_tail->next = w;
    else
        x->wait_head = w;
    x->wait_tail = w;
}

static unsigned
exec_max_inflight(void *impl)
{
    return ((struct exec_x *)impl)->max_children;
}

static void
exec_close(void *impl, void (*done)(void *arg), void *arg)
{
    struct exec_x *x = impl;
    struct child *c;

    x->closing = true;
    x->closed = done;
    x->closed_arg = arg;
    while (x->wait_head) {
        struct waiting *w = x->wait_head;
        x->wait_head = w->next;
        w->done(w->token, DELIVER_RETRY, "executor closing");
        msg_unref(w->a.msg);
        free((char *)w->a.id);
        free((char *)w->a.severity);
        free(w);
    }
    x->wait_tail = NULL;
    uv_update_time(x->loop);
    for (c = x->children; c; c = c->next) {
        if (c->exited || c->phase != P_RUNNING) continue; /* finishing, or already being stopped */
        c->stopped = true;
        c->phase = P_TERM;
        signal_group(c, SIGTERM);
        uv_timer_start(&c->timer, on_timer, (uint64_t)(x->kill_after * 1000), 0);
    }
    if (x->nchildren == 0) closed_done(x);
}

/* ---- render ---- */

static bool
plain_word(const char *s, size_t n)
{
    size_t i;

    if (!n) return false;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("_-./:=@%+,", c)))
            return false;
    }
    return true;
}

/* Shell quoting, for display only (nothing here ever goes through a shell). */
static void
put_shell_quoted(struct buf *out, const char *s, size_t n)
{
    size_t i;
    bool ctl = false;

    if (plain_word(s, n)) {
        buf_append(out, s, n);
        return;
    }
    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ctl = true;
    if (!ctl) {
        buf_putc(out, '\'');
        for (i = 0; i < n; i++) {
            if (s[i] == '\'')
                buf_puts(out, "'\\''");
            else
                buf_putc(out, s[i]);
        }
        buf_putc(out, '\'');
        return;
    }
    buf_puts(out, "$'");
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '\n': buf_puts(out, "\\n"); break;
        case '\r': buf_puts(out, "\\r"); break;
        case '\t': buf_puts(out, "\\t"); break;
        case '\'': buf_puts(out, "\\'"); break;
        case '\\': buf_puts(out, "\\\\"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                buf_printf(out, "\\x%02x", c);
            else
                buf_putc(out, (char)c);
        }
    }
    buf_putc(out, '\'');
}

static void
exec_render(void *impl, const struct alert *a, struct buf *out)
{
    struct exec_x *x = impl;
    struct strv argv, env;
    bool truncated;
    size_t i;

    build_argv(x, a, &argv, &truncated);
    build_env(x, a, truncated, &env);
    buf_printf(out, "exec %s: timeout %gs, kill-after %gs, cwd %s, stdin %s, fail-on-exit %s\n",
               x->name, x->timeout, x->kill_after, x->cwd, x->stdin_json ? "json" : "none",
               x->fail_on_exit ? "yes" : "no");
    buf_puts(out, "argv:");
    for (i = 0; i < argv.n; i++) {
        buf_putc(out, ' ');
        put_shell_quoted(out, argv.v[i], strlen(argv.v[i]));
    }
    buf_putc(out, '\n');
    for (i = 0; i < env.n; i++) {
        const char *eq = strchr(env.v[i], '=');
        buf_puts(out, "env: ");
        buf_append(out, env.v[i], (size_t)(eq - env.v[i]) + 1);
        put_shell_quoted(out, eq + 1, strlen(eq + 1));
        buf_putc(out, '\n');
    }
    if (x->stdin_json) {
        buf_puts(out, "stdin: ");
        build_input(a, out);
    } else {
        buf_puts(out, "stdin: /dev/null\n");
    }
    strv_free(&argv);
    strv_free(&env);
}

/* ---- configuration ---- */

static bool
valid_var_name(const char *s, size_t n)
{
    size_t i;

    if (!n || (s[0] >= '0' && s[0] <= '9')) return false;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

/* env-pass: the variables of corrald's environment the child gets (see the top of the file). */
static void
read_env_pass(struct exec_x *x, const struct exconf_reader *r)
{
    const char *list = exconf_attr(r->cfg, "env-pass");
    const char *s, *item;
    bool path = false;
    size_t capn = 0, capp = 0, i, len;

    if (!list) list = DEFAULT_ENV_PASS;
    for (s = list; strlist_next(&s, &item, &len);) {
        char *name;
        const char *v;
        if (!valid_var_name(item, len)) {
            exconf_error(r, "env-pass: '%.*s' is not a variable name", (int)len, item);
            continue;
        }
        name = xstrndup(item, len);
        for (i = 0; i < sizeof(own_vars) / sizeof(own_vars[0]); i++)
            if (strcmp(name, own_vars[i]) == 0)
                exconf_error(r, "env-pass: %s is set by corrald itself", name);
        for (i = 0; i < x->npass_names; i++)
            if (strcmp(name, x->pass_names[i]) == 0) break;
        if (i < x->npass_names) {
            free(name);
            continue;
        }
        x->pass_names = xgrow(x->pass_names, &capn, x->npass_names + 1, sizeof(*x->pass_names));
        x->pass_names[x->npass_names++] = name;
        v = getenv(name);
        if (strcmp(name, "PATH") == 0) {
            path = true;
            if (!v || !*v) v = DEFAULT_PATH;
        }
        if (v) {
            struct buf b = BUF_INIT;
            buf_printf(&b, "%s=%s", name, v);
            x->pass = xgrow(x->pass, &capp, x->npass + 1, sizeof(*x->pass));
            x->pass[x->npass++] = xstrdup(buf_str(&b));
            buf_free(&b);
        }
    }
    if (!path) {
        /* the child always has a PATH; corrald's own only when env-pass says so */
        x->pass = xgrow(x->pass, &capp, x->npass + 1, sizeof(*x->pass));
        x->pass[x->npass++] = xstrdup("PATH=" DEFAULT_PATH);
        x->pass_names = xgrow(x->pass_names, &capn, x->npass_names + 1, sizeof(*x->pass_names));
        x->pass_names[x->npass_names++] = xstrdup("PATH");
    }
}

/* program: an executable file; cwd: a directory (both absolute, checked now). */
static void
read_paths(struct exec_x *x, const struct exconf_reader *r)
{
    const char *program = NULL, *cwd = "/";
    struct stat st;

    if (!exconf_attr(r->cfg, "program")) exconf_error(r, "exec needs program=\"/absolute/path\"");
    if (exconf_path(r, "program", &program) && program) {
        if (stat(program, &st) < 0)
            exconf_error(r, "program %s: %s", program, strerror(errno));
        else if (!S_ISREG(st.st_mode) || access(program, X_OK) < 0)
            exconf_error(r, "program %s is not an executable file", program);
    }
    if (exconf_path(r, "cwd", &cwd) && exconf_attr(r->cfg, "cwd")) {
        if (stat(cwd, &st) < 0)
            exconf_error(r, "cwd %s: %s", cwd, strerror(errno));
        else if (!S_ISDIR(st.st_mode))
            exconf_error(r, "cwd %s is not a directory", cwd);
    }
    x->program = xstrdup(program ? program : "");
    x->cwd = xstrdup(cwd);
}

/* The <arg> children, each a template. */
static void
read_args(struct exec_x *x, const struct exconf_reader *r)
{
    size_t i, cap = 0;

    for (i = 0; i < r->cfg->nchildren; i++) {
        const struct exconf_node *n = &r->cfg->children[i];
        struct template *t;
        if (!exconf_child_is(r, n, "arg")) continue;
        exconf_check_node_attrs(r, n, NULL);
        t = exconf_compile(r, n->line, "<arg>", n->text ? n->text : "");
        if (t) {
            x->args = xgrow(x->args, &cap, x->nargs + 1, sizeof(*x->args));
            x->args[x->nargs++] = t;
        }
    }
}

static void *
exec_open(uv_loop_t *loop, const struct exconf *cfg, const char *file, struct buf *err)
{
    static const char *const known[] = {
        "program", "timeout",  "kill-after",   "max-children", "stdin",
        "cwd",     "env-pass", "fail-on-exit", NULL,
    };
    static const char *const stdin_kinds[] = {"json", "none", NULL};
    const struct exconf_reader r = {cfg, file, err};
    struct exec_x *x = xcalloc(1, sizeof(*x));
    size_t before = err->len;
    unsigned long max_children = 4;
    int stdin_kind = 1;

    x->loop = loop;
    x->name = xstrdup(cfg->name ? cfg->name : "exec");
    x->timeout = 30;
    x->kill_after = 5;
    x->fail_on_exit = true;
    exconf_check_attrs(&r, known, NULL);
    read_paths(x, &r);
    exconf_duration(&r, "timeout", false, 86400 * 7, &x->timeout);
    exconf_duration(&r, "kill-after", false, 86400 * 7, &x->kill_after);
    exconf_uint(&r, "max-children", 1, CHILDREN_MAX, &max_children);
    x->max_children = (unsigned)max_children;
    exconf_enum(&r, "stdin", stdin_kinds, &stdin_kind);
    x->stdin_json = stdin_kind == 0;
    exconf_bool(&r, "fail-on-exit", &x->fail_on_exit);
    read_env_pass(x, &r);
    read_args(x, &r);
    if (err->len != before) {
        closed_done(x);
        return NULL;
    }
    return x;
}

const struct executor_kind exec_executor = {
    "exec", exec_open, exec_deliver, exec_render, exec_close, exec_max_inflight, NULL, NULL,
};
