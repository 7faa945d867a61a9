/*
 * conf: reads corrald's XML configuration.  The file is first validated
 * against the schema (etc/corrald.xsd), which catches unknown elements,
 * missing attributes and malformed values with their line numbers; then the
 * tree is copied into struct conf, with the checks a schema cannot express.
 * Also the built-in configuration (conf_default), and what a reload asks of
 * the configuration: whether an input or output is configured as before.
 */
#include "agent/conf/conf.h"
#include "agent/conf/snmptrap_conf.h"
#include "engine/durable.h"
#include "engine/evidence.h"
#include "engine/labelmatch.h"
#include "engine/strlist.h"
#include "engine/template.h"
#include "engine/units.h"
#include "engine/xalloc.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/uri.h>
#include <libxml/xmlschemas.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_LISTEN "127.0.0.1:5514"
/* a configuration file is a few KiB; this bounds a wrong path */
#define CONF_FILE_MAX ((size_t)16 << 20)
/* an API token is a line of random characters */
#define CONF_TOKEN_MAX 4096

static void
conf_init(struct conf *c)
{
    memset(c, 0, sizeof(*c));
    c->max_message_size = 65536;
    c->max_connections = 1000;
    c->max_connections_per_peer = 100;
    c->idle_timeout = 300;
    c->max_absence_sources = 100000;
    c->control_timeout = 10;
    c->control_mode = 0600;
    c->state_interval = 60;
    c->max_alerts = 10000;
    c->resolve_timeout = 300;
    c->max_silences = 10000;
    c->silence_retention = 5 * 86400;
    c->evidence_lines = EVIDENCE_LINES;
    c->evidence_bytes = EVIDENCE_BYTES;
    c->log_level = xstrdup("info");
}

const char *
conf_input_type_name(enum conf_input_type t)
{
    switch (t) {
    case CONF_IN_UDP: return "udp";
    case CONF_IN_TCP: return "tcp";
    case CONF_IN_UNIX_DGRAM: return "unix-dgram";
    case CONF_IN_UNIX_STREAM: return "unix-stream";
    case CONF_IN_FILE: return "file";
    case CONF_IN_STDIN: return "stdin";
    case CONF_IN_TLS: return "tls";
    case CONF_IN_SNMP_TRAP: return "snmp-trap";
    }
    return "?";
}

/* "udp:127.0.0.1:514", "file:/var/log/x": what an input without a name is called. */
static char *
input_default_name(const struct conf_input *in)
{
    struct buf b = BUF_INIT;
    char *name;

    buf_printf(&b, "%s:%s", conf_input_type_name(in->type),
               in->listen ? in->listen
               : in->path ? in->path
                          : "-");
    name = xstrdup(buf_str(&b));
    buf_free(&b);
    return name;
}

static struct conf_input *
add_input(struct conf *c, enum conf_input_type type)
{
    struct conf_input *in;
    size_t cap = c->ninputs;

    c->inputs = xgrow(c->inputs, &cap, c->ninputs + 1, sizeof(*c->inputs));
    in = &c->inputs[c->ninputs++];
    memset(in, 0, sizeof(*in));
    in->type = type;
    in->mode = 0666;
    return in;
}

static struct conf_output *
add_output(struct conf *c, enum conf_output_type type)
{
    struct conf_output *out;
    size_t cap = c->noutputs;

    c->outputs = xgrow(c->outputs, &cap, c->noutputs + 1, sizeof(*c->outputs));
    out = &c->outputs[c->noutputs++];
    memset(out, 0, sizeof(*out));
    out->type = type;
    out->queue = 10000;
    return out;
}

void
conf_add_rules(struct conf *c, const char *path, int line)
{
    size_t cap = c->nrules, lcap = c->nrules;

    c->rules = xgrow(c->rules, &cap, c->nrules + 1, sizeof(*c->rules));
    c->rules_line = xgrow(c->rules_line, &lcap, c->nrules + 1, sizeof(*c->rules_line));
    c->rules_line[c->nrules] = line;
    c->rules[c->nrules++] = xstrdup(path);
}

bool
conf_rules_readable(const struct conf *c, size_t i, struct buf *err)
{
    const char *why;
    struct stat st;

    if (stat(c->rules[i], &st) < 0)
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        why = "not a file or a directory";
    else if (access(c->rules[i], R_OK) < 0)
        why = strerror(errno);
    else
        return true;
    if (c->file && c->rules_line[i]) buf_printf(err, "%s:%d: ", c->file, c->rules_line[i]);
    buf_printf(err, "rules path %s: %s\n", c->rules[i], why);
    return false;
}
static void
free_route(struct conf_route *r)
{
    size_t i;

    for (i = 0; i < r->nto; i++) free(r->to[i]);
    free(r->to);
    free(r->class);
    free(r->rule);
    free(r->tag);
    free(r->filter);
    for (i = 0; i < r->nchildren; i++) free_route(&r->children[i]);
    free(r->children);
}

struct conf *
conf_default(const char *rules_dir)
{
    struct conf *c = xmalloc(sizeof(*c));
    struct conf_input *in;
    struct conf_output *out;

    conf_init(c);
    conf_add_rules(c, rules_dir, 0);
    in = add_input(c, CONF_IN_UDP);
    in->listen = xstrdup(DEFAULT_LISTEN);
    in->name = xstrdup("udp:" DEFAULT_LISTEN);
    in = add_input(c, CONF_IN_TCP);
    in->listen = xstrdup(DEFAULT_LISTEN);
    in->name = xstrdup("tcp:" DEFAULT_LISTEN);
    out = add_output(c, CONF_OUT_STDOUT);
    out->name = xstrdup("stdout");
    out->format = CONF_FORMAT_JSON;
    out->select = CONF_SELECT_GENERATED;
    return c;
}

void
conf_corr_limits(const struct conf *c, struct corr_opts *o)
{
    o->max_contexts = c->max_contexts;
    o->max_context_msgs = c->max_context_messages;
    o->context_share = c->context_share;
    o->max_context_bytes = c->max_context_bytes;
    o->max_context_memory = c->max_context_memory;
    o->max_sigma_memory = c->max_sigma_memory;
    o->max_rate_buckets = c->max_rate_buckets;
    o->evidence_lines = c->evidence_lines ? c->evidence_lines : CORR_EVIDENCE_NONE;
    o->evidence_bytes = c->evidence_bytes;
}

