/*
 * http: the listener of <stats listen>, on libmicrohttpd (MHD) driven by
 * the libuv loop: MHD runs with MHD_USE_EPOLL and no thread of its own;
 * its epoll descriptor is watched by a uv_poll_t, MHD_run() handles what is
 * ready, and a uv_timer_t wakes it for MHD_get_timeout() (idle connections).
 * The listening socket is made here, not by MHD (bound as an input's
 * address is, before the privilege drop), and handed to MHD.
 *
 * Routes are a table (`routes` below): method, path (or a path prefix) and
 * a handler writing a struct http_reply.  GET /metrics (Prometheus text),
 * GET / (the status page, status.c; ?filter= and ?state= select its
 * alerts), GET /alert?id=ID (an alert's page), GET /api/v1/status (the
 * page's data as JSON),
 * and the alerts and silences API (GET/POST/DELETE /api/v1/alerts and
 * /api/v1/silences), which runs the control socket's requests.
 * Alertmanager's API v2 (/api/v2/..., /-/healthy, /-/ready) is apiv2.c's.
 * Under privilege separation GET /api/v1/queues asks the executor process
 * (ipcproxy_control, as `corral queue list`), the connection suspended
 * (MHD_ALLOW_SUSPEND_RESUME) until the answer comes.
 *
 * Write methods (POST, PUT, PATCH, DELETE) pass three checks before any
 * route sees them, so that every write endpoint gets them: the bearer
 * token (none configured: 403; missing or wrong: 401), the body's size
 * (HTTP_MAX_BODY: 413) and, when there is a body, JSON (400 with jansson's
 * reason).  A request of any method whose ?filter= holds a regular
 * expression (=~, !~) needs the token too when one is configured (401).  Refusals are counted
 * (corral_endpoint_unauthorized_total, corral_endpoint_bad_requests_total) and logged, at most
 * every 10 s.
 *
 * Idle clients must not hold descriptors corrald needs: at most
 * HTTP_MAX_CONNS connections are open at once, a new one closes the oldest
 * (a scraper is answered at once, only an idle client lingers: MHD cannot
 * close a connection on request, so the oldest one's socket is shut down
 * and MHD reaps it), and a connection idle for TIMEOUT_S is closed by MHD
 * (MHD_OPTION_CONNECTION_TIMEOUT; counted when no request came on it:
 * idling between keep-alive requests is normal).  MHD_OPTION_CONNECTION_LIMIT and our
 * accept policy bound the descriptors, those shut down included, to
 * HTTP_MAX_FDS.  A request head or body is bounded by
 * MHD_OPTION_CONNECTION_MEMORY_LIMIT (MEMORY_LIMIT; a longer head gets
 * 431) and HTTP_MAX_BODY.  Evictions, timeouts and refused connections
 * are counted (server_endpoint_stats) and logged, at most every 10 s (and
 * apart from the refused requests).
 */
#include "agent/web/http.h"
#include "actions/ipcproxy.h"
#include "agent/web/apiv2.h"
#include "agent/web/control.h"
#include "agent/web/queuectl.h"
#include "agent/input/input.h"
#include "agent/core/server.h"
#include "agent/web/status.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define TIMEOUT_S    5
#define MEMORY_LIMIT ((size_t)16 * 1024)
#define LOG_EVERY_MS 10000

/* Sent with every answer: the page needs no script, no frame, nothing from elsewhere. */
#define CSP                                                                                        \
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "              \
    "form-action 'none'; frame-ancestors 'none'"

struct hconn {
    struct http *h;
    int fd;
    uint64_t opened_ms; /* monotonic */
    bool served;        /* a request was answered: idling after it (keep-alive) is no fault */
    bool stalled;       /* MHD timed a request out */
    bool evicted;
    struct hconn *prev, *next; /* in h's list while not evicted, oldest first */
};

