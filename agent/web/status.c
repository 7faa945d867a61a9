/*
 * status: the status page, an alert's page, and the page's JSON (see
 * status.h).
 *
 * The page begins with the alerts table (alerts_table: the store's JSON
 * read back, filtered by the URL's matchers through labelmatch as the API
 * filters, sorted by severity rank then last seen), then a list of
 * sections (the table `sections` below).  A section has an id (the HTML id
 * and the JSON key), a heading, a function writing its HTML and one adding
 * its JSON value; adding one to the page is a line in the table and two
 * functions.  Every string that may come from a log message, a posted
 * alert or the configuration (host names, summaries, rule ids, context
 * keys, input and executor names) is written through
 * html_puts()/html_escape(), or html_url_param() inside a link, and only
 * through them; the silence command of an alert's page quotes each word
 * for the shell (shell_quote) before it is escaped for HTML.
 *
 * Rates: a timer samples the server's received and generated counters
 * every minute into two rings of STATUS_MINUTES counts, so the message path
 * does no work for the charts.
 */
#include "agent/web/status.h"
#include "agent/alerting/alerts.h"
#include "agent/alerting/silences.h"
#include "actions/jsonval.h"
#include "actions/queue.h"
#include "agent/web/html.h"
#include "agent/input/input.h"
#include "agent/core/server.h"
#include "engine/alertlabels.h"
#include "engine/civil.h"
#include "engine/clock.h"
#include "engine/corr.h"
#include "engine/evidence.h"
#include "engine/labelmatch.h"
#include "engine/pdb.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MINUTE_MS 60000

struct status {
    uv_timer_t timer;
    struct server *srv;
    uint64_t received[STATUS_MINUTES], generated[STATUS_MINUTES]; /* rings */
    size_t next;                            /* the ring slot the next minute goes to */
    uint64_t last_received, last_generated; /* the counters at the last sample */
};

static void
sample(uv_timer_t *t)
{
    struct status *st = t->data;
    uint64_t rx, gen;

    server_counts(st->srv, &rx, &gen);
    st->received[st->next] = rx - st->last_received;
    st->generated[st->next] = gen - st->last_generated;
    st->next = (st->next + 1) % STATUS_MINUTES;
    st->last_received = rx;
    st->last_generated = gen;
}

struct status *
status_new(uv_loop_t *loop, struct server *srv)
{
    struct status *st = xcalloc(1, sizeof(*st));

    st->srv = srv;
    server_counts(srv, &st->last_received, &st->last_generated);
    uv_timer_init(loop, &st->timer);
    st->timer.data = st;
    uv_timer_start(&st->timer, sample, MINUTE_MS, MINUTE_MS);
    return st;
}

static void
status_closed(uv_handle_t *h)
{
    free(h->data);
}

void
status_free(struct status *st)
{
    if (st) uv_close((uv_handle_t *)&st->timer, status_closed);
}

void
status_rates(const struct status *st, uint64_t received[STATUS_MINUTES],
             uint64_t generated[STATUS_MINUTES])
{
    size_t i;

    for (i = 0; i < STATUS_MINUTES; i++) {
        received[i] = st->received[(st->next + i) % STATUS_MINUTES];
        generated[i] = st->generated[(st->next + i) % STATUS_MINUTES];
    }
}

/* A JSON string of len bytes that may come from a log message (jsonval_text); "" for NULL. */
static json_t *
jstrn(const char *s, size_t len)
{
    json_t *j = s ? jsonval_text(s, len) : NULL;

    return j ? j : json_string("");
}

static json_t *
jstr(const char *s)
{
    return jstrn(s, s ? strlen(s) : 0);
}

/* ---- rates ---- */

static void
rates_html(struct status *st, struct buf *out)
{
    /* one bar a minute, from an hour ago (the left end) to this minute (the right) */
    static const char *const xaxis[] = {"-60 min", "-45", "-30", "-15", "now"};
    uint64_t rx[STATUS_MINUTES], gen[STATUS_MINUTES], now_rx, now_gen;

    status_rates(st, rx, gen);
    server_counts(st->srv, &now_rx, &now_gen);
    /* the charts end with the minute under way, so that they show what came just now */
    memmove(rx, rx + 1, (STATUS_MINUTES - 1) * sizeof(rx[0]));
    memmove(gen, gen + 1, (STATUS_MINUTES - 1) * sizeof(gen[0]));
    rx[STATUS_MINUTES - 1] = now_rx - st->last_received;
    gen[STATUS_MINUTES - 1] = now_gen - st->last_generated;
    buf_puts(out, "<div class=\"charts\"><figure>");
    html_chart(out, "Messages received per minute, last hour, this minute last", rx, STATUS_MINUTES,
               400, 90, xaxis, 5);
    buf_printf(out,
               "<figcaption>Received per minute (this minute so far: <span "
               "id=\"received-minute\">%llu</span>; total <span "
               "id=\"received-total\">%llu</span>)</figcaption></figure><figure>",
               (unsigned long long)(now_rx - st->last_received), (unsigned long long)now_rx);
    html_chart(out, "Messages generated per minute, last hour, this minute last", gen,
               STATUS_MINUTES, 400, 90, xaxis, 5);
    buf_printf(out,
               "<figcaption>Generated per minute (this minute so far: <span "
               "id=\"generated-minute\">%llu</span>; total <span "
               "id=\"generated-total\">%llu</span>)</figcaption></figure></div>",
               (unsigned long long)(now_gen - st->last_generated), (unsigned long long)now_gen);
}

static json_t *
counts_array(const uint64_t *v, size_t n)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; i < n; i++) json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

static json_t *
rates_json(struct status *st)
{
    uint64_t rx[STATUS_MINUTES], gen[STATUS_MINUTES], now_rx, now_gen;

    status_rates(st, rx, gen);
    server_counts(st->srv, &now_rx, &now_gen);
    return json_pack("{s:i, s:o, s:o, s:I, s:I}", "minute_seconds", 60, "received",
                     counts_array(rx, STATUS_MINUTES), "generated",
                     counts_array(gen, STATUS_MINUTES), "received_total", (json_int_t)now_rx,
                     "generated_total", (json_int_t)now_gen);
}

/* A table row of counters: a name, then n numbers (queues, rules, inputs). */
static void
count_row(struct buf *out, const char *cls, const char *name, const uint64_t *v, size_t n)
{
    size_t i;

    buf_printf(out, "<tr class=\"%s\"><td class=\"name\">", cls);
    html_puts(out, name);
    buf_puts(out, "</td>");
    for (i = 0; i < n; i++) buf_printf(out, "<td class=\"n\">%llu</td>", (unsigned long long)v[i]);
    buf_puts(out, "</tr>");
}

/* ---- executor queues ---- */

static void
queue_row(const char *name, const struct queue_stats *qs, void *arg)
{
    struct buf *out = arg;
    const uint64_t v[] = {qs->queued,  qs->inflight, qs->delivered,
                          qs->retries, qs->dead,     qs->dropped_full + qs->rate_limited};

    count_row(out, "queue", name, v, sizeof(v) / sizeof(v[0]));
}

