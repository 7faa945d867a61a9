/*
 * corrald: the corral daemon.  Reads its configuration (or runs the built-in
 * one), opens inputs and outputs, drops privileges, tells systemd it is
 * ready, and runs the libuv loop until SIGTERM.
 *
 *   SIGHUP   reload configuration and rules (a broken file keeps the old ones)
 *   SIGTERM  stop: close inputs, flush outputs, save correlation state
 *
 * The handlers are in place before anything slow (state, rules): a signal
 * that arrives during start-up waits and is acted on once the loop runs.
 * Once stopping has begun, reloads are refused and a second SIGTERM is only
 * logged, so that nothing cuts the state save short.
 *   SIGUSR1  write the open correlation contexts as JSON (path in the log)
 *   SIGUSR2  reopen output files (after log rotation)
 *
 * Privilege separation (<daemon privsep>, doc/privsep.md; on by default
 * when started as root with a user to drop to): right after reading the
 * configuration, before any executor is opened, corrald forks.  The parent,
 * the executor process (systemd's main pid, the pid file's; execproc.c),
 * opens the executors (reading their secrets), keeps their spools and
 * serves the engine over a socketpair (ipcserve); it relays the signals
 * above to the engine and stops when the engine does.  The child, the
 * engine process (become_engine, then run_engine as without privilege
 * separation), scrubs its environment, runs everything else with the
 * executor process's queues behind a proxy (ipcproxy), drops to the
 * service user and loads its seccomp filter (sandbox.h).  A reload that
 * changes the executors makes the engine ask the executor process (L),
 * which reads the same file again itself and reloads its queues; the
 * engine's reload waits for its answer.  When either dies, the other logs
 * it and stops with a nonzero status; the spools keep the undelivered
 * alerts.
 *
 * -t checks what start-up would check, short of binding sockets, loading
 * state and dropping privileges, and exits (check_only).
 */
#include <config.h>

#include "actions/ipcproxy.h"
#include "agent/cluster/cluster.h"
#include "agent/conf/snmptrap_conf.h"
#include "agent/web/control.h"
#include "agent/net/dnscache.h"
#include "agent/proc/execproc.h"
#include "agent/proc/privsep.h"
#include "agent/proc/proc.h"
#include "agent/proc/sandbox.h"
#include "engine/durable.h"
#include "engine/log.h"
#include "agent/web/http.h"
#include "engine/pdb.h"
#include "engine/resolver.h"
#include "agent/core/server.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the command line asks for. */
enum mode {
    MODE_RUN,   /* the daemon: the engine, and the executor process under privilege separation */
    MODE_CHECK, /* -t: check the configuration and the rules, then exit */
    MODE_DONE,  /* --help or --version has answered */
};

/* The command line, parsed (parse_options). */
struct options {
    enum mode mode;
    const char *config_path; /* NULL: built-in configuration */
    char *schema;
    char **extra_rules;
    int nextra_rules;
    const char *pidfile;
    bool foreground;
};

struct daemon {
    struct options opt;
    uv_loop_t *loop;
    struct server *srv;
    struct control *control;
    struct http *http;
    uv_signal_t sighup, sigterm, sigint, sigusr1, sigusr2;
    char *rules_dir;
    const char *pidfile; /* -p, else <daemon pidfile>; NULL in the engine under privsep */
    char *pidfile_buf;
    int exit_code;
    bool stopping; /* SIGTERM (or SIGINT) seen: no more reloads */
    bool started;  /* server_start done */
    /* privilege separation, in the engine process: the executor process behind its proxy */
    struct ipcproxy *proxy;
    pid_t executor_pid;
    bool proxy_ended;
    char *runtime_dir; /* $RUNTIME_DIRECTORY, kept before the environment is scrubbed */
    /* reloads: the one running (who asked), those asked for meanwhile, its report so far */
    bool reloading;
    struct reload_req *reload_current, *reload_waiting;
    struct buf reload_report;
#ifdef CORRAL_TEST_HOOKS
    char *test_hook; /* $CORRAL_TEST_HOOK, kept before the environment is scrubbed */
#endif
};

/* Who asked for a reload: SIGHUP (done NULL) or a control connection, answered at the end. */
struct reload_req {
    struct reload_req *next;
    const char *by;
    control_reload_done done;
    void *conn;
};

/* ---- locating installed files (or the source tree, when run from it) ---- */

static char *
beside_executable(const char *rel)
{
    char exe[PATH_MAX], *slash;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    struct buf b = BUF_INIT;
    char *out;

    if (n <= 0) return NULL;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = '\0';
    buf_printf(&b, "%s/%s", exe, rel);
    out = access(buf_str(&b), R_OK) == 0 ? xstrdup(buf_str(&b)) : NULL;
    buf_free(&b);
    return out;
}

static char *
find_file(const char *installed, const char *in_tree)
{
    char *p;

    if (access(installed, R_OK) == 0) return xstrdup(installed);
    p = beside_executable(in_tree);
    return p ? p : xstrdup(installed);
}

/* The engine process tells the executor process, which systemd knows as the main one. */
static void
notify(struct daemon *d, const char *state)
{
    if (d->proxy && !d->proxy_ended)
        ipcproxy_notify(d->proxy, state);
    else if (!d->proxy)
        proc_sd_notify(state);
}

/* ---- configuration ---- */

static struct conf *
read_conf(struct daemon *d, struct buf *err)
{
    struct conf *c;
    int i;

    if (d->opt.config_path)
        c = conf_load(d->opt.config_path, d->opt.schema, err);
    else
        c = conf_default(d->rules_dir);
    if (!c) return NULL;
    if (d->opt.nextra_rules && !d->opt.config_path) {
        /* -r replaces the built-in rules directory */
        free(c->rules[0]);
        c->nrules = 0;
    }
    for (i = 0; i < d->opt.nextra_rules; i++) conf_add_rules(c, d->opt.extra_rules[i], 0);
    return c;
}

