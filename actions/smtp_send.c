/*
 * smtp_send: the smtp executor's transport.  Each message is one SMTP
 * session (connect, EHLO, STARTTLS, AUTH, MAIL, RCPT, DATA, QUIT) run by
 * libcurl's multi interface on a libuv loop: curl tells us which sockets to
 * watch (CURLMOPT_SOCKETFUNCTION, one uv_poll_t each) and when to wake it
 * (CURLMOPT_TIMERFUNCTION, one uv_timer_t), and we hand it readiness with
 * curl_multi_socket_action.
 *
 * That loop is not corrald's: it runs on a thread of its own.  libcurl
 * (7.88 at least; curl issue #8555, "More non-blocking" in its TODO) waits
 * for the reply to the end of DATA and for the reply to QUIT in a blocking
 * loop inside curl_multi_socket_action, however the multi interface is
 * driven: a server that takes its time there would stall everything corrald
 * does, up to the response timeout.  On its own thread it only delays other
 * mail.  The main thread composes the messages; the mail thread only moves
 * bytes.  They meet in two queues under a mutex, each side woken by a
 * uv_async_t.
 *
 * At most `connections` sessions run at once; further messages wait in a
 * FIFO.  Connections are not kept for reuse: alert mail is rare, and an idle
 * connection would only be dropped by the server and hold a socket here.
 */
#include "actions/smtp_int.h"
#include "engine/xalloc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

/* Longest server reply kept for the reason of a failure. */
#define REPLY_MAX 512

struct sock {
    uv_poll_t poll;
    curl_socket_t fd;
    struct smtp_tx *t;
    struct sock *prev, *next;
};

struct job {
    struct job *next;
    /* the mail thread's, while it runs the session */
    CURL *easy;
    struct buf msg;
    size_t off;
    struct buf reply; /* the server's last reply, lines joined */
    bool reply_ended; /* its last line came: the next line starts a new reply */
    char err[CURL_ERROR_SIZE];
    /* the outcome, for the main thread */
    enum deliver_result r;
    char *reason;
    smtp_tx_done_fn done;
    void *arg;
};

struct smtp_tx {
    /* settings: read-only once the thread runs */
    char *url, *ca_file, *user, *password, *mail_from;
    struct curl_slist *rcpts;
    enum smtp_tls tls;
    bool verify;
    long timeout_ms;
    unsigned connections;

    /* the main thread's */
    uv_loop_t *loop;
    uv_async_t results; /* the mail thread has finished sessions, or itself */
    bool started, broken, closing;
    void (*closed)(void *);
    void *closed_arg;

    /* shared, under mu */
    uv_mutex_t mu;
    struct job *inbox, **inbox_tail;   /* to send */
    struct job *outbox, **outbox_tail; /* sent, or failed */
    bool stop;                         /* the main thread wants the mail thread to end */
    bool finished;                     /* it has */

    /* the mail thread's */
    uv_thread_t thread;
    uv_loop_t wloop;
    uv_async_t wake; /* new messages, or stop */
    CURLM *multi;
    uv_timer_t timer;
    struct sock *socks;
    struct job *waiting, **waiting_tail, *active;
    size_t nactive;
    bool stopping;
};

static void check_done(struct smtp_tx *t);
static void worker_finish(struct smtp_tx *t);
static void worker_stop(struct smtp_tx *t);

