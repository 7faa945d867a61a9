/*
 * snmp: the SNMP executor.  Sends each alert as an SNMPv2c or SNMPv3 trap or
 * inform carrying the objects of CORRAL-MIB (contrib/mibs/CORRAL-MIB.txt),
 * with net-snmp's single-session API.
 *
 * Nothing here blocks the loop: the session's UDP socket is watched with a
 * uv_poll and its retransmission deadlines with a uv_timer that drives
 * snmp_sess_timeout().  A trap is done once it has been handed to the
 * socket; an inform once the receiver acknowledged it, or, after the
 * configured net-snmp resends, it is given back to the queue for a later
 * attempt.  net-snmp's own SNMPv3 engine discovery is synchronous, so for
 * v3 informs the executor probes the receiver itself (an asynchronous
 * RFC 3414 discovery request) and holds the informs until it answers.
 *
 * net-snmp is initialized once per process without reading any snmp.conf,
 * MIB or persistent file, and without writing any (see library_init).
 *
 * Every value is sent as UTF-8 text without control characters and at most
 * VALUE_MAX octets (see put_text); the MIB's CorralText documents the same.
 *
 * This file holds the session and the notifications; snmp_conf.c reads the
 * configuration (snmp_int.h is what the two share).
 */
#include "actions/snmp_int.h"
#include "engine/evidence.h"
#include "engine/template.h"
#include "engine/xalloc.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <net-snmp/library/keytools.h>
#include <net-snmp/library/large_fd_set.h>
#include <net-snmp/library/lcd_time.h>
#include <net-snmp/library/snmpusm.h>

/* The objects of CORRAL-MIB, as sub-identifiers below corralObjects (base.1). */
enum field {
    F_TEXT = 1,
    F_HOST,
    F_PROGRAM,
    F_CLASS,
    F_RULE_ID,
    F_CONTEXT_ID,
    F_ALERT_ID,
    F_SEVERITY,
    F_NFIELDS = F_SEVERITY,
    F_EVIDENCE = 10, /* after corralAlertValueTable (9); sent with evidence="yes" */
};

static const char *const field_label[] = {
    NULL,
    "corralAlertText",
    "corralAlertHost",
    "corralAlertProgram",
    "corralAlertClass",
    "corralAlertRuleId",
    "corralAlertContextId",
    "corralAlertId",
    "corralAlertSeverity",
    NULL,
    "corralAlertEvidence",
};

/* snmpUDPDomain (RFC 3417) and transportDomainUdpIpv6 (RFC 3419) */
static const oid udp4_domain[] = {1, 3, 6, 1, 6, 1, 1};
static const oid udp6_domain[] = {1, 3, 6, 1, 2, 1, 100, 1, 2};
static const oid sys_uptime_oid[] = {1, 3, 6, 1, 2, 1, 1, 3, 0};
static const oid trap_oid_oid[] = {1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0};

enum pending_state { P_WAITING, P_SENT, P_DONE };

/* An inform between deliver() and done(). */
struct pending {
    struct pending *next, *prev;
    struct snmp_x *x;
    enum pending_state state;
    netsnmp_pdu *pdu; /* P_WAITING: built, held until the engine id is known */
    deliver_done_fn done;
    void *token;
    enum deliver_result result;
    char *reason;
    int report; /* P_SENT: the last Report the receiver answered with (SNMPERR_*), or 0 */
};

static uint64_t started_ns;

/* ---- net-snmp, once per process ---- */

static void
library_init(void)
{
    static bool done;
    char *ctype;

    if (done) return;
    done = true;
    started_ns = uv_hrtime();
    /*
     * corrald's configuration is the only configuration: no snmp.conf, no
     * hosts/NAME.conf, no persistent snmpapp.conf read or written.
     */
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_READ_CONFIGS, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_LOAD_HOST_FILES, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_PERSIST_STATE, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
    /*
     * The TLS transport's start-up hook creates PERSISTENT_DIR/cert_indexes
     * whatever the flags above say.  Below /dev/null no directory can ever
     * be made, so it fails quietly and writes nothing.
     */
    netsnmp_ds_set_string(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_PERSISTENT_DIR, "/dev/null");
    /*
     * No MIB is needed (every OID is numeric): an empty MIB path and list
     * (the configuration line "mibs :", as if from snmp.conf) load none,
     * instead of complaining about each default module that is missing.
     */
    netsnmp_set_mib_directory("");
    {
        char line[] = "mibs :";
        netsnmp_config_remember(line);
    }
    /* init_snmp() calls setlocale(LC_CTYPE, ""): keep corrald's locale as it was. */
    ctype = xstrdup(setlocale(LC_CTYPE, NULL));
    init_snmp("corrald");
    setlocale(LC_CTYPE, ctype);
    free(ctype);
}

/* ---- values: parsed from the configuration and from template output ---- */

bool
snmp_oid_parse(const char *s, size_t n, oid *out, size_t *len)
{
    size_t i = 0, count = 0;

    if (n && s[0] == '.') i++;
    if (i >= n) return false;
    while (i < n) {
        unsigned long long v = 0;
        size_t start = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            v = v * 10 + (unsigned)(s[i] - '0');
            if (v > 0xffffffffull) return false;
            i++;
        }
        if (i == start || count == MAX_OID_LEN) return false;
        out[count++] = (oid)v;
        if (i < n) {
            if (s[i] != '.' || i + 1 == n) return false;
            i++;
        }
    }
    if (count < 2) return false;
    *len = count;
    return true;
}

static void
put_oid(struct buf *out, const oid *o, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) buf_printf(out, "%s%lu", i ? "." : "", (unsigned long)o[i]);
}

static int
hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool
snmp_hex_parse(const char *s, size_t n, struct buf *out, size_t max)
{
    size_t i = 0;
    int hi = -1;

    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) i = 2;
    for (; i < n; i++) {
        int v = hexval((unsigned char)s[i]);
        if (v < 0) {
            if ((s[i] == ' ' || s[i] == ':' || s[i] == '-') && hi < 0) continue;
            return false;
        }
        if (hi < 0) {
            hi = v;
        } else {
            if (out->len < max) buf_putc(out, (char)(hi << 4 | v));
            hi = -1;
        }
    }
    return hi < 0;
}

