/*
 * cluster_delivery: the routed alerts of a cluster, through its work queue
 * (see cluster_delivery.h, doc/scaling.md).
 *
 * Publishing (loop thread).  An alert that a partition generated carries
 * corral.cluster_id, NAME/<partition>/<sequence>/<n>: the same on the
 * owner that generated it and on a new owner that generates it again when
 * it replays the stream after a failure.  It is published, msg_encode'd,
 * for each executor its routes chose, under the id "<cluster_id>/<executor>":
 * JetStream stores the first publish of an id and drops the others within
 * its duplicate window, so a replay does not deliver again.  The node that
 * generated it does not submit it to its own queue.
 *
 * Pulling (the backend's threads, then the loop).  Each node pulls, for
 * each executor it has, from the executor's consumer, which every node
 * shares: an alert goes to one node at a time.  The loop decodes it and
 * submits it to the executor's queue (server.c's executor_submit: here, or
 * the executor process's under privilege separation), and keeps the job,
 * keyed by executor and cluster id, until the queue's observer reports an
 * end for it: delivered, dead-lettered, or refused (a duplicate, over its
 * rate, its hard bounds): then it is acknowledged and leaves the work
 * queue.  While the queue retries, the tick says the job is in progress,
 * so that the ack wait only runs out when the node is gone or cut off:
 * then the servers deliver it again, to any node.
 *
 * Why after delivery and not once the spool has it: a spool is one node's
 * disk, and what it holds waits for that node to come back; acknowledged
 * after delivery, an alert stays in the replicated work queue until a
 * receiver has it, whichever node dies.  The price is at least once to the
 * receivers (a node that dies between delivery and acknowledgement, or
 * whose spool delivers at its restart what another node delivered since):
 * corral.cluster_id lets them deduplicate.  A second copy of an alert in
 * the queue (the servers forgot its id: a restart, a stream reset), or one
 * delivered again after its acknowledgement was lost, never reaches this
 * file: the backend acknowledges it unseen (cluster.h).
 */
#include "agent/cluster/cluster_delivery.h"
#include "agent/cluster/cluster.h"
#include "engine/clock.h"
#include "engine/log.h"
#include "engine/nv.h"
#include "engine/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PENDING_MAX 256   /* per executor and node: pulled, not yet ended */
#define PROGRESS_MS 10000 /* a third of the consumers' ack wait (30 s) */
#define RETURN_MS   5000  /* an alert for an executor this node lacks: to another in 5 s */
#define NBUCKETS    1024

/* An alert pulled, on its way from the backend's thread to the loop. */
struct arrival {
    struct arrival *next;
    struct cluster_job *job;
    const char *executor, *id, *data; /* in the job's message, which lives as long as it */
    size_t len;
};

/* An alert submitted to an executor's queue here, not yet ended. */
struct pend {
    struct pend *next;
    char *key; /* "<executor>\n<cluster_id>" */
    struct cluster_job *job;
    uint64_t progress_ms;
};

struct cluster_delivery {
    uv_loop_t *loop;
    const struct cluster_backend *be;
    struct cluster_queue *q;
    cluster_delivery_fn fn;
    void *arg;
    nv_handle h_id;
    uv_async_t *async;
    struct msg *m;       /* reused: what is pulled, decoded */
    struct buf enc, key; /* reused */
    struct pend *buckets[NBUCKETS];
    unsigned pending;
    /* shared with the backend's threads */
    pthread_mutex_t lock;
    struct arrival *head, *tail;
    bool stopping;
    struct cluster_delivery_stats st;
};

static uint64_t
fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;

    while (n--) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static struct pend **
find(struct cluster_delivery *d, const char *key, size_t len)
{
    struct pend **pp = &d->buckets[fnv(key, len) % NBUCKETS];

    while (*pp && strcmp((*pp)->key, key) != 0) pp = &(*pp)->next;
    return pp;
}

