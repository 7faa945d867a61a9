/*
 * cluster_node: one corrald of a cluster (see cluster_node.h, doc/scaling.md).
 *
 * Ingest (loop thread).  A message an input read is parsed and classified
 * here (syslogfmt, received_normalise, pdb_lookup) only to find its
 * partition, by the routing of engine/par.c over `partitions` shards: the
 * correlation key of its rule (corrkey, without the id in a scope with a
 * rate-limited rule), corrkey_shard() of its hash, and one partition where
 * par_route_init() falls back to one shard.  The hash is keyed by the
 * cluster's name, not by the process's key, so that every node computes the
 * same partition.  A message whose rule needs no state (par.c's
 * PAR_ANY_SHARD) goes to the partition of its HOST and PROGRAM.  The raw
 * line is published; its owner parses it again (one copy on the wire, the
 * owner's engine classifies as one corrald does).  Publishes are
 * asynchronous; at most max-in-flight wait for their acknowledgement before
 * stream inputs are paused (server.c's back-pressure) and datagrams dropped
 * and counted.  A message whose rule also-correlates with a context that
 * another partition owns (par.c would split it between shards) goes to the
 * partition of its own context and is counted (split): its joins see only
 * that partition's contexts.
 *
 * Leases (the lease thread).  The backend's expiring bucket holds one key
 * per partition, p.<p>, whose value is the owner's node name, and one per
 * live node, n.<node>.  Every beat (lease/5) the thread writes its n. key,
 * reads the members, and for each partition computes the member with the
 * highest rendezvous hash of (partition, node): that member should own it,
 * so a node joining or leaving moves only the partitions it wins or held.
 * It renews its leases by updating them on their revision (the fencing
 * token: an update after someone else took the key fails), takes the free
 * ones it should own (create, or update of a released one), and releases
 * those another live member should own.  A lease is valid, for this node,
 * until the time it sent its last successful write plus two thirds of the
 * lease: the servers let the key expire no sooner than a full lease after
 * they received that write, so this node stops emitting for the partition
 * before anyone else can take it, whatever happens to its connection.
 *
 * Owning (loop thread).  Each partition has an engine (corr) of its own,
 * so that a partition lost or released is dropped whole.  Every renewal
 * also writes the partition's position (pos.<p> in the state bucket: the
 * last stream sequence processed) and, every CKPT_EVERY_MS when it moved,
 * its checkpoint (the sequence covered, corr_save_rates' rate limit
 * buckets and corr_save's file of its contexts; in chunks under ckpt.<p>,
 * cluster_ckpt.c), both on their last revision.  A node that takes a
 * partition loads the checkpoint and has the backend deliver the stream
 * from the sequence after it; what the engine generates up to the
 * position is not emitted (the previous owner did).  Deliveries reach the
 * loop through a queue and a uv_async.  Every delivery and every emitted
 * message is checked against the lease's validity; a generated message
 * gets the id corral.cluster_id = NAME/<partition>/<sequence>/<n>, n
 * counting what was generated at that sequence.  At a stop, a last
 * checkpoint is taken, and the lease thread writes it and the position
 * before it gives each lease back and deletes its membership; a partition
 * given back to rebalance gets a last checkpoint too.
 *
 * Absence (<absence>, loop thread).  Each owned partition has an absence
 * watch of its own, for the hosts whose HOST routes to it (host_part: the
 * partition of rules keyed by host), whatever partition their messages are
 * correlated in: a message routed elsewhere that names a watched host is
 * also published to the host's partition with CLUSTER_SEEN (at most once a
 * second per sender and node: touch_due), and its owner counts it for
 * absence only.  A message counts as seen when the stream stored it, and
 * no absence is reported while a partition reads a backlog (replay up to
 * the previous owner's position, or more pending behind a delivery).  The
 * watch's sources are the checkpoint's "absence LEN\n" section (after the
 * rates; absence_save), taken also when only they changed (a report); its
 * reports carry an id the next owner gives them again (node_abs_emit).
 */
#include "agent/cluster/cluster_node.h"
#include "agent/alerting/absence.h"
#include "agent/cluster/cluster.h"
#include "agent/cluster/cluster_ckpt.h"
#include "engine/clock.h"
#include "engine/corrkey.h"
#include "engine/hash.h"
#include "engine/log.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/par.h"
#include "engine/received.h"
#include "engine/syslogfmt.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_MAX     65536
#define CKPT_EVERY_MS 2000 /* deliveries waiting for the loop before the backend's thread waits */
/* a host's CLUSTER_SEEN copies to its absence partition: at most one a second per sender */
#define TOUCH_SLOTS    1024
#define TOUCH_EVERY_MS 1000

enum ev_type { EV_MSG, EV_ACQUIRED, EV_DROP };

struct event {
    struct event *next;
    enum ev_type type;
    unsigned part;
    uint64_t token, seq;
    uint64_t stamp;  /* EV_MSG: wall ms the stream stored it; 0: unknown */
    unsigned flags;  /* EV_MSG: CLUSTER_SEEN, CLUSTER_PENDING */
    uint64_t upto;   /* EV_ACQUIRED: the previous owner's position (emitted up to it) */
    struct buf ckpt; /* EV_ACQUIRED: the checkpoint's contexts (corr_save's file); empty: none */
    size_t len;
    const char *peer, *tls, *host; /* in data, after the message; NULL: none */
    char data[];
};

/* A partition as the loop thread has it. */
struct part {
    struct corr *corr; /* NULL: not owned */
    uint64_t token;    /* of the subscription it reads */
    uint64_t seq;      /* the last stream sequence processed */
    unsigned idx;      /* messages generated at seq so far */
    uint64_t upto;     /* replaying: what is generated up to this sequence was emitted before */
    uint64_t ckpt_seq; /* the sequence the last checkpoint taken covers */
    uint64_t ckpt_bytes, ckpt_us; /* its size, and the time it took */
    struct absence *abs;          /* the absence of the hosts whose absence partition it is */
    uint64_t abs_changes;         /* absence_changes() at the last checkpoint */
    bool behind;                  /* the last delivery had more behind it */
};

/* A checkpoint taken on the loop, for the lease thread to write (under lock). */
struct ckpt {
    struct buf data; /* "<sequence>\n" then corr_save's file */
    uint64_t seq;
    bool ready;
};

/* A partition as the lease thread has it. */
struct lease {
    bool owned;
    uint64_t rev;         /* of p.<p> as last written */
    uint64_t pos_rev;     /* of pos.<p>; 0: absent */
    uint64_t pos_written; /* the sequence pos.<p> holds */
    uint64_t token;
    uint64_t free_since;    /* ms: first seen free while another should own it; 0: not */
    struct cluster_ckpt ck; /* its checkpoints as written and read (cluster_ckpt.c) */
};

