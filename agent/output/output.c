/*
 * output: stdout, file and forward outputs of corrald, on the server's libuv
 * loop.  None of them ever blocks the loop:
 *
 *   stdout   a pipe or tty is a libuv stream (uv_write); a regular file or
 *            anything else is written through the threadpool (uv_fs_write)
 *   file     opened O_APPEND|O_CREAT 0640, written through the threadpool,
 *            reopened by output_reopen() for log rotation; as root, never
 *            through a symbolic link or into a file with other names
 *            (file_flags, file_refused)
 *   forward  UDP: one datagram per message, uv_udp_try_send;
 *            TCP: connects, and reconnects with a 1 s..30 s backoff when the
 *            peer is down or goes away, re-resolving the name every time;
 *            TLS: TCP, then a handshake (tls.c, memory BIOs: the loop never
 *            waits for it) within CONNECT_TIMEOUT_MS; the server's
 *            certificate is verified by default.  A batch is encrypted
 *            whole into `cipher` and written in one uv_write; a failed
 *            handshake is counted by reason and retried with the backoff
 *
 * Every output keeps two buffers: `pend`, where output_write appends framed
 * messages, and `fly`, the batch being written.  When the sink is free the
 * two are swapped and the whole batch goes out in one write, so a burst costs
 * one system call per batch, not per line, and the steady state allocates
 * nothing.  The queue (pend + fly) holds at most conf_output.queue messages
 * and QUEUE_MAX_BYTES bytes; past either bound new messages are dropped and
 * counted, and writing resumes as soon as the sink drains.  Messages of
 * stream inputs are not dropped at the message bound (output_write_keep):
 * the server pauses those inputs once the queue is full (output_full) and
 * resumes them below half of it (output_low), so the queue exceeds its size
 * by at most what one read brought; the byte bound stays absolute.
 *
 * Generated messages (rule actions, context timeouts, absence reports) have
 * a lane of their own: they are not dropped at the message bound either,
 * and may use GENERATED_MAX_BYTES more than the byte bound.  They come in
 * bursts no input can pause (thousands of contexts timing out in one loop
 * turn, every watched host reported absent at once), and they are the
 * alerts: a healthy output must write them all.  Meanwhile output_full()
 * holds the stream inputs back, so the burst drains first.  What does not
 * fit even there (a stuck output) is dropped, counted apart
 * (generated_dropped) and logged.
 *
 * Framing: files and stdout get one message per line (syslog lines have the
 * CR and LF inside MESSAGE turned into spaces, so that a line is a message);
 * TCP gets RFC 6587 octet counting ("LEN SP MSG") for the syslog format, so
 * multi-line messages arrive whole, and newline-terminated lines for JSON
 * (JSON text never holds a raw newline); UDP gets one datagram per message.
 *
 * Closing flushes the queue, giving up after CLOSE_TIMEOUT_MS (a peer that is
 * down, a pipe nobody reads): what is left is counted as dropped.  The memory
 * is freed once libuv has returned every handle and request.
 */
#include "agent/output/output.h"
#include "engine/durable.h"
#include "engine/json.h"
#include "engine/log.h"
#include "engine/macros.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

/* Byte bound of a queue, beside the configured message bound. */
#define QUEUE_MAX_BYTES (16u * 1024 * 1024)
/* What generated messages may queue beyond it: 100,000 absence reports take about 40 MiB. */
#define GENERATED_MAX_BYTES (64u * 1024 * 1024)
/* A batch buffer a burst grew past this is given back once written. */
#define KEEP_BUF_BYTES   (1024u * 1024)
#define CLOSE_TIMEOUT_MS 5000
#define BACKOFF_MIN_MS   1000
#define BACKOFF_MAX_MS   30000
/* A peer that does not answer at all is given up on after this, not the kernel's minutes. */
#define CONNECT_TIMEOUT_MS 10000
/* The same write error is logged at most this often. */
#define ERROR_LOG_MS 60000
/* The largest UDP payload over IPv4; longer messages are cut to it. */
#define UDP_MAX_DATAGRAM 65507

enum sink {
    SINK_NONE,   /* nothing to write to yet: a forward output before it connects */
    SINK_STREAM, /* a libuv stream: stdout pipe, tty or socket, a TCP connection */
    SINK_FS,     /* a file descriptor written through the threadpool */
    SINK_UDP,
};

enum framing {
    FR_LINE,  /* MSG LF */
    FR_OCTET, /* LEN SP MSG */
    FR_DGRAM, /* queued as a 4-byte length and MSG, sent as one datagram */
};

enum fwd_state { FWD_IDLE, FWD_RESOLVING, FWD_CONNECTING, FWD_HANDSHAKE, FWD_UP, FWD_WAITING };

struct output {
    uv_loop_t *loop;
    char *name;
    enum conf_output_type type;
    enum conf_format format;
    enum conf_select select;
    enum framing framing;
    bool tcp;
    bool tls; /* forward over TLS */
    size_t max_msgs;
    struct output_stats stats;

    struct buf line;     /* formatting scratch, reused for every message */
    struct buf pend;     /* framed messages waiting for the sink */
    size_t npend, gpend; /* messages in it, generated ones among them */
    struct buf fly;      /* the batch being written */
    size_t nfly, gfly, flyoff;
    bool busy; /* a write (or a file reopen) is in progress */

    enum sink sink;
    union {
        uv_handle_t h;
        uv_stream_t s;
        uv_pipe_t pipe;
        uv_tty_t tty;
        uv_tcp_t tcp;
        uv_udp_t udp;
    } u;
    bool handle_open; /* u holds a handle not yet handed to uv_close */
    uv_write_t wreq;
    uv_fs_t fsreq;
    uv_file fd;
    bool own_fd;       /* fd is ours to close (not the process's stdout) */
    bool broken;       /* stdout's reader is gone: everything is dropped */
    bool drop_logged;  /* the queue-full drops since it was last down to half are logged */
    bool gen_logged;   /* likewise, for generated messages */
    int last_err;      /* the last write error logged */
    uint64_t err_ms;   /* when it was logged */
    bool err_reported; /* an error was logged since the sink last worked */

    /* file */
    char *path;
    bool reopen_wanted;