static void
queues_html(struct status *st, struct buf *out)
{
    size_t before;

    buf_puts(out, "<table><thead><tr><th>Executor</th><th>Queued</th><th>Delivering</th>"
                  "<th>Delivered</th><th>Failed attempts</th><th>Dead letters</th>"
                  "<th>Dropped</th></tr></thead><tbody>");
    before = out->len;
    server_foreach_queue(st->srv, queue_row, out);
    if (out->len == before)
        buf_puts(out, "<tr><td colspan=\"7\">No executors configured.</td></tr>");
    buf_puts(out, "</tbody></table>");
}

static void
queue_obj(const char *name, const struct queue_stats *qs, void *arg)
{
    json_array_append_new(
        arg, json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "name", jstr(name), "queued",
                       (json_int_t)qs->queued, "inflight", (json_int_t)qs->inflight, "delivered",
                       (json_int_t)qs->delivered, "retries", (json_int_t)qs->retries, "dead",
                       (json_int_t)qs->dead, "dropped_full", (json_int_t)qs->dropped_full,
                       "rate_limited", (json_int_t)qs->rate_limited));
}

static json_t *
queues_json(struct status *st)
{
    json_t *a = json_array();

    server_foreach_queue(st->srv, queue_obj, a);
    return a;
}

/* ---- open contexts, per rule and each ---- */

static void
rule_row(const struct corr_rule_stats *rs, void *arg)
{
    struct buf *out = arg;
    const uint64_t v[] = {rs->contexts, rs->refused,      rs->dropped,
                          rs->evicted,  rs->rate_limited, rs->rate_evicted};

    count_row(out, "rule", rs->rule_id, v, sizeof(v) / sizeof(v[0]));
}

struct ctx_list {
    struct buf *out;
    json_t *a;
    size_t n;
};

static void
context_row(const struct corr_context_info *ci, void *arg)
{
    struct ctx_list *cl = arg;
    struct buf *out = cl->out;

    if (cl->n++ >= STATUS_MAX_CONTEXTS) return;
    buf_puts(out, "<tr class=\"context\"><td class=\"rule\">");
    html_puts(out, ci->rule_id);
    buf_printf(out, "</td><td>%s</td><td class=\"host\">", pdb_scope_name(ci->scope));
    html_escape(out, ci->host, ci->hostlen);
    buf_puts(out, "</td><td class=\"program\">");
    html_escape(out, ci->program, ci->programlen);
    buf_puts(out, "</td><td class=\"key\">");
    html_escape(out, ci->id, ci->idlen);
    buf_printf(out, "</td><td class=\"n\">%zu</td></tr>", ci->nmsgs);
}

static void
contexts_html(struct status *st, struct buf *out)
{
    struct ctx_list cl = {out, NULL, 0};
    size_t before;

    /* what a flood cost each rule: contexts refused or evicted, actions held back by rate= */
    buf_puts(out, "<h3>Per rule</h3><table><thead><tr><th>Rule</th><th>Open</th>"
                  "<th>Refused</th><th>Messages dropped</th><th>Evicted</th>"
                  "<th>Rate-limited</th><th>Rate buckets evicted</th></tr></thead><tbody>");
    before = out->len;
    server_foreach_rule(st->srv, rule_row, out);
    if (out->len == before)
        buf_puts(out, "<tr><td colspan=\"7\">No rule opens contexts.</td></tr>");
    buf_puts(out, "</tbody></table><h3>Open contexts</h3><table><thead><tr><th>Rule</th>"
                  "<th>Scope</th><th>Host</th><th>Program</th><th>Key</th><th>Messages</th>"
                  "</tr></thead><tbody>");
    server_foreach_context(st->srv, context_row, &cl);
    if (!cl.n) buf_puts(out, "<tr><td colspan=\"6\">None.</td></tr>");
    buf_puts(out, "</tbody></table>");
    if (cl.n > STATUS_MAX_CONTEXTS)
        buf_printf(out,
                   "<p class=\"more\">%zu more not shown (<code>corral ctl contexts</code> "
                   "lists them all).</p>",
                   cl.n - STATUS_MAX_CONTEXTS);
}

static void
rule_obj(const struct corr_rule_stats *rs, void *arg)
{
    json_array_append_new(
        arg, json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "rule", jstr(rs->rule_id), "open",
                       (json_int_t)rs->contexts, "refused", (json_int_t)rs->refused, "dropped",
                       (json_int_t)rs->dropped, "evicted", (json_int_t)rs->evicted, "rateLimited",
                       (json_int_t)rs->rate_limited, "rateEvicted", (json_int_t)rs->rate_evicted));
}

static void
context_obj(const struct corr_context_info *ci, void *arg)
{
    struct ctx_list *cl = arg;

    if (cl->n++ >= STATUS_MAX_CONTEXTS) return;
    json_array_append_new(
        cl->a, json_pack("{s:o, s:s, s:o, s:o, s:o, s:I}", "rule", jstr(ci->rule_id), "scope",
                         pdb_scope_name(ci->scope), "host", jstrn(ci->host, ci->hostlen), "program",
                         jstrn(ci->program, ci->programlen), "key", jstrn(ci->id, ci->idlen),
                         "messages", (json_int_t)ci->nmsgs));
}

static json_t *
contexts_json(struct status *st)
{
    json_t *rules = json_array();
    struct ctx_list cl = {NULL, json_array(), 0};

    server_foreach_rule(st->srv, rule_obj, rules);
    server_foreach_context(st->srv, context_obj, &cl);
    return json_pack("{s:o, s:o, s:I}", "rules", rules, "open", cl.a, "total", (json_int_t)cl.n);
}

/* ---- inputs ---- */

static void
input_row(const char *name, const struct input_stats *is, void *arg)
{
    struct buf *out = arg;
    const uint64_t v[] = {is->received,  is->bytes,  is->kernel_drops,
                          is->truncated, is->errors, is->active};

    count_row(out, "input", name, v, sizeof(v) / sizeof(v[0]));
}

static void
inputs_html(struct status *st, struct buf *out)
{
    size_t before;

    buf_puts(out, "<table><thead><tr><th>Input</th><th>Received</th><th>Bytes</th>"
                  "<th>Dropped (kernel)</th><th>Truncated</th><th>Errors</th>"
                  "<th>Connections</th></tr></thead><tbody>");
    before = out->len;
    server_foreach_input(st->srv, input_row, out);
    if (out->len == before) buf_puts(out, "<tr><td colspan=\"7\">No inputs.</td></tr>");
    buf_puts(out, "</tbody></table>");
}

static void
input_obj(const char *name, const struct input_stats *is, void *arg)
{
    json_array_append_new(
        arg, json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "name", jstr(name), "received",
                       (json_int_t)is->received, "bytes", (json_int_t)is->bytes, "kernel_drops",
                       (json_int_t)is->kernel_drops, "truncated", (json_int_t)is->truncated,
                       "errors", (json_int_t)is->errors, "connections", (json_int_t)is->active));
}

static json_t *
inputs_json(struct status *st)
{
    json_t *a = json_array();

    server_foreach_input(st->srv, input_obj, a);
    return a;
}

