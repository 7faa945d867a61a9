/*
 * control: the control socket.  Requests are small (one line of at most
 * 16 KiB: a word, or a JSON object for the alerts and silences) and answers
 * are built in memory, so each connection is: read one line, answer, close.
 * A longer line is refused.  `save` answers once the background save it
 * started has finished, `reload` once the reload is over (under privilege
 * separation it may wait for the executor process), and `queue` under
 * privilege separation once the executor process has answered.
 * The socket is created owner-only (0600): it can reload the daemon; or
 * for a group as well (0660, <control group mode>).
 *
 * A client that connects and stalls must not hold a descriptor for long nor
 * keep `corral ctl` out: a connection is closed when it has not been
 * answered and the answer taken within <control timeout> (10 s), and at
 * most CONTROL_MAX_CONNS are open at once, a new one closing the oldest.
 * Both are counted (server_endpoint_stats) and logged, at most every 10 s.
 */
#include "agent/web/control.h"
#include "actions/ipcproxy.h"
#include "actions/jsonval.h"
#include "agent/alerting/alerts.h"
#include "agent/web/apiv2.h"
#include "engine/clock.h"
#include "engine/log.h"
#include "agent/web/queuectl.h"
#include "agent/core/server.h"
#include "agent/alerting/silences.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_REQUEST  16384 /* a silence's matchers and comment fit */
#define LOG_EVERY_MS 10000

struct control {
    uv_pipe_t listener;
    struct server *srv;
    control_reload_fn reload;
    void *arg;
    char *path;
    struct conn *head, *tail; /* open connections, oldest first */
    size_t nconns;
    uint64_t last_log; /* uv_now() of the last warning; 0: none */
};

struct conn {
    uv_pipe_t pipe;
    uv_timer_t timer;
    int handles; /* handles not closed yet: freed at 0 */
    struct conn *prev, *next;
    bool listed;
    struct control *ctl;
    char req[MAX_REQUEST];
    size_t len;
    struct buf answer;
    uv_write_t wr;
};

/* Drops one reference (the pipe's, or a pending save's, reload's or queue command's). */
static void
conn_unref(struct conn *c)
{
    if (--c->handles > 0) return;
    buf_free(&c->answer);
    free(c);
}

static void
conn_closed(uv_handle_t *h)
{
    conn_unref(h->data);
}

static void
conn_close(struct conn *c)
{
    struct control *ctl = c->ctl;

    if (c->listed) {
        if (c->prev)
            c->prev->next = c->next;
        else
            ctl->head = c->next;
        if (c->next)
            c->next->prev = c->prev;
        else
            ctl->tail = c->prev;
        c->listed = false;
        ctl->nconns--;
    }
    if (!uv_is_closing((uv_handle_t *)&c->pipe)) uv_close((uv_handle_t *)&c->pipe, conn_closed);
    if (!uv_is_closing((uv_handle_t *)&c->timer)) uv_close((uv_handle_t *)&c->timer, conn_closed);
}

/* One warning per LOG_EVERY_MS at most: a flood of clients must not flood the log. */
static bool
log_allowed(struct control *ctl)
{
    uint64_t now = uv_now(ctl->listener.loop);

    if (ctl->last_log && now - ctl->last_log < LOG_EVERY_MS) return false;
    ctl->last_log = now ? now : 1;
    return true;
}

static void
written(uv_write_t *wr, int status)
{
    (void)status;
    conn_close(wr->data);
}

static void
send_answer(struct conn *c)
{
    uv_buf_t b;

    b = uv_buf_init(c->answer.p ? c->answer.p : (char *)"", (unsigned)c->answer.len);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->pipe, &b, 1, written) < 0) conn_close(c);
}

/*
 * A save's answer.  The connection may have been closed meanwhile (evicted
 * for a newer one, or the daemon is stopping): the pending save holds one
 * reference to it (handles), so it is still there to look at.
 */
static void
saved(void *arg, int rc)
{
    struct conn *c = arg;

    if (!uv_is_closing((uv_handle_t *)&c->pipe)) {
        buf_puts(&c->answer, rc == 0 ? "OK\n" : "FAILED\n");
        send_answer(c);
    }
    conn_unref(c);
}

/* A queue command's answer from the executor process (privsep); as saved() for the rest. */
static void
queue_answered(void *arg, const char *text, size_t len)
{
    struct conn *c = arg;

    if (!uv_is_closing((uv_handle_t *)&c->pipe)) {
        buf_append(&c->answer, text, len);
        send_answer(c);
    }
    conn_unref(c);
}

/* A reload's outcome, possibly late (privsep); as saved() for the rest. */
static void
reloaded(void *arg, int rc, const char *report)
{
    struct conn *c = arg;

    if (!uv_is_closing((uv_handle_t *)&c->pipe)) {
        buf_puts(&c->answer, report);
        buf_puts(&c->answer, rc < 0 ? "FAILED\n" : "OK\n");
        send_answer(c);
    }
    conn_unref(c);
}