/* "<executor>\n<cluster_id>" in d->key; false: m has no cluster id. */
static bool
make_key(struct cluster_delivery *d, const char *executor, const struct msg *m, const char *id)
{
    size_t len = 0;
    const char *cid = msg_get(m, d->h_id, &len);

    buf_reset(&d->key);
    buf_printf(&d->key, "%s\n", executor);
    if (cid && len)
        buf_append(&d->key, cid, len);
    else if (id)
        buf_printf(&d->key, "%s", id);
    else
        return false;
    return true;
}

/* The backend's thread: a job for the loop. */
static void
on_job(void *arg, struct cluster_job *job, const char *cons, const char *id, const char *data,
       size_t len)
{
    struct cluster_delivery *d = arg;
    struct arrival *a;

    pthread_mutex_lock(&d->lock);
    if (d->stopping) {
        pthread_mutex_unlock(&d->lock);
        d->be->wq_free(job);
        return;
    }
    a = xcalloc(1, sizeof(*a));
    a->job = job;
    a->executor = cons;
    a->id = id;
    a->data = data;
    a->len = len;
    if (d->tail)
        d->tail->next = a;
    else
        d->head = a;
    d->tail = a;
    pthread_mutex_unlock(&d->lock);
    uv_async_send(d->async);
}

static void
arrive(struct cluster_delivery *d, struct arrival *a)
{
    struct pend **pp, *p;

    d->st.pulled++;
    msg_reset(d->m);
    if (!a->len || msg_decode(d->m, a->data, a->len) != a->len) {
        /* nothing a node could deliver: out of the queue, counted */
        log_msg(LOG_ERR, "cluster: a damaged alert in the work queue for %s: dropped", a->executor);
        d->st.acked++;
        d->be->wq_ack(a->job);
        return;
    }
    if (!make_key(d, a->executor, d->m, a->id)) {
        d->be->wq_ack(a->job);
        d->st.acked++;
        return;
    }
    /* the id travels with the alert, for receivers to deduplicate */
    if (!msg_get(d->m, d->h_id, NULL) && a->id) msg_set(d->m, d->h_id, a->id, strlen(a->id));
    pp = find(d, d->key.p, d->key.len);
    if (*pp) {
        /* delivered to this node again while its queue still has it: the new delivery is
         * the one to acknowledge, the queue does not get it twice */
        d->be->wq_free((*pp)->job);
        (*pp)->job = a->job;
        (*pp)->progress_ms = clock_mono_ms();
        d->st.redelivered++;
        return;
    }
    p = xcalloc(1, sizeof(*p));
    p->key = xstrdup(d->key.p);
    p->job = a->job;
    p->progress_ms = clock_mono_ms();
    *pp = p;
    d->pending++;
    /* the queue's events may come at once, from inside fn: the job is known by then */
    if (!d->fn(d->arg, a->executor, d->m)) {
        pp = find(d, p->key, strlen(p->key));
        if (*pp == p) {
            *pp = p->next;
            d->pending--;
            d->be->wq_nak(p->job, RETURN_MS);
            d->st.returned++;
            free(p->key);
            free(p);
        }
    }
}

static void
on_async(uv_async_t *h)
{
    struct cluster_delivery *d = h->data;
    struct arrival *list, *a;

    pthread_mutex_lock(&d->lock);
    list = d->head;
    d->head = d->tail = NULL;
    pthread_mutex_unlock(&d->lock);
    while ((a = list)) {
        list = a->next;
        arrive(d, a);
        free(a);
    }
}

struct cluster_delivery *
cluster_delivery_new(uv_loop_t *loop, const struct cluster_backend *be, struct cluster_log *log,
                     const char *const *executors, size_t nexecutors, cluster_delivery_fn fn,
                     void *arg, struct buf *err)
{
    struct cluster_delivery *d = xcalloc(1, sizeof(*d));

    d->loop = loop;
    d->be = be;
    d->fn = fn;
    d->arg = arg;
    d->h_id = nv_intern_str("corral.cluster_id");
    d->m = msg_new();
    pthread_mutex_init(&d->lock, NULL);
    d->async = xcalloc(1, sizeof(*d->async));
    uv_async_init(loop, d->async, on_async);
    d->async->data = d;
    if (!(d->q = be->wq_open(log, executors, nexecutors, PENDING_MAX, on_job, d, err))) {
        cluster_delivery_free(d);
        return NULL;
    }
    return d;
}

