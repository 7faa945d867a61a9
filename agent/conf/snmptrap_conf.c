/*
 * snmptrap_conf: the configuration of an <snmp-trap> input (in_snmptrap.c):
 * the element's reading, copy and comparison for conf.c, and the SNMPv3
 * keys, which the process that holds secrets derives from the password
 * files (snmptrap_localize) before the engine process exists: the engine
 * gets keys localized to engine IDs, never a password.
 */
#include "agent/conf/snmptrap_conf.h"
#include "agent/conf/conf.h"
#include "engine/strlist.h"
#include "engine/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>
#include <net-snmp/library/keytools.h>
#include <net-snmp/library/scapi.h>
#include <net-snmp/library/snmpusm.h>

/* ---- configuration ---- */

static char *
attr(const xmlNode *n, const char *name)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    char *s;
    if (!v) return NULL;
    s = xstrdup((const char *)v);
    xmlFree(v);
    return s;
}

static bool
same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int
facility_code(const char *s)
{
    static const char *const names[] = {
        "kern",   "user",   "mail",     "daemon", "auth",   "syslog",   "lpr",     "news",
        "uucp",   "cron",   "authpriv", "ftp",    "ntp",    "security", "console", "solaris-cron",
        "local0", "local1", "local2",   "local3", "local4", "local5",   "local6",  "local7"};
    size_t i;
    for (i = 0; i < sizeof(names) / sizeof(*names); i++)
        if (strcmp(s, names[i]) == 0) return (int)i;
    return -1;
}

static int
severity_code(const char *s)
{
    static const char *const names[] = {"emerg",   "alert",  "crit", "err",
                                        "warning", "notice", "info", "debug"};
    size_t i;
    for (i = 0; i < sizeof(names) / sizeof(*names); i++)
        if (strcmp(s, names[i]) == 0) return (int)i;
    return -1;
}

static double
number(const xmlNode *n, const char *name, double dflt, struct buf *err)
{
    char *v = attr(n, name), *end;
    double d = dflt;
    if (!v) return dflt;
    d = strtod(v, &end);
    if (*end || d < 0) {
        buf_printf(err, "bad %s \"%s\" (a number of datagrams a second)\n", name, v);
        d = dflt;
    }
    free(v);
    return d;
}

struct snmptrap_conf *
snmptrap_conf_read(const xmlNode *n, struct buf *err)
{
    struct snmptrap_conf *c = xcalloc(1, sizeof(*c));
    const xmlNode *k;
    char *v;
    int fac = 16, sev = 5; /* local0.notice */
    size_t ucap = 0;
    unsigned char eid[32];

    if ((v = attr(n, "community"))) {
        strlist_split(v, &c->communities, &c->ncommunities);
        free(v);
    }
    c->engine_id = attr(n, "engine-id");
    if (c->engine_id && !snmptrap_engine_id(c, eid))
        buf_printf(err, "bad engine-id \"%s\" (5 to 32 bytes in hex, 0x...)\n", c->engine_id);
    c->mibs = attr(n, "mibs");
    c->host_map = attr(n, "host-map");
    if ((v = attr(n, "facility"))) {
        if ((fac = facility_code(v)) < 0) {
            buf_printf(err, "unknown facility \"%s\"\n", v);
            fac = 16;
        }
        free(v);
    }
    if ((v = attr(n, "severity"))) {
        if ((sev = severity_code(v)) < 0) {
            buf_printf(err, "unknown severity \"%s\"\n", v);
            sev = 5;
        }
        free(v);
    }
    c->pri = fac * 8 + sev;
    c->rate = number(n, "rate", 1000, err);
    c->burst = number(n, "burst", c->rate * 2, err);
    if (c->rate > 0 && c->burst < 1) c->burst = 1;

    for (k = n->children; k; k = k->next) {
        struct snmptrap_user *u;
        if (k->type != XML_ELEMENT_NODE || strcmp((const char *)k->name, "user") != 0) continue;
        c->users = xgrow(c->users, &ucap, c->nusers + 1, sizeof(*c->users));
        u = &c->users[c->nusers++];
        memset(u, 0, sizeof(*u));
        u->line = (int)xmlGetLineNo(k);
        u->name = attr(k, "name");
        u->auth = attr(k, "auth");
        u->priv = attr(k, "priv");
        u->auth_file = attr(k, "auth-password-file");
        u->priv_file = attr(k, "priv-password-file");
        u->engine_ids = attr(k, "engine-id");
        if (!u->name || !*u->name) buf_printf(err, "a user needs a name\n");
        if (u->auth && usm_lookup_auth_type(u->auth) < 0)
            buf_printf(err, "user %s: unknown auth protocol \"%s\"\n", u->name ? u->name : "?",
                       u->auth);
        if (u->priv && usm_lookup_priv_type(u->priv) < 0)
            buf_printf(err, "user %s: unknown priv protocol \"%s\"\n", u->name ? u->name : "?",
                       u->priv);
        if (u->auth && !u->auth_file)
            buf_printf(err, "user %s: auth needs auth-password-file\n", u->name ? u->name : "?");
        if (u->priv && (!u->priv_file || !u->auth))
            buf_printf(err, "user %s: priv needs auth and priv-password-file\n",
                       u->name ? u->name : "?");
        if (!u->auth && !u->priv && (u->auth_file || u->priv_file))
            buf_printf(err, "user %s: a password file without auth=\n", u->name ? u->name : "?");
    }
    return c;
}

