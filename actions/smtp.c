/*
 * smtp: the executor that sends alerts as e-mail.
 *
 *   <smtp name="admins" url="smtp://mail.example.com:587" from="corral@example.com"
 *         to="ops@example.com, oncall@example.com" user="corral"
 *         password-file="/etc/corral/smtp.pass" subject="[corral] $HOST: $MESSAGE"
 *         group-by=".classifier.rule_id,HOST" group-wait="30s" group-interval="5m">
 *     <body>optional template, one per alert</body>
 *   </smtp>
 *
 * tls="required" (the default: STARTTLS or no mail, so credentials never go
 * out in the clear), "optional" (refused together with user=), or "none";
 * smtps:// is TLS from the start.  ca-file trusts a private CA, tls-verify="no"
 * trusts anything.  connections (4) sessions at once, each within timeout
 * (30s).
 *
 * Without subject= a mail is titled "[SEVERITY] HOST: summary", after its
 * worst firing alert, with " (+N more)" for the others it carries; a resolution
 * "[RESOLVED] HOST: summary" (smtp_subject: cut at a word boundary).
 * Without <body> the text of an alert says what happened, where, how bad
 * and since when, then MESSAGE; then, with <body> too, its log lines
 * (corral.evidence, engine/evidence.h), the link to its page (corral.url,
 * which corrald sets from <stats external-url>) and, while it fires, a
 * `corral silence add` command quoted for a POSIX shell; the built-in body
 * ends with every name-value pair.
 *
 * Outcomes: the server took the mail (2xx): DELIVER_OK; 5xx from the server:
 * DELIVER_FAIL, with its reply as the reason; anything else (4xx, no
 * connection, timeout, no STARTTLS, a TLS or AUTH failure): DELIVER_RETRY.
 * One rejected recipient fails the whole mail, as with Alertmanager.
 *
 * Grouping follows Alertmanager's words.  Without group-by every alert is
 * one mail, sent at once.  With group-by, alerts whose listed values are
 * equal form a group (group-by="" puts every alert in one group): the first
 * alert of a new group waits group-wait for others to join it, and they go
 * out as one mail listing them all; alerts that arrive after that wait until
 * group-interval has passed since the group's last mail.  A group with
 * nothing new for group-interval is forgotten, so the next alert starts a new
 * one (and waits group-wait again).  A mail that fails does not count as
 * one: its alerts go back to the queue, which retries them with backoff, and
 * they meet again in a fresh group.
 * Times are clock_mono_ms(), which tests advance (engine/clock.h).
 *
 * Log events do not "resolve", so Alertmanager's repeat_interval (re-send
 * what is still firing) becomes: an alert identical to one mailed less than
 * repeat-interval ago (same dedupe-key, the queue's template) is not mailed;
 * it counts as delivered, and the next mail that carries that alert says how
 * many such repeats it stood for.  Identical alerts waiting for the same
 * mail are folded the same way.  Off by default: the queue's dedupe does the
 * plain "drop what was seen lately" already; repeat-interval is measured from
 * an accepted mail, and counts what it held back.  The counts live in memory.
 *
 * Recipients are a fixed list from the configuration, never templates: a
 * log line must not be able to choose who gets mail.
 */
#include <config.h>

#include "actions/executor.h"
#include "engine/clock.h"
#include "engine/evidence.h"
#include "engine/hash.h"
#include "engine/macros.h"
#include "engine/nv.h"
#include "actions/smtp_int.h"
#include "engine/tags.h"
#include "engine/template.h"
#include "engine/units.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

/* Alerts held in groups at most (the queue sees them as in flight). */
#define SMTP_MAX_HELD 1000
/* Alerts in one mail at most; more go in the next mail, at once. */
#define SMTP_GROUP_MAX 100
/* A mail's body stops taking further alerts past this size... */
#define SMTP_BODY_SOFT_MAX (2u * 1024 * 1024)
/* ...and one alert's part of it is cut past this one. */
#define SMTP_ALERT_MAX (256u * 1024)
/* Remembered alerts for repeat-interval. */
#define SMTP_REPEAT_MAX      4096
#define SMTP_MAX_RECIPIENTS  100
#define SMTP_MAX_CONNECTIONS 64
/* The longest duration any setting takes. */
#define DURATION_MAX (365 * 86400.0)

/* An alert on its way: waiting in a group, or in a mail being sent. */
struct held {
    struct held *next;
    struct msg *msg;
    char *id, *severity;
    uint64_t repeat_key; /* 0: repeat-interval is off */
    uint32_t repeats;    /* identical alerts it stands for (not mailed themselves) */
    uint32_t told;       /* of those, how many its mail mentions */
    deliver_done_fn done;
    void *token;
};

struct group {
    struct group *next;
    uint64_t hash;
    struct buf key; /* the group-by values, each prefixed by its length */
    char *label;    /* "HOST=web1, .classifier.rule_id=r1" */
    struct held *pending, **tail;
    size_t npending;
    uint64_t due;       /* ms (loop time) when the pending alerts go */
    uint64_t last_mail; /* ms the last mail started; 0: none that counts */
    unsigned sending;   /* its mails in flight */
};

struct mail {
    struct mail *prev, *next;
    struct smtp *x;
    struct group *g; /* NULL without grouping */
    struct held *alerts;
};

struct repeat {
    uint64_t key;
    uint64_t sent;       /* ms of the last accepted mail with it; 0: none */
    uint32_t suppressed; /* repeats since, not yet reported */
    struct held *held;   /* the alert with this key on its way now */
};

struct smtp {
    uv_loop_t *loop;
    char *name, *url, *user;
    enum smtp_tls tls;
    bool implicit_tls;
    char *from_name, *from_addr, *domain;
    char **to;
    size_t nto;
    struct template *subject, *body; /* body NULL: the built-in listing */
    unsigned connections;
    struct smtp_tx *tx;

    bool grouping;
    nv_handle *group_by;
    size_t ngroup_by;
    uint64_t group_wait, group_interval; /* ms */
    struct group *groups;
    uv_timer_t timer;
    bool timer_init;

    uint64_t repeat_interval; /* ms; 0: off */
    struct template *repeat_tpl;
    struct repeat *repeats;
    size_t nrepeats, caprepeats;