struct cluster_node {
    uv_loop_t *loop;
    const struct cluster_backend *be;
    struct cluster_log *log;
    char *name, *node, *hostname;
    unsigned nparts;
    struct pdb *db;
    struct par_route route;
    struct hash_key key; /* routing: shared by every node of the cluster */
    struct corr_opts copts;
    corr_emit_fn emit;
    void *arg;
    nv_handle h_id, h_alert_id, h_event, h_since;
    /* <absence> (loop thread): the rules, the reports' sink, the senders recently touched */
    const struct conf_absence *abs_rules;
    size_t nabs_rules, abs_max;
    absence_emit_fn abs_emit;
    void *abs_arg;
    struct touch {
        uint64_t h, ms;
    } * touched;

    /* loop thread */
    struct msg *imsg, *cmsg; /* ingest, consumption */
    struct buf id, idval;
    struct part *parts;
    unsigned cur; /* the partition whose engine runs */
    uint64_t max_in_flight;

    /* shared */
    uint64_t *valid_until;  /* atomic, per partition: steady ms; 0: not owned */
    uint64_t *done_seq;     /* atomic, per partition: written by the loop */
    uint64_t *fenced_token; /* atomic, per partition: the ownership the loop fenced (fence()) */
    uint64_t *dropped;      /* atomic, per partition: the token of the last drop the loop did */
    struct ckpt *ckpts;     /* per partition, under lock */
    char *ckpt_path;        /* corr_save's file (loop thread) */
    uint64_t ckpt_every_ms, last_ckpt_ms;
    uint64_t in_flight;           /* atomic */
    struct cluster_node_stats st; /* counters: atomic */
    uint64_t late_logged_ms;      /* the loop's: late() said so last then */

    pthread_mutex_t lock;
    pthread_cond_t cond;       /* the lease thread's beat, the loop's drops, the queue's room */
    struct event *head, *tail; /* under lock */
    size_t queued;             /* under lock */
    bool quit;                 /* under lock */
    uv_async_t *async;

    /* lease thread */
    pthread_t tid;
    bool started;
    struct lease *leases;
    char **members;
    size_t nmembers, capmembers;
    uint64_t beat_ms, lease_ms, valid_ms;
    uint64_t next_token;
};

/* Microseconds, for the time checkpoints take. */
static uint64_t
now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t
now_ms(void)
{
    return clock_steady_ms();
}

static void
count(uint64_t *c, uint64_t n)
{
    __atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

static bool
lease_valid(const struct cluster_node *n, unsigned p)
{
    return now_ms() < __atomic_load_n(&n->valid_until[p], __ATOMIC_ACQUIRE);
}

/* ---- routing ---- */

static bool
rate_limited(const struct pdb_rule *r)
{
    size_t i;

    for (i = 0; i < r->nactions; i++)
        if (r->actions[i].rate_n) return true;
    return false;
}

static unsigned
key_part(struct cluster_node *n, const struct msg *m, enum pdb_scope scope,
         const struct template *tpl)
{
    struct corrkey k;

    corrkey_for_rule(&k, scope, n->route.noid[scope] ? NULL : tpl, m, &n->id);
    return corrkey_shard(corrkey_hash_keyed(&k, &n->key), n->route.nshards);
}

static unsigned
route(struct cluster_node *n, const struct msg *m, const struct pdb_rule *r)
{
    unsigned p;
    size_t i;

    if (n->route.nshards <= 1) return 0;
    if (!r || (!r->context_id && !rate_limited(r))) {
        /* needs no context: spread by sender */
        struct corrkey k;
        corrkey_from_msg(&k, PDB_SCOPE_PROGRAM, m, NULL, 0);
        return corrkey_shard(corrkey_hash_keyed(&k, &n->key), n->route.nshards);
    }
    p = key_part(n, m, r->scope, r->context_id);
    for (i = 0; i < r->nalso; i++)
        if (r->also[i] && key_part(n, m, r->also[i]->scope, r->also[i]->context_id) != p) {
            count(&n->st.split, 1);
            break;
        }
    return p;
}

/*
 * The partition that watches a host's absence: its HOST's under the
 * routing (the partition of the rules keyed by host), whichever partition
 * its messages go to, so that one owner sees every source of the host.
 */
static unsigned
host_part(struct cluster_node *n, const struct msg *m)
{
    struct corrkey k;

    if (n->route.nshards <= 1) return 0;
    corrkey_from_msg(&k, PDB_SCOPE_HOST, m, NULL, 0);
    return corrkey_shard(corrkey_hash_keyed(&k, &n->key), n->route.nshards);
}

static bool
abs_watched(const struct cluster_node *n, const struct msg *m)
{
    size_t hlen = 0, plen = 0, i;
    const char *host = msg_get(m, NV_HOST, &hlen), *prog = msg_get(m, NV_PROGRAM, &plen);

    for (i = 0; i < n->nabs_rules; i++) {
        const struct conf_absence *r = &n->abs_rules[i];
        if (r->host && (!host || strlen(r->host) != hlen || memcmp(r->host, host, hlen))) continue;
        if (r->program && (!prog || strlen(r->program) != plen || memcmp(r->program, prog, plen)))
            continue;
        return true;
    }
    return false;
}

/*
 * Whether the absence partition is to be told of this message: once a
 * second per sender (host, program and address) at most, a direct-mapped
 * table of the last ones told (a collision only tells it again).
 */
static bool
touch_due(struct cluster_node *n, const struct msg *m)
{
    struct corrkey k;
    size_t alen = 0;
    const char *addr = msg_get(m, NV_SOURCEIP, &alen);
    uint64_t h, t = now_ms();
    struct touch *slot;

    corrkey_from_msg(&k, PDB_SCOPE_PROGRAM, m, NULL, 0);
    h = corrkey_hash_keyed(&k, &n->key) ^ (addr ? hash_string(addr, alen) : 0);
    slot = &n->touched[h % TOUCH_SLOTS];
    if (slot->h == h && t - slot->ms < TOUCH_EVERY_MS) return false;
    slot->h = h;
    slot->ms = t;
    return true;
}

/* ---- the event queue: backend and lease threads to the loop ---- */

static void
push(struct cluster_node *n, struct event *e, bool wait)
{
    e->next = NULL;
    pthread_mutex_lock(&n->lock);
    while (wait && n->queued >= QUEUE_MAX && !n->quit) pthread_cond_wait(&n->cond, &n->lock);
    if (n->tail)
        n->tail->next = e;
    else
        n->head = e;
    n->tail = e;
    n->queued++;
    pthread_mutex_unlock(&n->lock);
    uv_async_send(n->async);
}

static void
post(struct cluster_node *n, enum ev_type type, unsigned p, uint64_t token, uint64_t seq)
{
    struct event *e = xcalloc(1, sizeof(*e));

    e->type = type;
    e->part = p;
    e->token = token;
    e->seq = seq;
    push(n, e, false);
}

static char *
put_str(char **at, const char *s)
{
    char *r = *at;
    size_t l = strlen(s) + 1;

    memcpy(r, s, l);
    *at += l;
    return r;
}

/* A message of an owned partition (on a backend thread). */
static void
on_deliver(void *arg, unsigned part, uint64_t token, uint64_t seq, uint64_t stamp, unsigned flags,
           const char *data, size_t len, const char *peer, const char *tls_peer, const char *host)
{
    struct cluster_node *n = arg;
    size_t extra = (peer ? strlen(peer) + 1 : 0) + (tls_peer ? strlen(tls_peer) + 1 : 0) +
                   (host ? strlen(host) + 1 : 0);
    struct event *e = xmalloc(sizeof(*e) + len + 1 + extra);
    char *at = e->data + len + 1;

    e->type = EV_MSG;
    e->part = part;
    e->token = token;
    e->seq = seq;
    e->stamp = stamp;
    e->flags = flags;
    e->len = len;
    memcpy(e->data, data, len);
    e->data[len] = 0;
    e->peer = peer ? put_str(&at, peer) : NULL;
    e->tls = tls_peer ? put_str(&at, tls_peer) : NULL;
    e->host = host ? put_str(&at, host) : NULL;
    push(n, e, true);
}

/* A publish acknowledged or failed (on a backend thread). */
static void
on_acked(void *arg, bool ok)
{
    struct cluster_node *n = arg;
    uint64_t left = __atomic_sub_fetch(&n->in_flight, 1, __ATOMIC_ACQ_REL);

    count(ok ? &n->st.acked : &n->st.publish_failed, 1);
    if (!ok) {
        static uint64_t last;
        uint64_t t = now_ms();
        if (t - __atomic_load_n(&last, __ATOMIC_RELAXED) > 60000) {
            __atomic_store_n(&last, t, __ATOMIC_RELAXED);
            log_msg(LOG_ERR, "cluster: a publish was not acknowledged: message lost");
        }
    }
    /* the loop's resume check runs after an iteration: give it one at the low mark */
    if (left == n->max_in_flight / 2) uv_async_send(n->async);
}

/* ---- the loop thread: owning ---- */

/*
 * p's lease ran out under the loop: what it was doing for p is dropped, and
 * so is everything after, until p is taken again (a new token).  Going on
 * would correlate the stream with a hole in it should the late renewal
 * succeed after all, and the position written then would tell the next
 * owner not to emit what this one dropped; instead the lease thread gives
 * p up (renew), and its next owner, this node or another, replays from the
 * last checkpoint, which covers nothing after the fence (take_ckpts).
 */
static void
fence(struct cluster_node *n, unsigned p)
{
    count(&n->st.fenced, 1);
    __atomic_store_n(&n->fenced_token[p], n->parts[p].token, __ATOMIC_RELEASE);
}

static bool
fenced(const struct cluster_node *n, unsigned p, uint64_t token)
{
    return token && __atomic_load_n(&n->fenced_token[p], __ATOMIC_ACQUIRE) == token;
}

static void
node_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *action)
{
    struct cluster_node *n = arg;
    struct part *pt = &n->parts[n->cur];

    if (fenced(n, n->cur, pt->token)) return;
    if (!lease_valid(n, n->cur)) {
        fence(n, n->cur);
        return;
    }
    if (pt->seq <= pt->upto) {
        /* replayed from the checkpoint: its previous owner emitted it */
        if (kind != CORR_INPUT) pt->idx++;
        count(&n->st.suppressed, 1);
        return;
    }
    if (kind != CORR_INPUT) {
        buf_reset(&n->idval);
        buf_printf(&n->idval, "%s/%u/%llu/%u", n->name, n->cur, (unsigned long long)pt->seq,
                   pt->idx++);
        msg_set(m, n->h_id, n->idval.p, n->idval.len);
    }
    n->emit(n->arg, m, kind, action);
}

