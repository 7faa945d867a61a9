/*
 * msg: name-value pairs in a single arena.
 *
 * Values are found through a tiny direct-mapped index on the low bits of
 * the handle: no hashing, and a slot taken by another handle (rare with the
 * tens of values a message carries) falls back to a scan of the entries.
 *
 * The copies correlation contexts keep (msg_clone_kept) are one allocation:
 * the struct, its entries, tags and arena side by side.  A context keeps
 * thousands of them and its template functions read them in a row
 * ($(context-values) scans up to the whole context), so one malloc instead
 * of four and one run of adjacent cache lines instead of four scattered
 * blocks is what keeping a line costs.  A packed part that must grow moves
 * out to its own allocation (grow_part()).
 */
#include "engine/msg.h"
#include "engine/wire.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct entry {
    nv_handle h;
    uint32_t off;
    uint32_t len;
};

/* which parts live inside the struct's own allocation (msg_clone_kept) */
#define IN_BLOCK_ENT   1u
#define IN_BLOCK_ARENA 2u
#define IN_BLOCK_TAGS  4u

struct msg {
    uint32_t refcnt;
    uint32_t flags;
    int pri;
    uint32_t in_block; /* IN_BLOCK_*: not freed on their own */
    struct msg_time stamp;
    struct msg_time recvd;

    struct entry *ent;
    size_t nent, capent;
    uint16_t slot[32]; /* by handle & 31: 1-based index into ent, 0 = none */

    char *arena;
    size_t alen, acap;

    tag_id *tags;
    size_t ntags, captags;
};

/* The arena is addressed with 32-bit offsets; stay well below that. */
#define ARENA_MAX (256u * 1024 * 1024)

struct msg *
msg_new(void)
{
    struct msg *m = xcalloc(1, sizeof(*m));

    m->refcnt = 1;
    m->pri = MSG_DEFAULT_PRI;
    return m;
}

struct msg *
msg_ref(struct msg *m)
{
    m->refcnt++;
    return m;
}

void
msg_unref(struct msg *m)
{
    if (!m || --m->refcnt > 0) return;
    if (!(m->in_block & IN_BLOCK_ENT)) free(m->ent);
    if (!(m->in_block & IN_BLOCK_ARENA)) free(m->arena);
    if (!(m->in_block & IN_BLOCK_TAGS)) free(m->tags);
    free(m);
}

void
msg_reset(struct msg *m)
{
    m->flags = 0;
    m->pri = MSG_DEFAULT_PRI;
    memset(&m->stamp, 0, sizeof(m->stamp));
    memset(&m->recvd, 0, sizeof(m->recvd));
    m->nent = 0;
    memset(m->slot, 0, sizeof(m->slot));
    m->alen = 0;
    m->ntags = 0;
}

/*
 * Grows an array of a message to hold need items of size bytes: xgrow, or
 * for a part packed in the struct's block, a copy into its own allocation.
 */
static void *
grow_part(struct msg *m, uint32_t bit, void *p, size_t *cap, size_t need, size_t used, size_t size)
{
    void *q;

    if (!(m->in_block & bit)) return xgrow(p, cap, need, size);
    q = xgrow(NULL, cap, need, size);
    if (used) memcpy(q, p, used * size);
    m->in_block &= ~bit;
    return q;
}

static inline struct entry *
find(const struct msg *m, nv_handle h)
{
    uint16_t i = m->slot[h & 31];
    size_t k;

    if (!i) return NULL; /* nothing with these low bits was ever set */
    if (m->ent[i - 1].h == h) return &m->ent[i - 1];
    for (k = 0; k < m->nent; k++)
        if (m->ent[k].h == h) return &m->ent[k];
    return NULL;
}

/* __builtin_prefetch wants its read/write argument constant */
static inline void
prefetch(const void *p, bool write)
{
    if (write)
        __builtin_prefetch(p, 1);
    else
        __builtin_prefetch(p, 0);
}

void
msg_prefetch(const struct msg *m, bool body, bool write)
{
    size_t i, n;

    if (!body) {
        for (i = 0; i < sizeof(*m); i += 64) prefetch((const char *)m + i, write);
        return;
    }
    /* the first 2 KiB of each: what templates and keys usually read, and
     * about what a new message written over a reset one fills again */
    n = m->nent * sizeof(*m->ent);
    for (i = 0; i < n && i < 2048; i += 64) prefetch((const char *)m->ent + i, write);
    for (i = 0; i < m->alen && i < 2048; i += 64) prefetch(m->arena + i, write);
    if (m->ntags) prefetch(m->tags, write);
}

