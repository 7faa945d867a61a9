/*
 * in_snmptrap: SNMP traps and informs in, on net-snmp (see in_snmptrap.h).
 *
 * net-snmp's own session code receives: the socket is its transport's
 * (netsnmp_tdomain_transport), watched with a uv_poll, and each readable
 * event has snmp_sess_read2() read one datagram, decode the BER, check and
 * decrypt v3 (USM), answer engine ID discovery with its reports, and call
 * back with the PDU.  Decoding and USM are net-snmp's, as in snmptrapd,
 * rather than a second implementation here; the loop never blocks, as the
 * socket is non-blocking and one datagram is read per event.
 *
 * Before decoding, the pre-parse hook applies the per-source rate limit, so
 * that a flood costs a table lookup per datagram.  What is refused is
 * counted per reason: net-snmp counts decoding and USM failures in its
 * statistics (snmp_get_statistic), read around each read; communities,
 * PDU types and the rate are checked here.
 *
 * An inform is answered (a Response with its request ID and varbinds) once
 * its message has been submitted.  While the queue to corrald's worker
 * threads is full the input is held (input_hold): the poll stops and
 * datagrams wait in the socket's receive buffer, as a UDP input's do.
 */
#include "agent/input/in_snmptrap.h"
#include "agent/conf/snmptrap_conf.h"
#include "agent/conf/conf.h"
#include "agent/input/in_common.h"
#include "agent/input/snmptrap_fmt.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <net-snmp/library/keytools.h>
#include <net-snmp/library/large_fd_set.h>
#include <net-snmp/library/lcd_time.h>
#include <net-snmp/library/scapi.h>
#include <net-snmp/library/snmpusm.h>
#include <net-snmp/library/snmpv3.h>

static const char *const drop_names[SNMPTRAP_DROP_N] = {
    "bad_ber",           "bad_version",  "bad_community",    "unknown_user",
    "unknown_engine_id", "wrong_digest", "decryption",       "time_window",
    "security_level",    "invalid",      "not_notification", "rate_limit"};

const char *
snmptrap_drop_name(int reason)
{
    return reason >= 0 && reason < SNMPTRAP_DROP_N ? drop_names[reason] : "?";
}

/* net-snmp's statistic behind each reason it counts (-1: counted here) */
static const int drop_stat[SNMPTRAP_DROP_N] = {STAT_SNMPINASNPARSEERRS,
                                               STAT_SNMPINBADVERSIONS,
                                               -1,
                                               STAT_USMSTATSUNKNOWNUSERNAMES,
                                               STAT_USMSTATSUNKNOWNENGINEIDS,
                                               STAT_USMSTATSWRONGDIGESTS,
                                               STAT_USMSTATSDECRYPTIONERRORS,
                                               STAT_USMSTATSNOTINTIMEWINDOWS,
                                               STAT_USMSTATSUNSUPPORTEDSECLEVELS,
                                               STAT_SNMPINVALIDMSGS,
                                               -1,
                                               -1};

/* ---- per-source rate ---- */

/*
 * A token bucket per source address in a fixed table: a source that finds
 * no room takes the slot of the least recently seen one in its probe
 * window, so the table's memory is fixed whatever the number of sources.
 */
#define RATE_SLOTS 4096
#define RATE_PROBE 8

struct rate_slot {
    struct in6_addr addr;
    double tokens;
    uint64_t last_ms;
    bool used;
};

/* ---- the input ---- */

struct hostmap_entry {
    char *addr, *name;
};

struct trap_input {
    struct input base;
    void *sess;
    netsnmp_transport *transport; /* owned by the session */
    uv_poll_t poll;
    struct snmptrap_conf *sc;
    struct hostmap_entry *map;
    size_t nmap;
    struct rate_slot *rates;
    struct usmUser **users; /* added to net-snmp's list, removed at close */
    size_t nusers;
    struct buf line;
    uint64_t last_log;
    bool polling;
};

