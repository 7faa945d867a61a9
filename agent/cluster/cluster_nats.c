/*
 * cluster_nats: the cluster backend (cluster.h) on NATS JetStream, through
 * libnats (the C client).
 *
 *   partitioned log   one stream NAME_in over the subjects NAME.in.<p>,
 *                     replicated on `replicas` servers; a message carries
 *                     the receiving input's peer, TLS peer and node host
 *                     name (and Corral-Seen: CLUSTER_SEEN) as headers, and
 *                     is delivered with its stored time stamp and whether
 *                     more are pending; publishes are asynchronous (libnats
 *                     keeps them in flight, its ack handler reports each);
 *                     a partition is read by an ordered consumer (in
 *                     stream order, restarted by libnats after a gap) from
 *                     a stream sequence on, created by a thread of its own
 *                     (sub_thread), asked for again with backoff when the
 *                     servers do not create it at once
 *   KV                the buckets NAME-leases (entries expire `lease`
 *                     after their last write: JetStream's MaxAge) and
 *                     NAME-state; create/update are JetStream's expected
 *                     last subject sequence, so a revision fences; the
 *                     keys are listed from the stream's subjects (no
 *                     consumer); a watch is libnats' KV watcher, read by a
 *                     thread of its own
 *
 *   work queue        the stream NAME_alerts over NAME.alerts.<consumer>,
 *                     work-queue retention (a message goes once acked),
 *                     with a duplicate window of two minutes for the
 *                     Nats-Msg-Id of publishes; one durable pull consumer
 *                     per consumer name, shared by every node, with an ack
 *                     wait of 30 s; a thread per consumer pulls
 *
 * Two connections: the log's (publishes, subscriptions) and the KV's, so
 * that a lease renewal does not wait behind thousands of publishes in the
 * first one's buffer (under load, it did, past the lease).
 *
 * libnats reconnects by itself (forever, every half second); a publish
 * made while it is disconnected waits in its buffer and counts in flight.
 */
#include "agent/cluster/cluster.h"
#include "engine/clock.h"
#include "engine/log.h"
#include "engine/strlist.h"
#include "engine/xalloc.h"

#include <nats/nats.h>
#include <openssl/err.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ADMIN_TRIES 6 /* of 5 s (stream) or 2 s (bucket) each, at start */
/* JetStream's errors for a cluster still forming: no servers to place the
 * replicas on yet, or the metadata leader not elected yet */
#define JS_NO_PEERS      10005
#define JS_NOT_AVAILABLE 10008
#define PLACE_TRIES      120 /* of PLACE_WAIT_MS each: a minute for the cluster to form */
#define PLACE_WAIT_MS    500
#define HDR_PEER         "Corral-Peer"
#define HDR_TLS          "Corral-Tls-Peer"
#define HDR_HOST         "Corral-Host"
#define HDR_TRY          "Corral-Try"
#define HDR_SEEN         "Corral-Seen" /* CLUSTER_SEEN */
/* a publish the stream refused (no responders while it elects a leader, a timeout) is sent
 * again every RETRY_MS, RETRY_MAX times at most (a minute) before it counts as lost */
#define RETRY_MS  250
#define ACK_WAIT  5000 /* ms: an acknowledgement not come by then is a failure (sent again) */
#define RETRY_MAX 240
/* a consumer not created (no answer within the request's wait, or refused) is asked for
 * again after SUB_BACKOFF_MS, doubled at each failure up to SUB_BACKOFF_MAX_MS, for as long
 * as the partition is wanted: its lease is kept meanwhile */
#define SUB_WAIT           2000
#define SUB_BACKOFF_MS     250
#define SUB_BACKOFF_MAX_MS 4000

struct retry {
    struct retry *next;
    natsMsg *m;
};

/* What a subscription's message handler needs: its own, freed when libnats is done with it */
/*
 * The last Nats-Msg-Id number each publisher (the id's prefix: node and
 * start) had in a partition's stream, to tell a message stored after one
 * its publisher sent later (CLUSTER_LATE).  A few publishers are
 * remembered, the oldest forgotten first: a forgotten one's next message
 * is taken as in order.
 */
#define PUBLISHERS 8
#define PREFIX_MAX 128
struct publisher {
    char prefix[PREFIX_MAX];
    size_t len;
    uint64_t last;
};

struct subctx {
    struct cluster_log *l;
    unsigned part;
    uint64_t token;
    struct publisher pub[PUBLISHERS]; /* on_msg's only */
    unsigned npub, nextpub;
};

/* A partition's reading: its subscription, or the one wanted (made by sub_thread) */
struct sub {
    natsSubscription *s;
    bool want; /* a subscription to make: from, token */
    uint64_t from, token;
    unsigned gen;     /* counts subscribe/unsubscribe: a late result of an older one is dropped */
    unsigned tries;   /* failed creations of the wanted one */
    uint64_t next_ms; /* steady ms of its next try */
};

struct cluster_log {
    natsConnection *nc, *kvnc; /* the log's; the KV's, not queued behind publishes */
    jsCtx *js, *kvjs;
    kvStore *kv[2];
    char *bucket[2]; /* their names */
    struct cluster_callbacks cb;
    char *stream;
    char *prefix; /* NAME.in. */
    unsigned nparts;
    struct sub *subs; /* per partition, under slock */
    /* the consumers are created by sub_thread, not by the caller of subscribe (the lease
     * thread, which must not wait on a JetStream request that may time out) */
    pthread_mutex_t slock;
    pthread_cond_t scond;
    pthread_t stid;
    bool sstarted;
    uint64_t sub_retries; /* atomic */
    bool closing;         /* our own close: no "disconnected" in the log */
    /* libnats calls a connection's callbacks on a thread of its own, after
     * natsConnection_Close has returned: l lives until both connections'
     * closed callbacks (the last ones libnats calls) have run */
    pthread_mutex_t clock;
    pthread_cond_t ccond;
    int nclosed;
    /* publishes to send again, and the thread that does */
    pthread_mutex_t rlock;
    pthread_cond_t rcond;
    struct retry *retries;
    pthread_t rtid;
    bool rstarted;
    /* Nats-Msg-Id of publishes: the stream drops one sent again that it had stored */
    char *idprefix;
    uint64_t nextid; /* loop thread */
    int64_t replicas;
};

/* The last error, per thread: the KV calls are made from the lease thread and the loop's */
static __thread char last_err[256];

static void
set_err(struct cluster_log *l, const char *what, natsStatus st)
{
    const char *last = nats_GetLastError(NULL);

    (void)l;
    snprintf(last_err, sizeof(last_err), "%s: %s%s%s", what, natsStatus_GetText(st),
             last && *last ? ": " : "", last ? last : "");
}

/* How many times m was sent again so far. */
static int
tries(natsMsg *m)
{
    const char *v = NULL;

    return natsMsgHeader_Get(m, HDR_TRY, &v) == NATS_OK && v ? atoi(v) : 0;
}

static void
on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    struct cluster_log *l = closure;
    bool ok = pa != NULL && pae == NULL;
    struct retry *r;

    (void)js;
    if (!ok && !__atomic_load_n(&l->closing, __ATOMIC_ACQUIRE) && tries(msg) < RETRY_MAX) {
        /* still in flight: sent again by retry_thread */
        r = xmalloc(sizeof(*r));
        r->m = msg;
        pthread_mutex_lock(&l->rlock);
        r->next = l->retries;
        l->retries = r;
        pthread_mutex_unlock(&l->rlock);
        return;
    }
    l->cb.acked(l->cb.arg, ok);
    natsMsg_Destroy(msg);
}

static void *
retry_thread(void *arg)
{
    struct cluster_log *l = arg;
    struct retry *list, *r, *keep;
    struct timespec ts;
    char b[16];
    jsPubOptions po;

    jsPubOptions_Init(&po);
    po.MaxWait = ACK_WAIT; /* its Nats-Msg-Id is in its headers already */

    pthread_mutex_lock(&l->rlock);
    while (!l->closing) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += RETRY_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&l->rcond, &l->rlock, &ts);
        list = l->retries;
        l->retries = NULL;
        pthread_mutex_unlock(&l->rlock);
        keep = NULL;
        while ((r = list)) {
            list = r->next;
            snprintf(b, sizeof(b), "%d", tries(r->m) + 1);
            natsMsgHeader_Set(r->m, HDR_TRY, b);
            if (js_PublishMsgAsync(l->js, &r->m, &po) == NATS_OK) {
                free(r); /* libnats has it */
            } else if (tries(r->m) >= RETRY_MAX) {
                l->cb.acked(l->cb.arg, false);
                natsMsg_Destroy(r->m);
                free(r);
            } else {
                r->next = keep;
                keep = r;
            }
        }
        pthread_mutex_lock(&l->rlock);
        while ((r = keep)) {
            keep = r->next;
            r->next = l->retries;
            l->retries = r;
        }
    }
    pthread_mutex_unlock(&l->rlock);
    return NULL;
}

static void
on_nats_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *closure)
{
    (void)nc;
    (void)sub;
    (void)closure;
    log_msg(LOG_WARNING, "cluster: NATS: %s", natsStatus_GetText(err));
}