/* ---- alerts (the store's JSON) ---- */

/* Rows shown per table: the page stays small with 100,000 alerts; `corral alerts` has them all. */
#define MAX_ROWS 500

/* the alerts query matches (NULL: all) or, with id, that one; an empty array before the start */
static json_t *
store_alerts(struct status *st, const struct labelmatch *query, const char *id)
{
    struct alerts *a = server_alerts(st->srv);

    return a ? alerts_to_json(a, query, id) : json_array();
}

static const char *
str(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

static const char *
label(const json_t *alert, const char *name)
{
    return str(json_object_get(alert, "labels"), name);
}

static void
cell(struct buf *out, const char *cls, const char *text)
{
    buf_printf(out, "<td class=\"%s\">", cls);
    html_puts(out, text);
    buf_puts(out, "</td>");
}

/* A link to alert id's page: /alert?id=ID, the id percent-encoded (ids hold '/'). */
static void
alert_href(struct buf *out, const char *id)
{
    buf_puts(out, "<a href=\"/alert?id=");
    html_url_param(out, id);
    buf_puts(out, "\">");
}

/*
 * Severity: the word of corral.severity (the executors' default when the
 * alert sets none), its rank (most severe first; unknown words last) and
 * its class, which colours the row: a word the page does not know keeps
 * its word and gets the neutral colour.
 */
struct severity {
    const char *word, *cls;
    int rank;
};

static struct severity
severity_of(const json_t *al)
{
    static const struct severity known[] = {
        {"critical", "critical", 0}, {"error", "error", 1},   {"major", "error", 1},
        {"warning", "warning", 2},   {"minor", "warning", 2}, {"info", "info", 3},
    };
    struct severity s = {label(al, "corral.severity"), "unknown", 4};
    size_t i;

    if (!*s.word) s.word = ALERTLABELS_SEVERITY_DEFAULT;
    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(s.word, known[i].word) == 0) return known[i];
    return s;
}

/* What the alerts table says an alert is about: its summary, else its message's first line. */
static void
summary_text(const json_t *al, const char **s, size_t *len)
{
    const char *candidates[] = {"corral.summary", "MESSAGE", "corral.event", ".classifier.rule_id"};
    size_t i;

    for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
        *s = label(al, candidates[i]);
        *len = strcspn(*s, "\n");
        if (*len) return;
    }
    *s = str(al, "id");
    *len = strlen(*s);
}

/* "12 min ago" (or "in 12 min") of a time of the store's JSON; false when it is none */
static bool
relative(struct buf *out, const char *iso, int64_t now)
{
    int64_t then, d;
    bool future;

    if (!*iso || civil_parse_time(iso, &then) < 0) return false;
    d = (now - then) / 1000;
    future = d < 0;
    if (future) d = -d;
    if (future) buf_puts(out, "in ");
    if (d < 60)
        buf_printf(out, "%lld s", (long long)d);
    else if (d < 3600)
        buf_printf(out, "%lld min", (long long)(d / 60));
    else if (d < 86400)
        buf_printf(out, "%lld h %lld min", (long long)(d / 3600), (long long)(d / 60 % 60));
    else
        buf_printf(out, "%lld d %lld h", (long long)(d / 86400), (long long)(d / 3600 % 24));
    if (!future) buf_puts(out, " ago");
    return true;
}

/* <time> of an ISO time: relative, the absolute UTC time (and what it is, what) in its title */
static void
time_html(struct buf *out, const char *what, const char *iso, int64_t now)
{
    size_t at = out->len;

    buf_puts(out, "<time datetime=\"");
    html_puts(out, iso);
    buf_puts(out, "\" title=\"");
    html_puts(out, what);
    buf_puts(out, what ? " " : "");
    html_puts(out, iso);
    buf_puts(out, " (UTC)\">");
    if (!relative(out, iso, now)) {
        buf_truncate(out, at);
        buf_puts(out, "—");
        return;
    }
    buf_puts(out, "</time>");
}

/* An executor's outcome as one symbol (its title says it in words; the alert's page in full). */
static const char *
delivery_symbol(const char *state)
{
    static const struct {
        const char *state, *symbol;
    } symbols[] = {
        {"delivered", "✓"}, {"queued", "◷"},  {"retrying", "↻"},
        {"dead", "✗"},      {"dropped", "⊘"}, {"none", "·"},
    };
    size_t i;

    for (i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++)
        if (strcmp(state, symbols[i].state) == 0) return symbols[i].symbol;
    return "?";
}

static void
executors_compact(struct buf *out, const json_t *al)
{
    const char *name;
    json_t *ex;

    json_object_foreach(json_object_get(al, "executors"), name, ex)
    {
        const char *state = str(ex, "state");
        buf_printf(out, "<span class=\"ex-%s\" title=\"", *state ? state : "none");
        html_puts(out, name);
        buf_puts(out, ": ");
        html_puts(out, state);
        buf_puts(out, "\">");
        buf_puts(out, delivery_symbol(state));
        buf_puts(out, "</span>");
    }
}

/* the page's selection: matchers and a state, parsed from the URL */
struct view {
    struct labelmatch *lm; /* NULL: no filter */
    const char *state;     /* the state wanted (firing for active); NULL: all but resolved */
    bool all;              /* state=all */
    struct buf error;      /* why the URL is bad; empty: it is not */
};

static const char *const view_states[] = {"active", "silenced", "inhibited", "resolved", "all"};

static void
view_parse(struct view *v, const struct status_query *q)
{
    size_t i;

    memset(v, 0, sizeof(*v));
    if (q && q->nfilters > STATUS_MAX_FILTERS) {
        buf_printf(&v->error, "more than %d filters", STATUS_MAX_FILTERS);
        return;
    }
    for (i = 0; q && i < q->nfilters; i++) {
        struct buf err = BUF_INIT;
        if (!v->lm) v->lm = labelmatch_new();
        if (labelmatch_add(v->lm, q->filters[i], strlen(q->filters[i]), &err) < 0) {
            buf_printf(&v->error, "filter %s: %s", q->filters[i], buf_str(&err));
            buf_free(&err);
            return;
        }
        buf_free(&err);
    }
    if (!q || !q->state || !*q->state) return;
    for (i = 0; i < sizeof(view_states) / sizeof(view_states[0]); i++)
        if (strcmp(q->state, view_states[i]) == 0) break;
    if (i == sizeof(view_states) / sizeof(view_states[0]))
        buf_printf(&v->error, "state %s: active, silenced, inhibited, resolved or all expected",
                   q->state);
    else if (strcmp(q->state, "all") == 0)
        v->all = true;
    else
        v->state = strcmp(q->state, "active") == 0 ? "firing" : q->state;
}

static void
view_free(struct view *v)
{
    labelmatch_free(v->lm);
    buf_free(&v->error);
}

static bool
view_wants(const struct view *v, const char *state)
{
    if (v->all) return true;
    if (v->state) return strcmp(state, v->state) == 0;
    return strcmp(state, "resolved") != 0;
}

