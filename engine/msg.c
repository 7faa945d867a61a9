/*
 * msg: name-value pairs in a single arena.
 *
 * Built-in names (handles below NV_NBUILTIN) are found through a direct
 * index; other names by a linear scan of the entry list, which for the tens
 * of values a log message carries is faster than any hashing.
 */
#include "msg.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

struct entry {
    nv_handle h;
    uint32_t off;
    uint32_t len;
};

struct msg {
    uint32_t refcnt;
    uint32_t flags;
    int pri;
    struct msg_time stamp;
    struct msg_time recvd;

    struct entry *ent;
    size_t nent, capent;
    uint16_t builtin[NV_NBUILTIN]; /* 1-based index into ent, 0 = unset */

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
    free(m->ent);
    free(m->arena);
    free(m->tags);
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
    memset(m->builtin, 0, sizeof(m->builtin));
    m->alen = 0;
    m->ntags = 0;
}

static struct entry *
find(const struct msg *m, nv_handle h)
{
    size_t i;

    if (h < NV_NBUILTIN) return m->builtin[h] ? &m->ent[m->builtin[h] - 1] : NULL;
    for (i = 0; i < m->nent; i++)
        if (m->ent[i].h == h) return &m->ent[i];
    return NULL;
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
        m->arena = xrealloc(m->arena, cap);
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
        m->ent = xgrow(m->ent, &m->capent, m->nent + 1, sizeof(*m->ent));
        e = &m->ent[m->nent++];
        e->h = h;
        if (h < NV_NBUILTIN) m->builtin[h] = (uint16_t)m->nent;
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
    /* Entries after idx moved down by one: rebuild the built-in index. */
    memset(m->builtin, 0, sizeof(m->builtin));
    for (i = 0; i < m->nent; i++)
        if (m->ent[i].h < NV_NBUILTIN) m->builtin[m->ent[i].h] = (uint16_t)(i + 1);
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

struct msg *
msg_clone(const struct msg *src)
{
    struct msg *m = msg_new();
    size_t i, total = 0;

    for (i = 0; i < src->nent; i++) total += src->ent[i].len + 1;
    m->flags = src->flags;
    m->pri = src->pri;
    m->stamp = src->stamp;
    m->recvd = src->recvd;
    if (total) {
        m->arena = xmalloc(total);
        m->acap = total;
    }
    for (i = 0; i < src->nent; i++)
        msg_set(m, src->ent[i].h, src->arena + src->ent[i].off, src->ent[i].len);
    if (src->ntags) {
        m->tags = xmemdup(src->tags, src->ntags * sizeof(*src->tags));
        m->ntags = m->captags = src->ntags;
    }
    return m;
}

void
msg_tag_set(struct msg *m, tag_id t)
{
    if (t == TAG_NONE || msg_tag_has(m, t)) return;
    m->tags = xgrow(m->tags, &m->captags, m->ntags + 1, sizeof(*m->tags));
    m->tags[m->ntags++] = t;
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

void
msg_set_stamp(struct msg *m, const struct msg_time *t)
{
    m->stamp = *t;
}

const struct msg_time *
msg_recvd(const struct msg *m)
{
    return &m->recvd;
}

void
msg_set_recvd(struct msg *m, const struct msg_time *t)
{
    m->recvd = *t;
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