    struct mail *mails;
    int close_refs;
    void (*closed)(void *);
    void *closed_arg;
    bool closing;
    struct buf scratch;
};

static const char *const known_attrs[] = {
    "url",      "tls",        "ca-file",        "tls-verify",      "from",
    "to",       "user",       "password-file",  "password-env",    "subject",
    "group-by", "group-wait", "group-interval", "repeat-interval", "connections",
    "timeout",  NULL,
};

/* ---- small helpers ---- */

static void
format_duration(uint64_t ms, struct buf *out)
{
    if (ms && ms % 86400000 == 0)
        buf_printf(out, "%llud", (unsigned long long)(ms / 86400000));
    else if (ms && ms % 3600000 == 0)
        buf_printf(out, "%lluh", (unsigned long long)(ms / 3600000));
    else if (ms && ms % 60000 == 0)
        buf_printf(out, "%llum", (unsigned long long)(ms / 60000));
    else if (ms % 1000 == 0)
        buf_printf(out, "%llus", (unsigned long long)(ms / 1000));
    else
        buf_printf(out, "%llums", (unsigned long long)ms);
}

/*
 * The <body> text is indented to fit the configuration file: drop its blank
 * first and last lines and the indentation all its lines share.
 */
static char *
dedent(const char *s)
{
    struct buf out = BUF_INIT;
    const char *p = s, *end = s + strlen(s), *q;
    size_t indent = (size_t)-1;

    /* skip blank leading lines, trim trailing white space */
    for (q = p; q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'); q++)
        if (*q == '\n') p = q + 1;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        end--;
    for (q = p; q < end;) {
        const char *nl = memchr(q, '\n', (size_t)(end - q)), *e = nl ? nl : end;
        size_t n = strspn(q, " \t");
        if (q + n < e && n < indent) indent = n; /* blank lines do not count */
        q = nl ? nl + 1 : end;
    }
    if (indent == (size_t)-1) indent = 0;
    for (q = p; q < end;) {
        const char *nl = memchr(q, '\n', (size_t)(end - q)), *e = nl ? nl : end;
        size_t n = strspn(q, " \t");
        q += n < indent ? n : indent;
        if (q < e) buf_append(&out, q, (size_t)(e - q));
        if (nl) buf_putc(&out, '\n');
        q = nl ? nl + 1 : end;
    }
    q = xstrdup(buf_str(&out));
    buf_free(&out);
    return (char *)q;
}

/* ---- configuration ---- */

static void smtp_free(struct smtp *x);
static void label_names(void);

static void
read_url(struct smtp *x, const struct exconf_reader *r)
{
    const char *v = exconf_attr(r->cfg, "url");
    CURLU *u;
    char *scheme = NULL, *host = NULL, *user = NULL, *pass = NULL;

    if (!v) {
        exconf_error(r, "url is missing (smtp://HOST:587 for STARTTLS, smtps://HOST:465)");
        return;
    }
    u = curl_url();
    if (!u || curl_url_set(u, CURLUPART_URL, v, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0]) {
        exconf_error(r, "bad url=\"%s\"", v);
    } else if (strcmp(scheme, "smtp") != 0 && strcmp(scheme, "smtps") != 0) {
        exconf_error(r, "url=\"%s\": the scheme must be smtp or smtps", v);
    } else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
               curl_url_get(u, CURLUPART_PASSWORD, &pass, 0) == CURLUE_OK) {
        /* the configuration file may be world-readable: secrets go in password-file */
        exconf_error(r, "url=\"...\" must not hold credentials: use user= and password-file=");
    } else {
        x->url = xstrdup(v);
        x->implicit_tls = strcmp(scheme, "smtps") == 0;
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(user);
    curl_free(pass);
    curl_url_cleanup(u);
}

static void
read_recipients(struct smtp *x, const struct exconf_reader *r)
{
    const char *v = exconf_attr(r->cfg, "to"), *p, *s;
    size_t cap = 0, n;

    if (!v) {
        exconf_error(r, "to is missing (comma-separated addresses)");
        return;
    }
    for (p = v; exconf_list_next(&p, &s, &n);) {
        if (!smtp_addr_valid(s, n)) {
            exconf_error(r, "to: \"%.*s\" is not an address (user@host, no display names)", (int)n,
                         s);
            continue;
        }
        if (x->nto == SMTP_MAX_RECIPIENTS) {
            exconf_error(r, "to: more than %d recipients", SMTP_MAX_RECIPIENTS);
            return;
        }
        x->to = xgrow(x->to, &cap, x->nto + 1, sizeof(*x->to));
        x->to[x->nto++] = xstrndup(s, n);
    }
    if (!x->nto) exconf_error(r, "to names no recipient");
}

static void
read_grouping(struct smtp *x, const struct exconf_reader *r)
{
    const char *v = exconf_attr(r->cfg, "group-by"), *p, *s;
    size_t cap = 0, n;

    x->group_wait = 30000;
    x->group_interval = 300000;
    if (!v) {
        if (exconf_attr(r->cfg, "group-wait") || exconf_attr(r->cfg, "group-interval"))
            exconf_error(r, "group-wait and group-interval need group-by");
        return;
    }
    x->grouping = true;
    for (p = v; exconf_list_next(&p, &s, &n);) {
        x->group_by = xgrow(x->group_by, &cap, x->ngroup_by + 1, sizeof(*x->group_by));
        x->group_by[x->ngroup_by] = nv_intern(s, n);
        if (!x->group_by[x->ngroup_by]) exconf_error(r, "group-by: too many value names");
        x->ngroup_by++;
    }
    exconf_duration_ms(r, "group-wait", true, DURATION_MAX, &x->group_wait);
    exconf_duration_ms(r, "group-interval", true, DURATION_MAX, &x->group_interval);
}

static void
read_body(struct smtp *x, const struct exconf_reader *r)
{
    size_t i;

    for (i = 0; i < r->cfg->nchildren; i++) {
        const struct exconf_node *n = &r->cfg->children[i];
        char *text;
        if (!exconf_child_is(r, n, "body")) continue;
        exconf_check_node_attrs(r, n, NULL);
        if (x->body) {
            exconf_error_at(r, n->line, "a second <body>");
            continue;
        }
        text = n->text ? dedent(n->text) : NULL;
        if (!text || !text[0])
            exconf_error_at(r, n->line, "empty <body> (leave it out for the default)");
        else
            x->body = exconf_compile(r, n->line, "body", text);
        free(text);
    }
}

/* tls, tls-verify, ca-file: how the server is talked to. */
static void
read_tls(struct smtp *x, const struct exconf_reader *r, struct smtp_tx_conf *c)
{
    /* in the order of enum smtp_tls */
    static const char *const modes[] = {"required", "optional", "none", NULL};
    int tls = SMTP_TLS_REQUIRED;

    exconf_enum(r, "tls", modes, &tls);
    x->tls = (enum smtp_tls)tls;
    if (x->implicit_tls && x->tls != SMTP_TLS_REQUIRED)
        exconf_error(r, "tls=\"%s\" with smtps://, which is always TLS: use smtp:// for that",
                     modes[tls]);
    c->verify = true;
    exconf_bool(r, "tls-verify", &c->verify);
    if ((c->ca_file = exconf_attr(r->cfg, "ca-file")) && access(c->ca_file, R_OK) != 0)
        exconf_error(r, "cannot read ca-file %s", c->ca_file);
}

/* from, user, password: who sends. */
static void
read_sender(struct smtp *x, const struct exconf_reader *r, char **password)
{
    const char *v;
    size_t i;

    if (!(v = exconf_attr(r->cfg, "from")))
        exconf_error(r, "from is missing (an address)");
    else if (!smtp_parse_mailbox(v, &x->from_name, &x->from_addr))
        exconf_error(r, "from=\"%s\" is not an address (user@host or Name <user@host>)", v);
    else
        x->domain = xstrdup(strrchr(x->from_addr, '@') + 1);
    if ((v = exconf_attr(r->cfg, "user"))) {
        for (i = 0; v[i]; i++)
            if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) break;
        if (!v[0] || v[i]) exconf_error(r, "bad user=");
        x->user = xstrdup(v);
    }
    *password = exconf_secret(r, "password");
    if (*password && !x->user) exconf_error(r, "a password without user=");
    if (x->user && !*password && !exconf_secret_given(r, "password"))
        exconf_error(r, "user= without password-file= or password-env=");
    if (x->user && x->tls == SMTP_TLS_OPTIONAL)
        exconf_error(r, "user= with tls=\"optional\" would send the password in the clear to a "
                        "server without STARTTLS: use tls=\"required\" (or \"none\" to mean it)");
}