/* The strings of array "matchers" as one set; NULL (and -1) with a message in err. */
static int
query_of(const json_t *req, struct labelmatch **out, struct buf *err)
{
    const json_t *ms = json_object_get(req, "matchers");
    size_t i;

    *out = NULL;
    if (!ms || json_is_null(ms) || (json_is_array(ms) && json_array_size(ms) == 0)) return 0;
    if (!json_is_array(ms)) {
        buf_puts(err, "matchers: an array of strings expected");
        return -1;
    }
    *out = labelmatch_new();
    for (i = 0; i < json_array_size(ms); i++) {
        const json_t *m = json_array_get(ms, i);
        if (!json_is_string(m)) {
            buf_puts(err, "matchers: an array of strings expected");
            goto bad;
        }
        if (labelmatch_add(*out, json_string_value(m), json_string_length(m), err) < 0) goto bad;
    }
    return 0;
bad:
    labelmatch_free(*out);
    *out = NULL;
    return -1;
}

static void
error_answer(struct buf *answer, const char *msg)
{
    json_t *j = json_pack("{s:s, s:o}", "status", "error", "error", jsonval_str(msg));

    jsonval_put_new(answer, j);
    buf_putc(answer, '\n');
}

int
control_request_json(struct server *srv, const char *req, size_t len, struct buf *answer)
{
    json_error_t jerr;
    json_t *j = json_loadb(req, len, 0, &jerr);
    const char *cmd = json_string_value(json_object_get(j, "command"));
    struct alerts *alerts = server_alerts(srv);
    struct silences *sil = server_silences(srv);
    struct labelmatch *query = NULL;
    struct buf err = BUF_INIT;
    json_t *data = NULL;
    uint64_t now = clock_wall_ms();
    int rc = -1;

    if (!j) {
        buf_printf(&err, "bad JSON: %s", jerr.text);
    } else if (!cmd) {
        buf_puts(&err, "\"command\" expected");
    } else if (!alerts || !sil) {
        buf_puts(&err, "not started yet");
    } else if (strcmp(cmd, "alerts") == 0) {
        const json_t *id = json_object_get(j, "id");
        if (id && !json_is_string(id)) {
            buf_puts(&err, "id: a string expected");
        } else if (query_of(j, &query, &err) == 0) {
            data = alerts_to_json(alerts, query, json_string_value(id));
            rc = 0;
        }
    } else if (strcmp(cmd, "alerts-resolve") == 0) {
        const json_t *ids = json_object_get(j, "ids");
        size_t i, n = json_array_size(ids);
        for (i = 0; i < n && json_is_string(json_array_get(ids, i)); i++) continue;
        if (!json_is_array(ids) || !n || i < n) {
            buf_puts(&err, "ids: an array of alert ids expected");
        } else {
            /* all or nothing: every id must name an alert that is not resolved */
            for (i = 0; i < n; i++) {
                const char *id = json_string_value(json_array_get(ids, i));
                if (!alerts_firing(alerts, id))
                    buf_printf(&err, "%s%s: no such alert, or resolved already", i ? "; " : "", id);
            }
            if (!err.len) {
                for (i = 0; i < n; i++)
                    alerts_resolve(alerts, json_string_value(json_array_get(ids, i)), now);
                /* resolved sources release what they inhibited */
                alerts_reinhibit(alerts, now);
                rc = 0;
            }
        }
    } else if (strcmp(cmd, "silence-add") == 0) {
        struct buf id = BUF_INIT;
        if (silences_add_json(sil, json_object_get(j, "silence"), now, &id, &err) == 0) {
            data = json_pack("{s:s}", "silenceID", buf_str(&id));
            /* live muting: what fires now and matches it is silenced at once */
            alerts_remute(alerts, sil, now);
            rc = 0;
        }
        buf_free(&id);
    } else if (strcmp(cmd, "silence-list") == 0 || strcmp(cmd, "silence-query") == 0) {
        if (query_of(j, &query, &err) == 0) {
            data = silences_to_json(sil, query, json_is_true(json_object_get(j, "expired")), now);
            rc = 0;
        }
    } else if (strcmp(cmd, "silence-expire") == 0) {
        const json_t *ids = json_object_get(j, "ids");
        size_t i, n = json_array_size(ids);
        const char **v = xcalloc(n + 1, sizeof(*v));
        for (i = 0; i < n; i++) {
            v[i] = json_string_value(json_array_get(ids, i));
            if (!v[i]) break;
        }
        if (!json_is_array(ids) || i < n)
            buf_puts(&err, "ids: an array of silence ids expected");
        else if (silences_expire(sil, v, n, now, &err) == 0) {
            /* what it silenced and still fires is sent now */
            alerts_remute(alerts, sil, now);
            rc = 0;
        }
        free(v);
    } else if (strcmp(cmd, "silence-update") == 0) {
        /* POST /api/v2/silences with an id: in place, or replaced by a new one */
        const char *old = json_string_value(json_object_get(j, "id"));
        struct buf id = BUF_INIT;
        if (!old) {
            buf_puts(&err, "id: a silence id expected");
        } else if (silences_update_json(sil, old, json_object_get(j, "silence"), now, &id, &err) ==
                   0) {
            data = json_pack("{s:s}", "silenceID", buf_str(&id));
            alerts_remute(alerts, sil, now);
            rc = 0;
        }
        buf_free(&id);
    } else if (strcmp(cmd, "alert-add") == 0) {
        /* POST /api/v2/alerts: routed as a rule's alert, to the executors */
        if (apiv2_receive_alerts(srv, json_object_get(j, "alerts"), &err) == 0) {
            rc = 0;
        }
    } else {
        buf_printf(&err,
                   "unknown command \"%s\" (alerts, alerts-resolve, alert-add, silence-add, "
                   "silence-list, silence-query, silence-expire, silence-update)",
                   cmd);
    }
    if (rc == 0) {
        /* data: null for commands that only act */
        jsonval_put_new(answer, json_pack("{s:s, s:o}", "status", "success", "data",
                                          data ? data : json_null()));
        buf_putc(answer, '\n');
    } else {
        json_decref(data);
        error_answer(answer, buf_str(&err));
    }
    labelmatch_free(query);
    json_decref(j);
    buf_free(&err);
    return rc;
}