const char *
msg_get(const struct msg *m, nv_handle h, size_t *len)
{
    const struct entry *e = find(m, h);

    if (!e) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = e->len;
    return m->arena + e->off;
}

static bool
in_arena(const struct msg *m, const char *p, size_t len)
{
    uintptr_t a = (uintptr_t)m->arena, x = (uintptr_t)p;

    return m->arena && x >= a && x + len <= a + m->alen;
}

/* Appends bytes (plus a NUL, so that values copied in are C strings too). */
static uint32_t
arena_append(struct msg *m, const char *data, size_t *len)
{
    size_t off = m->alen;

    if (*len > MSG_MAX_VALUE) {
        *len = MSG_MAX_VALUE;
        m->flags |= MSG_F_TRUNCATED;
    }
    if (m->alen + *len + 1 > ARENA_MAX) {
        m->flags |= MSG_F_TRUNCATED;
        *len = 0;
        return 0;
    }
    if (m->alen + *len + 1 > m->acap) {
        size_t cap = m->acap ? m->acap : 512;
        while (cap < m->alen + *len + 1) cap *= 2;
        if (m->in_block & IN_BLOCK_ARENA) {
            char *p = xmalloc(cap);
            memcpy(p, m->arena, m->alen);
            m->arena = p;
            m->in_block &= ~IN_BLOCK_ARENA;
        } else {
            m->arena = xrealloc(m->arena, cap);
        }
        m->acap = cap;
    }
    if (*len) memcpy(m->arena + off, data, *len);
    m->arena[off + *len] = '\0';
    m->alen += *len + 1;
    return (uint32_t)off;
}

const char *
msg_store(struct msg *m, const char *data, size_t len)
{
    uint32_t off = arena_append(m, data, &len);

    return m->arena ? m->arena + off : "";
}

void
msg_set(struct msg *m, nv_handle h, const char *val, size_t len)
{
    struct entry *e;
    uint32_t off;

    if (h == NV_NONE) return;
    if (!val) val = "", len = 0;
    if (in_arena(m, val, len))
        off = (uint32_t)(val - m->arena);
    else
        off = arena_append(m, val, &len);

    e = find(m, h);
    if (!e) {
        if (m->nent >= UINT16_MAX) {
            m->flags |= MSG_F_TRUNCATED;
            return;
        }
        if (m->nent == m->capent)
            m->ent = grow_part(m, IN_BLOCK_ENT, m->ent, &m->capent, m->nent + 1, m->nent,
                               sizeof(*m->ent));
        e = &m->ent[m->nent++];
        e->h = h;
        if (!m->slot[h & 31]) m->slot[h & 31] = (uint16_t)m->nent;
    }
    e->off = off;
    e->len = (uint32_t)len;
}

void
msg_unset(struct msg *m, nv_handle h)
{
    struct entry *e = find(m, h);
    size_t i, idx;

    if (!e) return;
    idx = (size_t)(e - m->ent);
    memmove(e, e + 1, (m->nent - idx - 1) * sizeof(*e));
    m->nent--;
    /* Entries after idx moved down by one: rebuild the index. */
    memset(m->slot, 0, sizeof(m->slot));
    for (i = 0; i < m->nent; i++)
        if (!m->slot[m->ent[i].h & 31]) m->slot[m->ent[i].h & 31] = (uint16_t)(i + 1);
}

size_t
msg_nvalues(const struct msg *m)
{
    return m->nent;
}

nv_handle
msg_value_at(const struct msg *m, size_t i, const char **val, size_t *len)
{
    if (i >= m->nent) return NV_NONE;
    if (val) *val = m->arena + m->ent[i].off;
    if (len) *len = m->ent[i].len;
    return m->ent[i].h;
}

/*
 * What a clone takes over from src: the header, and the values keep marks
 * (NULL: all).  m is new, with room measured (measure()) for exactly these:
 * they are laid out directly, without msg_set()'s lookups, since src's
 * handles are distinct and its values within every limit (a context keeps
 * such a copy of each line it takes).
 */
static void
copy_values(struct msg *m, const struct msg *src, const unsigned char *keep)
{
    size_t i;

    m->flags = src->flags;
    m->pri = src->pri;
    m->stamp = src->stamp;
    m->recvd = src->recvd;
    for (i = 0; i < src->nent; i++) {
        const struct entry *e = &src->ent[i];
        struct entry *d;
        if (keep && !keep[e->h]) continue;
        d = &m->ent[m->nent++];
        d->h = e->h;
        d->off = (uint32_t)m->alen;
        d->len = e->len;
        memcpy(m->arena + m->alen, src->arena + e->off, e->len);
        m->arena[m->alen + e->len] = '\0';
        m->alen += e->len + 1;
        if (!m->slot[e->h & 31]) m->slot[e->h & 31] = (uint16_t)m->nent;
    }
}