    /* forward */
    char *host, *to;
    char port[8];
    enum fwd_state state;
    uv_getaddrinfo_t gai;
    struct addrinfo *ai, *ai_next; /* addresses of the host, the next one to try */
    uv_connect_t creq;
    struct sockaddr_storage addr; /* UDP destination */
    uint64_t backoff;
    int conn_err;    /* why the last attempt failed */
    bool was_up;     /* has been connected: the next connection is logged as "again" */
    bool down_noted; /* this outage has been logged */
    char rbuf[512];  /* what a peer sends us is read and ignored */

    /* TLS */
    struct tls_ctx *tls_ctx, *tls_next; /* the next: loaded by a reload, not yet in use */
    struct tls_conn *tconn;             /* the connection's TLS engine */
    struct buf cipher;                  /* the batch in flight, encrypted */
    uint64_t tls_log_ms;                /* when a failed handshake was last logged */

    /* closing */
    uv_timer_t retry, deadline;
    bool closing, tearing_down;
    unsigned pending; /* handle closes and requests libuv still owes a callback for */
    void (*done)(void *arg);
    void *done_arg;
};

static void kick(struct output *o);
static void progress(struct output *o);
static void fwd_start(struct output *o);
static void fwd_lost(struct output *o, int err, const char *what);
static void fwd_drop(struct output *o, int err);

/* ---- formatting ---- */

const char *
output_local_hostname(void)
{
    static char name[256];

    if (!name[0] && (gethostname(name, sizeof(name) - 1) < 0 || !name[0]))
        strcpy(name, "localhost");
    return name;
}

/*
 * Appends a header field, replacing the bytes that would end it early for a
 * syslog parser (space, control bytes, and the characters of `stop`).
 */
static void
put_token(struct buf *out, const char *v, size_t len, const char *stop)
{
    size_t i, start = out->len;

    buf_append(out, v, len);
    for (i = start; i < out->len; i++) {
        unsigned char c = (unsigned char)out->p[i];
        if (c <= 0x20 || c == 0x7f || strchr(stop, c)) out->p[i] = '_';
    }
}

/*
 * RFC 3164: <PRI>Mmm dd hh:mm:ss HOST PROGRAM[PID]: MESSAGE.  HOST falls back
 * to this host's name; a generated message without PROGRAM is "corral"'s; an
 * input message without PROGRAM has no tag at all, as syslog-ng writes it.
 * one_line: CR and LF in MESSAGE become spaces.
 */
static void
format_syslog(const struct msg *m, bool one_line, struct buf *out)
{
    const struct msg_time *t = msg_stamp(m);
    struct msg_time now;
    const char *v;
    size_t len, i, start;
    int pri = msg_pri(m);

    if (pri < 0 || pri > 191) pri = MSG_DEFAULT_PRI;
    buf_printf(out, "<%d>", pri);
    if (t->sec == 0 && t->usec == 0) t = msg_recvd(m);
    if (t->sec == 0 && t->usec == 0) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        now.sec = tv.tv_sec;
        now.usec = (int32_t)tv.tv_usec;
        now.gmtoff = 0;
        t = &now;
    }
    macro_format_bsd(t, out);
    buf_putc(out, ' ');
    v = msg_get(m, NV_HOST, &len);
    if (v && len)
        put_token(out, v, len, "");
    else
        buf_puts(out, output_local_hostname());
    buf_putc(out, ' ');
    v = msg_get(m, NV_PROGRAM, &len);
    if ((!v || !len) && (msg_flags(m) & MSG_F_GENERATED)) v = "corral", len = 6;
    if (v && len) {
        put_token(out, v, len, "[:");
        v = msg_get(m, NV_PID, &len);
        if (v && len) {
            buf_putc(out, '[');
            put_token(out, v, len, "]");
            buf_putc(out, ']');
        }
        buf_puts(out, ": ");
    }
    v = msg_get(m, NV_MESSAGE, &len);
    if (!v) return;
    start = out->len;
    buf_append(out, v, len);
    if (one_line)
        for (i = start; i < out->len; i++)
            if (out->p[i] == '\n' || out->p[i] == '\r') out->p[i] = ' ';
}

void
output_format(const struct msg *m, enum conf_format f, struct buf *out)
{
    if (f == CONF_FORMAT_SYSLOG)
        format_syslog(m, true, out);
    else
        json_format_msg(m, out);
}

/* ---- selection ---- */

/*
 * classified: input messages a rule matched (.classifier.class set and not
 * "unknown"); generated: messages rule actions or absence detection produced.
 */
static bool
selected(const struct output *o, const struct msg *m)
{
    const char *c;
    size_t len;

    switch (o->select) {
    case CONF_SELECT_ALL: return true;
    case CONF_SELECT_GENERATED: return (msg_flags(m) & MSG_F_GENERATED) != 0;
    case CONF_SELECT_CLASSIFIED:
        if (msg_flags(m) & MSG_F_GENERATED) return false;
        c = msg_get(m, NV_CLASS, &len);
        return c && len && !(len == 7 && memcmp(c, "unknown", 7) == 0);
    }
    return false;
}

/* ---- the queue ---- */

static void
set_queued(struct output *o)
{
    o->stats.queued = o->npend + o->nfly;
}

static bool
drained(const struct output *o)
{
    return o->npend == 0 && !o->busy;
}

/* Counts the batch in flight as dropped (the caller ends it). */
static void
drop_batch(struct output *o)
{
    o->stats.dropped += o->nfly;
    o->stats.generated_dropped += o->gfly;
}

/* Drops what waits in pend (the batch in flight is counted by its callback). */
static void
drop_pending(struct output *o)
{
    o->stats.dropped += o->npend;
    o->stats.generated_dropped += o->gpend;
    o->npend = o->gpend = 0;
    buf_reset(&o->pend);
    set_queued(o);
}

/* Moves pend to fly for writing. */
static void
take_batch(struct output *o)
{
    struct buf t = o->fly;

    o->fly = o->pend;
    o->pend = t;
    o->nfly = o->npend;
    o->gfly = o->gpend;
    o->npend = o->gpend = 0;
    o->flyoff = 0;
}