static void
answer(struct conn *c)
{
    struct control *ctl = c->ctl;

    bool overlong = c->len >= MAX_REQUEST - 1 && !memchr(c->req, '\n', c->len);

    c->req[c->len] = '\0';
    c->req[strcspn(c->req, "\r\n")] = '\0';
    uv_read_stop((uv_stream_t *)&c->pipe);
    if (overlong) {
        error_answer(&c->answer, "request longer than 16 KiB");
    } else if (c->req[0] == '{') {
        control_request_json(ctl->srv, c->req, strlen(c->req), &c->answer);
    } else if (strcmp(c->req, "stats") == 0) {
        server_metrics(ctl->srv, &c->answer);
        apiv2_metrics(&c->answer);
    } else if (strcmp(c->req, "contexts") == 0) {
        server_contexts_json(ctl->srv, &c->answer);
    } else if (strcmp(c->req, "cluster") == 0) {
        json_t *j = server_cluster_json(ctl->srv);
        char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
        if (text)
            buf_printf(&c->answer, "%s\n", text);
        else
            error_answer(&c->answer, "not a node of a cluster (no <cluster>)");
        free(text);
        json_decref(j);
    } else if (strcmp(c->req, "reload") == 0) {
        /* the executor process may have spools to replay: the client waits on us, not stalling */
        uv_timer_stop(&c->timer);
        c->handles++; /* held until reloaded() runs */
        ctl->reload(ctl->arg, reloaded, c);
        return;
    } else if (strncmp(c->req, "queue ", 6) == 0 && server_proxy(ctl->srv)) {
        /* privilege separation: the executor process holds the queues and answers late */
        c->handles++; /* held until queue_answered() runs */
        ipcproxy_control(server_proxy(ctl->srv), c->req + 6, queue_answered, c);
        return;
    } else if (strncmp(c->req, "queue ", 6) == 0) {
        queuectl_command(ctl->srv, c->req + 6, &c->answer);
    } else if (strcmp(c->req, "save") == 0) {
        /* a big state takes a while to write: the client waits on us, it is not stalling */
        uv_timer_stop(&c->timer);
        c->handles++; /* held by the save until saved() runs */
        server_save_state(ctl->srv, saved, c);
        return;
    } else {
        buf_printf(&c->answer,
                   "unknown command '%s' (stats, contexts, cluster, reload, save, queue)\n",
                   c->req);
    }
    send_answer(c);
}

static void
alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct conn *c = h->data;

    (void)suggested;
    *b = uv_buf_init(c->req + c->len, (unsigned)(MAX_REQUEST - 1 - c->len));
}

static void
read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct conn *c = s->data;

    (void)b;
    if (n < 0) {
        if (n == UV_EOF && c->len) {
            answer(c);
            return;
        }
        conn_close(c);
        return;
    }
    c->len += (size_t)n;
    if (memchr(c->req, '\n', c->len) || c->len >= MAX_REQUEST - 1) answer(c);
}

