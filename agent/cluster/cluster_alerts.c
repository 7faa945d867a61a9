/*
 * cluster_alerts: the alert store of a cluster in its state bucket.
 *
 * An alert is the key "alert.<h>", h the first 16 bytes of the SHA-256 of
 * its id in hex (ids hold characters a key may not), its value the record
 * alerts_export() writes: the time of its last change, then the entry as
 * the store's file has it (labels, times, count, state, resolution,
 * executors, notification history).
 *
 * Writing.  The store reports a changed alert once (alerts_set_replica);
 * its id waits on the loop thread until the async handle runs, which
 * exports the record then (several changes of one loop turn make one
 * write) and queues it for the writer thread, which puts it in the bucket:
 * a put is a round trip to the servers, and the loop does not wait for
 * it.  At most QUEUE_MAX records wait; beyond, a change is dropped and
 * counted (the alert's next change writes it whole).  An alert the store
 * forgot (max-alerts) is deleted from the bucket.  At a stop the writer
 * writes what waits, unless a write fails then: the rest is dropped and
 * counted rather than each waiting for the servers' time out.
 *
 * Reading.  The watch runs on the backend's thread; what it sees is queued
 * and merged on the loop thread, where the store lives.  A node's own
 * writes come back through the watch and change nothing (the store knows
 * all of it).  A merge that finds here what the record lacked (a delivery
 * this node recorded, a resolution) reports the alert changed: its export
 * writes the union, the bucket's last word.
 */
#include "agent/cluster/cluster_alerts.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREFIX       "alert."
#define KEY_LEN      (sizeof(PREFIX) - 1 + 32)
#define INITIAL_WAIT 30 /* s: the bucket's alerts at the start, at most */
#define QUEUE_MAX    65536

struct item {
    struct item *next;
    char key[KEY_LEN + 1];
    struct buf val; /* empty: delete */
};

struct idnode {
    struct idnode *next;
    char id[];
};

struct cluster_alerts {
    const struct cluster_backend *be;
    struct cluster_log *log;
    struct alerts **store;
    struct cluster_watch *watch;
    uv_async_t *async;
    struct idnode *ids, **ids_tail; /* loop thread: changed, to export */

    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct item *in, **in_tail;   /* under lock: from the watch, to merge */
    struct item *out, **out_tail; /* under lock: for the writer */
    size_t nout;
    bool initial, quit; /* under lock */
    pthread_t writer;
    bool started;
    struct cluster_alerts_stats st; /* counters: atomic */
};