static void *
smtp_open(uv_loop_t *loop, const struct exconf *cfg, const char *conf_file, struct buf *err)
{
    const struct exconf_reader r = {cfg, conf_file, err};
    struct smtp *x = xcalloc(1, sizeof(*x));
    struct smtp_tx_conf c;
    size_t before = err->len;
    char *password = NULL;
    uint64_t timeout = 30000;
    unsigned long connections = 4;

    memset(&c, 0, sizeof(c));
    x->loop = loop;
    x->name = xstrdup(cfg->name ? cfg->name : "smtp");
    exconf_check_attrs(&r, known_attrs, NULL);
    read_url(x, &r);
    read_tls(x, &r, &c);
    read_sender(x, &r, &password);
    read_recipients(x, &r);
    x->subject = exconf_template(&r, "subject", NULL); /* NULL: the built-in subject */
    label_names();
    read_body(x, &r);
    read_grouping(x, &r);
    if (exconf_duration_ms(&r, "repeat-interval", true, DURATION_MAX, &x->repeat_interval) &&
        x->repeat_interval)
        x->repeat_tpl = exconf_template(&r, "dedupe-key", EXECUTOR_DEDUPE_KEY_DEFAULT);
    exconf_uint(&r, "connections", 1, SMTP_MAX_CONNECTIONS, &connections);
    x->connections = (unsigned)connections;
    if (exconf_duration_ms(&r, "timeout", true, DURATION_MAX, &timeout) && timeout < 1000)
        exconf_error(&r, "timeout= below 1s");

    if (err->len == before) {
        c.url = x->url;
        c.tls = x->implicit_tls ? SMTP_TLS_REQUIRED : x->tls;
        c.user = x->user;
        c.password = password;
        c.mail_from = x->from_addr;
        c.rcpts = x->to;
        c.nrcpts = x->nto;
        c.timeout_ms = (long)timeout;
        c.connections = x->connections;
        x->tx = smtp_tx_new(loop, &c);
    }
    exconf_secret_free(password);
    if (err->len != before) {
        smtp_free(x);
        return NULL;
    }
    return x;
}

/* ---- composing a mail ---- */

/* The alert labels a mail shows (engine/alertlabels.h), interned once. */
static nv_handle h_summary, h_alert_id, h_since, h_url, h_resolved_by;

static void
label_names(void)
{
    if (h_summary) return;
    h_summary = nv_intern_str("corral.summary");
    h_alert_id = nv_intern_str("corral.alert_id");
    h_since = nv_intern_str("corral.since");
    h_url = nv_intern_str("corral.url");
    h_resolved_by = nv_intern_str("corral.resolved_by");
}

/* m's value of h; its length in *len, 0 when unset. */
static const char *
value_of(const struct msg *m, nv_handle h, size_t *len)
{
    const char *v = h ? msg_get(m, h, len) : NULL;

    if (!v) *len = 0;
    return v ? v : "";
}

/* How long a silence made from a mail lasts. */
#define SILENCE_DURATION "2h"

/* True when v passes through "..." in a POSIX shell unchanged and needs no quotes as a matcher
 * value. */
static bool
shell_plain(const char *v, size_t len, bool matcher)
{
    size_t i;

    if (!len) return false;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("._:/@+-", c))
            continue;
        /* free text (a comment) may hold spaces and punctuation the shell leaves alone in "..." */
        if (!matcher && c >= 0x20 && c < 0x7f && !strchr("\"$`\\!", c)) continue;
        return false;
    }
    return true;
}

/* Appends s single-quoted for a POSIX shell: ' ends, \' adds a quote, ' starts again. */
static void
shell_quote(struct buf *out, const char *s, size_t len)
{
    size_t i;

    buf_putc(out, '\'');
    for (i = 0; i < len; i++)
        if (s[i] == '\'')
            buf_puts(out, "'\\''");
        else
            buf_putc(out, s[i]);
    buf_putc(out, '\'');
}

