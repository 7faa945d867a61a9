/*
 * apiv2: Alertmanager's API v2 in corrald (see apiv2.h for the endpoints
 * and how corrald's labels are named there).
 *
 * The read endpoints take the JSON the alert store and the silences give
 * the control socket (alerts_to_json, silences_to_json) and reshape it into
 * Alertmanager's gettableAlert and gettableSilence; the write endpoints
 * call the same modules, and a posted alert becomes a generated message
 * that server_inject_alert() routes as a rule's alert.  None of this is on
 * the per-message path: it runs per API request.
 *
 * Errors are answered as Alertmanager answers them, a JSON string (the
 * spec's BadRequest), with 400, or 404 for an unknown silence.
 */
#include <config.h>

#include "agent/web/apiv2.h"
#include "agent/alerting/alerts.h"
#include "agent/core/metrics.h"
#include "agent/core/server.h"
#include "agent/alerting/silences.h"
#include "engine/civil.h"
#include "engine/clock.h"
#include "engine/labelmatch.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/tags.h"

#include <microhttpd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A posted alert's labels and annotations, each; more is refused (Prometheus sends a handful). */
#define MAX_LABELS 64
/* The longest label name accepted from a client. */
#define MAX_NAME 128
/* Alertmanager's answer to a time it does not have: Go's zero time. */
#define ZERO_TIME "0001-01-01T00:00:00Z"

static struct api_stats {
    uint64_t received; /* posted alerts injected */
    uint64_t cleared;  /* of which clears (endsAt in the past) */
    uint64_t invalid;  /* POST /api/v2/alerts requests refused: a bad alert in them */
} stats;

/* ---- names and fingerprints ---- */

/* Prometheus' label names: [a-zA-Z_][a-zA-Z0-9_]* */
static bool
valid_name(const char *s)
{
    size_t i;

    if (!s || !*s || (*s >= '0' && *s <= '9')) return false;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* The API's name of corrald's label name (apiv2.h), into out (cleared first). */
static void
api_name(const char *name, struct buf *out)
{
    static const char classifier[] = ".classifier.";
    const char *p;

    buf_reset(out);
    if (strcmp(name, "corral.event") == 0) {
        buf_puts(out, "alertname");
        return;
    }
    if (strcmp(name, "corral.severity") == 0) {
        buf_puts(out, "severity");
        return;
    }
    if (strncmp(name, classifier, sizeof(classifier) - 1) == 0) name += sizeof(classifier) - 1;
    if (*name >= '0' && *name <= '9') buf_putc(out, '_');
    for (p = name; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        buf_putc(out, ok ? c : '_');
    }
    if (!out->len) buf_putc(out, '_');
}

/* corrald's name of a silence matcher's label name given through the API (apiv2.h). */
static void
silence_name(const char *name, struct buf *out)
{
    buf_reset(out);
    if (strcmp(name, "alertname") == 0)
        buf_puts(out, "corral.event");
    else if (strcmp(name, "severity") == 0)
        buf_puts(out, "corral.severity");
    else if (strncmp(name, "corral_", 7) == 0)
        buf_printf(out, "corral.%s", name + 7);
    else
        buf_puts(out, name);
}

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME  1099511628211ULL

static uint64_t
fnv_add(uint64_t h, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV_PRIME;
    }
    return h;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Alertmanager's fingerprint of a label set (prometheus/common's
 * LabelSet.Fingerprint): FNV-1a 64 of the names in byte order, each name
 * and value followed by the byte 0xff.
 */