/* The configuration's warnings (deprecated spellings, "file:line: warning: ..."), one log line
 * each. */
static void
log_conf_warnings(const struct conf *c)
{
    char *copy, *line, *save = NULL;

    if (!c->warnings) return;
    copy = xstrdup(c->warnings);
    for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        log_msg(LOG_WARNING, "%s", line);
    free(copy);
}

/* ---- privileges ---- */

/* The gid of <control group>, or (gid_t)-1 without one; -1 with file:line in err. */
static int
control_group_id(const struct conf *c, gid_t *gid, struct buf *err)
{
    struct group *gr;

    *gid = (gid_t)-1;
    if (!c->control_group) return 0;
    gr = getgrnam(c->control_group);
    if (!gr) {
        buf_printf(err, "%s:%d: <control group=\"%s\">: unknown group\n",
                   c->file ? c->file : "configuration", c->control_line, c->control_group);
        return -1;
    }
    *gid = gr->gr_gid;
    return 0;
}

/* setgroups, setgid, setuid: all three ids, every thread (glibc's setxid broadcast). */
static int
become_user(const struct conf *c, uid_t uid, gid_t gid, struct buf *err)
{
    if (setgroups(1, &gid) < 0 || setgid(gid) < 0 || setuid(uid) < 0) {
        buf_printf(err, "cannot become user %s: %s\n", c->user, strerror(errno));
        return -1;
    }
    return 0;
}

static int
drop_privileges(const struct conf *c, struct buf *err)
{
    uid_t uid;
    gid_t gid;

    if (!c->user) return 0;
    if (proc_service_user(c, &uid, &gid, err) < 0) return -1;
    /* the user already (the engine under the packaged unit: engine_user_early), and nothing more */
    if (getuid() == uid && geteuid() == uid && !privsep_can_change_user()) return 0;
    /*
     * The kernel clears a thread's capabilities when it changes from root to
     * another user, not when it changes from one user to another.  Started
     * as a user holding CAP_SETUID (the packaged unit's corral), pass through
     * root first: that gives no capability the process did not have, and
     * glibc makes every thread (the workers run already) change with us, so
     * that the change below clears the capabilities of all of them.
     */
    if (geteuid() != 0 && setresuid(0, 0, 0) < 0) {
        buf_printf(err, "cannot become user %s: %s\n", c->user, strerror(errno));
        return -1;
    }
    if (become_user(c, uid, gid, err) < 0) return -1;
    /* the inheritable set, which no change of user clears (this thread's: /proc shows it) */
    if (privsep_caps_clear(err) < 0) return -1;
    /* a process that can get root back, or change user at all, has not dropped anything */
    if ((setuid(0) == 0 && uid != 0) || privsep_can_change_user()) {
        buf_printf(err, "privileges could be regained after dropping them\n");
        return -1;
    }
    log_msg(LOG_INFO, "running as user %s", c->user);
    return 0;
}

/*
 * The engine process, started as a user that is not root (the packaged
 * unit's corral, with CAP_SETUID): becomes its own user before it opens
 * anything, so that every file it makes (state, alert store, outputs,
 * sockets) is that user's from the first start on, and a restart, which
 * opens them again, can.  It keeps only what start-up still needs
 * (privsep_caps_engine_start); drop_privileges gives that up later.  Root
 * (outside systemd) opens as root and drops after, as without privilege
 * separation.
 */
static int
engine_user_early(const struct conf *c, struct buf *err)
{
    uid_t uid;
    gid_t gid;

    if (geteuid() == 0 || !c->user) return 0;
    if (proc_service_user(c, &uid, &gid, err) < 0) return -1;
    if (become_user(c, uid, gid, err) < 0) return -1;
    return privsep_caps_engine_start(err);
}

/* ---- signals ---- */

/*
 * Reloads the configuration and the rules, and logs the outcome line by
 * line, whoever asked (SIGHUP or `corral ctl reload`); done(conn, rc,
 * report) gets the lines too, for the control socket's answer (done NULL:
 * nobody waits).  Under privilege separation a reload that changes the
 * executors waits for the executor process (server_reload), so the outcome
 * may come later; one reload runs at a time, and those asked for meanwhile
 * run together once it is over (they may find a newer file).
 */
static void start_reload(struct daemon *d, struct reload_req *reqs);

static void
answer_reload(struct reload_req *reqs, int rc, const char *report)
{
    struct reload_req *r;

    while ((r = reqs)) {
        reqs = r->next;
        if (r->done) r->done(r->conn, rc, report);
        free(r);
    }
}

static void
reload_done(void *arg, int rc, const char *report)
{
    struct daemon *d = arg;
    struct reload_req *reqs = d->reload_current, *next = d->reload_waiting;
    char *copy, *line, *save = NULL;

    buf_puts(&d->reload_report, report);
    if (!d->stopping) notify(d, "READY=1"); /* abandoned by a stop: STOPPING=1 stands */
    copy = xstrdup(buf_str(&d->reload_report));
    for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        log_msg(rc < 0 ? LOG_ERR : LOG_INFO, "reload: %s", line);
    free(copy);
    d->reload_current = NULL;
    d->reload_waiting = NULL;
    d->reloading = false;
    answer_reload(reqs, rc, buf_str(&d->reload_report));
    buf_reset(&d->reload_report);
    if (!next) return;
    if (d->stopping) {
        log_msg(LOG_WARNING, "reload requested by %s ignored: corrald is stopping", next->by);
        answer_reload(next, -1, "corrald is stopping: reload ignored\n");
        return;
    }
    start_reload(d, next);
}