/*
 * Appends NAME="value" as one shell word that reaches `corral silence add`
 * as a matcher for exactly value: as is when plain, else single-quoted
 * around the matcher's own "..." with \" and \\ escaped (labelmatch.h).
 */
static void
silence_matcher(struct buf *out, const char *name, const char *v, size_t len)
{
    struct buf m = BUF_INIT;
    size_t i;

    buf_putc(out, ' ');
    if (shell_plain(v, len, true)) {
        buf_printf(out, "%s=\"%.*s\"", name, (int)len, v);
        return;
    }
    buf_printf(&m, "%s=\"", name);
    for (i = 0; i < len; i++) {
        if (v[i] == '"' || v[i] == '\\') buf_putc(&m, '\\');
        if (v[i] == '\n')
            buf_puts(&m, "\\n");
        else
            buf_putc(&m, v[i]);
    }
    buf_putc(&m, '"');
    shell_quote(out, m.p, m.len);
    buf_free(&m);
}

/*
 * The command that silences a firing alert for SILENCE_DURATION, ready to
 * paste into a shell: matchers on HOST and corral.alert_id, the summary as
 * the comment.  Nothing for an alert without corral.alert_id.
 */
static void
add_silence(struct buf *out, const struct msg *m)
{
    size_t hlen, ilen, slen;
    const char *host = value_of(m, NV_HOST, &hlen), *id = value_of(m, h_alert_id, &ilen),
               *sum = value_of(m, h_summary, &slen);

    /* HOST alone would silence every alert of the host */
    if (!ilen) return;
    if (!slen) { /* no summary: MESSAGE's first line says what is silenced */
        const char *nl;
        sum = value_of(m, NV_MESSAGE, &slen);
        if ((nl = memchr(sum, '\n', slen))) slen = (size_t)(nl - sum);
    }
    buf_printf(out, "Silence it for %s:\n  corral silence add", SILENCE_DURATION);
    if (hlen) silence_matcher(out, "HOST", host, hlen);
    if (ilen) silence_matcher(out, "corral.alert_id", id, ilen);
    buf_puts(out, " --duration " SILENCE_DURATION);
    if (slen && !memchr(sum, '\r', slen)) {
        buf_puts(out, " --comment ");
        if (shell_plain(sum, slen, false))
            buf_printf(out, "\"%.*s\"", (int)slen, sum);
        else
            shell_quote(out, sum, slen);
    }
    buf_puts(out, "\n\n");
}

static void add_evidence(struct buf *out, const struct msg *m);

/*
 * What follows the text of each alert, built-in body or <body>: its log
 * lines, the link to its page on corrald's status page (corral.url, set
 * when <stats external-url> is), and, while it fires, the command that
 * silences it.
 */
static void
add_footer(struct buf *out, const struct held *h, bool resolved)
{
    size_t len;
    const char *url = value_of(h->msg, h_url, &len);

    add_evidence(out, h->msg);
    if (len) {
        buf_puts(out, "Alert page:\n  ");
        buf_append(out, url, len);
        buf_puts(out, "\n\n");
    }
    if (!resolved) add_silence(out, h->msg);
}

static void
add_line(struct buf *out, const char *label, const char *value)
{
    if (value && value[0]) buf_printf(out, "%-10s%s\n", label, value);
}

/*
 * A value on one "  NAME: value" line, its further lines indented below it.
 * Indented, because names like ".classifier.rule_id" would otherwise start
 * lines with a dot, which makes the body quoted-printable.
 */
static void
add_value(struct buf *out, const char *name, size_t nlen, const char *val, size_t vlen)
{
    size_t i;

    buf_puts(out, "  ");
    buf_append(out, name, nlen);
    buf_puts(out, ": ");
    for (i = 0; i < vlen; i++) {
        if (val[i] == '\n' || (val[i] == '\r' && !(i + 1 < vlen && val[i + 1] == '\n'))) {
            buf_puts(out, "\n      ");
            continue;
        }
        if (val[i] != '\r') buf_putc(out, val[i]);
    }
    buf_putc(out, '\n');
}

/*
 * The log lines that made the alert (corral.evidence, engine/evidence.h),
 * each indented, under "Log lines:".
 */
static void
add_evidence(struct buf *out, const struct msg *m)
{
    nv_handle h = nv_lookup(EVIDENCE_NAME, strlen(EVIDENCE_NAME));
    const char *ev;
    size_t len, i;

    if (!h || !(ev = msg_get(m, h, &len)) || !len) return;
    buf_puts(out, "Log lines:\n  ");
    for (i = 0; i < len; i++) {
        buf_putc(out, ev[i]);
        if (ev[i] == '\n') buf_puts(out, "  ");
    }
    buf_puts(out, "\n\n");
}

/* The time of ISO 8601 value v, or of m's stamp when v is empty, into out. */
static void
add_time(struct buf *out, const char *label, const char *v, size_t len, const struct msg *m,
         struct buf *tmp)
{
    buf_reset(tmp);
    if (len)
        buf_append(tmp, v, len);
    else if (msg_stamp(m)->sec)
        macro_format_iso(msg_stamp(m), 0, tmp);
    add_line(out, label, buf_str(tmp));
}

/*
 * The built-in body: what happened (the summary), where, how bad and since
 * when; the whole MESSAGE when it says more than the summary; the log
 * lines, the alert's page and the silence command (add_footer); then every
 * other value.
 */