/*
 * An absence report of partition n->cur: only while its lease holds; its id
 * (the alert's, its event and since when the source was quiet) is the same
 * whichever owner makes it, so that a report made again after a failover
 * is one for the work queue.
 */
static void
node_abs_emit(void *arg, struct msg *m)
{
    struct cluster_node *n = arg;
    size_t alen = 0, elen = 0, slen = 0;
    const char *aid = msg_get(m, n->h_alert_id, &alen), *ev = msg_get(m, n->h_event, &elen);
    const char *since = msg_get(m, n->h_since, &slen);

    if (fenced(n, n->cur, n->parts[n->cur].token)) return;
    if (!lease_valid(n, n->cur)) {
        fence(n, n->cur);
        return;
    }
    buf_reset(&n->idval);
    buf_printf(&n->idval, "%s/%u/%.*s/%.*s/%.*s", n->name, n->cur, (int)alen, aid ? aid : "",
               (int)elen, ev ? ev : "", (int)slen, since ? since : "");
    msg_set(m, n->h_id, n->idval.p, n->idval.len);
    n->abs_emit(n->abs_arg, m);
}

static struct absence *
new_abs(struct cluster_node *n)
{
    struct absence *a;

    if (!n->nabs_rules) return NULL;
    a = absence_new(n->abs_rules, n->nabs_rules, n->abs_max, clock_mono_ms(), node_abs_emit, n);
    absence_wall_clock(a, clock_mono_to_wall);
    return a;
}

/* A message of partition p's hosts seen by its absence watch, when the stream stored it. */
static void
abs_seen(struct cluster_node *n, unsigned p, const struct event *e)
{
    uint64_t t = clock_mono_ms(), wall = clock_wall_ms();

    if (e->stamp && e->stamp < wall) t = wall - e->stamp < t ? t - (wall - e->stamp) : 0;
    n->cur = p;
    absence_seen_at(n->parts[p].abs, n->cmsg, t, e->stamp);
}

/* A message correlated out of the order its node received it: counted, and said once a minute. */
static void
late(struct cluster_node *n, unsigned part)
{
    uint64_t t = now_ms();

    count(&n->st.late, 1);
    if (!n->late_logged_ms || t - n->late_logged_ms >= 60000) {
        n->late_logged_ms = t;
        log_msg(LOG_WARNING,
                "cluster: partition %u: a message stored after later ones of its node (its "
                "publish was sent again) is correlated out of their order",
                part);
    }
}

static void
consume(struct cluster_node *n, struct event *e)
{
    struct part *pt = &n->parts[e->part];
    struct received_from from;

    if (!pt->corr || pt->token != e->token) {
        count(&n->st.stale, 1);
        return;
    }
    if (fenced(n, e->part, pt->token)) {
        count(&n->st.fenced, 1);
        return;
    }
    if (!lease_valid(n, e->part)) {
        fence(n, e->part);
        return;
    }
    if (e->seq <= pt->seq) return; /* an ordered consumer's restart delivers again */
    if (e->flags & CLUSTER_LATE) late(n, e->part);
    pt->seq = e->seq;
    pt->idx = 0;
    pt->behind = (e->flags & CLUSTER_PENDING) != 0;
    syslogfmt_parse(n->cmsg, e->data, e->len, NULL);
    from.peer = e->peer;
    from.peerlen = e->peer ? strlen(e->peer) : 0;
    from.tls_peer = e->tls;
    from.tls_peerlen = e->tls ? strlen(e->tls) : 0;
    from.hostname = e->host ? e->host : n->hostname;
    received_normalise(n->cmsg, &from);
    if (e->flags & CLUSTER_SEEN) {
        /* told only for absence: correlated in the partition it was published to */
        if (pt->abs) abs_seen(n, e->part, e);
        __atomic_store_n(&n->done_seq[e->part], e->seq, __ATOMIC_RELEASE);
        return;
    }
    if (pt->abs && host_part(n, n->cmsg) == e->part) abs_seen(n, e->part, e);
    n->cur = e->part;
    corr_process(pt->corr, n->cmsg);
    count(&n->st.consumed, 1);
    /* fenced while it emitted: not done, its next owner generates it again */
    if (!fenced(n, e->part, pt->token))
        __atomic_store_n(&n->done_seq[e->part], e->seq, __ATOMIC_RELEASE);
}

