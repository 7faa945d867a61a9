/*
 * corrkey: the correlation key, defined once.  A context is identified by
 * its scope, the scope's fields of the message (HOST, PROGRAM, PID, by
 * scope) and its evaluated context id; corr's context table, its rate
 * buckets, the parallel engine's shard routing (par.c, corrald's workers)
 * and any partition of contexts between processes all hash the same key the
 * same way, so they agree on which contexts are one.
 *
 * A key points into the message and the id it was made from: it lives no
 * longer than they do, and making or hashing one allocates nothing.
 */
#ifndef CORRAL_CORRKEY_H
#define CORRAL_CORRKEY_H

#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/hash.h"
#include "engine/msg.h"
#include "engine/pdb.h"

struct corrkey {
    enum pdb_scope scope;
    const char *host, *prog, *pid, *id; /* never NULL but id, which may be (no id: "") */
    size_t hostlen, proglen, pidlen, idlen;
};

/*
 * The key of scope for m with context id id (idlen bytes; NULL: none): the
 * fields the scope takes (an absent one is ""), the others "".
 */
void corrkey_from_msg(struct corrkey *k, enum pdb_scope scope, const struct msg *m, const char *id,
                      size_t idlen);

/*
 * The key a context of scope with context-id tpl (NULL: none) has for m as
 * classified, before correlation: tpl is evaluated over m alone, into id
 * (the key points into it), as corr evaluates it before the rule's values.
 * What the parallel engine routes by.
 */
void corrkey_for_rule(struct corrkey *k, enum pdb_scope scope, const struct template *tpl,
                      const struct msg *m, struct buf *id);

/* The bytes of k's host, program, pid and id together. */
size_t corrkey_parts_len(const struct corrkey *k);
/* Copies them one after another to out (corrkey_parts_len() bytes); returns the end. */
char *corrkey_put_parts(const struct corrkey *k, char *out);

/*
 * The hash of k under hk (corrkey_hash: the process's key, hash.h).  The
 * lengths of the parts are hashed too; an id left out and an empty one hash
 * alike.  A partition shared between processes hashes under a key they share.
 */
uint64_t corrkey_hash_keyed(const struct corrkey *k, const struct hash_key *hk);
uint64_t corrkey_hash(const struct corrkey *k);

/*
 * Which of n shards owns the key of hash h: 0 when n <= 1.  It takes the high
 * bits of the multiplied hash, as corr's tables take the low bits of the same
 * hash, so that a shard's table still uses all of its buckets.
 */
unsigned corrkey_shard(uint64_t h, unsigned n);

#endif
