/*
 * execproc: the executor process (execproc.h).  What it waits for before
 * it exits: the engine reaped (SIGCHLD) and the connection over (bye, or
 * its end); then the queues close, their spools synced, and the loop runs
 * out.  A signal meant for corrald (systemd signals the main process, this
 * one) goes on to the engine as a frame on the socketpair.
 */
#include "agent/proc/execproc.h"
#include "actions/executor.h"
#include "actions/ipcserve.h"
#include "actions/queueset.h"
#include "agent/proc/privsep.h"
#include "agent/proc/proc.h"
#include "agent/web/queuectl.h"
#include "agent/core/server.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The executor process: what it serves, and what it waits for before it exits. */
struct executor_proc {
    const struct execproc_args *args;
    struct conf *conf; /* what the queues served were opened from */
    uv_loop_t *loop;
    struct ipcserve *serve;
    pid_t engine;
    uv_signal_t sig[6];
    size_t nsig;
    bool engine_reaped, served_end, closing, terminated;
    unsigned pending_signals; /* bit n: signal n came before the connection was served */
    int engine_status;
    int exit_code;
};

/* The queues are closed: the signal handles go too, and the loop runs out. */
static void
exec_proc_closed(void *arg)
{
    struct executor_proc *x = arg;
    size_t i;

    for (i = 0; i < x->nsig; i++) {
        uv_signal_stop(&x->sig[i]);
        uv_close((uv_handle_t *)&x->sig[i], NULL);
    }
}

/* Once the engine has exited and the connection is over: close the queues, then exit. */
static void
exec_proc_finish(struct executor_proc *x)
{
    if (!x->engine_reaped || !x->served_end || x->closing) return;
    x->closing = true;
    x->exit_code =
        x->terminated && WIFEXITED(x->engine_status) && WEXITSTATUS(x->engine_status) == 0 ? 0 : 1;
    ipcserve_close(x->serve, exec_proc_closed, x);
}

static void
on_served_end(void *arg, const char *reason)
{
    struct executor_proc *x = arg;

    x->served_end = true;
    x->terminated = strcmp(reason, "terminated") == 0;
    if (!x->terminated) {
        log_msg(LOG_ERR,
                "privsep: the engine process is gone (%s): closing the queues (their spools keep "
                "what is undelivered) and stopping",
                reason);
        /* should it still run (a broken protocol), it stops too, saving its state */
        if (!x->engine_reaped) kill(x->engine, SIGTERM);
    }
    exec_proc_finish(x);
}

static void
on_exec_sigchld(uv_signal_t *h, int sig)
{
    struct executor_proc *x = h->data;
    int st;

    (void)sig;
    /* only the engine: the scripts' children are libuv's to reap (by their pid) */
    if (x->engine_reaped || waitpid(x->engine, &st, WNOHANG) != x->engine) return;
    x->engine_reaped = true;
    x->engine_status = st;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        log_msg(LOG_INFO, "privsep: the engine process %ld exited", (long)x->engine);
    else if (WIFEXITED(st))
        log_msg(LOG_ERR, "privsep: the engine process %ld exited with status %d", (long)x->engine,
                WEXITSTATUS(st));
    else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
        log_msg(LOG_ERR,
                "privsep: the engine process %ld was killed by its seccomp filter (SIGSYS: a "
                "system call outside its list)",
                (long)x->engine);
    else if (WIFSIGNALED(st))
        log_msg(LOG_ERR, "privsep: the engine process %ld was killed by signal %d", (long)x->engine,
                WTERMSIG(st));
    exec_proc_finish(x);
}

/*
 * SIGHUP, SIGTERM, SIGINT, SIGUSR1, SIGUSR2: a signal for corrald (systemd signals the main
 * process: this one) goes on to the engine as a frame on the socketpair, which needs no right to
 * signal another user's process (the packaged unit's executor has none).
 * Before the connection is served it waits; after it ended, kill() is the
 * best left (root may).
 */
static void
on_exec_relay(uv_signal_t *h, int sig)
{
    struct executor_proc *x = h->data;

    if (x->engine_reaped) return;
    if (!x->serve)
        x->pending_signals |= 1u << sig;
    else if (ipcserve_signal(x->serve, sig) < 0)
        kill(x->engine, sig);
}

static void
exec_control(void *arg, struct queue **queues, size_t n, const char *args, struct buf *out)
{
    (void)arg;
    queuectl_command_queues(queues, n, args, out);
}

static void
exec_notify(void *arg, const char *state)
{
    (void)arg;
    proc_sd_notify(state);
}

static void
queue_gone(void *arg)
{
    (void)arg;
}

/*
 * The engine asks for a reload of the executors (L): read the same file
 * again, here (nothing of the configuration comes from the engine), and
 * replace the queues as a reload without privilege separation does
 * (queueset.h).  A changed or added executor's secrets are read and its
 * spool replayed now, in this loop turn, as server_reload does in one
 * process; unchanged ones keep running untouched.
 */
static int
exec_reload(void *arg, struct queue *const *running, size_t n, struct queue ***out, size_t *nout,
            struct buf *report)
{
    struct executor_proc *x = arg;
    struct queueset_stage qs;
    struct buf err = BUF_INIT;
    struct conf *c = x->args->read_conf(x->args->read_conf_arg, &err);
    char *dir;
    int rc = -1;

