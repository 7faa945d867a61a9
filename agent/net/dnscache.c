/*
 * dnscache: a bounded cache of reverse DNS answers filled in the background
 * by uv_getnameinfo(); see dnscache.h.  Entries live in a hash table keyed
 * by family and address bytes, and in a list in insertion order that tells
 * which one to evict.  A lookup in flight points at its entry; an entry
 * evicted or a cache freed meanwhile leaves the request orphaned, and its
 * callback then only frees it.
 */
#include "agent/net/dnscache.h"
#include "engine/hash.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct req;

struct entry {
    struct hash_node node;
    struct entry *prev, *next; /* insertion order: head is the oldest */
    int family;
    unsigned char addr[16];
    char *name;       /* NULL: no name (or not known yet) */
    uint64_t expires; /* uv_now() */
    struct req *req;  /* the lookup in flight for it, or NULL */
};

struct req {
    uv_getnameinfo_t gni;
    struct dnscache *cache; /* NULL once orphaned */
    struct entry *entry;    /* NULL once orphaned */
};

struct dnscache {
    uv_loop_t *loop;
    struct dnscache_opts opts;
    struct hash_table table;
    struct entry *head, *tail;
    struct dnscache_stats st;
};

struct dnscache *
dnscache_new(uv_loop_t *loop, const struct dnscache_opts *opts)
{
    struct dnscache *c = xcalloc(1, sizeof(*c));

    c->loop = loop;
    if (opts) c->opts = *opts;
    if (!c->opts.max_entries) c->opts.max_entries = 10000;
    if (!c->opts.max_inflight) c->opts.max_inflight = 16;
    if (!c->opts.ttl_ms) c->opts.ttl_ms = 3600 * 1000;
    if (!c->opts.neg_ttl_ms) c->opts.neg_ttl_ms = 60 * 1000;
    hash_table_init(&c->table, 64);
    return c;
}

/* The address of sa as a key; false for families other than IPv4 and IPv6. */
static bool
key_of(const struct sockaddr *sa, socklen_t salen, int *family, unsigned char addr[16])
{
    memset(addr, 0, 16);
    if (sa->sa_family == AF_INET && salen >= sizeof(struct sockaddr_in)) {
        memcpy(addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6 && salen >= sizeof(struct sockaddr_in6)) {
        memcpy(addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
    } else {
        return false;
    }
    *family = sa->sa_family;
    return true;
}

static uint64_t
key_hash(int family, const unsigned char addr[16])
{
    return hash_bytes(hash_string(&family, sizeof(family)), addr, 16);
}

static struct entry *
find(const struct dnscache *c, int family, const unsigned char addr[16], uint64_t h)
{
    struct hash_node *n;

    for (n = hash_table_find(&c->table, h); n; n = hash_table_find_next(n)) {
        struct entry *e = hash_entry(n, struct entry, node);
        if (e->family == family && memcmp(e->addr, addr, 16) == 0) return e;
    }
    return NULL;
}

static void
unlink_entry(struct dnscache *c, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
}

/* Removes e from the cache and frees it; a lookup in flight for it is orphaned. */
static void
drop(struct dnscache *c, struct entry *e)
{
    hash_table_remove(&c->table, &e->node);
    unlink_entry(c, e);
    if (e->req) {
        e->req->entry = NULL;
        e->req->cache = NULL;
        /* cancelled or not, the callback runs (with UV_ECANCELED if cancelled) and frees it */
        (void)uv_cancel((uv_req_t *)&e->req->gni);
        c->st.inflight--;
    }
    free(e->name);
    free(e);
}

static void
on_name(uv_getnameinfo_t *gni, int status, const char *host, const char *service)
{
    struct req *r = gni->data;
    struct dnscache *c = r->cache;
    struct entry *e = r->entry;

    (void)service;
    if (!c) { /* orphaned: its entry or the cache is gone */
        free(r);
        return;
    }
    c->st.inflight--;
    e->req = NULL;
    free(e->name);
    e->name = NULL;
    if (status == 0 && host && *host) {
        e->name = xstrdup(host);
        e->expires = uv_now(c->loop) + c->opts.ttl_ms;
    } else {
        c->st.failures++;
        e->expires = uv_now(c->loop) + c->opts.neg_ttl_ms;
    }
    free(r); /* last: host points into it */
}

/* Starts the lookup of e unless too many run; false when it did not start. */
static bool
start(struct dnscache *c, struct entry *e, const struct sockaddr *sa)
{
    struct req *r;
    int rc;

    if (c->st.inflight >= c->opts.max_inflight) {
        c->st.refused++;
        return false;
    }
    r = xcalloc(1, sizeof(*r));
    r->cache = c;
    r->entry = e;
    r->gni.data = r;
    rc = uv_getnameinfo(c->loop, &r->gni, on_name, sa, NI_NAMEREQD);
    if (rc < 0) {
        log_msg(LOG_WARNING, "dns-resolve-ip: cannot start a lookup: %s", uv_strerror(rc));
        free(r);
        return false;
    }
    e->req = r;
    c->st.inflight++;
    c->st.lookups++;
    return true;
}

int
dnscache_lookup(void *arg, const struct sockaddr *sa, socklen_t salen, char *host, size_t hostlen)
{
    struct dnscache *c = arg;
    unsigned char addr[16];
    int family;
    uint64_t h, now = uv_now(c->loop);
    struct entry *e;

    if (!key_of(sa, salen, &family, addr)) return -1;
    h = key_hash(family, addr);
    e = find(c, family, addr, h);
    if (e) {
        c->st.hits++;
        /* expired: still answered as it stands while a fresh answer is looked up */
        if (!e->req && now >= e->expires) start(c, e, sa);
        if (!e->name || strlen(e->name) >= hostlen) return -1;
        memcpy(host, e->name, strlen(e->name) + 1);
        return 0;
    }
    c->st.misses++;
    if (c->st.inflight >= c->opts.max_inflight) {
        c->st.refused++; /* not remembered either: the next ask tries again */
        return -1;
    }
    if (c->st.entries >= c->opts.max_entries && c->head) {
        drop(c, c->head);
        c->st.entries--;
        c->st.evicted++;
    }
    e = xcalloc(1, sizeof(*e));
    e->family = family;
    memcpy(e->addr, addr, 16);
    hash_table_add(&c->table, &e->node, h);
    e->prev = c->tail;
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
    c->st.entries++;
    if (!start(c, e, sa)) e->expires = now + c->opts.neg_ttl_ms;
    return -1;
}

void
dnscache_stats(const struct dnscache *c, struct dnscache_stats *st)
{
    *st = c->st;
}

void
dnscache_free(struct dnscache *c)
{
    if (!c) return;
    while (c->head) drop(c, c->head);
    hash_table_free(&c->table);
    free(c);
}
