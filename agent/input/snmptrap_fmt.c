/*
 * snmptrap_fmt: a decoded SNMP trap or inform as one syslog line (see
 * snmptrap_fmt.h), and snmptrapd's output read back into a PDU.
 *
 * Names are looked up in net-snmp's MIB tree (get_tree): the deepest node
 * on the OID's path names it when it is the OID itself or a leaf object
 * whose instance index is the rest; anything else is written numerically,
 * so that an OID no MIB defines never borrows a parent's name.
 */
#include "agent/input/snmptrap_fmt.h"
#include "engine/log.h"
#include "engine/utf8.h"
#include "engine/xalloc.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* sysUpTime.0 and snmpTrapOID.0, and the prefix of the generic traps (RFC 3584 section 3) */
static const oid uptime_oid[] = {1, 3, 6, 1, 2, 1, 1, 3, 0};
static const oid trapoid_oid[] = {1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0};
static const oid generic_prefix[] = {1, 3, 6, 1, 6, 3, 1, 1, 5};

/* SD-PARAM names longer than this are left out of the structured data (kept in MESSAGE) */
#define SD_NAME_MAX  200
#define NAME_MAX_LEN 256

/* ---- the library ---- */

/* net-snmp's messages (MIB parsing problems, mostly) go to corrald's log, not to stderr */
static int
on_snmp_log(int major, int minor, void *server_arg, void *client_arg)
{
    const struct snmp_log_message *m = server_arg;
    size_t n;

    (void)major;
    (void)minor;
    (void)client_arg;
    if (!m || !m->msg) return 0;
    n = strlen(m->msg);
    while (n && (m->msg[n - 1] == '\n' || m->msg[n - 1] == '\r')) n--;
    if (n) log_msg(LOG_INFO, "net-snmp: %.*s", (int)n, m->msg);
    return 0;
}

static int init_rc = 1; /* 1: not yet; 0: done; -1: failed */

int
snmptrap_fmt_init(const char *dirs, struct buf *err)
{
    static const char *system_dirs[] = {
        "/usr/share/snmp/mibs",      "/usr/share/snmp/mibs/iana",
        "/usr/share/snmp/mibs/ietf", "/usr/share/mibs/ietf", /* snmp-mibs-downloader */
        "/usr/share/mibs/iana",      "/usr/share/mibs/site"};
    struct buf path = BUF_INIT;
    char *ctype;
    size_t i;

    if (init_rc <= 0) {
        if (init_rc < 0) buf_printf(err, "cannot load the MIBs");
        return init_rc;
    }
    if (!dirs) {
        for (i = 0; i < sizeof(system_dirs) / sizeof(*system_dirs); i++)
            if (access(system_dirs[i], R_OK | X_OK) == 0)
                buf_printf(&path, "%s%s", path.len ? ":" : "", system_dirs[i]);
    } else {
        buf_puts(&path, dirs);
    }
    /* corrald's configuration is the only one: no snmp.conf, nothing persisted (as actions/snmp.c)
     */
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_READ_CONFIGS, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_LOAD_HOST_FILES, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_PERSIST_STATE, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
    netsnmp_ds_set_string(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_PERSISTENT_DIR, "/dev/null");
    /* a MIB that does not parse is reported by net-snmp on stderr: keep it quiet, count nothing */
    netsnmp_ds_set_int(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_WARNINGS, 0);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_ERRORS, 0);
    snmp_register_callback(SNMP_CALLBACK_LIBRARY, SNMP_CALLBACK_LOGGING, on_snmp_log, NULL);
    netsnmp_register_loghandler(NETSNMP_LOGHANDLER_CALLBACK, LOG_DEBUG);
    ctype = xstrdup(setlocale(LC_CTYPE, NULL));
    /* init_snmp may have run already (the SNMP executor, same process): the tree is shared */
    netsnmp_set_mib_directory(buf_str(&path));
    {
        /* no default module list: every MIB of the directories is read below */
        char line[] = "mibs :";
        netsnmp_config_remember(line);
    }
    init_snmp("corrald");
    for (char *p = path.p, *next; p && *p; p = next) {
        next = strchr(p, ':');
        if (next) *next++ = '\0';
        if (*p) add_mibdir(p);
    }
    read_all_mibs();
    setlocale(LC_CTYPE, ctype);
    free(ctype);
    buf_free(&path);
    init_rc = 0;
    return 0;
}