static void
on_disconnected(natsConnection *nc, void *closure)
{
    struct cluster_log *l = closure;

    (void)nc;
    if (__atomic_load_n(&l->closing, __ATOMIC_ACQUIRE)) return;
    log_msg(LOG_WARNING, "cluster: disconnected from NATS, reconnecting");
}

static void
on_closed(natsConnection *nc, void *closure)
{
    struct cluster_log *l = closure;

    (void)nc;
    pthread_mutex_lock(&l->clock);
    l->nclosed++;
    pthread_cond_broadcast(&l->ccond);
    pthread_mutex_unlock(&l->clock);
}

/* Until n connections have had their closed callback, or 5 s at most. */
static void
wait_closed(struct cluster_log *l, int n)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&l->clock);
    while (l->nclosed < n)
        if (pthread_cond_timedwait(&l->ccond, &l->clock, &until) != 0) break;
    pthread_mutex_unlock(&l->clock);
}

static void
on_reconnected(natsConnection *nc, void *closure)
{
    char url[256];

    (void)closure;
    if (natsConnection_GetConnectedUrl(nc, url, sizeof(url)) != NATS_OK) snprintf(url, 4, "?");
    log_msg(LOG_INFO, "cluster: reconnected to NATS at %s", url);
}

/* The password of user=, the file's first line. */
static char *
read_password(const char *path, struct buf *err)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    size_t n;

    if (!f) {
        buf_printf(err, "cluster password-file %s: %s", path, strerror(errno));
        return NULL;
    }
    if (!fgets(line, sizeof(line), f)) line[0] = 0;
    fclose(f);
    n = strcspn(line, "\r\n");
    line[n] = 0;
    return xstrdup(line);
}

static natsOptions *
options(struct cluster_log *l, const struct conf_cluster *cc, struct buf *err)
{
    natsOptions *o = NULL;
    natsStatus st;
    char **urls = NULL;
    size_t nurls = 0;
    int n;
    char name[300];

    strlist_split(cc->nats, &urls, &nurls);
    n = nurls > 64 ? 64 : (int)nurls;
    snprintf(name, sizeof(name), "corrald %s", cc->node);
    st = natsOptions_Create(&o);
    if (st == NATS_OK) st = natsOptions_SetServers(o, (const char **)urls, n);
    if (st == NATS_OK) st = natsOptions_SetName(o, name);
    if (st == NATS_OK) st = natsOptions_SetMaxReconnect(o, -1);
    if (st == NATS_OK) st = natsOptions_SetReconnectWait(o, 500);
    if (st == NATS_OK) st = natsOptions_SetTimeout(o, 2000);
    if (st == NATS_OK) st = natsOptions_SetErrorHandler(o, on_nats_error, NULL);
    if (st == NATS_OK) st = natsOptions_SetDisconnectedCB(o, on_disconnected, l);
    if (st == NATS_OK) st = natsOptions_SetReconnectedCB(o, on_reconnected, NULL);
    if (st == NATS_OK) st = natsOptions_SetClosedCB(o, on_closed, l);
    if (st == NATS_OK && cc->creds)
        if ((st = natsOptions_SetUserCredentialsFromFiles(o, cc->creds, NULL)) != NATS_OK)
            buf_printf(err, "cluster creds %s: %s", cc->creds, natsStatus_GetText(st));
    if (st == NATS_OK && cc->user) {
        char *pw = read_password(cc->password_file, err);
        if (!pw) {
            st = NATS_ERR;
        } else {
            st = natsOptions_SetUserInfo(o, cc->user, pw);
            explicit_bzero(pw, strlen(pw));
            free(pw);
        }
    }
    if (st == NATS_OK && (cc->ca || cc->cert)) st = natsOptions_SetSecure(o, true);
    if (st == NATS_OK && cc->ca)
        if ((st = natsOptions_LoadCATrustedCertificates(o, cc->ca)) != NATS_OK)
            buf_printf(err, "cluster ca %s: %s", cc->ca, nats_GetLastError(NULL));
    if (st == NATS_OK && cc->cert)
        if ((st = natsOptions_LoadCertificatesChain(o, cc->cert, cc->key)) != NATS_OK)
            buf_printf(err, "cluster cert %s, key %s: %s", cc->cert, cc->key,
                       nats_GetLastError(NULL));
    while (nurls) free(urls[--nurls]);
    free(urls);
    if (st != NATS_OK) {
        if (!err->len) buf_printf(err, "cluster: NATS options: %s", natsStatus_GetText(st));
        natsOptions_Destroy(o);
        return NULL;
    }
    return o;
}

static void nats_close(struct cluster_log *l);
static void *sub_thread(void *arg);
static void drop_sub(natsSubscription *s);

/*
 * Binds or creates the bucket name (history 1, file storage, replicas as the
 * cluster's; entries expire ttl_ns after their last write, 0: never); false
 * with err set.
 */
static bool
open_bucket(struct cluster_log *l, const char *name, int64_t ttl_ns, kvStore **kv, struct buf *err)
{
    kvConfig kc;
    natsStatus st;
    int tries;

    kvConfig_Init(&kc);
    kc.Bucket = name;
    kc.History = 1;
    kc.Replicas = (int)l->replicas;
    kc.StorageType = js_FileStorage;
    kc.TTL = ttl_ns; /* nanoseconds, as JetStream has MaxAge */
    for (tries = 0;
         (st = js_CreateKeyValue(kv, l->kvjs, &kc)) == NATS_TIMEOUT && tries < ADMIN_TRIES; tries++)
        log_msg(LOG_WARNING, "cluster: creating bucket %s: no answer yet, again", name);
    if (st != NATS_OK) {
        const char *why = nats_GetLastError(NULL);
        buf_printf(err, "cluster: bucket %s: %s", name, why ? why : natsStatus_GetText(st));
        return false;
    }
    return true;
}

static struct cluster_log *
nats_open(const struct conf_cluster *cc, const struct cluster_callbacks *cb, struct buf *err)
{
    struct cluster_log *l = xcalloc(1, sizeof(*l));
    natsOptions *o;
    natsStatus st;
    jsOptions jo;
    jsStreamConfig sc;
    jsErrCode ec = 0;
    char subj[300], bucket[300];
    const char *subjects[1];
    int i, tries;
    jsOptions admin;

    pthread_mutex_init(&l->clock, NULL);
    pthread_cond_init(&l->ccond, NULL);
    l->cb = *cb;
    {
        /* unique across the node's runs: node name, start time, count */
        char b[400];
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        snprintf(b, sizeof(b), "%s-%llx%09ld-", cc->node, (unsigned long long)now.tv_sec,
                 now.tv_nsec);
        l->idprefix = xstrdup(b);
    }
    pthread_mutex_init(&l->rlock, NULL);
    pthread_cond_init(&l->rcond, NULL);
    l->nparts = (unsigned)cc->partitions;
    l->replicas = (int64_t)cc->replicas;
    l->subs = xcalloc(l->nparts, sizeof(*l->subs));
    pthread_mutex_init(&l->slock, NULL);
    pthread_cond_init(&l->scond, NULL);
    if (!(o = options(l, cc, err))) goto fail;
    /* libnats connects in this thread: OpenSSL's error queue is then its own */
    ERR_clear_error();
    st = natsConnection_Connect(&l->nc, o);
    if (st == NATS_OK) st = natsConnection_Connect(&l->kvnc, o);
    natsOptions_Destroy(o);
    if (st != NATS_OK) {
        /*
         * The status alone says "SSL Error" or "Protocol Error".  libnats'
         * last error tells the handshake's failures on this side (a server
         * certificate not verified); a server that refuses this node's
         * certificate, or its absence, closes the connection after the
         * handshake with a TLS alert, which only OpenSSL's queue holds.
         */
        const char *why = nats_GetLastError(NULL);
        unsigned long e = ERR_peek_last_error();
        const char *tls = e ? ERR_reason_error_string(e) : NULL;
        buf_printf(err, "cluster: cannot connect to NATS (%s): %s%s%s%s%s%s", cc->nats,
                   natsStatus_GetText(st), why && *why ? ": " : "", why ? why : "",
                   tls ? " (TLS: " : "", tls ? tls : "", tls ? ")" : "");
        ERR_clear_error();
        goto fail;
    }
    jsOptions_Init(&jo);
    jo.Wait = 2000;
    /*
     * libnats' own bound only backs ours up: past max-in-flight, stream
     * inputs are paused, but the rest of the read being handled still goes
     * in (a 64 KiB read holds at most 32,768 lines)
     */
    jo.PublishAsync.MaxPending = (int64_t)cc->max_in_flight + 65536;
    jo.PublishAsync.AckHandler = on_ack;
    jo.PublishAsync.AckHandlerClosure = l;
    jo.PublishAsync.StallWait = 100;
    if ((st = natsConnection_JetStream(&l->js, l->nc, &jo)) != NATS_OK ||
        (st = natsConnection_JetStream(&l->kvjs, l->kvnc, &jo)) != NATS_OK) {
        buf_printf(err, "cluster: JetStream: %s", natsStatus_GetText(st));
        goto fail;
    }

    l->stream = xmalloc(strlen(cc->name) + 4);
    sprintf(l->stream, "%s_in", cc->name);
    l->prefix = xmalloc(strlen(cc->name) + 5);
    sprintf(l->prefix, "%s.in.", cc->name);
    snprintf(subj, sizeof(subj), "%s.in.*", cc->name);
    subjects[0] = subj;
    jsOptions_Init(&admin);
    admin.Wait = 5000;
    jsStreamConfig_Init(&sc);
    sc.Name = l->stream;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Replicas = (int64_t)cc->replicas;
    sc.MaxAge = (int64_t)(cc->retention * 1e9); /* nanoseconds */
    /* a JetStream cluster that has just elected its leader may not answer at
     * once, and until it has heard from enough servers it places no replica
     * (no suitable peers, or not available: it says so at once, so wait) */
    for (tries = 0; tries < ADMIN_TRIES + PLACE_TRIES; tries++) {
        ec = 0;
        st = js_AddStream(NULL, l->js, &sc, &admin, &ec);
        if (st == NATS_TIMEOUT && tries < ADMIN_TRIES) {
            log_msg(LOG_WARNING, "cluster: creating stream %s: no answer yet, again", l->stream);
        } else if ((ec == JS_NO_PEERS || ec == JS_NOT_AVAILABLE) && st != NATS_OK) {
            log_msg(LOG_WARNING, "cluster: creating stream %s: JetStream error %d, again",
                    l->stream, (int)ec);
            nats_Sleep(PLACE_WAIT_MS);
        } else {
            break;
        }
    }
    if (st != NATS_OK) {
        const char *why = nats_GetLastError(NULL);
        buf_printf(err, "cluster: stream %s (%s, %d replicas): %s (JetStream error %d)", l->stream,
                   subj, (int)cc->replicas, why && *why ? why : natsStatus_GetText(st), (int)ec);
        goto fail;
    }
    for (i = 0; i < 2; i++) {
        snprintf(bucket, sizeof(bucket), "%s-%s", cc->name,
                 i == CLUSTER_LEASES ? "leases" : "state");
        l->bucket[i] = xstrdup(bucket);
        if (!open_bucket(l, bucket, i == CLUSTER_LEASES ? (int64_t)(cc->lease * 1e9) : 0, &l->kv[i],
                         err))
            goto fail;
    }
    if (pthread_create(&l->rtid, NULL, retry_thread, l) != 0) {
        buf_printf(err, "cluster: cannot start a thread");
        goto fail;
    }
    l->rstarted = true;
    if (pthread_create(&l->stid, NULL, sub_thread, l) != 0) {
        buf_printf(err, "cluster: cannot start a thread");
        goto fail;
    }
    l->sstarted = true;
    return l;
fail:
    nats_close(l);
    return NULL;
}

