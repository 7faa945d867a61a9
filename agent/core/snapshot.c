/*
 * snapshot: saving the correlation state in a forked child (see snapshot.h).
 *
 * The child reports through a pipe: one status record, then EOF when it
 * exits.  The parent watches the read end with uv_poll and, at EOF, reaps
 * that one pid (waitpid(pid), never -1), so libuv's own SIGCHLD handling of
 * the processes it spawns (the exec executor) is left alone.  The child
 * touches no libuv handle, closes every inherited descriptor (a connection
 * the parent closes must not stay open in it), restores the default signal
 * dispositions (libuv's handlers would write to the parent's signal pipe;
 * signals stay blocked from before the fork until then),
 * and leaves by _exit(): no atexit handler, no flush of stdio buffers it
 * shares with the parent.
 *
 * CORRALD_TEST_SAVE_GATE=FIFO (for the tests only) makes the child wait for
 * the end of FIFO before writing, so that a test can hold a save open.
 */
#include "agent/core/snapshot.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct waiter {
    snapshot_done_fn fn;
    void *arg;
};

struct waiters {
    struct waiter *v;
    size_t n, cap;
};

struct child {
    uv_poll_t poll;
    int fd;
    pid_t pid;
    struct snapshot *sn; /* NULL once the snapshot no longer waits for it */
    int rc, err;         /* as reported by the child */
    bool reported;
};

struct snapshot {
    uv_loop_t *loop;
    struct snapshot_ops ops;
    struct child *child;    /* the save running, or NULL */
    struct waiters current; /* waiting for the running save */
    struct waiters next;    /* waiting for a save after it */
    bool again;             /* a save was asked for while one ran */
    uint64_t started_ns;
    struct snapshot_stats stats;
    const char *gate;
};

/* What the child sends the parent. */
struct report {
    int rc, err;
};

struct snapshot *
snapshot_new(uv_loop_t *loop, const struct snapshot_ops *ops)
{
    struct snapshot *sn = xcalloc(1, sizeof(*sn));

    sn->loop = loop;
    sn->ops = *ops;
    sn->gate = getenv("CORRALD_TEST_SAVE_GATE");
    return sn;
}

const struct snapshot_stats *
snapshot_get_stats(const struct snapshot *sn)
{
    return &sn->stats;
}

static void
waiters_add(struct waiters *w, snapshot_done_fn fn, void *arg)
{
    if (!fn) return;
    w->v = xgrow(w->v, &w->cap, w->n + 1, sizeof(*w->v));
    w->v[w->n].fn = fn;
    w->v[w->n++].arg = arg;
}

/* Runs and forgets the waiters (a done may ask for another save). */
static void
waiters_run(struct waiters *w, int rc)
{
    struct waiters run = *w;
    size_t i;

    memset(w, 0, sizeof(*w));
    for (i = 0; i < run.n; i++) run.v[i].fn(run.v[i].arg, rc);
    free(run.v);
}

static void
waiters_move(struct waiters *to, struct waiters *from)
{
    size_t i;

    for (i = 0; i < from->n; i++) waiters_add(to, from->v[i].fn, from->v[i].arg);
    free(from->v);
    memset(from, 0, sizeof(*from));
}

/* In the child: never returns. */
static void
child_main(struct snapshot *sn, int fd)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD};
    struct report r = {0, 0};
    sigset_t none;
    size_t i;

    /* signals are blocked since before the fork: no libuv handler runs in the child */
    for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) signal(sigs[i], SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* keep 0-2 (a write error message must not land in a reused descriptor) and the pipe */
    if ((fd > 3 && close_range(3, (unsigned)fd - 1, 0) < 0) ||
        close_range((unsigned)fd + 1, ~0u, 0) < 0) {
        /* no close_range (an old kernel, a system call filter): one by one */
        long f, max = sysconf(_SC_OPEN_MAX);
        for (f = 3; f < (max > 0 && max < 65536 ? max : 65536); f++)
            if (f != fd) close((int)f);
    }
    if (sn->gate) {
        char b[256];
        int g = open(sn->gate, O_RDONLY | O_CLOEXEC);
        if (g >= 0) {
            while (read(g, b, sizeof(b)) > 0) continue;
            close(g);
        }
    }
    r.rc = sn->ops.write(sn->ops.arg);
    r.err = r.rc < 0 ? errno : 0;
    if (write(fd, &r, sizeof(r)) < 0) _exit(2);
    _exit(r.rc < 0 ? 1 : 0);
}

static void child_closed(uv_handle_t *h);