/* ---- names ---- */

static size_t
tree_depth(const struct tree *t)
{
    size_t n = 0;
    for (; t; t = t->parent) n++;
    return n;
}

/*
 * The MIB node naming name[0..len): the OID itself, or a leaf object with
 * the rest as its instance (*depth: the node's length).  NULL: none.
 */
static struct tree *
lookup(const oid *name, size_t len, size_t *depth)
{
    struct tree *head = get_tree_head(), *t;
    size_t d;

    if (!head || len == 0 || len > MAX_OID_LEN) return NULL;
    t = get_tree(name, len, head);
    if (!t || !t->label) return NULL;
    d = tree_depth(t);
    if (d > len) return NULL;
    /* the walk may stop at the first sub-identifier that matched nothing */
    {
        const struct tree *u = t;
        size_t k = d;
        while (u) {
            if (u->subid != name[--k]) return NULL;
            u = u->parent;
        }
    }
    /* an inner node or a bare OID assignment: the rest is not an instance it names */
    if (d != len && (t->child_list || t->type == TYPE_OTHER)) return NULL;
    *depth = d;
    return t;
}

static void
put_numeric(struct buf *out, const oid *name, size_t len)
{
    size_t i;
    for (i = 0; i < len; i++) {
        buf_putc(out, '.');
        buf_put_uint(out, name[i]);
    }
}

/* An OID as a trap name: MODULE::name when a MIB defines exactly it, else numeric. */
static void
put_oid_name(struct buf *out, const oid *name, size_t len)
{
    size_t d;
    struct tree *t = lookup(name, len, &d);
    char mod[256];

    if (t && d == len) {
        module_name(t->modid, mod);
        /* module_name gives "#N" for a node no module owns */
        if (mod[0] && mod[0] != '#') buf_printf(out, "%s::", mod);
        buf_puts(out, t->label);
        return;
    }
    put_numeric(out, name, len);
}

/* ---- values ---- */

static bool
printable_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0, k;
    uint32_t cp;

    while (i < n) {
        if (s[i] < 0x80) {
            if (s[i] < 0x20 || s[i] == 0x7f) return false;
            i++;
            continue;
        }
        k = utf8_char(s + i, n - i, &cp);
        if (!k || (cp >= 0x80 && cp < 0xa0)) return false;
        i += k;
    }
    return true;
}

/* The value of one varbind as text (unquoted): what MESSAGE and the name-value pair show. */
static void
put_value(struct buf *out, const netsnmp_variable_list *v, const struct tree *t)
{
    size_t i;

    switch (v->type) {
    case ASN_INTEGER:
        if (!v->val.integer || v->val_len < sizeof(long)) break;
        if (t)
            for (const struct enum_list *e = t->enums; e; e = e->next)
                if (e->value == *v->val.integer && e->label) {
                    buf_puts(out, e->label);
                    return;
                }
        buf_printf(out, "%ld", *v->val.integer);
        return;
    case ASN_COUNTER:
    case ASN_GAUGE:
    case ASN_TIMETICKS:
    case ASN_UINTEGER:
        if (!v->val.integer || v->val_len < sizeof(long)) break;
        buf_put_uint(out, (unsigned long)*v->val.integer & 0xffffffffUL);
        return;
    case ASN_COUNTER64:
        if (!v->val.counter64 || v->val_len < sizeof(struct counter64)) break;
        buf_put_uint(out, ((unsigned long long)v->val.counter64->high << 32) |
                              (v->val.counter64->low & 0xffffffffULL));
        return;
    case ASN_IPADDRESS:
        if (!v->val.string || v->val_len != 4) break;
        buf_printf(out, "%u.%u.%u.%u", v->val.string[0], v->val.string[1], v->val.string[2],
                   v->val.string[3]);
        return;
    case ASN_OBJECT_ID:
        if (!v->val.objid) break;
        put_oid_name(out, v->val.objid, v->val_len / sizeof(oid));
        return;
    case ASN_OCTET_STR:
        if (v->val_len && v->val.string && printable_utf8(v->val.string, v->val_len)) {
            buf_append(out, v->val.string, v->val_len);
            return;
        }
        break;
    default: break;
    }
    /* other types (opaque, bits, NULL, exceptions) and octets that are not text: hex */
    if (v->val_len && v->val.string &&
        (v->type == ASN_OCTET_STR || v->type == ASN_OPAQUE || v->type == ASN_BIT_STR ||
         v->type == ASN_NSAP || v->type == ASN_IPADDRESS)) {
        buf_puts(out, "0x");
        for (i = 0; i < v->val_len; i++) buf_printf(out, "%02x", v->val.string[i]);
    }
}