static void
drop_part(struct cluster_node *n, unsigned p)
{
    struct part *pt = &n->parts[p];

    corr_free(pt->corr);
    pt->corr = NULL;
    absence_free(pt->abs);
    pt->abs = NULL;
}

/*
 * A checkpoint into p's engine: "rates LEN\n", corr_save_rates' LEN bytes (the rate= buckets),
 * then the contexts in corr_save's file format (read through a file); or only the contexts.
 */
static void
load_ckpt(struct cluster_node *n, unsigned p, const struct buf *data)
{
    const char *at = data->p, *nl;
    size_t len = data->len, rlen = 0, dropped = 0;
    long got = -1, rates = 0, sources = 0;
    FILE *f;

    if (len > 6 && memcmp(at, "rates ", 6) == 0 && (nl = memchr(at, '\n', len))) {
        rlen = strtoull(at + 6, NULL, 10);
        len -= (size_t)(nl + 1 - at);
        at = nl + 1;
        if (rlen > len) rlen = len;
        rates = corr_load_rates(n->parts[p].corr, at, rlen, &dropped);
        at += rlen;
        len -= rlen;
    }
    /* absence's sources (absence_save), in checkpoints that have them */
    if (len > 8 && memcmp(at, "absence ", 8) == 0 && (nl = memchr(at, '\n', len))) {
        size_t alen = strtoull(at + 8, NULL, 10);
        len -= (size_t)(nl + 1 - at);
        at = nl + 1;
        if (alen > len) alen = len;
        if (n->parts[p].abs) {
            n->cur = p;
            sources = absence_load(n->parts[p].abs, at, alen, clock_mono_ms());
            if (sources < 0)
                log_msg(LOG_ERR, "cluster: partition %u: checkpoint's absence sources unreadable",
                        p);
            n->parts[p].abs_changes = absence_changes(n->parts[p].abs);
        }
        at += alen;
        len -= alen;
    }
    f = fopen(n->ckpt_path, "w+");
    if (f && fwrite(at, 1, len, f) == len && fflush(f) == 0) {
        rewind(f);
        got = corr_load_file(n->parts[p].corr, f, &dropped);
    }
    if (f) fclose(f);
    unlink(n->ckpt_path);
    if (got < 0 || rates < 0)
        log_msg(LOG_ERR, "cluster: partition %u: checkpoint unreadable%s, replaying without it", p,
                got >= 0 ? " (its rate limits)" : "");
    if (got >= 0)
        log_msg(LOG_INFO,
                "cluster: partition %u: checkpoint at sequence %llu, %ld contexts, %ld rate "
                "limit buckets, %ld absence sources",
                p, (unsigned long long)n->parts[p].seq, got, rates < 0 ? 0 : rates,
                sources < 0 ? 0 : sources);
}

/*
 * Every ckpt_every_ms (only < 0), each owned partition that moved, or
 * partition only at once (one given back: its lease no longer counts here,
 * the lease thread writes the checkpoint before it frees it): its rate limits' buckets
 * (corr_save_rates, so that the next owner goes on limiting), its contexts (corr_save, with
 * their remaining timeouts) and the sequence they cover, handed to the lease thread to write.
 */
static void
take_ckpts(struct cluster_node *n, int only)
{
    unsigned p;
    uint64_t t = now_ms();
    struct buf data = BUF_INIT, rates = BUF_INIT;
    FILE *f;
    char b[65536];
    size_t got;
    uint64_t bytes = 0, us = 0, t0;

    if (only < 0 && t - n->last_ckpt_ms < n->ckpt_every_ms) return;
    if (only < 0) n->last_ckpt_ms = t;
    for (p = only < 0 ? 0 : (unsigned)only; p < (only < 0 ? n->nparts : (unsigned)only + 1); p++) {
        struct part *pt = &n->parts[p];
        bool abs_moved = pt->abs && absence_changes(pt->abs) != pt->abs_changes;
        if (!pt->corr || (pt->seq == pt->ckpt_seq && !abs_moved) || fenced(n, p, pt->token) ||
            (only < 0 && !lease_valid(n, p)))
            continue;
        t0 = now_us();
        buf_reset(&data);
        buf_reset(&rates);
        corr_save_rates(pt->corr, &rates);
        buf_printf(&data, "%llu\nrates %zu\n", (unsigned long long)pt->seq, rates.len);
        buf_append(&data, rates.p, rates.len);
        if (pt->abs) {
            /* a section of its own, after the rates: checkpoints without it load as before */
            buf_reset(&rates);
            absence_save(pt->abs, &rates);
            buf_printf(&data, "absence %zu\n", rates.len);
            buf_append(&data, rates.p, rates.len);
        }
        if (corr_save(pt->corr, n->ckpt_path) < 0 || !(f = fopen(n->ckpt_path, "r"))) {
            log_msg(LOG_ERR, "cluster: partition %u: checkpoint not taken: %s", p, strerror(errno));
            continue;
        }
        while ((got = fread(b, 1, sizeof(b), f)) > 0) buf_append(&data, b, got);
        fclose(f);
        unlink(n->ckpt_path);
        pt->ckpt_bytes = data.len;
        pt->ckpt_us = now_us() - t0;
        pt->ckpt_seq = pt->seq;
        if (pt->abs) pt->abs_changes = absence_changes(pt->abs);
        pthread_mutex_lock(&n->lock);
        buf_reset(&n->ckpts[p].data);
        buf_append(&n->ckpts[p].data, data.p, data.len);
        n->ckpts[p].seq = pt->seq;
        n->ckpts[p].ready = true;
        pthread_mutex_unlock(&n->lock);
    }
    buf_free(&data);
    buf_free(&rates);
    /* the size and time of the last checkpoint of each owned partition, summed: /metrics */
    for (p = 0; p < n->nparts; p++)
        if (n->parts[p].corr) {
            bytes += n->parts[p].ckpt_bytes;
            us += n->parts[p].ckpt_us;
        }
    __atomic_store_n(&n->st.ckpt_bytes, bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&n->st.ckpt_us, us, __ATOMIC_RELAXED);
}

