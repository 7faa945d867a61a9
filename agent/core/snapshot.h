/*
 * snapshot: saving the correlation state without stopping the loop.
 *
 * A save forks, as Redis's BGSAVE does: the child holds a copy-on-write
 * image of the process as it was at fork time, writes it and _exit()s while
 * the parent goes on serving.  One save runs at a time; requests made while
 * one runs are coalesced into one more save after it.  At shutdown
 * snapshot_final() makes the last save in-process (the loop is stopping).
 */
#ifndef CORRAL_SNAPSHOT_H
#define CORRAL_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

struct snapshot;

struct snapshot_ops {
    /* Writes the state: in the child (or in-process at the end); 0 or -1 with errno. */
    int (*write)(void *arg);
    /* In the parent, after a failed save: log it, remove what the child left (pid). */
    void (*failed)(void *arg, long pid, const char *why);
    void *arg;
    /* May be NULL: in the parent just before it forks (corrald's workers stop between two
     * batches, so that the child's image holds no half-processed one). */
    void (*before_fork)(void *arg);
};

struct snapshot_stats {
    uint64_t requests; /* saves asked for, coalesced ones included */
    uint64_t saves, failures;
    double last_seconds;      /* how long the last save took, fork to reaping */
    double last_fork_seconds; /* how long fork() stopped the loop at the last save */
    bool running;
};

/* Done callback of a request: rc 0 when the save it waited for succeeded, else -1. */
typedef void (*snapshot_done_fn)(void *arg, int rc);

struct snapshot *snapshot_new(uv_loop_t *loop, const struct snapshot_ops *ops);
/*
 * Asks for a save that starts after this call; done (may be NULL) runs when
 * it has finished.  Starts one now, or after the one running.
 */
void snapshot_request(struct snapshot *sn, snapshot_done_fn done, void *arg);
/*
 * The last save, in-process: a running child is killed first (its image is
 * older).  Every waiting done runs with its result.  0 or -1.
 */
int snapshot_final(struct snapshot *sn);
const struct snapshot_stats *snapshot_get_stats(const struct snapshot *sn);
/* Frees it; a child still running is killed and reaped. */
void snapshot_free(struct snapshot *sn);

#endif