struct row {
    json_t *al;
    struct severity sev;
    const char *last, *id;
};

/* most severe first, then the most recently seen, then by id (a stable order) */
static int
row_cmp(const void *x, const void *y)
{
    const struct row *a = x, *b = y;
    int c;

    if (a->sev.rank != b->sev.rank) return a->sev.rank < b->sev.rank ? -1 : 1;
    if ((c = strcmp(b->last, a->last))) return c; /* ISO 8601 UTC: text order is time order */
    return strcmp(a->id, b->id);
}

/* A link to the page with filters (the page's own, each encoded) and state. */
static void
view_href(struct buf *out, const struct status_query *q, const char *state)
{
    size_t i;
    char sep = '?';

    buf_puts(out, "<a href=\"/");
    for (i = 0; q && i < q->nfilters; i++, sep = '&') {
        buf_putc(out, sep);
        if (sep == '&') buf_puts(out, "amp;");
        buf_puts(out, "filter=");
        html_url_param(out, q->filters[i]);
    }
    if (state) {
        buf_putc(out, sep);
        if (sep == '&') buf_puts(out, "amp;");
        buf_puts(out, "state=");
        html_url_param(out, state);
    }
    buf_puts(out, "\"");
}

/* the counts of each state, links to the page showing them */
static void
state_nav(struct status *st, struct buf *out, const struct status_query *q)
{
    static const struct {
        const char *state, *word;
        enum alert_state s;
    } states[] = {
        {"active", "firing", ALERT_FIRING},
        {"silenced", "silenced", ALERT_SILENCED},
        {"inhibited", "inhibited", ALERT_INHIBITED},
        {"resolved", "resolved", ALERT_RESOLVED},
    };
    struct alerts *a = server_alerts(st->srv);
    const char *cur = q && q->state && *q->state ? q->state : NULL;
    size_t i;

    buf_puts(out, "<p class=\"states\">");
    view_href(out, q, NULL);
    buf_printf(out, "%s>unresolved</a>", cur ? "" : " class=\"current\"");
    for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        buf_puts(out, " · ");
        view_href(out, q, states[i].state);
        buf_printf(out, " class=\"st-%s%s\"><b>%zu</b> %s</a>", states[i].word,
                   cur && strcmp(cur, states[i].state) == 0 ? " current" : "",
                   a ? alerts_in_state(a, states[i].s) : 0, states[i].word);
    }
    buf_puts(out, " · ");
    view_href(out, q, "all");
    buf_printf(out, "%s>all</a>", cur && strcmp(cur, "all") == 0 ? " class=\"current\"" : "");
    if (q && q->nfilters) {
        buf_puts(out, "</p><p class=\"filter\">Filter: ");
        for (i = 0; i < q->nfilters; i++) {
            buf_puts(out, i ? ", <code>" : "<code>");
            html_puts(out, q->filters[i]);
            buf_puts(out, "</code>");
        }
        buf_puts(out, " (");
        view_href(out, NULL, cur);
        buf_puts(out, ">clear</a>)");
    }
    buf_puts(out, "</p>");
}

/*
 * The alerts table: one line per alert, nothing in it wraps (overflow ends
 * in an ellipsis, the whole text in a title and on the alert's page).
 * Cells of class "mid" and "wide" are hidden on narrower screens (style).
 */
static void
alerts_table(struct status *st, struct buf *out, const struct view *v)
{
    json_t *alerts = v->error.len ? json_array() : store_alerts(st, v->lm, NULL), *al;
    struct row *rows = xcalloc(json_array_size(alerts) + 1, sizeof(*rows));
    int64_t now = clock_wall_ms();
    size_t i, n = 0;

    json_array_foreach(alerts, i, al)
    {
        if (!view_wants(v, str(al, "state"))) continue;
        rows[n].al = al;
        rows[n].sev = severity_of(al);
        rows[n].last = str(al, "lastSeen");
        rows[n].id = str(al, "id");
        n++;
    }
    qsort(rows, n, sizeof(*rows), row_cmp);
    buf_puts(out, "<table class=\"alerts\"><thead><tr><th class=\"c-sev\">Severity</th>"
                  "<th class=\"c-state wide\">State</th><th class=\"c-host wide\">Host</th>"
                  "<th class=\"c-sum\">Summary</th><th class=\"c-id wide mid\">Alert</th>"
                  "<th class=\"c-time wide mid\">Since</th><th class=\"c-time\">Last seen</th>"
                  "<th class=\"c-n wide mid\">Count</th><th class=\"c-ex wide\" "
                  "title=\"✓ delivered, ◷ queued, ↻ retrying, ✗ dead letter, ⊘ dropped, · not "
                  "yet\">Sent</th><th class=\"c-by wide\">Muted by</th></tr></thead><tbody>");
    for (i = 0; i < n && i < MAX_ROWS; i++) {
        const json_t *a = rows[i].al;
        const char *state = str(a, "state"), *host = label(a, "HOST"), *by = str(a, "mutedBy");
        const char *sum;
        size_t sumlen;

        summary_text(a, &sum, &sumlen);
        buf_printf(out, "<tr class=\"alert sev-%s st-%s\"><td class=\"sev\"><span class=\"badge\">",
                   rows[i].sev.cls, state);
        html_puts(out, rows[i].sev.word);
        buf_puts(out, "</span></td>");
        cell(out, "state wide", state);
        buf_puts(out, "<td class=\"host wide\" title=\"");
        html_puts(out, host);
        buf_puts(out, "\"><a href=\"/?filter=");
        {
            struct buf m = BUF_INIT;
            buf_puts(&m, "HOST=\"");
            for (const char *p = host; *p; p++) {
                if (*p == '"' || *p == '\\') buf_putc(&m, '\\');
                if (*p == '\n')
                    buf_puts(&m, "\\n");
                else
                    buf_putc(&m, *p);
            }
            buf_putc(&m, '"');
            html_url_param(out, buf_str(&m));
            buf_free(&m);
        }
        buf_puts(out, "\">");
        html_puts(out, host);
        buf_puts(out, "</a></td><td class=\"summary\" title=\"");
        html_escape(out, sum, sumlen);
        /* on narrow screens the host is the summary's first line (the host column is hidden) */
        buf_puts(out, "\"><span class=\"host2\">");
        html_puts(out, host);
        buf_puts(out, "</span>");
        alert_href(out, rows[i].id);
        if (strcmp(state, "firing") != 0) { /* the state column is hidden on narrow screens */
            buf_puts(out, "<span class=\"muted-tag\">");
            html_puts(out, state);
            buf_puts(out, "</span> ");
        }
        html_escape(out, sum, sumlen);
        buf_puts(out, "</a></td><td class=\"id wide mid\" title=\"");
        html_puts(out, rows[i].id);
        buf_puts(out, "\">");
        alert_href(out, rows[i].id);
        html_puts(out, rows[i].id);
        buf_puts(out, "</a></td><td class=\"time wide mid\">");
        time_html(out, "first seen", str(a, "firstSeen"), now);
        buf_puts(out, "</td><td class=\"time last\">");
        time_html(out, "last seen", rows[i].last, now);
        buf_printf(out, "</td><td class=\"n wide mid\">%lld</td><td class=\"ex wide\">",
                   (long long)json_integer_value(json_object_get(a, "count")));
        executors_compact(out, a);
        buf_puts(out, "</td><td class=\"by wide\" title=\"");
        html_puts(out, by);
        buf_puts(out, "\">");
        if (*by && strcmp(state, "inhibited") == 0) {
            alert_href(out, by);
            html_puts(out, by);
            buf_puts(out, "</a>");
        } else if (*by) { /* its row in the silences table below */
            buf_puts(out, "<a href=\"#silence-");
            html_url_param(out, by);
            buf_puts(out, "\">silence ");
            html_puts(out, by);
            buf_puts(out, "</a>");
        }
        buf_puts(out, "</td></tr>");
    }
    if (!n)
        buf_printf(out, "<tr class=\"none\"><td colspan=\"10\">%s</td></tr>",
                   v->error.len ? "No alerts: the URL's filter is bad (see above)."
                                : "No alerts here.");
    else if (n > MAX_ROWS)
        buf_printf(out,
                   "<tr class=\"more\"><td colspan=\"10\">and %zu more: a filter narrows the "
                   "list, <code>corral alerts</code> lists them all.</td></tr>",
                   n - MAX_ROWS);
    buf_puts(out, "</tbody></table>");
    free(rows);
    json_decref(alerts);
}