/* value as MESSAGE writes it: quoted when empty or holding a space, '"', '=' or '\' */
static void
put_quoted(struct buf *out, const char *s, size_t n)
{
    bool quote = n == 0;
    size_t i;

    for (i = 0; i < n && !quote; i++)
        if (s[i] == ' ' || s[i] == '"' || s[i] == '=' || s[i] == '\\') quote = true;
    if (quote) buf_putc(out, '"');
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            buf_printf(out, "\\x%02X", c);
        else if (quote && (c == '"' || c == '\\')) {
            buf_putc(out, '\\');
            buf_putc(out, (char)c);
        } else
            buf_putc(out, (char)c);
    }
    if (quote) buf_putc(out, '"');
}

/* an SD-PARAM value (RFC 5424 section 6.3.3): '"', '\' and ']' escaped */
static void
put_sd_value(struct buf *out, const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            buf_printf(out, "\\x%02X", c);
            continue;
        }
        if (c == '"' || c == '\\' || c == ']') buf_putc(out, '\\');
        buf_putc(out, (char)c);
    }
}

static void
put_sd(struct buf *out, const char *name, size_t nlen, const char *value, size_t vlen)
{
    buf_putc(out, ' ');
    buf_append(out, name, nlen);
    buf_puts(out, "=\"");
    put_sd_value(out, value, vlen);
    buf_putc(out, '"');
}

static bool
oid_is(const netsnmp_variable_list *v, const oid *o, size_t n)
{
    return v->name_length == n && memcmp(v->name, o, n * sizeof(oid)) == 0;
}

/* a header field (HOST): printable ASCII without spaces, at most 255 bytes; "-" if empty */
static void
put_header_token(struct buf *out, const char *s)
{
    size_t i, n = 0;
    for (i = 0; s[i] && n < 255; i++, n++) {
        unsigned char c = (unsigned char)s[i];
        buf_putc(out, c > 0x20 && c < 0x7f ? (char)c : '_');
    }
    if (!n) buf_putc(out, '-');
}

struct vb_name {
    size_t off, len; /* in the names buffer */
};

/* Working buffers kept from one trap to the next (per thread): no allocation once grown. */
struct scratch {
    struct buf trap, trap_oid, names, val, msg, sd, idx, nm;
};
static _Thread_local struct scratch scratch;

static void
take(struct buf *b, struct buf *kept)
{
    *b = *kept;
    buf_reset(b);
}