static void
labels_fingerprint(const json_t *labels, char out[17])
{
    const char *names[MAX_LABELS];
    const char *name;
    json_t *v;
    size_t n = 0, i;
    uint64_t h = FNV_OFFSET;

    json_object_foreach((json_t *)labels, name, v)
    {
        if (n < MAX_LABELS) names[n++] = name;
    }
    qsort(names, n, sizeof(names[0]), cmp_str);
    for (i = 0; i < n; i++) {
        const json_t *val = json_object_get(labels, names[i]);
        h = fnv_add(h, names[i], strlen(names[i]));
        h = fnv_add(h, "\xff", 1);
        h = fnv_add(h, json_string_value(val), json_string_length(val));
        h = fnv_add(h, "\xff", 1);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* The fingerprint of an alert id: a posted alert's own (am/FINGERPRINT), else FNV-1a 64 of it. */
static void
id_fingerprint(const char *id, char out[17])
{
    if (strncmp(id, "am/", 3) == 0 && strlen(id) == 19 &&
        strspn(id + 3, "0123456789abcdef") == 16) {
        memcpy(out, id + 3, 17);
        return;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)fnv_add(FNV_OFFSET, id, strlen(id)));
}

/* ---- replies ---- */

/* Alertmanager's errors: a JSON string. */
static void v2_error(struct http_reply *rep, unsigned code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
v2_error(struct http_reply *rep, unsigned code, const char *fmt, ...)
{
    struct buf msg = BUF_INIT;
    va_list ap;
    json_t *v;
    char *s;

    va_start(ap, fmt);
    buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    v = json_string(buf_str(&msg));
    /* http_json() dumps objects and arrays only */
    s = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
    rep->code = code;
    rep->type = NULL;
    buf_reset(&rep->body);
    buf_puts(&rep->body, s ? s : "\"(unprintable)\"");
    buf_putc(&rep->body, '\n');
    free(s);
    json_decref(v);
    buf_free(&msg);
}

static bool
started(struct http_request *req, struct http_reply *rep)
{
    if (server_alerts(req->srv) && server_silences(req->srv)) return true;
    v2_error(rep, 503, "not started yet");
    return false;
}

/* ---- query arguments ---- */

/* ?NAME=true|false (default def); -1 when it is neither. */
static int
bool_arg(struct http_request *req, const char *name, bool def, bool *out)
{
    const char *v = MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);

    *out = def;
    if (!v || !*v) return 0;
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = false;
    else
        return -1;
    return 0;
}

struct filter_ctx {
    struct labelmatch *lm;
    bool silence_names; /* the names of silence matchers (silence_name) */
    struct buf err;
    int rc;
};

/* Appends a matcher to lm: NAME OP "VALUE", the value quoted as labelmatch reads it. */
static int
add_matcher(struct labelmatch *lm, const char *name, enum labelmatch_op op, const char *value,
            struct buf *err)
{
    struct buf text = BUF_INIT;
    const char *p;
    int rc;

    buf_printf(&text, "%s%s\"", name, labelmatch_op_name(op));
    for (p = value; *p; p++) {
        if (*p == '"' || *p == '\\') buf_putc(&text, '\\');
        if (*p == '\n')
            buf_puts(&text, "\\n");
        else
            buf_putc(&text, *p);
    }
    buf_putc(&text, '"');
    rc = labelmatch_add(lm, text.p, text.len, err);
    buf_free(&text);
    return rc;
}

static enum MHD_Result
add_filter(void *arg, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct filter_ctx *f = arg;
    struct labelmatch *one;
    struct buf name = BUF_INIT;
    size_t i;
    bool done;

    (void)kind;
    if (strcmp(key, "filter") != 0 || !value) return MHD_YES;
    if (!f->silence_names) {
        if (labelmatch_add(f->lm, value, strlen(value), &f->err) < 0) goto bad;
        return MHD_YES;
    }
    if (!(one = labelmatch_parse(value, &f->err))) goto bad;
    for (i = 0; i < labelmatch_count(one); i++) {
        const char *n, *v;
        enum labelmatch_op op;
        labelmatch_at(one, i, &n, &op, &v);
        silence_name(n, &name);
        if (add_matcher(f->lm, buf_str(&name), op, v, &f->err) < 0) break;
    }
    done = i == labelmatch_count(one);
    labelmatch_free(one);
    buf_free(&name);
    if (done) return MHD_YES;
bad:
    f->rc = -1;
    return MHD_NO;
}

/* The ?filter= matchers, one set (NULL: none given); -1 with the reason answered (400). */
static int
filters(struct http_request *req, struct http_reply *rep, bool silence_names,
        struct labelmatch **out)
{
    struct filter_ctx f = {labelmatch_new(), silence_names, BUF_INIT, 0};

    *out = NULL;
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, add_filter, &f);
    if (f.rc < 0) {
        v2_error(rep, 400, "bad filter: %s", buf_str(&f.err));
        labelmatch_free(f.lm);
        buf_free(&f.err);
        return -1;
    }
    buf_free(&f.err);
    if (labelmatch_count(f.lm) == 0)
        labelmatch_free(f.lm);
    else
        *out = f.lm;
    return 0;
}

/* ---- alerts ---- */

/* corrald's values that are not labels of the API: the time, the syslog fields, the tags */
static bool
left_out(const char *name)
{
    static const char *const names[] = {
        "ISODATE",       "FACILITY", "PRIORITY", "TAGS", "corral.since", "corral.resolve_after",
        "LEGACY_MSGHDR",
    };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0) return true;
    return false;
}

#define ANNOTATION "corral.annotation."

