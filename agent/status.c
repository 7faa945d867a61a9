/*
 * status: the status page and its JSON (see status.h).
 *
 * The page is a list of sections (the table `sections` below).  A section
 * has an id (the HTML id and the JSON key), a heading, a function writing
 * its HTML and one adding its JSON value; adding one to the page is a line
 * in the table and two functions.  Every string that may come from a log
 * message or the configuration (host names, rule ids, context keys, input
 * and executor names) is written through html_puts()/html_escape(), and
 * only through them.
 *
 * Rates: a timer samples the server's received and generated counters
 * every minute into two rings of STATUS_MINUTES counts, so the message path
 * does no work for the charts.
 */
#include "agent/status.h"
#include "agent/alerts.h"
#include "agent/silences.h"
#include "actions/queue.h"
#include "agent/html.h"
#include "agent/input.h"
#include "agent/server.h"
#include "engine/clock.h"
#include "engine/corr.h"
#include "engine/pdb.h"
#include "engine/utf8.h"
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

/*
 * A JSON string of len bytes that may come from a log message: jansson
 * takes only valid UTF-8, so bytes that are not become U+FFFD.
 */
static json_t *
jstrn(const char *s, size_t len)
{
    struct buf b = BUF_INIT;
    json_t *j;

    if (!s) return json_string("");
    j = json_stringn(s, len);
    if (j) return j;
    utf8_scrub(&b, s, len);
    j = json_stringn(b.p ? b.p : "", b.len);
    buf_free(&b);
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
               360, 60);
    buf_printf(out,
               "<figcaption>Received per minute (this minute so far: <span "
               "id=\"received-minute\">%llu</span>; total <span "
               "id=\"received-total\">%llu</span>)</figcaption></figure><figure>",
               (unsigned long long)(now_rx - st->last_received), (unsigned long long)now_rx);
    html_chart(out, "Messages generated per minute, last hour, this minute last", gen,
               STATUS_MINUTES, 360, 60);
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

/* ---- executor queues ---- */

