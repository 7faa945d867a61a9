/*
 * sandbox: confines corrald's engine process when it runs privilege-
 * separated (doc/privsep.md): no_new_privs, then a seccomp filter that
 * allows the system calls the engine needs (inputs, outputs, HTTP, control
 * socket, state saves in a forked child, libuv's threads) and kills the
 * process on any other, execve and execveat first.  socket() is allowed
 * for AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK only (others fail with
 * EAFNOSUPPORT, as systemd's RestrictAddressFamilies= does), and clone3
 * fails with ENOSYS so that the C library falls back to clone.
 *
 * The filter covers every thread of the process, those already running
 * too (SCMP_FLTATR_CTL_TSYNC), every thread created afterwards and the
 * saving child; it cannot be removed.  Load it after the privilege drop
 * and after everything that starts threads or loads libraries at start-up.
 *
 * The allowlist was derived by running corrald under `strace -f -c` with
 * every input kind, both outputs, HTTP, the control socket's commands,
 * reload, save, SIGUSR1/2 and stop (doc/privsep.md says how to redo it),
 * plus what the C library and libuv use on other paths.
 */
#ifndef CORRAL_SANDBOX_H
#define CORRAL_SANDBOX_H

#include "engine/buf.h"

enum sandbox_mode {
    SANDBOX_KILL, /* a call outside the list kills the process (SIGSYS) */
    SANDBOX_LOG,  /* it is allowed and logged by the kernel (deriving the list anew) */
};

/* Sets no_new_privs and loads the engine's filter for this process; -1 with a line in err. */
int sandbox_engine(enum sandbox_mode mode, struct buf *err);

#endif