/* A stored alert (an entry of alerts_to_json) as a gettableAlert; NULL when it is resolved. */
static json_t *
alert_view(const json_t *e)
{
    const char *state = json_string_value(json_object_get(e, "state"));
    const char *id = json_string_value(json_object_get(e, "id"));
    const char *by = json_string_value(json_object_get(e, "mutedBy"));
    json_t *in = json_object_get(e, "labels"), *v, *labels, *ann, *recv, *st, *a;
    json_t *url = NULL;
    const json_t *ends = json_object_get(e, "resolveAt");
    const char *name;
    struct buf n = BUF_INIT;
    char fp[17];

    if (!state || !id || strcmp(state, "resolved") == 0) return NULL;
    labels = json_object();
    ann = json_object();
    json_object_foreach(in, name, v)
    {
        if (!json_is_string(v) || left_out(name)) continue;
        if (strcmp(name, "MESSAGE") == 0)
            json_object_set(ann, "description", v);
        else if (strcmp(name, "corral.summary") == 0)
            json_object_set(ann, "summary", v);
        else if (strcmp(name, "corral.generator_url") == 0)
            url = v;
        else if (strcmp(name, "corral.url") == 0) /* the alert's page: a link, no label */
            json_object_set(ann, "corral_url", v);
        else if (strncmp(name, ANNOTATION, sizeof(ANNOTATION) - 1) == 0)
            json_object_set(ann, name + sizeof(ANNOTATION) - 1, v);
        else if (valid_name(name))
            json_object_set(labels, name, v);
    }
    /* then the mapped names, where the alert has no label of that name itself */
    json_object_foreach(in, name, v)
    {
        if (!json_is_string(v) || left_out(name) || valid_name(name) ||
            strcmp(name, "corral.summary") == 0 || strcmp(name, "corral.generator_url") == 0 ||
            strcmp(name, "corral.url") == 0 ||
            strncmp(name, ANNOTATION, sizeof(ANNOTATION) - 1) == 0)
            continue;
        api_name(name, &n);
        if (!json_object_get(labels, buf_str(&n))) json_object_set(labels, buf_str(&n), v);
    }
    if (!json_object_get(labels, "alertname")) {
        const json_t *rule = json_object_get(labels, "rule_id");
        json_object_set_new(labels, "alertname",
                            json_string(json_is_string(rule) ? json_string_value(rule) : id));
    }
    recv = json_array();
    json_object_foreach(json_object_get(e, "executors"), name, v)
    {
        json_array_append_new(recv, json_pack("{s:s}", "name", name));
    }
    st = json_pack("{s:s, s:[], s:[]}", "state",
                   strcmp(state, "firing") == 0 ? "active" : "suppressed", "silencedBy",
                   "inhibitedBy");
    if (by && strcmp(state, "silenced") == 0) {
        json_array_append_new(json_object_get(st, "silencedBy"), json_string(by));
    } else if (by && strcmp(state, "inhibited") == 0) {
        id_fingerprint(by, fp); /* Alertmanager names the inhibiting alert by its fingerprint */
        json_array_append_new(json_object_get(st, "inhibitedBy"), json_string(fp));
    }
    id_fingerprint(id, fp);
    a = json_pack("{s:o, s:o, s:O, s:O, s:s, s:s, s:o, s:o}", "labels", labels, "annotations", ann,
                  "startsAt", json_object_get(e, "firstSeen"), "updatedAt",
                  json_object_get(e, "lastSeen"), "endsAt",
                  json_is_string(ends) ? json_string_value(ends) : ZERO_TIME, "fingerprint", fp,
                  "receivers", recv, "status", st);
    if (a && url) json_object_set(a, "generatorURL", url);
    buf_free(&n);
    return a;
}

/* A label of a JSON object of labels, by the name a matcher gives (labelmatch_get_fn). */
static const char *
json_label(void *arg, const char *name, size_t *len)
{
    const json_t *v = json_object_get(arg, name);

    if (!json_is_string(v)) return NULL;
    *len = json_string_length(v);
    return json_string_value(v);
}

/*
 * Whether a gettableAlert's labels satisfy lm.  The names are the API's, as
 * the alert shows them, matched as text: a filter registers no value name.
 */
static bool
labels_match(const struct labelmatch *lm, const json_t *labels)
{
    return labelmatch_match_labels(lm, json_label, (void *)labels);
}

/* Whether one of a gettableAlert's receivers matches the ?receiver= set. */
static bool
receiver_match(const struct labelmatch *lm, const json_t *a)
{
    const json_t *r;
    size_t i;

    json_array_foreach(json_object_get(a, "receivers"), i, r)
    {
        json_t *one = json_pack("{s:O}", "receiver", json_object_get(r, "name"));
        bool yes = one && labelmatch_match_labels(lm, json_label, one);
        json_decref(one);
        if (yes) return true;
    }
    return false;
}