/*
 * The asynchronous publishes of js still unacknowledged, taken back and
 * freed; how many.  Only after js_PublishAsyncComplete timed out: libnats
 * 3.4.1 crashes here on a context that never published asynchronously.
 */
static int
take_pending(jsCtx *js)
{
    natsMsgList pending;
    int n;

    memset(&pending, 0, sizeof(pending));
    if (js_PublishAsyncGetPendingList(&pending, js) != NATS_OK) return 0;
    n = pending.Count;
    natsMsgList_Destroy(&pending);
    return n;
}

static void
nats_close(struct cluster_log *l)
{
    unsigned i;
    jsPubOptions po;
    struct retry *r;

    if (!l) return;
    pthread_mutex_lock(&l->rlock);
    __atomic_store_n(&l->closing, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&l->rcond);
    pthread_mutex_unlock(&l->rlock);
    if (l->rstarted) pthread_join(l->rtid, NULL);
    pthread_mutex_lock(&l->slock);
    pthread_cond_broadcast(&l->scond);
    pthread_mutex_unlock(&l->slock);
    if (l->sstarted) pthread_join(l->stid, NULL);
    for (i = 0; i < l->nparts; i++) drop_sub(l->subs[i].s);
    pthread_mutex_destroy(&l->slock);
    pthread_cond_destroy(&l->scond);
    if (l->js) {
        /* what is in flight gets its acknowledgement (a second at most) */
        jsPubOptions_Init(&po);
        po.MaxWait = 1000;
        /* the rest are ours again (libnats keeps them otherwise): not acknowledged */
        if (js_PublishAsyncComplete(l->js, &po) == NATS_TIMEOUT)
            for (i = (unsigned)take_pending(l->js); i > 0; i--) l->cb.acked(l->cb.arg, false);
    }
    /* what still waited to be sent again is lost: counted */
    while ((r = l->retries)) {
        l->retries = r->next;
        l->cb.acked(l->cb.arg, false);
        natsMsg_Destroy(r->m);
        free(r);
    }
    pthread_mutex_destroy(&l->rlock);
    pthread_cond_destroy(&l->rcond);
    kvStore_Destroy(l->kv[0]);
    kvStore_Destroy(l->kv[1]);
    jsCtx_Destroy(l->js);
    jsCtx_Destroy(l->kvjs);
    if (l->nc) natsConnection_Close(l->nc);
    if (l->kvnc) natsConnection_Close(l->kvnc);
    wait_closed(l, (l->nc != NULL) + (l->kvnc != NULL));
    if (l->nc) natsConnection_Destroy(l->nc);
    if (l->kvnc) natsConnection_Destroy(l->kvnc);
    pthread_mutex_destroy(&l->clock);
    pthread_cond_destroy(&l->ccond);
    free(l->subs);
    free(l->bucket[0]);
    free(l->bucket[1]);
    free(l->stream);
    free(l->prefix);
    free(l->idprefix);
    free(l);
}

static bool
nats_publish(struct cluster_log *l, unsigned part, const char *data, size_t len, const char *peer,
             const char *tls_peer, const char *host, unsigned flags)
{
    char subj[300], id[300];
    natsMsg *m = NULL;
    natsStatus st;
    jsPubOptions po;

    snprintf(subj, sizeof(subj), "%s%u", l->prefix, part);
    st = natsMsg_Create(&m, subj, NULL, data, (int)len);
    if (st == NATS_OK && peer) st = natsMsgHeader_Set(m, HDR_PEER, peer);
    if (st == NATS_OK && tls_peer) st = natsMsgHeader_Set(m, HDR_TLS, tls_peer);
    if (st == NATS_OK && host) st = natsMsgHeader_Set(m, HDR_HOST, host);
    if (st == NATS_OK && (flags & CLUSTER_SEEN)) st = natsMsgHeader_Set(m, HDR_SEEN, "1");
    snprintf(id, sizeof(id), "%s%llu", l->idprefix, (unsigned long long)++l->nextid);
    jsPubOptions_Init(&po);
    po.MaxWait = ACK_WAIT;
    po.MsgId = id;
    if (st == NATS_OK) st = js_PublishMsgAsync(l->js, &m, &po);
    natsMsg_Destroy(m); /* NULL once libnats took it */
    if (st != NATS_OK) set_err(l, "publish", st);
    return st == NATS_OK;
}

static const char *
header(natsMsg *m, const char *key)
{
    const char *v = NULL;

    return natsMsgHeader_Get(m, key, &v) == NATS_OK ? v : NULL;
}

/*
 * Whether the message published under id (PREFIX then a number, see
 * nats_publish) comes after one its publisher sent later: its publish was
 * sent again (nats_publish's acknowledgement timed out) after later ones
 * were stored.
 */
static bool
late(struct subctx *c, const char *id)
{
    const char *dash = id ? strrchr(id, '-') : NULL;
    struct publisher *p;
    size_t len;
    uint64_t n;
    unsigned i;

    if (!dash || !dash[1] || (size_t)(dash + 1 - id) > PREFIX_MAX) return false;
    len = (size_t)(dash + 1 - id);
    n = strtoull(dash + 1, NULL, 10);
    for (i = 0; i < c->npub; i++) {
        p = &c->pub[i];
        if (p->len != len || memcmp(p->prefix, id, len)) continue;
        if (n < p->last) return true;
        p->last = n;
        return false;
    }
    if (c->npub < PUBLISHERS)
        p = &c->pub[c->npub++];
    else
        p = &c->pub[c->nextpub++ % PUBLISHERS];
    memcpy(p->prefix, id, len);
    p->len = len;
    p->last = n;
    return false;
}

static void
on_msg(natsConnection *nc, natsSubscription *s, natsMsg *m, void *closure)
{
    struct subctx *c = closure;
    jsMsgMetaData *meta = NULL;

    (void)nc;
    (void)s;
    if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
        c->l->cb.deliver(c->l->cb.arg, c->part, c->token, meta->Sequence.Stream,
                         meta->Timestamp > 0 ? (uint64_t)meta->Timestamp / 1000000u : 0,
                         (header(m, HDR_SEEN) ? CLUSTER_SEEN : 0) |
                             (meta->NumPending ? CLUSTER_PENDING : 0) |
                             (late(c, header(m, "Nats-Msg-Id")) ? CLUSTER_LATE : 0),
                         natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), header(m, HDR_PEER),
                         header(m, HDR_TLS), header(m, HDR_HOST));
        jsMsgMetaData_Destroy(meta);
    }
    natsMsg_Destroy(m);
}