static void conf_cluster_free(struct conf_cluster *cc);

void
conf_free(struct conf *c)
{
    size_t i;

    if (!c) return;
    free(c->file);
    for (i = 0; i < c->nrules; i++) free(c->rules[i]);
    free(c->rules_line);
    for (i = 0; i < c->nsigma; i++) {
        free(c->sigma[i].rules);
        free(c->sigma[i].mapping);
    }
    free(c->sigma);
    free(c->rules);
    free(c->state_file);
    free(c->pidfile);
    free(c->user);
    free(c->group);
    free(c->control_socket);
    free(c->control_group);
    free(c->stats_listen);
    free(c->stats_api_token_file);
    if (c->stats_api_token) explicit_bzero(c->stats_api_token, strlen(c->stats_api_token));
    free(c->stats_api_token);
    free(c->stats_external_url);
    free(c->log_level);
    free(c->log_to);
    for (i = 0; i < c->ninputs; i++) conf_input_clear(&c->inputs[i]);
    free(c->inputs);
    for (i = 0; i < c->noutputs; i++) {
        conf_tls_clear(&c->outputs[i].tls_conf);
        free(c->outputs[i].name);
        free(c->outputs[i].path);
        free(c->outputs[i].to);
    }
    free(c->outputs);
    for (i = 0; i < c->nabsences; i++) {
        free(c->absences[i].host);
        free(c->absences[i].program);
        free(c->absences[i].severity);
    }
    free(c->absences);
    free(c->warnings);
    conf_cluster_free(c->cluster);
    for (i = 0; i < c->nexecutors; i++) exconf_free(&c->executors[i]);
    free(c->executors);
    for (i = 0; i < c->nroutes; i++) free_route(&c->routes[i]);
    free(c->routes);
    free(c->spool_dir);
    free(c->alert_id);
    for (i = 0; i < c->ninhibits; i++) {
        size_t k;
        free(c->inhibits[i].source);
        free(c->inhibits[i].target);
        for (k = 0; k < c->inhibits[i].nequal; k++) free(c->inhibits[i].equal[k]);
        free(c->inhibits[i].equal);
        for (k = 0; k < c->inhibits[i].nports; k++) free(c->inhibits[i].ports[k]);
        free(c->inhibits[i].ports);
    }
    free(c->inhibits);
    free(c->topology_file);
    free(c);
}

static bool
same_str(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

static bool
tls_equal(const struct conf_tls *a, const struct conf_tls *b)
{
    return a->verify == b->verify && same_str(a->cert, b->cert) && same_str(a->key, b->key) &&
           same_str(a->ca, b->ca) && same_str(a->allowed_names, b->allowed_names);
}

bool
conf_input_equal(const struct conf_input *a, const struct conf_input *b)
{
    return a->type == b->type && same_str(a->name, b->name) && same_str(a->listen, b->listen) &&
           same_str(a->path, b->path) && a->framing == b->framing && a->mode == b->mode &&
           a->from_start == b->from_start && tls_equal(&a->tls, &b->tls) &&
           snmptrap_conf_equal(a->snmp, b->snmp);
}

bool
conf_output_equal(const struct conf_output *a, const struct conf_output *b)
{
    return a->type == b->type && a->format == b->format && a->select == b->select &&
           a->tcp == b->tcp && a->tls == b->tls && tls_equal(&a->tls_conf, &b->tls_conf) &&
           a->queue == b->queue && same_str(a->name, b->name) && same_str(a->path, b->path) &&
           same_str(a->to, b->to);
}

static char *
dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

void
conf_tls_copy(struct conf_tls *dst, const struct conf_tls *src)
{
    *dst = *src;
    dst->cert = dup_or_null(src->cert);
    dst->key = dup_or_null(src->key);
    dst->ca = dup_or_null(src->ca);
    dst->allowed_names = dup_or_null(src->allowed_names);
}

void
conf_tls_clear(struct conf_tls *t)
{
    free(t->cert);
    free(t->key);
    free(t->ca);
    free(t->allowed_names);
    t->cert = t->key = t->ca = t->allowed_names = NULL;
}

void
conf_input_copy(struct conf_input *dst, const struct conf_input *src)
{
    *dst = *src;
    conf_tls_copy(&dst->tls, &src->tls);
    dst->listen = dup_or_null(src->listen);
    dst->path = dup_or_null(src->path);
    dst->position_file = dup_or_null(src->position_file);
    dst->snmp = snmptrap_conf_copy(src->snmp);
    dst->name = src->name ? xstrdup(src->name) : input_default_name(src);
}

void
conf_input_clear(struct conf_input *ci)
{
    free(ci->name);
    free(ci->listen);
    free(ci->path);
    free(ci->position_file);
    conf_tls_clear(&ci->tls);
    snmptrap_conf_free(ci->snmp);
    ci->snmp = NULL;
    ci->name = ci->listen = ci->path = ci->position_file = NULL;
}

bool
conf_split_address(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon;
    char *end;
    long p;
    size_t n;

    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':') return false;
        n = (size_t)(close - addr - 1);
        if (n >= hostlen) return false;
        memcpy(host, addr + 1, n);
        host[n] = '\0';
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) return false;
        n = (size_t)(colon - addr);
        if (n >= hostlen) return false;
        memcpy(host, addr, n);
        host[n] = '\0';
    }
    p = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || p < 0 || p > 65535) return false;
    *port = (int)p;
    return true;
}

/* ---- reading the file ---- */

struct reader {
    const char *file;
    struct buf *err;
    int errors;
    struct buf warnings;
};