/*
 * The alerts the query arguments select, as gettableAlerts; NULL with the
 * answer (400) in rep when an argument is bad.
 */
static json_t *
selected_alerts(struct http_request *req, struct http_reply *rep)
{
    bool active, silenced, inhibited, unprocessed;
    const char *receiver =
        MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, "receiver");
    struct labelmatch *lm = NULL, *rlm = NULL;
    struct buf err = BUF_INIT;
    json_t *all, *sel, *e;
    size_t i;

    if (bool_arg(req, "active", true, &active) < 0 ||
        bool_arg(req, "silenced", true, &silenced) < 0 ||
        bool_arg(req, "inhibited", true, &inhibited) < 0 ||
        bool_arg(req, "unprocessed", true, &unprocessed) < 0) {
        v2_error(rep, 400, "active, silenced, inhibited and unprocessed are true or false");
        return NULL;
    }
    if (filters(req, rep, false, &lm) < 0) return NULL;
    if (receiver && *receiver) {
        rlm = labelmatch_new();
        if (add_matcher(rlm, "receiver", LABELMATCH_RE, receiver, &err) < 0) {
            v2_error(rep, 400, "bad receiver: %s", buf_str(&err));
            labelmatch_free(rlm);
            labelmatch_free(lm);
            buf_free(&err);
            return NULL;
        }
    }
    all = alerts_to_json(server_alerts(req->srv), NULL, NULL);
    sel = json_array();
    json_array_foreach(all, i, e)
    {
        json_t *a = alert_view(e);
        const json_t *st;
        bool keep;
        if (!a) continue;
        st = json_object_get(a, "status");
        if (json_array_size(json_object_get(st, "silencedBy")))
            keep = silenced;
        else if (json_array_size(json_object_get(st, "inhibitedBy")))
            keep = inhibited;
        else
            keep = active;
        if (keep && lm) keep = labels_match(lm, json_object_get(a, "labels"));
        if (keep && rlm) keep = receiver_match(rlm, a);
        if (keep)
            json_array_append_new(sel, a);
        else
            json_decref(a);
    }
    json_decref(all);
    labelmatch_free(lm);
    labelmatch_free(rlm);
    buf_free(&err);
    return sel;
}

void
apiv2_get_alerts(struct http_request *req, struct http_reply *rep)
{
    json_t *sel;

    if (!started(req, rep)) return;
    if ((sel = selected_alerts(req, rep))) http_json(rep, 200, sel);
}

/* The group of receiver name in groups (made when new). */
static json_t *
group_of(json_t *groups, const char *name)
{
    json_t *g;
    size_t i;

    json_array_foreach(groups, i, g)
    {
        if (strcmp(json_string_value(json_object_get(json_object_get(g, "receiver"), "name")),
                   name) == 0)
            return g;
    }
    g = json_pack("{s:{}, s:{s:s}, s:[]}", "labels", "receiver", "name", name, "alerts");
    json_array_append_new(groups, g);
    return g;
}

/*
 * One group per receiver (executor), with no grouping labels: corrald's
 * routes do not group.  An alert sent to two executors is in both groups;
 * one sent to none (an inhibition source only) is in none.
 */
void
apiv2_get_groups(struct http_request *req, struct http_reply *rep)
{
    const struct conf *c = server_conf(req->srv);
    json_t *sel, *groups, *a, *r;
    size_t i, k;

    if (!started(req, rep) || !(sel = selected_alerts(req, rep))) return;
    groups = json_array();
    for (i = 0; c && i < c->nexecutors; i++) group_of(groups, c->executors[i].name);
    json_array_foreach(sel, i, a)
    {
        json_array_foreach(json_object_get(a, "receivers"), k, r)
        {
            json_t *g = group_of(groups, json_string_value(json_object_get(r, "name")));
            json_array_append(json_object_get(g, "alerts"), a);
        }
    }
    json_decref(sel);
    /* Alertmanager lists the groups that have alerts */
    for (i = json_array_size(groups); i-- > 0;)
        if (!json_array_size(json_object_get(json_array_get(groups, i), "alerts")))
            json_array_remove(groups, i);
    http_json(rep, 200, groups);
}

/* A string member of a posted alert: absent or null is fine, anything else not. */
static bool
opt_string(const json_t *o, const char *key, const char **out)
{
    const json_t *v = json_object_get(o, key);

    *out = NULL;
    if (!v || json_is_null(v)) return true;
    if (!json_is_string(v)) return false;
    *out = json_string_value(v);
    return true;
}