static void
count(uint64_t *c)
{
    __atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

static void
key_of(const char *id, char key[KEY_LEN + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0, i;

    EVP_Digest(id, strlen(id), md, &mdlen, EVP_sha256(), NULL);
    memcpy(key, PREFIX, sizeof(PREFIX) - 1);
    for (i = 0; i < 16; i++) snprintf(key + sizeof(PREFIX) - 1 + 2 * i, 3, "%02x", md[i]);
}

static void
item_free(struct item *it)
{
    buf_free(&it->val);
    free(it);
}

/* The store's hook (loop thread): the id waits for the async handle. */
static void
on_changed(void *arg, const char *id)
{
    struct cluster_alerts *c = arg;
    size_t len = strlen(id);
    struct idnode *n = xmalloc(sizeof(*n) + len + 1);

    memcpy(n->id, id, len + 1);
    n->next = NULL;
    *c->ids_tail = n;
    c->ids_tail = &n->next;
    uv_async_send(c->async);
}

/* The loop thread: the changed alerts' records queued for the writer. */
static void export(struct cluster_alerts *c)
{
    struct idnode *list = c->ids, *n;
    struct item *it;

    c->ids = NULL;
    c->ids_tail = &c->ids;
    while ((n = list)) {
        list = n->next;
        it = xcalloc(1, sizeof(*it));
        key_of(n->id, it->key);
        if (alerts_export(*c->store, n->id, &it->val) < 0) buf_reset(&it->val);
        free(n);
        pthread_mutex_lock(&c->lock);
        if (c->nout >= QUEUE_MAX) {
            pthread_mutex_unlock(&c->lock);
            count(&c->st.dropped);
            item_free(it);
            continue;
        }
        *c->out_tail = it;
        c->out_tail = &it->next;
        c->nout++;
        pthread_cond_signal(&c->cond);
        pthread_mutex_unlock(&c->lock);
    }
}

static void *
writer(void *arg)
{
    struct cluster_alerts *c = arg;
    struct item *it;
    uint64_t last_log = 0;
    bool quit, failed = false;
    int rc;

    for (;;) {
        pthread_mutex_lock(&c->lock);
        while (!c->out && !c->quit) pthread_cond_wait(&c->cond, &c->lock);
        it = c->out;
        if (it) {
            c->out = it->next;
            if (!c->out) c->out_tail = &c->out;
            c->nout--;
        }
        quit = c->quit;
        pthread_mutex_unlock(&c->lock);
        if (!it) break; /* quit, and nothing left */
        if (quit && failed) {
            /* stopping, and the servers do not answer: each write would wait its time out */
            count(&c->st.dropped);
            item_free(it);
            continue;
        }
        rc = it->val.len ? c->be->kv_put(c->log, CLUSTER_STATE, it->key, it->val.p, it->val.len)
                         : c->be->kv_delete(c->log, CLUSTER_STATE, it->key);
        if (rc == CLUSTER_OK || (!it->val.len && rc == CLUSTER_ABSENT)) {
            failed = false;
            if (it->val.len) count(&c->st.exported);
        } else {
            struct timespec ts;
            failed = true;
            count(&c->st.write_errors);
            clock_gettime(CLOCK_MONOTONIC, &ts);
            if (!last_log || (uint64_t)ts.tv_sec - last_log >= 60) {
                log_msg(LOG_WARNING, "cluster: alert %s not written: %s", it->key,
                        c->be->error(c->log));
                last_log = (uint64_t)ts.tv_sec;
            }
        }
        item_free(it);
    }
    return NULL;
}

/* The backend's thread: queued for the loop. */
static void
on_watch(void *arg, const char *key, const char *val, size_t len, uint64_t rev)
{
    struct cluster_alerts *c = arg;
    struct item *it;

    (void)rev;
    if (key && !val) return; /* deleted: forgotten by a node whose store was full */
    pthread_mutex_lock(&c->lock);
    if (!key) {
        c->initial = true;
        pthread_cond_broadcast(&c->cond);
    } else {
        it = xcalloc(1, sizeof(*it));
        buf_append(&it->val, val, len);
        *c->in_tail = it;
        c->in_tail = &it->next;
    }
    pthread_mutex_unlock(&c->lock);
    if (key) uv_async_send(c->async);
}

/* The loop thread: the queued records merged. */
static void
merge(struct cluster_alerts *c)
{
    struct item *list, *it;
    int rc;

    pthread_mutex_lock(&c->lock);
    list = c->in;
    c->in = NULL;
    c->in_tail = &c->in;
    pthread_mutex_unlock(&c->lock);
    while ((it = list)) {
        list = it->next;
        rc = alerts_merge(*c->store, it->val.p, it->val.len);
        if (rc > 0)
            count(&c->st.applied);
        else if (rc == 0)
            count(&c->st.stale);
        else
            count(&c->st.damaged);
        item_free(it);
    }
}

static void
on_async(uv_async_t *a)
{
    struct cluster_alerts *c = a->data;

    merge(c);
    export(c);
}

struct cluster_alerts *
cluster_alerts_new(uv_loop_t *loop, const struct cluster_backend *be, struct cluster_log *log,
                   struct alerts **store, struct buf *err)
{
    struct cluster_alerts *c = xcalloc(1, sizeof(*c));
    struct timespec until;
    bool in;

    c->be = be;
    c->log = log;
    c->store = store;
    c->ids_tail = &c->ids;
    c->in_tail = &c->in;
    c->out_tail = &c->out;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->async = xcalloc(1, sizeof(*c->async));
    uv_async_init(loop, c->async, on_async);
    c->async->data = c;
    if (!(c->watch = be->kv_watch(log, CLUSTER_STATE, PREFIX, on_watch, c, err))) {
        cluster_alerts_free(c);
        return NULL;
    }
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += INITIAL_WAIT;
    pthread_mutex_lock(&c->lock);
    while (!c->initial)
        if (pthread_cond_timedwait(&c->cond, &c->lock, &until) != 0) break;
    in = c->initial;
    pthread_mutex_unlock(&c->lock);
    if (!in) {
        buf_printf(err, "cluster: the alerts in the bucket did not come in %d s", INITIAL_WAIT);
        cluster_alerts_free(c);
        return NULL;
    }
    merge(c);
    if (pthread_create(&c->writer, NULL, writer, c) != 0) {
        buf_printf(err, "cluster: cannot start the alerts' writer");
        cluster_alerts_free(c);
        return NULL;
    }
    c->started = true;
    alerts_set_replica(*store, on_changed, c);
    log_msg(LOG_INFO, "cluster: %zu alerts in the bucket", alerts_count(*store));
    return c;
}

static void
free_async(uv_handle_t *h)
{
    free(h);
}

void
cluster_alerts_free(struct cluster_alerts *c)
{
    struct item *it;
    struct idnode *n;

    if (!c) return;
    if (*c->store) alerts_set_replica(*c->store, NULL, NULL);
    if (c->started) {
        /* the changes of the last loop turn, then the writer drains its queue and ends */
        export(c);
        pthread_mutex_lock(&c->lock);
        c->quit = true;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->writer, NULL);
    }
    if (c->watch) c->be->kv_unwatch(c->watch);
    uv_close((uv_handle_t *)c->async, free_async);
    while ((n = c->ids)) {
        c->ids = n->next;
        free(n);
    }
    while ((it = c->in)) {
        c->in = it->next;
        item_free(it);
    }
    while ((it = c->out)) {
        c->out = it->next;
        item_free(it);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

void
cluster_alerts_stats(const struct cluster_alerts *c, struct cluster_alerts_stats *st)
{
    st->exported = __atomic_load_n(&c->st.exported, __ATOMIC_RELAXED);
    st->applied = __atomic_load_n(&c->st.applied, __ATOMIC_RELAXED);
    st->stale = __atomic_load_n(&c->st.stale, __ATOMIC_RELAXED);
    st->damaged = __atomic_load_n(&c->st.damaged, __ATOMIC_RELAXED);
    st->write_errors = __atomic_load_n(&c->st.write_errors, __ATOMIC_RELAXED);
    st->dropped = __atomic_load_n(&c->st.dropped, __ATOMIC_RELAXED);
}