static void error(struct reader *r, const xmlNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
error(struct reader *r, const xmlNode *n, const char *fmt, ...)
{
    va_list ap;

    buf_printf(r->err, "%s:%ld: ", r->file, n ? xmlGetLineNo(n) : 0L);
    va_start(ap, fmt);
    buf_vprintf(r->err, fmt, ap);
    va_end(ap);
    buf_putc(r->err, '\n');
    r->errors++;
}

/* A warning ("file:line: warning: ..."), kept in c->warnings for the caller to log. */
static void warning(struct reader *r, const xmlNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
warning(struct reader *r, const xmlNode *n, const char *fmt, ...)
{
    va_list ap;

    buf_printf(&r->warnings, "%s:%ld: warning: ", r->file, n ? xmlGetLineNo(n) : 0L);
    va_start(ap, fmt);
    buf_vprintf(&r->warnings, fmt, ap);
    va_end(ap);
    buf_putc(&r->warnings, '\n');
}

static void
xml_error(void *arg, xmlErrorPtr e)
{
    struct reader *r = arg;
    size_t n;
    char msg[512], *nl;

    if (!e || e->level == XML_ERR_WARNING) return;
    snprintf(msg, sizeof(msg), "%s", e->message ? e->message : "error");
    n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = '\0';
    /* one line per error: libxml2 puts some details on a line of their own */
    for (nl = strchr(msg, '\n'); nl; nl = strchr(nl, '\n')) *nl = ' ';
    buf_printf(r->err, "%s:%d: %s\n", r->file, e->line, msg);
    r->errors++;
}

static char *
attr(const xmlNode *n, const char *name)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    char *s = v ? xstrdup((const char *)v) : NULL;

    xmlFree(v);
    return s;
}

static bool
attr_is(const xmlNode *n, const char *name, const char *value)
{
    char *v = attr(n, name);
    bool eq = v && strcmp(v, value) == 0;

    free(v);
    return eq;
}

static bool
is(const xmlNode *n, const char *name)
{
    return strcmp((const char *)n->name, name) == 0;
}

static double
duration_attr(struct reader *r, const xmlNode *n, const char *name, double def)
{
    char *v = attr(n, name);
    double d;

    if (!v) return def;
    d = units_duration(v);
    if (d < 0)
        error(r, n, "bad duration %s=\"%s\" (examples: 30, 5s, 250ms, 10m, 2h; at most 100 years)",
              name, v);
    free(v);
    return d < 0 ? def : d;
}

static size_t
number_attr(struct reader *r, const xmlNode *n, const char *name, size_t def, bool size_units)
{
    char *v = attr(n, name);
    size_t x;

    if (!v) return def;
    /* digits (and a unit), nothing else: strtoull alone took "-1" and "12abc", and wrapped */
    x = size_units ? units_size(v) : units_count(v);
    if (!x && size_units)
        error(r, n, "bad size %s=\"%s\": %s (examples: 65536, 64k, 10M, 1G)", name, v,
              *v && strspn(v, "0") == strlen(v) ? "0" : units_why(v, 1));
    else if (!x)
        error(r, n, "bad value %s=\"%s\": %s (a count above 0)", name, v,
              *v && strspn(v, "0") == strlen(v) ? "0" : units_why(v, 0));
    free(v);
    return x ? x : def;
}

/* <alerts evidence-lines="5" evidence-bytes="2k">: 0 lines, none */
static void
read_evidence(struct reader *r, struct conf *c, const xmlNode *n)
{
    char *v = attr(n, "evidence-lines"), *end;

    if (v) {
        unsigned long long x = strtoull(v, &end, 10);
        if (v[0] < '0' || v[0] > '9' || *end || x > EVIDENCE_LINES_MAX)
            error(r, n, "evidence-lines must be a number from 0 to %d", EVIDENCE_LINES_MAX);
        else
            c->evidence_lines = (size_t)x;
        free(v);
    }
    c->evidence_bytes = number_attr(r, n, "evidence-bytes", c->evidence_bytes, true);
    if (c->evidence_bytes < EVIDENCE_BYTES_MIN || c->evidence_bytes > EVIDENCE_BYTES_MAX)
        error(r, n, "evidence-bytes must lie between %d and %u", EVIDENCE_BYTES_MIN,
              EVIDENCE_BYTES_MAX);
}

static void
check_address(struct reader *r, const xmlNode *n, const char *addr)
{
    char host[256];
    int port;

    if (!conf_split_address(addr, host, sizeof(host), &port))
        error(r, n, "bad address \"%s\" (expected host:port, [v6-address]:port or :port)", addr);
}

/*
 * <stats external-url>: an http or https URL of the status page as users
 * reach it (behind a proxy, under a path), without a query or fragment,
 * since "/alert?id=ID" is appended to it; a final '/' is dropped.
 */
static char *
external_url(struct reader *r, const xmlNode *n)
{
    char *v = attr(n, "external-url");
    size_t i, len, skip;
    xmlURIPtr uri;

    if (!v) return NULL;
    len = strlen(v);
    skip = strncmp(v, "https://", 8) == 0 ? 8 : strncmp(v, "http://", 7) == 0 ? 7 : 0;
    for (i = 0; i < len; i++)
        if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f || strchr("?#\"<>\\", v[i]))
            break;
    uri = i == len && skip && len > skip && v[skip] != '/' ? xmlParseURI(v) : NULL;
    if (!uri) {
        error(r, n,
              "bad external-url \"%s\" (expected http:// or https://, a host, maybe a port and a "
              "path, no query)",
              v);
        free(v);
        return NULL;
    }
    xmlFreeURI(uri);
    while (len > skip && v[len - 1] == '/') v[--len] = '\0';
    return v;
}

/*
 * The bearer token of the HTTP API (<stats api-token-file>), read when the
 * configuration is (start, reload, check): a secret, so a file anyone may
 * read is refused.  One line; the final newline is not part of it.
 */