static void
handle(struct cluster_node *n, struct event *e)
{
    struct part *pt = &n->parts[e->part];

    switch (e->type) {
    case EV_MSG: consume(n, e); break;
    case EV_ACQUIRED:
        drop_part(n, e->part);
        pt->corr = corr_new(n->db, &n->copts);
        pt->token = e->token;
        pt->seq = e->seq;
        pt->ckpt_seq = e->seq;
        pt->ckpt_bytes = pt->ckpt_us = 0;
        pt->upto = e->upto;
        pt->idx = 0;
        pt->abs = new_abs(n);
        pt->abs_changes = 0;
        pt->behind = false;
        if (e->ckpt.len) load_ckpt(n, e->part, &e->ckpt);
        buf_free(&e->ckpt);
        __atomic_store_n(&n->done_seq[e->part], e->seq, __ATOMIC_RELEASE);
        break;
    case EV_DROP:
        if (pt->token == e->token) {
            /* given back: a last checkpoint, for its absence reports made since the last one */
            if (e->seq) take_ckpts(n, (int)e->part);
            drop_part(n, e->part);
        }
        pthread_mutex_lock(&n->lock);
        __atomic_store_n(&n->dropped[e->part], e->token, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&n->cond);
        pthread_mutex_unlock(&n->lock);
        break;
    }
}

static void
on_async(uv_async_t *a)
{
    struct cluster_node *n = a->data;
    struct event *list, *e;

    pthread_mutex_lock(&n->lock);
    list = n->head;
    n->head = n->tail = NULL;
    n->queued = 0;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->lock);
    while ((e = list)) {
        list = e->next;
        handle(n, e);
        free(e);
    }
}

/* ---- the lease thread ---- */

static void
add_member(void *arg, const char *key)
{
    struct cluster_node *n = arg;

    n->members = xgrow(n->members, &n->capmembers, n->nmembers + 1, sizeof(*n->members));
    n->members[n->nmembers++] = xstrdup(key + 2);
}

static void
clear_members(struct cluster_node *n)
{
    size_t i;

    for (i = 0; i < n->nmembers; i++) free(n->members[i]);
    n->nmembers = 0;
}

static bool
is_member(const struct cluster_node *n, const char *node)
{
    size_t i;

    for (i = 0; i < n->nmembers; i++)
        if (strcmp(n->members[i], node) == 0) return true;
    return false;
}

/* The member that should own p: the highest rendezvous hash; NULL: no member known. */
static const char *
winner(const struct cluster_node *n, unsigned p)
{
    const char *best = NULL;
    uint64_t bh = 0, h;
    char b[300];
    size_t i;

    for (i = 0; i < n->nmembers; i++) {
        int len = snprintf(b, sizeof(b), "%u/%s", p, n->members[i]);
        h = hash_keyed_string(&n->key, b, (size_t)len);
        if (!best || h > bh || (h == bh && strcmp(n->members[i], best) < 0)) {
            best = n->members[i];
            bh = h;
        }
    }
    return best;
}

static void
key_of(char *b, size_t size, const char *prefix, unsigned p)
{
    snprintf(b, size, "%s.%u", prefix, p);
}

/* Waits until the loop has dropped p (bounded: a stuck loop is fenced anyway). */
static void
wait_dropped(struct cluster_node *n, unsigned p, uint64_t token)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    pthread_mutex_lock(&n->lock);
    while (__atomic_load_n(&n->dropped[p], __ATOMIC_ACQUIRE) != token && !n->quit)
        if (pthread_cond_timedwait(&n->cond, &n->lock, &ts) == ETIMEDOUT) break;
    pthread_mutex_unlock(&n->lock);
}

/* Writes p's position if it moved; false when another node wrote it since (p is lost). */
static bool
write_pos(struct cluster_node *n, unsigned p)
{
    struct lease *ls = &n->leases[p];
    uint64_t seq = __atomic_load_n(&n->done_seq[p], __ATOMIC_ACQUIRE), rev = 0;
    char key[64], val[32];
    int len, rc;

    if (seq <= ls->pos_written) return true; /* a new owner replaying: behind it */
    key_of(key, sizeof(key), "pos", p);
    len = snprintf(val, sizeof(val), "%llu", (unsigned long long)seq);
    rc = ls->pos_rev
             ? n->be->kv_update(n->log, CLUSTER_STATE, key, val, (size_t)len, ls->pos_rev, &rev)
             : n->be->kv_create(n->log, CLUSTER_STATE, key, val, (size_t)len, &rev);
    if (rc == CLUSTER_OK) {
        ls->pos_rev = rev;
        ls->pos_written = seq;
        return true;
    }
    if (rc == CLUSTER_ERROR)
        log_msg(LOG_WARNING, "cluster: partition %u: position not written: %s", p,
                n->be->error(n->log));
    return rc == CLUSTER_ERROR;
}

/* Writes p's checkpoint if one is ready; false when another node wrote one since (p is lost). */
static bool
write_ckpt(struct cluster_node *n, unsigned p)
{
    struct lease *ls = &n->leases[p];
    struct buf data = BUF_INIT;
    int rc;

    pthread_mutex_lock(&n->lock);
    if (n->ckpts[p].ready) {
        struct buf t = n->ckpts[p].data;
        n->ckpts[p].data = data;
        data = t;
        n->ckpts[p].ready = false;
    }
    pthread_mutex_unlock(&n->lock);
    if (!data.len) return true;
    rc = cluster_ckpt_write(n->be, n->log, p, &ls->ck, data.p, data.len, n->be->max_value(n->log));
    buf_free(&data);
    if (rc == CLUSTER_OK) {
        count(&n->st.checkpoints, 1);
        return true;
    }
    if (rc == CLUSTER_ERROR)
        log_msg(LOG_WARNING, "cluster: partition %u: checkpoint not written: %s", p,
                n->be->error(n->log));
    return rc == CLUSTER_ERROR;
}

/* Stops owning p: fenced at once, unsubscribed, dropped by the loop (released: then freed). */
static void
give_up(struct cluster_node *n, unsigned p, bool release, const char *why)
{
    struct lease *ls = &n->leases[p];
    char key[64];
    uint64_t rev;

    __atomic_store_n(&n->valid_until[p], 0, __ATOMIC_RELEASE);
    n->be->unsubscribe(n->log, p);
    post(n, EV_DROP, p, ls->token, release); /* released: the loop takes a last checkpoint */
    ls->owned = false;
    if (!release) {
        count(&n->st.lost, 1);
        log_msg(LOG_WARNING, "cluster: partition %u lost: %s", p, why);
        return;
    }
    wait_dropped(n, p, ls->token);
    write_ckpt(n, p);
    write_pos(n, p);
    key_of(key, sizeof(key), "p", p);
    n->be->kv_update(n->log, CLUSTER_LEASES, key, "", 0, ls->rev, &rev);
    count(&n->st.released, 1);
    log_msg(LOG_INFO, "cluster: partition %u released (%s)", p, why);
}

/*
 * Takes p if it is free; false if it is not (or the servers cannot say).
 * Without take, only notes since when p has been free.
 */