/* the JSON of the page's tables: at most MAX_ROWS alerts (the API has them all) */
static json_t *
alerts_status_json(struct status *st, bool inhibited)
{
    json_t *alerts = store_alerts(st, NULL, NULL), *al, *out = json_array();
    size_t i;

    json_array_foreach(alerts, i, al)
    {
        const char *state = json_string_value(json_object_get(al, "state"));
        if (!state || (strcmp(state, "inhibited") == 0) != inhibited) continue;
        if (json_array_size(out) >= MAX_ROWS) break;
        json_array_append(out, al);
    }
    json_decref(alerts);
    return out;
}

static json_t *
alerts_json_section(struct status *st)
{
    return alerts_status_json(st, false);
}

static json_t *
inhibited_json(struct status *st)
{
    return alerts_status_json(st, true);
}

/* ---- silences ---- */

static json_t *
silences_array(struct status *st)
{
    struct silences *sil = server_silences(st->srv);

    return sil ? silences_to_json(sil, NULL, false, clock_wall_ms()) : json_array();
}

static void
silences_html(struct status *st, struct buf *out)
{
    json_t *sils = silences_array(st), *si;
    int64_t now = clock_wall_ms();
    size_t i;

    buf_puts(out, "<table><thead><tr><th>Id</th><th>State</th><th>Matchers</th><th>Ends</th>"
                  "<th>Created by</th><th>Comment</th></tr></thead><tbody>");
    json_array_foreach(sils, i, si)
    {
        if (i >= MAX_ROWS) {
            buf_printf(out, "<tr><td colspan=\"6\">and %zu more: corral silence list.</td></tr>",
                       json_array_size(sils) - i);
            break;
        }
        buf_printf(out, "<tr class=\"silence\" id=\"silence-");
        html_url_param(out, str(si, "id"));
        buf_puts(out, "\">");
        cell(out, "key", str(si, "id"));
        cell(out, "state", str(json_object_get(si, "status"), "state"));
        cell(out, "key", str(si, "matchersText"));
        buf_puts(out, "<td class=\"time\">");
        time_html(out, "ends", str(si, "endsAt"), now);
        buf_puts(out, "</td>");
        cell(out, "name", str(si, "createdBy"));
        cell(out, "key", str(si, "comment"));
        buf_puts(out, "</tr>");
    }
    if (!json_array_size(sils)) buf_puts(out, "<tr><td colspan=\"6\">None.</td></tr>");
    buf_puts(out, "</tbody></table>");
    json_decref(sils);
}

static json_t *
silences_json_section(struct status *st)
{
    return silences_array(st);
}

/* ---- the cluster: its nodes and who owns which partition ---- */

/* "0-3, 7, 9-10" */
static void
ranges_html(struct buf *out, const json_t *parts)
{
    size_t i, n = json_array_size(parts);

    for (i = 0; i < n;) {
        json_int_t first = json_integer_value(json_array_get(parts, i)), last = first;
        while (i + 1 < n && json_integer_value(json_array_get(parts, i + 1)) == last + 1) {
            last++;
            i++;
        }
        i++;
        buf_printf(out, last > first ? "%s%lld-%lld" : "%s%lld", out->len ? ", " : "",
                   (long long)first, (long long)last);
    }
}

static bool
cluster_shown(struct status *st)
{
    json_t *j = server_cluster_json(st->srv);
    bool shown = j != NULL;

    json_decref(j);
    return shown;
}

static void
cluster_html(struct status *st, struct buf *out)
{
    json_t *j = server_cluster_json(st->srv), *nodes = json_object_get(j, "nodes"), *n;
    json_t *owners = json_object_get(j, "owners"), *o;
    struct buf b = BUF_INIT;
    size_t i, nfree = 0;

    buf_puts(out, "<p>Cluster <b>");
    html_puts(out, str(j, "name"));
    buf_puts(out, "</b>, this node <b>");
    html_puts(out, str(j, "node"));
    buf_printf(out, "</b>, %lld partitions.</p>",
               (long long)json_integer_value(json_object_get(j, "partitions")));
    buf_puts(out, "<table><thead><tr><th>Node</th><th>State</th><th>Last seen</th>"
                  "<th>Partitions</th><th>Owned</th></tr></thead><tbody>");
    json_array_foreach(nodes, i, n)
    {
        json_t *parts = json_object_get(n, "partitions");
        json_t *seen = json_object_get(n, "lastSeen");
        bool alive = json_is_true(json_object_get(n, "alive"));
        buf_printf(out, "<tr class=\"node %s\">", alive ? "alive" : "gone");
        buf_reset(&b);
        buf_puts(&b, str(n, "name"));
        if (json_is_true(json_object_get(n, "self"))) buf_puts(&b, " (this node)");
        cell(out, "name", buf_str(&b));
        cell(out, "state", alive ? "alive" : "gone");
        buf_reset(&b);
        if (json_is_number(seen)) buf_printf(&b, "%.1f s ago", json_number_value(seen));
        cell(out, "time", buf_str(&b));
        buf_reset(&b);
        ranges_html(&b, parts);
        cell(out, "key", buf_str(&b));
        buf_printf(out, "<td class=\"n\">%zu</td></tr>", json_array_size(parts));
    }
    if (!json_array_size(nodes)) buf_puts(out, "<tr><td colspan=\"5\">None seen yet.</td></tr>");
    buf_puts(out, "</tbody></table>");
    json_array_foreach(owners, i, o) nfree += json_is_null(o);
    if (nfree) {
        buf_printf(out, "<p class=\"error\">%zu partitions have no owner:", nfree);
        json_array_foreach(owners, i, o) if (json_is_null(o)) buf_printf(out, " %zu", i);
        buf_puts(out, "</p>");
    }
    buf_free(&b);
    json_decref(j);
}