static char *
read_token(struct reader *r, const xmlNode *n, const char *path)
{
    struct stat st;
    char *tok = NULL;
    ssize_t got;
    size_t len;
    int fd = durable_open_regular(path, CONF_TOKEN_MAX);

    if (fd < 0) {
        error(r, n, "api-token-file %s: %s", path, durable_strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) < 0) {
        error(r, n, "api-token-file %s: %s", path, strerror(errno));
        goto out;
    }
    if (st.st_mode & S_IROTH) {
        error(r, n, "api-token-file %s is readable by everyone: a secret must not be (chmod o-r)",
              path);
        goto out;
    }
    tok = xmalloc((size_t)st.st_size + 1);
    got = read(fd, tok, (size_t)st.st_size);
    if (got < 0) {
        error(r, n, "api-token-file %s: %s", path, strerror(errno));
        free(tok);
        tok = NULL;
        goto out;
    }
    len = (size_t)got;
    while (len && (tok[len - 1] == '\n' || tok[len - 1] == '\r')) len--;
    tok[len] = '\0';
    if (len < 16 || strlen(tok) != len || strcspn(tok, " \t\r\n") != len) {
        error(r, n,
              "api-token-file %s: the token must be one line of at least 16 characters, "
              "without spaces",
              path);
        explicit_bzero(tok, len);
        free(tok);
        tok = NULL;
    }
out:
    close(fd);
    return tok;
}

/*
 * <control group mode>: connecting needs write permission on the socket,
 * and whoever connects can reload corrald and add silences: the group may
 * be let in (0660), others never.
 */
static void
read_control_access(struct reader *r, const xmlNode *n, struct conf *c)
{
    char *v;

    free(c->control_group);
    c->control_group = attr(n, "group");
    c->control_mode = c->control_group ? 0660 : 0600;
    c->control_line = (int)xmlGetLineNo(n);
    if ((v = attr(n, "mode"))) {
        if (strcmp(v, "0600") == 0 || strcmp(v, "600") == 0)
            c->control_mode = 0600;
        else if (strcmp(v, "0660") == 0 || strcmp(v, "660") == 0)
            c->control_mode = 0660;
        else
            error(r, n,
                  "bad mode \"%s\": 0600 (its owner only) or 0660 (its group too); others are "
                  "never let in",
                  v);
        free(v);
    }
}

/* The TLS attributes of a <tls> input or a <forward protocol="tls"> output. */
static void
read_tls(const xmlNode *n, struct conf_tls *t)
{
    t->cert = attr(n, "cert");
    t->key = attr(n, "key");
    t->ca = attr(n, "ca");
    t->allowed_names = attr(n, "allowed-names");
    t->verify = attr_is(n, "verify", "none")       ? CONF_TLS_VERIFY_NONE
                : attr_is(n, "verify", "optional") ? CONF_TLS_VERIFY_OPTIONAL
                : attr_is(n, "verify", "required") ? CONF_TLS_VERIFY_REQUIRED
                                                   : CONF_TLS_VERIFY_DEFAULT;
}

static void
read_input(struct reader *r, struct conf *c, const xmlNode *n)
{
    struct conf_input *in;
    char *v;

    if (is(n, "udp"))
        in = add_input(c, CONF_IN_UDP);
    else if (is(n, "tcp"))
        in = add_input(c, CONF_IN_TCP);
    else if (is(n, "unix-dgram"))
        in = add_input(c, CONF_IN_UNIX_DGRAM);
    else if (is(n, "unix-stream"))
        in = add_input(c, CONF_IN_UNIX_STREAM);
    else if (is(n, "tls"))
        in = add_input(c, CONF_IN_TLS);
    else if (is(n, "file"))
        in = add_input(c, CONF_IN_FILE);
    else if (is(n, "snmp-trap"))
        in = add_input(c, CONF_IN_SNMP_TRAP);
    else
        in = add_input(c, CONF_IN_STDIN);
    in->line = (int)xmlGetLineNo(n);
    in->listen = attr(n, "listen");
    in->path = attr(n, "path");
    if (in->type == CONF_IN_SNMP_TRAP) {
        /* net-snmp's transport address ("udp:HOST:PORT"), its problems at file:line */
        struct buf e = BUF_INIT;
        char *line, *save = NULL;
        in->snmp = snmptrap_conf_read(n, &e);
        for (line = e.len ? strtok_r(e.p, "\n", &save) : NULL; line;
             line = strtok_r(NULL, "\n", &save))
            error(r, n, "%s", line);
        buf_free(&e);
    } else if (in->listen)
        check_address(r, n, in->listen);
    if (attr_is(n, "framing", "octet-counting")) in->framing = CONF_FRAMING_OCTET_COUNTING;
    if (attr_is(n, "framing", "newline")) in->framing = CONF_FRAMING_NEWLINE;
    in->from_start = attr_is(n, "from", "start");
    in->position_file = attr(n, "position-file");
    if (in->type == CONF_IN_TLS) read_tls(n, &in->tls);
    if ((v = attr(n, "mode"))) {
        char *end;
        unsigned long m = strtoul(v, &end, 8);
        if (*end || m > 0777)
            error(r, n, "bad mode \"%s\" (an octal permission such as 0660)", v);
        else
            in->mode = (uint32_t)m;
        free(v);
    }
    in->name = attr(n, "name");
    if (!in->name) in->name = input_default_name(in);
    /* with allowed-names it is refused (tls.c): names cannot be checked without a certificate */
    if (in->type == CONF_IN_TLS && in->tls.verify == CONF_TLS_VERIFY_OPTIONAL &&
        !in->tls.allowed_names)
        warning(r, n,
                "input %s: verify=\"optional\" lets clients in without a certificate; "
                "verify=\"required\" refuses them",
                in->name);
}

static void
read_output(struct reader *r, struct conf *c, const xmlNode *n)
{
    struct conf_output *out;
    char *v;

    if (is(n, "stdout"))
        out = add_output(c, CONF_OUT_STDOUT);
    else if (is(n, "file"))
        out = add_output(c, CONF_OUT_FILE);
    else
        out = add_output(c, CONF_OUT_FORWARD);
    out->line = (int)xmlGetLineNo(n);
    out->path = attr(n, "path");
    out->to = attr(n, "to");
    if (out->to) check_address(r, n, out->to);
    out->tls = attr_is(n, "protocol", "tls");
    out->tcp = out->tls || attr_is(n, "protocol", "tcp");
    if (out->tls) read_tls(n, &out->tls_conf);
    out->format = out->type == CONF_OUT_FORWARD ? CONF_FORMAT_SYSLOG : CONF_FORMAT_JSON;
    if ((v = attr(n, "format"))) {
        out->format = strcmp(v, "syslog") == 0 ? CONF_FORMAT_SYSLOG : CONF_FORMAT_JSON;
        free(v);
    }
    out->select = CONF_SELECT_ALL;
    if (attr_is(n, "select", "classified")) out->select = CONF_SELECT_CLASSIFIED;
    if (attr_is(n, "select", "generated")) out->select = CONF_SELECT_GENERATED;
    out->queue = number_attr(r, n, "queue", out->queue, false);
    out->name = attr(n, "name");
    if (!out->name) {
        struct buf b = BUF_INIT;
        buf_printf(&b, "%s%s%s",
                   is(n, "stdout") ? "stdout"
                   : is(n, "file") ? "file:"
                                   : "forward:",
                   out->path ? out->path : "", out->to ? out->to : "");
        out->name = xstrdup(buf_str(&b));
        buf_free(&b);
    }
}