/* libnats has called on_msg for the last time */
static void
on_sub_done(void *closure)
{
    free(closure);
}

static void
drop_sub(natsSubscription *s)
{
    if (!s) return;
    natsSubscription_Unsubscribe(s);
    natsSubscription_Destroy(s);
}

/*
 * Creates partition part's ordered consumer from sequence from on; NULL with err set.
 *
 * libnats creates it with one request to the JetStream API, answered once the consumer
 * has a leader.  An ordered consumer is ephemeral and has one replica, placed by the
 * metadata leader on one of the stream's servers: nats-server up to 2.11 may pick one
 * that is down (nats-server#7165), and then no answer comes (NATS_TIMEOUT after the
 * request's wait, no JetStream error code); a metadata or stream leader still being
 * elected does the same.  Another request is placed afresh: sub_thread asks again.
 */
static natsSubscription *
make_sub(struct cluster_log *l, unsigned part, uint64_t from, uint64_t token, struct buf *err)
{
    struct subctx *c = xcalloc(1, sizeof(*c));
    natsSubscription *s = NULL;
    jsOptions jo;
    jsSubOptions so;
    jsErrCode ec = 0;
    natsStatus st;
    char subj[300];

    c->l = l;
    c->part = part;
    c->token = token;
    snprintf(subj, sizeof(subj), "%s%u", l->prefix, part);
    jsOptions_Init(&jo);
    jo.Wait = SUB_WAIT;
    jsSubOptions_Init(&so);
    so.Stream = l->stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = from ? from : 1;
    st = js_Subscribe(&s, l->js, subj, on_msg, c, &jo, &so, &ec);
    if (st == NATS_OK && natsSubscription_SetOnCompleteCB(s, on_sub_done, c) != NATS_OK) {
        /* cannot tell when c may go: kept (it is small, and this does not happen) */
        c = NULL;
    }
    if (st != NATS_OK) {
        const char *last = nats_GetLastError(NULL);
        buf_printf(err, "subscribe %s from %llu: %s%s%s", subj, (unsigned long long)from,
                   st == NATS_TIMEOUT ? "no answer (the consumer's server may be down, or a "
                                        "leader being elected)"
                                      : natsStatus_GetText(st),
                   last && *last ? ": " : "", last && *last ? last : "");
        if (ec) buf_printf(err, " (JetStream error %d)", (int)ec);
        free(c);
        return NULL;
    }
    /* no drops for a slow loop: the ordered consumer's flow control holds the server back */
    natsSubscription_SetPendingLimits(s, -1, -1);
    return s;
}

/* Makes the subscriptions wanted, each again after a failure (with backoff), until close. */
static void *
sub_thread(void *arg)
{
    struct cluster_log *l = arg;
    struct buf err = BUF_INIT;
    struct timespec ts;
    natsSubscription *s;
    uint64_t t, next, from, token, wait;
    unsigned p, gen;
    struct sub *sb;

    pthread_mutex_lock(&l->slock);
    while (!__atomic_load_n(&l->closing, __ATOMIC_ACQUIRE)) {
        t = clock_steady_ms();
        next = t + 1000;
        for (p = 0; p < l->nparts; p++) {
            if (!l->subs[p].want) continue;
            if (l->subs[p].next_ms <= t) break;
            if (l->subs[p].next_ms < next) next = l->subs[p].next_ms;
        }
        if (p == l->nparts) {
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += (long)(next - t) * 1000000L;
            ts.tv_sec += ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&l->scond, &l->slock, &ts);
            continue;
        }
        sb = &l->subs[p];
        from = sb->from;
        token = sb->token;
        gen = sb->gen;
        pthread_mutex_unlock(&l->slock);
        buf_reset(&err);
        s = make_sub(l, p, from, token, &err);
        pthread_mutex_lock(&l->slock);
        if (sb->gen != gen || !sb->want) {
            /* unsubscribed meanwhile (its messages carry the old token: stale) */
            pthread_mutex_unlock(&l->slock);
            drop_sub(s);
            pthread_mutex_lock(&l->slock);
        } else if (s) {
            sb->s = s;
            sb->want = false;
            if (sb->tries)
                log_msg(LOG_INFO, "cluster: partition %u: consumer created after %u tries", p,
                        sb->tries + 1);
        } else {
            sb->tries++;
            __atomic_add_fetch(&l->sub_retries, 1, __ATOMIC_RELAXED);
            wait = SUB_BACKOFF_MS << (sb->tries < 5 ? sb->tries - 1 : 4);
            if (wait > SUB_BACKOFF_MAX_MS) wait = SUB_BACKOFF_MAX_MS;
            sb->next_ms = clock_steady_ms() + wait;
            /* the first failure, then every 16th: the rest are counted */
            if (sb->tries % 16 == 1)
                log_msg(LOG_WARNING, "cluster: partition %u: %s; again in %llu ms (try %u)", p,
                        buf_str(&err), (unsigned long long)wait, sb->tries + 1);
        }
    }
    pthread_mutex_unlock(&l->slock);
    buf_free(&err);
    return NULL;
}

/*
 * The subscription is made by sub_thread: a consumer that cannot be created at once is
 * asked for again while the partition is held, without the caller waiting.
 */
static int
nats_subscribe(struct cluster_log *l, unsigned part, uint64_t from, uint64_t token, struct buf *err)
{
    struct sub *sb = &l->subs[part];

    (void)err;
    pthread_mutex_lock(&l->slock);
    if (!sb->s && !sb->want) {
        sb->want = true;
        sb->from = from;
        sb->token = token;
        sb->gen++;
        sb->tries = 0;
        sb->next_ms = 0;
        pthread_cond_broadcast(&l->scond);
    }
    pthread_mutex_unlock(&l->slock);
    return 0;
}

static void
nats_unsubscribe(struct cluster_log *l, unsigned part)
{
    struct sub *sb = &l->subs[part];
    natsSubscription *s;

    pthread_mutex_lock(&l->slock);
    s = sb->s;
    sb->s = NULL;
    sb->want = false;
    sb->gen++;
    pthread_mutex_unlock(&l->slock);
    drop_sub(s);
}

static uint64_t
nats_subscribe_retries(struct cluster_log *l)
{
    return __atomic_load_n(&l->sub_retries, __ATOMIC_RELAXED);
}

/* A failed compare-and-set, as JetStream words it (error 10071). */
static bool
wrong_sequence(void)
{
    const char *e = nats_GetLastError(NULL);

    return e && (strstr(e, "wrong last sequence") || strstr(e, "10071"));
}

static int
nats_kv_get(struct cluster_log *l, enum cluster_bucket b, const char *key, struct buf *val,
            uint64_t *rev)
{
    kvEntry *e = NULL;
    natsStatus st = kvStore_Get(&e, l->kv[b], key);

    if (st == NATS_NOT_FOUND) return CLUSTER_ABSENT;
    if (st != NATS_OK) {
        set_err(l, "get", st);
        return CLUSTER_ERROR;
    }
    buf_reset(val);
    buf_append(val, kvEntry_Value(e), (size_t)kvEntry_ValueLen(e));
    *rev = kvEntry_Revision(e);
    kvEntry_Destroy(e);
    return CLUSTER_OK;
}

static int
nats_kv_create(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val,
               size_t len, uint64_t *rev)
{
    natsStatus st = kvStore_Create(rev, l->kv[b], key, val, (int)len);

    if (st == NATS_OK) return CLUSTER_OK;
    if (wrong_sequence()) return CLUSTER_CONFLICT;
    set_err(l, "create", st);
    return CLUSTER_ERROR;
}

static int
nats_kv_update(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val,
               size_t len, uint64_t last, uint64_t *rev)
{
    natsStatus st = kvStore_Update(rev, l->kv[b], key, val, (int)len, last);

    if (st == NATS_OK) return CLUSTER_OK;
    if (wrong_sequence()) return CLUSTER_CONFLICT;
    set_err(l, "update", st);
    return CLUSTER_ERROR;
}

static int
nats_kv_put(struct cluster_log *l, enum cluster_bucket b, const char *key, const char *val,
            size_t len)
{
    uint64_t rev;
    natsStatus st = kvStore_Put(&rev, l->kv[b], key, val, (int)len);

    if (st == NATS_OK) return CLUSTER_OK;
    set_err(l, "put", st);
    return CLUSTER_ERROR;
}

static int
nats_kv_delete(struct cluster_log *l, enum cluster_bucket b, const char *key)
{
    natsStatus st = kvStore_Delete(l->kv[b], key);

    if (st == NATS_OK) return CLUSTER_OK;
    set_err(l, "delete", st);
    return CLUSTER_ERROR;
}

/* room left in a message for the headers a KV write carries (expected last sequence) */
#define HEADER_ROOM 1024

static size_t
nats_max_value(struct cluster_log *l)
{
    int64_t max = natsConnection_GetMaxPayload(l->kvnc);

    return max > 2 * HEADER_ROOM ? (size_t)(max - HEADER_ROOM) : HEADER_ROOM;
}