/* Names corrald's JSON of a message gives itself (json_format_msg): no label may take them. */
static bool
reserved(const char *name)
{
    return strcmp(name, "ISODATE") == 0 || strcmp(name, "FACILITY") == 0 ||
           strcmp(name, "PRIORITY") == 0 || strcmp(name, "TAGS") == 0;
}

/*
 * A labelSet: an object of at most MAX_LABELS strings with label names,
 * each registered as prefix + name within input's budget of names (nv.h:
 * an alert whose names do not fit is refused rather than stored without
 * them).
 */
static bool
label_set(const json_t *o, const char *what, const char *prefix, struct buf *err)
{
    struct buf full = BUF_INIT;
    const char *name;
    json_t *v;

    if (json_object_size(o) > MAX_LABELS) {
        buf_printf(err, "more than %d %s", MAX_LABELS, what);
        return false;
    }
    json_object_foreach((json_t *)o, name, v)
    {
        if (!valid_name(name) || strlen(name) > MAX_NAME) {
            buf_printf(err, "%s: \"%.*s\" is not a label name", what, MAX_NAME, name);
            return false;
        }
        if (!json_is_string(v)) {
            buf_printf(err, "%s: %s: a string expected", what, name);
            return false;
        }
        if (!*prefix && reserved(name)) {
            buf_printf(err, "%s: %s is corrald's own (its JSON shows the message's %s)", what, name,
                       name);
            return false;
        }
        buf_reset(&full);
        buf_printf(&full, "%s%s", prefix, name);
        if (!nv_intern_input(full.p, full.len)) {
            buf_printf(err, "%s: %s: a new name, and input has registered %d already", what, name,
                       NV_MAX_INPUT_NAMES);
            buf_free(&full);
            return false;
        }
    }
    buf_free(&full);
    return true;
}

/* Checks posted alert a; false with the reason in err. */
static bool
alert_valid(const json_t *a, struct buf *err)
{
    const json_t *labels = json_object_get(a, "labels"), *ann = json_object_get(a, "annotations");
    const char *t;
    int64_t ms;

    if (!json_is_object(a)) {
        buf_puts(err, "an object expected");
        return false;
    }
    if (!json_is_object(labels) || json_object_size(labels) == 0) {
        buf_puts(err, "labels: a non-empty object expected");
        return false;
    }
    if (!label_set(labels, "labels", "", err)) return false;
    if (ann && !json_is_null(ann) &&
        (!json_is_object(ann) || !label_set(ann, "annotations", ANNOTATION, err))) {
        if (!err->len) buf_puts(err, "annotations: an object expected");
        return false;
    }
    if (!opt_string(a, "generatorURL", &t)) {
        buf_puts(err, "generatorURL: a string expected");
        return false;
    }
    if (!opt_string(a, "startsAt", &t) || (t && civil_parse_time(t, &ms) < 0)) {
        buf_puts(err, "startsAt: an RFC 3339 time expected");
        return false;
    }
    if (!opt_string(a, "endsAt", &t) || (t && civil_parse_time(t, &ms) < 0)) {
        buf_puts(err, "endsAt: an RFC 3339 time expected");
        return false;
    }
    return true;
}

static void
set_str(struct msg *m, nv_handle h, const char *v)
{
    if (h && v) msg_set(m, h, v, strlen(v));
}

/* The value of label name in a labelSet, or NULL. */
static const char *
label(const json_t *labels, const char *name)
{
    return json_string_value(json_object_get(labels, name));
}

/*
 * HOST of a posted alert without a HOST label: its instance label (a
 * target's host:port, the port left out) or its host label.
 */
static void
set_host(struct msg *m, const json_t *labels)
{
    const char *v = label(labels, "instance"), *colon;
    size_t len;

    if (!v) v = label(labels, "host");
    if (!v) return;
    len = strlen(v);
    colon = strrchr(v, ':');
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        if (v[0] == '[' && colon > v + 1 && colon[-1] == ']') { /* [::1]:9100 */
            msg_set(m, NV_HOST, v + 1, (size_t)(colon - v) - 2);
            return;
        }
        if (memchr(v, ':', (size_t)(colon - v)) == NULL) len = (size_t)(colon - v);
    }
    msg_set(m, NV_HOST, v, len);
}

/*
 * A time that is given: Go's clients (amtool) send the zero time
 * (0001-01-01T00:00:00Z) for none.
 */