/* The batch is finished with (written, dropped or put back). */
static void
end_batch(struct output *o)
{
    o->nfly = o->gfly = 0;
    o->flyoff = 0;
    if (o->fly.cap > KEEP_BUF_BYTES)
        buf_free(&o->fly);
    else
        buf_reset(&o->fly);
    if (o->cipher.cap > KEEP_BUF_BYTES)
        buf_free(&o->cipher);
    else
        buf_reset(&o->cipher);
    set_queued(o);
}

/* Puts a batch that could not be sent back in front of the queue. */
static void
requeue_batch(struct output *o)
{
    struct buf t;

    buf_append(&o->fly, o->pend.p, o->pend.len);
    t = o->pend;
    o->pend = o->fly;
    o->fly = t;
    o->npend += o->nfly;
    o->gpend += o->gfly;
    end_batch(o);
}

/*
 * Counts a write error and logs it, but the same error at most once a
 * minute: a sink that fails for every message (or flaps) must not flood the
 * log.
 */
static void
write_error(struct output *o, int err, const char *what)
{
    uint64_t now = uv_now(o->loop);

    o->stats.errors++;
    if (err == o->last_err && o->err_ms && now - o->err_ms < ERROR_LOG_MS) return;
    o->last_err = err;
    o->err_ms = now;
    o->err_reported = true;
    log_msg(LOG_ERR, "output %s: %s: %s", o->name, what, uv_strerror(err));
}

static void
write_ok(struct output *o)
{
    if (!o->err_reported) return;
    o->err_reported = false;
    log_msg(LOG_INFO, "output %s: writing again", o->name);
}

/* ---- closing ---- */

static void
finish(struct output *o)
{
    void (*done)(void *) = o->done;
    void *arg = o->done_arg;

    if (o->ai) uv_freeaddrinfo(o->ai);
    tls_conn_free(o->tconn);
    tls_ctx_unref(o->tls_ctx);
    tls_ctx_unref(o->tls_next);
    buf_free(&o->cipher);
    buf_free(&o->line);
    buf_free(&o->pend);
    buf_free(&o->fly);
    free(o->name);
    free(o->path);
    free(o->host);
    free(o->to);
    free(o);
    if (done) done(arg);
}

/* Frees an output that failed to open before it had more than its retry timer. */
static void
free_when_closed(uv_handle_t *h)
{
    finish(h->data);
}

static void
on_fd_closed(uv_fs_t *req)
{
    struct output *o = req->data;

    uv_fs_req_cleanup(req);
    free(req);
    o->pending--;
    progress(o);
}

/* Closes a file descriptor without waiting for it (close may flush to NFS). */
static void
close_fd(struct output *o, uv_file fd)
{
    uv_fs_t *req = xmalloc(sizeof(*req));
    int r;

    req->data = o;
    r = uv_fs_close(o->loop, req, fd, on_fd_closed);
    if (r < 0) {
        log_msg(LOG_WARNING, "output %s: close: %s", o->name, uv_strerror(r));
        uv_fs_req_cleanup(req);
        free(req);
        return;
    }
    o->pending++;
}

/* Frees the output once libuv owes it nothing more; o may be gone on return. */
static void
settle(struct output *o)
{
    if (o->pending) return;
    if (o->own_fd && o->fd >= 0) {
        uv_file fd = o->fd;
        o->fd = -1;
        close_fd(o, fd);
        if (o->pending) return;
    }
    finish(o);
}

static void
on_handle_closed(uv_handle_t *h)
{
    struct output *o = h->data;

    o->pending--;
    progress(o);
}

static void
close_handle(struct output *o, uv_handle_t *h, uv_close_cb cb)
{
    o->pending++;
    uv_close(h, cb);
}

/* Stops everything; what is still queued is dropped. */
static void
teardown(struct output *o)
{
    if (o->tearing_down) return;
    o->tearing_down = true;
    o->closing = true;
    drop_pending(o);
    close_handle(o, (uv_handle_t *)&o->retry, on_handle_closed);
    close_handle(o, (uv_handle_t *)&o->deadline, on_handle_closed);
    if (o->handle_open) {
        /* cancels a write or a connect in progress: their callbacks see UV_ECANCELED */
        o->handle_open = false;
        close_handle(o, &o->u.h, on_handle_closed);
    }
    if (o->state == FWD_RESOLVING) uv_cancel((uv_req_t *)&o->gai);
    /* a file write already running in the threadpool cannot be stopped: settle waits for it */
}

static void
on_deadline(uv_timer_t *t)
{
    struct output *o = t->data;

    log_msg(LOG_WARNING, "output %s: %zu messages not delivered in %d s, dropped", o->name,
            o->npend + o->nfly, CLOSE_TIMEOUT_MS / 1000);
    teardown(o);
}

/* After any callback: carry on writing, or go on closing.  o may be gone on return. */
static void
progress(struct output *o)
{
    if (o->tearing_down) {
        settle(o);
        return;
    }
    kick(o);
    if (o->closing && drained(o)) teardown(o);
}

/* ---- writing to a stream (pipe, tty, TCP) ---- */

static void
on_stream_written(uv_write_t *req, int status)
{
    struct output *o = req->data;

    o->pending--;
    o->busy = false;
    if (status == 0) {
        o->stats.written += o->nfly;
        write_ok(o);
        end_batch(o);
    } else if (o->tearing_down) {
        drop_batch(o);
        end_batch(o);
    } else if (o->type == CONF_OUT_FORWARD) {
        /*
         * Sent again on the next connection: the peer may see part of this
         * batch twice, but nothing the kernel refused is lost.
         */
        if (status != UV_ECANCELED) o->stats.errors++; /* else fwd_lost counted it */
        requeue_batch(o);
        fwd_lost(o, status, "write failed");
    } else {
        /* stdout's reader is gone (EPIPE): it will not come back */
        write_error(o, status, "write to stdout failed, dropping its messages from now on");
        o->broken = true;
        drop_batch(o);
        end_batch(o);
        drop_pending(o);
    }
    progress(o);
}

