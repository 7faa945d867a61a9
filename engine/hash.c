/*
 * hash: SipHash-1-3 under the process's key, the key drawn before main(),
 * and the intrusive chained hash table (see hash.h).  Chains stay short
 * because the table doubles whenever it holds more entries than buckets and
 * because nobody who does not know the key can aim keys at one bucket.
 *
 * SipHash (Aumasson and Bernstein, 2012) with one compression round an
 * 8-byte block and three finalization rounds, as CPython's and Rust's
 * standard hash tables use it: a pseudorandom function of the key, so
 * collisions cannot be chosen.  Its fixed cost (the finalization) makes it
 * slower than FNV-1a on keys of a few bytes and faster from about 24 bytes
 * (a byte at a time, FNV-1a waits on a multiplication for every byte); a
 * context key of several fields is hashed in one pass (hash_add), so that
 * the fixed cost is paid once.
 */
#include "engine/hash.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "engine/xalloc.h"

struct hash_key hash_process_key;

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

/* One message block: one compression round. */
#define ABSORB(m)                                                                                  \
    do {                                                                                           \
        uint64_t m_ = (m);                                                                         \
        v3 ^= m_;                                                                                  \
        SIPROUND;                                                                                  \
        v0 ^= m_;                                                                                  \
    } while (0)

/* n bytes (at most 8) little-endian, without reading past them. */
static inline uint64_t
load_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;

    switch (n) {
    case 8: memcpy(&v, p, 8); return le64toh(v);
    case 7: v |= (uint64_t)p[6] << 48; /* fall through */
    case 6: v |= (uint64_t)p[5] << 40; /* fall through */
    case 5: v |= (uint64_t)p[4] << 32; /* fall through */
    case 4: v |= (uint64_t)p[3] << 24; /* fall through */
    case 3: v |= (uint64_t)p[2] << 16; /* fall through */
    case 2: v |= (uint64_t)p[1] << 8;  /* fall through */
    case 1: v |= p[0];                 /* fall through */
    default: break;
    }
    return v;
}

/*
 * SipHash-1-3 of the 8 bytes of first (when nfirst is 8; nothing when 0),
 * then data.
 */
static uint64_t
siphash13(const struct hash_key *k, uint64_t first, size_t nfirst, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t v0 = k->k0 ^ 0x736f6d6570736575ULL, v1 = k->k1 ^ 0x646f72616e646f6dULL,
             v2 = k->k0 ^ 0x6c7967656e657261ULL, v3 = k->k1 ^ 0x7465646279746573ULL;
    uint64_t b = (uint64_t)(len + nfirst) << 56;

    if (nfirst) ABSORB(first);
    for (; len >= 8; p += 8, len -= 8) ABSORB(load_le(p, 8));
    b |= load_le(p, len);
    ABSORB(b);
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t
hash_keyed_string(const struct hash_key *k, const void *data, size_t len)
{
    return siphash13(k, 0, 0, data, len);
}

uint64_t
hash_keyed_bytes(const struct hash_key *k, uint64_t h, const void *data, size_t len)
{
    return len ? siphash13(k, h, 8, data, len) : h;
}

void
hash_keyed_begin(struct hash_state *s, const struct hash_key *k)
{
    s->v0 = k->k0 ^ 0x736f6d6570736575ULL;
    s->v1 = k->k1 ^ 0x646f72616e646f6dULL;
    s->v2 = k->k0 ^ 0x6c7967656e657261ULL;
    s->v3 = k->k1 ^ 0x7465646279746573ULL;
    s->tail = 0;
    s->len = 0;
}

void
hash_add(struct hash_state *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t v0, v1, v2, v3;
    size_t fill = s->len & 7;

    s->len += len;
    if (fill + len < 8) { /* the block is not full yet */
        s->tail |= load_le(p, len) << (8 * fill);
        return;
    }
    v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;
    if (fill) {
        ABSORB(s->tail | load_le(p, 8 - fill) << (8 * fill));
        p += 8 - fill;
        len -= 8 - fill;
    }
    for (; len >= 8; p += 8, len -= 8) ABSORB(load_le(p, 8));
    s->tail = load_le(p, len);
    s->v0 = v0;
    s->v1 = v1;
    s->v2 = v2;
    s->v3 = v3;
}

uint64_t
hash_end(const struct hash_state *s)
{
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;

    ABSORB((uint64_t)s->len << 56 | s->tail);
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* True when all of buf came from the kernel's random pool. */
static int
random_bytes(void *buf, size_t len)
{
    ssize_t n;
    int fd;

    /* GRND_NONBLOCK: a program started before the pool is ready (early boot) must not hang;
     * /dev/urandom then gives the best the kernel has so far */
    do n = getrandom(buf, len, GRND_NONBLOCK);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)len) return 1;
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    n = read(fd, buf, len);
    close(fd);
    return n == (ssize_t)len;
}

/*
 * Draws the key before main(), so before any thread, fork or sandbox.  Without
 * getrandom or /dev/urandom (neither fails on Linux in practice) the key mixes
 * the clocks, the process id and where ASLR put the stack and this library:
 * weaker, but still different from run to run.
 */
__attribute__((constructor)) static void
hash_seed(void)
{
    unsigned char key[16];
    struct timespec real, mono;
    uint64_t mix[6];

    if (!random_bytes(key, sizeof(key))) {
        clock_gettime(CLOCK_REALTIME, &real);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        mix[0] = (uint64_t)real.tv_sec;
        mix[1] = (uint64_t)real.tv_nsec;
        mix[2] = (uint64_t)mono.tv_nsec;
        mix[3] = (uint64_t)getpid();
        mix[4] = (uint64_t)(uintptr_t)&key;
        mix[5] = (uint64_t)(uintptr_t)&hash_seed;
        hash_process_key.k0 = hash_keyed_string(&hash_process_key, mix, sizeof(mix));
        hash_process_key.k1 = hash_keyed_bytes(&hash_process_key, 1, mix, sizeof(mix));
        return;
    }
    memcpy(&hash_process_key.k0, key, 8);
    memcpy(&hash_process_key.k1, key + 8, 8);
}

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
