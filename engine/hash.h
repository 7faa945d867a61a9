/*
 * hash: the one hash function of corral (64-bit FNV-1a: fast on the short
 * keys we hash, and good enough for tables whose keys an attacker may choose
 * only because every chain is also bounded by a table that grows) and a small
 * intrusive hash table.
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

#define HASH_SEED 14695981039346656037ULL /* FNV-1a offset basis */

/* Hashes len bytes, continuing from h (HASH_SEED to start). */
static inline uint64_t
hash_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL; /* FNV-1a prime, 64 bit */
    }
    return h;
}

/* The hash of one byte string. */
static inline uint64_t
hash_string(const void *data, size_t len)
{
    return hash_bytes(HASH_SEED, data, len);
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
 * Every node, in no particular order: start with prev NULL, then pass the
 * node returned.  prev may be removed and freed after the call that returned
 * the node after it:
 *     for (n = hash_table_iter(t, &i, NULL); n; n = next) {
 *         next = hash_table_iter(t, &i, n);  ... remove or free n ...
 */
struct hash_node *hash_table_iter(const struct hash_table *t, size_t *bucket,
                                  const struct hash_node *prev);

#endif