static void
default_body(const struct held *h, bool resolved, struct buf *out)
{
    const struct msg *m = h->msg;
    const char *val, *sum, *msgtext, *v;
    size_t len, slen, mlen, vlen, i, n = msg_nvalues(m);
    struct buf line = BUF_INIT;

    sum = value_of(m, h_summary, &slen);
    msgtext = value_of(m, NV_MESSAGE, &mlen);
    if (!slen) { /* no summary: MESSAGE's first line stands for it */
        sum = msgtext;
        slen = memchr(msgtext, '\n', mlen) ? (size_t)((char *)memchr(msgtext, '\n', mlen) - msgtext)
                                           : mlen;
    }
    if (resolved) buf_puts(out, "RESOLVED: ");
    buf_append(out, sum, slen);
    buf_puts(out, "\n\n");
    v = value_of(m, NV_HOST, &vlen);
    buf_reset(&line);
    buf_append(&line, v, vlen);
    add_line(out, "Host:", buf_str(&line));
    add_line(out, "Severity:", h->severity);
    v = value_of(m, h_since, &vlen);
    if (resolved) {
        if (vlen) add_time(out, "Since:", v, vlen, m, &line);
        add_time(out, "Resolved:", NULL, 0, m, &line);
        v = value_of(m, h_resolved_by, &vlen);
        buf_reset(&line);
        buf_append(&line, v, vlen);
        add_line(out, "By:", buf_str(&line));
    } else {
        add_time(out, "Since:", v, vlen, m, &line);
    }
    add_line(out, "Alert:", h->id);
    if (msg_ntags(m)) {
        buf_reset(&line);
        for (i = 0; i < msg_ntags(m); i++) {
            size_t tl;
            const char *t = tag_name(msg_tag_at(m, i), &tl);
            if (!t) continue;
            if (line.len) buf_puts(&line, ", ");
            buf_append(&line, t, tl);
        }
        add_line(out, "Tags:", buf_str(&line));
    }
    buf_putc(out, '\n');
    if (mlen && !(mlen == slen && memcmp(msgtext, sum, mlen) == 0)) {
        buf_append(out, msgtext, mlen);
        buf_puts(out, "\n\n");
    }
    add_footer(out, h, resolved);
    buf_puts(out, "Values:\n");
    for (i = 0; i < n; i++) {
        size_t nlen;
        nv_handle hd = msg_value_at(m, i, &val, &len);
        const char *name = nv_name(hd, &nlen);
        if (hd == NV_MESSAGE || !name || strcmp(name, EVIDENCE_NAME) == 0) continue;
        add_value(out, name, nlen, val, len);
    }
    buf_free(&line);
}

/* One alert's part of the body, clean and cut to SMTP_ALERT_MAX. */
static void
alert_text(struct smtp *x, const struct held *h, struct buf *out)
{
    struct buf raw = BUF_INIT;
    size_t start = out->len, cut;

    const struct alert a = {0, h->id, h->severity, h->msg, 0};
    bool resolved = executor_alert_resolved(&a);

    if (x->body) {
        struct template_env env;
        template_env_single(&env, &h->msg);
        template_eval(x->body, &env, &raw);
        while (raw.len && raw.p[raw.len - 1] == '\n') buf_truncate(&raw, raw.len - 1);
        if (raw.len) buf_puts(&raw, "\n\n");
        add_footer(&raw, h, resolved);
    } else {
        default_body(h, resolved, &raw);
    }
    smtp_body_clean(raw.p ? raw.p : "", raw.len, out);
    if (out->len - start > SMTP_ALERT_MAX) {
        size_t more;
        cut = start + SMTP_ALERT_MAX;
        while (cut > start && ((unsigned char)out->p[cut] & 0xc0) == 0x80) cut--;
        more = out->len - cut;
        buf_truncate(out, cut);
        buf_printf(out, "\n[... %zu more bytes not shown]", more);
    }
    while (out->len > start && out->p[out->len - 1] == '\n') buf_truncate(out, out->len - 1);
    buf_putc(out, '\n');
    if (h->repeats)
        buf_printf(out, "\n(This alert came %u more time%s; repeat-interval kept %s from mail.)\n",
                   h->repeats, h->repeats == 1 ? "" : "s", h->repeats == 1 ? "it" : "them");
    buf_free(&raw);
}

/* Appends the subject of a mail about h and more other alerts (clean, one line). */
static void
subject_line(struct smtp *x, const struct held *h, size_t more, struct buf *out)
{
    const struct alert a = {0, h->id, h->severity, h->msg, 0};
    struct smtp_subject sj;
    struct buf tmp = BUF_INIT;

    memset(&sj, 0, sizeof(sj));
    sj.resolved = executor_alert_resolved(&a);
    sj.more = more;
    if (x->subject) {
        struct template_env env;
        template_env_single(&env, &h->msg);
        template_eval(x->subject, &env, &tmp);
        sj.text = tmp.p ? tmp.p : "";
        sj.text_len = tmp.len;
    } else {
        sj.severity = h->severity ? h->severity : "";
        sj.host = value_of(h->msg, NV_HOST, &sj.host_len);
        sj.text = value_of(h->msg, h_summary, &sj.text_len);
        if (!sj.text_len) sj.text = value_of(h->msg, NV_MESSAGE, &sj.text_len);
    }
    smtp_subject(&sj, out);
    buf_free(&tmp);
}

/* Which alert titles a mail: the worst that fires, a resolution only when all are. */
static int
title_rank(const struct held *h)
{
    const struct alert a = {0, h->id, h->severity, h->msg, 0};

    return executor_alert_resolved(&a) ? 0 : executor_severity_number(h->severity);
}

/*
 * Composes one mail from the first alerts of the list (as many as fit) into
 * wire form; returns how many it took.
 */
