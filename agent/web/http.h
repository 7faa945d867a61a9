/*
 * http: corrald's HTTP listener (<stats listen>): the Prometheus counters
 * at /metrics, the status page at / and each alert's at /alert?id=ID, the
 * JSON API under /api/v1/ and Alertmanager's under /api/v2/.
 * libmicrohttpd parses HTTP; it runs on corrald's libuv loop, without
 * threads of its own.  Requests are dispatched through a table of routes
 * (http.c); the API's write methods need the bearer token of
 * <stats api-token-file>.
 */
#ifndef CORRAL_HTTP_H
#define CORRAL_HTTP_H

#include <jansson.h>
#include <uv.h>

#include "engine/buf.h"
#include "agent/net/connlimits.h"

struct server;
struct status;
struct http;
struct MHD_Connection;

/* HTTP_MAX_CONNS, HTTP_MAX_FDS: connlimits.h */
/* The largest request body read (a JSON request of the API). */
#define HTTP_MAX_BODY ((size_t)64 * 1024)

struct http *http_open(uv_loop_t *loop, const char *listen, struct server *srv, struct buf *err);
void http_close(struct http *h);

/* ---- for the handlers of routes (the table in http.c) ---- */

struct http_request {
    const char *method; /* GET (also for HEAD), POST, DELETE, ... */
    const char *path;   /* the URL's path, decoded, without the query */
    const char *rest;   /* a prefix route ("/api/v1/silences/"): what follows the prefix */
    json_t *body;       /* a write method's JSON body (borrowed); NULL: none was sent */
    struct server *srv;
    struct status *status;
    struct MHD_Connection *conn; /* for the URL's query arguments */
};

struct http_reply {
    unsigned code;    /* HTTP status; 200 unless set */
    const char *type; /* Content-Type; NULL: application/json */
    struct buf body;
};

typedef void http_handler_fn(struct http_request *req, struct http_reply *rep);

/* Answers {"error": MESSAGE} with code. */
void http_error(struct http_reply *rep, unsigned code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Answers the JSON value v (its reference is taken) with code. */
void http_json(struct http_reply *rep, unsigned code, json_t *v);

/* ---- the checks every write request passes, before its route (exposed for tests) ---- */

enum http_auth {
    HTTP_AUTH_OK,
    HTTP_AUTH_DISABLED, /* no token configured: writes are refused (403) */
    HTTP_AUTH_MISSING,  /* no "Authorization: Bearer" header (401) */
    HTTP_AUTH_WRONG,    /* another token (401) */
};
/*
 * Checks an Authorization header value (NULL: none) against the configured
 * token (NULL: none), in time that does not depend on where they differ.
 */
enum http_auth http_check_token(const char *configured, const char *authorization);
/*
 * Parses a request body as one JSON value: NULL with the reason in err
 * ("line L column C: ...") when it is not, or is empty.
 */
json_t *http_parse_json(const char *body, size_t len, struct buf *err);

#endif