static void
user_copy(struct snmptrap_user *d, const struct snmptrap_user *s)
{
    *d = *s;
    d->name = s->name ? xstrdup(s->name) : NULL;
    d->auth = s->auth ? xstrdup(s->auth) : NULL;
    d->priv = s->priv ? xstrdup(s->priv) : NULL;
    d->auth_file = s->auth_file ? xstrdup(s->auth_file) : NULL;
    d->priv_file = s->priv_file ? xstrdup(s->priv_file) : NULL;
    d->engine_ids = s->engine_ids ? xstrdup(s->engine_ids) : NULL;
    d->keys = NULL;
    if (s->nkeys) {
        d->keys = xmalloc(s->nkeys * sizeof(*d->keys));
        memcpy(d->keys, s->keys, s->nkeys * sizeof(*d->keys));
    }
}

struct snmptrap_conf *
snmptrap_conf_copy(const struct snmptrap_conf *s)
{
    struct snmptrap_conf *c;
    size_t i;

    if (!s) return NULL;
    c = xcalloc(1, sizeof(*c));
    *c = *s;
    c->communities = s->ncommunities ? xmalloc(s->ncommunities * sizeof(char *)) : NULL;
    for (i = 0; i < s->ncommunities; i++) c->communities[i] = xstrdup(s->communities[i]);
    c->engine_id = s->engine_id ? xstrdup(s->engine_id) : NULL;
    c->mibs = s->mibs ? xstrdup(s->mibs) : NULL;
    c->host_map = s->host_map ? xstrdup(s->host_map) : NULL;
    c->users = s->nusers ? xmalloc(s->nusers * sizeof(*c->users)) : NULL;
    for (i = 0; i < s->nusers; i++) user_copy(&c->users[i], &s->users[i]);
    return c;
}

bool
snmptrap_conf_equal(const struct snmptrap_conf *a, const struct snmptrap_conf *b)
{
    size_t i;

    if (!a || !b) return a == b;
    if (a->ncommunities != b->ncommunities || a->nusers != b->nusers || a->pri != b->pri ||
        a->rate != b->rate || a->burst != b->burst || !same(a->engine_id, b->engine_id) ||
        !same(a->mibs, b->mibs) || !same(a->host_map, b->host_map))
        return false;
    for (i = 0; i < a->ncommunities; i++)
        if (strcmp(a->communities[i], b->communities[i]) != 0) return false;
    for (i = 0; i < a->nusers; i++) {
        const struct snmptrap_user *x = &a->users[i], *y = &b->users[i];
        if (!same(x->name, y->name) || !same(x->auth, y->auth) || !same(x->priv, y->priv) ||
            !same(x->auth_file, y->auth_file) || !same(x->priv_file, y->priv_file) ||
            !same(x->engine_ids, y->engine_ids))
            return false;
    }
    return true;
}