static bool
given_time(const char *t, int64_t *ms)
{
    return civil_parse_time(t, ms) == 0 && *ms > 0;
}

/* Posted alert a (checked) as a generated message: an alert, or a clear when endsAt has passed. */
static struct msg *
alert_msg(const json_t *a, uint64_t now)
{
    static nv_handle h_id, h_event, h_sev, h_summary, h_since, h_after, h_url;
    static tag_id tag_alert, tag_clear;
    const json_t *labels = json_object_get(a, "labels"), *ann = json_object_get(a, "annotations");
    struct msg_time t = {(int64_t)(now / 1000), (int32_t)(now % 1000) * 1000, 0};
    struct msg *m = msg_new();
    struct buf text = BUF_INIT;
    const char *name, *starts = NULL, *ends = NULL, *url = NULL, *desc, *summary;
    int64_t end_ms;
    char fp[17];
    json_t *v;
    bool clear = false;

    if (!h_id) {
        h_id = nv_intern_str("corral.alert_id");
        h_event = nv_intern_str("corral.event");
        h_sev = nv_intern_str("corral.severity");
        h_summary = nv_intern_str("corral.summary");
        h_since = nv_intern_str("corral.since");
        h_after = nv_intern_str("corral.resolve_after");
        h_url = nv_intern_str("corral.generator_url");
        tag_alert = tag_intern("corral.alert", 12);
        tag_clear = tag_intern("corral.clear", 12);
    }
    msg_set_stamp(m, &t);
    msg_set_recvd(m, &t);
    msg_set_flags(m, MSG_F_GENERATED);
    json_object_foreach((json_t *)labels, name, v)
    {
        set_str(m, nv_intern_input(name, strlen(name)), json_string_value(v));
    }
    if (!label(labels, "HOST")) set_host(m, labels);
    set_str(m, h_event, label(labels, "alertname"));
    set_str(m, h_sev, label(labels, "severity"));
    json_object_foreach((json_t *)ann, name, v)
    {
        if (strcmp(name, "summary") == 0 || strcmp(name, "description") == 0) continue;
        buf_reset(&text);
        buf_printf(&text, ANNOTATION "%s", name);
        set_str(m, nv_intern_input(text.p, text.len), json_string_value(v));
    }
    summary = label(ann, "summary");
    desc = label(ann, "description");
    set_str(m, h_summary, summary);
    buf_reset(&text);
    if (desc || summary) {
        buf_puts(&text, desc ? desc : summary);
    } else { /* the labels, as Alertmanager shows an alert without annotations */
        buf_putc(&text, '{');
        json_object_foreach((json_t *)labels, name, v)
        {
            buf_printf(&text, "%s%s=\"%s\"", text.len > 1 ? ", " : "", name, json_string_value(v));
        }
        buf_putc(&text, '}');
    }
    msg_set(m, NV_MESSAGE, text.p, text.len);
    opt_string(a, "generatorURL", &url);
    set_str(m, h_url, url);
    labels_fingerprint(labels, fp);
    buf_reset(&text);
    buf_printf(&text, "am/%s", fp);
    msg_set(m, h_id, text.p, text.len);
    opt_string(a, "startsAt", &starts);
    if (starts && given_time(starts, &end_ms)) set_str(m, h_since, starts);
    opt_string(a, "endsAt", &ends);
    if (ends && given_time(ends, &end_ms)) {
        if (end_ms <= (int64_t)now) {
            clear = true;
        } else { /* not sent again, it resolves at its endsAt (Alertmanager's rule) */
            buf_reset(&text);
            buf_printf(&text, "%llus", (unsigned long long)((end_ms - (int64_t)now + 999) / 1000));
            msg_set(m, h_after, text.p, text.len);
        }
    }
    msg_tag_set(m, clear ? tag_clear : tag_alert);
    buf_free(&text);
    return m;
}

int
apiv2_receive_alerts(struct server *srv, const json_t *alerts, struct buf *err)
{
    uint64_t now = clock_wall_ms();
    const json_t *a;
    size_t i;

    if (!json_is_array(alerts)) {
        stats.invalid++;
        buf_puts(err, "an array of alerts expected");
        return -1;
    }
    json_array_foreach(alerts, i, a)
    {
        struct buf why = BUF_INIT;
        if (!alert_valid(a, &why)) {
            stats.invalid++;
            buf_printf(err, "alert %zu: %s", i, buf_str(&why));
            buf_free(&why);
            return -1;
        }
    }
    json_array_foreach(alerts, i, a)
    {
        struct msg *m = alert_msg(a, now);
        stats.received++;
        if (msg_tag_has(m, tag_lookup("corral.clear", 12))) stats.cleared++;
        server_inject_alert(srv, m);
        msg_unref(m);
    }
    return 0;
}