static bool
take(struct cluster_node *n, unsigned p, bool fallback)
{
    struct lease *ls = &n->leases[p];
    struct buf val = BUF_INIT, err = BUF_INIT;
    struct event *ev;
    char key[64];
    uint64_t rev = 0, t0 = now_ms(), from = 0;
    int rc;

    key_of(key, sizeof(key), "p", p);
    rc = n->be->kv_get(n->log, CLUSTER_LEASES, key, &val, &rev);
    if (rc == CLUSTER_OK && val.len) {
        ls->free_since = 0; /* held */
        buf_free(&val);
        return false;
    }
    if (rc == CLUSTER_ERROR || !fallback) {
        if (rc != CLUSTER_ERROR && !ls->free_since) ls->free_since = t0;
        buf_free(&val);
        return false;
    }
    rc = rc == CLUSTER_ABSENT
             ? n->be->kv_create(n->log, CLUSTER_LEASES, key, n->node, strlen(n->node), &rev)
             : n->be->kv_update(n->log, CLUSTER_LEASES, key, n->node, strlen(n->node), rev, &rev);
    if (rc != CLUSTER_OK) {
        buf_free(&val);
        return false;
    }
    ls->rev = rev;
    ls->owned = true;
    ls->free_since = 0;
    ls->token = ++n->next_token;
    /*
     * Where the previous owner stopped (pos.<p>: it emitted up to there) and
     * its last checkpoint (ckpt.<p>: the contexts at a sequence at most that):
     * the checkpoint is loaded and the stream replayed from the sequence after
     * it, what is generated up to pos.<p> not emitted again.
     */
    ls->pos_rev = 0;
    ls->pos_written = 0;
    key_of(key, sizeof(key), "pos", p);
    rc = n->be->kv_get(n->log, CLUSTER_STATE, key, &val, &ls->pos_rev);
    if (rc == CLUSTER_OK) ls->pos_written = strtoull(buf_str(&val), NULL, 10);
    if (rc != CLUSTER_ERROR) {
        uint64_t damaged = 0;
        rc = cluster_ckpt_read(n->be, n->log, p, &ls->ck, &val, &damaged);
        count(&n->st.ckpt_damaged, damaged);
    }
    if (rc == CLUSTER_ERROR) {
        /* cannot say where to start: give it back */
        buf_free(&val);
        ls->owned = false;
        key_of(key, sizeof(key), "p", p);
        n->be->kv_update(n->log, CLUSTER_LEASES, key, "", 0, ls->rev, &rev);
        return false;
    }
    ev = xcalloc(1, sizeof(*ev));
    ev->type = EV_ACQUIRED;
    ev->part = p;
    ev->token = ls->token;
    ev->upto = ls->pos_written;
    if (rc == CLUSTER_OK) {
        const char *nl = memchr(val.p, '\n', val.len);
        from = strtoull(buf_str(&val), NULL, 10);
        if (nl) buf_append(&ev->ckpt, nl + 1, val.len - (size_t)(nl + 1 - val.p));
    }
    ev->seq = from;
    buf_free(&val);
    __atomic_store_n(&n->valid_until[p], t0 + n->valid_ms, __ATOMIC_RELEASE);
    push(n, ev, false);
    if (n->be->subscribe(n->log, p, from + 1, ls->token, &err) < 0) {
        log_msg(LOG_ERR, "cluster: partition %u: %s", p, buf_str(&err));
        buf_free(&err);
        give_up(n, p, true, "cannot read it");
        return false;
    }
    count(&n->st.acquired, 1);
    log_msg(LOG_INFO, "cluster: partition %u acquired (from sequence %llu, emitting after %llu)", p,
            (unsigned long long)from + 1, (unsigned long long)ls->pos_written);
    return true;
}

static void
renew(struct cluster_node *n, unsigned p)
{
    struct lease *ls = &n->leases[p];
    char key[64];
    uint64_t rev = 0, t0 = now_ms();
    int rc;

    if (!lease_valid(n, p) || fenced(n, p, ls->token)) {
        give_up(n, p, false, "not renewed in time");
        return;
    }
    key_of(key, sizeof(key), "p", p);
    rc = n->be->kv_update(n->log, CLUSTER_LEASES, key, n->node, strlen(n->node), ls->rev, &rev);
    if (rc == CLUSTER_OK) {
        ls->rev = rev;
        __atomic_store_n(&n->valid_until[p], t0 + n->valid_ms, __ATOMIC_RELEASE);
        /* renewed, but too late for the loop: no position or checkpoint of it */
        if (fenced(n, p, ls->token))
            give_up(n, p, false, "not renewed in time");
        else if (!write_pos(n, p))
            give_up(n, p, false, "its position was written by another node");
        else if (!write_ckpt(n, p))
            give_up(n, p, false, "its checkpoint was written by another node");
    } else if (rc != CLUSTER_ERROR) {
        give_up(n, p, false, "taken by another node");
    }
    /* an error: the lease runs out by itself unless a later beat renews it */
}

static void
beat(struct cluster_node *n)
{
    char key[300];
    unsigned p, owned = 0, share = 0;
    bool balanced = true;

    snprintf(key, sizeof(key), "n.%s", n->node);
    if (n->be->kv_put(n->log, CLUSTER_LEASES, key, n->node, strlen(n->node)) != CLUSTER_OK)
        log_msg(LOG_WARNING, "cluster: membership not written: %s", n->be->error(n->log));
    clear_members(n);
    if (n->be->kv_keys(n->log, CLUSTER_LEASES, "n.", add_member, n) != CLUSTER_OK ||
        !is_member(n, n->node))
        add_member(n, key);
    for (p = 0; p < n->nparts; p++) {
        struct lease *ls = &n->leases[p];
        const char *w = winner(n, p);
        bool mine = w && strcmp(w, n->node) == 0;
        if (ls->owned) renew(n, p);
        if (ls->owned && !mine && w && is_member(n, w)) give_up(n, p, true, "rebalanced");
        if (!ls->owned && mine) take(n, p, true);
        /* not ours, but free for two leases: its owner-to-be does not take it */
        else if (!ls->owned)
            take(n, p, ls->free_since && now_ms() - ls->free_since > 2 * n->lease_ms);
        owned += ls->owned;
        share += mine;
        if (ls->owned != mine) balanced = false;
    }
    __atomic_store_n(&n->st.owned, owned, __ATOMIC_RELAXED);
    __atomic_store_n(&n->st.members, (unsigned)n->nmembers, __ATOMIC_RELAXED);
    __atomic_store_n(&n->st.balanced, balanced && owned == share, __ATOMIC_RELAXED);
}

