/*
 * privsep: splitting corrald into its engine and executor processes
 * (doc/privsep.md).  privsep_split makes the socketpair and forks; the
 * child is the engine, which then scrubs its environment (the executors'
 * *-env secrets, and whatever a script's secret the service manager put
 * there) before it reads any input, and later drops privileges and loads
 * its seccomp filter (sandbox.h).  The parent is the executor.
 *
 * corrald.c calls both when <daemon privsep> is on (doc/privsep.md).
 */
#ifndef CORRAL_PRIVSEP_H
#define CORRAL_PRIVSEP_H

#include <stdbool.h>
#include <sys/types.h>

#include "engine/buf.h"

enum privsep_role {
    PRIVSEP_FAILED = -1,
    PRIVSEP_ENGINE,   /* the child */
    PRIVSEP_EXECUTOR, /* the parent */
};

/*
 * Forks.  *fd gets this process's end of the socketpair (close-on-exec,
 * non-blocking); the executor also gets the engine's pid in *engine_pid.
 * The engine dies with SIGTERM when the executor does (PR_SET_PDEATHSIG),
 * besides seeing the socketpair's end.  PRIVSEP_FAILED with a line in err.
 */
enum privsep_role privsep_split(int *fd, pid_t *engine_pid, struct buf *err);

/*
 * The engine's environment: every variable but TZ, LANG, LANGUAGE, LC_*
 * and TMPDIR is removed, and its bytes overwritten where they lie (the
 * initial block on the stack too, which /proc/PID/environ shows), so that
 * no secret passed in the environment is left in the engine's memory.
 */
void privsep_scrub_environment(void);

/*
 * Whether this process can become another user: it is root, or it holds
 * CAP_SETUID and CAP_SETGID in its effective set (systemd's
 * AmbientCapabilities=, as the packaged unit gives them to the user corral).
 */
bool privsep_can_change_user(void);

/*
 * After a change of user: clears every capability set (effective,
 * permitted, inheritable, ambient).  A change from one user to another that
 * is not root keeps the capabilities the process had, so the engine must
 * give them up itself.  -1 with a line in err.
 */
int privsep_caps_clear(struct buf *err);

/*
 * The engine process, started as a user that is not root, right after the
 * fork (one thread) and its change to its own user: keeps CAP_SETUID,
 * CAP_SETGID (for the final drop, privsep_caps_clear's caller) and
 * CAP_NET_BIND_SERVICE (the inputs bind ports below 1024) in its effective
 * and permitted sets, and nothing else anywhere (CAP_KILL, the ambient and
 * inheritable sets).  -1 with a line in err.
 */
int privsep_caps_engine_start(struct buf *err);

/*
 * The executor process, when it is not root, after the fork: gives up
 * CAP_SETUID, CAP_SETGID, CAP_NET_BIND_SERVICE (the engine's business) and
 * CAP_KILL (signals go to the engine as frames) from every set, so the
 * scripts it runs do not get them either.  Other capabilities (an
 * administrator's, for scripts: CAP_NET_ADMIN for nft-block.sh) stay.
 * -1 with a line in err.
 */
int privsep_caps_executor(struct buf *err);

#endif