static size_t
compose(struct smtp *x, const struct group *g, const struct held *alerts, struct buf *out)
{
    struct buf *parts, text = BUF_INIT, hdr = BUF_INIT, body = BUF_INIT;
    const struct held *h, *worst = alerts;
    size_t n = 0, total = 0, used = 0, i;
    const char *cte;

    for (h = alerts; h && total < SMTP_GROUP_MAX; h = h->next) total++;
    parts = xcalloc(total, sizeof(*parts));
    for (h = alerts; h && n < total && (!n || used < SMTP_BODY_SOFT_MAX); h = h->next) {
        alert_text(x, h, &parts[n]);
        used += parts[n++].len;
        if (title_rank(h) > title_rank(worst)) worst = h;
    }
    if (n > 1) {
        buf_printf(&text, "%zu alerts", n);
        if (g && g->label && g->label[0]) buf_printf(&text, ", grouped by %s", g->label);
        buf_puts(&text, ".\n\n");
        /* what they are, at a glance, before each in full */
        for (i = 0, h = alerts; i < n; i++, h = h->next) {
            buf_puts(&text, "  ");
            subject_line(x, h, 0, &text);
            buf_putc(&text, '\n');
        }
        for (i = 0; i < n; i++) {
            buf_printf(&text, "\n--- alert %zu of %zu ---\n", i + 1, n);
            buf_append(&text, parts[i].p ? parts[i].p : "", parts[i].len);
        }
    } else {
        buf_append(&text, parts[0].p ? parts[0].p : "", parts[0].len);
    }
    for (i = 0; i < n; i++) buf_free(&parts[i]);
    free(parts);

    /* subject: the worst alert's, and how many more the mail carries */
    subject_line(x, worst, n - 1, &hdr);
    buf_reset(&body);

    buf_puts(out, "Date: ");
    smtp_format_date(time(NULL), out);
    buf_puts(out, "\r\n");
    smtp_header_mailbox(out, "From", x->from_name, x->from_addr);
    smtp_header_addrs(out, "To", x->to, x->nto);
    smtp_header_text(out, "Subject", hdr.p ? hdr.p : "", hdr.len);
    buf_puts(out, "Message-ID: ");
    smtp_message_id(x->domain, out);
    buf_puts(out, "\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=UTF-8\r\n");
    cte = smtp_body_encode(text.p ? text.p : "", text.len, &body);
    buf_printf(out, "Content-Transfer-Encoding: %s\r\n", cte);
    /* RFC 3834: no vacation replies to alert mail */
    buf_puts(out, "Auto-Submitted: auto-generated\r\nX-Mailer: corrald " PACKAGE_VERSION "\r\n");
    buf_reset(&hdr);
    smtp_header_clean(x->name, strlen(x->name), 100, &hdr);
    smtp_header_text(out, "X-Corral-Executor", hdr.p, hdr.len);
    if (n == 1 && alerts->id && alerts->id[0]) {
        buf_reset(&hdr);
        smtp_header_clean(alerts->id, strlen(alerts->id), 200, &hdr);
        smtp_header_text(out, "X-Corral-Alert-Id", hdr.p ? hdr.p : "", hdr.len);
    }
    if (worst->severity && worst->severity[0]) {
        buf_reset(&hdr);
        smtp_header_clean(worst->severity, strlen(worst->severity), 32, &hdr);
        smtp_header_text(out, "X-Corral-Severity", hdr.p ? hdr.p : "", hdr.len);
    }
    if (n > 1) buf_printf(out, "X-Corral-Alerts: %zu\r\n", n);
    buf_puts(out, "\r\n");
    buf_append(out, body.p ? body.p : "", body.len);

    buf_free(&text);
    buf_free(&hdr);
    buf_free(&body);
    return n;
}

/* ---- alerts, mails and groups ---- */

static void
held_free(struct held *h)
{
    msg_unref(h->msg);
    free(h->id);
    free(h->severity);
    free(h);
}

static struct repeat *
repeat_find(struct smtp *x, uint64_t key)
{
    size_t i;

    for (i = 0; i < x->nrepeats; i++)
        if (x->repeats[i].key == key) return &x->repeats[i];
    return NULL;
}

/* Makes room for one more remembered key: drop those past their window, then the oldest. */
static void
repeat_prune(struct smtp *x, uint64_t now)
{
    size_t i, o = 0, oldest = (size_t)-1;

    for (i = 0; i < x->nrepeats; i++) {
        struct repeat *r = &x->repeats[i];
        if (!r->held && (!r->sent || now - r->sent >= x->repeat_interval)) continue;
        x->repeats[o++] = *r;
    }
    x->nrepeats = o;
    if (o < SMTP_REPEAT_MAX) return;
    for (i = 0; i < o; i++)
        if (!x->repeats[i].held &&
            (oldest == (size_t)-1 || x->repeats[i].sent < x->repeats[oldest].sent))
            oldest = i;
    if (oldest != (size_t)-1) x->repeats[oldest] = x->repeats[--x->nrepeats];
}

/* True when the alert is a repeat to hold back (done() has been called then). */
static bool
repeat_suppress(struct smtp *x, struct held *h)
{
    uint64_t now = clock_mono_ms(), key;
    struct repeat *r;
    struct template_env env;

    buf_reset(&x->scratch);
    template_env_single(&env, &h->msg);
    template_eval(x->repeat_tpl, &env, &x->scratch);
    key = hash_string(x->scratch.p ? x->scratch.p : "", x->scratch.len);
    if (!key) key = 1; /* 0 means repeat-interval is off */
    if (!(r = repeat_find(x, key))) {
        if (x->nrepeats >= SMTP_REPEAT_MAX) repeat_prune(x, now);
        x->repeats = xgrow(x->repeats, &x->caprepeats, x->nrepeats + 1, sizeof(*x->repeats));
        r = &x->repeats[x->nrepeats++];
        memset(r, 0, sizeof(*r));
        r->key = key;
    }
    if (r->held) {
        r->held->repeats++;
    } else if (r->sent && now - r->sent < x->repeat_interval) {
        r->suppressed++;
    } else {
        r->held = h;
        h->repeat_key = key;
        h->repeats = r->suppressed;
        r->suppressed = 0;
        return false;
    }
    h->done(h->token, DELIVER_OK, NULL);
    held_free(h);
    return true;
}

static void
repeat_done(struct smtp *x, struct held *h, enum deliver_result r, uint64_t now)
{
    struct repeat *rp;

    if (!h->repeat_key || !(rp = repeat_find(x, h->repeat_key)) || rp->held != h) return;
    rp->held = NULL;
    /* repeats its mail did not mention are told by the next one */
    if (r == DELIVER_OK) {
        rp->sent = now ? now : 1;
        rp->suppressed += h->repeats - h->told;
    } else {
        rp->suppressed += h->repeats;
    }
}

static void schedule(struct smtp *x);

static void
mail_done(void *arg, enum deliver_result r, const char *reason)
{
    struct mail *m = arg;
    struct smtp *x = m->x;
    struct group *g = m->g;
    struct held *alerts = m->alerts, *h, *next;
    uint64_t now = clock_mono_ms();

    if (m->prev)
        m->prev->next = m->next;
    else
        x->mails = m->next;
    if (m->next) m->next->prev = m->prev;
    free(m);
    if (g) {
        g->sending--;
        /* a mail that did not go out does not hold back the next one */
        if (r != DELIVER_OK && !g->sending) g->last_mail = 0;
    }
    for (h = alerts; h; h = h->next) repeat_done(x, h, r, now);
    /* done() may deliver more alerts right away: the bookkeeping above is finished */
    for (h = alerts; h; h = next) {
        next = h->next;
        h->done(h->token, r, reason);
        held_free(h);
    }
    if (g && !x->closing) schedule(x);
}