static void
stream_write(struct output *o)
{
    uv_buf_t b;
    int r;

    take_batch(o);
    if (o->tconn) {
        /* the whole batch in one go: records of up to 16 KiB, written together */
        buf_reset(&o->cipher);
        if (tls_conn_write(o->tconn, o->fly.p, o->fly.len) < 0) {
            requeue_batch(o);
            fwd_lost(o, UV_EPROTO, "TLS");
            return;
        }
        tls_conn_take(o->tconn, &o->cipher);
        b = uv_buf_init(o->cipher.p, (unsigned int)o->cipher.len);
    } else {
        b = uv_buf_init(o->fly.p, (unsigned int)o->fly.len);
    }
    r = uv_write(&o->wreq, &o->u.s, &b, 1, on_stream_written);
    if (r < 0) {
        if (o->type == CONF_OUT_FORWARD) {
            requeue_batch(o);
            fwd_lost(o, r, "write failed");
        } else {
            drop_batch(o);
            end_batch(o);
            write_error(o, r, "write failed");
        }
        return;
    }
    o->busy = true;
    o->pending++;
}

/* ---- writing to a file descriptor (file, stdout redirected to a file) ---- */

static void fs_write_rest(struct output *o);

static void
on_fs_written(uv_fs_t *req)
{
    struct output *o = req->data;
    ssize_t r = req->result;

    uv_fs_req_cleanup(req);
    o->pending--;
    o->busy = false;
    if (r > 0 && o->flyoff + (size_t)r < o->fly.len) {
        if (o->tearing_down) {
            drop_batch(o);
            end_batch(o);
        } else {
            /* a short write (a full disk, a signal): the rest goes next */
            o->flyoff += (size_t)r;
            fs_write_rest(o);
            if (o->busy) return;
        }
    } else if (r > 0) {
        o->stats.written += o->nfly;
        write_ok(o);
        end_batch(o);
    } else {
        write_error(o, r < 0 ? (int)r : UV_EIO, o->path ? o->path : "write");
        drop_batch(o);
        end_batch(o);
    }
    progress(o);
}

static void
fs_write_rest(struct output *o)
{
    uv_buf_t b = uv_buf_init(o->fly.p + o->flyoff, (unsigned int)(o->fly.len - o->flyoff));
    int r;

    o->fsreq.data = o;
    r = uv_fs_write(o->loop, &o->fsreq, o->fd, &b, 1, -1, on_fs_written);
    if (r < 0) {
        write_error(o, r, o->path ? o->path : "write");
        drop_batch(o);
        end_batch(o);
        return;
    }
    o->busy = true;
    o->pending++;
}

/* ---- file reopening ---- */

/*
 * corrald started as root opens its file outputs before it drops to
 * <daemon user>, and the output's directory is often that user's
 * (/var/log/corral): a symbolic link, or a hard link, that a compromised
 * engine left there would make the next start append to any file root can
 * write.  So as root the last component must not be a link (O_NOFOLLOW)
 * and a regular file must have no other name.
 */
static int
file_flags(void)
{
    return O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | (geteuid() == 0 ? O_NOFOLLOW : 0);
}

/* NULL when fd (just opened with file_flags) may be written, else why not. */
static const char *
file_refused(uv_file fd)
{
    struct stat st;

    if (geteuid() != 0) return NULL;
    if (fstat(fd, &st) < 0) return strerror(errno);
    if (S_ISREG(st.st_mode) && st.st_nlink > 1)
        return "the file has other names (hard links), which corrald running as root refuses "
               "to write";
    return NULL;
}

/* What to say when opening the output failed with r. */
static const char *
open_error(int r)
{
    if (r == UV_ELOOP && geteuid() == 0)
        return "a symbolic link, which corrald running as root does not follow (name the file "
               "itself)";
    return uv_strerror(r);
}

static void
on_reopened(uv_fs_t *req)
{
    struct output *o = req->data;
    ssize_t r = req->result;
    const char *why = NULL;

    uv_fs_req_cleanup(req);
    o->pending--;
    o->busy = false;
    if (r >= 0 && (why = file_refused((uv_file)r))) close((int)r);
    if (r < 0 || why) {
        o->stats.errors++;
        log_msg(LOG_ERR, "output %s: cannot reopen %s, still writing to the old file: %s", o->name,
                o->path, why ? why : open_error((int)r));
    } else {
        uv_file old = o->fd;
        o->fd = (uv_file)r;
        close_fd(o, old);
        log_msg(LOG_INFO, "output %s: reopened %s", o->name, o->path);
    }
    progress(o);
}

static void
start_reopen(struct output *o)
{
    int r;

    o->reopen_wanted = false;
    o->fsreq.data = o;
    r = uv_fs_open(o->loop, &o->fsreq, o->path, file_flags(), 0640, on_reopened);
    if (r < 0) {
        o->stats.errors++;
        log_msg(LOG_ERR, "output %s: cannot reopen %s: %s", o->name, o->path, open_error(r));
        return;
    }
    o->busy = true;
    o->pending++;
}

void
output_reopen(struct output *o)
{
    if (o->type != CONF_OUT_FILE || o->closing) return;
    o->reopen_wanted = true;
    kick(o);
}

/* ---- UDP ---- */

static void
udp_send(struct output *o, const char *p, size_t len)
{
    uv_buf_t b;
    int r;

    if (len > UDP_MAX_DATAGRAM) len = UDP_MAX_DATAGRAM;
    b = uv_buf_init((char *)p, (unsigned int)len);
    r = uv_udp_try_send(&o->u.udp, &b, 1, (const struct sockaddr *)&o->addr);

    if (r >= 0) {
        o->stats.written++;
        write_ok(o);
    } else {
        /* a full socket buffer (EAGAIN) or an unreachable network: this datagram is lost */
        o->stats.dropped++;
        write_error(o, r, "send failed");
    }
}

/* Sends what was queued before the address was known. */
static void
udp_flush(struct output *o)
{
    size_t off = 0;
    uint32_t len;

    while (off + sizeof(len) <= o->pend.len) {
        memcpy(&len, o->pend.p + off, sizeof(len));
        off += sizeof(len);
        udp_send(o, o->pend.p + off, len);
        off += len;
    }
    o->npend = o->gpend = 0;
    buf_reset(&o->pend);
    set_queued(o);
}

/* ---- dispatch ---- */

/* Starts the next write if the sink is free and something waits. */
static void
kick(struct output *o)
{
    if (o->busy || o->tearing_down) return;
    if (o->reopen_wanted) {
        start_reopen(o);
        if (o->busy) return;
    }
    if (o->npend == 0) return;
    switch (o->sink) {
    case SINK_NONE: break;
    case SINK_STREAM: stream_write(o); break;
    case SINK_FS:
        take_batch(o);
        fs_write_rest(o);
        break;
    case SINK_UDP: udp_flush(o); break;
    }
}