static void
start_reload(struct daemon *d, struct reload_req *reqs)
{
    struct buf err = BUF_INIT;
    struct conf *c;

    log_msg(LOG_INFO, "reload: requested by %s", reqs->by);
    d->reloading = true;
    d->reload_current = reqs;
    notify(d, "RELOADING=1");
    c = read_conf(d, &err);
    if (!c) {
        buf_printf(&d->reload_report, "reload failed, the running configuration stays:\n%s",
                   buf_str(&err));
        server_reload_failed(d->srv);
        reload_done(d, -1, "");
    } else {
        if (c->warnings) buf_puts(&d->reload_report, c->warnings);
        server_reload(d->srv, c, reload_done, d); /* now, or once the executor process answers */
    }
    buf_free(&err);
}

static void
reload(struct daemon *d, const char *by, control_reload_done done, void *conn)
{
    struct reload_req *r, **tail;

    if (d->stopping) {
        /* a reload now would open the inputs again in a process on its way out */
        log_msg(LOG_WARNING, "reload requested by %s ignored: corrald is stopping", by);
        if (done) done(conn, -1, "corrald is stopping: reload ignored\n");
        return;
    }
    r = xcalloc(1, sizeof(*r));
    r->by = by;
    r->done = done;
    r->conn = conn;
    if (d->reloading) {
        log_msg(LOG_INFO, "reload requested by %s: once the one in progress is done", by);
        for (tail = &d->reload_waiting; *tail; tail = &(*tail)->next) {
        }
        *tail = r;
        return;
    }
    start_reload(d, r);
}

static void
reload_from_control(void *arg, control_reload_done done, void *conn)
{
    reload(arg, "the control socket", done, conn);
}

static void
on_sighup(uv_signal_t *h, int sig)
{
    (void)sig;
    reload(h->data, "SIGHUP", NULL, NULL);
}

static void
close_signal(uv_signal_t *s)
{
    uv_signal_stop(s);
    uv_close((uv_handle_t *)s, NULL);
}

/* Privsep, engine: the executor process has closed its queues, or is gone. */
static void
on_bye(void *arg)
{
    struct daemon *d = arg;

    if (!ipcproxy_said_bye(d->proxy)) {
        if (!d->proxy_ended)
            log_msg(LOG_ERR, "privsep: the executor process is gone before it closed its queues");
        d->exit_code = 1;
    }
    ipcproxy_close(d->proxy, NULL, NULL);
    d->proxy = NULL;
}

static void
shutdown_done(void *arg)
{
    struct daemon *d = arg;

    /*
     * The state is saved: from now on a signal has nothing left to act on,
     * and once its handle is closed it would kill the process with its
     * default action (an exit status of 143 for a clean stop).
     */
    proc_mask_signals(SIG_BLOCK);
    control_close(d->control);
    http_close(d->http);
    d->control = NULL;
    d->http = NULL;
    close_signal(&d->sighup);
    close_signal(&d->sigterm);
    close_signal(&d->sigint);
    close_signal(&d->sigusr1);
    close_signal(&d->sigusr2);
    if (d->proxy) {
        /* the executor process closes its queues (spools synced), says bye, and we are done */
        if (d->proxy_ended || ipcproxy_terminate(d->proxy, on_bye, d) < 0) on_bye(d);
    }
}

static void
on_sigterm(uv_signal_t *h, int sig)
{
    struct daemon *d = h->data;

    if (d->stopping) {
        /* the handler stays: the default action would kill corrald in mid-save */
        log_msg(LOG_INFO, "signal %d: already stopping (the state save is never cut short)", sig);
        return;
    }
    d->stopping = true;
    log_msg(LOG_INFO, "signal %d: stopping", sig);
    notify(d, "STOPPING=1");
    server_shutdown(d->srv, shutdown_done, d);
}

/*
 * Privsep, engine: the connection to the executor process is over without
 * a bye (it died, or broke the protocol): stop as on SIGTERM (state saved),
 * with a nonzero status.  Its spools keep the undelivered alerts.
 */
static void
on_proxy_end(void *arg, const char *reason)
{
    struct daemon *d = arg;

    d->proxy_ended = true;
    d->exit_code = 1;
    log_msg(LOG_ERR, "privsep: the executor process is gone (%s): stopping", reason);
    if (!d->started || d->stopping) return;
    d->stopping = true;
    server_shutdown(d->srv, shutdown_done, d);
}

/*
 * Where SIGUSR1's dump goes: $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=),
 * else the state file's directory: directories of corrald's own.  Never a
 * shared directory such as /tmp, where another user could plant a link.
 */
static bool
dump_dir(const struct conf *c, const char *rt, struct buf *dir)
{
    const char *slash;

    if (rt && rt[0]) {
        buf_printf(dir, "%.*s", (int)strcspn(rt, ":"), rt); /* the first of several */
        return true;
    }
    if (c->state_file && (slash = strrchr(c->state_file, '/'))) {
        buf_append(dir, c->state_file, (size_t)(slash - c->state_file));
        if (!dir->len) buf_putc(dir, '/');
        return true;
    }
    return false;
}

/*
 * SIGUSR1: the open contexts as JSON, written to a new file (O_EXCL and
 * O_NOFOLLOW, mode 0600) and renamed into place, so that no planted link or
 * existing file of another user is followed or overwritten.
 */