/* Sends the first alerts of the list as one mail; returns the rest. */
static struct held *
send_mail(struct smtp *x, struct group *g, struct held *alerts)
{
    struct mail *m = xcalloc(1, sizeof(*m));
    struct buf data = BUF_INIT;
    struct held *rest, **pp = &alerts;
    size_t n = compose(x, g, alerts, &data), i;

    for (i = 0; i < n; i++) {
        (*pp)->told = (*pp)->repeats;
        pp = &(*pp)->next;
    }
    rest = *pp;
    *pp = NULL;
    m->x = x;
    m->g = g;
    m->alerts = alerts;
    m->next = x->mails;
    if (x->mails) x->mails->prev = m;
    x->mails = m;
    if (g) g->sending++;
    smtp_tx_send(x->tx, &data, mail_done, m);
    buf_free(&data);
    return rest;
}

/* The group's pending alerts go out now: as many mails as it takes. */
static void
flush(struct smtp *x, struct group *g, uint64_t now)
{
    struct held *list = g->pending;

    g->pending = NULL;
    g->tail = &g->pending;
    g->npending = 0;
    g->last_mail = now;
    while (list) list = send_mail(x, g, list);
}

static void
group_free(struct group *g)
{
    struct held *h, *next;

    for (h = g->pending; h; h = next) {
        next = h->next;
        held_free(h);
    }
    buf_free(&g->key);
    free(g->label);
    free(g);
}

static void
on_timer(uv_timer_t *t)
{
    struct smtp *x = t->data;
    uint64_t now = clock_mono_ms();
    struct group *g, **pp;
    bool again = true;

    /*
     * A mail that fails at once calls done() from inside flush(), which may
     * deliver alerts into any group: look again from the start after each.
     */
    while (again && !x->closing) {
        again = false;
        for (g = x->groups; g; g = g->next)
            if (g->npending && g->due <= now) {
                flush(x, g, now);
                again = true;
                break;
            }
    }
    if (x->closing) return;
    /* forget groups with nothing to send that are past their group-interval */
    for (pp = &x->groups; (g = *pp);) {
        if (!g->npending && !g->sending &&
            (!g->last_mail || now - g->last_mail >= x->group_interval)) {
            *pp = g->next;
            group_free(g);
        } else {
            pp = &g->next;
        }
    }
    schedule(x);
}

/* Sets the timer for the earliest thing groups wait for. */
static void
schedule(struct smtp *x)
{
    uint64_t now = clock_mono_ms(), next = UINT64_MAX;
    struct group *g;

    for (g = x->groups; g; g = g->next) {
        uint64_t when;
        if (g->npending)
            when = g->due;
        else if (g->sending)
            continue;
        else
            when = g->last_mail ? g->last_mail + x->group_interval : now;
        if (when < next) next = when;
    }
    if (!x->timer_init) {
        if (next == UINT64_MAX) return;
        uv_timer_init(x->loop, &x->timer);
        x->timer.data = x;
        x->timer_init = true;
    }
    if (next == UINT64_MAX)
        uv_timer_stop(&x->timer);
    else
        uv_timer_start(&x->timer, on_timer, next > now ? next - now : 0, 0);
}

static void
group_key(struct smtp *x, const struct msg *m, struct buf *key)
{
    size_t i;

    for (i = 0; i < x->ngroup_by; i++) {
        size_t len = 0;
        const char *v = msg_get(m, x->group_by[i], &len);
        uint32_t l = v ? (uint32_t)len : 0;
        buf_append(key, &l, sizeof(l)); /* lengths first: "a,b"+"c" differs from "a"+"b,c" */
        if (v) buf_append(key, v, len);
    }
}

static char *
group_label(struct smtp *x, const struct msg *m)
{
    struct buf raw = BUF_INIT, out = BUF_INIT;
    size_t i;
    char *s;

    for (i = 0; i < x->ngroup_by; i++) {
        size_t nlen, len = 0;
        const char *name = nv_name(x->group_by[i], &nlen), *v = msg_get(m, x->group_by[i], &len);
        if (i) buf_puts(&raw, ", ");
        buf_append(&raw, name, nlen);
        buf_putc(&raw, '=');
        if (v) buf_append(&raw, v, len);
    }
    smtp_header_clean(raw.p ? raw.p : "", raw.len, 400,
                      &out); /* one line, however odd the values */
    s = xstrdup(buf_str(&out));
    buf_free(&raw);
    buf_free(&out);
    return s;
}

static void
group_add(struct smtp *x, struct held *h)
{
    uint64_t now = clock_mono_ms(), hash;
    struct group *g;

    buf_reset(&x->scratch);
    group_key(x, h->msg, &x->scratch);
    hash = hash_string(x->scratch.p ? x->scratch.p : "", x->scratch.len);
    for (g = x->groups; g; g = g->next)
        if (g->hash == hash && g->key.len == x->scratch.len &&
            memcmp(g->key.p ? g->key.p : "", x->scratch.p ? x->scratch.p : "", g->key.len) == 0)
            break;
    /* quiet for group-interval: forgotten, even when the timer that forgets it has not run yet */
    if (g && !g->npending && !g->sending && g->last_mail && now - g->last_mail >= x->group_interval)
        g->last_mail = 0;
    if (!g) {
        g = xcalloc(1, sizeof(*g));
        g->hash = hash;
        buf_append(&g->key, x->scratch.p ? x->scratch.p : "", x->scratch.len);
        g->label = group_label(x, h->msg);
        g->tail = &g->pending;
        g->next = x->groups;
        x->groups = g;
    }
    *g->tail = h;
    g->tail = &h->next;
    h->next = NULL;
    if (++g->npending == 1)
        g->due =
            g->last_mail
                ? (g->last_mail + x->group_interval > now ? g->last_mail + x->group_interval : now)
                : now + x->group_wait;
    if (g->npending >= SMTP_GROUP_MAX) g->due = now; /* a full mail need not wait */
    schedule(x);
}

/* ---- the executor ---- */