static void
queue_row(const char *name, const struct queue_stats *qs, void *arg)
{
    struct buf *out = arg;

    buf_puts(out, "<tr class=\"queue\"><td class=\"name\">");
    html_puts(out, name);
    buf_printf(out,
               "</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
               "<td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td></tr>",
               (unsigned long long)qs->queued, (unsigned long long)qs->inflight,
               (unsigned long long)qs->delivered, (unsigned long long)qs->retries,
               (unsigned long long)qs->dead,
               (unsigned long long)(qs->dropped_full + qs->rate_limited));
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

    buf_puts(out, "<tr class=\"rule\"><td class=\"name\">");
    html_puts(out, rs->rule_id);
    buf_printf(out,
               "</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
               "<td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
               "</tr>",
               (unsigned long long)rs->contexts, (unsigned long long)rs->refused,
               (unsigned long long)rs->dropped, (unsigned long long)rs->evicted,
               (unsigned long long)rs->rate_limited, (unsigned long long)rs->rate_evicted);
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

    buf_puts(out, "<tr class=\"input\"><td class=\"name\">");
    html_puts(out, name);
    buf_printf(out,
               "</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
               "<td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td></tr>",
               (unsigned long long)is->received, (unsigned long long)is->bytes,
               (unsigned long long)is->kernel_drops, (unsigned long long)is->truncated,
               (unsigned long long)is->errors, (unsigned long long)is->active);
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

/* ---- the page ---- */

/* ---- active alerts, inhibited alerts, silences (the store's JSON, read back) ---- */

/* Rows shown per table: the page stays small with 100,000 alerts; `corral alerts` has them all. */
#define MAX_ROWS 500

/* parses what alerts_json / silences_json wrote; an empty array when there is nothing */
static json_t *
parse_array(struct buf *b)
{
    json_t *j = b->p ? json_loadb(b->p, b->len, 0, NULL) : NULL;

    buf_free(b);
    if (!json_is_array(j)) {
        json_decref(j);
        j = json_array();
    }
    return j;
}

static json_t *
all_alerts(struct status *st)
{
    struct alerts *a = server_alerts(st->srv);
    struct buf b = BUF_INIT;

    if (a) alerts_json(a, NULL, NULL, &b);
    return parse_array(&b);
}

static const char *
label(const json_t *alert, const char *name)
{
    const char *v = json_string_value(json_object_get(json_object_get(alert, "labels"), name));
    return v ? v : "";
}

static void
cell(struct buf *out, const char *cls, const char *text)
{
    buf_printf(out, "<td class=\"%s\">", cls);
    html_puts(out, text);
    buf_puts(out, "</td>");
}

/* what was sent for an alert, folded: when, to which executor, firing or resolved, outcome */
static void
notification_history(struct buf *out, const json_t *al)
{
    const json_t *hist = json_object_get(al, "notifications"), *n;
    size_t i;

    if (!json_array_size(hist)) return;
    buf_printf(out, "<details class=\"history\"><summary>%lld notifications</summary><ol>",
               (long long)json_integer_value(json_object_get(al, "notified")));
    json_array_foreach(hist, i, n)
    {
        buf_puts(out, "<li>");
        html_puts(out, json_string_value(json_object_get(n, "at")));
        buf_puts(out, " ");
        html_puts(out, json_string_value(json_object_get(n, "executor")));
        buf_puts(out, " ");
        html_puts(out, json_string_value(json_object_get(n, "status")));
        buf_puts(out, " ");
        html_puts(out, json_string_value(json_object_get(n, "outcome")));
        buf_printf(out, " (attempt %lld)</li>",
                   (long long)json_integer_value(json_object_get(n, "attempt")));
    }
    buf_puts(out, "</ol></details>");
}

/* the alerts whose state is (or, with !want, is not) "inhibited", as table rows */
static void
alert_rows(struct status *st, struct buf *out, bool inhibited, unsigned cols)
{
    json_t *alerts = all_alerts(st), *al;
    size_t i, shown = 0, more = 0;

    json_array_foreach(alerts, i, al)
    {
        const char *state = json_string_value(json_object_get(al, "state"));
        const char *key, *by = json_string_value(json_object_get(al, "mutedBy"));
        json_t *ex;
        if (!state || (strcmp(state, "inhibited") == 0) != inhibited) continue;
        if (shown >= MAX_ROWS) {
            more++;
            continue;
        }
        shown++;
        buf_printf(out, "<tr class=\"alert %s\">", inhibited ? "inhibited" : "active");
        cell(out, "state", state);
        /* the alert's severity (the executors' default when it sets none), not syslog's */
        if (!inhibited)
            cell(out, "severity",
                 *label(al, "corral.severity") ? label(al, "corral.severity") : "warning");
        cell(out, "host", label(al, "HOST"));
        cell(out, "rule", label(al, ".classifier.rule_id"));
        buf_puts(out, "<td class=\"key\">");
        html_puts(out, json_string_value(json_object_get(al, "id")));
        /* the log lines that made it (corral.evidence), folded under the id */
        if (*label(al, "corral.evidence")) {
            buf_puts(out, "<details><summary>log lines</summary><pre>");
            html_puts(out, label(al, "corral.evidence"));
            buf_puts(out, "</pre></details>");
        }
        buf_puts(out, "</td>");
        if (inhibited) {
            cell(out, "by", by ? by : "");
            buf_puts(out, "</tr>");
            continue;
        }
        cell(out, "time", json_string_value(json_object_get(al, "firstSeen")));
        cell(out, "time", json_string_value(json_object_get(al, "lastSeen")));
        buf_printf(out, "<td class=\"n\">%lld</td><td class=\"executors\">",
                   (long long)json_integer_value(json_object_get(al, "count")));
        json_object_foreach(json_object_get(al, "executors"), key, ex)
        {
            html_puts(out, key);
            buf_puts(out, ": ");
            html_puts(out, json_string_value(json_object_get(ex, "state")));
            buf_puts(out, "<br>");
        }
        notification_history(out, al);
        buf_puts(out, "</td>");
        cell(out, "by", by ? by : "");
        buf_puts(out, "</tr>");
    }
    if (!shown)
        buf_printf(out, "<tr><td colspan=\"%u\">None.</td></tr>", cols);
    else if (more)
        buf_printf(out,
                   "<tr><td colspan=\"%u\">and %zu more: corral alerts lists them all.</td></tr>",
                   cols, more);
    json_decref(alerts);
}

static void
alerts_html(struct status *st, struct buf *out)
{
    buf_puts(out, "<table><thead><tr><th>State</th><th>Severity</th><th>Host</th><th>Rule</th>"
                  "<th>Alert id</th><th>First seen</th><th>Last seen</th><th>Count</th>"
                  "<th>Executors</th><th>Silenced by</th></tr></thead><tbody>");
    alert_rows(st, out, false, 10);
    buf_puts(out, "</tbody></table>");
}

static void
inhibited_html(struct status *st, struct buf *out)
{
    buf_puts(out, "<table><thead><tr><th>State</th><th>Host</th><th>Rule</th><th>Alert id</th>"
                  "<th>Inhibited by</th></tr></thead><tbody>");
    alert_rows(st, out, true, 5);
    buf_puts(out, "</tbody></table>");
}

/* the JSON of the page's tables: at most MAX_ROWS alerts (the API has them all) */
static json_t *
alerts_status_json(struct status *st, bool inhibited)
{
    json_t *alerts = all_alerts(st), *al, *out = json_array();
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

static json_t *
silences_array(struct status *st)
{
    struct silences *sil = server_silences(st->srv);
    struct buf b = BUF_INIT;

    if (sil) silences_json(sil, NULL, false, clock_wall_ms(), &b);
    return parse_array(&b);
}

static void
silences_html(struct status *st, struct buf *out)
{
    json_t *sils = silences_array(st), *si;
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
        buf_puts(out, "<tr class=\"silence\">");
        cell(out, "key", json_string_value(json_object_get(si, "id")));
        cell(out, "state",
             json_string_value(json_object_get(json_object_get(si, "status"), "state")));
        cell(out, "key", json_string_value(json_object_get(si, "matchersText")));
        cell(out, "time", json_string_value(json_object_get(si, "endsAt")));
        cell(out, "name", json_string_value(json_object_get(si, "createdBy")));
        cell(out, "key", json_string_value(json_object_get(si, "comment")));
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

struct section {
    const char *id;    /* HTML id and JSON key */
    const char *title; /* the heading */
    void (*html)(struct status *st, struct buf *out);
    json_t *(*json)(struct status *st);
};

/* The page, top to bottom. */
static const struct section sections[] = {
    {"alerts", "Active alerts", alerts_html, alerts_json_section},
    {"silences", "Silences", silences_html, silences_json_section},
    {"inhibited", "Inhibited alerts", inhibited_html, inhibited_json},
    {"rates", "Messages, last hour", rates_html, rates_json},
    {"queues", "Executor queues", queues_html, queues_json},
    {"contexts", "Open contexts", contexts_html, contexts_json},
    {"inputs", "Inputs", inputs_html, inputs_json},
};

static const char style[] =
    "body{font:14px/1.4 sans-serif;margin:1em 2em;color:#222}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em;border-bottom:1px solid #ccc}"
    "h3{font-size:1em}table{border-collapse:collapse}"
    "th,td{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "td.key,td.host,td.name{word-break:break-all;max-width:40em}"
    ".charts{display:flex;flex-wrap:wrap;gap:2em}figure{margin:0}"
    "figcaption{font-size:.9em;color:#555}";

void
status_page(struct status *st, struct buf *out)
{
    char host[256];
    size_t i;

    if (gethostname(host, sizeof(host)) < 0) strcpy(host, "?");
    host[sizeof(host) - 1] = '\0';
    buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta http-equiv=\"refresh\" content=\"10\">"
                  "<meta name=\"viewport\" content=\"width=device-width\"><title>corrald on ");
    html_puts(out, host);
    buf_printf(out, "</title><style>%s</style></head><body><h1>corrald on ", style);
    html_puts(out, host);
    buf_puts(out, "</h1><nav>");
    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        buf_printf(out, "%s<a href=\"#%s\">%s</a>", i ? " · " : "", sections[i].id,
                   sections[i].title);
    buf_puts(out,
             " · <a href=\"/metrics\">metrics</a> · <a href=\"/api/v1/status\">JSON</a></nav>");
    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        buf_printf(out, "\n<section id=\"%s\"><h2>%s</h2>", sections[i].id, sections[i].title);
        sections[i].html(st, out);
        buf_puts(out, "</section>");
    }
    buf_puts(out, "\n<footer><p>Refreshes every 10 s.</p></footer></body></html>\n");
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