static void
on_sigusr1(uv_signal_t *h, int sig)
{
    struct daemon *d = h->data;
    struct buf json = BUF_INIT, path = BUF_INIT, tmp = BUF_INIT;
    int fd = -1, err = 0;
    bool ok;

    (void)sig;
    if (!dump_dir(server_conf(d->srv), d->runtime_dir, &path)) {
        log_msg(LOG_ERR, "SIGUSR1: no directory of corrald's own to write the contexts to: run "
                         "under systemd with RuntimeDirectory=, or configure a <state file>");
        goto out;
    }
    buf_printf(&path, "/corrald-contexts.%ld.json", (long)getpid());
    buf_printf(&tmp, "%s.tmp", buf_str(&path));
    server_contexts_json(d->srv, &json);
    fd = open(buf_str(&tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
        /* a leftover of an interrupted dump: ours to remove (unlink never follows a link) */
        unlink(buf_str(&tmp));
        fd = open(buf_str(&tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    }
    ok = fd >= 0 && durable_write_all(fd, json.p, json.len) == 0;
    err = errno;
    if (fd >= 0 && close(fd) < 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(buf_str(&tmp), buf_str(&path)) < 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        log_msg(LOG_ERR, "cannot write %s: %s", buf_str(&path), strerror(err));
        if (fd >= 0) unlink(buf_str(&tmp));
        goto out;
    }
    log_msg(LOG_INFO, "open contexts written to %s", buf_str(&path));
out:
    buf_free(&json);
    buf_free(&path);
    buf_free(&tmp);
}

static void
on_sigusr2(uv_signal_t *h, int sig)
{
    struct daemon *d = h->data;

    (void)sig;
    log_msg(LOG_INFO, "reopening output files");
    server_reopen_outputs(d->srv);
}

static void
start_signal(struct daemon *d, uv_signal_t *h, uv_signal_cb cb, int sig)
{
    uv_signal_init(d->loop, h);
    h->data = d;
    uv_signal_start(h, cb, sig);
}

/* ---- privilege separation (doc/privsep.md) ---- */

/*
 * Whether to split: <daemon privsep="yes|no">, and when not given, yes when
 * started able to change user (as root, or with CAP_SETUID and CAP_SETGID
 * as the packaged unit starts it) with another user to drop to: the engine
 * then runs as that user and cannot read what only the executor's may.  -1
 * with a line in err when asked for as root without a user: the engine
 * would keep root.
 */
static int
privsep_wanted(const struct conf *c, bool *on, struct buf *err)
{
    bool root = geteuid() == 0;
    struct passwd *pw = c->user ? getpwnam(c->user) : NULL;
    bool other = c->user && (!pw || pw->pw_uid != geteuid());

    switch (c->privsep) {
    case CONF_PRIVSEP_NO: *on = false; return 0;
    case CONF_PRIVSEP_AUTO: *on = other && privsep_can_change_user(); return 0;
    case CONF_PRIVSEP_YES: break;
    }
    if (root && !c->user) {
        buf_printf(err,
                   "%s:%d: <daemon privsep=\"yes\">: started as root, it needs user= (the "
                   "unprivileged user the engine process runs as)\n",
                   c->file ? c->file : "configuration", c->privsep_line);
        return -1;
    }
    *on = true;
    return 0;
}

/* ---- corrald -t ---- */

/* Whether the engine process will open its files as <daemon user> (engine_user_early). */
static bool
engine_opens_as_itself(const struct conf *c)
{
    struct buf err = BUF_INIT;
    bool on = false;

    if (geteuid() == 0) return false; /* root opens as root, and drops after */
    if (privsep_wanted(c, &on, &err) < 0) on = false;
    buf_free(&err);
    return on;
}

/* Whether the engine will run as another user than this one (drop_privileges). */
static bool
engine_drops(const struct conf *c)
{
    struct passwd *pw = c->user ? getpwnam(c->user) : NULL;

    if (!c->user) return false;
    if (!pw) return true; /* service_user says so, with the file */
    return pw->pw_uid != geteuid() && (geteuid() == 0 || privsep_can_change_user());
}

/* "FILE:LINE: " for an element (line 0: the file only). */
static void
where(struct buf *err, const struct conf *c, int line)
{
    const char *file = c->file ? c->file : "(built-in)";

    if (line > 0)
        buf_printf(err, "%s:%d: ", file, line);
    else
        buf_printf(err, "%s: ", file);
}

/*
 * Whether this process may create and rename files in dir, or, when dir is
 * not there, create it (its parent); what and why name the file and what
 * needs it, for the message.
 */
static int
dir_check(const struct conf *c, int line, const char *what, const char *dir, const char *why,
          struct buf *err)
{
    struct stat st;
    char *parent;
    int rc = 0;

    if (stat(dir, &st) == 0) {
        if (access(dir, W_OK | X_OK) == 0) return 0;
        where(err, c, line);
        buf_printf(err, "%s: directory %s: %s (%s)\n", what, dir, strerror(errno), why);
        return -1;
    }
    parent = durable_dir_of(dir);
    if (access(parent, W_OK | X_OK) < 0) {
        where(err, c, line);
        buf_printf(err, "%s: cannot create directory %s in %s: %s (%s)\n", what, dir, parent,
                   strerror(errno), why);
        rc = -1;
    }
    free(parent);
    return rc;
}

/* The executors' spool directory (server_spool_dir), written by the process the queues run in. */
static int
spool_check(const struct conf *c, struct buf *err)
{
    char *dir = c->nexecutors ? server_spool_dir(c) : NULL;
    int rc;

    if (!dir) return 0;
    rc = dir_check(c, c->executors_line, "executor spool", dir,
                   "the spools keep undelivered alerts there", err);
    free(dir);
    return rc;
}

/*
 * What the engine writes and reads once it runs as its user: run as that
 * user.  The state path and the outputs (server_check_files: the output
 * files are opened again on SIGUSR2), the state file's directory (each save writes FILE.tmp.PID
 * beside the state file, the alert store and the silences, and renames it over: tried for real, and
 * removed), the state file itself when the engine reads it at start as its user (opens), the
 * file inputs and their position files (reopened after a rotation, saved), and without privilege
 * separation (spool) the executors' spools.
 */
static int
engine_files_check(const struct conf *c, bool opens, bool spool, struct buf *err)
{
    struct durable_file df;
    int rc = 0;
    size_t i;

    if (server_check_files(c, err) < 0) rc = -1;
    if (c->state_file) {
        if (durable_begin(&df, c->state_file) < 0) {
            where(err, c, c->state_line);
            buf_printf(
                err, "state file %s: cannot save it: %s (each save writes %s.tmp.PID beside it)\n",
                c->state_file, strerror(errno), c->state_file);
            rc = -1;
        } else {
            durable_abort(&df);
        }
        if (opens && access(c->state_file, R_OK) < 0 && errno != ENOENT) {
            where(err, c, c->state_line);
            buf_printf(err, "state file %s: cannot read it: %s\n", c->state_file, strerror(errno));
            rc = -1;
        }
    }
    for (i = 0; i < c->ninputs; i++) {
        const struct conf_input *ci = &c->inputs[i];
        struct buf what = BUF_INIT, pos = BUF_INIT;
        char *dir;
        if (ci->type != CONF_IN_FILE || !ci->path) continue;
        if (access(ci->path, R_OK) < 0 && errno != ENOENT) {
            where(err, c, ci->line);
            buf_printf(err, "input %s: %s: %s (opened again after a rotation)\n", ci->name,
                       ci->path, strerror(errno));
            rc = -1;
        }
        if (ci->position_file)
            buf_puts(&pos, ci->position_file);
        else
            buf_printf(&pos, "%s.corral-pos", ci->path);
        buf_printf(&what, "input %s: position file %s", ci->name, buf_str(&pos));
        dir = durable_dir_of(buf_str(&pos));
        if (dir_check(c, ci->line, buf_str(&what), dir, "the position is saved there", err) < 0)
            rc = -1;
        free(dir);
        buf_free(&what);
        buf_free(&pos);
    }
    if (spool && spool_check(c, err) < 0) rc = -1;
    return rc;
}

/*
 * What a reload reads in the engine process, as its user: the
 * configuration file again (and the api-token-file with it), and with rules
 * (when the same passed as this user, so that nothing is said twice) the
 * rules, the inputs' certificates and keys, the routes, and with executors
 * (without privilege separation) the executors' files and secrets.
 */
static int
reload_check(struct daemon *d, bool rules, bool executors, struct buf *err)
{
    struct conf *c = read_conf(d, err);
    int rc = c ? 0 : -1;

    if (c && rules) rc = server_check_reload(c, executors, err);
    conf_free(c);
    return rc;
}

/*
 * engine_files_check and reload_check as the engine's user, in a child
 * that becomes it, so that `corrald -t` (as root, or as the packaged unit's
 * ExecStartPre=) refuses what the engine will once it runs as that user, at
 * start and at every reload.  0, or -1 with the lines on stderr.
 */
static int
check_engine_files(struct daemon *d, const struct conf *c, bool opens, bool spool, bool rules)
{
    struct buf err = BUF_INIT;
    uid_t uid;
    gid_t gid;
    int status = 0;
    pid_t pid;

    if (proc_service_user(c, &uid, &gid, &err) < 0) {
        fputs(buf_str(&err), stderr);
        buf_free(&err);
        return -1;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "corrald: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int rc = become_user(c, uid, gid, &err) < 0;
        if (!rc) {
            rc |= engine_files_check(c, opens, spool, &err) < 0;
            rc |= reload_check(d, rules, spool, &err) < 0;
        }
        if (rc)
            buf_printf(&err, "(checked as user %s, whom the engine process runs as)\n", c->user);
        fputs(buf_str(&err), stderr);
        fflush(stderr);
        _exit(rc);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/*
 * corrald -t: everything start-up checks (server_check), short of binding
 * sockets, loading state and dropping privileges; and what the engine
 * writes and reads once it runs as its user, at start and at every reload,
 * as that user (check_engine_files); the control socket's group.  Errors as
 * file:line.
 */
static int
check_only(struct daemon *d)
{
    struct buf err = BUF_INIT;
    struct conf *c = read_conf(d, &err);
    size_t rules = 0;
    bool as_engine, privsep = false, checked = true;
    gid_t cgid;
    int rc = 0;

    if (!c) {
        fputs(buf_str(&err), stderr);
        buf_free(&err);
        return 1;
    }
    if (c->warnings) fputs(c->warnings, stderr);
    as_engine = engine_opens_as_itself(c);
    if (privsep_wanted(c, &privsep, &err) < 0) {
        fputs(buf_str(&err), stderr);
        buf_reset(&err);
        rc = 1;
    }
    /* what start-up reads as this user; the state path and outputs: as the engine's user when
     * it has one, else as this one */
    if (server_check(c, &rules, !engine_drops(c), &err) < 0) {
        fputs(buf_str(&err), stderr);
        buf_reset(&err);
        checked = false;
        rc = 1;
    }
    /* the spools are the executor process's: this user's under privilege separation */
    if (engine_drops(c) && check_engine_files(d, c, as_engine, !privsep, checked) < 0) rc = 1;
    if ((privsep || !engine_drops(c)) && spool_check(c, &err) < 0) {
        fputs(buf_str(&err), stderr);
        buf_reset(&err);
        rc = 1;
    }
    if (control_group_id(c, &cgid, &err) < 0) {
        fputs(buf_str(&err), stderr);
        buf_reset(&err);
        rc = 1;
    }
    /* the SNMPv3 trap users' password files, read as start-up reads them */
    if (snmptrap_localize(c, &err) < 0) {
        fputs(buf_str(&err), stderr);
        rc = 1;
    }
    if (rc == 0)
        printf("%s: configuration OK, %zu rule%s\n",
               d->opt.config_path ? d->opt.config_path : "(built-in)", rules,
               rules == 1 ? "" : "s");
    conf_free(c);
    buf_free(&err);
    return rc;
}

/* The engine: a signal the executor process was sent, passed on (g frame); its handlers take it. */
static void
on_passed_signal(void *arg, int sig)
{
    (void)arg;
    raise(sig);
}

#ifdef CORRAL_TEST_HOOKS
/*
 * Test builds only (agent/corrald-test, never installed): what
 * tests/integration/privsep.sh makes the confined engine try, named by
 * $CORRAL_TEST_HOOK: "execve" (the filter must kill it) or "open:PATH"
 * (logs whether it could open PATH).
 */
static void
run_test_hook(const char *hook)
{
    int fd;

    if (!hook) return;
    if (strcmp(hook, "execve") == 0) {
        char *const argv[] = {(char *)"true", NULL};
        log_msg(LOG_WARNING, "test hook: execve /bin/true");
        execv("/bin/true", argv);
        log_msg(LOG_ERR, "test hook: execve returned: %s", strerror(errno));
    } else if (strncmp(hook, "open:", 5) == 0) {
        fd = open(hook + 5, O_RDONLY | O_CLOEXEC);
        log_msg(LOG_WARNING, "test hook: open %s: %s", hook + 5,
                fd < 0 ? strerror(errno) : "opened");
        if (fd >= 0) close(fd);
    }
}

/*
 * Test builds only: hooks that must be armed before the daemon forks its
 * processes, named by $CORRAL_TEST_HOOK: "lose-done:N" (the cluster's Nth
 * done record of a delivery, and that job's acknowledgement, are lost:
 * tests/integration/cluster_done_record.sh).
 */
static void
arm_test_hook(const char *hook)
{
    if (hook && strncmp(hook, "lose-done:", 10) == 0)
        cluster_nats_fault_lose_done((unsigned)strtoul(hook + 10, NULL, 10));
}
#endif

/* The engine's seccomp mode: LeakSanitizer stops the world with ptrace at exit, which kills. */
static enum sandbox_mode
sandbox_mode(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return SANDBOX_LOG;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return SANDBOX_LOG;
#else
    return SANDBOX_KILL;
#endif
#else
    return SANDBOX_KILL;
#endif
}

/* ---- main ---- */

static void
usage(FILE *out)
{
    fputs("usage: corrald [-f CONFIG] [-r RULES]... [-F] [-t] [-p PIDFILE]\n"
          "\n"
          "  -f, --config FILE   configuration file (default: built-in, see corrald(8))\n"
          "  -r, --rules PATH    rule file or directory (replaces the built-in rules)\n"
          "  -F, --foreground    do not detach\n"
          "  -t, --test          check the configuration and rules, then exit 0 or 1\n"
          "  -p, --pidfile FILE  write the process id to FILE\n"
          "      --schema FILE   validate against this schema instead of the built-in one\n"
          "  -V, --version       print the version and exit\n",
          out);
}

static int
daemonize(void)
{
    pid_t pid = fork();
    int fd;

    if (pid < 0) return -1;
    if (pid > 0) _exit(0);
    if (setsid() < 0) return -1;
    pid = fork();
    if (pid < 0) return -1;
    if (pid > 0) _exit(0);
    if (chdir("/") < 0) return -1;
    fd = open("/dev/null", O_RDWR);
    if (fd < 0) return -1;
    dup2(fd, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    if (fd > STDERR_FILENO) close(fd);
    return 0;
}

/*
 * The command line into o; MODE_DONE once --help or --version has
 * answered; -1 on a usage error, reported.  extra_rules has room for every
 * argument.
 */
static int
parse_options(struct options *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'f'},
        {"rules", required_argument, NULL, 'r'},
        {"foreground", no_argument, NULL, 'F'},
        {"test", no_argument, NULL, 't'},
        {"pidfile", required_argument, NULL, 'p'},
        {"schema", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;

    o->mode = MODE_RUN;
    o->extra_rules = xcalloc((size_t)argc, sizeof(char *));
    while ((opt = getopt_long(argc, argv, "f:r:Ftp:Vh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'f': o->config_path = optarg; break;
        case 'r': o->extra_rules[o->nextra_rules++] = optarg; break;
        case 'F': o->foreground = true; break;
        case 't': o->mode = MODE_CHECK; break;
        case 'p': o->pidfile = optarg; break;
        case 's':
            free(o->schema);
            o->schema = xstrdup(optarg);
            break;
        case 'V': puts("corrald " PACKAGE_VERSION); return o->mode = MODE_DONE;
        case 'h': usage(stdout); return o->mode = MODE_DONE;
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return -1;
    }
    return o->mode;
}

/* The executor process reads the configuration again for a reload, as it was read at start. */
static struct conf *
read_conf_again(void *arg, struct buf *err)
{
    return read_conf(arg, err);
}

/*
 * Privilege separation, the parent: the executor process (execproc.h),
 * which holds the executors' secrets and is the one systemd and the pid
 * file know.  Its exit status is corrald's.  Takes c.
 */
static int
run_executor_process(struct daemon *d, struct conf *c, int fd, pid_t engine)
{
    struct execproc_args a = {
        .pidfile = d->pidfile,
        .read_conf = read_conf_again,
        .read_conf_arg = d,
    };

    return execproc_run(c, fd, engine, &a);
}

/*
 * Privilege separation, the child: what makes it the engine process before
 * it starts as corrald does without privilege separation.  Its environment
 * is scrubbed (no secret stays in its memory), it becomes the service user
 * early when not root, and its queues are the executor process's behind a
 * proxy, which must have said hello (its executors are open, their spools
 * replayed) before anything starts.  -1 (logged) when it cannot be.
 */
static int
become_engine(struct daemon *d, const struct conf *c, int fd)
{
    struct buf err = BUF_INIT;
    int rc = -1;

#ifdef CORRAL_TEST_HOOKS
    if (getenv("CORRAL_TEST_HOOK")) d->test_hook = xstrdup(getenv("CORRAL_TEST_HOOK"));
#endif
    d->executor_pid = getppid();
    privsep_scrub_environment();
    if (engine_user_early(c, &err) < 0) {
        fputs(buf_str(&err), stderr);
        log_msg(LOG_ERR, "privsep: the engine process could not become its user: not started");
        goto out;
    }
    d->pidfile = NULL; /* the executor process's, the main one */
    d->loop = uv_default_loop();
    d->srv = server_new(d->loop); /* before the loop first runs (it configures the loop) */
    d->proxy = ipcproxy_new(d->loop, fd, NULL, on_proxy_end, d);
    if (d->proxy) ipcproxy_set_signal(d->proxy, on_passed_signal, d);
    /* the executor process opens the executors (replaying spools), then says hello */
    while (d->proxy && !ipcproxy_ready(d->proxy) && !d->proxy_ended &&
           uv_run(d->loop, UV_RUN_ONCE)) {
    }
    if (!d->proxy || !ipcproxy_ready(d->proxy)) {
        log_msg(LOG_ERR, "privsep: no executors from the executor process: not started");
        goto out;
    }
    server_set_proxy(d->srv, d->proxy);
    rc = 0;
out:
    buf_free(&err);
    return rc;
}

/*
 * The engine under privilege separation, once started: the change of user
 * cleared the parent-death signal that privsep_split set, so it is set
 * again (the socketpair's end is the other way to learn of it), unless the
 * executor process is gone already; then, last, the seccomp filter allows
 * only what the engine needs from here on.  -1 (reported) on failure.
 */
static int
confine_engine(struct daemon *d, const struct conf *cur)
{
    struct buf err = BUF_INIT;

    if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 || getppid() != d->executor_pid) {
        log_msg(LOG_ERR, "privsep: the executor process is gone: not started");
        return -1;
    }
    if (sandbox_engine(sandbox_mode(), &err) < 0) {
        fputs(buf_str(&err), stderr);
        buf_free(&err);
        return -1;
    }
    log_msg(LOG_INFO,
            "privilege separation: engine process %ld as user %s (seccomp on%s), "
            "executor process %ld",
            (long)getpid(), cur->user ? cur->user : "(unchanged)",
            sandbox_mode() == SANDBOX_LOG ? ", log mode: a sanitizer build" : "", (long)getppid());
    buf_free(&err);
    return 0;
}

/*
 * The started engine's doors and its drop: the control socket and the
 * status page are opened, and the pid file written, while still able to
 * (as root: /run is usually root's); then the privileges go, and under
 * privilege separation the engine is confined.  -1 (reported) when the
 * engine must not run on.
 */
static int
open_and_drop(struct daemon *d)
{
    const struct conf *cur = server_conf(d->srv);
    struct buf err = BUF_INIT;
    int rc = -1;

    if (cur->control_socket) {
        gid_t cgid;
        bool known;
        /* an unknown group (which -t refuses): the socket is its owner's only */
        known = control_group_id(cur, &cgid, &err) == 0;
        d->control =
            control_open(d->loop, cur->control_socket, cgid, known ? cur->control_mode : 0600,
                         d->srv, reload_from_control, d, &err);
        if (err.len) log_msg(LOG_ERR, "%s", buf_str(&err));
    }
    if (cur->stats_listen) {
        buf_reset(&err);
        d->http = http_open(d->loop, cur->stats_listen, d->srv, &err);
        if (!d->http)
            log_msg(LOG_ERR, "%s", buf_str(&err));
        else
            log_msg(LOG_INFO, "status page at http://%s/, metrics at /metrics", cur->stats_listen);
    }
    /* before the drop: the pid file's directory (/run) is usually root's */
    if (d->pidfile && proc_write_pidfile(d->pidfile) < 0)
        log_msg(LOG_WARNING, "cannot write pidfile %s: %s", d->pidfile, strerror(errno));
    buf_reset(&err);
    if (drop_privileges(cur, &err) < 0) {
        fputs(buf_str(&err), stderr);
        if (d->pidfile) unlink(d->pidfile);
        goto out;
    }
    if (d->proxy && confine_engine(d, cur) < 0) goto out;
    rc = 0;
out:
    buf_free(&err);
    return rc;
}

/*
 * The engine: corrald itself without privilege separation, the child with
 * it.  Starts the server on c (taken), opens its doors, drops privileges,
 * tells systemd it is ready and runs the loop until a stop; returns the
 * exit status.
 */
static int
run_engine(struct daemon *d, struct conf *c)
{
    struct dnscache *dns;
    struct buf err = BUF_INIT;
    int rc;

    if (!d->loop) d->loop = uv_default_loop();
    start_signal(d, &d->sighup, on_sighup, SIGHUP);
    start_signal(d, &d->sigterm, on_sigterm, SIGTERM);
    start_signal(d, &d->sigint, on_sigterm, SIGINT);
    start_signal(d, &d->sigusr1, on_sigusr1, SIGUSR1);
    start_signal(d, &d->sigusr2, on_sigusr2, SIGUSR2);
    /* what came while blocked reaches the handlers now, and their callbacks once the loop runs */
    proc_mask_signals(SIG_UNBLOCK);
    if (!d->srv) d->srv = server_new(d->loop);
    rc = server_start(d->srv, c, &err); /* c is the server's now */
    if (rc < 0) {
        fputs(buf_str(&err), stderr);
        log_msg(LOG_ERR, "not started");
    }
    buf_free(&err);
    /* on a start-up failure the loop's handles are not closed: the process is ending */
    if (rc < 0) return 1;
    d->started = true;
    if (open_and_drop(d) < 0) return 1;
    notify(d, "READY=1");
    log_msg(LOG_INFO, "started");
#ifdef CORRAL_TEST_HOOKS
    if (d->proxy) run_test_hook(d->test_hook);
#endif

    dns = dnscache_new(d->loop, NULL); /* $(dns-resolve-ip) must not block the loop */
    resolver_set(dnscache_lookup, dns);
    server_set_dnscache(d->srv, dns);
    uv_run(d->loop, UV_RUN_DEFAULT);
    resolver_set(NULL, NULL);
    server_set_dnscache(d->srv, NULL);
    dnscache_free(dns);

    /* after a privilege drop the directory may no longer be ours to remove from */
    if (d->pidfile && unlink(d->pidfile) < 0 && errno != ENOENT)
        log_msg(LOG_INFO, "pidfile %s left in place: %s", d->pidfile, strerror(errno));
    if (server_final_save_failed(d->srv)) {
        /* a stop that loses the state is not a clean one: the service manager must hear of it */
        log_msg(LOG_ERR, "the state could not be saved at shutdown: its open contexts are lost");
        d->exit_code = 1;
    }
    if (d->exit_code) log_msg(LOG_ERR, "exiting with status %d", d->exit_code);
    log_msg(LOG_INFO, "stopped");
    uv_loop_close(d->loop);
    return d->exit_code;
}

/*
 * The configuration as the daemon starts on it, with the process made
 * ready for it: logging as configured, detached (unless -F), SIGPIPE
 * ignored, the SNMPv3 trap users' keys derived; *privsep says whether to
 * split.  NULL (reported) when corrald cannot start.
 */
static struct conf *
prepare(struct daemon *d, bool *privsep)
{
    struct buf err = BUF_INIT;
    struct conf *c = read_conf(d, &err);

    if (!c) goto fail;
    log_setup("corrald", c->log_level, c->log_to);
    log_conf_warnings(c);
    if (!d->pidfile && c->pidfile) d->pidfile = d->pidfile_buf = xstrdup(c->pidfile);
    if (!d->opt.foreground && daemonize() < 0) {
        log_msg(LOG_ERR, "cannot detach: %s", strerror(errno));
        goto fail;
    }
    /* a broken pipe (stdout closed by a reader) must not kill the daemon */
    signal(SIGPIPE, SIG_IGN);
    if (getenv("RUNTIME_DIRECTORY")) d->runtime_dir = xstrdup(getenv("RUNTIME_DIRECTORY"));
    if (privsep_wanted(c, privsep, &err) < 0) goto fail;
    /* SNMPv3 trap users: keys from their passwords here, before the engine process exists */
    if (snmptrap_localize(c, &err) < 0) goto fail;
    buf_free(&err);
    return c;
fail:
    fputs(buf_str(&err), stderr);
    conf_free(c);
    buf_free(&err);
    return NULL;
}

/*
 * The daemon: one process, or under privilege separation two, forked
 * before anything opens an executor so that the engine never has their
 * secrets in memory.  Returns this process's exit status.
 */
static int
run_daemon(struct daemon *d)
{
    struct buf err = BUF_INIT;
    struct conf *c;
    bool privsep = false;
    pid_t engine = 0;
    int fd = -1;

    /*
     * From here on a signal waits (blocked, then queued by its handler) until
     * the loop runs: start-up reads the state and the rules, which can take a
     * while, and a SIGHUP or SIGTERM then must neither kill corrald with its
     * default action nor be lost.
     */
    proc_mask_signals(SIG_BLOCK);
    c = prepare(d, &privsep);
    if (!c) return 1;
    if (!privsep) return run_engine(d, c);
    switch (privsep_split(&fd, &engine, &err)) {
    case PRIVSEP_FAILED: fputs(buf_str(&err), stderr); break;
    case PRIVSEP_EXECUTOR: return run_executor_process(d, c, fd, engine);
    case PRIVSEP_ENGINE:
        if (become_engine(d, c, fd) == 0) return run_engine(d, c);
        break;
    }
    buf_free(&err);
    conf_free(c);
    return 1;
}

/* Parses the command line and runs what it asks for: a check (-t) or the daemon. */
int
main(int argc, char **argv)
{
    struct daemon d;
    int rc;

    memset(&d, 0, sizeof(d));
    log_setup("corrald", NULL, NULL); /* journal or terminal format from the first line on */
    rc = parse_options(&d.opt, argc, argv);
    d.pidfile = d.opt.pidfile;
    d.rules_dir = find_file(CORRAL_RULESDIR, "../rules");
    /* not installed, built out of the source tree (build/, as README.md says): the source's rules
     */
    if (access(d.rules_dir, R_OK) < 0 && access(CORRAL_SOURCE_RULESDIR, R_OK) == 0) {
        free(d.rules_dir);
        d.rules_dir = xstrdup(CORRAL_SOURCE_RULESDIR);
    }
#ifdef CORRAL_TEST_HOOKS
    arm_test_hook(getenv("CORRAL_TEST_HOOK"));
#endif
    switch (rc) {
    case MODE_CHECK: rc = check_only(&d); break;
    case MODE_RUN: rc = run_daemon(&d); break;
    case MODE_DONE: rc = 0; break;
    default: rc = 2; break;
    }
    server_free(d.srv);
    free(d.rules_dir);
    free(d.opt.schema);
    free(d.opt.extra_rules);
    free(d.pidfile_buf);
    free(d.runtime_dir);
    buf_free(&d.reload_report);
#ifdef CORRAL_TEST_HOOKS
    free(d.test_hook);
#endif
    return rc;
}