/* At the end: every partition given back (the loop no longer processes), membership ended. */
static void
leave(struct cluster_node *n)
{
    unsigned p;
    char key[300];
    uint64_t rev;

    bool up = true; /* the servers answer: once they do not, the leases expire by themselves */

    for (p = 0; p < n->nparts; p++) {
        struct lease *ls = &n->leases[p];
        if (!ls->owned) continue;
        __atomic_store_n(&n->valid_until[p], 0, __ATOMIC_RELEASE);
        n->be->unsubscribe(n->log, p);
        ls->owned = false;
        if (!up) continue;
        /* the checkpoint cluster_node_free took, then the position, then the lease */
        write_pos(n, p);
        write_ckpt(n, p);
        key_of(key, sizeof(key), "p", p);
        up = n->be->kv_update(n->log, CLUSTER_LEASES, key, "", 0, ls->rev, &rev) != CLUSTER_ERROR;
    }
    snprintf(key, sizeof(key), "n.%s", n->node);
    if (up) n->be->kv_delete(n->log, CLUSTER_LEASES, key);
}

static void *
lease_thread(void *arg)
{
    struct cluster_node *n = arg;
    struct timespec ts;
    bool quit;

    for (;;) {
        beat(n);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(n->beat_ms % 1000) * 1000000L;
        ts.tv_sec += (time_t)(n->beat_ms / 1000) + ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_mutex_lock(&n->lock);
        if (!n->quit) pthread_cond_timedwait(&n->cond, &n->lock, &ts);
        quit = n->quit;
        pthread_mutex_unlock(&n->lock);
        if (quit) break;
    }
    leave(n);
    return NULL;
}

/* ---- the API ---- */

struct cluster_node *
cluster_node_new(const struct cluster_node_opts *o, struct pdb *db, struct buf *err)
{
    struct cluster_node *n = xcalloc(1, sizeof(*n));
    struct cluster_callbacks cb = {on_deliver, on_acked, n};
    const struct conf_cluster *cc = o->cc;
    static const struct hash_key zero = {0x636f7272616c2d63ull, 0x6c75737465722d31ull};

    n->loop = o->loop;
    n->be = o->backend ? o->backend : &cluster_nats;
    n->name = xstrdup(cc->name);
    n->node = xstrdup(cc->node);
    n->hostname = xstrdup(o->hostname ? o->hostname : "localhost");
    n->nparts = (unsigned)cc->partitions;
    n->db = db;
    /* the routing key: the cluster's name under a fixed key, the same on every node */
    n->key.k0 = hash_keyed_string(&zero, cc->name, strlen(cc->name));
    n->key.k1 = hash_keyed_bytes(&zero, n->key.k0, cc->name, strlen(cc->name));
    par_route_init(&n->route, db, n->nparts);
    n->copts = *o->corr;
    n->copts.emit = node_emit;
    n->copts.arg = n;
    n->emit = o->emit;
    n->arg = o->arg;
    n->h_id = nv_intern_str("corral.cluster_id");
    n->h_alert_id = nv_intern_str("corral.alert_id");
    n->h_event = nv_intern_str("corral.event");
    n->h_since = nv_intern_str("corral.since");
    n->abs_rules = o->absences;
    n->nabs_rules = o->nabsences;
    n->abs_max = o->max_absence_sources;
    n->abs_emit = o->absence_emit;
    n->abs_arg = o->arg;
    n->touched = xcalloc(TOUCH_SLOTS, sizeof(*n->touched));
    n->imsg = msg_new();
    n->cmsg = msg_new();
    n->parts = xcalloc(n->nparts, sizeof(*n->parts));
    n->leases = xcalloc(n->nparts, sizeof(*n->leases));
    n->valid_until = xcalloc(n->nparts, sizeof(*n->valid_until));
    n->done_seq = xcalloc(n->nparts, sizeof(*n->done_seq));
    n->fenced_token = xcalloc(n->nparts, sizeof(*n->fenced_token));
    n->dropped = xcalloc(n->nparts, sizeof(*n->dropped));
    n->ckpts = xcalloc(n->nparts, sizeof(*n->ckpts));
    {
        const char *tmp = getenv("TMPDIR");
        char b[4096];
        snprintf(b, sizeof(b), "%s/corrald-checkpoint.%ld", tmp && *tmp ? tmp : "/tmp",
                 (long)getpid());
        n->ckpt_path = xstrdup(b);
    }
    n->ckpt_every_ms = CKPT_EVERY_MS;
    n->max_in_flight = cc->max_in_flight;
    n->lease_ms = (uint64_t)(cc->lease * 1000);
    n->beat_ms = n->lease_ms / 5 < 200 ? 200 : n->lease_ms / 5;
    n->valid_ms = n->lease_ms * 2 / 3;
    n->st.partitions = n->nparts;
    pthread_mutex_init(&n->lock, NULL);
    pthread_cond_init(&n->cond, NULL);
    n->async = xcalloc(1, sizeof(*n->async));
    uv_async_init(n->loop, n->async, on_async);
    n->async->data = n;
    if (!(n->log = n->be->open(cc, &cb, err))) {
        cluster_node_free(n);
        return NULL;
    }
    if (pthread_create(&n->tid, NULL, lease_thread, n) != 0) {
        buf_printf(err, "cluster: cannot start the lease thread");
        cluster_node_free(n);
        return NULL;
    }
    n->started = true;
    log_msg(LOG_INFO, "cluster %s: node %s, %u partitions%s, over %s (%s)", n->name, n->node,
            n->nparts,
            n->route.nshards == 1 && n->nparts > 1 ? " (the rules correlate in one)" : "",
            n->be->name, cc->nats);
    return n;
}

static void
free_async(uv_handle_t *h)
{
    free(h);
}

void
cluster_node_free(struct cluster_node *n)
{
    unsigned p;
    struct event *e;

    if (!n) return;
    /* the last checkpoints; the loop stops processing: then the lease thread gives all back */
    n->last_ckpt_ms = 0;
    take_ckpts(n, -1);
    for (p = 0; p < n->nparts; p++) {
        __atomic_store_n(&n->valid_until[p], 0, __ATOMIC_RELEASE);
        drop_part(n, p);
    }
    pthread_mutex_lock(&n->lock);
    n->quit = true;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->lock);
    if (n->started) pthread_join(n->tid, NULL);
    if (n->log) n->be->close(n->log);
    while ((e = n->head)) {
        n->head = e->next;
        if (e->type == EV_ACQUIRED) buf_free(&e->ckpt);
        free(e);
    }
    uv_close((uv_handle_t *)n->async, free_async);
    clear_members(n);
    free(n->members);
    msg_unref(n->imsg);
    msg_unref(n->cmsg);
    buf_free(&n->id);
    buf_free(&n->idval);
    free(n->parts);
    free(n->touched);
    free(n->leases);
    free(n->valid_until);
    free(n->done_seq);
    free(n->fenced_token);
    free(n->dropped);
    for (p = 0; p < n->nparts; p++) buf_free(&n->ckpts[p].data);
    free(n->ckpts);
    free(n->ckpt_path);
    free(n->name);
    free(n->node);
    free(n->hostname);
    pthread_mutex_destroy(&n->lock);
    pthread_cond_destroy(&n->cond);
    free(n);
}