/* The entries and arena bytes the values keep marks need. */
static void
measure(const struct msg *src, const unsigned char *keep, size_t *nent, size_t *bytes)
{
    size_t i;

    *nent = *bytes = 0;
    for (i = 0; i < src->nent; i++)
        if (!keep || keep[src->ent[i].h]) {
            *bytes += src->ent[i].len + 1;
            (*nent)++;
        }
}

struct msg *
msg_clone(const struct msg *src)
{
    struct msg *m = msg_new();
    size_t n, total;

    /* separate parts, exact sizes: a clone (a generated message) is given a few values more */
    measure(src, NULL, &n, &total);
    if (n) {
        m->ent = xmalloc(n * sizeof(*m->ent));
        m->capent = n;
    }
    if (total) {
        m->arena = xmalloc(total);
        m->acap = total;
    }
    copy_values(m, src, NULL);
    if (src->ntags) {
        m->tags = xmemdup(src->tags, src->ntags * sizeof(*src->tags));
        m->ntags = m->captags = src->ntags;
    }
    return m;
}

struct msg *
msg_clone_kept(const struct msg *src, const unsigned char *keep)
{
    struct msg *m;
    size_t n, total, entoff, tagoff, arenaoff;
    char *block;

    /* one block, exact sizes: kept messages live long in contexts */
    measure(src, keep, &n, &total);
    entoff = (sizeof(*m) + _Alignof(struct entry) - 1) & ~(_Alignof(struct entry) - 1);
    tagoff = entoff + n * sizeof(struct entry);
    tagoff = (tagoff + _Alignof(tag_id) - 1) & ~(_Alignof(tag_id) - 1);
    arenaoff = tagoff + src->ntags * sizeof(tag_id);
    block = xmalloc(arenaoff + total);
    m = (struct msg *)(void *)block;
    memset(m, 0, sizeof(*m));
    m->refcnt = 1;
    /* a part that is empty stays NULL, and is allocated on its own if it ever grows */
    if (n) {
        m->ent = (struct entry *)(void *)(block + entoff);
        m->capent = n;
        m->in_block |= IN_BLOCK_ENT;
    }
    if (total) {
        m->arena = block + arenaoff;
        m->acap = total;
        m->in_block |= IN_BLOCK_ARENA;
    }
    copy_values(m, src, keep);
    if (src->ntags) {
        m->tags = (tag_id *)(void *)(block + tagoff);
        memcpy(m->tags, src->tags, src->ntags * sizeof(*src->tags));
        m->ntags = m->captags = src->ntags;
        m->in_block |= IN_BLOCK_TAGS;
    }
    return m;
}

void
msg_tag_set(struct msg *m, tag_id t)
{
    size_t i;

    if (t == TAG_NONE || msg_tag_has(m, t)) return;
    /* Kept in id order, which is the order the tags were first registered:
     * that is how syslog-ng lists $TAGS, and a message has only a few. */
    m->tags =
        grow_part(m, IN_BLOCK_TAGS, m->tags, &m->captags, m->ntags + 1, m->ntags, sizeof(*m->tags));
    for (i = m->ntags; i > 0 && m->tags[i - 1] > t; i--) m->tags[i] = m->tags[i - 1];
    m->tags[i] = t;
    m->ntags++;
}

void
msg_tag_clear(struct msg *m, tag_id t)
{
    size_t i;

    for (i = 0; i < m->ntags; i++)
        if (m->tags[i] == t) {
            memmove(&m->tags[i], &m->tags[i + 1], (m->ntags - i - 1) * sizeof(*m->tags));
            m->ntags--;
            return;
        }
}

bool
msg_tag_has(const struct msg *m, tag_id t)
{
    size_t i;

    for (i = 0; i < m->ntags; i++)
        if (m->tags[i] == t) return true;
    return false;
}

size_t
msg_ntags(const struct msg *m)
{
    return m->ntags;
}

tag_id
msg_tag_at(const struct msg *m, size_t i)
{
    return i < m->ntags ? m->tags[i] : TAG_NONE;
}

const struct msg_time *
msg_stamp(const struct msg *m)
{
    return &m->stamp;
}

/*
 * Times are kept within years 1 to 9999 (what the date macros can print),
 * microseconds within a second and offsets within a day, so that no later
 * arithmetic on them (time zones, timeouts, formatting) can overflow.
 */