bool
output_full(const struct output *o)
{
    if (o->closing || o->broken)
        return false; /* it takes nothing, or drops all: waiting is no use */
    /*
     * A forward peer may stay down for hours; waiting for it would stop
     * correlation and alerting with it.  Its overflow is dropped and
     * counted instead, as syslog-ng drops without flow-control.
     */
    if (o->to) return false;
    return o->npend + o->nfly >= o->max_msgs || o->pend.len + o->fly.len >= QUEUE_MAX_BYTES / 2;
}

bool
output_low(const struct output *o)
{
    if (o->closing || o->broken || o->to) return true;
    return o->npend + o->nfly <= o->max_msgs / 2 && o->pend.len + o->fly.len <= QUEUE_MAX_BYTES / 4;
}

/*
 * A generated message that does not fit: counted apart and logged once until
 * the queue is down to half, with what holds it up.
 */
static void
drop_generated(struct output *o)
{
    o->stats.dropped++;
    o->stats.generated_dropped++;
    if (o->gen_logged) return;
    o->gen_logged = true;
    log_msg(LOG_ERR,
            "output %s: dropping generated messages (alerts): %s (counted in "
            "corral_output_generated_dropped_total)",
            o->name,
            o->broken ? "its reader is gone"
                      : "the queue holds all it may (queue size and 80 MiB), the output is "
                        "not writing");
}

static void
write_msg(struct output *o, const struct msg *m, bool keep)
{
    bool gen = (msg_flags(m) & MSG_F_GENERATED) != 0;
    size_t need, max_bytes = QUEUE_MAX_BYTES;
    uint32_t len;
    char hdr[24];
    int hlen = 0;

    if (o->closing || !selected(o, m)) return;
    if (o->to) keep = false; /* a forward never holds the inputs back (output_full) */
    if (gen) {
        /* the lane of generated messages: past the message bound, and further in bytes */
        keep = true;
        max_bytes += GENERATED_MAX_BYTES;
    }
    if (o->gen_logged && o->npend + o->nfly <= o->max_msgs / 2) o->gen_logged = false;
    if (gen && o->broken) {
        drop_generated(o);
        return;
    }
    if (o->broken || (!keep && o->npend + o->nfly >= o->max_msgs)) {
        o->stats.dropped++;
        if (!o->drop_logged && !o->broken)
            log_msg(LOG_WARNING,
                    "output %s: queue full (%zu messages), dropping until it is down to half "
                    "(counted in corral_output_dropped_total)",
                    o->name, o->max_msgs);
        o->drop_logged = true;
        return;
    }
    if (o->drop_logged && o->npend + o->nfly <= o->max_msgs / 2) o->drop_logged = false;
    buf_reset(&o->line);
    if (o->format == CONF_FORMAT_SYSLOG)
        format_syslog(m, o->framing == FR_LINE, &o->line);
    else
        json_format_msg(m, &o->line);
    if (o->sink == SINK_UDP && o->npend == 0) {
        /* the usual UDP case: straight out, no queueing */
        udp_send(o, o->line.p, o->line.len);
        return;
    }
    switch (o->framing) {
    case FR_LINE: need = o->line.len + 1; break;
    case FR_OCTET:
        hlen = snprintf(hdr, sizeof(hdr), "%zu ", o->line.len);
        need = o->line.len + (size_t)hlen;
        break;
    case FR_DGRAM:
    default: need = o->line.len + sizeof(len); break;
    }
    if (o->pend.len + o->fly.len + need > max_bytes) {
        if (gen)
            drop_generated(o);
        else
            o->stats.dropped++;
        return;
    }
    switch (o->framing) {
    case FR_LINE:
        buf_append(&o->pend, o->line.p, o->line.len);
        buf_putc(&o->pend, '\n');
        break;
    case FR_OCTET:
        buf_append(&o->pend, hdr, (size_t)hlen);
        buf_append(&o->pend, o->line.p, o->line.len);
        break;
    case FR_DGRAM:
        len = (uint32_t)(o->line.len > UDP_MAX_DATAGRAM ? UDP_MAX_DATAGRAM : o->line.len);
        buf_append(&o->pend, &len, sizeof(len));
        buf_append(&o->pend, o->line.p, len);
        break;
    }
    o->npend++;
    if (gen) o->gpend++;
    set_queued(o);
    kick(o);
}

void
output_write(struct output *o, const struct msg *m)
{
    write_msg(o, m, false);
}

void
output_write_keep(struct output *o, const struct msg *m)
{
    write_msg(o, m, true);
}

/* ---- forward: resolving and connecting ---- */

/* The backoff is over, or a connection attempt took too long. */
static void
on_retry(uv_timer_t *t)
{
    struct output *o = t->data;

    if (o->state == FWD_HANDSHAKE) {
        o->stats.tls_failures[TLS_FAIL_CLOSED]++;
        fwd_drop(o, UV_ETIMEDOUT);
    } else if (o->state == FWD_CONNECTING)
        fwd_drop(o, UV_ETIMEDOUT);
    else
        fwd_start(o);
}

/* An attempt failed or the connection went away: try again after the backoff. */
static void
fwd_wait(struct output *o)
{
    uint64_t delay = o->backoff;
    int r;

    o->state = FWD_WAITING;
    o->sink = SINK_NONE;
    if (!o->down_noted) {
        o->down_noted = true;
        log_msg(LOG_WARNING, "output %s: cannot reach %s: %s; retrying every %d..%d s", o->name,
                o->to, uv_strerror(o->conn_err), BACKOFF_MIN_MS / 1000, BACKOFF_MAX_MS / 1000);
    } else {
        log_msg(LOG_DEBUG, "output %s: %s: %s; next attempt in %llu s", o->name, o->to,
                uv_strerror(o->conn_err), (unsigned long long)(delay / 1000));
    }
    o->backoff = o->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : o->backoff * 2;
    r = uv_timer_start(&o->retry, on_retry, delay, 0);
    if (r < 0) {
        /* cannot happen with an initialised timer; stay down rather than spin */
        log_msg(LOG_ERR, "output %s: retry timer: %s", o->name, uv_strerror(r));
    }
}