void
snmptrap_conf_free(struct snmptrap_conf *c)
{
    size_t i;

    if (!c) return;
    for (i = 0; i < c->ncommunities; i++) free(c->communities[i]);
    free(c->communities);
    for (i = 0; i < c->nusers; i++) {
        struct snmptrap_user *u = &c->users[i];
        free(u->name);
        free(u->auth);
        free(u->priv);
        free(u->auth_file);
        free(u->priv_file);
        free(u->engine_ids);
        if (u->keys) explicit_bzero(u->keys, u->nkeys * sizeof(*u->keys));
        free(u->keys);
    }
    free(c->users);
    free(c->engine_id);
    free(c->mibs);
    free(c->host_map);
    free(c);
}

/* hex ("0x" optional) into out; its length, 0 if bad or not 5 to 32 bytes (RFC 3411) */
static size_t
hex_engine_id(const char *s, unsigned char *out)
{
    size_t n = 0;
    int hi, lo;

    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
    while (*s) {
        if (n == 32 || !isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1])) return 0;
        hi = isdigit((unsigned char)s[0]) ? s[0] - '0' : (tolower((unsigned char)s[0]) - 'a' + 10);
        lo = isdigit((unsigned char)s[1]) ? s[1] - '0' : (tolower((unsigned char)s[1]) - 'a' + 10);
        out[n++] = (unsigned char)(hi * 16 + lo);
        s += 2;
    }
    return n >= 5 ? n : 0;
}

size_t
snmptrap_engine_id(const struct snmptrap_conf *c, unsigned char *out)
{
    char host[256];
    size_t n;

    if (c->engine_id) return hex_engine_id(c->engine_id, out);
    memcpy(out, "\x80\x00\x1f\x88\x04", 5);
    if (gethostname(host, sizeof(host)) < 0) strcpy(host, "localhost");
    host[sizeof(host) - 1] = '\0';
    n = (size_t)snprintf((char *)out + 5, 27, "corrald@%s", host);
    return 5 + (n > 26 ? 26 : n);
}

/* ---- keys, in the process that holds secrets ---- */