#define MSG_SEC_MIN (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define MSG_SEC_MAX 253402300799LL   /* 9999-12-31T23:59:59Z */

static bool
time_valid(const struct msg_time *t)
{
    return t->sec >= MSG_SEC_MIN && t->sec <= MSG_SEC_MAX && t->usec >= 0 && t->usec <= 999999 &&
           t->gmtoff > -86400 && t->gmtoff < 86400;
}

static struct msg_time
time_clamped(const struct msg_time *t)
{
    struct msg_time c = *t;

    if (c.sec < MSG_SEC_MIN) c.sec = MSG_SEC_MIN;
    if (c.sec > MSG_SEC_MAX) c.sec = MSG_SEC_MAX;
    if (c.usec < 0 || c.usec > 999999) c.usec = 0;
    if (c.gmtoff <= -86400 || c.gmtoff >= 86400) c.gmtoff = 0;
    return c;
}

void
msg_set_stamp(struct msg *m, const struct msg_time *t)
{
    m->stamp = time_valid(t) ? *t : time_clamped(t);
}

const struct msg_time *
msg_recvd(const struct msg *m)
{
    return &m->recvd;
}

void
msg_set_recvd(struct msg *m, const struct msg_time *t)
{
    m->recvd = time_valid(t) ? *t : time_clamped(t);
}

int
msg_pri(const struct msg *m)
{
    return m->pri;
}

void
msg_set_pri(struct msg *m, int pri)
{
    m->pri = pri;
}

uint32_t
msg_flags(const struct msg *m)
{
    return m->flags;
}

void
msg_set_flags(struct msg *m, uint32_t flags)
{
    m->flags = flags;
}

size_t
msg_memory(const struct msg *m)
{
    return sizeof(*m) + m->acap + m->capent * sizeof(struct entry) + m->captags * sizeof(tag_id);
}

/* ---- binary form (wire.h) ---- */

static void
put_time(struct buf *b, const struct msg_time *t)
{
    wire_put64(b, (uint64_t)t->sec);
    wire_put32(b, (uint32_t)t->usec);
    wire_put32(b, (uint32_t)t->gmtoff);
}

void
msg_encode(const struct msg *m, struct buf *out)
{
    size_t i, len;

    wire_put32(out, (uint32_t)m->pri);
    wire_put32(out, m->flags);
    put_time(out, &m->stamp);
    put_time(out, &m->recvd);
    wire_put32(out, (uint32_t)m->nent);
    for (i = 0; i < m->nent; i++) {
        const char *name = nv_name(m->ent[i].h, &len);
        wire_put_bytes(out, name, len);
        wire_put_bytes(out, m->arena + m->ent[i].off, m->ent[i].len);
    }
    wire_put32(out, (uint32_t)m->ntags);
    for (i = 0; i < m->ntags; i++) {
        const char *t = tag_name(m->tags[i], &len);
        wire_put_bytes(out, t, len);
    }
}

static void
get_time(struct wire_reader *r, struct msg_time *t)
{
    t->sec = (int64_t)wire_get64(r);
    t->usec = (int32_t)wire_get32(r);
    t->gmtoff = (int32_t)wire_get32(r);
}

size_t
msg_decode(struct msg *m, const char *data, size_t len)
{
    struct wire_reader r;
    uint32_t n, i;

    wire_reader_init(&r, data, len);
    msg_reset(m);
    m->pri = (int)wire_get32(&r);
    m->flags = wire_get32(&r);
    get_time(&r, &m->stamp);
    get_time(&r, &m->recvd);
    if (!time_valid(&m->stamp) || !time_valid(&m->recvd)) r.bad = true;
    n = wire_get32(&r);
    for (i = 0; i < n && !r.bad; i++) {
        size_t nlen, vlen;
        const char *name = wire_get_bytes(&r, &nlen), *v = wire_get_bytes(&r, &vlen);
        nv_handle h;
        /* no name corral makes holds a NUL (they come from XML and templates);
         * one would not survive JSON (a dead letter's "message" keys) */
        if (!r.bad && nlen && memchr(name, '\0', nlen)) r.bad = true;
        h = !r.bad && nlen ? nv_intern(name, nlen) : 0;
        if (h) msg_set(m, h, v, vlen);
    }
    n = wire_get32(&r);
    for (i = 0; i < n && !r.bad; i++) {
        size_t tlen;
        const char *t = wire_get_bytes(&r, &tlen);
        if (!r.bad) msg_tag_set(m, tag_intern(t, tlen));
    }
    if (r.bad) {
        msg_reset(m);
        return 0;
    }
    return (size_t)(r.p - (const unsigned char *)data);
}
