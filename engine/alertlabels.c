/*
 * alertlabels: the alert label contract (see alertlabels.h): a static check
 * of a rule database's alert-raising actions, and the run-time normaliser
 * corrald applies to an alert before it records it.
 */
#include "engine/alertlabels.h"
#include "engine/log.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "engine/utf8.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

enum { L_HOST, L_ID, L_SEVERITY, L_EVENT, L_SUMMARY, L_N };

static const char *const label_names[L_N] = {
    "HOST", "corral.alert_id", "corral.severity", "corral.event", "corral.summary",
};

static const char *const severities[] = {"critical", "major", "minor", "warning", "info"};

/* Interned once, for every thread (the registries themselves are process-wide). */
static nv_handle handles[L_N];
static tag_id tag_alert, tag_clear;
static pthread_once_t interned = PTHREAD_ONCE_INIT;

static void
intern(void)
{
    size_t i;

    for (i = 0; i < L_N; i++) handles[i] = nv_intern_str(label_names[i]);
    tag_clear = tag_intern("corral.clear", 12);
    tag_alert = tag_intern("corral.alert", 12);
}

static void
init(void)
{
    pthread_once(&interned, intern);
}

/* ---- the static check ---- */

bool
alertlabels_action_alerts(const struct pdb_action *a)
{
    size_t i;

    init();
    if (a->kind != PDB_ACTION_MESSAGE) return false; /* create-context keeps its message */
    if (a->nroutes) return true;
    for (i = 0; i < a->message.ntags; i++)
        if (a->message.tags[i] == tag_alert || a->message.tags[i] == tag_clear) return true;
    return false;
}

/* The template of the last <value> of the action's message that sets name h (values apply in
 * order). */
static const struct template *
value_of(const struct pdb_action *a, nv_handle h)
{
    const struct template *t = NULL;
    size_t i;

    for (i = 0; i < a->message.nvalues; i++)
        if (a->message.values[i].name == h) t = a->message.values[i].tpl;
    return t;
}

static bool
id_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '/' || c == '@' || c == '-';
}

/* The problems of one value whose text is always the same (literal): appended to out. */
static size_t
check_literal(int label, const char *text, size_t len, const char *where, struct buf *out)
{
    struct buf b = BUF_INIT;
    size_t n = 0;

    switch (label) {
    case L_ID:
        if (alertlabels_map_id(text, len, &b)) {
            buf_printf(out,
                       "%s corral.alert_id '%.*s' is not an alert id (characters A-Z a-z 0-9 "
                       ". _ : / @ - only, no empty part between slashes)\n",
                       where, (int)len, text);
            n++;
        }
        break;
    case L_SEVERITY:
        if (!alertlabels_severity_valid(text, len) &&
            !(len == 5 && memcmp(text, "clear", 5) == 0)) {
            buf_printf(out,
                       "%s corral.severity '%.*s' is none of critical, major, minor, warning, "
                       "info (or clear)\n",
                       where, (int)len, text);
            n++;
        }
        break;
    case L_SUMMARY:
        if (alertlabels_summary(text, len, &b)) {
            buf_printf(out,
                       "%s corral.summary is not one line of at most %d characters without "
                       "leading or trailing blanks\n",
                       where, ALERTLABELS_SUMMARY_MAX);
            n++;
        }
        break;
    default: break;
    }
    buf_free(&b);
    return n;
}

static size_t
check_action(const struct pdb_rule *r, const struct pdb_action *a, struct buf *out)
{
    struct buf where = BUF_INIT, missing = BUF_INIT;
    const char *host_why = NULL;
    size_t n = 0;
    int i;

    buf_printf(&where, "%s:%d: rule %s: alert action:", r->file, a->line > 0 ? a->line : r->line,
               r->id);
    for (i = 0; i < L_N; i++) {
        const struct template *t = value_of(a, handles[i]);
        const char *text;
        size_t len;

        if (!t && i == L_HOST) {
            /* generate() (corr.c) sets HOST from the key of a host, program or process context */
            if (r->context_id && r->scope != PDB_SCOPE_GLOBAL) continue;
            host_why = r->context_id ? " (context-scope global gives no HOST)"
                                     : " (its rule has no context to give one)";
        }
        if (!t) {
            buf_printf(&missing, "%s%s%s", missing.len ? ", " : "", label_names[i],
                       i == L_HOST ? host_why : "");
            continue;
        }
        if (template_is_literal(t, &text, &len)) {
            n += check_literal(i, text, len, buf_str(&where), out);
        } else if (i == L_ID && strstr(template_source(t), "//")) {
            /* what the references expand to is not known, but nothing fills this gap */
            buf_printf(out, "%s corral.alert_id '%s' has an empty part between slashes\n",
                       buf_str(&where), template_source(t));
            n++;
        }
    }
    if (missing.len) {
        buf_printf(out, "%s sets no %s\n", buf_str(&where), buf_str(&missing));
        n++;
    }
    buf_free(&where);
    buf_free(&missing);
    return n;
}

