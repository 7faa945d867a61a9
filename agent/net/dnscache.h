/*
 * dnscache: reverse DNS for corrald's templates without blocking its event
 * loop.  $(dns-resolve-ip) asks the cache (it is installed as the engine's
 * resolver, engine/resolver.h); a known address is answered at once, an
 * unknown one starts a uv_getnameinfo() on libuv's thread pool and is
 * answered "no name" meanwhile, so the function gives the address itself
 * until the answer is in (syslog-ng 3.38 blocks instead).
 *
 * Everything is bounded and counted: the entries (the oldest is evicted),
 * the lookups in flight (more are refused, and retried on a later ask), and
 * an entry's life (an expired name is still given while it is refreshed).
 * Names and "no name" answers both expire.
 */
#ifndef CORRAL_DNSCACHE_H
#define CORRAL_DNSCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

struct dnscache;

struct dnscache_opts {
    size_t max_entries;  /* 0: 10000 */
    size_t max_inflight; /* 0: 16 */
    uint64_t ttl_ms;     /* a name's life; 0: an hour */
    uint64_t neg_ttl_ms; /* the life of "no name"; 0: a minute */
};

struct dnscache_stats {
    uint64_t hits;     /* answered from the cache (names and "no name") */
    uint64_t misses;   /* not in the cache: answered "no name", a lookup started */
    uint64_t lookups;  /* uv_getnameinfo() started (misses and refreshes) */
    uint64_t failures; /* lookups that found no name */
    uint64_t refused;  /* lookups not started: max_inflight reached */
    uint64_t evicted;  /* entries dropped for max_entries */
    size_t entries, inflight;
};

struct dnscache *dnscache_new(uv_loop_t *loop, const struct dnscache_opts *opts);
/*
 * Frees the cache (uninstall it as the resolver first).  Lookups in flight
 * are cancelled; their requests are freed by their callbacks, so the loop
 * must run once more before it is closed.
 */
void dnscache_free(struct dnscache *c);
/*
 * A resolver_fn (engine/resolver.h) with arg = the cache: 0 and the name in
 * host when it is known, -1 otherwise (starting a lookup if none runs).
 */
int dnscache_lookup(void *c, const struct sockaddr *sa, socklen_t salen, char *host,
                    size_t hostlen);
void dnscache_stats(const struct dnscache *c, struct dnscache_stats *st);

#endif