struct smtp_tx *
smtp_tx_new(uv_loop_t *loop, const struct smtp_tx_conf *c)
{
    struct smtp_tx *t = xcalloc(1, sizeof(*t));
    struct buf b = BUF_INIT;
    size_t i;

    t->loop = loop;
    t->url = xstrdup(c->url);
    t->ca_file = c->ca_file ? xstrdup(c->ca_file) : NULL;
    t->user = c->user ? xstrdup(c->user) : NULL;
    t->password = c->password ? xstrdup(c->password) : NULL;
    buf_printf(&b, "<%s>", c->mail_from);
    t->mail_from = xstrdup(buf_str(&b));
    for (i = 0; i < c->nrcpts; i++) {
        struct curl_slist *l;
        buf_reset(&b);
        buf_printf(&b, "<%s>", c->rcpts[i]);
        l = curl_slist_append(t->rcpts, buf_str(&b));
        if (!l) abort(); /* as xmalloc does when memory runs out */
        t->rcpts = l;
    }
    buf_free(&b);
    t->tls = c->tls;
    t->verify = c->verify;
    t->timeout_ms = c->timeout_ms;
    t->connections = c->connections ? c->connections : 1;
    t->inbox_tail = &t->inbox;
    t->outbox_tail = &t->outbox;
    t->waiting_tail = &t->waiting;
    return t;
}

enum deliver_result
smtp_classify(int curl_code, long reply_code)
{
    switch ((CURLcode)curl_code) {
    case CURLE_OK: return DELIVER_OK;
    /*
     * No TLS, a bad certificate or refused credentials say nothing about the
     * alert: it can go through once the server or the configuration is
     * fixed, even when the server put it as a 5xx (535 for AUTH, 554 for
     * STARTTLS).
     */
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_LOGIN_DENIED: return DELIVER_RETRY;
    default:
        /* curl stops at the first reply it does not like: that reply decides */
        return reply_code >= 500 && reply_code <= 599 ? DELIVER_FAIL : DELIVER_RETRY;
    }
}

static void
free_settings(struct smtp_tx *t)
{
    free(t->url);
    free(t->ca_file);
    free(t->user);
    if (t->password) {
        explicit_bzero(t->password, strlen(t->password));
        free(t->password);
    }
    free(t->mail_from);
    curl_slist_free_all(t->rcpts);
}

static void
job_free(struct job *j)
{
    if (j->easy) curl_easy_cleanup(j->easy);
    buf_free(&j->msg);
    buf_free(&j->reply);
    free(j->reason);
    free(j);
}

/* ==== the mail thread ==== */

static size_t
read_cb(char *out, size_t size, size_t nitems, void *arg)
{
    struct job *j = arg;
    size_t n = size * nitems, left = j->msg.len - j->off;

    if (n > left) n = left;
    memcpy(out, j->msg.p + j->off, n);
    j->off += n;
    return n;
}

/* Curl hands every line the server sends to the header callback: keep the last reply. */
static size_t
reply_cb(char *line, size_t size, size_t nitems, void *arg)
{
    struct job *j = arg;
    size_t n = size * nitems, i, len = n;

    while (len && (line[len - 1] == '\r' || line[len - 1] == '\n')) len--;
    /* the goodbye to QUIT would hide the reply that mattered */
    if (len >= 3 && memcmp(line, "221", 3) == 0) return n;
    if (j->reply_ended) {
        buf_reset(&j->reply);
        j->reply_ended = false;
    }
    if (j->reply.len) buf_putc(&j->reply, ' ');
    for (i = 0; i < len && j->reply.len < REPLY_MAX; i++) {
        unsigned char c = (unsigned char)line[i];
        buf_putc(&j->reply, c < 0x20 || c == 0x7f ? ' ' : (char)c); /* it goes to logs */
    }
    /* "250-..." continues a reply, "250 ..." ends it */
    if (len < 4 || line[3] != '-') j->reply_ended = true;
    return n;
}

static void
sock_closed(uv_handle_t *h)
{
    free(h->data);
}

static void
sock_drop(struct smtp_tx *t, struct sock *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        t->socks = s->next;
    if (s->next) s->next->prev = s->prev;
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, sock_closed);
}

static void
on_poll(uv_poll_t *p, int status, int events)
{
    struct sock *s = p->data;
    struct smtp_tx *t = s->t;
    int flags = 0, running;

    if (status < 0) flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(t->multi, s->fd, flags, &running);
    check_done(t);
}