/* Every attribute of an element, in document order. */
static struct exconf_attr *
all_attrs(const xmlNode *n, size_t *count)
{
    const xmlAttr *a;
    struct exconf_attr *out = NULL;
    size_t cap = 0;

    *count = 0;
    for (a = n->properties; a; a = a->next) {
        xmlChar *v = xmlNodeListGetString(n->doc, a->children, 1);
        out = xgrow(out, &cap, *count + 1, sizeof(*out));
        out[*count].name = xstrdup((const char *)a->name);
        out[*count].value = xstrdup(v ? (const char *)v : "");
        xmlFree(v);
        (*count)++;
    }
    return out;
}

static void
read_executor(struct reader *r, struct conf *c, const xmlNode *n)
{
    struct exconf *e;
    const xmlNode *k;
    size_t cap = c->nexecutors, i, ccap = 0;

    for (i = 0; i < c->nexecutors; i++)
        if (c->executors[i].name && attr_is(n, "name", c->executors[i].name))
            error(r, n, "a second executor named '%s' (the first is at line %d)",
                  c->executors[i].name, c->executors[i].line);
    c->executors = xgrow(c->executors, &cap, c->nexecutors + 1, sizeof(*c->executors));
    e = &c->executors[c->nexecutors++];
    memset(e, 0, sizeof(*e));
    e->kind = xstrdup((const char *)n->name);
    e->name = attr(n, "name");
    e->line = (int)xmlGetLineNo(n);
    e->attrs = all_attrs(n, &e->nattrs);
    for (k = n->children; k; k = k->next) {
        struct exconf_node *cn;
        xmlChar *text;
        if (k->type != XML_ELEMENT_NODE) continue;
        e->children = xgrow(e->children, &ccap, e->nchildren + 1, sizeof(*e->children));
        cn = &e->children[e->nchildren++];
        memset(cn, 0, sizeof(*cn));
        cn->name = xstrdup((const char *)k->name);
        cn->line = (int)xmlGetLineNo(k);
        cn->attrs = all_attrs(k, &cn->nattrs);
        text = xmlNodeGetContent(k);
        if (text && text[0]) cn->text = xstrdup((const char *)text);
        xmlFree(text);
    }
}

/* <inhibit>: its matchers must parse (errors come with the line, not at the first alert). */
static void
read_inhibit(struct reader *r, struct conf *c, const xmlNode *n)
{
    struct conf_inhibit *in;
    size_t cap = c->ninhibits;
    const char *which[2] = {"source", "target"};
    int i;

    c->inhibits = xgrow(c->inhibits, &cap, c->ninhibits + 1, sizeof(*c->inhibits));
    in = &c->inhibits[c->ninhibits++];
    memset(in, 0, sizeof(*in));
    in->source = attr(n, "source");
    in->target = attr(n, "target");
    in->line = (int)xmlGetLineNo(n);
    for (i = 0; i < 2; i++) {
        const char *text = i ? in->target : in->source;
        struct buf e = BUF_INIT;
        struct labelmatch *lm = text ? labelmatch_parse(text, &e) : NULL;
        if (!text)
            error(r, n, "inhibit needs %s=", which[i]);
        else if (!lm)
            error(r, n, "inhibit %s=\"%s\": %s", which[i], text, buf_str(&e));
        labelmatch_free(lm);
        buf_free(&e);
    }
    {
        /* the labels every alert carries (engine/alertlabels.h), and those every message has */
        static const char *const always[] = {
            "HOST",         "PROGRAM",           "corral.alert_id", "corral.severity",
            "corral.event", "corral.summary",    "rule_id",         ".classifier.rule_id",
            "class",        ".classifier.class",
        };
        char *eq = attr(n, "equal");
        size_t k, j;
        strlist_split(eq, &in->equal, &in->nequal);
        free(eq);
        for (k = 0; k < in->nequal; k++) {
            for (j = 0; j < sizeof(always) / sizeof(always[0]); j++)
                if (strcmp(in->equal[k], always[j]) == 0) break;
            if (j == sizeof(always) / sizeof(always[0]))
                warning(r, n,
                        "inhibit equal=\"%s\": not a label every alert carries; two alerts "
                        "that both lack it are equal (its empty value), across hosts",
                        in->equal[k]);
        }
    }
    {
        char *ports = attr(n, "topology-port");
        in->topology = attr_is(n, "topology", "yes");
        strlist_split(ports, &in->ports, &in->nports);
        if (ports && !in->topology) error(r, n, "inhibit topology-port= needs topology=\"yes\"");
        if (in->nports > 8) error(r, n, "inhibit topology-port=: at most 8 labels");
        free(ports);
    }
}

static void
read_route(struct reader *r, struct conf_route *rt, const xmlNode *n, int depth)
{
    const xmlNode *k;
    size_t cap = 0;
    char *to = attr(n, "to");

    memset(rt, 0, sizeof(*rt));
    rt->line = (int)xmlGetLineNo(n);
    strlist_split(to, &rt->to, &rt->nto);
    free(to);
    rt->class = attr(n, "class");
    rt->rule = attr(n, "rule");
    rt->tag = attr(n, "tag");
    rt->filter = attr(n, "filter");
    rt->cont = attr_is(n, "continue", "yes");
    rt->send_resolved = attr_is(n, "send-resolved", "yes")  ? 1
                        : attr_is(n, "send-resolved", "no") ? 0
                                                            : -1;
    rt->messages = CONF_SELECT_GENERATED;
    if (attr_is(n, "messages", "classified")) rt->messages = CONF_SELECT_CLASSIFIED;
    if (attr_is(n, "messages", "all")) rt->messages = CONF_SELECT_ALL;
    if (depth > 16) {
        error(r, n, "routes nested too deeply");
        return;
    }
    for (k = n->children; k; k = k->next) {
        if (k->type != XML_ELEMENT_NODE) continue;
        rt->children = xgrow(rt->children, &cap, rt->nchildren + 1, sizeof(*rt->children));
        read_route(r, &rt->children[rt->nchildren++], k, depth + 1);
    }
}

