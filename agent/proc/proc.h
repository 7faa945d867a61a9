/*
 * proc: what both of corrald's processes do to themselves alike, the
 * engine (corrald.c) and the executor process (execproc.c): tell systemd
 * how they are, write the pid file, look up the service user, and hold
 * back the signals corrald handles until their handlers are in place.
 */
#ifndef CORRAL_PROC_H
#define CORRAL_PROC_H

#include <sys/types.h>

#include "agent/conf/conf.h"
#include "engine/buf.h"

/*
 * sd_notify(3) without libsystemd: state ("READY=1", "RELOADING=1", ...) to
 * $NOTIFY_SOCKET, if set; a failure to send is logged, nothing else.
 */
void proc_sd_notify(const char *state);

/* Writes this process's id to path; -1 with errno when it cannot. */
int proc_write_pidfile(const char *path);

/* The uid and gid of <daemon user> (and group); -1 with a line in err. */
int proc_service_user(const struct conf *c, uid_t *uid, gid_t *gid, struct buf *err);

/*
 * Blocks (SIG_BLOCK) or unblocks (SIG_UNBLOCK) SIGHUP, SIGTERM, SIGINT,
 * SIGUSR1 and SIGUSR2: blocked, a signal waits until its handler runs
 * instead of killing the process with its default action.
 */
void proc_mask_signals(int how);

#endif