/*
 * The keys come from the bucket's stream information (its subjects, the last value of
 * each), each then read to leave out the deleted ones: no consumer is created.  libnats'
 * kvStore_Keys creates one, an ordered consumer with one replica that nats-server up to
 * 2.11 may place on a server that is down (nats-server#7165): then it waits for the
 * request's whole wait, and the lease thread that lists the members every beat with it.
 */
static int
nats_kv_keys(struct cluster_log *l, enum cluster_bucket b, const char *prefix,
             void (*fn)(void *arg, const char *key), void *arg)
{
    jsStreamInfo *si = NULL;
    jsOptions jo;
    jsErrCode ec = 0;
    natsStatus st;
    kvEntry *e;
    char filter[400], stream[320];
    size_t plen = strlen(prefix), blen = strlen(l->bucket[b]);
    int i;

    snprintf(stream, sizeof(stream), "KV_%s", l->bucket[b]);
    snprintf(filter, sizeof(filter), "$KV.%s.%s>", l->bucket[b],
             plen && prefix[plen - 1] == '.' ? prefix : "");
    jsOptions_Init(&jo);
    jo.Stream.Info.SubjectsFilter = filter;
    st = js_GetStreamInfo(&si, l->kvjs, stream, &jo, &ec);
    if (st != NATS_OK) {
        set_err(l, "keys", st);
        return CLUSTER_ERROR;
    }
    for (i = 0; si->State.Subjects && i < si->State.Subjects->Count; i++) {
        const char *subj = si->State.Subjects->List[i].Subject;
        const char *key = subj + 4 + blen + 1; /* after "$KV.<bucket>." */
        if (strlen(subj) <= 4 + blen + 1 || strncmp(key, prefix, plen) != 0) continue;
        e = NULL;
        st = kvStore_Get(&e, l->kv[b], key);
        if (st == NATS_OK) {
            fn(arg, key);
            kvEntry_Destroy(e);
        } else if (st != NATS_NOT_FOUND) { /* deleted, or expired meanwhile: left out */
            set_err(l, "keys", st);
            jsStreamInfo_Destroy(si);
            return CLUSTER_ERROR;
        }
    }
    jsStreamInfo_Destroy(si);
    return CLUSTER_OK;
}

struct cluster_watch {
    kvWatcher *w;
    cluster_watch_fn fn;
    void *arg;
    pthread_t tid;
};

static void *
watch_thread(void *arg)
{
    struct cluster_watch *w = arg;
    kvEntry *e;
    natsStatus st;

    for (;;) {
        e = NULL;
        st = kvWatcher_Next(&e, w->w, 1000);
        if (st == NATS_TIMEOUT) continue;
        if (st != NATS_OK) break; /* stopped */
        if (!e) {
            w->fn(w->arg, NULL, NULL, 0, 0);
            continue;
        }
        if (kvEntry_Operation(e) == kvOp_Put)
            w->fn(w->arg, kvEntry_Key(e), kvEntry_Value(e) ? kvEntry_Value(e) : "",
                  (size_t)kvEntry_ValueLen(e), kvEntry_Revision(e));
        else
            w->fn(w->arg, kvEntry_Key(e), NULL, 0, kvEntry_Revision(e));
        kvEntry_Destroy(e);
    }
    return NULL;
}

static struct cluster_watch *
nats_kv_watch(struct cluster_log *l, enum cluster_bucket b, const char *prefix, cluster_watch_fn fn,
              void *arg, struct buf *err)
{
    struct cluster_watch *w = xcalloc(1, sizeof(*w));
    char keys[300];
    natsStatus st;
    int tries;

    snprintf(keys, sizeof(keys), "%s>", prefix);
    w->fn = fn;
    w->arg = arg;
    /* as at the stream's creation: a bucket whose replicas have no leader yet
     * (a server of the cluster down or starting) does not answer at once */
    for (tries = 0; (st = kvStore_Watch(&w->w, l->kv[b], keys, NULL)) == NATS_TIMEOUT &&
                    tries < ADMIN_TRIES + PLACE_TRIES / 4;
         tries++)
        log_msg(LOG_WARNING, "cluster: watch %s: no answer yet, again", keys);
    if (st != NATS_OK) {
        buf_printf(err, "cluster: watch %s: %s", keys, natsStatus_GetText(st));
        free(w);
        return NULL;
    }
    if (pthread_create(&w->tid, NULL, watch_thread, w) != 0) {
        buf_printf(err, "cluster: cannot start a thread");
        kvWatcher_Destroy(w->w);
        free(w);
        return NULL;
    }
    return w;
}

static void
nats_kv_unwatch(struct cluster_watch *w)
{
    if (!w) return;
    kvWatcher_Stop(w->w);
    pthread_join(w->tid, NULL);
    kvWatcher_Destroy(w->w);
    free(w);
}

/* ---- the work queue: the stream NAME_alerts (work-queue retention) ---- */

#define WQ_DUPLICATES_S 120  /* the stream's duplicate window */
#define WQ_ACK_WAIT_S   30   /* a job neither acked nor in progress for this long: again */
#define WQ_FETCH_MS     1000 /* a pull waits this long for messages (bounds the stop) */
#define WQ_BATCH        64
#define WQ_RECORD_S     3600   /* how long the record of an alert's delivery stays */
#define CLAIM_RETRY_MS  1000   /* an alert whose record could not be read: again after this */
#define UNDONE_MAX      65536  /* "done" records to write again, at most */
#define UNDONE_MS       600000 /* a "done" record is tried again for this long */
#define MISSING_MS      1000   /* a consumer a reload asked for and not made: again after this */

struct puller {
    struct cluster_queue *q;
    char *cons;    /* as the caller names it */
    char *subject; /* NAME.alerts.<cons, made a token> */
    char *durable;
    natsSubscription *sub;
    unsigned pending; /* jobs not yet acked, freed or given back (under q->lock) */
    time_t logged;    /* the last pull error logged (monotonic seconds) */
    pthread_t tid;
    bool started;
    bool paused; /* under q->lock: its executor is gone (a reload), nothing is pulled */
};

struct cluster_queue {
    struct cluster_log *l;
    jsCtx *js; /* its own acknowledgement handler: the log's counts the ingest's */
    char *stream, *prefix;
    struct puller **p; /* pointers: a reload adds pullers while the others' threads run */
    size_t np, npalloc;
    unsigned max_pending;
    cluster_job_fn fn;
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool closing;
    struct retry *retries;                 /* publishes to send again (under lock) */
    struct cluster_job *acks, **acks_tail; /* acknowledgements to send (under lock) */
    pthread_t rtid;
    bool rstarted;
    kvStore *records;                     /* NAME-delivered: see claim() */
    struct undone *undone, **undone_tail; /* the queue's thread's only */
    /* consumers a reload asked for that have no puller yet: bound by the queue's thread
     * (bind_missing), under lock */
    char **missing;
    size_t nmissing, capmissing;
    uint64_t missing_next_ms, missing_logged_ms; /* the queue's thread's */
    size_t nundone;
    uint64_t published, stored, failed, copies, deferred; /* atomic */
};

/* A "done" record not written: tried again by the queue's thread. */
struct undone {
    struct undone *next;
    char *key;
    uint64_t since_ms;
};

struct cluster_job {
    struct puller *p;
    natsMsg *m;
    char *record; /* its key in q->records; NULL: none (no id, or no record to go by) */
    struct cluster_job *next;
};

/* A consumer's name as a subject token and a durable name: [A-Za-z0-9_-] only. */
static char *
token_of(const char *s)
{
    char *t = xstrdup(s), *c;

    for (c = t; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-'))
            *c = '_';
    return t;
}

static void
wq_on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    struct cluster_queue *q = closure;
    struct retry *r;

    (void)js;
    if (pa && !pae) {
        __atomic_add_fetch(&q->stored, 1, __ATOMIC_RELAXED);
        natsMsg_Destroy(msg);
        return;
    }
    if (!__atomic_load_n(&q->closing, __ATOMIC_ACQUIRE) && tries(msg) < RETRY_MAX) {
        /* sent again under the same id: stored once */
        r = xmalloc(sizeof(*r));
        r->m = msg;
        pthread_mutex_lock(&q->lock);
        r->next = q->retries;
        q->retries = r;
        pthread_mutex_unlock(&q->lock);
        return;
    }
    __atomic_add_fetch(&q->failed, 1, __ATOMIC_RELAXED);
    log_msg(LOG_ERR, "cluster: an alert was not stored in the work queue: lost");
    natsMsg_Destroy(msg);
}

static void job_free(struct cluster_job *j);

/* cluster_nats_fault_lose_done(): which "done" record to lose (0: none), and the count so far */
static unsigned fault_lose_done, done_writes;

void
cluster_nats_fault_lose_done(unsigned nth)
{
    __atomic_store_n(&fault_lose_done, nth, __ATOMIC_RELAXED);
}

static bool
lose_this_done(void)
{
    unsigned nth = __atomic_load_n(&fault_lose_done, __ATOMIC_RELAXED);

    if (!nth || __atomic_add_fetch(&done_writes, 1, __ATOMIC_RELAXED) != nth) return false;
    log_msg(LOG_WARNING, "test hook: a delivery's done record and acknowledgement lost");
    return true;
}