struct http {
    struct MHD_Daemon *d;
    uv_poll_t poll;
    uv_timer_t timer;
    int closing;
    struct server *srv;
    struct status *status;
    struct hconn *head, *tail;
    size_t nlisted; /* connections in the list */
    size_t nopen;   /* connections MHD holds, those shut down included */
    bool stopping;
    /* monotonic ms of the last warning about connections, about requests; 0: none */
    uint64_t conn_log, req_log;
};

/* A request being read: what its first call decided, and its body so far. */
struct hreq {
    unsigned refuse; /* 0, or the status it gets once its body is read */
    const char *why; /* the message with it */
    bool write;
    size_t seen;     /* body bytes received, kept or not */
    struct buf body; /* kept unless refused */
    /*
     * GET /api/v1/queues under privilege separation: the executor process
     * answers, the connection waits suspended meanwhile.  A request whose
     * connection ends first is freed by the answer (gone).
     */
    struct http *h;
    struct MHD_Connection *conn;
    bool waiting, suspended, answered, gone;
    bool named; /* ?executor= was given */
    struct buf answer;
};

static void
hreq_free(struct hreq *r)
{
    buf_free(&r->body);
    buf_free(&r->answer);
    free(r);
}

static uint64_t
now_ms(void)
{
    return uv_hrtime() / 1000000;
}

static struct server_endpoint_stats *
stats(struct http *h)
{
    return server_endpoint_stats(h->srv, SERVER_EP_STATS);
}

/* One warning per LOG_EVERY_MS at most: a flood of clients must not flood the log. */
static bool
log_allowed(uint64_t *last)
{
    uint64_t now = now_ms();

    if (*last && now - *last < LOG_EVERY_MS) return false;
    *last = now ? now : 1;
    return true;
}

/* ---- replies ---- */

void
http_json(struct http_reply *rep, unsigned code, json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT);

    rep->code = code;
    rep->type = NULL;
    buf_reset(&rep->body);
    if (s) {
        buf_puts(&rep->body, s);
        buf_putc(&rep->body, '\n');
    }
    free(s);
    json_decref(v);
}

void
http_error(struct http_reply *rep, unsigned code, const char *fmt, ...)
{
    struct buf msg = BUF_INIT;
    va_list ap;

    va_start(ap, fmt);
    buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    http_json(rep, code, json_pack("{s:s}", "error", buf_str(&msg)));
    buf_free(&msg);
}

/* ---- the checks of write requests ---- */

enum http_auth
http_check_token(const char *configured, const char *authorization)
{
    static const char scheme[] = "Bearer ";
    size_t n, alen, i;
    unsigned char diff = 0;

    if (!configured || !*configured) return HTTP_AUTH_DISABLED;
    if (!authorization || strncasecmp(authorization, scheme, sizeof(scheme) - 1) != 0)
        return HTTP_AUTH_MISSING;
    authorization += sizeof(scheme) - 1;
    while (*authorization == ' ') authorization++;
    n = strlen(configured);
    alen = strlen(authorization);
    /* every byte of the configured token is compared, wherever the first difference is */
    for (i = 0; i < n; i++)
        diff |= (unsigned char)(configured[i] ^ (i < alen ? authorization[i] : 0));
    if (alen != n) diff = 1;
    return diff ? HTTP_AUTH_WRONG : HTTP_AUTH_OK;
}

json_t *
http_parse_json(const char *body, size_t len, struct buf *err)
{
    json_error_t e;
    json_t *v;

    if (!len) {
        buf_puts(err, "the request body is empty: a JSON value was expected");
        return NULL;
    }
    v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &e);
    if (!v)
        buf_printf(err, "the body is not JSON: line %d column %d: %s", e.line, e.column, e.text);
    return v;
}

/* ---- routes ---- */

static void
get_metrics(struct http_request *req, struct http_reply *rep)
{
    rep->type = "text/plain; version=0.0.4";
    server_metrics(req->srv, &rep->body);
    apiv2_metrics(&rep->body);
}

/* The page's ?filter= arguments (repeatable), in the order given. */
struct page_args {
    const char *filters[STATUS_MAX_FILTERS + 1]; /* one more: status_page says there are too many */
    size_t n;
};