/* The child's end: its status, reaped; done with its handle. */
static void
child_finish(struct child *ch, bool kill_it)
{
    struct snapshot *sn = ch->sn;
    char why[128] = "";
    int status = 0;
    pid_t w;

    if (kill_it) kill(ch->pid, SIGKILL);
    do w = waitpid(ch->pid, &status, 0);
    while (w < 0 && errno == EINTR);
    uv_poll_stop(&ch->poll);
    uv_close((uv_handle_t *)&ch->poll, child_closed);
    ch->sn = NULL;
    if (!sn) return;
    sn->child = NULL;
    sn->stats.running = false;
    if (kill_it) {
        /* not a failure: the final save, newer, replaces it */
        if (sn->ops.failed) sn->ops.failed(sn->ops.arg, (long)ch->pid, NULL);
        return;
    }
    sn->stats.last_seconds = (double)(uv_hrtime() - sn->started_ns) / 1e9;
    if (ch->reported && ch->rc == 0 && w == ch->pid && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0) {
        sn->stats.saves++;
        waiters_run(&sn->current, 0);
    } else {
        if (ch->reported && ch->rc < 0)
            snprintf(why, sizeof(why), "%s", strerror(ch->err));
        else if (w == ch->pid && WIFSIGNALED(status))
            snprintf(why, sizeof(why), "the saving process was killed by signal %d",
                     WTERMSIG(status));
        else
            snprintf(why, sizeof(why), "the saving process ended without a result");
        sn->stats.failures++;
        if (sn->ops.failed) sn->ops.failed(sn->ops.arg, (long)ch->pid, why);
        waiters_run(&sn->current, -1);
    }
}

static void
child_closed(uv_handle_t *h)
{
    struct child *ch = h->data;

    close(ch->fd);
    free(ch);
}

static void start(struct snapshot *sn);

static void
on_child(uv_poll_t *p, int status, int events)
{
    struct child *ch = p->data;
    struct snapshot *sn = ch->sn;
    struct report r;
    ssize_t n;

    (void)status;
    (void)events;
    for (;;) {
        n = read(ch->fd, &r, sizeof(r));
        if (n == (ssize_t)sizeof(r)) {
            ch->rc = r.rc;
            ch->err = r.err;
            ch->reported = true;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        break; /* EOF (or a broken pipe): the child has gone */
    }
    child_finish(ch, false);
    /* a done callback may have started the next save already */
    if (sn && !sn->child && (sn->again || sn->next.n)) start(sn);
}

/* Forks a save for the waiters in next; at failure they are answered at once. */
static void
start(struct snapshot *sn)
{
    struct child *ch;
    sigset_t all, old;
    int fds[2];
    uint64_t t0;
    pid_t pid;

    sn->again = false;
    waiters_move(&sn->current, &sn->next);
    if (pipe2(fds, O_CLOEXEC) < 0) goto fail;
    if (sn->ops.before_fork) sn->ops.before_fork(sn->ops.arg);
    t0 = uv_hrtime();
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = fork();
    if (pid != 0) pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        errno = e;
        goto fail;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(sn, fds[1]);
    }
    sn->started_ns = uv_hrtime();
    sn->stats.last_fork_seconds = (double)(sn->started_ns - t0) / 1e9;
    close(fds[1]);
    ch = xcalloc(1, sizeof(*ch));
    ch->fd = fds[0];
    ch->pid = pid;
    ch->sn = sn;
    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
    uv_poll_init(sn->loop, &ch->poll, ch->fd);
    ch->poll.data = ch;
    uv_poll_start(&ch->poll, UV_READABLE | UV_DISCONNECT, on_child);
    sn->child = ch;
    sn->stats.running = true;
    return;
fail:
    sn->stats.failures++;
    if (sn->ops.failed) {
        char why[128];
        snprintf(why, sizeof(why), "cannot start the saving process: %s", strerror(errno));
        sn->ops.failed(sn->ops.arg, 0, why);
    }
    waiters_run(&sn->current, -1);
}

void
snapshot_request(struct snapshot *sn, snapshot_done_fn done, void *arg)
{
    sn->stats.requests++;
    waiters_add(&sn->next, done, arg);
    if (sn->child) {
        sn->again = true;
        return;
    }
    start(sn);
}

int
snapshot_final(struct snapshot *sn)
{
    uint64_t t0 = uv_hrtime();
    int rc;

    if (sn->child) {
        waiters_move(&sn->next, &sn->current);
        child_finish(sn->child, true);
    }
    sn->again = false;
    rc = sn->ops.write(sn->ops.arg);
    sn->stats.last_seconds = (double)(uv_hrtime() - t0) / 1e9;
    if (rc < 0) {
        sn->stats.failures++;
        if (sn->ops.failed) sn->ops.failed(sn->ops.arg, 0, strerror(errno));
    } else {
        sn->stats.saves++;
    }
    waiters_run(&sn->next, rc < 0 ? -1 : 0);
    return rc < 0 ? -1 : 0;
}

void
snapshot_free(struct snapshot *sn)
{
    if (!sn) return;
    if (sn->child) child_finish(sn->child, true);
    free(sn->current.v);
    free(sn->next.v);
    free(sn);
}
