/*
 * queueset: the executors' queues across a reload (see queueset.h).
 */
#include "actions/queueset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/xalloc.h"

static void
queue_gone(void *arg)
{
    (void)arg;
}

/* Matches each of now[0..n) with an unmatched, equal one of was[0..nwas): index or SIZE_MAX. */
static size_t
match(const struct exconf *e, const struct exconf *was, size_t nwas, const bool *taken)
{
    size_t j;

    for (j = 0; j < nwas; j++)
        if (!taken[j] && exconf_equal(e, &was[j])) return j;
    return SIZE_MAX;
}

int
queueset_prepare(struct queueset_stage *st, uv_loop_t *loop, struct queue *const *running,
                 const struct exconf *was, size_t nrunning, const struct exconf *now, size_t n,
                 const char *conf_file, const char *spool_dir, struct buf *err)
{
    size_t i, j;

    memset(st, 0, sizeof(*st));
    st->running = running;
    st->was = was;
    st->now = now;
    st->nrunning = nrunning;
    st->n = n;
    st->queues = xcalloc(n + 1, sizeof(*st->queues));
    st->opened = xcalloc(n + 1, sizeof(*st->opened));
    st->kept = xcalloc(nrunning + 1, sizeof(*st->kept));
    for (i = 0; i < n; i++) {
        j = match(&now[i], was, nrunning, st->kept);
        if (j != SIZE_MAX) {
            st->queues[i] = running[j];
            st->kept[j] = true;
            continue;
        }
        st->queues[i] = queue_open(loop, &now[i], conf_file, spool_dir, err);
        if (!st->queues[i]) {
            queueset_discard(st);
            return -1;
        }
        st->opened[i] = true;
    }
    return 0;
}

void
queueset_commit(struct queueset_stage *st, struct buf *report)
{
    size_t i, j;

    for (j = 0; j < st->nrunning; j++) {
        bool successor = false;
        if (st->kept[j]) continue;
        for (i = 0; i < st->n; i++) {
            if (!st->opened[i] || strcmp(st->now[i].name, st->was[j].name) != 0) continue;
            successor = true;
            if (strcmp(st->now[i].kind, st->was[j].kind) == 0)
                queue_handover(st->running[j], st->queues[i]);
            break;
        }
        if (report && successor) buf_printf(report, "executor changed: %s\n", st->was[j].name);
        if (report && !successor)
            buf_printf(report, "executor removed: %s (its spool keeps what is undelivered)\n",
                       st->was[j].name);
        queue_close(st->running[j], queue_gone, NULL);
    }
    for (i = 0; report && i < st->n; i++) {
        bool known = false;
        if (!st->opened[i]) continue;
        for (j = 0; j < st->nrunning && !known; j++)
            known = strcmp(st->now[i].name, st->was[j].name) == 0;
        if (!known) buf_printf(report, "executor added: %s\n", st->now[i].name);
    }
    free(st->kept);
    free(st->opened);
    st->kept = st->opened = NULL;
    st->queues = NULL; /* the caller's */
}

void
queueset_discard(struct queueset_stage *st)
{
    size_t i, j;

    for (i = 0; st->queues && i < st->n; i++) {
        if (!st->opened || !st->opened[i] || !st->queues[i]) continue;
        /*
         * Opening it rewrote the spool file a running queue of the same
         * name appends to: that one writes it anew, or what it queues from
         * now on would go to a file no start reads (nor its successor).
         */
        for (j = 0; j < st->nrunning; j++)
            if (queue_same_spool(st->running[j], st->queues[i])) queue_respool(st->running[j]);
        queue_close(st->queues[i], queue_gone, NULL);
    }
    free(st->queues);
    free(st->kept);
    free(st->opened);
    memset(st, 0, sizeof(*st));
}

bool
queueset_same(const struct exconf *was, size_t nwas, const struct exconf *now, size_t n)
{
    bool *taken;
    size_t i, j;
    bool same = n == nwas;

    taken = xcalloc(nwas + 1, sizeof(*taken));
    for (i = 0; i < n && same; i++) {
        j = match(&now[i], was, nwas, taken);
        if (j == SIZE_MAX)
            same = false;
        else
            taken[j] = true;
    }
    free(taken);
    return same;
}
