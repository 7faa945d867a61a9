/*
 * strtab: interned strings in an open-addressing hash table.
 * The table stores ids; strings live in their own allocations so that the
 * pointers handed out by strtab_str() stay valid while the table grows.
 */
#include "engine/strtab.h"
#include "engine/hash.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct entry {
    char *s;
    uint32_t len;
    uint32_t hash;
};

struct strtab {
    struct entry *entries; /* entries[id - 1] */
    size_t nentries, cap;
    uint32_t *slots; /* 0 = empty, else id */
    uint32_t nslots; /* power of two */
    uint32_t max;
};

/* hash.h's hash, cut to the 32 bits an entry keeps (slots are far fewer). */
static uint32_t
str_hash(const char *s, size_t len)
{
    return (uint32_t)hash_string(s, len);
}

struct strtab *
strtab_new(uint32_t max)
{
    struct strtab *t = xcalloc(1, sizeof(*t));

    t->nslots = 256;
    t->slots = xcalloc(t->nslots, sizeof(*t->slots));
    t->max = max;
    return t;
}

void
strtab_free(struct strtab *t)
{
    size_t i;

    if (!t) return;
    for (i = 0; i < t->nentries; i++) free(t->entries[i].s);
    free(t->entries);
    free(t->slots);
    free(t);
}

static uint32_t
find(const struct strtab *t, const char *s, size_t len, uint32_t h, uint32_t *slot)
{
    uint32_t mask = t->nslots - 1;
    uint32_t i = h & mask;

    for (;;) {
        uint32_t id = t->slots[i];
        if (id == 0) {
            *slot = i;
            return 0;
        }
        const struct entry *e = &t->entries[id - 1];
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0) return id;
        i = (i + 1) & mask;
    }
}

static void
rehash(struct strtab *t)
{
    uint32_t n = t->nslots * 2, mask = n - 1;
    uint32_t *slots = xcalloc(n, sizeof(*slots));
    size_t id;

    for (id = 1; id <= t->nentries; id++) {
        uint32_t i = t->entries[id - 1].hash & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = (uint32_t)id;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
}

uint32_t
strtab_intern(struct strtab *t, const char *s, size_t len)
{
    uint32_t h = str_hash(s, len), slot, id;
    struct entry *e;

    id = find(t, s, len, h, &slot);
    if (id) return id;
    if (t->nentries >= t->max || len > UINT32_MAX - 1) return 0;
    t->entries = xgrow(t->entries, &t->cap, t->nentries + 1, sizeof(*t->entries));
    e = &t->entries[t->nentries++];
    e->s = xstrndup(s, len);
    e->len = (uint32_t)len;
    e->hash = h;
    id = (uint32_t)t->nentries;
    t->slots[slot] = id;
    if (t->nentries * 2 > t->nslots) rehash(t);
    return id;
}

uint32_t
strtab_lookup(const struct strtab *t, const char *s, size_t len)
{
    uint32_t slot;

    return find(t, s, len, str_hash(s, len), &slot);
}

const char *
strtab_str(const struct strtab *t, uint32_t id, size_t *len)
{
    if (id == 0 || id > t->nentries) return NULL;
    if (len) *len = t->entries[id - 1].len;
    return t->entries[id - 1].s;
}

uint32_t
strtab_count(const struct strtab *t)
{
    return (uint32_t)t->nentries;
}