bool
snmptrap_fmt_line(struct buf *out, const netsnmp_pdu *pdu, const struct snmptrap_origin *o)
{
    struct buf trap, trap_oid, names, val, msg, sd, idx, nm;
    struct vb_name seen[SNMPTRAP_MAX_VARBINDS];
    size_t nseen = 0;
    bool whole = true, v1 = pdu->command == SNMP_MSG_TRAP;
    unsigned long uptime = 0;
    const netsnmp_variable_list *v;
    char num[32];

    take(&trap, &scratch.trap);
    take(&trap_oid, &scratch.trap_oid);
    take(&names, &scratch.names);
    take(&val, &scratch.val);
    take(&msg, &scratch.msg);
    take(&sd, &scratch.sd);
    take(&idx, &scratch.idx);
    take(&nm, &scratch.nm);
    /* the trap OID: v1's as RFC 3584 section 3 makes it, v2's from snmpTrapOID.0 */
    if (v1) {
        oid t[MAX_OID_LEN];
        size_t n;
        if (pdu->trap_type >= 0 && pdu->trap_type <= 5) {
            memcpy(t, generic_prefix, sizeof(generic_prefix));
            n = sizeof(generic_prefix) / sizeof(oid);
            t[n++] = (oid)pdu->trap_type + 1;
        } else {
            n = pdu->enterprise_length <= MAX_OID_LEN - 2 ? pdu->enterprise_length : 0;
            if (n) memcpy(t, pdu->enterprise, n * sizeof(oid));
            t[n++] = 0;
            t[n++] = (oid)pdu->specific_type;
        }
        put_oid_name(&trap, t, n);
        put_numeric(&trap_oid, t, n);
        uptime = pdu->time;
    } else {
        /* without snmpTrapOID.0 the trap name is empty */
        for (v = pdu->variables; v; v = v->next_variable) {
            if (oid_is(v, trapoid_oid, sizeof(trapoid_oid) / sizeof(oid)) &&
                v->type == ASN_OBJECT_ID && v->val.objid) {
                put_oid_name(&trap, v->val.objid, v->val_len / sizeof(oid));
                put_numeric(&trap_oid, v->val.objid, v->val_len / sizeof(oid));
                break;
            }
        }
    }
    buf_append(&msg, trap.p ? trap.p : "", trap.len);
    put_sd(&sd, "trap", 4, trap.p ? trap.p : "", trap.len);
    put_sd(&sd, "trap_oid", 8, trap_oid.p ? trap_oid.p : "", trap_oid.len);
    put_sd(&sd, "version", 7,
           pdu->version == SNMP_VERSION_1   ? "1"
           : pdu->version == SNMP_VERSION_3 ? "3"
                                            : "2c",
           pdu->version == SNMP_VERSION_2c ? 2 : 1);
    put_sd(&sd, "type", 4, pdu->command == SNMP_MSG_INFORM ? "inform" : "trap",
           pdu->command == SNMP_MSG_INFORM ? 6 : 4);
    if (o->source) put_sd(&sd, "source", 6, o->source, strlen(o->source));
    if (v1) {
        buf_reset(&val);
        put_numeric(&val, pdu->enterprise, pdu->enterprise_length);
        put_sd(&sd, "enterprise", 10, val.p ? val.p : "", val.len);
        snprintf(num, sizeof(num), "%ld", pdu->trap_type);
        put_sd(&sd, "generic", 7, num, strlen(num));
        snprintf(num, sizeof(num), "%ld", pdu->specific_type);
        put_sd(&sd, "specific", 8, num, strlen(num));
    }

    for (v = pdu->variables; v; v = v->next_variable) {
        struct tree *t;
        size_t depth = 0, nlen, start, k, dup = 1;

        if (oid_is(v, trapoid_oid, sizeof(trapoid_oid) / sizeof(oid))) continue;
        if (oid_is(v, uptime_oid, sizeof(uptime_oid) / sizeof(oid))) {
            if (v->type == ASN_TIMETICKS && v->val.integer)
                uptime = (unsigned long)*v->val.integer & 0xffffffffUL;
            continue;
        }
        if (nseen == SNMPTRAP_MAX_VARBINDS) {
            whole = false;
            break;
        }
        t = lookup(v->name, v->name_length, &depth);
        start = names.len;
        if (t)
            buf_puts(&names, t->label);
        else
            put_numeric(&names, v->name,
                        v->name_length > NAME_MAX_LEN ? NAME_MAX_LEN : v->name_length);
        nlen = names.len - start;
        for (k = 0; k < nseen; k++)
            if (seen[k].len == nlen && memcmp(names.p + seen[k].off, names.p + start, nlen) == 0)
                dup++;
        seen[nseen].off = start;
        seen[nseen].len = nlen;
        nseen++;

        buf_reset(&val);
        buf_puts(&val, "var.");
        buf_append(&val, names.p + start, nlen);
        if (dup > 1) buf_printf(&val, "#%zu", dup);
        /* MESSAGE: name=value */
        buf_putc(&msg, ' ');
        buf_append(&msg, val.p + 4, val.len - 4);
        buf_putc(&msg, '=');
        {
            size_t vstart = val.len;
            put_value(&val, v, t);
            put_quoted(&msg, val.p + vstart, val.len - vstart);
            if (vstart <= SD_NAME_MAX) put_sd(&sd, val.p, vstart, val.p + vstart, val.len - vstart);
            /* the instance index of a known object */
            if (t && depth < v->name_length && vstart <= SD_NAME_MAX) {
                buf_reset(&idx);
                buf_reset(&nm);
                put_numeric(&idx, v->name + depth, v->name_length - depth);
                buf_puts(&nm, "index.");
                buf_append(&nm, val.p + 4, vstart - 4);
                put_sd(&sd, nm.p, nm.len, idx.p + 1, idx.len - 1);
            }
        }
    }
    snprintf(num, sizeof(num), "%lu", uptime);
    put_sd(&sd, "uptime", 6, num, strlen(num));

    buf_printf(out, "<%d>1 - ", o->pri);
    put_header_token(out, o->host);
    buf_puts(out, " snmptrap - - [snmp");
    buf_append(out, sd.p, sd.len);
    buf_puts(out, "] ");
    buf_append(out, msg.p ? msg.p : "", msg.len);
    scratch = (struct scratch){trap, trap_oid, names, val, msg, sd, idx, nm};
    return whole;
}

