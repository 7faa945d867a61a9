/*
 * bench/hashflood: what a hash flood costs a lookup in engine/hash's table,
 * with the unkeyed FNV-1a that tables once used and with the keyed hash
 * they use (hash_string).  It makes N host names ("web000123.XYZ", printable)
 * whose FNV-1a hashes share their low B bits, puts them in a table as the
 * correlation engine does (hash of the key, then compare keys) and times
 * lookups of names not in it that share the same bits (the flooded
 * bucket's every miss), and of ordinary names not in it.  Built by
 * `make bench/hashflood`, not run by `make check`:
 *
 *   bench/hashflood [-n KEYS] [-b BITS] [-l LOOKUPS]
 *
 * (default: -n 4096 -b 16 -l 200000); times are the best of 5 rounds.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/hash.h"

#define KEYLEN 13 /* "web000123." and 3 chosen characters */

struct item {
    struct hash_node node;
    const char *key;
};

static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";

static uint64_t
fnv(const void *p, size_t n)
{
    return hash_fnv1a(HASH_FNV1A_BASIS, p, n);
}

/*
 * n names from serial number *serial on whose FNV-1a hash agrees with
 * target in its low bits: the last character follows from the two before it
 * (the low bits of FNV-1a depend only on the low bits of its state, and the
 * prime is odd, so invertible modulo 2^bits), and must come out printable.
 */
static size_t
colliding(char (*keys)[KEYLEN], size_t n, unsigned bits, uint64_t target, unsigned *serial)
{
    const uint64_t prime = 1099511628211ULL, mask = (1ULL << bits) - 1;
    uint64_t inv = prime, want, h, h1, h2;
    size_t found = 0, a, b;
    char pre[16];
    int i;

    for (i = 0; i < 5; i++) inv *= 2 - prime * inv;
    want = (target * inv) & mask; /* what the state must be before the last multiplication */
    while (found < n && *serial < 100000000) {
        snprintf(pre, sizeof(pre), "web%06u.", (*serial)++);
        h = fnv(pre, 10);
        for (a = 0; a < 36 && found < n; a++) {
            h1 = (h ^ (unsigned char)alnum[a]) * prime;
            for (b = 0; b < 36; b++) {
                unsigned c;
                h2 = (h1 ^ (unsigned char)alnum[b]) * prime;
                if ((h2 & mask & ~0xffULL) != (want & ~0xffULL)) continue;
                c = (unsigned)((h2 ^ want) & 0xff);
                if (!memchr(alnum, (int)c, 36) || !c) continue;
                memcpy(keys[found], pre, 10);
                keys[found][10] = alnum[a];
                keys[found][11] = alnum[b];
                keys[found][12] = (char)c;
                found++;
                break;
            }
        }
    }
    return found;
}

static double
now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t (*hashfn)(const void *, size_t);

/* A lookup as corr's ctx_lookup does it: the nodes of the key's hash, their keys compared. */
static bool
lookup(const struct hash_table *t, const char *key)
{
    struct hash_node *n;

    for (n = hash_table_find(t, hashfn(key, KEYLEN)); n; n = hash_table_find_next(n))
        if (memcmp(hash_entry(n, struct item, node)->key, key, KEYLEN) == 0) return true;
    return false;
}

/* Best ns a lookup over 5 rounds of looking up each of the probes in turn. */
static double
time_lookups(const struct hash_table *t, char (*probes)[KEYLEN], size_t nprobes, size_t lookups)
{
    double best = 1e9;
    size_t i, hits = 0;
    int r;

    for (r = 0; r < 5; r++) {
        double t0 = now_s(), dt;
        for (i = 0; i < lookups; i++) hits += lookup(t, probes[i % nprobes]);
        dt = (now_s() - t0) / (double)lookups * 1e9;
        if (dt < best) best = dt;
    }
    if (hits) fprintf(stderr, "hashflood: %zu probes found?\n", hits);
    return best;
}

static uint64_t
keyed(const void *p, size_t n)
{
    return hash_string(p, n);
}

int
main(int argc, char **argv)
{
    size_t n = 4096, lookups = 200000, nprobes = 64, i, b, longest;
    unsigned bits = 16, serial = 0;
    char(*keys)[KEYLEN], (*miss)[KEYLEN], (*plain)[KEYLEN];
    struct item *items;
    uint64_t target;
    int opt, f;

    while ((opt = getopt(argc, argv, "n:b:l:")) != -1) switch (opt) {
        case 'n': n = strtoul(optarg, NULL, 10); break;
        case 'b': bits = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'l': lookups = strtoul(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: bench/hashflood [-n KEYS] [-b BITS] [-l LOOKUPS]\n");
            return 2;
        }
    if (!n || bits < 9 || bits > 24 || !lookups) {
        fprintf(stderr, "hashflood: -n at least 1, -b 9 to 24, -l at least 1\n");
        return 2;
    }
    keys = calloc(n, KEYLEN);
    miss = calloc(nprobes, KEYLEN);
    plain = calloc(nprobes, KEYLEN);
    items = calloc(n, sizeof(*items));
    if (!keys || !miss || !plain || !items) return 1;
    target = fnv("web000000.aaa", KEYLEN);
    if (colliding(keys, n, bits, target, &serial) != n ||
        colliding(miss, nprobes, bits, target, &serial) != nprobes) {
        fprintf(stderr, "hashflood: not enough names found\n");
        return 1;
    }
    for (i = 0; i < nprobes; i++) snprintf(plain[i], KEYLEN, "db%09zu", i);
    for (i = 0; i < nprobes; i++) plain[i][KEYLEN - 1] = 'x';
    printf("%zu names sharing the low %u bits of FNV-1a (e.g. %.*s, %.*s), %zu lookups of names "
           "not in the table, best of 5:\n",
           n, bits, KEYLEN, keys[0], KEYLEN, keys[1], lookups);
    for (f = 0; f < 2; f++) {
        struct hash_table t;
        hashfn = f == 0 ? fnv : keyed;
        hash_table_init(&t, 16);
        for (i = 0; i < n; i++) {
            items[i].key = keys[i];
            hash_table_add(&t, &items[i].node, hashfn(keys[i], KEYLEN));
        }
        for (b = longest = 0; b < t.nbuckets; b++) {
            size_t len = 0;
            struct hash_node *x;
            for (x = t.buckets[b]; x; x = x->next) len++;
            if (len > longest) longest = len;
        }
        printf("  %-22s longest chain %5zu of %zu buckets: %8.1f ns a flooded miss, %6.1f ns an "
               "ordinary miss\n",
               f == 0 ? "FNV-1a, unkeyed:" : "SipHash-1-3, keyed:", longest, t.nbuckets,
               time_lookups(&t, miss, nprobes, lookups), time_lookups(&t, plain, nprobes, lookups));
        hash_table_free(&t);
    }
    free(keys);
    free(miss);
    free(plain);
    free(items);
    return 0;
}