static void
smtp_deliver(void *impl, const struct alert *a, deliver_done_fn done, void *token)
{
    struct smtp *x = impl;
    struct held *h;

    if (x->closing) {
        done(token, DELIVER_RETRY, "executor closing");
        return;
    }
    h = xcalloc(1, sizeof(*h));
    h->msg = msg_ref(a->msg);
    h->id = xstrdup(a->id ? a->id : "");
    h->severity = xstrdup(a->severity ? a->severity : "");
    h->done = done;
    h->token = token;
    if (x->repeat_interval && repeat_suppress(x, h)) return;
    if (x->grouping)
        group_add(x, h);
    else
        send_mail(x, NULL, h);
}

static void
smtp_render(void *impl, const struct alert *a, struct buf *out)
{
    struct smtp *x = impl;
    struct held h;
    struct group g;
    struct buf data = BUF_INIT;
    size_t i;

    memset(&h, 0, sizeof(h));
    h.msg = a->msg;
    h.id = (char *)(a->id ? a->id : "");
    h.severity = (char *)(a->severity ? a->severity : "");
    memset(&g, 0, sizeof(g));

    buf_printf(out, "# smtp executor %s: %s, %s", x->name, x->url,
               x->implicit_tls               ? "TLS from the start"
               : x->tls == SMTP_TLS_NONE     ? "no TLS"
               : x->tls == SMTP_TLS_OPTIONAL ? "STARTTLS if offered"
                                             : "STARTTLS required");
    if (x->user)
        buf_printf(out, ", AUTH as %s\n", x->user);
    else
        buf_puts(out, ", no AUTH\n");
    if (x->grouping) {
        g.label = group_label(x, a->msg);
        buf_printf(out, "# group: %s; a new group waits ", g.label[0] ? g.label : "(all alerts)");
        format_duration(x->group_wait, out);
        buf_puts(out, " for more alerts, then mails at most every ");
        format_duration(x->group_interval, out);
        buf_puts(out, "\n");
    }
    if (x->repeat_interval) {
        buf_puts(out, "# repeat-interval: an identical alert is mailed at most once per ");
        format_duration(x->repeat_interval, out);
        buf_puts(out, "\n");
    }
    compose(x, x->grouping ? &g : NULL, &h, &data);
    buf_printf(out, "MAIL FROM:<%s>\n", x->from_addr);
    for (i = 0; i < x->nto; i++) buf_printf(out, "RCPT TO:<%s>\n", x->to[i]);
    buf_puts(out, "DATA\n");
    /* as sent, with the terminal's line ends */
    for (i = 0; i < data.len; i++)
        if (!(data.p[i] == '\r' && i + 1 < data.len && data.p[i + 1] == '\n'))
            buf_putc(out, data.p[i]);
    buf_puts(out, ".\n");
    free(g.label);
    buf_free(&data);
}

static unsigned
smtp_max_inflight(void *impl)
{
    struct smtp *x = impl;

    /* alerts waiting in a group are in flight for the queue: room for them */
    return x->grouping ? SMTP_MAX_HELD : x->connections;
}

static void
smtp_free(struct smtp *x)
{
    size_t i;

    free(x->name);
    free(x->url);
    free(x->user);
    free(x->from_name);
    free(x->from_addr);
    free(x->domain);
    for (i = 0; i < x->nto; i++) free(x->to[i]);
    free(x->to);
    template_free(x->subject);
    template_free(x->body);
    template_free(x->repeat_tpl);
    free(x->group_by);
    free(x->repeats);
    buf_free(&x->scratch);
    free(x);
}

static void
close_step(void *arg)
{
    struct smtp *x = arg;
    struct mail *m;

    if (--x->close_refs > 0) return;
    /* mails the transport dropped before they started: abandoned */
    while ((m = x->mails)) {
        struct held *h, *next;
        x->mails = m->next;
        for (h = m->alerts; h; h = next) {
            next = h->next;
            held_free(h);
        }
        free(m);
    }
    if (x->closed) x->closed(x->closed_arg);
    smtp_free(x);
}

static void
timer_closed(uv_handle_t *h)
{
    close_step(h->data);
}

/*
 * Alerts waiting in groups, and mails not yet under way, are abandoned:
 * their done() is not called, so the queue keeps them in its spool and
 * delivers them after the restart.  Mails under way finish (curl cannot
 * abandon one cleanly, see smtp_send.c) and report as usual.
 */
static void
smtp_close(void *impl, void (*done)(void *arg), void *arg)
{
    struct smtp *x = impl;
    struct group *g;
    struct mail *m;

    x->closing = true;
    x->closed = done;
    x->closed_arg = arg;
    x->close_refs = 1;
    for (m = x->mails; m; m = m->next) m->g = NULL;
    while ((g = x->groups)) {
        x->groups = g->next;
        group_free(g);
    }
    if (x->timer_init) {
        x->close_refs++;
        uv_timer_stop(&x->timer);
        uv_close((uv_handle_t *)&x->timer, timer_closed);
    }
    if (x->tx) {
        x->close_refs++;
        smtp_tx_close(x->tx, close_step, x);
        x->tx = NULL;
    }
    close_step(x);
}

/* The held alert of delivery token, waiting in its group; *gp its group.  NULL: not held. */
static struct held **
held_find(struct smtp *x, void *token, struct group **gp)
{
    struct group *g;
    struct held **hp;

    for (g = x->groups; g; g = g->next)
        for (hp = &g->pending; *hp; hp = &(*hp)->next)
            if ((*hp)->token == token) {
                *gp = g;
                return hp;
            }
    return NULL;
}

static uint64_t
smtp_held_until(void *impl, void *token)
{
    struct smtp *x = impl;
    struct group *g;
    uint64_t now = clock_mono_ms();

    if (!held_find(x, token, &g)) return 0;
    /* group times are loop time; the queue speaks wall-clock time */
    return clock_wall_ms() + (g->due > now ? g->due - now : 0);
}

static int
smtp_cancel(void *impl, void *token)
{
    struct smtp *x = impl;
    struct group *g;
    struct held **hp = held_find(x, token, &g), *h;

    if (!hp) return -1;
    h = *hp;
    *hp = h->next;
    if (g->tail == &h->next) g->tail = hp;
    g->npending--;
    repeat_done(x, h, DELIVER_FAIL, clock_mono_ms());
    held_free(h);
    schedule(x);
    return 0;
}

const struct executor_kind smtp_executor = {
    "smtp",     smtp_open,         smtp_deliver,    smtp_render,
    smtp_close, smtp_max_inflight, smtp_held_until, smtp_cancel,
};