bool
cluster_node_submit(struct cluster_node *n, const char *data, size_t len, const char *peer,
                    const char *tls_peer, bool wait)
{
    struct received_from from;
    const struct pdb_rule *r;
    unsigned p;

    if (!wait && __atomic_load_n(&n->in_flight, __ATOMIC_ACQUIRE) >= n->max_in_flight) {
        count(&n->st.dropped, 1);
        return false;
    }
    syslogfmt_parse(n->imsg, data, len, NULL);
    from.peer = peer;
    from.peerlen = peer ? strlen(peer) : 0;
    from.tls_peer = tls_peer;
    from.tls_peerlen = tls_peer ? strlen(tls_peer) : 0;
    from.hostname = n->hostname;
    received_normalise(n->imsg, &from);
    r = pdb_lookup(n->db, n->imsg);
    p = route(n, n->imsg, r);
    if (n->nabs_rules && abs_watched(n, n->imsg)) {
        /* its host's absence is watched in another partition: a copy tells its owner */
        unsigned a = host_part(n, n->imsg);
        if (a != p && touch_due(n, n->imsg)) {
            __atomic_add_fetch(&n->in_flight, 1, __ATOMIC_ACQ_REL);
            if (!n->be->publish(n->log, a, data, len, peer, tls_peer, n->hostname, CLUSTER_SEEN)) {
                __atomic_sub_fetch(&n->in_flight, 1, __ATOMIC_ACQ_REL);
                count(&n->st.publish_failed, 1);
            } else {
                count(&n->st.seen_published, 1);
            }
        }
    }
    __atomic_add_fetch(&n->in_flight, 1, __ATOMIC_ACQ_REL);
    if (!n->be->publish(n->log, p, data, len, peer, tls_peer, n->hostname, 0)) {
        __atomic_sub_fetch(&n->in_flight, 1, __ATOMIC_ACQ_REL);
        count(&n->st.publish_failed, 1);
        count(&n->st.dropped, 1);
        return false;
    }
    count(&n->st.published, 1);
    return true;
}

bool
cluster_node_full(const struct cluster_node *n)
{
    return __atomic_load_n(&n->in_flight, __ATOMIC_ACQUIRE) >= n->max_in_flight;
}

bool
cluster_node_low(const struct cluster_node *n)
{
    return __atomic_load_n(&n->in_flight, __ATOMIC_ACQUIRE) <= n->max_in_flight / 2;
}

void
cluster_node_tick(struct cluster_node *n)
{
    unsigned p;

    for (p = 0; p < n->nparts; p++) {
        struct part *pt = &n->parts[p];
        if (!pt->corr || !lease_valid(n, p)) continue;
        n->cur = p;
        corr_tick(pt->corr);
        /* replaying, or behind the stream: the sources' later messages are still to come */
        if (pt->abs && pt->seq >= pt->upto && !pt->behind) absence_tick(pt->abs, clock_mono_ms());
    }
    take_ckpts(n, -1);
}

unsigned
cluster_node_engines(struct cluster_node *n, struct corr **out, unsigned max)
{
    unsigned p, k = 0;

    for (p = 0; p < n->nparts && k < max; p++)
        if (n->parts[p].corr) out[k++] = n->parts[p].corr;
    return k;
}

void
cluster_node_set_db(struct cluster_node *n, struct pdb *db)
{
    unsigned p;
    size_t kept, dropped;

    n->db = db;
    par_route_init(&n->route, db, n->nparts);
    for (p = 0; p < n->nparts; p++)
        if (n->parts[p].corr) corr_set_db(n->parts[p].corr, db, &kept, &dropped);
}

void
cluster_node_set_absence(struct cluster_node *n, const struct conf_absence *rules, size_t nrules,
                         size_t max_sources)
{
    unsigned p;

    n->abs_rules = rules;
    n->nabs_rules = nrules;
    n->abs_max = max_sources;
    for (p = 0; p < n->nparts; p++) {
        struct part *pt = &n->parts[p];
        struct absence *was = pt->abs;
        if (!pt->corr) continue;
        n->cur = p;
        pt->abs = new_abs(n);
        if (pt->abs) absence_adopt(pt->abs, was, clock_mono_ms());
        absence_free(was);
        pt->abs_changes = pt->abs ? absence_changes(pt->abs) + 1 : 0; /* checkpointed anew */
    }
}

void
cluster_node_stats(const struct cluster_node *n, struct cluster_node_stats *st)
{
    const struct cluster_node_stats *s = &n->st;
    unsigned p;

    st->published = __atomic_load_n(&s->published, __ATOMIC_RELAXED);
    st->acked = __atomic_load_n(&s->acked, __ATOMIC_RELAXED);
    st->publish_failed = __atomic_load_n(&s->publish_failed, __ATOMIC_RELAXED);
    st->dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
    st->consumed = __atomic_load_n(&s->consumed, __ATOMIC_RELAXED);
    st->late = __atomic_load_n(&s->late, __ATOMIC_RELAXED);
    st->fenced = __atomic_load_n(&s->fenced, __ATOMIC_RELAXED);
    st->stale = __atomic_load_n(&s->stale, __ATOMIC_RELAXED);
    st->split = __atomic_load_n(&s->split, __ATOMIC_RELAXED);
    st->acquired = __atomic_load_n(&s->acquired, __ATOMIC_RELAXED);
    st->ckpt_damaged = __atomic_load_n(&s->ckpt_damaged, __ATOMIC_RELAXED);
    st->lost = __atomic_load_n(&s->lost, __ATOMIC_RELAXED);
    st->released = __atomic_load_n(&s->released, __ATOMIC_RELAXED);
    st->checkpoints = __atomic_load_n(&s->checkpoints, __ATOMIC_RELAXED);
    st->suppressed = __atomic_load_n(&s->suppressed, __ATOMIC_RELAXED);
    st->ckpt_bytes = __atomic_load_n(&s->ckpt_bytes, __ATOMIC_RELAXED);
    st->ckpt_us = __atomic_load_n(&s->ckpt_us, __ATOMIC_RELAXED);
    st->subscribe_retries = n->log ? n->be->subscribe_retries(n->log) : 0;
    st->owned = __atomic_load_n(&s->owned, __ATOMIC_RELAXED);
    st->members = __atomic_load_n(&s->members, __ATOMIC_RELAXED);
    st->partitions = n->nparts;
    st->balanced = __atomic_load_n(&s->balanced, __ATOMIC_RELAXED);
    st->seen_published = __atomic_load_n(&s->seen_published, __ATOMIC_RELAXED);
    st->absence_sources = st->absence_down = 0;
    for (p = 0; p < n->nparts; p++)
        if (n->parts[p].abs) {
            st->absence_sources += absence_tracked(n->parts[p].abs);
            st->absence_down += absence_down(n->parts[p].abs);
        }
}

bool
cluster_node_owns(const struct cluster_node *n, unsigned p)
{
    return p < n->nparts && lease_valid(n, p);
}

const struct cluster_backend *
cluster_node_backend(const struct cluster_node *n, struct cluster_log **log)
{
    *log = n->log;
    return n->be;
}
