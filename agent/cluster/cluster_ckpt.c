/*
 * cluster_ckpt: a partition's checkpoint stored in chunks (see
 * cluster_ckpt.h).
 *
 * Keys of the state bucket, for partition p:
 *   ckpt.<p>            the head: "chunks 1\n", then one line per complete
 *                       checkpoint, the current one first and the one
 *                       before it second: "<slot> <chunks> <bytes> <sha256>"
 *   ckpt.<p>.<slot>.<i> chunk i of the checkpoint in slot 0 or 1
 * A checkpoint is written into the slot the head does not name as current,
 * chunk by chunk, and then the head is updated on its revision: until
 * then the head names only complete checkpoints, and a node that lost the
 * partition cannot update it.  The checkpoint before the current one stays
 * whole in the other slot, for a reader that finds the current one
 * damaged (a chunk missing, or its size or SHA-256 not the head's); with
 * none whole the partition is replayed from the stream's start.  Two slots
 * keep the set of keys bounded: a key written again replaces its value
 * (the bucket keeps one revision), where keys of their own per checkpoint
 * would each leave a delete marker behind.
 *
 * A head that does not start with "chunks " is a checkpoint stored whole
 * in ckpt.<p>, as nodes that did not split them wrote it.
 */
#include "agent/cluster/cluster_ckpt.h"
#include "engine/log.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD_MAGIC "chunks 1\n"
/* a head naming more than this is damaged: not an allocation to attempt */
#define MAX_BYTES ((uint64_t)1 << 32)