size_t
alertlabels_check_pdb(const struct pdb *db, struct buf *out)
{
    size_t i, j, n = 0;

    init();
    for (i = 0; i < pdb_nrules(db); i++) {
        const struct pdb_rule *r = pdb_rule_at(db, i);
        for (j = 0; j < r->nactions; j++)
            if (alertlabels_action_alerts(&r->actions[j]))
                n += check_action(r, &r->actions[j], out);
    }
    return n;
}

size_t
alertlabels_warn_pdb(const struct pdb *db)
{
    struct buf out = BUF_INIT;
    const char *line, *nl;
    size_t n = alertlabels_check_pdb(db, &out);

    for (line = buf_str(&out); (nl = strchr(line, '\n')); line = nl + 1)
        log_msg(LOG_WARNING, "%.*s", (int)(nl - line), line);
    buf_free(&out);
    return n;
}

/* ---- values ---- */

bool
alertlabels_severity_valid(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < sizeof(severities) / sizeof(severities[0]); i++)
        if (strlen(severities[i]) == len && memcmp(severities[i], s, len) == 0) return true;
    return false;
}

const char *
alertlabels_severity_map(const char *s, size_t len)
{
    static const struct {
        const char *name, *severity;
    } map[] = {
        {"critical", "critical"},  {"major", "major"},        {"minor", "minor"},
        {"warning", "warning"},    {"info", "info"},          {"emerg", "critical"},
        {"emergency", "critical"}, {"alert", "critical"},     {"crit", "critical"},
        {"err", "major"},          {"error", "major"},        {"warn", "warning"},
        {"notice", "info"},        {"informational", "info"}, {"debug", "info"},
    };
    size_t i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strlen(map[i].name) == len && strncasecmp(map[i].name, s, len) == 0)
            return map[i].severity;
    return NULL;
}

bool
alertlabels_map_id(const char *id, size_t len, struct buf *out)
{
    size_t base = out->len, i;

    buf_reserve(out, len);
    for (i = 0; i < len; i++) {
        char c = id_char((unsigned char)id[i]) ? id[i] : '_';
        /* no leading slash, and no run of them: every part between slashes says something */
        if (c == '/' && (out->len == base || out->p[out->len - 1] == '/')) continue;
        buf_putc(out, c);
    }
    if (out->len > base && out->p[out->len - 1] == '/') buf_truncate(out, out->len - 1);
    return out->len - base != len || (len && memcmp(out->p + base, id, len) != 0);
}

static bool
blank(char c)
{
    return c == ' ' || c == '\t';
}

/* What a cut summary does not end in, before its "...". */
static bool
trailing(char c)
{
    return c == ' ' || c == ',' || c == ';' || c == ':';
}

/* Byte offset in out, from base, after n characters of the (valid UTF-8) text there. */
static size_t
offset_of(const struct buf *out, size_t base, size_t n)
{
    size_t j = base;

    while (j < out->len && n) {
        j += utf8_skip((unsigned char)out->p[j]);
        n--;
    }
    return j < out->len ? j : out->len;
}