static void
on_tcp_closed(uv_handle_t *h)
{
    struct output *o = h->data;

    o->pending--;
    tls_conn_free(o->tconn);
    o->tconn = NULL;
    if (o->tearing_down) {
        settle(o);
        return;
    }
    if (o->ai_next) {
        fwd_start(o); /* the next address of the host */
        return;
    }
    if (o->ai) uv_freeaddrinfo(o->ai);
    o->ai = NULL;
    fwd_wait(o);
    if (o->closing && drained(o)) teardown(o);
}

/* Drops the connection (or the attempt): on_tcp_closed goes on from there. */
static void
fwd_drop(struct output *o, int err)
{
    o->stats.errors++;
    o->conn_err = err;
    o->sink = SINK_NONE;
    o->state = FWD_WAITING;
    if (o->handle_open) {
        o->handle_open = false;
        close_handle(o, &o->u.h, on_tcp_closed);
    }
}

static void
fwd_lost(struct output *o, int err, const char *what)
{
    if (o->state != FWD_UP) return;
    log_msg(LOG_WARNING, "output %s: connection to %s lost (%s: %s); %zu messages queued", o->name,
            o->to, what, uv_strerror(err), o->npend + o->nfly);
    o->down_noted = true;
    o->backoff = BACKOFF_MIN_MS;
    fwd_drop(o, err);
}

static void
on_alloc(uv_handle_t *h, size_t size, uv_buf_t *b)
{
    struct output *o = h->data;

    (void)size;
    *b = uv_buf_init(o->rbuf, sizeof(o->rbuf));
}

/* Connected (and through the TLS handshake): the queue goes out. */
static void
fwd_up(struct output *o)
{
    char how[112] = "";

    uv_timer_stop(&o->retry);
    if (o->tconn) {
        memcpy(how, " over ", 6);
        tls_conn_describe(o->tconn, how + 6, sizeof(how) - 6);
    }
    o->state = FWD_UP;
    o->sink = SINK_STREAM;
    o->backoff = BACKOFF_MIN_MS;
    log_msg(o->down_noted ? LOG_WARNING : LOG_INFO, "output %s: connected to %s%s%s", o->name,
            o->to, how, o->was_up ? " again" : "");
    o->was_up = true;
    o->down_noted = false;
    progress(o);
}

/* What the TLS server sent: the handshake, then nothing but alerts or the end. */
static void
tls_read(struct output *o, const char *data, size_t len)
{
    bool was = tls_conn_established(o->tconn);
    char plain[512];
    const char *why;
    enum tls_fail f;
    int rc = tls_conn_feed(o->tconn, data, len, plain, sizeof(plain), NULL, NULL);
    int wr = tls_conn_flush(o->tconn, &o->u.s);

    if (rc == -1 && !was) {
        f = tls_conn_failure(o->tconn, &why);
        o->stats.tls_failures[f]++;
        /* every attempt fails alike until someone fixes it: once a minute is enough */
        if (!o->tls_log_ms || uv_now(o->loop) - o->tls_log_ms >= ERROR_LOG_MS) {
            o->tls_log_ms = uv_now(o->loop);
            log_msg(LOG_WARNING,
                    "output %s: TLS handshake with %s failed (%s): %s "
                    "(corral_tls_handshake_failures_total)",
                    o->name, o->to, tls_fail_name(f), why);
        }
        fwd_drop(o, UV_EPROTO);
    } else if (rc == -1) {
        tls_conn_failure(o->tconn, &why);
        log_msg(LOG_WARNING, "output %s: TLS error from %s: %s", o->name, o->to, why);
        fwd_lost(o, UV_EPROTO, "TLS");
    } else if (rc == 1) {
        fwd_lost(o, UV_EOF, "closed by the peer");
    } else if (wr < 0) {
        if (o->state == FWD_UP)
            fwd_lost(o, wr, "write");
        else
            fwd_drop(o, wr);
    } else if (!was && tls_conn_established(o->tconn)) {
        fwd_up(o);
    }
}

/* Reading only tells when the peer closes or resets: syslog peers send nothing. */
static void
on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct output *o = s->data;

    if (nread > 0 && o->tconn) {
        tls_read(o, b->base, (size_t)nread);
        return;
    }
    if (nread < 0 && o->state == FWD_HANDSHAKE) {
        o->stats.tls_failures[TLS_FAIL_CLOSED]++;
        fwd_drop(o, (int)nread);
        return;
    }
    if (nread < 0) fwd_lost(o, (int)nread, nread == UV_EOF ? "closed by the peer" : "read");
}

static void
on_connect(uv_connect_t *req, int status)
{
    struct output *o = req->data;
    int r;

    o->pending--;
    if (o->tearing_down) {
        settle(o);
        return;
    }
    /* ECANCELED: the attempt timed out and its handle is closing already */
    if (status == UV_ECANCELED) return;
    if (!o->tls_ctx) uv_timer_stop(&o->retry); /* TLS: it times the handshake too */
    if (status < 0) {
        fwd_drop(o, status);
        return;
    }
    if (o->ai) uv_freeaddrinfo(o->ai);
    o->ai = o->ai_next = NULL;
    r = uv_read_start(&o->u.s, on_alloc, on_read);
    if (r < 0) {
        fwd_drop(o, r);
        return;
    }
    /* a peer that vanished without a word is noticed within minutes, not never */
    r = uv_tcp_keepalive(&o->u.tcp, 1, 60);
    if (r < 0) log_msg(LOG_DEBUG, "output %s: keepalive: %s", o->name, uv_strerror(r));
    if (!o->tls_ctx) {
        fwd_up(o);
        return;
    }
    /* the handshake: the ClientHello now, the rest as the server answers (tls_read) */
    o->state = FWD_HANDSHAKE;
    o->tconn = tls_conn_new(o->tls_ctx, o->host);
    tls_conn_start(o->tconn);
    r = tls_conn_flush(o->tconn, &o->u.s);
    if (r < 0) fwd_drop(o, r);
}

