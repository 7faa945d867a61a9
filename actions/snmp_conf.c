/*
 * snmp_conf: reads and checks an <snmp> executor's configuration (see
 * corrald.conf(5)): the target and what every version takes, then the
 * SNMPv2c community or the SNMPv3 user, security level, protocols,
 * passwords and engine id, then the <varbind> children.  The secrets go to
 * a struct snmp_keys that snmp.c wipes once the session has its keys.
 */
#include "actions/snmp_int.h"
#include "engine/hash.h"
#include "engine/template.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <net-snmp/library/keytools.h>
#include <net-snmp/library/scapi.h>
#include <net-snmp/library/transform_oids.h>

/* The attributes of every version; v3_attrs are known too. */
static const char *const known_attrs[] = {
    "target",  "version",  "inform",   "community-file", "community-env",
    "timeout", "retries",  "trap-oid", "clear-trap-oid", "base-oid",
    "values",  "evidence", NULL,
};

static const char *const v3_attrs[] = {
    "user",
    "security-level",
    "auth-protocol",
    "auth-password-file",
    "auth-password-env",
    "priv-protocol",
    "priv-password-file",
    "priv-password-env",
    "engine-id",
    NULL,
};

/* A <varbind oid="..." type="s" value="TEMPLATE"/> child. */
static void
read_varbind(struct snmp_x *x, const struct exconf_reader *r, const struct exconf_node *n)
{
    static const char *const attrs[] = {"oid", "type", "value", NULL};
    struct vb_conf *c;
    const char *o = exconf_node_attr(n, "oid"), *t = exconf_node_attr(n, "type");
    const char *v = exconf_node_attr(n, "value");
    const char *text, *why;
    size_t len;
    struct vb tmp;

    exconf_check_node_attrs(r, n, attrs);
    if (x->nvbs == VARBINDS_MAX) {
        exconf_error_at(r, n->line, "more than %d <varbind> elements", VARBINDS_MAX);
        return;
    }
    c = &x->vbs[x->nvbs];
    memset(c, 0, sizeof(*c));
    if (!o || !snmp_oid_parse(o, strlen(o), c->name, &c->len)) {
        exconf_error_at(r, n->line, "<varbind> needs oid=\"1.3.6.1...\" (numeric)%s%s",
                        o ? ", not " : "", o ? o : "");
        return;
    }
    c->type = 's';
    if (t) {
        if (strlen(t) != 1 || !strchr("siucaotx", t[0])) {
            exconf_error_at(r, n->line, "<varbind> type=\"%s\": use s, i, u, c, a, o, t or x", t);
            return;
        }
        c->type = t[0];
    }
    if (!v) v = n->text;
    if (!v) {
        exconf_error_at(r, n->line, "<varbind> needs value=\"TEMPLATE\"");
        return;
    }
    c->value = exconf_compile(r, n->line, "<varbind> value", v);
    if (!c->value) return;
    /* A literal value is checked now rather than at every delivery. */
    if (template_is_literal(c->value, &text, &len)) {
        memset(&tmp, 0, sizeof(tmp));
        why = snmp_vb_set(c->type, text, len, &tmp);
        buf_free(&tmp.bytes);
        if (why) {
            exconf_error_at(r, n->line, "<varbind> value \"%s\": %s", v, why);
            template_free(c->value);
            return;
        }
    }
    x->nvbs++;
}

static void
read_varbinds(struct snmp_x *x, const struct exconf_reader *r)
{
    size_t i;

    for (i = 0; i < r->cfg->nchildren; i++)
        if (exconf_child_is(r, &r->cfg->children[i], "varbind"))
            read_varbind(x, r, &r->cfg->children[i]);
}

/* What every version takes: where to, trap or inform, retries, the OIDs. */
static void
read_common(struct snmp_x *x, const struct exconf_reader *r)
{
    static const char *const versions[] = {"2c", "3", NULL};
    int version = 0;
    unsigned long retries = (unsigned long)x->retries;
    const char *v;

    if ((v = exconf_attr(r->cfg, "target")))
        x->target = xstrdup(v);
    else
        exconf_error(r, "target=\"udp:HOST:PORT\" is required");
    exconf_enum(r, "version", versions, &version);
    x->version = version == 0 ? SNMP_VERSION_2c : SNMP_VERSION_3;
    exconf_bool(r, "inform", &x->inform);
    exconf_bool(r, "values", &x->values);
    exconf_bool(r, "evidence", &x->evidence);
    exconf_duration(r, "timeout", false, 3600, &x->timeout);
    exconf_uint(r, "retries", 0, 20, &retries);
    x->retries = (int)retries;
    if ((v = exconf_attr(r->cfg, "base-oid")) &&
        (!snmp_oid_parse(v, strlen(v), x->base, &x->base_len) || x->base_len > MAX_OID_LEN - 8))
        exconf_error(r, "bad base-oid=\"%s\" (a numeric OID such as 1.3.6.1.4.1.32473)", v);
    x->trap_oid = exconf_template(r, "trap-oid", NULL);
    x->clear_oid = exconf_template(r, "clear-trap-oid", NULL);
}