static enum MHD_Result
page_filter(void *arg, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct page_args *pa = arg;

    (void)kind;
    if (strcmp(key, "filter") != 0 || !value || !*value) return MHD_YES;
    pa->filters[pa->n++] = value;
    return pa->n < STATUS_MAX_FILTERS + 1 ? MHD_YES : MHD_NO;
}

/* GET /?filter=MATCHERS&state=STATE: the status page (a bad filter: 400, the page says why) */
static void
get_page(struct http_request *req, struct http_reply *rep)
{
    struct page_args pa = {{NULL}, 0};
    struct status_query q;

    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, page_filter, &pa);
    q.filters = pa.filters;
    q.nfilters = pa.n;
    q.state = MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, "state");
    rep->type = "text/html; charset=utf-8";
    rep->code = status_page(req->status, &q, &rep->body);
}

/* GET /alert?id=ID: one alert's page (404 when there is no such alert) */
static void
get_alert_page(struct http_request *req, struct http_reply *rep)
{
    rep->type = "text/html; charset=utf-8";
    rep->code = status_alert_page(
        req->status, MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, "id"),
        &rep->body);
}

static void
get_status(struct http_request *req, struct http_reply *rep)
{
    http_json(rep, 200, status_json(req->status));
}

struct route {
    const char *method;
    const char *path; /* exact, or a prefix when it ends in '/' and is not "/" */
    http_handler_fn *fn;
};

/* ---- the alerts and silences API: the control socket's requests, over HTTP ---- */

/* Collects the repeated ?filter=MATCHER arguments (Alertmanager's name) into a JSON array. */
static enum MHD_Result
add_filter(void *arg, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    if (strcmp(key, "filter") == 0 && value) json_array_append_new(arg, json_string(value));
    return MHD_YES;
}

/*
 * Runs a control request (control_request_json) and answers with what it
 * answers: {"status":"success","data":...} with 200, or the error with
 * code when it is refused (bad matcher, unknown id: the client's fault).
 */
static void
control_answer(struct http_request *req, struct http_reply *rep, json_t *creq, unsigned code)
{
    char *text = json_dumps(creq, JSON_COMPACT);
    struct buf answer = BUF_INIT;
    int rc;

    json_decref(creq);
    if (!text) {
        http_error(rep, 500, "cannot build the request");
        return;
    }
    rc = control_request_json(req->srv, text, strlen(text), &answer);
    free(text);
    rep->code = rc == 0 ? 200 : code;
    buf_free(&rep->body);
    rep->body = answer; /* it is JSON already */
}

/* a request with the ?filter= matchers of the URL */
static json_t *
filtered_request(struct http_request *req, const char *command)
{
    json_t *filters = json_array();

    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, add_filter, filters);
    return json_pack("{s:s, s:o}", "command", command, "matchers", filters);
}

static void
get_alerts(struct http_request *req, struct http_reply *rep)
{
    control_answer(req, rep, filtered_request(req, "alerts"), 400);
}

static void
get_silences(struct http_request *req, struct http_reply *rep)
{
    json_t *creq = filtered_request(req, "silence-list");
    const char *expired = MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, "expired");

    if (expired && (strcmp(expired, "true") == 0 || strcmp(expired, "1") == 0))
        json_object_set_new(creq, "expired", json_true());
    control_answer(req, rep, creq, 400);
}

/* The body is the silence as `corral silence add --json` sends it (see corral(1)). */
static void
post_silence(struct http_request *req, struct http_reply *rep)
{
    if (!req->body || !json_is_object(req->body)) {
        http_error(rep, 400, "a JSON object (the silence) expected");
        return;
    }
    control_answer(req, rep,
                   json_pack("{s:s, s:O}", "command", "silence-add", "silence", req->body), 400);
}

static void
delete_silence(struct http_request *req, struct http_reply *rep)
{
    /* an unknown or ended id is not there to delete */
    control_answer(req, rep,
                   json_pack("{s:s, s:[s]}", "command", "silence-expire", "ids", req->rest), 404);
}

