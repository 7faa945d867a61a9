/*
 * execproc: corrald's executor process under privilege separation
 * (doc/privsep.md).  After privsep_split the parent opens the executors
 * (it alone reads their secrets), keeps their spools and serves the engine
 * process over the socketpair (ipcserve): the engine's queues are proxies
 * of these (ipcproxy).  It relays the signals corrald handles to the
 * engine, reloads its executors when the engine asks (reading the same
 * configuration file again itself: nothing of it comes from the engine),
 * and stops when the engine does.
 */
#ifndef CORRAL_EXECPROC_H
#define CORRAL_EXECPROC_H

#include <sys/types.h>

#include "agent/conf/conf.h"
#include "engine/buf.h"

/* Reads the configuration as corrald read it at start (-f, -r); NULL with lines in err. */
typedef struct conf *execproc_read_conf_fn(void *arg, struct buf *err);

struct execproc_args {
    const char *pidfile;              /* written at start, removed at the end; NULL: none */
    execproc_read_conf_fn *read_conf; /* for the engine's reloads of the executors */
    void *read_conf_arg;
};

/*
 * Runs the executor process on the default libuv loop: opens c's executors,
 * serves the engine (pid engine) on fd until the engine has terminated it
 * or is gone, and returns the process's exit status: 0 when the engine
 * stopped cleanly.  Takes c.  Expects the signals corrald handles blocked
 * (proc_mask_signals): it unblocks them once they are relayed; and SIGPIPE
 * ignored: an engine that is gone must not kill it mid-write.
 */
int execproc_run(struct conf *c, int fd, pid_t engine, const struct execproc_args *a);

#endif