static void
read_v2c(struct snmp_x *x, const struct exconf_reader *r, struct snmp_keys *k)
{
    size_t i;

    (void)x;
    for (i = 0; v3_attrs[i]; i++)
        if (exconf_attr(r->cfg, v3_attrs[i]))
            exconf_error(r, "%s is an SNMPv3 setting (add version=\"3\")", v3_attrs[i]);
    if (!exconf_secret_given(r, "community"))
        exconf_error(r, "community-file or community-env is required for SNMPv2c");
    else
        k->community = exconf_secret(r, "community");
}

/* An SNMPv3 password: required, and long enough for RFC 3414's key derivation. */
static char *
read_password(const struct exconf_reader *r, const char *attr)
{
    size_t before = r->err->len;
    char *p = exconf_secret(r, attr);

    if (!p && r->err->len == before) exconf_error(r, "%s-file or %s-env is required", attr, attr);
    if (p && strlen(p) < USM_LENGTH_P_MIN) {
        exconf_error(r, "the %s is shorter than %d characters (SNMPv3 requires at least %d)", attr,
                     USM_LENGTH_P_MIN, USM_LENGTH_P_MIN);
        exconf_secret_free(p);
        p = NULL;
    }
    return p;
}

/* auth-protocol and priv-protocol (names compared without case). */
static void
read_protocols(struct snmp_x *x, const struct exconf_reader *r, struct snmp_keys *k)
{
    static const struct {
        const char *name;
        const oid *proto;
        size_t len;
    } auths[] = {
        {"SHA", usmHMACSHA1AuthProtocol, OID_LENGTH(usmHMACSHA1AuthProtocol)},
        {"SHA-1", usmHMACSHA1AuthProtocol, OID_LENGTH(usmHMACSHA1AuthProtocol)},
        {"SHA-224", usmHMAC128SHA224AuthProtocol, OID_LENGTH(usmHMAC128SHA224AuthProtocol)},
        {"SHA-256", usmHMAC192SHA256AuthProtocol, OID_LENGTH(usmHMAC192SHA256AuthProtocol)},
        {"SHA-384", usmHMAC256SHA384AuthProtocol, OID_LENGTH(usmHMAC256SHA384AuthProtocol)},
        {"SHA-512", usmHMAC384SHA512AuthProtocol, OID_LENGTH(usmHMAC384SHA512AuthProtocol)},
        {"MD5", usmHMACMD5AuthProtocol, OID_LENGTH(usmHMACMD5AuthProtocol)},
    };
    const char *v;
    size_t j;

    x->auth_name = auths[0].name;
    k->auth_proto = auths[0].proto;
    k->auth_len = auths[0].len;
    if ((v = exconf_attr(r->cfg, "auth-protocol"))) {
        for (j = 0; j < sizeof(auths) / sizeof(auths[0]); j++)
            if (strcasecmp(v, auths[j].name) == 0) break;
        if (j == sizeof(auths) / sizeof(auths[0])) {
            exconf_error(
                r, "bad auth-protocol=\"%s\" (SHA, SHA-224, SHA-256, SHA-384, SHA-512 or MD5)", v);
        } else {
            x->auth_name = auths[j].name;
            k->auth_proto = auths[j].proto;
            k->auth_len = auths[j].len;
        }
    }
    x->priv_name = "AES";
    k->priv_proto = usmAESPrivProtocol;
    k->priv_len = OID_LENGTH(usmAESPrivProtocol);
    if ((v = exconf_attr(r->cfg, "priv-protocol"))) {
        if (strcasecmp(v, "DES") == 0) {
            x->priv_name = "DES";
            k->priv_proto = usmDESPrivProtocol;
            k->priv_len = OID_LENGTH(usmDESPrivProtocol);
        } else if (strcasecmp(v, "AES") != 0 && strcasecmp(v, "AES-128") != 0 &&
                   strcasecmp(v, "AES128") != 0) {
            exconf_error(r, "bad priv-protocol=\"%s\" (AES, AES-128 or DES)", v);
        }
    }
}

/*
 * The engine id of traps when engine-id is not given: the RFC 3411 form
 * "enterprise number, 5 (octets), 12 octets", the enterprise being the
 * one of base-oid (32473 by default) and the octets the first 12 of
 * SHA-1("HOSTNAME/EXECUTOR").  The same executor on the same host keeps
 * its id across restarts, and two hosts running the same configuration
 * get different ones, as SNMPv3 requires of two engines.
 */