/* POST /api/v1/alerts/resolve with {"ids":["ID",...]}: resolves them by hand, all or none. */
static void
post_resolve(struct http_request *req, struct http_reply *rep)
{
    const json_t *ids = req->body ? json_object_get(req->body, "ids") : NULL;

    if (!json_is_array(ids)) {
        http_error(rep, 400, "a JSON object {\"ids\":[...]} expected");
        return;
    }
    control_answer(req, rep, json_pack("{s:s, s:O}", "command", "alerts-resolve", "ids", ids), 404);
}

/* What each executor holds: queued, retrying, dead letters (as `corral queue list --json`). */
static void
get_queues(struct http_request *req, struct http_reply *rep)
{
    const char *name = MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, "executor");
    json_t *j = queuectl_list_json(req->srv, name);

    if (!j) { /* privsep: on_request asks the executor process (queues_remote) */
        http_error(rep, 500, "the queues are the executor process's");
        return;
    }
    if (name && json_array_size(json_object_get(j, "executors")) == 0) {
        json_decref(j);
        http_error(rep, 404, "no executor %s", name);
        return;
    }
    http_json(rep, 200, json_pack("{s:s, s:o}", "status", "success", "data", j));
}

/* <cluster>: the nodes and the partitions' owners (cluster_view.h) */
static void
get_cluster(struct http_request *req, struct http_reply *rep)
{
    json_t *j = server_cluster_json(req->srv);

    if (!j) {
        http_error(rep, 404, "not a node of a cluster (no <cluster>)");
        return;
    }
    http_json(rep, 200, json_pack("{s:s, s:o}", "status", "success", "data", j));
}

/*
 * Every endpoint.  An API endpoint is a line here and a handler; write
 * methods reach their handler only with the right token and, if a body
 * came, a parsed one in req->body.
 */
static const struct route routes[] = {
    {"GET", "/metrics", get_metrics},
    {"GET", "/", get_page},
    {"GET", "/alert", get_alert_page},
    {"GET", "/api/v1/status", get_status},
    {"GET", "/api/v1/cluster", get_cluster},
    {"GET", "/api/v1/alerts", get_alerts},
    {"GET", "/api/v1/queues", get_queues},
    {"GET", "/api/v1/silences", get_silences},
    {"POST", "/api/v1/silences", post_silence},
    {"DELETE", "/api/v1/silences/", delete_silence},
    {"POST", "/api/v1/alerts/resolve", post_resolve},
    /* Alertmanager's API v2 (apiv2.h) */
    {"GET", "/api/v2/alerts", apiv2_get_alerts},
    {"POST", "/api/v2/alerts", apiv2_post_alerts},
    {"GET", "/api/v2/alerts/groups", apiv2_get_groups},
    {"GET", "/api/v2/silences", apiv2_get_silences},
    {"POST", "/api/v2/silences", apiv2_post_silences},
    {"GET", "/api/v2/silence/", apiv2_get_silence},
    {"DELETE", "/api/v2/silence/", apiv2_delete_silence},
    {"GET", "/api/v2/status", apiv2_get_status},
    {"GET", "/api/v2/receivers", apiv2_get_receivers},
    {"GET", "/-/healthy", apiv2_healthy},
    {"GET", "/-/ready", apiv2_healthy},
};

static bool
route_matches(const struct route *r, const char *path, const char **rest)
{
    size_t n = strlen(r->path);

    if (n > 1 && r->path[n - 1] == '/') {
        if (strncmp(path, r->path, n) != 0 || !path[n]) return false;
        *rest = path + n;
        return true;
    }
    *rest = "";
    return strcmp(path, r->path) == 0;
}