/* Connects to the next address the name resolved to. */
static void
fwd_connect(struct output *o)
{
    struct addrinfo *a = o->ai_next;
    int r;

    o->ai_next = a->ai_next;
    o->state = FWD_CONNECTING;
    r = uv_tcp_init(o->loop, &o->u.tcp);
    if (r < 0) {
        o->conn_err = r;
        o->stats.errors++;
        if (o->ai_next) {
            fwd_connect(o);
            return;
        }
        uv_freeaddrinfo(o->ai);
        o->ai = NULL;
        fwd_wait(o);
        return;
    }
    o->u.h.data = o;
    o->handle_open = true;
    o->creq.data = o;
    r = uv_tcp_connect(&o->creq, &o->u.tcp, a->ai_addr, on_connect);
    if (r < 0) {
        fwd_drop(o, r);
        return;
    }
    o->pending++;
    r = uv_timer_start(&o->retry, on_retry, CONNECT_TIMEOUT_MS, 0);
    if (r < 0) log_msg(LOG_DEBUG, "output %s: connect timer: %s", o->name, uv_strerror(r));
}

static void
on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct output *o = req->data;

    o->pending--;
    if (o->tearing_down) {
        if (res) uv_freeaddrinfo(res);
        settle(o);
        return;
    }
    if (status < 0 || !res) {
        if (res) uv_freeaddrinfo(res);
        o->stats.errors++;
        o->conn_err = status < 0 ? status : UV_EAI_NONAME;
        fwd_wait(o);
        return;
    }
    if (!o->tcp) {
        memcpy(&o->addr, res->ai_addr, res->ai_addrlen);
        uv_freeaddrinfo(res);
        o->state = FWD_UP;
        o->sink = SINK_UDP;
        if (o->down_noted) log_msg(LOG_WARNING, "output %s: resolved %s", o->name, o->to);
        o->down_noted = false;
        progress(o);
        return;
    }
    o->ai = o->ai_next = res;
    fwd_connect(o);
}