static int
socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct smtp_tx *t = userp;
    struct sock *s = socketp;
    int events = 0;

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            curl_multi_assign(t->multi, fd, NULL);
            sock_drop(t, s);
        }
        return 0;
    }
    if (!s) {
        s = xcalloc(1, sizeof(*s));
        s->fd = fd;
        s->t = t;
        if (uv_poll_init_socket(&t->wloop, &s->poll, fd) != 0) {
            free(s);
            return -1; /* curl fails the transfer */
        }
        s->poll.data = s;
        s->next = t->socks;
        if (t->socks) t->socks->prev = s;
        t->socks = s;
        curl_multi_assign(t->multi, fd, s);
    }
    if (what & CURL_POLL_IN) events |= UV_READABLE;
    if (what & CURL_POLL_OUT) events |= UV_WRITABLE;
    uv_poll_start(&s->poll, events, on_poll);
    return 0;
}

static void
on_timer(uv_timer_t *tm)
{
    struct smtp_tx *t = tm->data;
    int running;

    curl_multi_socket_action(t->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(t);
}

/* Curl may not be called back into from here: a timeout of 0 runs on the next loop turn. */
static int
timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct smtp_tx *t = userp;

    (void)multi;
    if (timeout_ms < 0)
        uv_timer_stop(&t->timer);
    else
        uv_timer_start(&t->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

/* Hands a finished session to the main thread. */
static void
job_report(struct smtp_tx *t, struct job *j, CURLcode rc, const char *fallback)
{
    long code = 0;

    if (j->easy) {
        curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(j->easy);
        j->easy = NULL;
    }
    j->r = smtp_classify(rc, code);
    if (j->r != DELIVER_OK) {
        struct buf reason = BUF_INIT;
        const char *what = j->err[0] ? j->err : fallback ? fallback : curl_easy_strerror(rc);
        /* the server's own words first: "550 5.1.1 <x@example.com>: User unknown" */
        if (code >= 400 && j->reply.len)
            buf_printf(&reason, "%s (%s)", buf_str(&j->reply), what);
        else
            buf_puts(&reason, what);
        j->reason = xstrdup(buf_str(&reason));
        buf_free(&reason);
    }
    buf_free(&j->msg);
    buf_free(&j->reply);
    j->next = NULL;
    uv_mutex_lock(&t->mu);
    *t->outbox_tail = j;
    t->outbox_tail = &j->next;
    uv_mutex_unlock(&t->mu);
    uv_async_send(&t->results);
}

static CURL *
job_easy(struct smtp_tx *t, struct job *j)
{
    CURL *e = curl_easy_init();

    if (!e) return NULL;
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_SMTP | CURLPROTO_SMTPS));
#endif
    curl_easy_setopt(e, CURLOPT_URL, t->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, j);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->err);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* no *_proxy from the environment for mail */
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, t->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, t->timeout_ms < 10000 ? t->timeout_ms : 10000L);
    /* bounds curl's blocking waits for the end-of-DATA and QUIT replies too */
    curl_easy_setopt(e, CURLOPT_SERVER_RESPONSE_TIMEOUT, (t->timeout_ms + 999) / 1000);
    curl_easy_setopt(e, CURLOPT_USE_SSL,
                     t->tls == SMTP_TLS_REQUIRED   ? (long)CURLUSESSL_ALL
                     : t->tls == SMTP_TLS_OPTIONAL ? (long)CURLUSESSL_TRY
                                                   : (long)CURLUSESSL_NONE);
    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (t->ca_file) curl_easy_setopt(e, CURLOPT_CAINFO, t->ca_file);
    if (!t->verify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (t->user) {
        curl_easy_setopt(e, CURLOPT_USERNAME, t->user);
        curl_easy_setopt(e, CURLOPT_PASSWORD, t->password);
    }
    curl_easy_setopt(e, CURLOPT_MAIL_FROM, t->mail_from);
    curl_easy_setopt(e, CURLOPT_MAIL_RCPT, t->rcpts);
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(e, CURLOPT_READDATA, j);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)j->msg.len);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, reply_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
    return e;
}

static bool
stop_requested(struct smtp_tx *t)
{
    bool stop;

    uv_mutex_lock(&t->mu);
    stop = t->stop;
    uv_mutex_unlock(&t->mu);
    return stop;
}