static void
dispatch(struct http *h, struct MHD_Connection *conn, const char *method, const char *path,
         json_t *body, struct http_reply *rep)
{
    struct http_request req = {method, path, "", body, h->srv, h->status, conn};
    struct buf allow = BUF_INIT;
    size_t i;

    for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const char *rest;
        if (!route_matches(&routes[i], path, &rest)) continue;
        if (strcmp(routes[i].method, method) != 0) {
            buf_printf(&allow, "%s%s", allow.len ? ", " : "", routes[i].method);
            continue;
        }
        req.rest = rest;
        routes[i].fn(&req, rep);
        buf_free(&allow);
        return;
    }
    if (allow.len)
        http_error(rep, 405, "%s is not allowed on %s (only %s)", method, path, buf_str(&allow));
    else
        http_error(rep, 404, "no such endpoint: %s", path);
    buf_free(&allow);
}

/* ---- MHD's callbacks ---- */

static enum MHD_Result
send_reply(struct MHD_Connection *conn, struct http_reply *rep)
{
    struct MHD_Response *r;
    enum MHD_Result ok;
    size_t len = rep->body.len;
    char *p = rep->body.p;

    if (!p || !len) {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        buf_free(&rep->body);
    } else {
        r = MHD_create_response_from_buffer_with_free_callback(len, p, free);
        rep->body = (struct buf)BUF_INIT; /* MHD owns it now */
    }
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", rep->type ? rep->type : "application/json");
    MHD_add_response_header(r, "Content-Security-Policy", CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (rep->code == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"corrald\"");
    ok = MHD_queue_response(conn, rep->code ? rep->code : 200, r);
    MHD_destroy_response(r);
    return ok;
}

static const char *
peer_name(struct MHD_Connection *conn, char *name, size_t size)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;

    snprintf(name, size, "?");
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, name, (socklen_t)size);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, name, (socklen_t)size);
    return name;
}

static enum MHD_Result
refuse(struct http *h, struct MHD_Connection *conn, const char *method, const char *url,
       unsigned code, const char *why)
{
    struct http_reply rep = {0, NULL, BUF_INIT};
    struct server_endpoint_stats *st = stats(h);
    uint64_t *count = code == 401 || code == 403 ? &st->unauthorized : &st->bad_requests;
    char peer[INET6_ADDRSTRLEN + 8];
    enum MHD_Result ok;

    ++*count;
    if (log_allowed(&h->req_log))
        log_msg(LOG_WARNING, "stats: %s %s from %s refused (%u): %s (%llu so far)", method, url,
                peer_name(conn, peer, sizeof(peer)), code, why, (unsigned long long)*count);
    http_error(&rep, code, "%s", why);
    ok = send_reply(conn, &rep);
    buf_free(&rep.body);
    return ok;
}

static bool
is_write(const char *method)
{
    return strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
           strcmp(method, "PATCH") == 0 || strcmp(method, "DELETE") == 0;
}

static enum MHD_Result
find_regex(void *arg, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    if (strcmp(key, "filter") == 0 && value && (strstr(value, "=~") || strstr(value, "!~"))) {
        *(bool *)arg = true;
        return MHD_NO;
    }
    return MHD_YES;
}

/*
 * Whether a ?filter= argument holds =~ or !~ (inside a quoted value too: a
 * false alarm only asks for the token).  A regular expression costs up to
 * rematch's limit per alert; without the token, which a browser never
 * sends on its own, a page elsewhere cannot make an operator's browser run
 * one (an <img> pointing at the API).
 */
static bool
regex_filter(struct MHD_Connection *conn)
{
    bool found = false;

    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, find_regex, &found);
    return found;
}

/* The first call of a request: its head is here, its body (if any) not yet. */
static enum MHD_Result
request_begins(struct http *h, struct MHD_Connection *conn, const char *method, const char *url,
               struct hreq *r)
{
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");