static json_t *
cluster_json(struct status *st)
{
    json_t *j = server_cluster_json(st->srv);

    return j ? j : json_null();
}

struct section {
    const char *id;    /* HTML id and JSON key */
    const char *title; /* the heading; NULL: in the JSON only */
    void (*html)(struct status *st, struct buf *out);
    json_t *(*json)(struct status *st);
    bool (*shown)(struct status *st); /* NULL: always on the page */
};

/*
 * The page, top to bottom, after the alerts (written first, with the
 * page's filter: alerts_table); the inhibited alerts are among them on the
 * page, apart in the JSON.
 */
static const struct section sections[] = {
    {"alerts", NULL, NULL, alerts_json_section, NULL},
    {"silences", "Silences", silences_html, silences_json_section, NULL},
    {"inhibited", NULL, NULL, inhibited_json, NULL},
    {"rates", "Messages, last hour", rates_html, rates_json, NULL},
    {"queues", "Executor queues", queues_html, queues_json, NULL},
    {"contexts", "Open contexts", contexts_html, contexts_json, NULL},
    {"inputs", "Inputs", inputs_html, inputs_json, NULL},
    {"cluster", "Cluster", cluster_html, cluster_json, cluster_shown},
};

/*
 * One line per alert row (nothing wraps: 15 rows and more fit a 1000-pixel
 * screen under the header), severity as a coloured badge with its word,
 * muted rows greyed; under 1250 pixels the "mid" columns are hidden, under
 * 900 the "wide" ones too (the host then heads the summary cell).
 */
static const char style[] =
    "body{font:14px/1.35 system-ui,sans-serif;margin:0 1em 1em;color:#1b1b1b;background:#fff}"
    "h1{font-size:1.25em;margin:.4em 0 .1em}h2{font-size:1.1em;margin:1.2em 0 .3em;"
    "border-bottom:1px solid #ccc}h3{font-size:1em;margin:.8em 0 .3em}"
    "nav,.states,.filter{margin:.15em 0;font-size:.95em}a{color:#0b57b0}"
    ".states a{text-decoration:none;padding:1px 5px;border-radius:3px}"
    ".states a.current{background:#1b1b1b;color:#fff}.states b{font-variant-numeric:tabular-nums}"
    ".error{background:#fde8e8;border:1px solid #c62828;padding:4px 8px;font-weight:600}"
    "table{border-collapse:collapse}"
    "th,td{padding:2px 6px;border-bottom:1px solid #e3e3e3;text-align:left;vertical-align:top}"
    "th{font-size:.85em;color:#555;font-weight:600}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "td.key,td.name{word-break:break-all;max-width:40em}"
    "table.alerts{width:100%;table-layout:fixed}"
    "table.alerts td{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;"
    "vertical-align:middle;height:22px;padding-top:1px;padding-bottom:1px}"
    "table.alerts td a{color:inherit;text-decoration:none}"
    "table.alerts td a:hover{text-decoration:underline}"
    ".c-sev{width:6.6em}.c-state{width:5em}.c-host{width:16em}.c-id{width:13em}"
    ".c-time{width:6.6em}.c-n{width:3.6em}.c-ex{width:4.6em}.c-by{width:8em}"
    "tr.alert td.sev{border-left:6px solid var(--c)}"
    ".sev-critical{--c:#c62828}.sev-error{--c:#e8590c}.sev-warning{--c:#f2b100}"
    ".sev-info{--c:#1f6fd0}.sev-unknown{--c:#7a7a7a}"
    ".badge{display:inline-block;width:5.6em;text-align:center;border-radius:3px;"
    "font-weight:700;font-size:.9em;background:var(--c);color:#fff}"
    ".sev-warning .badge{color:#1b1b1b}"
    "tr.st-firing td.summary{font-weight:600}"
    "tr.st-silenced,tr.st-inhibited,tr.st-resolved{color:#666;background:#f6f6f6}"
    ".host2{display:none}.muted-tag{display:none;font-size:.8em;border:1px solid "
    "#999;border-radius:3px;padding:0 3px}"
    "td.state{font-size:.9em}tr.st-firing td.state{color:#c62828}"
    ".ex span{display:inline-block;width:1.1em;text-align:center;font-weight:700}"
    ".ex-delivered{color:#2e7d32}.ex-queued,.ex-none{color:#777}.ex-retrying{color:#e8590c}"
    ".ex-dead,.ex-dropped{color:#c62828}"
    "pre{background:#f4f4f4;padding:6px 8px;overflow-x:auto;white-space:pre-wrap;"
    "word-break:break-all;margin:.3em 0}"
    "pre.cmd{background:#1b1b1b;color:#f4f4f4;user-select:all}"
    "dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:.4em 0}"
    "dl.facts dt{color:#555}dl.facts dd{margin:0;word-break:break-all}"
    ".charts{display:flex;flex-wrap:wrap;gap:1.5em}figure{margin:0}"
    "figcaption{font-size:.9em;color:#555}footer{color:#666;font-size:.9em;margin-top:1.5em}"
    "@media (max-width:1250px){.mid{display:none}}@media (max-width:900px){body{margin:0 .4em "
    "1em}.wide{display:none}"
    ".c-time{width:5.6em}.c-sev{width:5.8em}.badge{width:5em}"
    ".muted-tag{display:inline}"
    "td.summary .host2,td.summary a{display:block;overflow:hidden;text-overflow:ellipsis;"
    "line-height:1.25}td.summary .host2{font-weight:400}"
    "table:not(.alerts){display:block;overflow-x:auto;max-width:100%}"
    "svg.chart{max-width:100%;height:auto}}";

static void
page_begin(struct buf *out, const char *title, bool refresh)
{
    char host[256];

    if (gethostname(host, sizeof(host)) < 0) strcpy(host, "?");
    host[sizeof(host) - 1] = '\0';
    buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    if (refresh) buf_puts(out, "<meta http-equiv=\"refresh\" content=\"10\">");
    buf_puts(out, "<meta name=\"viewport\" content=\"width=device-width\"><title>");
    html_puts(out, title);
    buf_puts(out, title ? " — corrald on " : "corrald on ");
    html_puts(out, host);
    buf_printf(out, "</title><style>%s</style></head><body><header><h1>", style);
    html_puts(out, title);
    buf_puts(out, title ? " <small>— corrald on " : "corrald on ");
    html_puts(out, host);
    buf_puts(out, title ? "</small></h1>" : "</h1>");
}

