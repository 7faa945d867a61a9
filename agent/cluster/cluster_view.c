/*
 * cluster_view: the nodes and the partitions' owners as this node sees
 * them (see cluster_view.h).
 *
 * cluster_node.c keeps, in the expiring bucket, n.<node> for each live
 * node and p.<p> (value: the owner's name, empty when released) for each
 * partition, and rewrites every key it holds every beat (a fifth of the
 * lease).  The servers let a key expire without telling watchers, so the
 * view does not wait for deletions: it notes when it last saw each key
 * written, and a key not written for a lease has expired (its node
 * stopped, or lost the servers).  The watch runs on the backend's thread
 * and writes under the lock; cluster_view_json reads under it.
 */
#include "agent/cluster/cluster_view.h"
#include "engine/clock.h"
#include "engine/xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NODE_NAME_MAX 256

struct owner {
    char name[NODE_NAME_MAX]; /* "": free */
    uint64_t seen;            /* steady ms of its last write; 0: never */
};

struct member {
    char name[NODE_NAME_MAX];
    uint64_t seen; /* 0: it left (its key deleted) */
};

struct cluster_view {
    const struct cluster_backend *be;
    char *name, *node;
    unsigned nparts;
    uint64_t lease_ms;
    struct cluster_watch *wp, *wn;
    pthread_mutex_t lock;
    struct owner *owners;   /* under lock */
    struct member *members; /* under lock */
    size_t nmembers, capmembers;
};

static void
copy_name(char *dst, const char *src, size_t len)
{
    if (len >= NODE_NAME_MAX) len = NODE_NAME_MAX - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static struct member *
member_of(struct cluster_view *v, const char *name, size_t len)
{
    size_t i;

    if (len >= NODE_NAME_MAX) len = NODE_NAME_MAX - 1;
    for (i = 0; i < v->nmembers; i++)
        if (strlen(v->members[i].name) == len && memcmp(v->members[i].name, name, len) == 0)
            return &v->members[i];
    v->members = xgrow(v->members, &v->capmembers, v->nmembers + 1, sizeof(*v->members));
    memset(&v->members[v->nmembers], 0, sizeof(*v->members));
    copy_name(v->members[v->nmembers].name, name, len);
    return &v->members[v->nmembers++];
}

/* p.<p>: its owner (backend's thread) */
static void
on_part(void *arg, const char *key, const char *val, size_t len, uint64_t rev)
{
    struct cluster_view *v = arg;
    char *end;
    unsigned long p;

    (void)rev;
    if (!key) return;
    p = strtoul(key + 2, &end, 10);
    if (*end || p >= v->nparts) return;
    pthread_mutex_lock(&v->lock);
    copy_name(v->owners[p].name, val ? val : "", val ? len : 0);
    v->owners[p].seen = clock_steady_ms();
    pthread_mutex_unlock(&v->lock);
}

/* n.<node>: a member's heartbeat (backend's thread) */
static void
on_node(void *arg, const char *key, const char *val, size_t len, uint64_t rev)
{
    struct cluster_view *v = arg;
    struct member *m;

    (void)rev;
    (void)val;
    (void)len;
    if (!key) return;
    pthread_mutex_lock(&v->lock);
    m = member_of(v, key + 2, strlen(key + 2));
    m->seen = val ? clock_steady_ms() : 0;
    pthread_mutex_unlock(&v->lock);
}

struct cluster_view *
cluster_view_new(const struct cluster_backend *be, struct cluster_log *log,
                 const struct conf_cluster *cc, struct buf *err)
{
    struct cluster_view *v = xcalloc(1, sizeof(*v));

    v->be = be;
    v->name = xstrdup(cc->name);
    v->node = xstrdup(cc->node);
    v->nparts = (unsigned)cc->partitions;
    v->lease_ms = (uint64_t)(cc->lease * 1000);
    v->owners = xcalloc(v->nparts, sizeof(*v->owners));
    pthread_mutex_init(&v->lock, NULL);
    if (!(v->wn = be->kv_watch(log, CLUSTER_LEASES, "n.", on_node, v, err)) ||
        !(v->wp = be->kv_watch(log, CLUSTER_LEASES, "p.", on_part, v, err))) {
        cluster_view_free(v);
        return NULL;
    }
    return v;
}

void
cluster_view_free(struct cluster_view *v)
{
    if (!v) return;
    if (v->wp) v->be->kv_unwatch(v->wp);
    if (v->wn) v->be->kv_unwatch(v->wn);
    pthread_mutex_destroy(&v->lock);
    free(v->owners);
    free(v->members);
    free(v->name);
    free(v->node);
    free(v);
}

static bool
fresh(const struct cluster_view *v, uint64_t seen, uint64_t now)
{
    return seen && now - seen < v->lease_ms;
}

json_t *
cluster_view_json(struct cluster_view *v)
{
    json_t *j = json_object(), *nodes = json_array(), *owners = json_array();
    uint64_t now;
    unsigned p;
    size_t i;

    pthread_mutex_lock(&v->lock);
    now = clock_steady_ms(); /* under the lock: no write seen is later */
    /* an owner the membership watch has not seen yet is listed too */
    for (p = 0; p < v->nparts; p++)
        if (v->owners[p].name[0] && fresh(v, v->owners[p].seen, now))
            member_of(v, v->owners[p].name, strlen(v->owners[p].name));
    for (i = 0; i < v->nmembers; i++) {
        const struct member *m = &v->members[i];
        json_t *o = json_object(), *parts = json_array();
        for (p = 0; p < v->nparts; p++)
            if (fresh(v, v->owners[p].seen, now) && strcmp(v->owners[p].name, m->name) == 0)
                json_array_append_new(parts, json_integer(p));
        json_object_set_new(o, "name", json_string(m->name));
        json_object_set_new(o, "alive", json_boolean(fresh(v, m->seen, now)));
        json_object_set_new(o, "self", json_boolean(strcmp(m->name, v->node) == 0));
        json_object_set_new(o, "lastSeen",
                            m->seen ? json_real((double)(now - m->seen) / 1000.0) : json_null());
        json_object_set_new(o, "partitions", parts);
        json_array_append_new(nodes, o);
    }
    for (p = 0; p < v->nparts; p++)
        json_array_append_new(owners, v->owners[p].name[0] && fresh(v, v->owners[p].seen, now)
                                          ? json_string(v->owners[p].name)
                                          : json_null());
    pthread_mutex_unlock(&v->lock);
    json_object_set_new(j, "name", json_string(v->name));
    json_object_set_new(j, "node", json_string(v->node));
    json_object_set_new(j, "partitions", json_integer(v->nparts));
    json_object_set_new(j, "lease", json_real((double)v->lease_ms / 1000.0));
    json_object_set_new(j, "nodes", nodes);
    json_object_set_new(j, "owners", owners);
    return j;
}
