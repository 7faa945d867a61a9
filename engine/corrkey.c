/*
 * corrkey: the correlation key and its hash (see corrkey.h).
 */
#include "engine/corrkey.h"
#include "engine/template.h"

#include <string.h>

static const char *
field(const struct msg *m, nv_handle h, size_t *len)
{
    const char *v = msg_get(m, h, len);

    if (!v) {
        *len = 0;
        return "";
    }
    return v;
}

void
corrkey_from_msg(struct corrkey *k, enum pdb_scope scope, const struct msg *m, const char *id,
                 size_t idlen)
{
    memset(k, 0, sizeof(*k));
    k->scope = scope;
    k->host = k->prog = k->pid = "";
    k->id = id;
    k->idlen = id ? idlen : 0;
    switch (scope) {
    case PDB_SCOPE_PROCESS: k->pid = field(m, NV_PID, &k->pidlen);       /* fall through */
    case PDB_SCOPE_PROGRAM: k->prog = field(m, NV_PROGRAM, &k->proglen); /* fall through */
    case PDB_SCOPE_HOST: k->host = field(m, NV_HOST, &k->hostlen);       /* fall through */
    case PDB_SCOPE_GLOBAL: break;
    }
}

void
corrkey_for_rule(struct corrkey *k, enum pdb_scope scope, const struct template *tpl,
                 const struct msg *m, struct buf *id)
{
    struct template_env env;

    if (!tpl) {
        corrkey_from_msg(k, scope, m, NULL, 0);
        return;
    }
    template_env_single(&env, (struct msg **)&m);
    buf_reset(id);
    template_eval(tpl, &env, id);
    corrkey_from_msg(k, scope, m, buf_str(id), id->len);
}

size_t
corrkey_parts_len(const struct corrkey *k)
{
    return k->hostlen + k->proglen + k->pidlen + (k->id ? k->idlen : 0);
}

char *
corrkey_put_parts(const struct corrkey *k, char *out)
{
    memcpy(out, k->host, k->hostlen);
    out += k->hostlen;
    memcpy(out, k->prog, k->proglen);
    out += k->proglen;
    memcpy(out, k->pid, k->pidlen);
    out += k->pidlen;
    if (!k->id || !k->idlen) return out;
    memcpy(out, k->id, k->idlen);
    return out + k->idlen;
}

/*
 * A key up to this long is copied into one buffer and hashed in one pass:
 * for the short parts of a usual key (a host name, a program, an id) that
 * costs less than hashing them part by part, where every part's end is a
 * partial block.  A longer key is hashed part by part; the hash is the same.
 */
#define FLAT_MAX 256

uint64_t
corrkey_hash_keyed(const struct corrkey *k, const struct hash_key *hk)
{
    struct hash_state s;
    uint32_t lens[4] = {(uint32_t)k->hostlen, (uint32_t)k->proglen, (uint32_t)k->pidlen,
                        (uint32_t)(k->id ? k->idlen : 0)};
    size_t total = sizeof(k->scope) + sizeof(lens) + corrkey_parts_len(k);

    if (total <= FLAT_MAX) {
        char flat[FLAT_MAX];
        memcpy(flat, &k->scope, sizeof(k->scope));
        memcpy(flat + sizeof(k->scope), lens, sizeof(lens));
        corrkey_put_parts(k, flat + sizeof(k->scope) + sizeof(lens));
        return hash_keyed_string(hk, flat, total);
    }
    hash_keyed_begin(&s, hk);
    hash_add(&s, &k->scope, sizeof(k->scope));
    hash_add(&s, lens, sizeof(lens));
    hash_add(&s, k->host, k->hostlen);
    hash_add(&s, k->prog, k->proglen);
    hash_add(&s, k->pid, k->pidlen);
    if (k->id) hash_add(&s, k->id, k->idlen);
    return hash_end(&s);
}

uint64_t
corrkey_hash(const struct corrkey *k)
{
    return corrkey_hash_keyed(k, &hash_process_key);
}

unsigned
corrkey_shard(uint64_t h, unsigned n)
{
    if (n <= 1) return 0;
    return (unsigned)(((h * 0x9E3779B97F4A7C15ULL) >> 32) % n);
}