static int
rate_allowed(struct trap_input *t, const struct sockaddr *sa)
{
    struct in6_addr a;
    uint64_t now = uv_now(t->base.loop);
    size_t h = 0, i, victim = 0;
    struct rate_slot *s;

    if (t->sc->rate <= 0) return 1;
    memset(&a, 0, sizeof(a));
    if (sa->sa_family == AF_INET)
        memcpy(&a.s6_addr[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
    else if (sa->sa_family == AF_INET6)
        a = ((const struct sockaddr_in6 *)sa)->sin6_addr;
    for (i = 0; i < 16; i++) h = h * 31 + a.s6_addr[i];
    for (i = 0; i < RATE_PROBE; i++) {
        s = &t->rates[(h + i) % RATE_SLOTS];
        if (s->used && memcmp(&s->addr, &a, sizeof(a)) == 0) break;
        if (!s->used || s->last_ms < t->rates[(h + victim) % RATE_SLOTS].last_ms) victim = i;
    }
    if (i == RATE_PROBE) {
        s = &t->rates[(h + victim) % RATE_SLOTS];
        s->used = true;
        s->addr = a;
        s->tokens = t->sc->burst;
        s->last_ms = now;
    }
    s->tokens += (double)(now - s->last_ms) * t->sc->rate / 1000.0;
    if (s->tokens > t->sc->burst) s->tokens = t->sc->burst;
    s->last_ms = now;
    if (s->tokens < 1) return 0;
    s->tokens -= 1;
    return 1;
}

static int
pre_parse(netsnmp_session *session, netsnmp_transport *transport, void *opaque, int olength)
{
    struct trap_input *t = session->callback_magic;

    (void)transport;
    if (!opaque || olength < (int)sizeof(struct sockaddr_in)) return 1;
    if (!rate_allowed(t, (const struct sockaddr *)opaque)) {
        t->base.stats.snmp_dropped[SNMPTRAP_DROP_RATE]++;
        return 0;
    }
    return 1;
}

static int
cmp_map(const void *a, const void *b)
{
    return strcmp(((const struct hostmap_entry *)a)->addr, ((const struct hostmap_entry *)b)->addr);
}

static const char *
host_of(struct trap_input *t, const char *addr)
{
    struct hostmap_entry key = {(char *)addr, NULL}, *e;
    if (!t->nmap) return addr;
    e = bsearch(&key, t->map, t->nmap, sizeof(*t->map), cmp_map);
    return e ? e->name : addr;
}

static int
load_host_map(struct trap_input *t, const char *path, struct buf *err)
{
    FILE *f = fopen(path, "re");
    char line[1024];
    size_t cap = 0;
    int lineno = 0;

    if (!f) {
        buf_printf(err, "host-map %s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *a, *n, *save = NULL;
        lineno++;
        if ((a = strchr(line, '#'))) *a = '\0';
        a = strtok_r(line, " \t\r\n", &save);
        n = a ? strtok_r(NULL, " \t\r\n", &save) : NULL;
        if (!a) continue;
        if (!n) {
            buf_printf(err, "%s:%d: expected \"ADDRESS NAME\"", path, lineno);
            fclose(f);
            return -1;
        }
        t->map = xgrow(t->map, &cap, t->nmap + 1, sizeof(*t->map));
        t->map[t->nmap].addr = xstrdup(a);
        t->map[t->nmap].name = xstrdup(n);
        t->nmap++;
    }
    fclose(f);
    qsort(t->map, t->nmap, sizeof(*t->map), cmp_map);
    return 0;
}

static bool
community_ok(const struct trap_input *t, const netsnmp_pdu *pdu)
{
    size_t i, n;
    for (i = 0; i < t->sc->ncommunities; i++) {
        n = strlen(t->sc->communities[i]);
        if (pdu->community_len == n && pdu->community &&
            memcmp(pdu->community, t->sc->communities[i], n) == 0)
            return true;
    }
    return false;
}

static int
on_pdu(int op, netsnmp_session *session, int reqid, netsnmp_pdu *pdu, void *magic)
{
    struct trap_input *t = magic;
    char source[INET6_ADDRSTRLEN] = "", agent[INET_ADDRSTRLEN];
    struct snmptrap_origin o;
    bool whole;

    (void)session;
    (void)reqid;
    if (op != NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE) return 1;
    if (pdu->command != SNMP_MSG_TRAP && pdu->command != SNMP_MSG_TRAP2 &&
        pdu->command != SNMP_MSG_INFORM) {
        t->base.stats.snmp_dropped[SNMPTRAP_DROP_NOT_NOTIFICATION]++;
        return 1;
    }
    if (pdu->version != SNMP_VERSION_3 && !community_ok(t, pdu)) {
        t->base.stats.snmp_dropped[SNMPTRAP_DROP_BAD_COMMUNITY]++;
        if (input_log_allowed(&t->last_log, uv_now(t->base.loop), 10000))
            log_msg(LOG_WARNING, "%s: a trap with a wrong community, dropped (counted)",
                    t->base.conf.name);
        return 1;
    }
    if (pdu->transport_data && pdu->transport_data_length >= (int)sizeof(struct sockaddr_in))
        input_peer_name((const struct sockaddr *)pdu->transport_data, source, sizeof(source));
    o.source = source[0] ? source : NULL;
    o.host = o.source ? o.source : "-";
    /* a v1 agent that leaves agent-addr 0.0.0.0 (it does not know its address) does not say
     * which device it is: its UDP source does, and keeps it apart from every other such */
    if (pdu->command == SNMP_MSG_TRAP && pdu->version == SNMP_VERSION_1 &&
        (pdu->agent_addr[0] | pdu->agent_addr[1] | pdu->agent_addr[2] | pdu->agent_addr[3])) {
        snprintf(agent, sizeof(agent), "%u.%u.%u.%u", pdu->agent_addr[0], pdu->agent_addr[1],
                 pdu->agent_addr[2], pdu->agent_addr[3]);
        o.host = agent;
    }
    o.host = host_of(t, o.host);
    o.pri = t->sc->pri;
    buf_reset(&t->line);
    whole = snmptrap_fmt_line(&t->line, pdu, &o);
    input_deliver(&t->base, t->line.p, t->line.len, !whole, o.source);

    if (pdu->command == SNMP_MSG_INFORM) {
        netsnmp_pdu *reply = snmp_clone_pdu(pdu);
        if (reply) {
            reply->command = SNMP_MSG_RESPONSE;
            reply->errstat = 0;
            reply->errindex = 0;
            if (snmp_sess_send(t->sess, reply) == 0)
                snmp_free_pdu(reply);
            else
                t->base.stats.snmp_informs++;
        }
    }
    return 1;
}

static void
on_readable(uv_poll_t *p, int status, int events)
{
    struct trap_input *t = p->data;
    netsnmp_large_fd_set fds;
    unsigned before[SNMPTRAP_DROP_N];
    int i;

    (void)events;
    if (status < 0) {
        t->base.stats.errors++;
        return;
    }
    for (i = 0; i < SNMPTRAP_DROP_N; i++)
        before[i] = drop_stat[i] >= 0 ? snmp_get_statistic(drop_stat[i]) : 0;
    netsnmp_large_fd_set_init(&fds, t->transport->sock + 1);
    NETSNMP_LARGE_FD_SET(t->transport->sock, &fds);
    snmp_sess_read2(t->sess, &fds);
    netsnmp_large_fd_set_cleanup(&fds);
    for (i = 0; i < SNMPTRAP_DROP_N; i++)
        if (drop_stat[i] >= 0)
            t->base.stats.snmp_dropped[i] += snmp_get_statistic(drop_stat[i]) - before[i];
}

/*
 * The workers' queue is full: stop reading, so that datagrams wait in the
 * socket's receive buffer (as a UDP input's do) instead of being dropped.
 */
static void
trap_hold(struct input *in, bool hold)
{
    struct trap_input *t = (struct trap_input *)in;

    if (!t->polling) return;
    if (hold)
        uv_poll_stop(&t->poll);
    else
        uv_poll_start(&t->poll, UV_READABLE, on_readable);
}

static void
remove_users(struct trap_input *t)
{
    size_t i;
    for (i = 0; i < t->nusers; i++) {
        usm_remove_user(t->users[i]);
        usm_free_user(t->users[i]);
    }
    free(t->users);
    t->users = NULL;
    t->nusers = 0;
}

static void
trap_closed(uv_handle_t *h)
{
    struct trap_input *t = h->data;
    size_t i;

    if (t->sess) snmp_sess_close(t->sess); /* closes the transport and its socket */
    remove_users(t);
    for (i = 0; i < t->nmap; i++) {
        free(t->map[i].addr);
        free(t->map[i].name);
    }
    free(t->map);
    free(t->rates);
    buf_free(&t->line);
    input_fini(&t->base);
    free(t);
}

static void
trap_close(struct input *in)
{
    struct trap_input *t = (struct trap_input *)in;

    if (t->polling) {
        uv_poll_stop(&t->poll);
        uv_close((uv_handle_t *)&t->poll, trap_closed);
    } else {
        t->poll.data = t;
        trap_closed((uv_handle_t *)&t->poll);
    }
}

static void *
memdup(const void *p, size_t n)
{
    void *d = xmalloc(n ? n : 1);
    memcpy(d, p, n);
    return d;
}

/* The users' localized keys into net-snmp's USM table. */
static int
add_users(struct trap_input *t, struct buf *err)
{
    size_t i, j;

    for (i = 0; i < t->sc->nusers; i++) {
        const struct snmptrap_user *u = &t->sc->users[i];
        if (u->auth && !u->keys) {
            buf_printf(err,
                       "user %s: no keys: they are derived when corrald starts (the engine "
                       "never reads passwords); restart corrald to add or change SNMPv3 users",
                       u->name);
            return -1;
        }
        for (j = 0; j < (u->auth ? u->nkeys : 1); j++) {
            struct usmUser *us = usm_create_user();
            unsigned char own[32];
            size_t ownlen = snmptrap_engine_id(t->sc, own);
            const struct snmptrap_key *k = u->auth ? &u->keys[j] : NULL;
            size_t olen;
            const oid *o;

            us->name = xstrdup(u->name);
            us->secName = xstrdup(u->name);
            us->engineID = memdup(k ? k->eid : own, k ? k->eidlen : ownlen);
            us->engineIDLen = k ? k->eidlen : ownlen;
            SNMP_FREE(us->authProtocol);
            SNMP_FREE(us->privProtocol);
            if (u->auth) {
                o = sc_get_auth_oid(usm_lookup_auth_type(u->auth), &olen);
                us->authProtocol = snmp_duplicate_objid(o, olen);
                us->authProtocolLen = olen;
                us->authKey = memdup(k->auth, k->authlen);
                us->authKeyLen = k->authlen;
            } else {
                us->authProtocol =
                    snmp_duplicate_objid(usmNoAuthProtocol, USM_AUTH_PROTO_NOAUTH_LEN);
                us->authProtocolLen = USM_AUTH_PROTO_NOAUTH_LEN;
            }
            if (u->priv) {
                o = sc_get_priv_oid(usm_lookup_priv_type(u->priv), &olen);
                us->privProtocol = snmp_duplicate_objid(o, olen);
                us->privProtocolLen = olen;
                us->privKey = memdup(k->priv, k->privlen);
                us->privKeyLen = k->privlen;
            } else {
                us->privProtocol =
                    snmp_duplicate_objid(usmNoPrivProtocol, USM_PRIV_PROTO_NOPRIV_LEN);
                us->privProtocolLen = USM_PRIV_PROTO_NOPRIV_LEN;
            }
            us->userStatus = RS_ACTIVE;
            us->userStorageType = ST_READONLY;
            usm_add_user(us);
            t->users = xrealloc(t->users, (t->nusers + 1) * sizeof(*t->users));
            t->users[t->nusers++] = us;
        }
    }
    return 0;
}

struct input *
in_snmptrap_open(const struct input_sink *sink, uv_loop_t *loop, const struct conf_input *ci,
                 const struct conf *conf, struct buf *err)
{
    struct trap_input *t = xcalloc(1, sizeof(*t));
    struct buf e = BUF_INIT;
    netsnmp_session sess;
    unsigned char eid[32];
    size_t eidlen;
    char where[INET6_ADDRSTRLEN + 8];
    int rc;

    input_init(&t->base, sink, loop, ci, conf);
    t->base.close = trap_close;
    t->base.hold = trap_hold;
    t->sc = t->base.conf.snmp;
    if (!t->sc) {
        buf_printf(err, "input %s: no SNMP configuration", t->base.conf.name);
        trap_close(&t->base);
        return NULL;
    }
    t->rates = xcalloc(RATE_SLOTS, sizeof(*t->rates));
    buf_init(&t->line);
    if (snmptrap_fmt_init(t->sc->mibs, &e) < 0 ||
        (t->sc->host_map && load_host_map(t, t->sc->host_map, &e) < 0) || add_users(t, &e) < 0) {
        buf_printf(err, "input %s: %s", t->base.conf.name, buf_str(&e));
        buf_free(&e);
        trap_close(&t->base);
        return NULL;
    }
    eidlen = snmptrap_engine_id(t->sc, eid);
    if (eidlen) {
        /* the engine-time table must know it too, or every inform is an unknown engine ID */
        set_exact_engineID(eid, eidlen);
        set_enginetime(eid, (u_int)eidlen, snmpv3_local_snmpEngineBoots(),
                       snmpv3_local_snmpEngineTime(), TRUE);
    }

    t->transport = netsnmp_tdomain_transport(ci->listen, 1, "udp");
    if (!t->transport) {
        buf_printf(err, "input %s: cannot listen on %s", t->base.conf.name, ci->listen);
        trap_close(&t->base);
        return NULL;
    }
    snmp_sess_init(&sess);
    sess.peername = SNMP_DEFAULT_PEERNAME;
    sess.version = SNMP_DEFAULT_VERSION;
    sess.community_len = SNMP_DEFAULT_COMMUNITY_LEN;
    sess.retries = SNMP_DEFAULT_RETRIES;
    sess.timeout = SNMP_DEFAULT_TIMEOUT;
    sess.callback = on_pdu;
    sess.callback_magic = t;
    sess.authenticator = NULL;
    sess.isAuthoritative = SNMP_SESS_UNKNOWNAUTH;
    t->sess = snmp_sess_add(&sess, t->transport, pre_parse, NULL);
    if (!t->sess) {
        buf_printf(err, "input %s: cannot open an SNMP session on %s", t->base.conf.name,
                   ci->listen);
        /* snmp_sess_add closed the transport */
        t->transport = NULL;
        trap_close(&t->base);
        return NULL;
    }
    if (input_bound_name(t->transport->sock, where, sizeof(where)))
        log_msg(LOG_INFO, "input %s: listening on %s", t->base.conf.name, where);
    input_set_rcvbuf(t->transport->sock, 4 * 1024 * 1024, t->base.conf.name);
    rc = uv_poll_init(loop, &t->poll, t->transport->sock);
    if (rc < 0) {
        buf_printf(err, "input %s: %s", t->base.conf.name, uv_strerror(rc));
        trap_close(&t->base);
        return NULL;
    }
    t->poll.data = t;
    t->polling = true;
    uv_poll_start(&t->poll, UV_READABLE, on_readable);
    return &t->base;
}