static void
on_timeout(uv_timer_t *t)
{
    struct conn *c = t->data;
    struct server_endpoint_stats *st = server_endpoint_stats(c->ctl->srv, SERVER_EP_CONTROL);

    st->timed_out++;
    if (log_allowed(c->ctl))
        log_msg(LOG_WARNING,
                "control: a connection was not done within %.1f s, closed (%llu so far)",
                server_conf(c->ctl->srv)->control_timeout, (unsigned long long)st->timed_out);
    conn_close(c);
}

static void
on_connect(uv_stream_t *l, int status)
{
    struct control *ctl = l->data;
    struct conn *c;
    struct server_endpoint_stats *st = server_endpoint_stats(ctl->srv, SERVER_EP_CONTROL);
    double timeout = server_conf(ctl->srv)->control_timeout;
    uint64_t ms = timeout > 0 ? (uint64_t)(timeout * 1000.0) : 10000;

    if (status < 0) {
        /* EMFILE and the like: libuv has shed the connection */
        st->accept_errors++;
        if (log_allowed(ctl))
            log_msg(LOG_WARNING, "control: cannot accept: %s", uv_strerror(status));
        return;
    }
    if (ctl->nconns >= CONTROL_MAX_CONNS && ctl->head) {
        st->evicted++;
        if (log_allowed(ctl))
            log_msg(LOG_WARNING,
                    "control: %d connections open, closing the oldest for a new one (%llu so far)",
                    CONTROL_MAX_CONNS, (unsigned long long)st->evicted);
        conn_close(ctl->head);
    }
    c = xcalloc(1, sizeof(*c));
    c->ctl = ctl;
    uv_pipe_init(l->loop, &c->pipe, 0);
    uv_timer_init(l->loop, &c->timer);
    c->pipe.data = c->timer.data = c;
    c->handles = 2;
    c->prev = ctl->tail;
    if (ctl->tail)
        ctl->tail->next = c;
    else
        ctl->head = c;
    ctl->tail = c;
    c->listed = true;
    ctl->nconns++;
    if (uv_accept(l, (uv_stream_t *)&c->pipe) < 0 ||
        uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb) < 0) {
        conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_timeout, ms ? ms : 1, 0);
}

static void control_closed(uv_handle_t *h);

/*
 * Gives the socket just bound (never a link followed) to gid, when creating
 * it with that group did not (no CAP_SETGID): lchown, which a member of the
 * group may do; else it is made its owner's only again.
 */
static int
control_share(const char *path, gid_t gid, struct buf *err)
{
    struct stat st;

    if (lstat(path, &st) < 0) {
        buf_printf(err, "control socket %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (st.st_gid == gid) return 0;
    if (lchown(path, (uid_t)-1, gid) == 0) return 0;
    buf_printf(err,
               "control socket %s: cannot give it to group %ld: %s (it stays its owner's only)\n",
               path, (long)gid, strerror(errno));
    chmod(path, 0600);
    return -1;
}

struct control *
control_open(uv_loop_t *loop, const char *path, gid_t gid, mode_t mode, struct server *srv,
             control_reload_fn reload, void *arg, struct buf *err)
{
    struct control *ctl = xcalloc(1, sizeof(*ctl));
    struct stat st;
    mode_t old;
    int rc, fsgid = -1;

    ctl->srv = srv;
    ctl->reload = reload;
    ctl->arg = arg;
    ctl->path = xstrdup(path);
    /* a stale socket from a previous run is replaced; anything else is left alone */
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path);
    uv_pipe_init(loop, &ctl->listener, 0);
    ctl->listener.data = ctl;
    /*
     * Created with its mode (0777 less the umask) and group: a new file's
     * group is the creating thread's file-system gid, which setfsgid changes
     * for this thread alone, allowed with CAP_SETGID (root, and the packaged
     * unit's engine process at start).  Not chown: the unit's system call
     * filter refuses it.
     */
    old = umask(mode == 0660 ? 0117 : 0177);
    if (gid != (gid_t)-1) fsgid = setfsgid(gid);
    rc = uv_pipe_bind(&ctl->listener, path);
    if (fsgid != -1) setfsgid((gid_t)fsgid);
    umask(old);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&ctl->listener, 16, on_connect);
    if (rc < 0) {
        buf_printf(err, "control socket %s: %s\n", path, uv_strerror(rc));
        uv_close((uv_handle_t *)&ctl->listener, control_closed);
        return NULL;
    }
    if (gid != (gid_t)-1) control_share(path, gid, err);
    return ctl;
}

static void
control_closed(uv_handle_t *h)
{
    struct control *ctl = h->data;

    free(ctl->path);
    free(ctl);
}

void
control_close(struct control *ctl)
{
    if (!ctl) return;
    while (ctl->head) conn_close(ctl->head);
    if (ctl->path) unlink(ctl->path);
    uv_close((uv_handle_t *)&ctl->listener, control_closed);
}