    if (cl && strtoull(cl, NULL, 10) > HTTP_MAX_BODY) {
        /* answered at once, and the connection closed: the body is not read */
        char why[80];
        snprintf(why, sizeof(why), "the request body is larger than %zu bytes", HTTP_MAX_BODY);
        return refuse(h, conn, method, url, 413, why);
    }
    r->write = is_write(method);
    if (r->write || regex_filter(conn)) {
        const struct conf *c = server_conf(h->srv);
        switch (http_check_token(c->stats_api_token, MHD_lookup_connection_value(
                                                         conn, MHD_HEADER_KIND, "Authorization"))) {
        case HTTP_AUTH_OK: break;
        case HTTP_AUTH_DISABLED:
            /* no token to ask for: regular expressions run within rematch's limits */
            if (!r->write) break;
            r->refuse = 403;
            r->why = "writes are disabled: no api-token-file is configured";
            break;
        case HTTP_AUTH_MISSING:
            r->refuse = 401;
            r->why = r->write ? "an Authorization: Bearer token is required"
                              : "a regular expression filter (=~, !~) needs the API token "
                                "(Authorization: Bearer)";
            break;
        case HTTP_AUTH_WRONG:
            r->refuse = 401;
            r->why = "wrong API token";
            break;
        }
    }
    return MHD_YES;
}

static void on_timer(uv_timer_t *t);

/* The executor process's answer to `queue list`: JSON, or an ERROR/FAILED line. */
static void
queues_answered(void *arg, const char *text, size_t len)
{
    struct hreq *r = arg;

    r->waiting = false;
    if (r->gone) {
        hreq_free(r);
        return;
    }
    buf_append(&r->answer, text, len);
    r->answered = true;
    if (!r->suspended) return;
    /* MHD runs the request again on its next run: at once, on the loop's next turn */
    MHD_resume_connection(r->conn);
    uv_timer_start(&r->h->timer, on_timer, 0, 0);
}

/*
 * GET /api/v1/queues under privilege separation: asks the executor process
 * (as `corral queue list` does) and answers once it has, the connection
 * suspended meanwhile.  Called again when resumed: answers.
 */
static enum MHD_Result
queues_remote(struct http *h, struct MHD_Connection *conn, struct hreq *r)
{
    const char *name = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "executor");
    struct http_reply rep = {0, NULL, BUF_INIT};
    struct buf cmd = BUF_INIT;
    enum MHD_Result ok;
    json_t *j;
    const char *p;

    if (!r->answered) {
        for (p = name; p && *p; p++)
            if ((unsigned char)*p <= ' ') break;
        if (name && (*p || !*name)) { /* a space would split the command: no executor is named so */
            http_error(&rep, 404, "no executor %s", name);
            goto reply;
        }
        r->named = name != NULL;
        r->h = h;
        r->conn = conn;
        r->waiting = true;
        buf_printf(&cmd, "list%s%s", name ? " " : "", name ? name : "");
        ipcproxy_control(server_proxy(h->srv), buf_str(&cmd), queues_answered, r);
        buf_free(&cmd);
        if (r->answered) goto answer; /* at once: the executor process is gone */
        r->suspended = true;
        MHD_suspend_connection(conn);
        return MHD_YES;
    }
answer:
    j = json_loadb(r->answer.p ? r->answer.p : "", r->answer.len, 0, NULL);
    if (!json_is_object(j) && r->named && strncmp(buf_str(&r->answer), "ERROR", 5) == 0) {
        http_error(&rep, 404, "no executor %s", name ? name : ""); /* as without privsep */
    } else if (!json_is_object(j)) {
        http_error(&rep, 502, "the executor process: %.*s", (int)strcspn(buf_str(&r->answer), "\n"),
                   buf_str(&r->answer));
    } else if (r->named && json_array_size(json_object_get(j, "executors")) == 0) {
        http_error(&rep, 404, "no executor %s", name ? name : "");
    } else {
        http_json(&rep, 200, json_pack("{s:s, s:O}", "status", "success", "data", j));
    }
    json_decref(j);