/* Resolves the host (again: its address may have changed), then connects. */
static void
fwd_start(struct output *o)
{
    struct addrinfo hints;
    int r;

    if (o->tearing_down) return;
    if (o->ai_next) {
        fwd_connect(o);
        return;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = o->tcp ? SOCK_STREAM : SOCK_DGRAM;
    o->gai.data = o;
    r = uv_getaddrinfo(o->loop, &o->gai, on_resolved, o->host, o->port, &hints);
    if (r < 0) {
        o->stats.errors++;
        o->conn_err = r;
        fwd_wait(o);
        return;
    }
    o->state = FWD_RESOLVING;
    o->pending++;
}

/* ---- opening ---- */

static int
open_stdout(struct output *o, struct buf *err)
{
    int fd = STDOUT_FILENO, r;
    struct stat st;

    if (fstat(fd, &st) < 0) {
        buf_printf(err, "stdout: %s\n", strerror(errno));
        return -1;
    }
    switch (uv_guess_handle(fd)) {
    case UV_TTY:
        /* libuv reopens the tty, so stderr keeps its blocking descriptor */
        r = uv_tty_init(o->loop, &o->u.tty, fd, 0);
        if (r < 0) break;
        o->u.h.data = o;
        o->handle_open = true;
        o->sink = SINK_STREAM;
        return 0;
    case UV_NAMED_PIPE:
        /*
         * A pipe is reopened through /proc so that making it non-blocking does
         * not touch the descriptor stderr and other processes share.  That
         * works for pipes, not for sockets (ENXIO): those are used as they are.
         */
        if (S_ISFIFO(st.st_mode)) {
            int nfd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (nfd >= 0) fd = nfd;
        }
        r = uv_pipe_init(o->loop, &o->u.pipe, 0);
        if (r < 0) {
            if (fd != STDOUT_FILENO) close(fd);
            break;
        }
        o->u.h.data = o;
        o->handle_open = true;
        r = uv_pipe_open(&o->u.pipe, fd);
        if (r < 0) {
            if (fd != STDOUT_FILENO) close(fd);
            break;
        }
        o->sink = SINK_STREAM;
        return 0;
    case UV_TCP:
        r = uv_tcp_init(o->loop, &o->u.tcp);
        if (r < 0) break;
        o->u.h.data = o;
        o->handle_open = true;
        r = uv_tcp_open(&o->u.tcp, fd);
        if (r < 0) break;
        o->sink = SINK_STREAM;
        return 0;
    default:
        /* a regular file, a character device, anything else: the threadpool may block, not us */
        o->fd = fd;
        o->own_fd = false;
        o->sink = SINK_FS;
        return 0;
    }
    buf_printf(err, "stdout: %s\n", uv_strerror(r));
    return -1;
}

static int
open_file(struct output *o, struct buf *err)
{
    const char *why;
    uv_fs_t req;
    int r;

    if (!o->path || !*o->path) {
        buf_printf(err, "output %s: a file output needs a path\n", o->name);
        return -1;
    }
    /* opened at once, so that a wrong path is an error of the configuration */
    r = uv_fs_open(o->loop, &req, o->path, file_flags(), 0640, NULL);
    uv_fs_req_cleanup(&req);
    if (r < 0) {
        buf_printf(err, "output %s: %s: %s\n", o->name, o->path, open_error(r));
        return -1;
    }
    if ((why = file_refused(r))) {
        close(r);
        buf_printf(err, "output %s: %s: %s\n", o->name, o->path, why);
        return -1;
    }
    o->fd = r;
    o->own_fd = true;
    o->sink = SINK_FS;
    return 0;
}

static int
open_forward(struct output *o, const struct conf_output *co, struct buf *err)
{
    char host[256];
    int port, r;

    if (!co->to || !conf_split_address(co->to, host, sizeof(host), &port) || port == 0) {
        buf_printf(err, "output %s: bad address \"%s\" (expected host:port)\n", o->name,
                   co->to ? co->to : "");
        return -1;
    }
    o->to = xstrdup(co->to);
    o->host = xstrdup(host[0] ? host : "localhost");
    snprintf(o->port, sizeof(o->port), "%d", port);
    o->backoff = BACKOFF_MIN_MS;
    o->sink = SINK_NONE;
    if (co->tls) {
        struct buf e = BUF_INIT;
        o->tls = true;
        o->tls_ctx = tls_ctx_new(&co->tls_conf, false, &e);
        if (!o->tls_ctx) {
            buf_printf(err, "output %s: %s\n", o->name, buf_str(&e));
            buf_free(&e);
            return -1;
        }
    }
    if (!o->tcp) {
        r = uv_udp_init(o->loop, &o->u.udp);
        if (r < 0) {
            buf_printf(err, "output %s: %s\n", o->name, uv_strerror(r));
            return -1;
        }
        o->u.h.data = o;
        o->handle_open = true;
    }
    /* the name is resolved in the threadpool; until then messages queue */
    fwd_start(o);
    return 0;
}

int
output_check(const struct conf_output *co, const char *conf_file, struct buf *err)
{
    const char *name = co->name ? co->name : "output";
    struct buf e = BUF_INIT;
    struct stat st;
    char host[256];
    int port, rc;

    switch (co->type) {
    case CONF_OUT_FILE:
        if (!co->path || !*co->path) {
            buf_printf(&e, "a file output needs a path");
        } else if (stat(co->path, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                buf_printf(&e, "%s: is a directory", co->path);
            else if (access(co->path, W_OK) < 0)
                buf_printf(&e, "%s: %s", co->path, strerror(errno));
        } else {
            /* it would be created: its directory must exist and take it */
            char *dir = durable_dir_of(co->path);
            if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                buf_printf(&e, "%s: no directory %s", co->path, dir);
            else if (access(dir, W_OK) < 0)
                buf_printf(&e, "%s: cannot create it in %s: %s", co->path, dir, strerror(errno));
            free(dir);
        }
        break;
    case CONF_OUT_FORWARD:
        if (!co->to || !conf_split_address(co->to, host, sizeof(host), &port) || port == 0) {
            buf_printf(&e, "bad address \"%s\" (expected host:port)", co->to ? co->to : "");
        } else if (co->tls) {
            /* the certificate, key and CA as opening loads them */
            struct tls_ctx *ctx = tls_ctx_new(&co->tls_conf, false, &e);
            tls_ctx_unref(ctx);
        }
        break;
    default: break;
    }
    rc = e.len ? -1 : 0;
    if (rc < 0) {
        if (conf_file && co->line > 0)
            buf_printf(err, "%s:%d: output %s: %s\n", conf_file, co->line, name, buf_str(&e));
        else
            buf_printf(err, "output %s: %s\n", name, buf_str(&e));
    }
    buf_free(&e);
    return rc;
}

struct output *
output_open(uv_loop_t *loop, const struct conf_output *co, struct buf *err)
{
    struct output *o = xcalloc(1, sizeof(*o));
    int r;

    o->loop = loop;
    o->name = xstrdup(co->name ? co->name : "output");
    o->type = co->type;
    o->format = co->format;
    o->select = co->select;
    o->tcp = co->tcp;
    o->max_msgs = co->queue ? co->queue : 1;
    o->fd = -1;
    o->path = co->path ? xstrdup(co->path) : NULL;
    if (co->type != CONF_OUT_FORWARD)
        o->framing = FR_LINE;
    else if (!co->tcp)
        o->framing = FR_DGRAM;
    else
        o->framing = co->format == CONF_FORMAT_SYSLOG ? FR_OCTET : FR_LINE;
    o->wreq.data = o;
    o->fsreq.data = o;

    /* uv_timer_init does not fail on unix; checked all the same */
    r = uv_timer_init(loop, &o->retry);
    if (r < 0) {
        buf_printf(err, "output %s: %s\n", o->name, uv_strerror(r));
        finish(o);
        return NULL;
    }
    o->retry.data = o;
    r = uv_timer_init(loop, &o->deadline);
    if (r < 0) {
        buf_printf(err, "output %s: %s\n", o->name, uv_strerror(r));
        uv_close((uv_handle_t *)&o->retry, free_when_closed);
        return NULL;
    }
    o->deadline.data = o;

    switch (co->type) {
    case CONF_OUT_STDOUT: r = open_stdout(o, err); break;
    case CONF_OUT_FILE: r = open_file(o, err); break;
    case CONF_OUT_FORWARD: r = open_forward(o, co, err); break;
    default:
        buf_printf(err, "output %s: unknown type\n", o->name);
        r = -1;
        break;
    }
    if (r < 0) {
        /* the handles opened so far are closed and o freed from the loop */
        teardown(o);
        return NULL;
    }
    return o;
}

void
output_close(struct output *o, void (*done)(void *arg), void *arg)
{
    int r;

    o->done = done;
    o->done_arg = arg;
    if (o->closing) return;
    o->closing = true;
    o->reopen_wanted = false;
    if (o->type == CONF_OUT_FORWARD && o->state == FWD_WAITING && o->npend &&
        uv_is_active((uv_handle_t *)&o->retry)) {
        /* one more attempt now rather than after the backoff */
        uv_timer_stop(&o->retry);
        fwd_start(o);
    }
    if (drained(o)) {
        teardown(o);
        return;
    }
    r = uv_timer_start(&o->deadline, on_deadline, CLOSE_TIMEOUT_MS, 0);
    if (r < 0) teardown(o);
}

const char *
output_name(const struct output *o)
{
    return o->name;
}

int
output_reload_prepare(struct output *o, const struct conf_output *co, const char *conf_file,
                      struct buf *err)
{
    struct buf e = BUF_INIT;
    struct tls_ctx *ctx;

    if (!o->tls) return 0;
    ctx = tls_ctx_new(&co->tls_conf, false, &e);
    if (!ctx) {
        if (conf_file && co->line > 0)
            buf_printf(err, "%s:%d: output %s: %s\n", conf_file, co->line, o->name, buf_str(&e));
        else
            buf_printf(err, "output %s: %s\n", o->name, buf_str(&e));
        buf_free(&e);
        return -1;
    }
    tls_ctx_unref(o->tls_next);
    o->tls_next = ctx;
    return 0;
}

void
output_reload_commit(struct output *o)
{
    if (!o->tls_next) return;
    tls_ctx_unref(o->tls_ctx); /* a connection up keeps its own reference */
    o->tls_ctx = o->tls_next;
    o->tls_next = NULL;
    log_msg(LOG_INFO, "output %s: certificate and key loaded again (for its next connection)",
            o->name);
}

bool
output_is_tls(const struct output *o)
{
    return o->tls;
}

const struct output_stats *
output_get_stats(const struct output *o)
{
    return &o->stats;
}