/* Starts waiting messages while connections are free. */
static void
start_waiting(struct smtp_tx *t)
{
    while (!t->stopping && t->waiting && t->nactive < t->connections) {
        struct job *j = t->waiting;

        /* a stop not yet seen by on_wake (timers run before it) still means stop */
        if (stop_requested(t)) {
            worker_stop(t);
            return;
        }
        t->waiting = j->next;
        if (!t->waiting) t->waiting_tail = &t->waiting;
        j->next = NULL;
        if (!(j->easy = job_easy(t, j))) {
            job_report(t, j, CURLE_OUT_OF_MEMORY, "cannot set up a curl transfer");
            continue;
        }
        if (curl_multi_add_handle(t->multi, j->easy) != CURLM_OK) {
            job_report(t, j, CURLE_FAILED_INIT, "cannot start a curl transfer");
            continue;
        }
        j->next = t->active;
        t->active = j;
        t->nactive++;
    }
}

static void
check_done(struct smtp_tx *t)
{
    CURLMsg *m;
    int left;

    while (t->multi && (m = curl_multi_info_read(t->multi, &left))) {
        struct job *j, **pp;
        CURL *e = m->easy_handle;
        CURLcode rc = m->data.result;

        if (m->msg != CURLMSG_DONE) continue;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&j);
        curl_multi_remove_handle(t->multi, e);
        for (pp = &t->active; *pp && *pp != j; pp = &(*pp)->next) continue;
        if (*pp) *pp = j->next;
        t->nactive--;
        job_report(t, j, rc, NULL);
    }
    if (t->stopping && !t->nactive && t->multi)
        worker_finish(t);
    else
        start_waiting(t);
}

/* Closes the mail thread's handles, which lets its loop end. */
static void
worker_finish(struct smtp_tx *t)
{
    curl_multi_cleanup(t->multi);
    t->multi = NULL;
    while (t->socks) sock_drop(t, t->socks); /* any curl did not report removed */
    uv_timer_stop(&t->timer);
    uv_close((uv_handle_t *)&t->timer, NULL);
    uv_close((uv_handle_t *)&t->wake, NULL);
}

/*
 * Messages not started are dropped; sessions under way are left to finish
 * (or time out), because curl 7.88 cannot abandon an SMTP upload cleanly:
 * removing the handle mid-session runs its "done" step, which ends DATA
 * with the dot, so the server would accept a truncated message.
 */
static void
worker_stop(struct smtp_tx *t)
{
    struct job *j;

    t->stopping = true;
    while ((j = t->waiting)) {
        t->waiting = j->next;
        job_free(j);
    }
    t->waiting_tail = &t->waiting;
    if (!t->nactive) worker_finish(t);
}

static void
on_wake(uv_async_t *a)
{
    struct smtp_tx *t = a->data;
    struct job *list;
    bool stop;

    if (t->stopping) return; /* the main thread sends nothing after stop */
    uv_mutex_lock(&t->mu);
    list = t->inbox;
    t->inbox = NULL;
    t->inbox_tail = &t->inbox;
    stop = t->stop;
    uv_mutex_unlock(&t->mu);
    if (list) {
        *t->waiting_tail = list;
        while (list->next) list = list->next;
        t->waiting_tail = &list->next;
    }
    if (stop)
        worker_stop(t);
    else
        start_waiting(t);
}

static void
worker_main(void *arg)
{
    struct smtp_tx *t = arg;

    uv_run(&t->wloop, UV_RUN_DEFAULT); /* until worker_stop closed every handle */
    uv_loop_close(&t->wloop);
    uv_mutex_lock(&t->mu);
    t->finished = true;
    uv_mutex_unlock(&t->mu);
    uv_async_send(&t->results); /* the last thing this thread does: the main thread joins it */
}

/* ==== the main thread ==== */