static void
sha256_hex(const char *data, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0, i;

    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    for (i = 0; i < mdlen && i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[2 * i] = '\0';
}

static void
chunk_key(char *key, size_t size, unsigned p, unsigned slot, unsigned i)
{
    snprintf(key, size, "ckpt.%u.%u.%u", p, slot, i);
}

int
cluster_ckpt_write(const struct cluster_backend *be, struct cluster_log *log, unsigned p,
                   struct cluster_ckpt *c, const char *data, size_t len, size_t max)
{
    struct cluster_ckpt_gen g = {0};
    struct buf head = BUF_INIT;
    char key[64];
    uint64_t rev = 0;
    unsigned i;
    size_t off;
    int rc;

    if (max < 1) max = 1;
    g.slot = c->have_cur ? !c->cur.slot : 0;
    g.chunks = len ? (unsigned)((len + max - 1) / max) : 1;
    g.bytes = len;
    sha256_hex(data, len, g.sum);
    for (i = 0, off = 0; i < g.chunks; i++, off += max) {
        size_t n = len - off < max ? len - off : max;
        chunk_key(key, sizeof(key), p, g.slot, i);
        if (be->kv_put(log, CLUSTER_STATE, key, data + off, n) != CLUSTER_OK) return CLUSTER_ERROR;
    }
    buf_printf(&head, HEAD_MAGIC "%u %u %llu %s\n", g.slot, g.chunks, (unsigned long long)g.bytes,
               g.sum);
    if (c->have_cur)
        buf_printf(&head, "%u %u %llu %s\n", c->cur.slot, c->cur.chunks,
                   (unsigned long long)c->cur.bytes, c->cur.sum);
    snprintf(key, sizeof(key), "ckpt.%u", p);
    rc = c->rev ? be->kv_update(log, CLUSTER_STATE, key, head.p, head.len, c->rev, &rev)
                : be->kv_create(log, CLUSTER_STATE, key, head.p, head.len, &rev);
    buf_free(&head);
    if (rc != CLUSTER_OK) return rc;
    c->rev = rev;
    /* what the slot held past the new chunks: named by no head now */
    for (i = g.chunks; i < c->left[g.slot]; i++) {
        chunk_key(key, sizeof(key), p, g.slot, i);
        be->kv_delete(log, CLUSTER_STATE, key);
    }
    c->left[g.slot] = g.chunks;
    c->cur = g;
    c->have_cur = 1;
    return CLUSTER_OK;
}

/* One line of a head; 0 when it does not parse. */
static int
parse_gen(const char **at, const char *end, struct cluster_ckpt_gen *g)
{
    const char *nl = memchr(*at, '\n', (size_t)(end - *at));
    char line[160], *e;
    unsigned long slot, chunks;
    unsigned long long bytes;

    if (!nl || (size_t)(nl - *at) >= sizeof(line)) return 0;
    memcpy(line, *at, (size_t)(nl - *at));
    line[nl - *at] = '\0';
    *at = nl + 1;
    slot = strtoul(line, &e, 10);
    if (*e != ' ' || slot > 1) return 0;
    chunks = strtoul(e + 1, &e, 10);
    if (*e != ' ' || chunks < 1 || chunks > MAX_BYTES) return 0;
    bytes = strtoull(e + 1, &e, 10);
    if (*e != ' ' || bytes > MAX_BYTES || strlen(e + 1) != 64) return 0;
    g->slot = (unsigned)slot;
    g->chunks = (unsigned)chunks;
    g->bytes = bytes;
    memcpy(g->sum, e + 1, 65);
    return 1;
}

/* The chunks of g, whole and verified, into out: CLUSTER_OK, CLUSTER_ABSENT (damaged),
 * CLUSTER_ERROR. */
static int
read_gen(const struct cluster_backend *be, struct cluster_log *log, unsigned p,
         const struct cluster_ckpt_gen *g, struct buf *out)
{
    struct buf v = BUF_INIT;
    char key[64], sum[65];
    uint64_t rev;
    unsigned i;
    int rc = CLUSTER_OK;

    buf_reset(out);
    for (i = 0; i < g->chunks && rc == CLUSTER_OK; i++) {
        chunk_key(key, sizeof(key), p, g->slot, i);
        rc = be->kv_get(log, CLUSTER_STATE, key, &v, &rev);
        if (rc == CLUSTER_OK && out->len + v.len > g->bytes) rc = CLUSTER_ABSENT;
        if (rc == CLUSTER_OK) buf_append(out, v.p, v.len);
    }
    buf_free(&v);
    if (rc != CLUSTER_OK) return rc;
    if (out->len != g->bytes) return CLUSTER_ABSENT;
    sha256_hex(out->p, out->len, sum);
    return strcmp(sum, g->sum) == 0 ? CLUSTER_OK : CLUSTER_ABSENT;
}

int
cluster_ckpt_read(const struct cluster_backend *be, struct cluster_log *log, unsigned p,
                  struct cluster_ckpt *c, struct buf *out, uint64_t *damaged)
{
    struct buf head = BUF_INIT;
    struct cluster_ckpt_gen g[2];
    const char *at, *end;
    char key[64];
    int n = 0, i, rc;

    memset(c, 0, sizeof(*c));
    buf_reset(out);
    snprintf(key, sizeof(key), "ckpt.%u", p);
    rc = be->kv_get(log, CLUSTER_STATE, key, &head, &c->rev);
    if (rc != CLUSTER_OK) {
        buf_free(&head);
        return rc;
    }
    if (head.len < strlen(HEAD_MAGIC) || memcmp(head.p, "chunks ", 7) != 0) {
        /* stored whole */
        buf_append(out, head.p, head.len);
        buf_free(&head);
        return CLUSTER_OK;
    }
    at = head.p + strlen(HEAD_MAGIC);
    end = head.p + head.len;
    if (memcmp(head.p, HEAD_MAGIC, strlen(HEAD_MAGIC)) == 0)
        while (n < 2 && at < end && parse_gen(&at, end, &g[n])) n++;
    buf_free(&head);
    for (i = 0; i < n; i++)
        if (g[i].chunks > c->left[g[i].slot]) c->left[g[i].slot] = g[i].chunks;
    if (!n) {
        (*damaged)++;
        log_msg(LOG_ERR, "cluster: partition %u: checkpoint head damaged, replaying without it", p);
        return CLUSTER_ABSENT;
    }
    for (i = 0; i < n; i++) {
        rc = read_gen(be, log, p, &g[i], out);
        if (rc == CLUSTER_ERROR) return rc;
        if (rc == CLUSTER_OK) {
            /* the next write goes to the other slot: this one stays whole meanwhile */
            c->cur = g[i];
            c->have_cur = 1;
            return CLUSTER_OK;
        }
        (*damaged)++;
        log_msg(LOG_ERR,
                "cluster: partition %u: checkpoint in slot %u (%u chunks, %llu bytes) incomplete "
                "or damaged; %s",
                p, g[i].slot, g[i].chunks, (unsigned long long)g[i].bytes,
                i + 1 < n ? "loading the one before it" : "replaying without it");
    }
    buf_reset(out);
    return CLUSTER_ABSENT;
}