static char *
read_password(const char *path, struct buf *err)
{
    char buf[1024];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        buf_printf(err, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0) {
        buf_printf(err, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
    buf[n] = '\0';
    if (n < 8) {
        explicit_bzero(buf, sizeof(buf));
        buf_printf(err, "%s: a password needs at least 8 characters (RFC 3414)", path);
        return NULL;
    }
    {
        char *p = xstrdup(buf);
        explicit_bzero(buf, sizeof(buf));
        return p;
    }
}

static int
localize_one(const struct snmptrap_user *u, const unsigned char *ku_auth, size_t ku_auth_len,
             const unsigned char *ku_priv, size_t ku_priv_len, const unsigned char *eid,
             size_t eidlen, struct snmptrap_key *k)
{
    int at = usm_lookup_auth_type(u->auth);
    size_t olen;
    const oid *hash = sc_get_auth_oid(at, &olen);
    size_t len;

    memset(k, 0, sizeof(*k));
    memcpy(k->eid, eid, eidlen);
    k->eidlen = eidlen;
    len = sizeof(k->auth);
    if (generate_kul(hash, (u_int)olen, eid, eidlen, ku_auth, ku_auth_len, k->auth, &len) !=
        SNMPERR_SUCCESS)
        return -1;
    k->authlen = len;
    if (u->priv) {
        int pt = usm_lookup_priv_type(u->priv);
        int need = sc_get_proper_priv_length_bytype(pt);
        unsigned char tmp[64];
        len = sizeof(tmp);
        if (generate_kul(hash, (u_int)olen, eid, eidlen, ku_priv, ku_priv_len, tmp, &len) !=
            SNMPERR_SUCCESS)
            return -1;
        /* DES takes 16 bytes: its key, then the pre-IV (RFC 3414 section 8.1.1.1) */
        if (pt == USM_CREATE_USER_PRIV_DES) need = 16;
        if (need > 0 && (size_t)need < len) len = (size_t)need;
        /* AES-192/256 need more than the hash gives: net-snmp's key extension (Blumenthal) */
        if (need > 0 && (size_t)need > len) {
            u_char *kb = xmalloc(64);
            size_t kl = len;
            memcpy(kb, tmp, len);
            if (netsnmp_extend_kul((u_int)need, (oid *)hash, (u_int)olen, pt, (u_char *)eid,
                                   (u_int)eidlen, &kb, &kl, 64) != SNMPERR_SUCCESS) {
                free(kb);
                return -1;
            }
            memcpy(tmp, kb, kl);
            len = kl;
            explicit_bzero(kb, 64);
            free(kb);
        }
        memcpy(k->priv, tmp, len);
        k->privlen = len;
        explicit_bzero(tmp, sizeof(tmp));
    }
    return 0;
}

int
snmptrap_localize(struct conf *c, struct buf *err)
{
    size_t i, j;
    int rc = 0;

    for (i = 0; i < c->ninputs; i++) {
        struct conf_input *ci = &c->inputs[i];
        unsigned char own[32];
        size_t ownlen;

        if (ci->type != CONF_IN_SNMP_TRAP || !ci->snmp) continue;
        ownlen = snmptrap_engine_id(ci->snmp, own);
        for (j = 0; j < ci->snmp->nusers; j++) {
            struct snmptrap_user *u = &ci->snmp->users[j];
            char *ap = NULL, *pp = NULL, *ids, *tok, *save = NULL;
            unsigned char ku_a[64], ku_p[64];
            size_t kal = sizeof(ku_a), kpl = sizeof(ku_p), olen;
            const oid *hash;
            struct buf e = BUF_INIT;

            if (!u->auth || u->keys) continue;
            hash = sc_get_auth_oid(usm_lookup_auth_type(u->auth), &olen);
            if (!(ap = read_password(u->auth_file, &e)) ||
                (u->priv && !(pp = read_password(u->priv_file, &e))) ||
                generate_Ku(hash, (u_int)olen, (u_char *)ap, strlen(ap), ku_a, &kal) !=
                    SNMPERR_SUCCESS ||
                (pp && generate_Ku(hash, (u_int)olen, (u_char *)pp, strlen(pp), ku_p, &kpl) !=
                           SNMPERR_SUCCESS)) {
                if (!e.len) buf_printf(&e, "cannot derive the keys");
                buf_printf(err, "%s:%d: user %s: %s\n", c->file ? c->file : "-", u->line, u->name,
                           buf_str(&e));
                rc = -1;
            } else {
                /* its own engine ID (informs), then each sender's (traps) */
                u->keys = xcalloc(1, sizeof(*u->keys));
                if (localize_one(u, ku_a, kal, ku_p, kpl, own, ownlen, &u->keys[0]) < 0) rc = -1;
                u->nkeys = 1;
                ids = u->engine_ids ? xstrdup(u->engine_ids) : NULL;
                for (tok = ids ? strtok_r(ids, " ,", &save) : NULL; tok;
                     tok = strtok_r(NULL, " ,", &save)) {
                    unsigned char eid[32];
                    size_t el = hex_engine_id(tok, eid);
                    if (!el) {
                        buf_printf(err, "%s:%d: user %s: bad engine-id \"%s\"\n",
                                   c->file ? c->file : "-", u->line, u->name, tok);
                        rc = -1;
                        continue;
                    }
                    u->keys = xrealloc(u->keys, (u->nkeys + 1) * sizeof(*u->keys));
                    if (localize_one(u, ku_a, kal, ku_p, kpl, eid, el, &u->keys[u->nkeys]) < 0)
                        rc = -1;
                    u->nkeys++;
                }
                free(ids);
            }
            if (ap) explicit_bzero(ap, strlen(ap));
            if (pp) explicit_bzero(pp, strlen(pp));
            free(ap);
            free(pp);
            explicit_bzero(ku_a, sizeof(ku_a));
            explicit_bzero(ku_p, sizeof(ku_p));
            buf_free(&e);
        }
    }
    return rc;
}