/* Every executor a route names must exist. */
static void
check_routes(struct reader *r, const struct conf *c, const xmlNode *n)
{
    const xmlNode *k;

    for (k = n->children; k; k = k->next) {
        char *to, **names;
        size_t nnames, i, j;
        if (k->type != XML_ELEMENT_NODE) continue;
        to = attr(k, "to");
        strlist_split(to, &names, &nnames);
        for (i = 0; i < nnames; i++) {
            for (j = 0; j < c->nexecutors; j++)
                if (strcmp(c->executors[j].name, names[i]) == 0) break;
            if (j == c->nexecutors) error(r, k, "route to unknown executor '%s'", names[i]);
            free(names[i]);
        }
        free(names);
        free(to);
        check_routes(r, c, k);
    }
}

/* <absence address= severity=>: whom a source is bound to, and what its reports say. */
static void
read_absence_binding(struct reader *r, const xmlNode *n, struct conf_absence *s)
{
    static const char *const severities[] = {"critical", "major", "minor", "warning", "info"};
    char *a = attr(n, "address");
    size_t i;

    if (a && strcmp(a, "any") == 0)
        s->any_address = true;
    else if (a && strcmp(a, "bound") != 0)
        error(r, n, "absence address= must be bound or any, not \"%s\"", a);
    free(a);
    s->severity = attr(n, "severity");
    if (!s->severity) return;
    for (i = 0; i < sizeof(severities) / sizeof(*severities); i++)
        if (strcmp(s->severity, severities[i]) == 0) return;
    error(r, n, "absence severity= must be critical, major, minor, warning or info, not \"%s\"",
          s->severity);
}

static void
conf_cluster_free(struct conf_cluster *cc)
{
    if (!cc) return;
    free(cc->nats);
    free(cc->name);
    free(cc->node);
    free(cc->creds);
    free(cc->user);
    free(cc->password_file);
    free(cc->ca);
    free(cc->cert);
    free(cc->key);
    free(cc);
}

/*
 * <cluster nats="nats://h1:4222,..." name= node= partitions= replicas= lease=
 * retention=
 * max-in-flight= creds= user= password-file= ca= cert= key=/>.  The names
 * become parts of NATS subjects, streams and keys: letters, digits, - and _.
 */
static void
read_cluster(struct reader *r, struct conf *c, const xmlNode *n)
{
    struct conf_cluster *cc = xcalloc(1, sizeof(*cc));
    char host[256];
    const char *bad;

    conf_cluster_free(c->cluster);
    c->cluster = cc;
    cc->line = (int)xmlGetLineNo(n);
    cc->nats = attr(n, "nats");
    cc->name = attr(n, "name");
    if (!cc->name) cc->name = xstrdup("corral");
    cc->node = attr(n, "node");
    if (!cc->node) {
        if (gethostname(host, sizeof(host)) < 0) snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = 0;
        /* a dotted host name is not a NATS token: its first label */
        host[strcspn(host, ".")] = 0;
        cc->node = xstrdup(host);
    }
    cc->partitions = number_attr(r, n, "partitions", 64, false);
    cc->replicas = number_attr(r, n, "replicas", 3, false);
    cc->lease = duration_attr(r, n, "lease", 5);
    cc->retention = duration_attr(r, n, "retention", 86400);
    cc->max_in_flight = number_attr(r, n, "max-in-flight", 4096, false);
    cc->creds = attr(n, "creds");
    cc->user = attr(n, "user");
    cc->password_file = attr(n, "password-file");
    cc->ca = attr(n, "ca");
    cc->cert = attr(n, "cert");
    cc->key = attr(n, "key");
    if (!cc->nats || !*cc->nats) error(r, n, "cluster nats= must name at least one server URL");
    for (bad = cc->name; *bad && (isalnum((unsigned char)*bad) || *bad == '-' || *bad == '_');)
        bad++;
    if (*bad || !*cc->name) error(r, n, "cluster name= may only hold letters, digits, - and _");
    for (bad = cc->node; *bad && (isalnum((unsigned char)*bad) || *bad == '-' || *bad == '_');)
        bad++;
    if (*bad || !*cc->node) error(r, n, "cluster node= may only hold letters, digits, - and _");
    if (cc->partitions > 1024) error(r, n, "cluster partitions= must lie between 1 and 1024");
    if (cc->replicas > 5) error(r, n, "cluster replicas= must lie between 1 and 5");
    if (cc->lease < 1) error(r, n, "cluster lease= must be at least 1s");
    if (cc->retention < 60) error(r, n, "cluster retention= must be at least 60s");
    if (!cc->user != !cc->password_file)
        error(r, n, "cluster user= and password-file= go together");
    if (cc->creds && cc->user) error(r, n, "cluster creds= and user= exclude each other");
    if (!cc->cert != !cc->key) error(r, n, "cluster cert= and key= go together");
}

