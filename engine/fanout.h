/*
 * fanout: runs independent pieces of work on a few short-lived threads, the
 * caller's among them.  For work done once (building the rule trees of a
 * load, the shards of the parallel engine), not per message: each call
 * starts its threads and joins them before it returns.
 */
#ifndef CORRAL_FANOUT_H
#define CORRAL_FANOUT_H

#include <stddef.h>

/*
 * Calls fn(arg, i) once for every i below n, on up to threads threads (the
 * caller's and threads - 1 started for the call; fewer when n is smaller or
 * a thread cannot be started), each taking the next i that no other has
 * taken.  In which order the pieces run, and on which thread, is not set:
 * fn must only touch what piece i owns.  Returns when every call returned.
 */
void fanout_run(unsigned threads, size_t n, void (*fn)(void *arg, size_t i), void *arg);

#endif