unsigned
status_page(struct status *st, const struct status_query *q, struct buf *out)
{
    struct view v;
    unsigned code;
    size_t i;

    view_parse(&v, q);
    code = v.error.len ? 400 : 200;
    page_begin(out, NULL, true);
    buf_puts(out, "<nav><a href=\"#alerts\">Alerts</a>");
    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        if (sections[i].html && (!sections[i].shown || sections[i].shown(st)))
            buf_printf(out, " · <a href=\"#%s\">%s</a>", sections[i].id, sections[i].title);
    buf_puts(out, " · <a href=\"/metrics\">metrics</a> · <a href=\"/api/v1/status\">JSON</a>"
                  "</nav>");
    state_nav(st, out, q);
    buf_puts(out, "</header>");
    if (v.error.len) {
        buf_puts(out, "<p class=\"error\" role=\"alert\">Bad URL: ");
        html_puts(out, buf_str(&v.error));
        buf_puts(out, ". A filter is Alertmanager's matcher syntax, e.g. "
                      "<code>?filter=HOST=\"web1\"&amp;state=silenced</code>.</p>");
    }
    buf_puts(out, "\n<section id=\"alerts\">");
    alerts_table(st, out, &v);
    buf_puts(out, "</section>");
    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        if (!sections[i].html || (sections[i].shown && !sections[i].shown(st))) continue;
        buf_printf(out, "\n<section id=\"%s\"><h2>%s</h2>", sections[i].id, sections[i].title);
        sections[i].html(st, out);
        buf_puts(out, "</section>");
    }
    buf_puts(out, "\n<footer><p>Refreshes every 10 s. Sent: ✓ delivered, ◷ queued, ↻ retrying, "
                  "✗ dead letter, ⊘ dropped, · not yet. The page is read-only: an alert's page "
                  "gives the <code>corral silence add</code> command to mute it.</p></footer>"
                  "</body></html>\n");
    view_free(&v);
    return code;
}

/* ---- an alert's own page ---- */

/* s as one shell word: '...', a ' inside as '\'' */
static void
shell_quote(struct buf *out, const char *s)
{
    buf_putc(out, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            buf_puts(out, "'\\''");
        else
            buf_putc(out, *s);
    }
    buf_putc(out, '\'');
}

/* NAME="VALUE" as a matcher (labelmatch's escapes), as one shell word */
static void
matcher_word(struct buf *out, const char *name, const char *value)
{
    struct buf m = BUF_INIT;

    buf_printf(&m, "%s=\"", name);
    for (; *value; value++) {
        if (*value == '"' || *value == '\\') buf_putc(&m, '\\');
        if (*value == '\n')
            buf_puts(&m, "\\n");
        else
            buf_putc(&m, *value);
    }
    buf_putc(&m, '"');
    shell_quote(out, buf_str(&m));
    buf_free(&m);
}

/*
 * The command that silences this alert and only it: HOST and its identity
 * (corral.alert_id, which the alert id is made of when the alert sets it,
 * else the rule that raised it).
 */
static void
silence_command(struct buf *out, const json_t *al)
{
    const char *host = label(al, "HOST"), *aid = label(al, "corral.alert_id");
    const char *rule = label(al, ".classifier.rule_id"), *sum;
    struct buf cmd = BUF_INIT, comment = BUF_INIT;
    size_t sumlen;

    buf_puts(&cmd, "corral silence add ");
    if (*host) {
        matcher_word(&cmd, "HOST", host);
        buf_putc(&cmd, ' ');
    }
    if (*aid)
        matcher_word(&cmd, "corral.alert_id", aid);
    else if (*rule)
        matcher_word(&cmd, "rule_id", rule);
    else
        matcher_word(&cmd, "corral.event", label(al, "corral.event"));
    summary_text(al, &sum, &sumlen);
    buf_printf(&comment, "%s%s%.*s", host, *host ? ": " : "", (int)sumlen, sum);
    buf_puts(&cmd, " --duration 2h --comment ");
    shell_quote(&cmd, buf_str(&comment));
    buf_puts(out, "<pre class=\"cmd\" id=\"silence-command\">");
    html_puts(out, buf_str(&cmd));
    buf_puts(out, "</pre>");
    buf_free(&cmd);
    buf_free(&comment);
}

/* dt/dd of a time: absolute UTC and relative */
static void
fact_time(struct buf *out, const char *what, const char *iso, int64_t now)
{
    if (!*iso) return;
    buf_printf(out, "<dt>%s</dt><dd>", what);
    html_puts(out, iso);
    buf_puts(out, " (");
    relative(out, iso, now);
    buf_puts(out, ")</dd>");
}

static void
fact(struct buf *out, const char *what, const char *value)
{
    if (!*value) return;
    buf_printf(out, "<dt>%s</dt><dd>", what);
    html_puts(out, value);
    buf_puts(out, "</dd>");
}

/* what mutes alert al: its silence (in full) or the alert that inhibits it (a link) */
static void
muted_by_html(struct status *st, struct buf *out, const json_t *al)
{
    const char *state = str(al, "state"), *by = str(al, "mutedBy");
    json_t *sils, *si;
    size_t i;

    if (!*by) return;
    buf_puts(out, "<section id=\"muted\"><h2>");
    if (strcmp(state, "inhibited") == 0) {
        json_t *src = store_alerts(st, NULL, by);
        const json_t *sa = json_array_get(src, 0);
        buf_puts(out, "Inhibited by</h2><p>");
        alert_href(out, by);
        html_puts(out, by);
        buf_puts(out, "</a>");
        if (sa) { /* what it is, so that one need not follow the link */
            const char *ssum;
            size_t ssumlen;
            summary_text(sa, &ssum, &ssumlen);
            buf_printf(out, " <span class=\"sev-%s\"><span class=\"badge\">", severity_of(sa).cls);
            html_puts(out, severity_of(sa).word);
            buf_puts(out, "</span></span> ");
            html_puts(out, str(sa, "state"));
            buf_puts(out, ": ");
            html_puts(out, label(sa, "HOST"));
            buf_puts(out, " ");
            html_escape(out, ssum, ssumlen);
        }
        buf_puts(out, ". It holds this alert back while it is firing (an &lt;inhibit&gt; rule).</p>"
                      "</section>");
        json_decref(src);
        return;
    }
    buf_puts(out, "Silenced by</h2>");
    sils = silences_array(st);
    json_array_foreach(sils, i, si)
    {
        if (strcmp(str(si, "id"), by) != 0) continue;
        buf_puts(out, "<dl class=\"facts\">");
        fact(out, "Silence", by);
        fact(out, "Matchers", str(si, "matchersText"));
        fact_time(out, "Ends", str(si, "endsAt"), clock_wall_ms());
        fact(out, "Created by", str(si, "createdBy"));
        fact(out, "Comment", str(si, "comment"));
        buf_puts(out, "</dl><p>To end it: <code>corral silence expire ");
        html_puts(out, by);
        buf_puts(out, "</code></p>");
        break;
    }
    if (i == json_array_size(sils)) {
        buf_puts(out, "<p>silence ");
        html_puts(out, by);
        buf_puts(out, " (no longer listed)</p>");
    }
    buf_puts(out, "</section>");
    json_decref(sils);
}

struct label_row {
    const char *name, *value;
};

static int
label_cmp(const void *x, const void *y)
{
    return strcmp(((const struct label_row *)x)->name, ((const struct label_row *)y)->name);
}