static void
results_closed(uv_handle_t *h)
{
    struct smtp_tx *t = h->data;
    void (*closed)(void *) = t->closed;
    void *arg = t->closed_arg;
    struct job *j;

    while ((j = t->inbox)) {
        t->inbox = j->next;
        job_free(j);
    }
    while ((j = t->outbox)) {
        t->outbox = j->next;
        job_free(j);
    }
    uv_mutex_destroy(&t->mu);
    free_settings(t);
    free(t);
    if (closed) closed(arg);
}

static void
on_results(uv_async_t *a)
{
    struct smtp_tx *t = a->data;
    struct job *list, *j;
    bool finished;

    uv_mutex_lock(&t->mu);
    list = t->outbox;
    t->outbox = NULL;
    t->outbox_tail = &t->outbox;
    finished = t->finished;
    uv_mutex_unlock(&t->mu);
    for (; list; list = j) {
        j = list->next;
        /* done() may send more: that only queues, nothing here is reentered */
        list->done(list->arg, list->r, list->reason);
        job_free(list);
    }
    if (finished) {
        uv_thread_join(&t->thread);
        uv_close((uv_handle_t *)&t->results, results_closed);
    }
}

static void
curl_init_once(void)
{
    static bool done;

    /* not thread-safe in every libcurl: done here, before any mail thread runs */
    if (!done) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        done = true;
    }
}

static bool
start(struct smtp_tx *t)
{
    sigset_t all, old;
    bool failed;

    curl_init_once();
    if (!(t->multi = curl_multi_init())) return false;
    curl_multi_setopt(t->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(t->multi, CURLMOPT_SOCKETDATA, t);
    curl_multi_setopt(t->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(t->multi, CURLMOPT_TIMERDATA, t);
    if (uv_loop_init(&t->wloop) != 0) {
        curl_multi_cleanup(t->multi);
        t->multi = NULL;
        return false;
    }
    uv_async_init(&t->wloop, &t->wake, on_wake);
    t->wake.data = t;
    uv_timer_init(&t->wloop, &t->timer);
    t->timer.data = t;
    uv_mutex_init(&t->mu);
    /* signals are the main thread's business: the mail thread starts with all blocked */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    failed = uv_thread_create(&t->thread, worker_main, t) != 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (failed) {
        uv_close((uv_handle_t *)&t->wake, NULL);
        uv_close((uv_handle_t *)&t->timer, NULL);
        uv_run(&t->wloop, UV_RUN_DEFAULT);
        uv_loop_close(&t->wloop);
        uv_mutex_destroy(&t->mu);
        curl_multi_cleanup(t->multi);
        t->multi = NULL;
        return false;
    }
    /*
     * The thread touches results only after a message or stop, which come
     * through the mutex after this.
     */
    uv_async_init(t->loop, &t->results, on_results);
    t->results.data = t;
    t->started = true;
    return true;
}

void
smtp_tx_send(struct smtp_tx *t, struct buf *msg, smtp_tx_done_fn done, void *arg)
{
    struct job *j;

    if (!t->started && !t->broken && !start(t)) t->broken = true;
    if (!t->started || t->closing) {
        buf_free(msg);
        done(arg, DELIVER_RETRY, t->closing ? "closing" : "cannot start the mail thread");
        return;
    }
    j = xcalloc(1, sizeof(*j));
    j->msg = *msg;
    buf_init(msg);
    j->done = done;
    j->arg = arg;
    uv_mutex_lock(&t->mu);
    *t->inbox_tail = j;
    t->inbox_tail = &j->next;
    uv_mutex_unlock(&t->mu);
    uv_async_send(&t->wake);
}

void
smtp_tx_close(struct smtp_tx *t, void (*closed)(void *), void *arg)
{
    t->closing = true;
    t->closed = closed;
    t->closed_arg = arg;
    if (!t->started) { /* no thread, no handle */
        free_settings(t);
        free(t);
        if (closed) closed(arg);
        return;
    }
    uv_mutex_lock(&t->mu);
    t->stop = true;
    uv_mutex_unlock(&t->mu);
    uv_async_send(&t->wake);
}