static void
read_tree(struct reader *r, struct conf *c, const xmlNode *root)
{
    const xmlNode *n, *k;

    for (n = root->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE) continue;
        if (is(n, "rules")) {
            char *p = attr(n, "path");
            conf_add_rules(c, p, (int)xmlGetLineNo(n));
            free(p);
        } else if (is(n, "sigma")) {
            c->sigma = xrealloc(c->sigma, (c->nsigma + 1) * sizeof(*c->sigma));
            c->sigma[c->nsigma].rules = attr(n, "rules");
            c->sigma[c->nsigma].mapping = attr(n, "mapping");
            c->sigma[c->nsigma++].line = (int)xmlGetLineNo(n);
        } else if (is(n, "state")) {
            free(c->state_file);
            c->state_file = attr(n, "file");
            c->state_line = (int)xmlGetLineNo(n);
            c->state_interval = duration_attr(r, n, "interval", c->state_interval);
        } else if (is(n, "daemon")) {
            /* an element given twice: the last one counts (as for <state>) */
            free(c->user);
            free(c->group);
            free(c->pidfile);
            c->user = attr(n, "user");
            c->group = attr(n, "group");
            c->pidfile = attr(n, "pidfile");
            /* absent: auto, on when started as root with a user to drop to (corrald.c) */
            c->privsep = attr_is(n, "privsep", "yes")  ? CONF_PRIVSEP_YES
                         : attr_is(n, "privsep", "no") ? CONF_PRIVSEP_NO
                                                       : CONF_PRIVSEP_AUTO;
            c->privsep_line = (int)xmlGetLineNo(n);
        } else if (is(n, "log")) {
            char *v = attr(n, "level");
            if (v) {
                free(c->log_level);
                c->log_level = v;
            }
            free(c->log_to);
            c->log_to = attr(n, "to");
        } else if (is(n, "control")) {
            free(c->control_socket);
            c->control_socket = attr(n, "socket");
            c->control_timeout = duration_attr(r, n, "timeout", c->control_timeout);
            if (c->control_timeout <= 0) error(r, n, "timeout must be more than 0");
            read_control_access(r, n, c);
        } else if (is(n, "stats")) {
            free(c->stats_listen);
            c->stats_listen = attr(n, "listen");
            c->stats_line = (int)xmlGetLineNo(n);
            check_address(r, n, c->stats_listen);
            free(c->stats_api_token_file);
            if (c->stats_api_token) explicit_bzero(c->stats_api_token, strlen(c->stats_api_token));
            free(c->stats_api_token);
            c->stats_api_token = NULL;
            c->stats_api_token_file = attr(n, "api-token-file");
            if (c->stats_api_token_file)
                c->stats_api_token = read_token(r, n, c->stats_api_token_file);
            free(c->stats_external_url);
            c->stats_external_url = external_url(r, n);
        } else if (is(n, "engine")) {
            c->engine_workers = number_attr(r, n, "workers", c->engine_workers, false);
            c->engine_queue = number_attr(r, n, "queue", c->engine_queue, false);
            if (c->engine_workers > 64) error(r, n, "workers must lie between 1 and 64");
            if (xmlHasProp(n, (const xmlChar *)"queue") && c->engine_queue < 2)
                error(r, n, "queue must be at least 2");
        } else if (is(n, "cluster")) {
            read_cluster(r, c, n);
        } else if (is(n, "limits")) {
            c->max_message_size = number_attr(r, n, "max-message-size", c->max_message_size, true);
            if (c->max_message_size > CONF_MESSAGE_SIZE_MAX)
                error(r, n,
                      "bad size max-message-size: at most 1G (inputs allocate buffers of it)");
            c->max_connections = number_attr(r, n, "max-connections", c->max_connections, false);
            c->max_connections_per_peer =
                number_attr(r, n, "max-connections-per-peer", c->max_connections_per_peer, false);
            c->idle_timeout = duration_attr(r, n, "idle-timeout", c->idle_timeout);
            c->max_contexts = number_attr(r, n, "max-contexts", c->max_contexts, false);
            c->max_context_messages =
                number_attr(r, n, "max-context-messages", c->max_context_messages, false);
            c->context_share = number_attr(r, n, "context-share", c->context_share, false);
            c->max_context_bytes =
                number_attr(r, n, "max-context-bytes", c->max_context_bytes, true);
            c->max_context_memory =
                number_attr(r, n, "max-context-memory", c->max_context_memory, true);
            c->max_rate_buckets = number_attr(r, n, "max-rate-buckets", c->max_rate_buckets, false);
            c->max_sigma_memory = number_attr(r, n, "max-sigma-memory", c->max_sigma_memory, true);
            if (c->context_share > (c->max_contexts ? c->max_contexts : 1000000))
                error(r, n, "context-share must not exceed max-contexts");
            if (xmlHasProp(n, (const xmlChar *)"max-silence-sources")) {
                warning(r, n, "max-silence-sources= is deprecated: write max-absence-sources=");
                c->max_absence_sources =
                    number_attr(r, n, "max-silence-sources", c->max_absence_sources, false);
            }
            c->max_absence_sources =
                number_attr(r, n, "max-absence-sources", c->max_absence_sources, false);
            if (c->max_message_size < 64 || c->max_message_size > 256u * 1024 * 1024)
                error(r, n, "max-message-size must lie between 64 bytes and 256M");
        } else if (is(n, "inputs")) {
            for (k = n->children; k; k = k->next)
                if (k->type == XML_ELEMENT_NODE) read_input(r, c, k);
        } else if (is(n, "outputs")) {
            for (k = n->children; k; k = k->next)
                if (k->type == XML_ELEMENT_NODE) read_output(r, c, k);
        } else if (is(n, "absence") || is(n, "silence")) {
            struct conf_absence *s;
            size_t cap = c->nabsences;
            /* <silence> was its name before "silence" came to mean muting an alert */
            if (is(n, "silence"))
                warning(r, n, "<silence> is deprecated: write <absence> (the same attributes)");
            c->absences = xgrow(c->absences, &cap, c->nabsences + 1, sizeof(*c->absences));
            s = &c->absences[c->nabsences++];
            memset(s, 0, sizeof(*s));
            s->host = attr(n, "host");
            s->program = attr(n, "program");
            s->after = duration_attr(r, n, "after", 300);
            s->line = (int)xmlGetLineNo(n);
            if (s->after <= 0) error(r, n, "absence after= must be more than 0");
            /* a week, or twice after= when that is longer: a quiet source is not kept forever */
            s->forget = duration_attr(r, n, "forget", s->after < 302400 ? 604800 : 2 * s->after);
            if (s->forget <= s->after) error(r, n, "absence forget= must be more than after=");
            read_absence_binding(r, n, s);
        } else if (is(n, "alerts")) {
            char *id = attr(n, "alert-id");
            c->max_alerts = number_attr(r, n, "max-alerts", c->max_alerts, false);
            c->max_silences = number_attr(r, n, "max-silences", c->max_silences, false);
            c->silence_retention = duration_attr(r, n, "silence-retention", c->silence_retention);
            c->resolve_timeout = duration_attr(r, n, "resolve-timeout", c->resolve_timeout);
            read_evidence(r, c, n);
            if (id) {
                struct buf e = BUF_INIT;
                struct template *t = template_compile_str(id, &e);
                if (!t) error(r, n, "bad alert-id template: %s", buf_str(&e));
                template_free(t);
                buf_free(&e);
                free(c->alert_id);
                c->alert_id = id;
            }
        } else if (is(n, "inhibit")) {
            read_inhibit(r, c, n);
        } else if (is(n, "topology")) {
            /* read with the alert store (agent/alerting/alerts.c), so that a reload reads it again
             */
            free(c->topology_file);
            c->topology_file = attr(n, "path");
            c->topology_line = (int)xmlGetLineNo(n);
        } else if (is(n, "executors")) {
            char *spool = attr(n, "spool");
            c->executors_line = (int)xmlGetLineNo(n);
            if (spool) {
                free(c->spool_dir);
                c->spool_dir = spool;
            }
            for (k = n->children; k; k = k->next)
                if (k->type == XML_ELEMENT_NODE) read_executor(r, c, k);
        } else if (is(n, "routes")) {
            size_t cap = c->nroutes;
            for (k = n->children; k; k = k->next) {
                if (k->type != XML_ELEMENT_NODE) continue;
                c->routes = xgrow(c->routes, &cap, c->nroutes + 1, sizeof(*c->routes));
                read_route(r, &c->routes[c->nroutes++], k, 0);
            }
        }
    }
    if (!c->nrules && !c->nsigma)
        error(r, root, "no <rules path=\"...\"/>: corrald needs rules to classify with");
    for (n = root->children; n; n = n->next)
        if (n->type == XML_ELEMENT_NODE && is(n, "routes")) check_routes(r, c, n);
}