reply:
    ok = send_reply(conn, &rep);
    buf_free(&rep.body);
    return ok;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
           const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    struct http *h = cls;
    struct hreq *r = *con_cls;
    struct http_reply rep = {0, NULL, BUF_INIT};
    json_t *body = NULL;
    enum MHD_Result ok;

    (void)version;
    if (!r) {
        *con_cls = r = xcalloc(1, sizeof(*r));
        return request_begins(h, conn, method, url, r);
    }
    if (*upload_size) {
        /* a chunked body over the bound: nothing can be answered mid-body, the connection goes */
        r->seen += *upload_size;
        if (r->seen > HTTP_MAX_BODY) {
            stats(h)->bad_requests++;
            if (log_allowed(&h->req_log))
                log_msg(LOG_WARNING, "stats: %s %s: the body exceeds %zu bytes, connection closed",
                        method, url, HTTP_MAX_BODY);
            return MHD_NO;
        }
        if (!r->refuse) buf_append(&r->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->refuse) return refuse(h, conn, method, url, r->refuse, r->why);
    if (server_proxy(h->srv) && strcmp(url, "/api/v1/queues") == 0 &&
        (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
        return queues_remote(h, conn, r);
    if (r->write && r->body.len) {
        struct buf err = BUF_INIT;
        body = http_parse_json(r->body.p, r->body.len, &err);
        if (!body) {
            ok = refuse(h, conn, method, url, 400, buf_str(&err));
            buf_free(&err);
            return ok;
        }
    }
    dispatch(h, conn, strcmp(method, "HEAD") == 0 ? "GET" : method, url, body, &rep);
    json_decref(body);
    ok = send_reply(conn, &rep);
    buf_free(&rep.body);
    return ok;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
             enum MHD_RequestTerminationCode why)
{
    struct hreq *r = *con_cls;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    (void)cls;
    if (ci && ci->socket_context) {
        struct hconn *c = ci->socket_context;
        if (why == MHD_REQUEST_TERMINATED_COMPLETED_OK) c->served = true;
        /* a request begun and not finished in time (a body that stalls) */
        if (why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED) c->stalled = true;
    }
    if (r) {
        *con_cls = NULL;
        if (r->waiting)
            r->gone = true; /* the executor process's answer frees it */
        else
            hreq_free(r);
    }
}

static void
unlist(struct hconn *c)
{
    struct http *h = c->h;

    if (c->prev)
        c->prev->next = c->next;
    else
        h->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        h->tail = c->prev;
    c->prev = c->next = NULL;
    h->nlisted--;
}

static void
on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
              enum MHD_ConnectionNotificationCode code)
{
    struct http *h = cls;
    struct hconn *c = *socket_context;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        c = xcalloc(1, sizeof(*c));
        c->h = h;
        c->fd = ci ? ci->connect_fd : -1;
        c->opened_ms = now_ms();
        c->prev = h->tail;
        if (h->tail)
            h->tail->next = c;
        else
            h->head = c;
        h->tail = c;
        h->nlisted++;
        h->nopen++;
        *socket_context = c;
        if (h->nlisted > HTTP_MAX_CONNS) {
            struct hconn *old = h->head;
            struct server_endpoint_stats *st = stats(h);
            st->evicted++;
            if (log_allowed(&h->conn_log))
                log_msg(LOG_WARNING,
                        "stats: %d connections open, closing the oldest for a new one (%llu so "
                        "far)",
                        HTTP_MAX_CONNS, (unsigned long long)st->evicted);
            unlist(old);
            old->evicted = true;
            /* MHD sees the end of the stream and closes it on its next run */
            if (old->fd >= 0) shutdown(old->fd, SHUT_RDWR);
        }
        return;
    }
    if (!c) return;
    if (!c->evicted) {
        unlist(c);
        /*
         * MHD says not why it closes a connection.  One whose request it
         * timed out, or that never had a request answered and lived for the
         * timeout, was closed for it: no request in time.
         */
        if (!h->stopping &&
            (c->stalled || (!c->served && now_ms() - c->opened_ms + 100 >= TIMEOUT_S * 1000))) {
            struct server_endpoint_stats *st = stats(h);
            st->timed_out++;
            if (log_allowed(&h->conn_log))
                log_msg(
                    LOG_WARNING,
                    "stats: a client sent no complete request within %d s, closed (%llu so far)",
                    TIMEOUT_S, (unsigned long long)st->timed_out);
        }
    }
    h->nopen--;
    free(c);
    *socket_context = NULL;
}