/* postableAlerts: apiv2_receive_alerts; a request with a bad alert injects none (400). */
void
apiv2_post_alerts(struct http_request *req, struct http_reply *rep)
{
    struct buf err = BUF_INIT;

    if (!started(req, rep)) return;
    if (apiv2_receive_alerts(req->srv, req->body, &err) < 0)
        v2_error(rep, 400, "%s", buf_str(&err));
    else
        rep->code = 200;
    buf_free(&err);
}

/* ---- silences ---- */

/* A silence of silences_to_json as a gettableSilence. */
static void
silence_view(json_t *s, struct buf *name)
{
    json_t *m;
    const char *state = json_string_value(json_object_get(json_object_get(s, "status"), "state"));
    size_t i;

    json_object_del(s, "matchersText");
    json_array_foreach(json_object_get(s, "matchers"), i, m)
    {
        const char *n = json_string_value(json_object_get(m, "name"));
        if (!n) continue;
        api_name(n, name);
        json_object_set_new(m, "name", json_string(buf_str(name)));
    }
    /* corrald keeps no change time: a silence changes when it starts and when it ends */
    json_object_set(
        s, "updatedAt",
        json_object_get(s, state && strcmp(state, "expired") == 0 ? "endsAt" : "startsAt"));
}

/* The silences (expired ones too, as Alertmanager lists them), as gettableSilences. */
static json_t *
silences_view(struct http_request *req, const struct labelmatch *lm)
{
    struct buf name = BUF_INIT;
    json_t *all, *s;
    size_t i;

    all = silences_to_json(server_silences(req->srv), lm, true, clock_wall_ms());
    json_array_foreach(all, i, s) silence_view(s, &name);
    buf_free(&name);
    return all;
}

void
apiv2_get_silences(struct http_request *req, struct http_reply *rep)
{
    struct labelmatch *lm;

    if (!started(req, rep) || filters(req, rep, true, &lm) < 0) return;
    http_json(rep, 200, silences_view(req, lm));
    labelmatch_free(lm);
}

/* The silence with id, or NULL. */
static json_t *
silence_by_id(struct http_request *req, const char *id)
{
    json_t *all = silences_view(req, NULL), *s, *found = NULL;
    size_t i;

    json_array_foreach(all, i, s)
    {
        if (strcmp(json_string_value(json_object_get(s, "id")), id) == 0) {
            found = json_incref(s);
            break;
        }
    }
    json_decref(all);
    return found;
}

void
apiv2_get_silence(struct http_request *req, struct http_reply *rep)
{
    json_t *s;

    if (!started(req, rep)) return;
    if ((s = silence_by_id(req, req->rest)))
        http_json(rep, 200, s);
    else
        v2_error(rep, 404, "silence %s not found", req->rest);
}

/*
 * postableSilence.  With an id (amtool's `silence update` and `silence
 * import`) it changes that silence as Alertmanager does
 * (silences_update_json): in place, keeping the id, when the matchers are
 * the same and the start stays (or a pending one's does not go into the
 * past); otherwise a new silence, with a new id, replaces it and the old
 * one is expired.  Either way the answer is the id.
 */
void
apiv2_post_silences(struct http_request *req, struct http_reply *rep)
{
    struct silences *sil = server_silences(req->srv);
    struct buf id = BUF_INIT, err = BUF_INIT, name = BUF_INIT;
    uint64_t now = clock_wall_ms();
    const char *old = NULL;
    json_t *s, *m, *found = NULL;
    size_t i;
    int rc;

    if (!started(req, rep)) return;
    if (!json_is_object(req->body)) {
        v2_error(rep, 400, "a silence (a JSON object) expected");
        return;
    }
    if (!opt_string(req->body, "id", &old)) {
        v2_error(rep, 400, "id: a string expected");
        return;
    }
    if (old && !*old) old = NULL;
    s = json_deep_copy(req->body);
    json_object_del(s, "id");
    json_array_foreach(json_object_get(s, "matchers"), i, m)
    {
        const char *n = json_string_value(json_object_get(m, "name"));
        if (!n) continue;
        silence_name(n, &name);
        json_object_set_new(m, "name", json_string(buf_str(&name)));
    }
    if (old && !(found = silence_by_id(req, old))) {
        v2_error(rep, 404, "silence %s not found", old);
    } else {
        rc = old ? silences_update_json(sil, old, s, now, &id, &err)
                 : silences_add_json(sil, s, now, &id, &err);
        if (rc < 0) {
            v2_error(rep, 400, "%s", buf_str(&err));
        } else {
            /* live muting: what fires and matches is silenced now, what it released is sent */
            alerts_remute(server_alerts(req->srv), sil, now);
            http_json(rep, 200, json_pack("{s:s}", "silenceID", buf_str(&id)));
        }
    }
    json_decref(s);
    json_decref(found);
    buf_free(&id);
    buf_free(&err);
    buf_free(&name);
}