bool
alertlabels_summary(const char *s, size_t len, struct buf *out)
{
    const size_t room = ALERTLABELS_SUMMARY_MAX - 3; /* characters before the "..." */
    size_t base = out->len, i = 0, chars = 0;

    /* the first line, as valid UTF-8, control characters as spaces */
    while (i < len && blank(s[i])) i++;
    while (i < len && s[i] != '\n' && s[i] != '\r') {
        uint32_t cp;
        size_t k = utf8_char((const unsigned char *)s + i, len - i, &cp);
        if (k == 0) {
            utf8_put(out, 0xfffd);
            k = 1;
        } else if (cp < 0x20 || cp == 0x7f) {
            buf_putc(out, ' ');
        } else {
            buf_append(out, s + i, k);
        }
        i += k;
    }
    while (out->len > base && blank(out->p[out->len - 1])) buf_truncate(out, out->len - 1);
    for (i = base; i < out->len; i += utf8_skip((unsigned char)out->p[i])) chars++;

    if (chars > ALERTLABELS_SUMMARY_MAX) {
        size_t cut = offset_of(out, base, room), end = cut, j, n = 0;
        /* the last space before the cut, unless it would lose more than half of the room */
        if (out->p[cut] != ' ')
            for (j = base; j < cut; j += utf8_skip((unsigned char)out->p[j]), n++)
                if (out->p[j] == ' ' && n >= room / 2) end = j;
        while (end > base && trailing(out->p[end - 1])) end--;
        buf_truncate(out, end);
        buf_puts(out, "...");
    }
    return out->len - base != len || (len && memcmp(out->p + base, s, len) != 0);
}

/* ---- the run-time normaliser ---- */

static void
set_str(struct msg *m, nv_handle h, const char *s)
{
    msg_set(m, h, s, strlen(s));
}

unsigned
alertlabels_check_msg(struct msg *m, struct buf *scratch)
{
    unsigned found = 0;
    const char *v;
    size_t len;

    init();
    v = msg_get(m, NV_HOST, &len);
    if (!v || !len) found |= ALERTLABELS_NO_HOST;

    v = msg_get(m, handles[L_ID], &len);
    if (!v || !len) {
        found |= ALERTLABELS_NO_ID;
    } else {
        buf_reset(scratch);
        if (alertlabels_map_id(v, len, scratch)) {
            found |= ALERTLABELS_ID_MAPPED;
            if (scratch->len) {
                msg_set(m, handles[L_ID], scratch->p, scratch->len);
            } else {
                msg_unset(m, handles[L_ID]); /* nothing of it was an id: the caller's default */
                found |= ALERTLABELS_NO_ID;
            }
        }
    }

    v = msg_get(m, handles[L_SEVERITY], &len);
    if (!v || !len) {
        found |= ALERTLABELS_NO_SEVERITY;
        set_str(m, handles[L_SEVERITY], ALERTLABELS_SEVERITY_DEFAULT);
    } else if (!alertlabels_severity_valid(v, len) && !(len == 5 && memcmp(v, "clear", 5) == 0)) {
        const char *sev = alertlabels_severity_map(v, len);
        found |= ALERTLABELS_BAD_SEVERITY;
        set_str(m, handles[L_SEVERITY], sev ? sev : ALERTLABELS_SEVERITY_DEFAULT);
    }

    v = msg_get(m, handles[L_EVENT], &len);
    if (!v || !len) {
        found |= ALERTLABELS_NO_EVENT;
        v = msg_get(m, NV_RULE_ID, &len);
        if (v && len) {
            buf_reset(scratch);
            buf_append(scratch, v, len); /* msg_set may move the values it is taken from */
            msg_set(m, handles[L_EVENT], scratch->p, scratch->len);
        }
    }

    v = msg_get(m, handles[L_SUMMARY], &len);
    if (!v || !len) {
        found |= ALERTLABELS_NO_SUMMARY;
        v = msg_get(m, NV_MESSAGE, &len);
        buf_reset(scratch);
        alertlabels_summary(v ? v : "", v ? len : 0, scratch);
        if (scratch->len) msg_set(m, handles[L_SUMMARY], scratch->p, scratch->len);
    } else {
        buf_reset(scratch);
        if (alertlabels_summary(v, len, scratch)) {
            found |= ALERTLABELS_SUMMARY_CUT;
            msg_set(m, handles[L_SUMMARY], scratch->p, scratch->len);
        }
    }
    return found;
}

const char *
alertlabels_flag_name(unsigned flag)
{
    switch (flag) {
    case ALERTLABELS_NO_HOST: return "no_host";
    case ALERTLABELS_NO_ID: return "no_alert_id";
    case ALERTLABELS_ID_MAPPED: return "alert_id_mapped";
    case ALERTLABELS_NO_SEVERITY: return "no_severity";
    case ALERTLABELS_BAD_SEVERITY: return "bad_severity";
    case ALERTLABELS_NO_EVENT: return "no_event";
    case ALERTLABELS_NO_SUMMARY: return "no_summary";
    case ALERTLABELS_SUMMARY_CUT: return "summary_cut";
    default: return "unknown";
    }
}