static void
derive_engine_id(struct snmp_x *x)
{
    char host[256];
    struct buf in = BUF_INIT;
    u_char md[64];
    size_t mdlen = sizeof(md);
    uint32_t pen = DEFAULT_PEN;
    static const oid enterprises[] = {1, 3, 6, 1, 4, 1};

    if (x->base_len > 6 && memcmp(x->base, enterprises, sizeof(enterprises)) == 0)
        pen = (uint32_t)x->base[6];
    if (gethostname(host, sizeof(host)) != 0) strcpy(host, "localhost");
    host[sizeof(host) - 1] = '\0';
    buf_printf(&in, "%s/%s", host, x->name);
    if (sc_hash(usmHMACSHA1AuthProtocol, OID_LENGTH(usmHMACSHA1AuthProtocol), (const u_char *)in.p,
                in.len, md, &mdlen) != SNMPERR_SUCCESS ||
        mdlen < 12) {
        /* no SHA-1 in this net-snmp: any stable mixing of the same input does */
        uint64_t h = HASH_FNV1A_BASIS;
        unsigned char i;
        for (i = 0; i < 12; i++) {
            h = hash_fnv1a(hash_fnv1a(h, in.p, in.len), &i, 1);
            md[i] = (u_char)(h >> 56);
        }
    }
    x->engine_id[0] = (u_char)(0x80 | ((pen >> 24) & 0x7f));
    x->engine_id[1] = (u_char)(pen >> 16);
    x->engine_id[2] = (u_char)(pen >> 8);
    x->engine_id[3] = (u_char)pen;
    x->engine_id[4] = 5;
    memcpy(x->engine_id + 5, md, 12);
    x->engine_id_len = 17;
    x->engine_id_origin = "derived from the host and executor names";
    buf_free(&in);
}
/* engine-id, or one derived for traps; informs discover the receiver's. */
static void
read_engine_id(struct snmp_x *x, const struct exconf_reader *r)
{
    const char *v = exconf_attr(r->cfg, "engine-id");
    struct buf id = BUF_INIT;

    if (!v) {
        if (!x->inform) derive_engine_id(x);
        return;
    }
    if (!snmp_hex_parse(v, strlen(v), &id, sizeof(x->engine_id) + 1) || id.len < 5 || id.len > 32) {
        exconf_error(r, "bad engine-id=\"%s\" (5 to 32 octets in hex, such as 0x80007ed904...)", v);
    } else {
        memcpy(x->engine_id, id.p, id.len);
        x->engine_id_len = id.len;
        x->engine_id_origin = "engine-id";
    }
    buf_free(&id);
}

static void
read_v3(struct snmp_x *x, const struct exconf_reader *r, struct snmp_keys *k)
{
    /* in the order of SNMP_SEC_LEVEL_NOAUTH (1), _AUTHNOPRIV (2), _AUTHPRIV (3) */
    static const char *const levels[] = {"noAuthNoPriv", "authNoPriv", "authPriv", NULL};
    int level = SNMP_SEC_LEVEL_AUTHPRIV - 1;
    const char *v;

    if (exconf_secret_given(r, "community"))
        exconf_error(r, "SNMPv3 uses user and passwords, not a community");
    if ((v = exconf_attr(r->cfg, "user")) && *v)
        x->user = xstrdup(v);
    else
        exconf_error(r, "user is required for SNMPv3");
    exconf_enum(r, "security-level", levels, &level);
    x->seclevel = level + 1;
    read_protocols(x, r, k);
    if (x->seclevel >= SNMP_SEC_LEVEL_AUTHNOPRIV)
        k->auth_pass = read_password(r, "auth-password");
    else if (exconf_secret_given(r, "auth-password"))
        exconf_error(r, "auth-password is not used with security-level=\"noAuthNoPriv\"");
    if (x->seclevel == SNMP_SEC_LEVEL_AUTHPRIV)
        k->priv_pass = read_password(r, "priv-password");
    else if (exconf_secret_given(r, "priv-password"))
        exconf_error(r, "priv-password is only used with security-level=\"authPriv\"");
    read_engine_id(x, r);
}

bool
snmp_conf_read(struct snmp_x *x, const struct exconf_reader *r, struct snmp_keys *k)
{
    static const oid default_base[] = {1, 3, 6, 1, 4, 1, DEFAULT_PEN};
    size_t before = r->err->len;

    x->name = xstrdup(r->cfg->name ? r->cfg->name : "snmp");
    x->version = SNMP_VERSION_2c;
    x->timeout = 5;
    x->retries = 2;
    x->values = true;
    x->seclevel = SNMP_SEC_LEVEL_AUTHPRIV;
    x->auth_name = "SHA";
    x->priv_name = "AES";
    memcpy(x->base, default_base, sizeof(default_base));
    x->base_len = OID_LENGTH(default_base);
    x->vbs = xcalloc(VARBINDS_MAX, sizeof(*x->vbs));

    exconf_check_attrs(r, known_attrs, v3_attrs);
    read_varbinds(x, r);
    read_common(x, r);
    if (x->version == SNMP_VERSION_2c)
        read_v2c(x, r, k);
    else
        read_v3(x, r, k);
    return r->err->len == before;
}

void
snmp_keys_free(struct snmp_keys *k)
{
    exconf_secret_free(k->community);
    exconf_secret_free(k->auth_pass);
    exconf_secret_free(k->priv_pass);
    k->community = k->auth_pass = k->priv_pass = NULL;
}