void
apiv2_delete_silence(struct http_request *req, struct http_reply *rep)
{
    struct silences *sil = server_silences(req->srv);
    struct buf err = BUF_INIT;
    const char *ids[1] = {req->rest};
    uint64_t now = clock_wall_ms();

    if (!started(req, rep)) return;
    if (silences_expire(sil, ids, 1, now, &err) < 0) {
        v2_error(rep, 404, "%s", buf_str(&err));
    } else {
        alerts_remute(server_alerts(req->srv), sil, now);
        rep->code = 200;
    }
    buf_free(&err);
}

/* ---- status ---- */

/*
 * Alertmanager's clusterStatus: with <cluster>, this node's name, "ready"
 * once every partition has an owner ("settling" before), and the live nodes
 * as peers (NATS, not gossip, joins them: no address of theirs is known);
 * without, "disabled".
 */
static json_t *
cluster_status(struct http_request *req)
{
    json_t *v = server_cluster_json(req->srv), *st, *peers, *n, *o;
    bool ready = true;
    size_t i;

    if (!v) return json_pack("{s:s, s:[]}", "status", "disabled", "peers");
    peers = json_array();
    json_array_foreach(json_object_get(v, "nodes"), i, n)
    {
        if (json_is_true(json_object_get(n, "alive")))
            json_array_append_new(
                peers, json_pack("{s:O, s:s}", "name", json_object_get(n, "name"), "address", ""));
    }
    json_array_foreach(json_object_get(v, "owners"), i, o) ready = ready && !json_is_null(o);
    st = json_pack("{s:O, s:s, s:o}", "name", json_object_get(v, "node"), "status",
                   ready ? "ready" : "settling", "peers", peers);
    json_decref(v);
    return st;
}

void
apiv2_get_status(struct http_request *req, struct http_reply *rep)
{
    struct buf up = BUF_INIT;

    civil_format_time((int64_t)server_started_ms(req->srv), &up);
    /* its configuration is XML, not Alertmanager's YAML */
    http_json(rep, 200,
              json_pack("{s:o, s:{s:s, s:s, s:s, s:s, s:s, s:s}, s:{s:s}, s:s}", "cluster",
                        cluster_status(req), "versionInfo", "version", PACKAGE_VERSION, "revision",
                        "", "branch", "", "buildUser", "", "buildDate", "", "goVersion",
                        "none (corrald is C)", "config", "original", "", "uptime", buf_str(&up)));
    buf_free(&up);
}

void
apiv2_get_receivers(struct http_request *req, struct http_reply *rep)
{
    const struct conf *c = server_conf(req->srv);
    json_t *r = json_array();
    size_t i;

    for (i = 0; c && i < c->nexecutors; i++)
        json_array_append_new(r, json_pack("{s:s}", "name", c->executors[i].name));
    http_json(rep, 200, r);
}

void
apiv2_healthy(struct http_request *req, struct http_reply *rep)
{
    (void)req;
    rep->type = "text/plain; charset=utf-8";
    buf_puts(&rep->body, "OK");
}

/* corral_api_alerts_received_total, by kind: alerts, and clears (endsAt in the past) */
static void
m_received(struct buf *out, const struct metrics_desc *d, void *ctx)
{
    (void)ctx;
    metrics_sample(out, d->name, "kind", "alert", stats.received - stats.cleared);
    metrics_sample(out, d->name, "kind", "clear", stats.cleared);
}

static const struct metrics_desc apiv2_mtab[] = {
    {"corral_api_alerts_received_total", "counter",
     "Alerts received by POST /api/v2/alerts or corral alert add, and routed.", 0,
     .series = m_received},
    {"corral_api_alerts_invalid_total", "counter",
     "POST /api/v2/alerts and corral alert add requests refused for a bad alert (none of "
     "theirs routed).",
     0, .field = offsetof(struct api_stats, invalid)},
};

void
apiv2_metrics(struct buf *out)
{
    const void *src[1] = {&stats};

    metrics_render(out, apiv2_mtab, sizeof(apiv2_mtab) / sizeof(apiv2_mtab[0]), src, NULL);
}