static void
trim(const char **s, size_t *n)
{
    while (*n && isspace((unsigned char)**s)) (*s)++, (*n)--;
    while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

static bool
parse_long(const char *s, size_t n, bool is_signed, long *out)
{
    char tmp[32], *end;
    long long v;

    trim(&s, &n);
    if (n == 0 || n >= sizeof(tmp)) return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (!is_signed && tmp[0] == '-') return false;
    errno = 0;
    v = strtoll(tmp, &end, 10);
    if (errno || *end) return false;
    if (is_signed ? (v < INT32_MIN || v > INT32_MAX) : (v < 0 || v > (long long)UINT32_MAX))
        return false;
    *out = (long)v;
    return true;
}

/*
 * Appends s as UTF-8 text for a receiver's display and logs: C0 and C1
 * control characters (CR, LF, TAB, ESC...) and DEL become spaces, bytes that
 * are not well-formed UTF-8 become '?'.  Stops early once out holds more
 * than `stop` bytes: the caller truncates anyway.
 */
static void
put_clean(struct buf *out, const char *s, size_t n, size_t stop)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    buf_reserve(out, n < stop ? n : stop);
    while (i < n && out->len <= stop) {
        unsigned c = p[i];
        size_t need, k;
        unsigned lo = 0x80, hi = 0xbf;

        if (c < 0x80) {
            buf_putc(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            need = 1;
        else if (c >= 0xe0 && c <= 0xef)
            need = 2;
        else if (c >= 0xf0 && c <= 0xf4)
            need = 3;
        else
            need = 0;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f; /* no UTF-16 surrogates */
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f; /* nothing above U+10FFFF */
        for (k = 1; need && k <= need; k++) {
            unsigned b = i + k < n ? p[i + k] : 0;
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) need = 0;
        }
        if (!need) {
            buf_putc(out, '?');
            i++;
        } else if (c == 0xc2 && p[i + 1] < 0xa0) {
            buf_putc(out, ' '); /* U+0080..U+009F: C1 controls */
            i += 2;
        } else {
            buf_append(out, s + i, need + 1);
            i += need + 1;
        }
    }
}

/*
 * Cuts out[start..] to VALUE_MAX octets at a character boundary, ending it
 * with TRUNC_MARK, when it is longer.  A truncated value is never silent.
 */
static void
truncate_to(struct buf *out, size_t start, size_t max)
{
    size_t cut;

    if (out->len - start <= max) return;
    cut = start + max - (sizeof(TRUNC_MARK) - 1);
    while (cut > start && ((unsigned char)out->p[cut] & 0xc0) == 0x80) cut--;
    buf_truncate(out, cut);
    buf_puts(out, TRUNC_MARK);
}

static void
truncate_text(struct buf *out, size_t start)
{
    truncate_to(out, start, VALUE_MAX);
}

static void
put_text(struct buf *out, const char *s, size_t n)
{
    size_t start = out->len;

    put_clean(out, s, n, start + VALUE_MAX + 8);
    truncate_text(out, start);
}

/*
 * Boots and time of our engine, for traps: an SNMPv3 receiver drops a
 * message whose (boots, time) goes backwards, so a restart must raise
 * boots.  Without persistent state, boots is the number of seconds from
 * 2020 to the executor's first opening in this process (a later start has
 * a larger one while the clock is sane) and time counts from there.
 */
static void
trap_engine_time(struct snmp_x *x)
{
    u_int boots = 0, etime = 0;
    time_t now = time(NULL);
    long b = (long)(now - BOOTS_EPOCH);

    if (get_enginetime(x->engine_id, (u_int)x->engine_id_len, &boots, &etime, FALSE) ==
            SNMPERR_SUCCESS &&
        boots)
        return; /* another executor of this process already speaks for this engine */
    if (b < 1) b = 1;
    if (b > 2147483646L) b = 2147483646L;
    set_enginetime(x->engine_id, (u_int)x->engine_id_len, (u_int)b, 0, TRUE);
}

/*
 * net-snmp keeps one process-wide USM entry, with keys localized to the
 * engine, per (engine id, user); sessions find it by those two.  Executors
 * that share the pair (a reload opens the new executor before the old one
 * has closed) share the entry: each acquire replaces its keys with the
 * opening executor's, and the last release removes it.
 */
struct snmp_usm {
    struct snmp_usm *next;
    u_char engine[32];
    size_t len;
    char *user;
    unsigned refs;
};

static struct snmp_usm *usms;

static void
usm_entry_remove(const u_char *engine, size_t len, const char *user)
{
    struct usmUser *u = usm_get_user(engine, len, user);

    if (u && u->engineIDLen == len) {
        usm_remove_user(u);
        usm_free_user(u);
    }
}

/* Makes the session's USM entry (creating or re-keying it) and takes a share of it. */
static void
usm_acquire(struct snmp_x *x)
{
    netsnmp_session *s = snmp_sess_session(x->sess);
    struct snmp_usm *r;

    if (x->usm || !s->securityEngineIDLen || s->securityEngineIDLen > sizeof(r->engine)) return;
    for (r = usms; r; r = r->next)
        if (r->len == s->securityEngineIDLen &&
            memcmp(r->engine, s->securityEngineID, r->len) == 0 && strcmp(r->user, x->user) == 0)
            break;
    if (!r) {
        r = xcalloc(1, sizeof(*r));
        memcpy(r->engine, s->securityEngineID, s->securityEngineIDLen);
        r->len = s->securityEngineIDLen;
        r->user = xstrdup(x->user);
        r->next = usms;
        usms = r;
    }
    r->refs++;
    x->usm = r;
    /* usm_create_user_from_session() leaves an existing entry's keys as they were */
    usm_entry_remove(r->engine, r->len, r->user);
    s->flags &= ~SNMP_FLAGS_USER_CREATED;
    usm_create_user_from_session(s);
}

static void
usm_release(struct snmp_x *x)
{
    struct snmp_usm **p, *r = x->usm;

    if (!r) return;
    x->usm = NULL;
    if (--r->refs) return;
    usm_entry_remove(r->engine, r->len, r->user);
    for (p = &usms; *p != r; p = &(*p)->next) continue;
    *p = r->next;
    free(r->user);
    free(r);
}

/*
 * Opens the session to the target with the keys derived from k's
 * passwords; only UDP, so that nothing connects (and blocks) here.
 */
static bool
session_open(struct snmp_x *x, const struct exconf_reader *r, const struct snmp_keys *k)
{
    netsnmp_session s;
    netsnmp_transport *t;
    static const char *const stream[] = {"tcp",    "tcp6", "tcpv6",    "tcpipv6",
                                         "tlstcp", "ssh",  "unix",     "dtlsudp",
                                         "dtls",   "tls",  "callback", "alias"};
    size_t i, plen = strcspn(x->target, ":");
    bool udp = false;

    /* Stream transports would connect (and block) right here, and queue unboundedly. */
    for (i = 0; i < sizeof(stream) / sizeof(stream[0]); i++)
        if (x->target[plen] == ':' && strlen(stream[i]) == plen &&
            strncasecmp(x->target, stream[i], plen) == 0) {
            exconf_error(r, "target=\"%s\": only UDP transports are supported", x->target);
            return false;
        }
    t = netsnmp_tdomain_transport_full("snmptrap", x->target, 0, NULL, NULL);
    if (!t) {
        exconf_error(r, "target=\"%s\": cannot open it (an address, host:port or udp6:[addr]:port)",
                     x->target);
        return false;
    }
    if (netsnmp_oid_equals(t->domain, t->domain_length, udp4_domain, OID_LENGTH(udp4_domain)) ==
            0 ||
        netsnmp_oid_equals(t->domain, t->domain_length, udp6_domain, OID_LENGTH(udp6_domain)) == 0)
        udp = true;
    if (!udp) {
        t->f_close(t);
        netsnmp_transport_free(t);
        exconf_error(r, "target=\"%s\": only UDP transports are supported", x->target);
        return false;
    }

    snmp_sess_init(&s); /* sets SNMP_FLAGS_DONT_PROBE: no synchronous discovery at open */
    s.version = x->version;
    s.retries = x->retries;
    s.timeout = (long)(x->timeout * 1000000.0);
    if (x->version == SNMP_VERSION_2c) {
        s.community = (u_char *)k->community;
        s.community_len = strlen(k->community);
    } else {
        s.securityName = x->user;
        s.securityNameLen = strlen(x->user);
        s.securityModel = SNMP_SEC_MODEL_USM;
        s.securityLevel = x->seclevel;
        if (x->seclevel >= SNMP_SEC_LEVEL_AUTHNOPRIV) {
            s.securityAuthProto = (oid *)k->auth_proto;
            s.securityAuthProtoLen = k->auth_len;
            s.securityAuthKeyLen = USM_AUTH_KU_LEN;
            if (generate_Ku(k->auth_proto, (u_int)k->auth_len, (const u_char *)k->auth_pass,
                            strlen(k->auth_pass), s.securityAuthKey,
                            &s.securityAuthKeyLen) != SNMPERR_SUCCESS) {
                exconf_error(r, "cannot derive the SNMPv3 authentication key (%s)", x->auth_name);
                t->f_close(t);
                netsnmp_transport_free(t);
                return false;
            }
        }
        if (x->seclevel == SNMP_SEC_LEVEL_AUTHPRIV) {
            s.securityPrivProto = (oid *)k->priv_proto;
            s.securityPrivProtoLen = k->priv_len;
            s.securityPrivKeyLen = USM_PRIV_KU_LEN;
            /* RFC 3414/3826: the privacy key comes from the authentication hash */
            if (generate_Ku(k->auth_proto, (u_int)k->auth_len, (const u_char *)k->priv_pass,
                            strlen(k->priv_pass), s.securityPrivKey,
                            &s.securityPrivKeyLen) != SNMPERR_SUCCESS) {
                exconf_error(r, "cannot derive the SNMPv3 privacy key (%s)", x->priv_name);
                explicit_bzero(s.securityAuthKey, sizeof(s.securityAuthKey));
                t->f_close(t);
                netsnmp_transport_free(t);
                return false;
            }
        }
        if (x->engine_id_len) {
            s.securityEngineID = x->engine_id;
            s.securityEngineIDLen = x->engine_id_len;
            s.contextEngineID = x->engine_id;
            s.contextEngineIDLen = x->engine_id_len;
            if (!x->inform) trap_engine_time(x);
        }
    }
    x->sess = snmp_sess_add(&s, t, NULL, NULL);
    explicit_bzero(s.securityAuthKey, sizeof(s.securityAuthKey));
    explicit_bzero(s.securityPrivKey, sizeof(s.securityPrivKey));
    if (!x->sess) {
        exconf_error(r, "cannot open an SNMP session to %s: %s", x->target,
                     snmp_api_errstring(s.s_snmp_errno ? s.s_snmp_errno : snmp_errno));
        return false;
    }
    /* our own asynchronous discovery replaces net-snmp's synchronous one */
    snmp_sess_session(x->sess)->flags |= SNMP_FLAGS_DONT_PROBE;
    x->fd = snmp_sess_transport(x->sess) ? snmp_sess_transport(x->sess)->sock : -1;
    if (x->version == SNMP_VERSION_3) {
        if (x->engine_id_len) {
            usm_acquire(x);
            x->engine_known = true;
        }
    } else {
        x->engine_known = true;
    }
    return true;
}

static void snmp_free(struct snmp_x *x);

/* The executor's methods are snmp_executor_*: net-snmp has snmp_open and snmp_close. */
static void *
snmp_executor_open(uv_loop_t *loop, const struct exconf *cfg, const char *file, struct buf *err)
{
    const struct exconf_reader r = {cfg, file, err};
    struct snmp_keys keys;
    struct snmp_x *x;
    bool ok;

    library_init();
    x = xcalloc(1, sizeof(*x));
    memset(&keys, 0, sizeof(keys));
    x->loop = loop;
    x->fd = -1;
    x->h_alert_id = nv_intern_str("corral.alert_id");
    x->h_severity = nv_intern_str("corral.severity");
    x->h_evidence = nv_intern_str(EVIDENCE_NAME);
    ok = snmp_conf_read(x, &r, &keys) && session_open(x, &r, &keys);
    snmp_keys_free(&keys);
    if (!ok) {
        snmp_free(x);
        return NULL;
    }
    if (x->fd < 0 || uv_poll_init_socket(loop, &x->poll, x->fd) != 0) {
        exconf_error(&r, "cannot watch the SNMP socket to %s", x->target);
        snmp_free(x);
        return NULL;
    }
    uv_timer_init(loop, &x->timer);
    x->poll.data = x->timer.data = x;
    x->handles = 2;
    return x;
}

/* ---- building a notification ---- */

static struct vb *
vb_add(struct snmp_x *x, const oid *name, size_t len, char type, const char *label)
{
    struct vb *v;

    if (x->nvb == x->capvb) {
        size_t old = x->capvb;
        x->vb = xgrow(x->vb, &x->capvb, x->nvb + 1, sizeof(*x->vb));
        memset(x->vb + old, 0, (x->capvb - old) * sizeof(*x->vb));
    }
    v = &x->vb[x->nvb++];
    memcpy(v->name, name, len * sizeof(oid));
    v->len = len;
    v->type = type;
    v->label = label;
    v->index = 0;
    buf_reset(&v->bytes);
    v->num = 0;
    v->olen = 0;
    return v;
}

const char *
snmp_vb_set(char type, const char *s, size_t n, struct vb *v)
{
    switch (type) {
    case 's': put_text(&v->bytes, s, n); return NULL;
    case 'x': return snmp_hex_parse(s, n, &v->bytes, VALUE_MAX) ? NULL : "not hex octets";
    case 'i': return parse_long(s, n, true, &v->num) ? NULL : "not a 32-bit integer";
    case 'u':
    case 'c':
    case 't': return parse_long(s, n, false, &v->num) ? NULL : "not an unsigned 32-bit number";
    case 'o':
        trim(&s, &n);
        return snmp_oid_parse(s, n, v->oval, &v->olen) ? NULL : "not a numeric OID";
    case 'a': {
        char tmp[INET_ADDRSTRLEN];
        struct in_addr a;
        trim(&s, &n);
        if (n >= sizeof(tmp)) return "not an IPv4 address";
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        if (inet_pton(AF_INET, tmp, &a) != 1) return "not an IPv4 address";
        v->ip = a.s_addr;
        return NULL;
    }
    }
    return "unknown type";
}

/* Evaluates a trap-oid template into the trap OID; returns an error or NULL. */
static const char *
eval_trap_oid(struct snmp_x *x, const struct template *t, const struct template_env *env,
              struct vb *v)
{
    const char *s;
    size_t n;

    buf_reset(&x->scratch);
    template_eval(t, env, &x->scratch);
    s = x->scratch.p;
    n = x->scratch.len;
    trim(&s, &n);
    if (!snmp_oid_parse(s, n, v->oval, &v->olen))
        return "the trap-oid template gives no numeric OID";
    return NULL;
}

static void
add_text_field(struct snmp_x *x, enum field f, const char *s, size_t n)
{
    oid name[MAX_OID_LEN];
    struct vb *v;

    memcpy(name, x->base, x->base_len * sizeof(oid));
    name[x->base_len] = 1;
    name[x->base_len + 1] = (oid)f;
    name[x->base_len + 2] = 0;
    v = vb_add(x, name, x->base_len + 3, 's', field_label[f]);
    put_text(&v->bytes, s ? s : "", s ? n : 0);
}

/*
 * The log lines of the alert (corral.evidence) as corralAlertEvidence: each
 * line as put_clean makes text, the lines joined by LF, at most SNMP_EVIDENCE_MAX
 * octets.
 */
static void
add_evidence(struct snmp_x *x, const char *s, size_t n)
{
    oid name[MAX_OID_LEN];
    struct vb *v;
    size_t i, line, start;

    memcpy(name, x->base, x->base_len * sizeof(oid));
    name[x->base_len] = 1;
    name[x->base_len + 1] = F_EVIDENCE;
    name[x->base_len + 2] = 0;
    v = vb_add(x, name, x->base_len + 3, 's', field_label[F_EVIDENCE]);
    start = v->bytes.len;
    for (i = line = 0; s && i <= n && v->bytes.len - start <= SNMP_EVIDENCE_MAX; i++) {
        if (i < n && s[i] != '\n') continue;
        if (line) buf_putc(&v->bytes, '\n');
        put_clean(&v->bytes, s + line, i - line, start + SNMP_EVIDENCE_MAX + 8);
        line = i + 1;
    }
    truncate_to(&v->bytes, start, SNMP_EVIDENCE_MAX);
}

/* Values the fixed objects carry, and the evidence, which goes only as corralAlertEvidence. */
static bool
is_fixed(const struct snmp_x *x, nv_handle h)
{
    return h == NV_MESSAGE || h == NV_HOST || h == NV_PROGRAM || h == NV_CLASS || h == NV_RULE_ID ||
           h == NV_CONTEXT_ID || h == x->h_alert_id || h == x->h_severity || h == x->h_evidence;
}

/*
 * Fills x->vb with the notification for a: sysUpTime.0, snmpTrapOID.0, the
 * eight CORRAL-MIB objects, corralAlertEvidence with evidence="yes", the
 * message's other values as corralAlertValue.N,
 * with <varbind> elements replacing a default varbind of the same OID or
 * coming last.  Returns an error (the alert can never be sent) or NULL.
 */
static const char *
build(struct snmp_x *x, const struct alert *a)
{
    struct template_env env;
    struct msg *m = a->msg;
    const char *s, *why;
    size_t n, i, j, count, total;
    oid name[MAX_OID_LEN];
    struct vb *v;
    bool clear = executor_alert_resolved(a);
    uint64_t ticks = (uv_hrtime() - started_ns) / 10000000u;

    template_env_single(&env, &a->msg);
    x->nvb = 0;
    v = vb_add(x, sys_uptime_oid, OID_LENGTH(sys_uptime_oid), 't', "sysUpTime.0");
    v->num = (long)(ticks & 0xffffffffu);
    v = vb_add(x, trap_oid_oid, OID_LENGTH(trap_oid_oid), 'o', "snmpTrapOID.0");
    if (clear && (x->clear_oid || x->trap_oid)) {
        if ((why = eval_trap_oid(x, x->clear_oid ? x->clear_oid : x->trap_oid, &env, v)))
            return why;
    } else if (!clear && x->trap_oid) {
        if ((why = eval_trap_oid(x, x->trap_oid, &env, v))) return why;
    } else {
        memcpy(v->oval, x->base, x->base_len * sizeof(oid));
        v->oval[x->base_len] = 0;
        v->oval[x->base_len + 1] = clear ? 2 : 1;
        v->olen = x->base_len + 2;
    }

    s = msg_get(m, NV_MESSAGE, &n);
    add_text_field(x, F_TEXT, s, n);
    s = msg_get(m, NV_HOST, &n);
    add_text_field(x, F_HOST, s, n);
    s = msg_get(m, NV_PROGRAM, &n);
    add_text_field(x, F_PROGRAM, s, n);
    s = msg_get(m, NV_CLASS, &n);
    add_text_field(x, F_CLASS, s, n);
    s = msg_get(m, NV_RULE_ID, &n);
    add_text_field(x, F_RULE_ID, s, n);
    s = msg_get(m, NV_CONTEXT_ID, &n);
    add_text_field(x, F_CONTEXT_ID, s, n);
    add_text_field(x, F_ALERT_ID, a->id, a->id ? strlen(a->id) : 0);
    memcpy(name, x->base, x->base_len * sizeof(oid));
    name[x->base_len] = 1;
    name[x->base_len + 1] = F_SEVERITY;
    name[x->base_len + 2] = 0;
    v = vb_add(x, name, x->base_len + 3, 'i', field_label[F_SEVERITY]);
    v->num = executor_severity_number(a->severity);
    if (x->evidence) {
        s = msg_get(m, x->h_evidence, &n);
        add_evidence(x, s, s ? n : 0);
    }

    for (i = 0, count = 0, total = 0; x->values && i < msg_nvalues(m) && count < VALUES_MAX; i++) {
        nv_handle h = msg_value_at(m, i, &s, &n);
        const char *nm;
        size_t nlen, start;
        if (is_fixed(x, h) || !(nm = nv_name(h, &nlen))) continue;
        count++;
        name[x->base_len + 1] =
            9; /* corralAlertValueTable.corralAlertValueEntry.corralAlertValue */
        name[x->base_len + 2] = 1;
        name[x->base_len + 3] = 2;
        name[x->base_len + 4] = (oid)count;
        v = vb_add(x, name, x->base_len + 5, 's', "corralAlertValue");
        v->index = (unsigned)count;
        start = v->bytes.len;
        put_clean(&v->bytes, nm, nlen, VALUE_MAX + 8);
        buf_putc(&v->bytes, '=');
        put_clean(&v->bytes, s, n, start + VALUE_MAX + 8);
        truncate_text(&v->bytes, start);
        total += v->bytes.len;
        if (total > VALUES_BYTES_MAX) {
            x->nvb--; /* this one and the rest stay out */
            break;
        }
    }

    for (i = 0; i < x->nvbs; i++) {
        const struct vb_conf *c = &x->vbs[i];
        for (j = 2; j < x->nvb; j++)
            if (x->vb[j].len == c->len && memcmp(x->vb[j].name, c->name, c->len * sizeof(oid)) == 0)
                break;
        if (j < x->nvb) {
            v = &x->vb[j];
            v->type = c->type;
            buf_reset(&v->bytes);
        } else {
            v = vb_add(x, c->name, c->len, c->type, NULL);
        }
        buf_reset(&x->scratch);
        template_eval(c->value, &env, &x->scratch);
        if ((why = snmp_vb_set(c->type, x->scratch.p ? x->scratch.p : "", x->scratch.len, v))) {
            buf_reset(&x->scratch);
            buf_puts(&x->scratch, "<varbind oid=\"");
            put_oid(&x->scratch, c->name, c->len);
            buf_printf(&x->scratch, "\"> value: %s", why);
            return buf_str(&x->scratch);
        }
    }
    return NULL;
}

static netsnmp_pdu *
make_pdu(struct snmp_x *x)
{
    netsnmp_pdu *pdu = snmp_pdu_create(x->inform ? SNMP_MSG_INFORM : SNMP_MSG_TRAP2);
    size_t i;

    for (i = 0; i < x->nvb; i++) {
        const struct vb *v = &x->vb[i];
        switch (v->type) {
        case 's':
        case 'x':
            snmp_pdu_add_variable(pdu, v->name, v->len, ASN_OCTET_STR, v->bytes.p ? v->bytes.p : "",
                                  v->bytes.len);
            break;
        case 'i':
            snmp_pdu_add_variable(pdu, v->name, v->len, ASN_INTEGER, &v->num, sizeof(v->num));
            break;
        case 'u':
        case 'c':
        case 't': {
            u_long u = (u_long)v->num;
            u_char t = v->type == 'u' ? ASN_GAUGE : v->type == 'c' ? ASN_COUNTER : ASN_TIMETICKS;
            snmp_pdu_add_variable(pdu, v->name, v->len, t, &u, sizeof(u));
            break;
        }
        case 'o':
            snmp_pdu_add_variable(pdu, v->name, v->len, ASN_OBJECT_ID, v->oval,
                                  v->olen * sizeof(oid));
            break;
        case 'a':
            snmp_pdu_add_variable(pdu, v->name, v->len, ASN_IPADDRESS, &v->ip, sizeof(v->ip));
            break;
        }
    }
    return pdu;
}

/* ---- the loop side ---- */

static void after(struct snmp_x *x);

static void
list_remove(struct pending **head, struct pending *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        *head = p->next;
    if (p->next) p->next->prev = p->prev;
    p->next = p->prev = NULL;
}

static void
list_push(struct pending **head, struct pending *p)
{
    p->prev = NULL;
    p->next = *head;
    if (*head) (*head)->prev = p;
    *head = p;
}

static void
pending_free(struct pending *p)
{
    if (p->pdu) snmp_free_pdu(p->pdu);
    free(p->reason);
    free(p);
}

/*
 * Records the outcome; done() is called from after(), once net-snmp has
 * returned, so that a queue delivering the next alert from done() never
 * re-enters net-snmp from inside one of its callbacks.
 */
static void
finish(struct pending *p, enum deliver_result r, const char *reason)
{
    struct snmp_x *x = p->x;

    if (p->state == P_DONE) return;
    list_remove(p->state == P_SENT ? &x->sent : &x->waiting, p);
    p->state = P_DONE;
    p->result = r;
    p->reason = reason ? xstrdup(reason) : NULL;
    p->next = NULL;
    if (x->completed_tail)
        x->completed_tail->next = p;
    else
        x->completed = p;
    x->completed_tail = p;
}

static const char *
error_text(struct snmp_x *x, char *buf, size_t size, const char *what, int snmp_err)
{
    netsnmp_session *s = snmp_sess_session(x->sess);
    int e = snmp_err ? snmp_err : s->s_snmp_errno;

    if (e == SNMPERR_BAD_SENDTO && s->s_errno)
        snprintf(buf, size, "%s to %s: %s (%s)", what, x->target, snmp_api_errstring(e),
                 strerror(s->s_errno));
    else
        snprintf(buf, size, "%s to %s: %s", what, x->target, snmp_api_errstring(e));
    return buf;
}

/* What a Report (RFC 3414 3.2, snmpv3_get_report_type()) tells an operator. */
static const char *
report_text(int type)
{
    switch (type) {
    case SNMPERR_UNKNOWN_ENG_ID: return "unknown engine id (the receiver's engine changed)";
    case SNMPERR_NOT_IN_TIME_WINDOW: return "not in time window (the receiver restarted)";
    case SNMPERR_UNKNOWN_USER_NAME: return "unknown user name";
    case SNMPERR_AUTHENTICATION_FAILURE: return "wrong digest (the authentication password?)";
    case SNMPERR_DECRYPTION_ERR: return "decryption error (the privacy password?)";
    case SNMPERR_UNSUPPORTED_SEC_LEVEL: return "unsupported security level";
    }
    return snmp_api_errstring(type ? type : SNMPERR_UNKNOWN_REPORT);
}

/*
 * After a failed inform, forgets what the executor knew of a discovered
 * engine (its id and its boots and time), so that the next attempt
 * discovers it again: a receiver that restarted or got a new engine id
 * is found again without restarting corrald, as snmpinform(1) does on
 * each run.  net-snmp alone would not: it keeps the old engine id and,
 * when the receiver drops what it cannot place, no Report ever tells it.
 */
static void
forget_engine(struct snmp_x *x)
{
    netsnmp_session *s = snmp_sess_session(x->sess);

    if (x->version != SNMP_VERSION_3 || x->engine_id_len || !x->engine_known) return;
    if (s->securityEngineIDLen) free_enginetime(s->securityEngineID, s->securityEngineIDLen);
    x->engine_known = false;
}

static int
on_inform(int op, netsnmp_session *sp, int reqid, netsnmp_pdu *pdu, void *magic)
{
    struct pending *p = magic;
    struct snmp_x *x = p->x;
    char why[384];

    (void)reqid;
    (void)sp;
    if (x->closing) {
        /* snmp_sess_close() times out what is left; close() frees it */
        return 1;
    }
    switch (op) {
    case NETSNMP_CALLBACK_OP_RESEND:
    case NETSNMP_CALLBACK_OP_CONNECT: return 1; /* news, not an outcome */
    case NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE:
        /*
         * A Report: net-snmp resends after notInTimeWindow, or calls back
         * with OP_SEC_ERROR (not Debian's 5.9.3, see on_probe); kept to say
         * why, should the inform time out.
         */
        if (pdu->command == SNMP_MSG_REPORT) {
            p->report = snmpv3_get_report_type(pdu);
            return 1;
        }
        if (pdu->errstat == SNMP_ERR_NOERROR) {
            finish(p, DELIVER_OK, NULL);
        } else {
            snprintf(why, sizeof(why), "inform to %s answered with error %s", x->target,
                     snmp_errstring((int)pdu->errstat));
            finish(p, DELIVER_RETRY, why);
        }
        break;
    case NETSNMP_CALLBACK_OP_TIMED_OUT:
        if (p->report)
            snprintf(why, sizeof(why),
                     "inform to %s: no acknowledgement after %d tries of %gs; "
                     "the receiver answered with a report: %s",
                     x->target, x->retries + 1, x->timeout, report_text(p->report));
        else
            snprintf(why, sizeof(why),
                     "inform to %s: no acknowledgement after %d tries of %gs (no answer)",
                     x->target, x->retries + 1, x->timeout);
        forget_engine(x);
        finish(p, DELIVER_RETRY, why);
        break;
    case NETSNMP_CALLBACK_OP_SEC_ERROR:
        if (pdu && pdu->command == SNMP_MSG_REPORT)
            snprintf(why, sizeof(why),
                     "SNMPv3 inform to %s: the receiver answered with a report: %s", x->target,
                     report_text(snmpv3_get_report_type(pdu)));
        else
            snprintf(why, sizeof(why), "SNMPv3 inform to %s: authentication error: %s", x->target,
                     snmp_api_errstring(snmp_sess_session(x->sess)->s_snmp_errno));
        forget_engine(x);
        finish(p, DELIVER_RETRY, why);
        break;
    default: finish(p, DELIVER_RETRY, error_text(x, why, sizeof(why), "inform", 0)); break;
    }
    return 1;
}

/* Sends a built inform; the outcome arrives in on_inform(). */
static void
send_inform(struct snmp_x *x, struct pending *p)
{
    netsnmp_pdu *pdu = p->pdu;
    char why[256];

    p->pdu = NULL;
    list_remove(&x->waiting, p);
    p->state = P_SENT;
    list_push(&x->sent, p);
    if (!snmp_sess_async_send(x->sess, pdu, on_inform, p)) {
        int e = snmp_sess_session(x->sess)->s_snmp_errno;
        snmp_free_pdu(pdu);
        /* on_inform may have been told already; if not, say why here */
        finish(p, e == SNMPERR_TOO_LONG ? DELIVER_FAIL : DELIVER_RETRY,
               error_text(x, why, sizeof(why), "inform", 0));
    }
}

static void
fail_waiting(struct snmp_x *x, const char *why)
{
    while (x->waiting) finish(x->waiting, DELIVER_RETRY, why);
}

/*
 * The probe's callbacks.  For the Report that answers it net-snmp calls
 * back twice, OP_SEC_ERROR ("unknown engine id") and OP_RECEIVED_MESSAGE,
 * in an order that differs between upstream and Debian's 5.9.3 (patch
 * do_not_callback_for_failed_reports); so every call is handled on its
 * own and any of them may be the last.
 */
static int
on_probe(int op, netsnmp_session *sp, int reqid, netsnmp_pdu *pdu, void *magic)
{
    struct snmp_x *x = magic;
    char why[256];

    (void)reqid;
    if (op == NETSNMP_CALLBACK_OP_RESEND || op == NETSNMP_CALLBACK_OP_CONNECT) return 1;
    if (x->closing) return 1; /* snmp_sess_close() times the probe out */
    if (pdu && pdu->command == SNMP_MSG_REPORT && pdu->securityEngineIDLen && !x->engine_known) {
        /*
         * The Report names the receiver's engine.  Taking it here (net-snmp
         * would too, but only after the callbacks) lets the USM entry with
         * keys localized to that engine be made before the informs go out.
         */
        sp->securityEngineID = netsnmp_memdup(pdu->securityEngineID, pdu->securityEngineIDLen);
        sp->securityEngineIDLen = pdu->securityEngineIDLen;
        if (!sp->contextEngineIDLen) {
            sp->contextEngineID = netsnmp_memdup(pdu->securityEngineID, pdu->securityEngineIDLen);
            sp->contextEngineIDLen = pdu->securityEngineIDLen;
        }
        usm_acquire(x);
        x->engine_known = true;
    }
    if (!x->probing) return 1;
    x->probing = false;
    if (!x->engine_known) {
        free(x->probe_error);
        x->probe_error =
            xstrdup(error_text(x, why, sizeof(why), "SNMPv3 engine discovery",
                               op == NETSNMP_CALLBACK_OP_TIMED_OUT ? SNMPERR_TIMEOUT : 0));
    }
    return 1;
}

/* RFC 3414 4: an unauthenticated request with an empty engine id; the Report names it. */
static void
start_probe(struct snmp_x *x)
{
    netsnmp_pdu *pdu = snmp_pdu_create(SNMP_MSG_GET);
    netsnmp_session *s = snmp_sess_session(x->sess);
    char why[256];

    /* a previous engine's id and USM entry are stale once we probe again */
    if (s->securityEngineIDLen) {
        usm_release(x);
        SNMP_FREE(s->securityEngineID);
        s->securityEngineIDLen = 0;
        SNMP_FREE(s->contextEngineID);
        s->contextEngineIDLen = 0;
    }
    pdu->version = SNMP_VERSION_3;
    pdu->securityName = strdup("");
    pdu->securityNameLen = 0;
    pdu->securityLevel = SNMP_SEC_LEVEL_NOAUTH;
    pdu->securityModel = SNMP_SEC_MODEL_USM;
    x->probing = true;
    if (!snmp_sess_async_send(x->sess, pdu, on_probe, x)) {
        snmp_free_pdu(pdu);
        if (x->probing) { /* on_probe was not told */
            x->probing = false;
            free(x->probe_error);
            x->probe_error = xstrdup(error_text(x, why, sizeof(why), "SNMPv3 engine discovery", 0));
        }
    }
}

/* Watches the socket while answers are due, and arms the timer for net-snmp's next deadline. */
static void on_readable(uv_poll_t *h, int status, int events);
static void on_timer(uv_timer_t *t);

static void
reschedule(struct snmp_x *x)
{
    netsnmp_large_fd_set fds;
    struct timeval tv = {0, 0};
    int numfds = 0, block = 1;

    if (x->closing) return;
    if (!x->sent && !x->probing) {
        if (x->polling) uv_poll_stop(&x->poll);
        x->polling = false;
        uv_timer_stop(&x->timer);
        return;
    }
    if (!x->polling) uv_poll_start(&x->poll, UV_READABLE, on_readable);
    x->polling = true;
    netsnmp_large_fd_set_init(&fds, x->fd + 1);
    snmp_sess_select_info2_flags(x->sess, &numfds, &fds, &tv, &block, NETSNMP_SELECT_NOALARMS);
    netsnmp_large_fd_set_cleanup(&fds);
    if (block) {
        uv_timer_stop(&x->timer);
    } else {
        /* rounded up: a timer that fires early would find nothing due and spin */
        uint64_t ms = (uint64_t)tv.tv_sec * 1000 + ((uint64_t)tv.tv_usec + 999) / 1000 + 1;
        uv_timer_start(&x->timer, on_timer, ms, 0);
    }
}

/*
 * Runs after every entry point: sends the informs that waited for the
 * engine id, reports what finished, and re-arms the poll and the timer.
 */
static void
after(struct snmp_x *x)
{
    struct pending *p;

    if (x->in_after) {
        x->again = true;
        return;
    }
    x->in_after = true;
    do {
        x->again = false;
        if (!x->closing && x->waiting) {
            if (x->engine_known) {
                while (x->waiting && !x->closing) send_inform(x, x->waiting);
            } else if (x->probe_error) {
                /* one failed discovery fails the informs that waited for it, no more */
                fail_waiting(x, x->probe_error);
                free(x->probe_error);
                x->probe_error = NULL;
            } else if (!x->probing) {
                start_probe(x);
                x->again = true;
            }
        } else {
            free(x->probe_error);
            x->probe_error = NULL;
        }
        while (!x->closing && (p = x->completed)) {
            x->completed = p->next;
            if (!x->completed) x->completed_tail = NULL;
            p->done(p->token, p->result, p->reason);
            pending_free(p);
        }
    } while (x->again && !x->closing);
    x->in_after = false;
    reschedule(x);
}

static void
on_readable(uv_poll_t *h, int status, int events)
{
    struct snmp_x *x = h->data;
    netsnmp_large_fd_set fds;

    (void)status;
    (void)events;
    if (x->closing) return;
    netsnmp_large_fd_set_init(&fds, x->fd + 1);
    NETSNMP_LARGE_FD_SET(x->fd, &fds);
    snmp_sess_read2(x->sess, &fds);
    netsnmp_large_fd_set_cleanup(&fds);
    after(x);
}

static void
on_timer(uv_timer_t *t)
{
    struct snmp_x *x = t->data;

    if (x->closing) return;
    snmp_sess_timeout(x->sess); /* resends, or OP_TIMED_OUT once retries are spent */
    after(x);
}

static void
snmp_executor_deliver(void *impl, const struct alert *a, deliver_done_fn done, void *token)
{
    struct snmp_x *x = impl;
    const char *why;
    netsnmp_pdu *pdu;
    struct pending *p;
    char buf[512];

    if (x->closing) {
        done(token, DELIVER_RETRY, "executor closing");
        return;
    }
    if ((why = build(x, a))) {
        /* why lives in x->scratch, which a delivery started from done() would reuse */
        snprintf(buf, sizeof(buf), "%s", why);
        done(token, DELIVER_FAIL, buf);
        return;
    }
    pdu = make_pdu(x);
    if (!x->inform) {
        if (snmp_sess_async_send(x->sess, pdu, NULL, NULL)) {
            done(token, DELIVER_OK, NULL); /* a trap is done once the socket has it */
        } else {
            int e = snmp_sess_session(x->sess)->s_snmp_errno;
            snmp_free_pdu(pdu);
            done(token, e == SNMPERR_TOO_LONG ? DELIVER_FAIL : DELIVER_RETRY,
                 error_text(x, buf, sizeof(buf), "trap", 0));
        }
        return;
    }
    p = xcalloc(1, sizeof(*p));
    p->x = x;
    p->state = P_WAITING;
    p->pdu = pdu;
    p->done = done;
    p->token = token;
    list_push(&x->waiting, p);
    after(x);
}

/* ---- render ---- */

static void
put_quoted(struct buf *out, const struct buf *b)
{
    size_t i;

    buf_putc(out, '"');
    for (i = 0; i < b->len; i++) {
        if (b->p[i] == '\n') {
            buf_puts(out, "\\n"); /* corralAlertEvidence's lines: one varbind, one line */
            continue;
        }
        if (b->p[i] == '"' || b->p[i] == '\\') buf_putc(out, '\\');
        buf_putc(out, b->p[i]);
    }
    buf_putc(out, '"');
}

static void
put_engine_id(struct buf *out, const u_char *id, size_t len)
{
    size_t i;

    buf_puts(out, "0x");
    for (i = 0; i < len; i++) buf_printf(out, "%02x", id[i]);
}

static void
snmp_executor_render(void *impl, const struct alert *a, struct buf *out)
{
    struct snmp_x *x = impl;
    const char *why;
    size_t i;

    buf_printf(out, "snmp %s: %s %s to %s\n", x->name,
               x->version == SNMP_VERSION_3 ? "SNMPv3" : "SNMPv2c", x->inform ? "inform" : "trap",
               x->target);
    if (x->version == SNMP_VERSION_3) {
        static const char *const levels[] = {"", "noAuthNoPriv", "authNoPriv", "authPriv"};
        buf_printf(out, "security: user %s, %s", x->user, levels[x->seclevel]);
        if (x->seclevel >= SNMP_SEC_LEVEL_AUTHNOPRIV) buf_printf(out, ", auth %s", x->auth_name);
        if (x->seclevel == SNMP_SEC_LEVEL_AUTHPRIV) buf_printf(out, ", priv %s", x->priv_name);
        buf_putc(out, '\n');
        buf_puts(out, "engine-id: ");
        if (x->engine_id_len) {
            put_engine_id(out, x->engine_id, x->engine_id_len);
            buf_printf(out, " (%s)\n", x->engine_id_origin);
        } else {
            buf_puts(out, "the receiver's, discovered\n");
        }
    }
    if ((why = build(x, a))) {
        buf_printf(out, "error: %s (the alert would go to the dead letters)\n", why);
        return;
    }
    for (i = 0; i < x->nvb; i++) {
        const struct vb *v = &x->vb[i];
        buf_puts(out, "varbind: ");
        put_oid(out, v->name, v->len);
        buf_printf(out, " %c ", v->type);
        switch (v->type) {
        case 's': put_quoted(out, &v->bytes); break;
        case 'x': {
            size_t k;
            for (k = 0; k < v->bytes.len; k++)
                buf_printf(out, "%02x", (unsigned char)v->bytes.p[k]);
            break;
        }
        case 'i':
            buf_printf(out, "%ld", v->num);
            if (v->label == field_label[F_SEVERITY] && executor_severity_name((int)v->num))
                buf_printf(out, " (%s)", executor_severity_name((int)v->num));
            break;
        case 'u':
        case 'c': buf_printf(out, "%lu", (unsigned long)v->num); break;
        case 't':
            if (i == 0)
                buf_puts(out, "(uptime when sent)");
            else
                buf_printf(out, "%lu", (unsigned long)v->num);
            break;
        case 'o':
            put_oid(out, v->oval, v->olen);
            if (i == 1 && v->olen == x->base_len + 2 &&
                memcmp(v->oval, x->base, x->base_len * sizeof(oid)) == 0 &&
                v->oval[x->base_len] == 0 && v->oval[x->base_len + 1] <= 2 &&
                v->oval[x->base_len + 1] >= 1)
                buf_puts(out, v->oval[x->base_len + 1] == 1 ? " (corralAlert)" : " (corralClear)");
            break;
        case 'a': {
            char tmp[INET_ADDRSTRLEN];
            struct in_addr ia;
            ia.s_addr = v->ip;
            buf_puts(out, inet_ntop(AF_INET, &ia, tmp, sizeof(tmp)) ? tmp : "?");
            break;
        }
        }
        if (v->label) {
            buf_printf(out, " # %s", v->label);
            if (v->index)
                buf_printf(out, ".%u", v->index);
            else if (i >= 2)
                buf_puts(out, ".0");
        }
        buf_putc(out, '\n');
    }
}

/* ---- close ---- */

static void
snmp_free(struct snmp_x *x)
{
    size_t i;

    if (x->sess) {
        usm_release(x);
        x->closing = true;
        snmp_sess_close(x->sess);
    }
    while (x->sent) {
        struct pending *p = x->sent;
        list_remove(&x->sent, p);
        pending_free(p);
    }
    while (x->waiting) {
        struct pending *p = x->waiting;
        list_remove(&x->waiting, p);
        pending_free(p);
    }
    while (x->completed) {
        struct pending *p = x->completed;
        x->completed = p->next;
        pending_free(p);
    }
    for (i = 0; i < x->nvbs; i++) template_free(x->vbs[i].value);
    free(x->vbs);
    for (i = 0; i < x->capvb; i++) buf_free(&x->vb[i].bytes);
    free(x->vb);
    template_free(x->trap_oid);
    template_free(x->clear_oid);
    buf_free(&x->scratch);
    free(x->probe_error);
    free(x->name);
    free(x->target);
    free(x->user);
    free(x);
}

static void
handle_closed(uv_handle_t *h)
{
    struct snmp_x *x = h->data;
    void (*done)(void *) = x->closed;
    void *arg = x->closed_arg;

    if (--x->handles > 0) return;
    snmp_free(x);
    if (done) done(arg);
}

/* Informs not yet acknowledged are abandoned: they stay in the queue's spool. */
static void
snmp_executor_close(void *impl, void (*done)(void *arg), void *arg)
{
    struct snmp_x *x = impl;

    x->closing = true;
    x->closed = done;
    x->closed_arg = arg;
    /* stop watching before net-snmp closes the socket */
    uv_close((uv_handle_t *)&x->poll, handle_closed);
    uv_close((uv_handle_t *)&x->timer, handle_closed);
}

static unsigned
snmp_executor_max_inflight(void *impl)
{
    (void)impl;
    return INFLIGHT_MAX;
}

const struct executor_kind snmp_executor = {
    "snmp",
    snmp_executor_open,
    snmp_executor_deliver,
    snmp_executor_render,
    snmp_executor_close,
    snmp_executor_max_inflight,
    NULL,
    NULL,
};