static void
labels_html(struct buf *out, const json_t *al)
{
    const json_t *labels = json_object_get(al, "labels");
    struct label_row *rows = xcalloc(json_object_size(labels) + 1, sizeof(*rows));
    const char *name;
    json_t *v;
    size_t i, n = 0;

    json_object_foreach((json_t *)labels, name, v)
    {
        if (strcmp(name, EVIDENCE_NAME) == 0) continue; /* its own section */
        rows[n].name = name;
        rows[n++].value = json_string_value(v) ? json_string_value(v) : "";
    }
    qsort(rows, n, sizeof(*rows), label_cmp);
    buf_puts(out, "<section id=\"labels\"><h2>Labels</h2><table class=\"labels\"><tbody>");
    for (i = 0; i < n; i++) {
        buf_puts(out, "<tr class=\"label\">");
        cell(out, "name", rows[i].name);
        cell(out, "key", rows[i].value);
        buf_puts(out, "</tr>");
    }
    buf_puts(out, "</tbody></table></section>");
    free(rows);
}

static void
history_html(struct buf *out, const json_t *al)
{
    const json_t *hist = json_object_get(al, "notifications"), *n, *execs;
    const char *name;
    json_t *ex;
    size_t i;

    execs = json_object_get(al, "executors");
    buf_puts(out, "<section id=\"executors\"><h2>Executors</h2><table><thead><tr><th>Executor</th>"
                  "<th>Last outcome</th><th>At</th><th>Sends resolved</th></tr></thead><tbody>");
    json_object_foreach((json_t *)execs, name, ex)
    {
        buf_puts(out, "<tr class=\"executor\">");
        cell(out, "name", name);
        buf_printf(out, "<td class=\"ex\"><span class=\"ex-%s\">%s</span> ", str(ex, "state"),
                   delivery_symbol(str(ex, "state")));
        html_puts(out, str(ex, "state"));
        buf_puts(out, "</td>");
        cell(out, "time", str(ex, "at"));
        cell(out, "n", json_is_true(json_object_get(ex, "sendResolved")) ? "yes" : "no");
        buf_puts(out, "</tr>");
    }
    if (!json_object_size(execs))
        buf_puts(out, "<tr><td colspan=\"4\">No executor: no route sends it.</td></tr>");
    buf_printf(out,
               "</tbody></table></section><section id=\"history\"><h2>Notifications (%lld "
               "sent",
               (long long)json_integer_value(json_object_get(al, "notified")));
    if (json_array_size(hist) < (size_t)json_integer_value(json_object_get(al, "notified")))
        buf_printf(out, ", the last %zu here", json_array_size(hist));
    buf_puts(out, ")</h2><table><thead><tr><th>At (UTC)</th><th>Executor</th><th>Status</th>"
                  "<th>Outcome</th><th>Attempt</th></tr></thead><tbody>");
    json_array_foreach(hist, i, n)
    {
        buf_puts(out, "<tr class=\"notification\">");
        cell(out, "time", str(n, "at"));
        cell(out, "name", str(n, "executor"));
        cell(out, "state", str(n, "status"));
        cell(out, "state", str(n, "outcome"));
        buf_printf(out, "<td class=\"n\">%lld</td></tr>",
                   (long long)json_integer_value(json_object_get(n, "attempt")));
    }
    if (!json_array_size(hist)) buf_puts(out, "<tr><td colspan=\"5\">None.</td></tr>");
    buf_puts(out, "</tbody></table></section>");
}

unsigned
status_alert_page(struct status *st, const char *id, struct buf *out)
{
    json_t *found = id ? store_alerts(st, NULL, id) : json_array();
    const json_t *al = json_array_get(found, 0);
    int64_t now = clock_wall_ms();
    struct severity sev;
    const char *sum, *evidence;
    size_t sumlen;

    if (!al) {
        page_begin(out, "No such alert", false);
        buf_puts(out, "</header><p class=\"error\" role=\"alert\">");
        if (id) {
            buf_puts(out, "corrald has no alert with id <code>");
            html_puts(out, id);
            buf_puts(out, "</code>: it may have been forgotten (max-alerts).");
        } else {
            buf_puts(out, "No alert id: the address is /alert?id=ID.");
        }
        buf_puts(out, "</p><p><a href=\"/\">All alerts</a></p></body></html>\n");
        json_decref(found);
        return id ? 404 : 400;
    }
    sev = severity_of(al);
    summary_text(al, &sum, &sumlen);
    {
        struct buf title = BUF_INIT;
        buf_printf(&title, "%s: %.*s", label(al, "HOST"), (int)sumlen, sum);
        page_begin(out, buf_str(&title), false);
        buf_free(&title);
    }
    buf_puts(out, "<nav><a href=\"/\">All alerts</a> · <a href=\"#labels\">Labels</a> · "
                  "<a href=\"#evidence\">Evidence</a> · <a href=\"#history\">Notifications</a>"
                  "</nav></header>");
    buf_printf(out, "<section id=\"alert\" class=\"alert sev-%s st-%s\"><p><span class=\"badge\">",
               sev.cls, str(al, "state"));
    html_puts(out, sev.word);
    buf_puts(out, "</span> <b class=\"state\">");
    html_puts(out, str(al, "state"));
    buf_puts(out, "</b></p><dl class=\"facts\">");
    fact(out, "Alert id", str(al, "id"));
    fact(out, "Host", label(al, "HOST"));
    fact(out, "Summary", label(al, "corral.summary"));
    if (strcmp(label(al, "MESSAGE"), label(al, "corral.summary")) != 0)
        fact(out, "Message", label(al, "MESSAGE"));
    fact(out, "Rule", label(al, ".classifier.rule_id"));
    fact_time(out, "First seen", str(al, "firstSeen"), now);
    fact_time(out, "Last seen", str(al, "lastSeen"), now);
    buf_printf(out, "<dt>Count</dt><dd>%lld</dd>",
               (long long)json_integer_value(json_object_get(al, "count")));
    fact_time(out, "Resolved", str(al, "resolvedAt"), now);
    if (*str(al, "resolvedBy")) fact(out, "Resolved by", str(al, "resolvedBy"));
    fact_time(out, "Resolves", str(al, "resolveAt"), now);
    buf_puts(out, "</dl></section>");
    muted_by_html(st, out, al);
    buf_puts(out, "<section id=\"silence\"><h2>Silence it</h2><p>On corrald's host, as root "
                  "or a user who may use its control socket (edit the duration and the "
                  "comment):</p>");
    silence_command(out, al);
    buf_puts(out, "</section><section id=\"evidence\"><h2>Evidence</h2>");
    evidence = label(al, EVIDENCE_NAME);
    if (*evidence) {
        buf_puts(out, "<pre class=\"evidence\">");
        html_puts(out, evidence);
        buf_puts(out, "</pre>");
    } else {
        buf_puts(out, "<p>No log lines kept with this alert.</p>");
    }
    buf_puts(out, "</section>");
    labels_html(out, al);
    history_html(out, al);
    buf_puts(out, "</body></html>\n");
    json_decref(found);
    return 200;
}

json_t *
status_json(struct status *st)
{
    json_t *o = json_object();
    size_t i;

    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        json_object_set_new(o, sections[i].id, sections[i].json(st));
    return o;
}