/* ---- snmptrapd's output read back ---- */

static char *
field(char **p)
{
    char *s = *p, *tab;
    if (!s) return NULL;
    tab = strchr(s, '\t');
    if (tab) {
        *tab = '\0';
        *p = tab + 1;
    } else {
        *p = NULL;
    }
    return s;
}

static int
hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "OID = TYPE: value" as snmptrapd -On -Oe -Ox -OU prints a varbind */
static int
add_varbind(netsnmp_pdu *pdu, char *s, struct buf *err)
{
    oid name[MAX_OID_LEN];
    size_t len = MAX_OID_LEN;
    char *eq = strstr(s, " = "), *type, *value, *colon;
    unsigned char bytes[4096];
    size_t n = 0;

    if (!eq) {
        buf_printf(err, "varbind without \" = \": %.60s", s);
        return -1;
    }
    *eq = '\0';
    if (!read_objid(s, name, &len)) {
        buf_printf(err, "bad OID %.60s", s);
        return -1;
    }
    type = eq + 3;
    colon = strstr(type, ": ");
    if (!colon) {
        /* -Ot timeticks and empty strings: the value alone */
        if (strcmp(type, "\"\"") == 0) return snmp_add_var(pdu, name, len, 's', "") ? -1 : 0;
        return snmp_add_var(pdu, name, len, 't', type) ? -1 : 0;
    }
    *colon = '\0';
    value = colon + 2;
    if (strcmp(type, "INTEGER") == 0) return snmp_add_var(pdu, name, len, 'i', value) ? -1 : 0;
    if (strcmp(type, "Counter32") == 0) return snmp_add_var(pdu, name, len, 'c', value) ? -1 : 0;
    if (strcmp(type, "Gauge32") == 0 || strcmp(type, "Unsigned32") == 0)
        return snmp_add_var(pdu, name, len, 'u', value) ? -1 : 0;
    if (strcmp(type, "Counter64") == 0) return snmp_add_var(pdu, name, len, 'C', value) ? -1 : 0;
    if (strcmp(type, "IpAddress") == 0) return snmp_add_var(pdu, name, len, 'a', value) ? -1 : 0;
    if (strcmp(type, "OID") == 0) return snmp_add_var(pdu, name, len, 'o', value) ? -1 : 0;
    if (strcmp(type, "Timeticks") == 0) {
        /* "(42) 0:00:00.42" */
        char *close;
        if (*value == '(') value++;
        if ((close = strchr(value, ')'))) *close = '\0';
        return snmp_add_var(pdu, name, len, 't', value) ? -1 : 0;
    }
    if (strcmp(type, "Hex-STRING") == 0 || strcmp(type, "STRING") == 0 ||
        strcmp(type, "BITS") == 0 || strcmp(type, "OPAQUE") == 0) {
        if (strcmp(type, "STRING") == 0) {
            /* "text", as printed without -Ox */
            size_t l = strlen(value);
            if (l >= 2 && value[0] == '"' && value[l - 1] == '"') value[l - 1] = '\0', value++;
            return snmp_pdu_add_variable(pdu, name, len, ASN_OCTET_STR, value, strlen(value)) ? 0
                                                                                              : -1;
        }
        for (char *p = value; *p && n < sizeof(bytes);) {
            int hi, lo;
            if (*p == ' ') {
                p++;
                continue;
            }
            hi = hexval((unsigned char)p[0]);
            lo = p[1] ? hexval((unsigned char)p[1]) : -1;
            if (hi < 0 || lo < 0) break;
            bytes[n++] = (unsigned char)(hi * 16 + lo);
            p += 2;
        }
        return snmp_pdu_add_variable(pdu, name, len,
                                     strcmp(type, "OPAQUE") == 0 ? ASN_OPAQUE : ASN_OCTET_STR,
                                     bytes, n)
                   ? 0
                   : -1;
    }
    buf_printf(err, "unknown type %s", type);
    return -1;
}