static enum MHD_Result
on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    struct http *h = cls;
    struct server_endpoint_stats *st;

    (void)addr;
    (void)addrlen;
    if (h->nopen < HTTP_MAX_FDS) return MHD_YES;
    st = stats(h);
    st->accept_errors++;
    if (log_allowed(&h->conn_log))
        log_msg(LOG_WARNING,
                "stats: %d connections still closing, refusing a new one (%llu so far)",
                HTTP_MAX_FDS, (unsigned long long)st->accept_errors);
    return MHD_NO;
}

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct buf msg = BUF_INIT;

    (void)cls;
    buf_vprintf(&msg, fmt, ap);
    while (msg.len && msg.p[msg.len - 1] == '\n') buf_truncate(&msg, msg.len - 1);
    log_msg(LOG_DEBUG, "stats: libmicrohttpd: %s", buf_str(&msg));
    buf_free(&msg);
}

/* ---- on the libuv loop ---- */

static void
run(struct http *h)
{
    MHD_UNSIGNED_LONG_LONG ms;

    MHD_run(h->d);
    if (MHD_get_timeout(h->d, &ms) == MHD_YES)
        uv_timer_start(&h->timer, on_timer, ms, 0);
    else
        uv_timer_stop(&h->timer);
}

static void
on_timer(uv_timer_t *t)
{
    run(t->data);
}

static void
on_poll(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    run(p->data);
}

static void
http_closed(uv_handle_t *hd)
{
    struct http *h = hd->data;

    if (--h->closing == 0) free(h);
}

/* The listening socket, as an input's: resolved, bound and listening before the privilege drop. */
static int
listen_socket(const char *listen_addr, struct buf *err)
{
    struct sockaddr_storage ss;
    struct buf e = BUF_INIT;
    int fd, one = 1;

    if (input_resolve(listen_addr, SOCK_STREAM, &ss, &e) < 0) {
        buf_printf(err, "stats listener: %s\n", buf_str(&e));
        buf_free(&e);
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&ss,
             ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) <
            0 ||
        listen(fd, 64) < 0) {
        buf_printf(err, "stats listener %s: %s\n", listen_addr, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

struct http *
http_open(uv_loop_t *loop, const char *listen_addr, struct server *srv, struct buf *err)
{
    struct http *h;
    const union MHD_DaemonInfo *di;
    char where[INET6_ADDRSTRLEN + 8];
    int fd = listen_socket(listen_addr, err);

    if (fd < 0) return NULL;
    h = xcalloc(1, sizeof(*h));
    h->srv = srv;
    h->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0,
                            on_accept, h, on_request, h,
                            /* first, so that MHD writes nothing to stderr itself */
                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, MHD_OPTION_LISTEN_SOCKET,
                            (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_FDS + 1,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)TIMEOUT_S,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, MEMORY_LIMIT,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
    di = h->d ? MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    if (!di) {
        buf_printf(err, "stats listener %s: libmicrohttpd did not start\n", listen_addr);
        if (h->d)
            MHD_stop_daemon(h->d);
        else
            close(fd);
        free(h);
        return NULL;
    }
    uv_poll_init(loop, &h->poll, di->epoll_fd);
    uv_timer_init(loop, &h->timer);
    h->poll.data = h->timer.data = h;
    uv_poll_start(&h->poll, UV_READABLE, on_poll);
    h->status = status_new(loop, srv);
    if (input_bound_name(fd, where, sizeof(where)))
        log_msg(LOG_INFO, "stats: listening on %s", where);
    return h;
}

void
http_close(struct http *h)
{
    if (!h) return;
    h->closing = 2;
    /* the poll first: it stops watching the epoll descriptor before MHD closes it */
    uv_close((uv_handle_t *)&h->poll, http_closed);
    uv_close((uv_handle_t *)&h->timer, http_closed);
    h->stopping = true;
    MHD_stop_daemon(
        h->d); /* closes its connections, the listening socket and the epoll descriptor */
    status_free(h->status);
}
