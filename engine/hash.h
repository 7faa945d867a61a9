/*
 * hash: the hash functions of corral and a small intrusive hash table.
 *
 * Tables hash keys that senders choose (HOST, PROGRAM, PID, values), so
 * their hash is keyed: SipHash-1-3 under a 128-bit key drawn from
 * getrandom() once per process, before main() (a constructor), so every
 * thread uses the same key (the parallel engine's shards agree on who owns
 * a key) and children made by fork() inherit it.  Whoever does not know the
 * key cannot choose keys that share a bucket: with an unkeyed hash, 4,096
 * keys sharing their low 16 bits made every missed lookup walk all of them.
 * These values differ from process to process: never write one to a file
 * or send it to another process, and never let an output's order follow
 * them.  hash_fnv1a is for what must stay the same across processes
 * (identifiers derived from content) and never for tables of input.
 *
 * The table keeps no keys: an entry embeds a struct hash_node, the caller
 * hashes its key, walks the nodes of that hash and compares keys itself
 * (container_of gets the entry back).  So a correlation context costs one
 * pointer and one hash for its place in the table, and any key shape works.
 */
#ifndef CORRAL_HASH_H
#define CORRAL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A SipHash key. */
struct hash_key {
    uint64_t k0, k1;
};

/* The process's key, set before main() and never changed. */
extern struct hash_key hash_process_key;

/*
 * SipHash-1-3 under k of data; hash_keyed_bytes of the 8 bytes of h
 * (little-endian) then data, or h itself when len is 0.
 */
uint64_t hash_keyed_string(const struct hash_key *k, const void *data, size_t len);
uint64_t hash_keyed_bytes(const struct hash_key *k, uint64_t h, const void *data, size_t len);

/* Where a chain of hash_bytes starts. */
#define HASH_START 0

/* The process's hash of one byte string. */
static inline uint64_t
hash_string(const void *data, size_t len)
{
    return hash_keyed_string(&hash_process_key, data, len);
}

/*
 * The process's hash of h then len bytes: chains hash a key of several parts,
 * starting from HASH_START.  An empty part leaves the chain as it is (a part
 * left out and an empty one hash alike, as the parallel engine needs of a
 * context id), so a key whose parts vary in length hashes their lengths too.
 */
static inline uint64_t
hash_bytes(uint64_t h, const void *data, size_t len)
{
    return hash_keyed_bytes(&hash_process_key, h, data, len);
}

/*
 * SipHash-1-3 of several parts as of their concatenation, for keys of
 * several fields (cheaper than a chain: one finalization):
 *     hash_begin(&s); hash_add(&s, a, alen); hash_add(&s, b, blen); h = hash_end(&s);
 * As with a chain, hash the parts' lengths too when they vary.
 */
struct hash_state {
    uint64_t v0, v1, v2, v3;
    uint64_t tail; /* the bytes after the last full block, little-endian */
    size_t len;    /* bytes added */
};

void hash_keyed_begin(struct hash_state *s, const struct hash_key *k);
void hash_add(struct hash_state *s, const void *data, size_t len);
uint64_t hash_end(const struct hash_state *s);

/* Starts a hash under the process's key. */
static inline void
hash_begin(struct hash_state *s)
{
    hash_keyed_begin(s, &hash_process_key);
}

#define HASH_FNV1A_BASIS 14695981039346656037ULL

/* 64-bit FNV-1a of len bytes, continuing from h (HASH_FNV1A_BASIS to start): unkeyed, the same in
 * every process and release.  Not for tables: anyone can make its values collide. */
static inline uint64_t
hash_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL; /* FNV-1a prime, 64 bit */
    }
    return h;
}

#define hash_entry(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))

struct hash_node {
    struct hash_node *next;
    uint64_t hash;
};

struct hash_table {
    struct hash_node **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
};

/* An empty table; nbuckets is rounded up to a power of two (at least 16). */
void hash_table_init(struct hash_table *t, size_t nbuckets);
/* Frees the buckets, not the entries (walk them first with hash_table_iter). */
void hash_table_free(struct hash_table *t);
/* Adds n under hash; the table doubles when it holds more entries than buckets. */
void hash_table_add(struct hash_table *t, struct hash_node *n, uint64_t hash);
/* Removes n, which must be in t. */
void hash_table_remove(struct hash_table *t, struct hash_node *n);
/*
 * The first node added under hash, then the next ones of the same hash:
 *     for (n = hash_table_find(t, h); n; n = hash_table_find_next(n))
 */
struct hash_node *hash_table_find(const struct hash_table *t, uint64_t hash);
struct hash_node *hash_table_find_next(const struct hash_node *n);
/*
 * Every node, in an order that follows the hashes, so differs from process
 * to process: sort what is shown.  Start with prev NULL, then pass the node
 * returned.  prev may be removed and freed after the call that returned the
 * node after it:
 *     for (n = hash_table_iter(t, &i, NULL); n; n = next) {
 *         next = hash_table_iter(t, &i, n);  ... remove or free n ...
 */
struct hash_node *hash_table_iter(const struct hash_table *t, size_t *bucket,
                                  const struct hash_node *prev);

#endif