/*
 * The end of a job: its record says "done" first, so that a copy, or the job
 * itself delivered again because this acknowledgement was lost on the way,
 * is not delivered again (claim).  While closing, disconnected, no record:
 * the stop does not wait on the servers.
 */
static void
send_ack(struct cluster_queue *q, struct cluster_job *j, bool closing)
{
    uint64_t rev;
    natsStatus st;
    bool lost = j->record && lose_this_done();

    if (j->record &&
        !(closing && natsConnection_Status(q->l->kvnc) != NATS_CONN_STATUS_CONNECTED) &&
        (st = lost ? NATS_TIMEOUT : kvStore_Put(&rev, q->records, j->record, "done", 4)) !=
            NATS_OK) {
        set_err(q->l, "delivery record", st);
        /*
         * The acknowledgement below may be lost the same way (the server this
         * node talks to died): the record is written again until it holds,
         * before the ack wait brings the alert back.
         */
        if (!closing && q->nundone < UNDONE_MAX) {
            struct undone *u = xmalloc(sizeof(*u));
            u->next = NULL;
            u->key = j->record;
            u->since_ms = clock_steady_ms();
            j->record = NULL;
            *q->undone_tail = u;
            q->undone_tail = &u->next;
            q->nundone++;
        }
    }
    if (!lost && (st = natsMsg_Ack(j->m, NULL)) != NATS_OK) set_err(q->l, "ack", st);
    job_free(j);
}

/* The "done" records not written yet, oldest first, until the servers do not answer. */
static void
write_undone(struct cluster_queue *q)
{
    struct undone *u;
    uint64_t rev;

    while ((u = q->undone)) {
        uint64_t late = clock_steady_ms() - u->since_ms;
        if (kvStore_Put(&rev, q->records, u->key, "done", 4) == NATS_OK)
            log_msg(LOG_INFO, "cluster: a delivery's done record written %llu ms late",
                    (unsigned long long)late);
        else if (late < UNDONE_MS)
            return;
        else
            log_msg(LOG_WARNING,
                    "cluster: a delivery's done record not written in %d minutes: given up (its "
                    "alert is delivered again if the servers did not get the acknowledgement)",
                    UNDONE_MS / 60000);
        q->undone = u->next;
        if (!q->undone) q->undone_tail = &q->undone;
        q->nundone--;
        free(u->key);
        free(u);
    }
}

/* The acknowledgements queued so far (under q->lock), taken. */
static struct cluster_job *
take_acks(struct cluster_queue *q)
{
    struct cluster_job *list = q->acks;

    q->acks = NULL;
    q->acks_tail = &q->acks;
    return list;
}

static void
send_acks(struct cluster_queue *q, struct cluster_job *list, bool closing)
{
    struct cluster_job *j;

    while ((j = list)) {
        list = j->next;
        send_ack(q, j, closing);
    }
}

/* The queue's thread: acknowledgements as they come, publishes to send again every RETRY_MS. */
static void bind_missing(struct cluster_queue *q);

static void *
wq_retry_thread(void *arg)
{
    struct cluster_queue *q = arg;
    struct retry *list, *r, *keep;
    struct cluster_job *acks;
    struct timespec next;
    char b[16];
    jsPubOptions po;

    jsPubOptions_Init(&po);
    po.MaxWait = ACK_WAIT;
    pthread_mutex_lock(&q->lock);
    while (!q->closing) {
        clock_gettime(CLOCK_REALTIME, &next);
        next.tv_nsec += RETRY_MS * 1000000L;
        next.tv_sec += next.tv_nsec / 1000000000L;
        next.tv_nsec %= 1000000000L;
        /* until then, acknowledgements as they come (they wake the thread) */
        for (;;) {
            if ((acks = take_acks(q))) {
                pthread_mutex_unlock(&q->lock);
                send_acks(q, acks, false);
                pthread_mutex_lock(&q->lock);
                continue;
            }
            if (q->closing || pthread_cond_timedwait(&q->cond, &q->lock, &next) == ETIMEDOUT) break;
        }
        if (q->closing) break;
        list = q->retries;
        q->retries = NULL;
        pthread_mutex_unlock(&q->lock);
        write_undone(q);
        bind_missing(q);
        keep = NULL;
        while ((r = list)) {
            list = r->next;
            snprintf(b, sizeof(b), "%d", tries(r->m) + 1);
            natsMsgHeader_Set(r->m, HDR_TRY, b);
            if (js_PublishMsgAsync(q->js, &r->m, &po) == NATS_OK) {
                free(r);
            } else if (tries(r->m) >= RETRY_MAX) {
                __atomic_add_fetch(&q->failed, 1, __ATOMIC_RELAXED);
                log_msg(LOG_ERR, "cluster: an alert was not stored in the work queue: lost");
                natsMsg_Destroy(r->m);
                free(r);
            } else {
                r->next = keep;
                keep = r;
            }
        }
        pthread_mutex_lock(&q->lock);
        while ((r = keep)) {
            keep = r->next;
            r->next = q->retries;
            q->retries = r;
        }
    }
    acks = take_acks(q);
    pthread_mutex_unlock(&q->lock);
    send_acks(q, acks, true);
    return NULL;
}

/* id as a key of q->records: what a KV key may not hold as =XX. */
static char *
record_key(const char *id)
{
    char *k = xmalloc(strlen(id) * 3 + 1), *o = k;

    for (; *id; id++) {
        unsigned char c = (unsigned char)*id;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '/')
            *o++ = (char)c;
        else
            o += sprintf(o, "=%02X", c);
    }
    *o = '\0';
    return k;
}

/*
 * Whether j is the copy of its alert to deliver.  JetStream drops a second
 * publish of an id only while the stream's leader remembers the first: a
 * restarted server remembers the ids of the messages it still holds, and an
 * acknowledged alert has left the work queue; a reset stream forgets them
 * all.  A new owner's replay then stores a second copy.  So the node that
 * pulls an alert first writes, under its id in NAME-delivered, the stream
 * sequence of the copy it holds (create: the first node to do so wins),
 * and "done" once it is acknowledged.  A copy whose id holds "done" or
 * another copy's sequence is not delivered; the same copy delivered again
 * (its node died, or gave it back) is.  Without an answer from the bucket
 * (servers just restarted, a leader being elected) nothing can be said: the
 * copy goes back to the queue for a while, and stays there until a node
 * can say.  An alert without an id is delivered.
 */
enum claim { CLAIM_DELIVER, CLAIM_COPY, CLAIM_UNKNOWN };

static enum claim
claim(struct cluster_queue *q, struct cluster_job *j)
{
    const char *id = header(j->m, "Nats-Msg-Id");
    jsMsgMetaData *meta = NULL;
    kvEntry *e = NULL;
    char seq[32];
    uint64_t rev;
    natsStatus st;
    bool mine;

    if (!id || !*id) return CLAIM_DELIVER;
    if (natsMsg_GetMetaData(&meta, j->m) != NATS_OK) return CLAIM_UNKNOWN;
    snprintf(seq, sizeof(seq), "%llu", (unsigned long long)meta->Sequence.Stream);
    jsMsgMetaData_Destroy(meta);
    j->record = record_key(id);
    st = kvStore_Create(&rev, q->records, j->record, seq, (int)strlen(seq));
    if (st == NATS_OK) return CLAIM_DELIVER;
    if (!wrong_sequence() || (st = kvStore_Get(&e, q->records, j->record)) != NATS_OK) {
        set_err(q->l, "delivery record", st);
        return CLAIM_UNKNOWN;
    }
    mine = (size_t)kvEntry_ValueLen(e) == strlen(seq) &&
           memcmp(kvEntry_Value(e), seq, strlen(seq)) == 0;
    kvEntry_Destroy(e);
    return mine ? CLAIM_DELIVER : CLAIM_COPY;
}

/* A warning about p's alerts, at most once a minute. */
static void
log_sometimes(struct puller *p, const char *what, const char *detail)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - p->logged < 60) return;
    p->logged = now.tv_sec;
    log_msg(LOG_WARNING, "cluster: %s: %s (%s)", p->subject, what, detail);
}