netsnmp_pdu *
snmptrap_fmt_parse_record(char *line, const char **host, const char **source, struct buf *err)
{
    char *p = line, *agent, *transport, *sec, *ent, *gen, *spec, *up, *vb, *l, *r;
    netsnmp_pdu *pdu;
    static char src[64];

    agent = field(&p);
    transport = field(&p);
    sec = field(&p);
    ent = field(&p);
    gen = field(&p);
    spec = field(&p);
    up = field(&p);
    if (!up) {
        buf_printf(err, "not a trap record (fewer than 8 tab-separated fields)");
        return NULL;
    }
    /* the UDP source: "UDP: [127.0.0.1]:53591->[127.0.0.1]:162" */
    src[0] = '\0';
    if ((l = strchr(transport, '[')) && (r = strchr(l, ']')) && (size_t)(r - l - 1) < sizeof(src)) {
        memcpy(src, l + 1, (size_t)(r - l - 1));
        src[r - l - 1] = '\0';
    }
    *source = src[0] ? src : NULL;
    if (strncmp(sec, "TRAP, SNMP v1", 13) == 0) {
        oid e[MAX_OID_LEN];
        size_t elen = MAX_OID_LEN;
        pdu = snmp_pdu_create(SNMP_MSG_TRAP);
        pdu->version = SNMP_VERSION_1;
        if (read_objid(ent, e, &elen)) {
            pdu->enterprise = xmalloc(elen * sizeof(oid));
            memcpy(pdu->enterprise, e, elen * sizeof(oid));
            pdu->enterprise_length = elen;
        }
        pdu->trap_type = strtol(gen, NULL, 10);
        /* snmptrapd -On writes an enterprise-specific %q as ".1" */
        pdu->specific_type = strtol(spec[0] == '.' ? spec + 1 : spec, NULL, 10);
        /* "1234", or "(1234) 0:00:12.34" without -Ot */
        pdu->time = strtoul(up[0] == '(' ? up + 1 : up, NULL, 10);
        *host = agent;
    } else {
        pdu = snmp_pdu_create(strncmp(sec, "INFORM", 6) == 0 ? SNMP_MSG_INFORM : SNMP_MSG_TRAP2);
        pdu->version = strstr(sec, "SNMP v3") ? SNMP_VERSION_3 : SNMP_VERSION_2c;
        *host = *source ? *source : agent;
    }
    while ((vb = field(&p))) {
        size_t n = strlen(vb);
        while (n && (vb[n - 1] == '\n' || vb[n - 1] == '\r')) vb[--n] = '\0';
        if (!n) continue;
        if (add_varbind(pdu, vb, err) < 0) {
            if (!err->len) buf_printf(err, "bad varbind");
            snmp_free_pdu(pdu);
            return NULL;
        }
    }
    return pdu;
}