void
cluster_delivery_pull(struct cluster_delivery *d, const char *const *executors, size_t n)
{
    d->be->wq_pull(d->q, executors, n);
}

static void
free_async(uv_handle_t *h)
{
    free(h);
}

void
cluster_delivery_free(struct cluster_delivery *d)
{
    struct arrival *a;
    struct pend *p;
    size_t b;

    if (!d) return;
    /* the jobs go back before the queue closes: the backend's threads free new ones at once */
    pthread_mutex_lock(&d->lock);
    d->stopping = true;
    a = d->head;
    d->head = d->tail = NULL;
    pthread_mutex_unlock(&d->lock);
    while (a) {
        struct arrival *next = a->next;
        d->be->wq_free(a->job);
        free(a);
        a = next;
    }
    for (b = 0; b < NBUCKETS; b++)
        while ((p = d->buckets[b])) {
            d->buckets[b] = p->next;
            d->be->wq_free(p->job);
            free(p->key);
            free(p);
        }
    if (d->q) d->be->wq_close(d->q);
    uv_close((uv_handle_t *)d->async, free_async);
    pthread_mutex_destroy(&d->lock);
    msg_unref(d->m);
    buf_free(&d->enc);
    buf_free(&d->key);
    free(d);
}

bool
cluster_delivery_publish(struct cluster_delivery *d, const char *executor, const struct msg *m)
{
    size_t len = 0;
    const char *cid = msg_get(m, d->h_id, &len);

    if (!cid || !len) return false;
    buf_reset(&d->key);
    buf_append(&d->key, cid, len);
    buf_printf(&d->key, "/%s", executor);
    buf_reset(&d->enc);
    msg_encode(m, &d->enc);
    if (!d->be->wq_publish(d->q, executor, buf_str(&d->key), d->enc.p, d->enc.len)) {
        d->st.publish_failed++;
        return false;
    }
    return true;
}

void
cluster_delivery_event(struct cluster_delivery *d, const char *executor, const struct msg *m,
                       enum queue_event ev)
{
    struct pend **pp, *p;

    if (!d || !d->pending || ev == QUEUE_EV_QUEUED) return;
    if (!make_key(d, executor, m, NULL)) return;
    pp = find(d, d->key.p, d->key.len);
    if (!(p = *pp)) return; /* not from the work queue */
    if (ev == QUEUE_EV_RETRYING) {
        d->be->wq_progress(p->job);
        p->progress_ms = clock_mono_ms();
        return;
    }
    /* delivered, dead-lettered or refused by the queue: its end, as on a node of its own */
    *pp = p->next;
    d->pending--;
    d->be->wq_ack(p->job);
    d->st.acked++;
    free(p->key);
    free(p);
}

void
cluster_delivery_tick(struct cluster_delivery *d)
{
    uint64_t now = clock_mono_ms();
    struct pend *p;
    size_t b;

    if (!d || !d->pending) return;
    for (b = 0; b < NBUCKETS; b++)
        for (p = d->buckets[b]; p; p = p->next)
            if (now - p->progress_ms >= PROGRESS_MS) {
                d->be->wq_progress(p->job);
                p->progress_ms = now;
            }
}

void
cluster_delivery_stats(const struct cluster_delivery *d, struct cluster_delivery_stats *st)
{
    struct cluster_wq_stats wq;

    *st = d->st;
    d->be->wq_stats(d->q, &wq);
    st->published = wq.published;
    st->stored = wq.stored;
    st->publish_failed += wq.failed;
    st->copies = wq.copies;
    st->deferred = wq.deferred;
    st->pending = d->pending;
}