static void *
pull_thread(void *arg)
{
    struct puller *p = arg;
    struct cluster_queue *q = p->q;
    natsMsgList list;
    natsStatus st;
    jsErrCode ec;
    int i, batch;
    bool unanswered, paused = false;

    for (;;) {
        pthread_mutex_lock(&q->lock);
        if (p->paused != paused) {
            /* said once no fetch of its is outstanding: what comes after goes to other nodes */
            paused = p->paused;
            log_msg(LOG_INFO, "cluster: %s %s", p->subject,
                    paused ? "no longer pulled (its executor is gone)" : "pulled again");
        }
        while (!q->closing && (p->paused || p->pending >= q->max_pending))
            pthread_cond_wait(&q->cond, &q->lock);
        if (p->paused != paused) {
            pthread_mutex_unlock(&q->lock);
            continue;
        }
        batch = (int)(q->max_pending - p->pending);
        if (batch > WQ_BATCH) batch = WQ_BATCH;
        if (q->closing) {
            pthread_mutex_unlock(&q->lock);
            break;
        }
        pthread_mutex_unlock(&q->lock);
        memset(&list, 0, sizeof(list));
        ec = 0;
        st = natsSubscription_Fetch(&list, p->sub, batch, WQ_FETCH_MS, &ec);
        if (st == NATS_TIMEOUT) continue;
        if (st != NATS_OK) {
            /* disconnected, or the stream without a leader for now: logged once a minute */
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - p->logged >= 60) {
                p->logged = now.tv_sec;
                log_msg(LOG_WARNING, "cluster: pulling %s: %s (JetStream error %d), again",
                        p->subject, natsStatus_GetText(st), (int)ec);
            }
            if (!__atomic_load_n(&q->closing, __ATOMIC_ACQUIRE)) nats_Sleep(PLACE_WAIT_MS);
            continue;
        }
        unanswered = false;
        if (__atomic_load_n(&p->paused, __ATOMIC_ACQUIRE)) {
            /* fetched as the executor went: back to the queue at once, for the nodes that have it
             */
            for (i = 0; i < list.Count; i++) natsMsg_Nak(list.Msgs[i], NULL);
            natsMsgList_Destroy(&list);
            continue;
        }
        for (i = 0; i < list.Count; i++) {
            struct cluster_job *j = xcalloc(1, sizeof(*j));
            j->p = p;
            j->m = list.Msgs[i];
            list.Msgs[i] = NULL;
            /* after one unanswered record, the rest of the batch waits too */
            enum claim c = unanswered ? CLAIM_UNKNOWN : claim(q, j);
            unanswered = c == CLAIM_UNKNOWN;
            if (c == CLAIM_COPY) {
                /* out of the queue, unseen */
                log_msg(LOG_INFO, "cluster: a copy of alert %s in the work queue: not delivered",
                        header(j->m, "Nats-Msg-Id"));
                __atomic_add_fetch(&q->copies, 1, __ATOMIC_RELAXED);
                natsMsg_Ack(j->m, NULL);
            } else if (c == CLAIM_UNKNOWN) {
                __atomic_add_fetch(&q->deferred, 1, __ATOMIC_RELAXED);
                log_sometimes(p, "delivery records unanswered, the alerts wait in the queue",
                              last_err);
                natsMsg_NakWithDelay(j->m, CLAIM_RETRY_MS, NULL);
            }
            if (c != CLAIM_DELIVER) {
                natsMsg_Destroy(j->m);
                free(j->record);
                free(j);
                continue;
            }
            pthread_mutex_lock(&q->lock);
            p->pending++;
            pthread_mutex_unlock(&q->lock);
            q->fn(q->arg, j, p->cons, header(j->m, "Nats-Msg-Id"), natsMsg_GetData(j->m),
                  (size_t)natsMsg_GetDataLength(j->m));
        }
        natsMsgList_Destroy(&list);
    }
    return NULL;
}

static void nats_wq_close(struct cluster_queue *q);

/* NAME-delivered: the records of claim(), each kept WQ_RECORD_S after its last write. */
static bool
open_records(struct cluster_queue *q, size_t nlen, const char *name, struct buf *err)
{
    char bucket[300];

    snprintf(bucket, sizeof(bucket), "%.*s-delivered", (int)nlen, name);
    return open_bucket(q->l, bucket, (int64_t)WQ_RECORD_S * 1000000000LL, &q->records, err);
}

static void
free_puller(struct puller *p)
{
    /* not unsubscribed: the consumer is the cluster's, it stays */
    natsSubscription_Destroy(p->sub);
    free(p->cons);
    free(p->subject);
    free(p->durable);
    free(p);
}

static bool start_puller(struct cluster_queue *q, struct puller *p, struct buf *err);

/*
 * A puller for consumer cons, added to q's once it pulls; NULL with err
 * set (then nothing of it is left: a later call tries again).
 */
static struct puller *
add_puller(struct cluster_queue *q, const char *cons, struct buf *err)
{
    struct puller *p = xcalloc(1, sizeof(*p));
    char *tok = token_of(cons);

    p->q = q;
    p->cons = xstrdup(cons);
    p->subject = xmalloc(strlen(q->prefix) + strlen(tok) + 1);
    sprintf(p->subject, "%s%s", q->prefix, tok);
    p->durable = tok;
    if (!start_puller(q, p, err)) {
        free_puller(p);
        return NULL;
    }
    pthread_mutex_lock(&q->lock);
    q->p = xgrow(q->p, &q->npalloc, q->np + 1, sizeof(*q->p));
    q->p[q->np++] = p;
    pthread_mutex_unlock(&q->lock);
    return p;
}

/*
 * p's durable consumer, shared by every node, created here (not by the
 * subscription, which would delete it when it goes), its pull
 * subscription, and its thread.  false with err set.
 */
static bool
start_puller(struct cluster_queue *q, struct puller *p, struct buf *err)
{
    jsConsumerConfig cc;
    jsConsumerInfo *ci = NULL;
    jsSubOptions so;
    jsOptions admin;
    jsErrCode ec = 0;
    natsStatus st;

    jsOptions_Init(&admin);
    admin.Wait = 5000;
    jsConsumerConfig_Init(&cc);
    cc.Durable = p->durable;
    cc.FilterSubject = p->subject;
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = (int64_t)WQ_ACK_WAIT_S * 1000000000LL;
    cc.MaxAckPending = (int64_t)q->max_pending * 16;
    st = js_AddConsumer(&ci, q->js, q->stream, &cc, &admin, &ec);
    jsConsumerInfo_Destroy(ci);
    if (st != NATS_OK && ec != 10013 /* exists, other settings */ && ec != 10148 /* exists */) {
        const char *why = nats_GetLastError(NULL);
        buf_printf(err, "cluster: consumer %s of %s: %s (JetStream error %d)", p->durable,
                   q->stream, why && *why ? why : natsStatus_GetText(st), (int)ec);
        return false;
    }
    jsSubOptions_Init(&so);
    so.Stream = q->stream;
    so.Consumer = p->durable;
    ec = 0;
    if ((st = js_PullSubscribe(&p->sub, q->js, p->subject, p->durable, NULL, &so, &ec)) !=
        NATS_OK) {
        buf_printf(err, "cluster: pulling %s: %s (JetStream error %d)", p->subject,
                   nats_GetLastError(NULL), (int)ec);
        return false;
    }
    if (pthread_create(&p->tid, NULL, pull_thread, p) != 0) {
        buf_printf(err, "cluster: cannot start a thread");
        return false;
    }
    p->started = true;
    return true;
}

/* The index of cons in q->missing, or nmissing (under lock). */
static size_t
find_missing(const struct cluster_queue *q, const char *cons)
{
    size_t i;

    for (i = 0; i < q->nmissing && strcmp(q->missing[i], cons); i++) continue;
    return i;
}

static void
drop_missing(struct cluster_queue *q, size_t i)
{
    free(q->missing[i]);
    q->missing[i] = q->missing[--q->nmissing];
}

/*
 * On the queue's thread: a puller for each consumer a reload asked for
 * that has none yet, tried every MISSING_MS while the servers cannot make
 * it (a round trip each, on this thread rather than the loop).
 */
static void
bind_missing(struct cluster_queue *q)
{
    struct buf err = BUF_INIT;
    struct puller *p;
    char **names;
    size_t n, i, k;
    uint64_t now = clock_steady_ms();

    pthread_mutex_lock(&q->lock);
    n = q->nmissing;
    if (!n || now < q->missing_next_ms) {
        pthread_mutex_unlock(&q->lock);
        return;
    }
    names = xcalloc(n, sizeof(*names));
    for (i = 0; i < n; i++) names[i] = xstrdup(q->missing[i]);
    pthread_mutex_unlock(&q->lock);
    for (i = 0; i < n; i++) {
        buf_reset(&err);
        if (!(p = add_puller(q, names[i], &err))) {
            if (!q->missing_logged_ms || now - q->missing_logged_ms >= 30000) {
                q->missing_logged_ms = now;
                log_msg(LOG_WARNING, "cluster: pulling %s%s: its consumer cannot be made yet: %s",
                        q->prefix, names[i], buf_str(&err));
            }
            q->missing_next_ms = now + MISSING_MS;
            continue;
        }
        log_msg(LOG_INFO, "cluster: pulling %s%s (an executor a reload added)", q->prefix,
                names[i]);
        pthread_mutex_lock(&q->lock);
        /* a reload since that removed it again: its puller waits */
        if ((k = find_missing(q, names[i])) < q->nmissing)
            drop_missing(q, k);
        else
            __atomic_store_n(&p->paused, true, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&q->lock);
    }
    for (i = 0; i < n; i++) free(names[i]);
    free(names);
    buf_free(&err);
}

/* Loop thread: the pullers not named wait; the names without one are bound by the queue's thread.
 */