static bool
validate(struct reader *r, xmlDocPtr doc, const char *schema)
{
    xmlSchemaParserCtxtPtr pctx =
        schema ? xmlSchemaNewParserCtxt(schema)
               : xmlSchemaNewMemParserCtxt(conf_schema_xsd, (int)conf_schema_xsd_len);
    xmlSchemaPtr s = pctx ? xmlSchemaParse(pctx) : NULL;
    xmlSchemaValidCtxtPtr vctx;
    int rc;

    if (!s) {
        buf_printf(r->err, "%s: cannot load the configuration schema\n",
                   schema ? schema : "built-in");
        if (pctx) xmlSchemaFreeParserCtxt(pctx);
        r->errors++;
        return false;
    }
    vctx = xmlSchemaNewValidCtxt(s);
    xmlSchemaSetValidStructuredErrors(vctx, xml_error, r);
    rc = xmlSchemaValidateDoc(vctx, doc);
    xmlSchemaFreeValidCtxt(vctx);
    xmlSchemaFree(s);
    xmlSchemaFreeParserCtxt(pctx);
    return rc == 0;
}

/*
 * Where a followed file's read position is kept when the configuration does
 * not say: beside the state file, which lives in a directory corrald can
 * still write after dropping privileges ("<state dir>/<path, / and % escaped>.pos");
 * without a state file, beside the followed file ("<path>.corral-pos").
 */
static void
default_positions(struct conf *c)
{
    size_t i;

    for (i = 0; i < c->ninputs; i++) {
        struct conf_input *in = &c->inputs[i];
        struct buf b = BUF_INIT;
        const char *p, *slash;

        if (in->type != CONF_IN_FILE || in->position_file || !in->path) continue;
        if (c->state_file && (slash = strrchr(c->state_file, '/'))) {
            buf_append(&b, c->state_file, (size_t)(slash - c->state_file + 1));
        } else if (c->state_file) {
            buf_puts(&b, "./");
        } else {
            buf_printf(&b, "%s.corral-pos", in->path);
            in->position_file = xstrdup(buf_str(&b));
            buf_free(&b);
            continue;
        }
        for (p = in->path; *p; p++) {
            if (*p == '/')
                buf_puts(&b, "%2F");
            else if (*p == '%')
                buf_puts(&b, "%25");
            else
                buf_putc(&b, *p);
        }
        buf_puts(&b, ".pos");
        in->position_file = xstrdup(buf_str(&b));
        buf_free(&b);
    }
}

struct conf *
conf_load(const char *path, const char *schema, struct buf *err)
{
    struct reader r = {path, err, 0, BUF_INIT};
    struct conf *c;
    xmlDocPtr doc;
    char *data;
    size_t len;

    /* read here, not by libxml2: a FIFO or /dev/zero must get an error, not hang start-up */
    data = durable_read_file(path, CONF_FILE_MAX, &len);
    if (!data) {
        buf_printf(err, "%s: cannot read the configuration: %s\n", path, durable_strerror(errno));
        return NULL;
    }
    xmlSetStructuredErrorFunc(&r, xml_error);
    doc = xmlReadMemory(data, (int)len, path, NULL, XML_PARSE_NONET | XML_PARSE_NOWARNING);
    xmlSetStructuredErrorFunc(NULL, NULL);
    free(data);
    if (!doc) {
        if (!r.errors) buf_printf(err, "%s: cannot read the configuration\n", path);
        return NULL;
    }
    if (r.errors || !validate(&r, doc, schema)) {
        xmlFreeDoc(doc);
        return NULL;
    }
    c = xmalloc(sizeof(*c));
    conf_init(c);
    c->file = xstrdup(path);
    read_tree(&r, c, xmlDocGetRootElement(doc));
    xmlFreeDoc(doc);
    default_positions(c);
    if (r.warnings.len) c->warnings = xstrdup(buf_str(&r.warnings));
    if (r.errors && r.warnings.len) buf_puts(err, buf_str(&r.warnings)); /* with the errors */
    buf_free(&r.warnings);
    if (r.errors) {
        conf_free(c);
        return NULL;
    }
    return c;
}
