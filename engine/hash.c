/*
 * hash: the intrusive chained hash table (the hash function is inline in
 * hash.h).  Chains stay short because the table doubles whenever it holds
 * more entries than buckets.
 */
#include "engine/hash.h"

#include <stdlib.h>

#include "engine/xalloc.h"

void
hash_table_init(struct hash_table *t, size_t nbuckets)
{
    size_t n = 16;

    while (n < nbuckets) n *= 2;
    t->buckets = xcalloc(n, sizeof(*t->buckets));
    t->nbuckets = n;
    t->count = 0;
}

void
hash_table_free(struct hash_table *t)
{
    free(t->buckets);
    t->buckets = NULL;
    t->nbuckets = t->count = 0;
}

static void
grow(struct hash_table *t)
{
    size_t n = t->nbuckets * 2, i;
    struct hash_node **b = xcalloc(n, sizeof(*b)), *x, *next;

    for (i = 0; i < t->nbuckets; i++)
        for (x = t->buckets[i]; x; x = next) {
            next = x->next;
            x->next = b[x->hash & (n - 1)];
            b[x->hash & (n - 1)] = x;
        }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

void
hash_table_add(struct hash_table *t, struct hash_node *n, uint64_t hash)
{
    struct hash_node **head;

    if (t->count >= t->nbuckets) grow(t);
    head = &t->buckets[hash & (t->nbuckets - 1)];
    n->hash = hash;
    n->next = *head;
    *head = n;
    t->count++;
}

void
hash_table_remove(struct hash_table *t, struct hash_node *n)
{
    struct hash_node **p = &t->buckets[n->hash & (t->nbuckets - 1)];

    while (*p && *p != n) p = &(*p)->next;
    if (!*p) return;
    *p = n->next;
    n->next = NULL;
    t->count--;
}

static struct hash_node *
same_hash(struct hash_node *n, uint64_t hash)
{
    while (n && n->hash != hash) n = n->next;
    return n;
}

struct hash_node *
hash_table_find(const struct hash_table *t, uint64_t hash)
{
    return same_hash(t->buckets[hash & (t->nbuckets - 1)], hash);
}

struct hash_node *
hash_table_find_next(const struct hash_node *n)
{
    return same_hash(n->next, n->hash);
}

struct hash_node *
hash_table_iter(const struct hash_table *t, size_t *bucket, const struct hash_node *prev)
{
    size_t i = 0;

    if (prev) {
        if (prev->next) return prev->next;
        i = *bucket + 1;
    }
    for (; i < t->nbuckets; i++)
        if (t->buckets[i]) {
            *bucket = i;
            return t->buckets[i];
        }
    *bucket = t->nbuckets;
    return NULL;
}