static void
nats_wq_pull(struct cluster_queue *q, const char *const *cons, size_t ncons)
{
    size_t i, k;
    bool named;

    pthread_mutex_lock(&q->lock);
    for (i = 0; i < q->np; i++) {
        for (named = false, k = 0; k < ncons && !named; k++)
            named = !strcmp(q->p[i]->cons, cons[k]);
        __atomic_store_n(&q->p[i]->paused, !named, __ATOMIC_RELEASE);
    }
    while (q->nmissing) drop_missing(q, 0);
    for (k = 0; k < ncons; k++) {
        for (named = false, i = 0; i < q->np && !named; i++)
            named = !strcmp(q->p[i]->cons, cons[k]);
        if (named || find_missing(q, cons[k]) < q->nmissing) continue;
        q->missing = xgrow(q->missing, &q->capmissing, q->nmissing + 1, sizeof(*q->missing));
        q->missing[q->nmissing++] = xstrdup(cons[k]);
    }
    q->missing_next_ms = 0;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

static struct cluster_queue *
nats_wq_open(struct cluster_log *l, const char *const *cons, size_t ncons, unsigned pending,
             cluster_job_fn fn, void *arg, struct buf *err)
{
    struct cluster_queue *q = xcalloc(1, sizeof(*q));
    jsOptions jo, admin;
    jsStreamConfig sc;
    jsErrCode ec = 0;
    natsStatus st;
    const char *subjects[1];
    char subj[300];
    size_t i;
    int tries;
    const char *name = l->prefix; /* NAME.in. */
    size_t nlen = strlen(name) - 4;

    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    q->acks_tail = &q->acks;
    q->undone_tail = &q->undone;
    q->l = l;
    q->fn = fn;
    q->arg = arg;
    q->max_pending = pending ? pending : 1;
    jsOptions_Init(&jo);
    jo.Wait = 2000;
    jo.PublishAsync.AckHandler = wq_on_ack;
    jo.PublishAsync.AckHandlerClosure = q;
    jo.PublishAsync.StallWait = 100;
    if ((st = natsConnection_JetStream(&q->js, l->nc, &jo)) != NATS_OK) {
        buf_printf(err, "cluster: JetStream: %s", natsStatus_GetText(st));
        goto fail;
    }
    q->stream = xmalloc(nlen + 8);
    snprintf(q->stream, nlen + 8, "%.*s_alerts", (int)nlen, name);
    q->prefix = xmalloc(nlen + 9);
    snprintf(q->prefix, nlen + 9, "%.*s.alerts.", (int)nlen, name);
    snprintf(subj, sizeof(subj), "%s*", q->prefix);
    subjects[0] = subj;
    jsOptions_Init(&admin);
    admin.Wait = 5000;
    jsStreamConfig_Init(&sc);
    sc.Name = q->stream;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Retention = js_WorkQueuePolicy;
    sc.Duplicates = (int64_t)WQ_DUPLICATES_S * 1000000000LL;
    sc.Replicas = l->replicas;
    for (tries = 0; tries < ADMIN_TRIES + PLACE_TRIES; tries++) {
        ec = 0;
        st = js_AddStream(NULL, q->js, &sc, &admin, &ec);
        if (st == NATS_TIMEOUT && tries < ADMIN_TRIES)
            log_msg(LOG_WARNING, "cluster: creating stream %s: no answer yet, again", q->stream);
        else if ((ec == JS_NO_PEERS || ec == JS_NOT_AVAILABLE) && st != NATS_OK)
            nats_Sleep(PLACE_WAIT_MS);
        else
            break;
    }
    if (st != NATS_OK) {
        const char *why = nats_GetLastError(NULL);
        buf_printf(err, "cluster: stream %s (%s): %s (JetStream error %d)", q->stream, subj,
                   why && *why ? why : natsStatus_GetText(st), (int)ec);
        goto fail;
    }
    if (!open_records(q, nlen, name, err)) goto fail;
    for (i = 0; i < ncons; i++)
        if (!add_puller(q, cons[i], err)) goto fail;
    if (pthread_create(&q->rtid, NULL, wq_retry_thread, q) != 0) {
        buf_printf(err, "cluster: cannot start a thread");
        goto fail;
    }
    q->rstarted = true;
    return q;
fail:
    nats_wq_close(q);
    return NULL;
}

static void
nats_wq_close(struct cluster_queue *q)
{
    size_t i;
    struct retry *r;
    struct undone *u;
    jsPubOptions po;

    if (!q) return;
    pthread_mutex_lock(&q->lock);
    __atomic_store_n(&q->closing, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    if (q->rstarted) pthread_join(q->rtid, NULL);
    for (i = 0; i < q->np; i++)
        if (q->p[i]->started) pthread_join(q->p[i]->tid, NULL);
    send_acks(q, take_acks(q), true); /* none, unless the thread never ran */
    if (q->js) {
        /* what is in flight gets its acknowledgement (a second at most) */
        jsPubOptions_Init(&po);
        po.MaxWait = 1000;
        if (js_PublishAsyncComplete(q->js, &po) == NATS_TIMEOUT)
            __atomic_add_fetch(&q->failed, take_pending(q->js), __ATOMIC_RELAXED);
    }
    while ((r = q->retries)) {
        q->retries = r->next;
        __atomic_add_fetch(&q->failed, 1, __ATOMIC_RELAXED);
        natsMsg_Destroy(r->m);
        free(r);
    }
    for (i = 0; i < q->np; i++) free_puller(q->p[i]);
    while (q->nmissing) drop_missing(q, 0);
    free(q->missing);
    free(q->p);
    while ((u = q->undone)) {
        q->undone = u->next;
        free(u->key);
        free(u);
    }
    kvStore_Destroy(q->records);
    jsCtx_Destroy(q->js);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->cond);
    free(q->stream);
    free(q->prefix);
    free(q);
}

static bool
nats_wq_publish(struct cluster_queue *q, const char *cons, const char *id, const char *data,
                size_t len)
{
    char *tok = token_of(cons);
    char subj[600];
    natsMsg *m = NULL;
    natsStatus st;
    jsPubOptions po;

    snprintf(subj, sizeof(subj), "%s%s", q->prefix, tok);
    free(tok);
    st = natsMsg_Create(&m, subj, NULL, data, (int)len);
    jsPubOptions_Init(&po);
    po.MaxWait = ACK_WAIT;
    po.MsgId = id; /* JetStream drops a second publish of it within the duplicate window */
    if (st == NATS_OK) st = js_PublishMsgAsync(q->js, &m, &po);
    natsMsg_Destroy(m);
    if (st != NATS_OK) {
        set_err(q->l, "publish", st);
        return false;
    }
    __atomic_add_fetch(&q->published, 1, __ATOMIC_RELAXED);
    return true;
}

/* j is done with here: its consumer may pull one more. */
static void
job_free(struct cluster_job *j)
{
    struct cluster_queue *q = j->p->q;

    pthread_mutex_lock(&q->lock);
    j->p->pending--;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    natsMsg_Destroy(j->m);
    free(j->record);
    free(j);
}

/* Sent by the queue's thread: the record is a round trip, not for the caller's loop. */
static void
nats_wq_ack(struct cluster_job *j)
{
    struct cluster_queue *q = j->p->q;

    pthread_mutex_lock(&q->lock);
    j->next = NULL;
    *q->acks_tail = j;
    q->acks_tail = &j->next;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

static void
nats_wq_progress(struct cluster_job *j)
{
    natsMsg_InProgress(j->m, NULL);
}

static void
nats_wq_nak(struct cluster_job *j, unsigned delay_ms)
{
    natsMsg_NakWithDelay(j->m, (int64_t)delay_ms, NULL);
    job_free(j);
}

static void
nats_wq_stats(struct cluster_queue *q, struct cluster_wq_stats *st)
{
    st->published = __atomic_load_n(&q->published, __ATOMIC_RELAXED);
    st->stored = __atomic_load_n(&q->stored, __ATOMIC_RELAXED);
    st->failed = __atomic_load_n(&q->failed, __ATOMIC_RELAXED);
    st->copies = __atomic_load_n(&q->copies, __ATOMIC_RELAXED);
    st->deferred = __atomic_load_n(&q->deferred, __ATOMIC_RELAXED);
}

static const char *
nats_error(struct cluster_log *l)
{
    (void)l;
    return last_err;
}

const struct cluster_backend cluster_nats = {
    .name = "nats",
    .open = nats_open,
    .close = nats_close,
    .publish = nats_publish,
    .subscribe = nats_subscribe,
    .unsubscribe = nats_unsubscribe,
    .subscribe_retries = nats_subscribe_retries,
    .kv_get = nats_kv_get,
    .kv_create = nats_kv_create,
    .kv_update = nats_kv_update,
    .kv_put = nats_kv_put,
    .kv_delete = nats_kv_delete,
    .max_value = nats_max_value,
    .kv_keys = nats_kv_keys,
    .kv_watch = nats_kv_watch,
    .kv_unwatch = nats_kv_unwatch,
    .wq_open = nats_wq_open,
    .wq_pull = nats_wq_pull,
    .wq_close = nats_wq_close,
    .wq_publish = nats_wq_publish,
    .wq_ack = nats_wq_ack,
    .wq_progress = nats_wq_progress,
    .wq_nak = nats_wq_nak,
    .wq_free = job_free,
    .wq_stats = nats_wq_stats,
    .error = nats_error,
};
