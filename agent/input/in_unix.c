/*
 * in_unix: syslog over a unix datagram socket, the way local programs log
 * through syslog(3) to /dev/log: one datagram is one message.  (The
 * unix-stream input shares the TCP code, in_stream.c.)
 *
 * libuv has no unix datagram handle, so the socket is watched with uv_poll
 * and read with recv(2), with MSG_TRUNC to learn the true length of a
 * datagram longer than the buffer.  The socket file is created with the
 * configured mode, replacing a socket file left by an earlier run (never a
 * file of another kind), and removed at close.
 */
#include "agent/input/in_common.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Datagrams read per readiness callback before the loop gets its turn again. */
#define BATCH 64
/* Receive buffer asked of the kernel, as for UDP. */
#define UNIX_RCVBUF (8 * 1024 * 1024)

struct unix_dgram_input {
    struct input base;
    uv_poll_t poll;
    bool poll_init;
    int fd;
    char *rbuf;
    size_t rbuflen;
    bool created;
    dev_t dev;
    ino_t ino;
    uint64_t last_error_log;
};

static void
dgram_readable(uv_poll_t *h, int status, int events)
{
    struct unix_dgram_input *u = h->data;
    ssize_t n;
    size_t len;
    bool truncated;
    int i;

    (void)events;
    if (status < 0) {
        u->base.stats.errors++;
        if (input_log_allowed(&u->last_error_log, uv_now(h->loop), 10000))
            log_msg(LOG_WARNING, "%s: %s", u->base.conf.name, uv_strerror(status));
        return;
    }
    for (i = 0; i < BATCH; i++) {
        /* MSG_TRUNC: the return value is the datagram's length even when it did not fit */
        n = recv(u->fd, u->rbuf, u->rbuflen, MSG_TRUNC | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            u->base.stats.errors++;
            if (input_log_allowed(&u->last_error_log, uv_now(h->loop), 10000))
                log_msg(LOG_WARNING, "%s: receive error: %s", u->base.conf.name, strerror(errno));
            return;
        }
        /* syslog(3) implementations end datagrams with a newline or a NUL, or neither */
        truncated = (size_t)n > u->rbuflen;
        len = input_datagram_len(&u->base, u->rbuf, truncated ? u->rbuflen : (size_t)n, &truncated);
        if (len) input_deliver(&u->base, u->rbuf, len, truncated, NULL);
    }
}

static void
dgram_limits_changed(struct input *in)
{
    struct unix_dgram_input *u = (struct unix_dgram_input *)in;

    u->rbuflen = u->base.max_message_size + 2;
    u->rbuf = xrealloc(u->rbuf, u->rbuflen);
}

static void
dgram_free(struct unix_dgram_input *u)
{
    if (u->fd >= 0) close(u->fd);
    free(u->rbuf);
    input_fini(&u->base);
    free(u);
}

static void
dgram_closed(uv_handle_t *h)
{
    dgram_free(h->data);
}

static void
dgram_close(struct input *in)
{
    struct unix_dgram_input *u = (struct unix_dgram_input *)in;

    /* the socket file goes now, so that a restart or a reloaded input can take the path */
    if (u->created) {
        input_unix_remove(u->base.conf.path, u->dev, u->ino);
        u->created = false;
    }
    if (u->poll_init) {
        uv_poll_stop(&u->poll);
        uv_close((uv_handle_t *)&u->poll, dgram_closed);
    } else {
        dgram_free(u);
    }
}

struct input *
in_unix_dgram_open(const struct input_sink *sink, uv_loop_t *loop, const struct conf_input *ci,
                   const struct conf *conf, struct buf *err)
{
    struct unix_dgram_input *u = xcalloc(1, sizeof(*u));
    struct sockaddr_un sun;
    struct buf e = BUF_INIT;
    int rc;

    input_init(&u->base, sink, loop, ci, conf);
    u->base.close = dgram_close;
    u->fd = -1;
    if (input_unix_prepare(ci->path, &e) < 0) goto fail;
    u->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        buf_printf(&e, "socket: %s", strerror(errno));
        goto fail;
    }
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, ci->path, strlen(ci->path) + 1); /* length checked by prepare */
    if (bind(u->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        buf_printf(&e, "cannot bind %s: %s", ci->path, strerror(errno));
        goto fail;
    }
    u->created = true;
    if (input_unix_created(ci->path, ci->mode, &u->dev, &u->ino, &e) < 0) {
        unlink(ci->path); /* the inode is unknown: remove by path, it is the one just created */
        u->created = false;
        goto fail;
    }
    input_set_rcvbuf(u->fd, UNIX_RCVBUF, u->base.conf.name);
    /* two bytes over the limit: a message of exactly max bytes may come with CR LF */
    u->rbuflen = u->base.max_message_size + 2;
    u->rbuf = xmalloc(u->rbuflen);
    u->base.limits_changed = dgram_limits_changed;
    rc = uv_poll_init(loop, &u->poll, u->fd);
    if (rc < 0) {
        buf_printf(&e, "%s", uv_strerror(rc));
        goto fail;
    }
    u->poll.data = u;
    u->poll_init = true;
    rc = uv_poll_start(&u->poll, UV_READABLE, dgram_readable);
    if (rc < 0) {
        buf_printf(&e, "%s", uv_strerror(rc));
        goto fail;
    }
    return &u->base;

fail:
    buf_printf(err, "input %s: %s", u->base.conf.name, buf_str(&e));
    buf_free(&e);
    dgram_close(&u->base);
    return NULL;
}
