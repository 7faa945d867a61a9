/*
 * cluster_silences: the silences of a cluster in its state bucket.
 *
 * A silence is the key "silence.<id>", its value the record the silences
 * file has (silences.c's, with updatedAt: the time of its last change).
 * Writes are made on the loop thread, before the change is answered: a
 * compare-and-set on the key's revision, which keeps the bucket's last
 * revision the one with the newest updatedAt when two nodes change a
 * silence at once (a write that finds a newer one there gives way, as
 * Alertmanager's gossip merge does).  The watch runs on the backend's
 * thread; what it sees is queued and applied on the loop thread (an async
 * handle), where the silences live.  A node's own writes come back
 * through the watch too and change nothing (same updatedAt).
 */
#include "agent/cluster/cluster_silences.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREFIX       "silence."
#define CAS_TRIES    16
#define INITIAL_WAIT 30 /* s: the bucket's silences at the start, at most */

struct change {
    struct change *next;
    char *key;
    char *val; /* NULL: deleted */
    size_t len;
};

struct cluster_silences {
    const struct cluster_backend *be;
    struct cluster_log *log;
    struct silences *sil;
    cluster_silences_changed_fn changed;
    void *arg;
    struct cluster_watch *watch;
    uv_async_t *async;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct change *head, **tail; /* under lock */
    bool initial;                /* under lock: the bucket's values at the start are in */
    struct cluster_silences_stats st;
};

/* The updatedAt of a record in the bucket (-1: damaged). */
static int64_t
updated_of(const char *val, size_t len)
{
    json_t *j = json_loadb(val, len, 0, NULL);
    json_t *u = j ? json_object_get(j, "updatedAt") : NULL;
    int64_t t = json_is_integer(u) ? (int64_t)json_integer_value(u) : -1;

    json_decref(j);
    return t;
}

static int
store(void *arg, const char *id, const char *rec, size_t len, int64_t updated, struct buf *err)
{
    struct cluster_silences *c = arg;
    char key[SILENCES_ID_LEN + sizeof(PREFIX)];
    struct buf cur = BUF_INIT;
    uint64_t rev = 0, nrev;
    int rc = CLUSTER_ERROR, tries;

    snprintf(key, sizeof(key), PREFIX "%s", id);
    if (!rec) {
        if (c->be->kv_delete(c->log, CLUSTER_STATE, key) == CLUSTER_OK) return 0;
        if (err) buf_printf(err, "cluster bucket: %s", c->be->error(c->log));
        return -1;
    }
    for (tries = 0; tries < CAS_TRIES; tries++) {
        rc = c->be->kv_get(c->log, CLUSTER_STATE, key, &cur, &rev);
        if (rc == CLUSTER_ABSENT) {
            rc = c->be->kv_create(c->log, CLUSTER_STATE, key, rec, len, &nrev);
        } else if (rc == CLUSTER_OK) {
            /* a newer change made elsewhere stays: the watch brings it here */
            if (updated_of(cur.p, cur.len) > updated) break;
            rc = c->be->kv_update(c->log, CLUSTER_STATE, key, rec, len, rev, &nrev);
        }
        if (rc != CLUSTER_CONFLICT) break;
        __atomic_add_fetch(&c->st.conflicts, 1, __ATOMIC_RELAXED);
    }
    buf_free(&cur);
    if (rc == CLUSTER_OK) return 0;
    if (err)
        buf_printf(err, "cluster bucket: %s",
                   rc == CLUSTER_CONFLICT ? "changed concurrently too often"
                                          : c->be->error(c->log));
    return -1;
}

/* The backend's thread: queued for the loop. */
static void
on_watch(void *arg, const char *key, const char *val, size_t len, uint64_t rev)
{
    struct cluster_silences *c = arg;
    struct change *ch;

    (void)rev;
    pthread_mutex_lock(&c->lock);
    if (!key) {
        c->initial = true;
        pthread_cond_broadcast(&c->cond);
    } else {
        ch = xcalloc(1, sizeof(*ch));
        ch->key = xstrdup(key);
        if (val) {
            ch->val = xmalloc(len + 1);
            memcpy(ch->val, val, len);
            ch->val[len] = 0;
            ch->len = len;
        }
        *c->tail = ch;
        c->tail = &ch->next;
    }
    pthread_mutex_unlock(&c->lock);
    if (key) uv_async_send(c->async);
}

/* The loop thread: the queued changes applied; whether the set changed. */
static bool
apply(struct cluster_silences *c)
{
    struct change *list, *ch;
    struct buf err = BUF_INIT;
    bool changed = false;
    int rc;

    pthread_mutex_lock(&c->lock);
    list = c->head;
    c->head = NULL;
    c->tail = &c->head;
    pthread_mutex_unlock(&c->lock);
    while ((ch = list)) {
        list = ch->next;
        if (!ch->val) {
            if (silences_forget(c->sil, ch->key + strlen(PREFIX))) {
                changed = true;
                c->st.applied++;
            }
        } else if ((rc = silences_apply(c->sil, ch->val, ch->len, &err)) < 0) {
            c->st.apply_errors++;
            log_msg(LOG_ERR, "cluster: silence %s in the bucket: %s", ch->key, buf_str(&err));
            buf_reset(&err);
        } else if (rc > 0) {
            changed = true;
            c->st.applied++;
        } else {
            c->st.stale++;
        }
        free(ch->key);
        free(ch->val);
        free(ch);
    }
    buf_free(&err);
    return changed;
}

static void
on_async(uv_async_t *a)
{
    struct cluster_silences *c = a->data;

    if (apply(c) && c->changed) c->changed(c->arg);
}

struct cluster_silences *
cluster_silences_new(uv_loop_t *loop, const struct cluster_backend *be, struct cluster_log *log,
                     struct silences *sil, cluster_silences_changed_fn changed, void *arg,
                     struct buf *err)
{
    struct cluster_silences *c = xcalloc(1, sizeof(*c));
    struct timespec until;
    bool in;

    c->be = be;
    c->log = log;
    c->sil = sil;
    c->changed = changed;
    c->arg = arg;
    c->tail = &c->head;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->async = xcalloc(1, sizeof(*c->async));
    uv_async_init(loop, c->async, on_async);
    c->async->data = c;
    if (!(c->watch = be->kv_watch(log, CLUSTER_STATE, PREFIX, on_watch, c, err))) {
        cluster_silences_free(c);
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
        buf_printf(err, "cluster: the silences in the bucket did not come in %d s", INITIAL_WAIT);
        cluster_silences_free(c);
        return NULL;
    }
    apply(c);
    silences_set_store(sil, store, c);
    log_msg(LOG_INFO, "cluster: %zu silences in the bucket", silences_count(sil));
    return c;
}

static void
free_async(uv_handle_t *h)
{
    free(h);
}

void
cluster_silences_free(struct cluster_silences *c)
{
    struct change *ch;

    if (!c) return;
    if (c->watch) c->be->kv_unwatch(c->watch);
    silences_set_store(c->sil, NULL, NULL);
    uv_close((uv_handle_t *)c->async, free_async);
    while ((ch = c->head)) {
        c->head = ch->next;
        free(ch->key);
        free(ch->val);
        free(ch);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

void
cluster_silences_stats(const struct cluster_silences *c, struct cluster_silences_stats *st)
{
    st->applied = c->st.applied;
    st->stale = c->st.stale;
    st->apply_errors = c->st.apply_errors;
    st->conflicts = __atomic_load_n(&c->st.conflicts, __ATOMIC_RELAXED);
}