    if (!c) {
        buf_append(report, err.p, err.len);
    } else {
        dir = server_spool_dir(c);
        rc = queueset_prepare(&qs, x->loop, running, x->conf->executors, n, c->executors,
                              c->nexecutors, c->file ? c->file : "(built-in)", dir, report);
        free(dir);
    }
    if (rc == 0) {
        *out = qs.queues;
        *nout = c->nexecutors;
        queueset_commit(&qs, report);
        conf_free(x->conf);
        x->conf = c;
        log_msg(LOG_INFO, "privsep: the executor process reloaded its executors (%zu)", *nout);
    } else {
        conf_free(c);
        log_msg(LOG_ERR, "privsep: the executor process could not reload its executors: the "
                         "running ones stay");
    }
    buf_free(&err);
    return rc;
}

/* The signals corrald handles, relayed to the engine (on_exec_relay). */
static const int relayed[] = {SIGHUP, SIGTERM, SIGINT, SIGUSR1, SIGUSR2};

/*
 * The relays, and SIGCHLD for the engine's end, in place before the
 * signals are unblocked: one that came meanwhile waits for the connection.
 */
static void
watch_signals(struct executor_proc *x)
{
    size_t i;

    for (i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++, x->nsig++) {
        uv_signal_init(x->loop, &x->sig[x->nsig]);
        x->sig[x->nsig].data = x;
        uv_signal_start(&x->sig[x->nsig], on_exec_relay, relayed[i]);
    }
    uv_signal_init(x->loop, &x->sig[x->nsig]);
    x->sig[x->nsig].data = x;
    uv_signal_start(&x->sig[x->nsig], on_exec_sigchld, SIGCHLD);
    on_exec_sigchld(&x->sig[x->nsig++], SIGCHLD); /* it may have died before the handler */
    proc_mask_signals(SIG_UNBLOCK);
}

/*
 * Opens the executors' queues into qs (*n of them opened), the scripts set
 * to run as the service user, as they do without privilege separation;
 * false (ok false already, or a line in err) when they are not all open.
 */
static bool
open_queues(struct executor_proc *x, bool ok, struct queue **qs, size_t *n, struct buf *err)
{
    const struct conf *c = x->conf;
    const char *file = c->file ? c->file : "(built-in)";
    char *dir = server_spool_dir(c);

    if (c->user && geteuid() == 0) {
        uid_t uid;
        gid_t gid;
        if (proc_service_user(c, &uid, &gid, err) < 0)
            ok = false;
        else
            exec_run_as(uid, gid);
    }
    for (*n = 0; ok && *n < c->nexecutors; (*n)++) {
        qs[*n] = queue_open(x->loop, &c->executors[*n], file, dir, err);
        if (!qs[*n]) break;
    }
    free(dir);
    return ok && *n == c->nexecutors;
}

/* Serves the engine on fd: the hello goes out, then the signals that came before it. */
static void
serve(struct executor_proc *x, int fd, struct queue **qs, size_t n)
{
    size_t i;

    /* before the hello goes out: the engine's "started" comes after this line */
    log_msg(LOG_INFO, "privsep: executor process %ld as user %s, engine process %ld",
            (long)getpid(), getpwuid(geteuid()) ? getpwuid(geteuid())->pw_name : "?",
            (long)x->engine);
    x->serve = ipcserve_new(x->loop, fd, qs, n, on_served_end, x);
    for (i = 0; x->serve && i < sizeof(relayed) / sizeof(relayed[0]); i++)
        if (x->pending_signals & (1u << relayed[i])) ipcserve_signal(x->serve, relayed[i]);
}

/*
 * Not started: the engine sees the socketpair close before any hello, and
 * stops; the queues opened close, and the engine is waited for.
 */
static void
not_started(struct executor_proc *x, int fd, struct queue **qs, size_t n, const struct buf *err)
{
    size_t i;

    fputs(buf_str(err), stderr);
    log_msg(LOG_ERR, "privsep: the executors could not be opened: not started");
    close(fd);
    for (i = 0; i < n; i++) queue_close(qs[i], queue_gone, NULL);
    x->closing = true;
    if (!x->engine_reaped) waitpid(x->engine, NULL, 0);
    exec_proc_closed(x);
    uv_run(x->loop, UV_RUN_DEFAULT);
}

int
execproc_run(struct conf *c, int fd, pid_t engine, const struct execproc_args *a)
{
    struct executor_proc x;
    struct buf err = BUF_INIT;
    struct queue **qs = xcalloc(c->nexecutors + 1, sizeof(*qs));
    size_t n = 0;
    bool ok;

    memset(&x, 0, sizeof(x));
    x.args = a;
    x.conf = c;
    x.loop = uv_default_loop();
    x.engine = engine;
    x.exit_code = 1;
    /* not root (the packaged unit): what changing user took is the engine's, not ours */
    ok = privsep_caps_executor(&err) == 0; /* reported below, as a queue that fails */
    if (a->pidfile && proc_write_pidfile(a->pidfile) < 0)
        log_msg(LOG_WARNING, "cannot write pidfile %s: %s", a->pidfile, strerror(errno));
    watch_signals(&x);
    if (open_queues(&x, ok, qs, &n, &err)) serve(&x, fd, qs, n);
    if (!x.serve) {
        not_started(&x, fd, qs, n, &err);
    } else {
        ipcserve_set_control(x.serve, exec_control, NULL);
        ipcserve_set_notify(x.serve, exec_notify, NULL);
        ipcserve_set_reload(x.serve, exec_reload, &x);
        uv_run(x.loop, UV_RUN_DEFAULT);
        log_msg(x.exit_code ? LOG_ERR : LOG_INFO, "privsep: executor process stopped%s",
                x.exit_code ? " (the engine process did not stop cleanly)" : "");
    }
    if (a->pidfile && unlink(a->pidfile) < 0 && errno != ENOENT)
        log_msg(LOG_INFO, "pidfile %s left in place: %s", a->pidfile, strerror(errno));
    free(qs);
    buf_free(&err);
    conf_free(x.conf); /* c, or what the last reload read */
    return x.exit_code;
}
