/*
 * in_udp: syslog over UDP (RFC 5426): one datagram is one message.
 *
 * Datagrams are read in batches with recvmmsg(2) (libuv's UV_UDP_RECVMMSG:
 * up to 20 per system call) into one buffer owned by the input, so nothing
 * is allocated per message; the socket gets a large receive buffer so that
 * bursts wait in the kernel instead of being dropped while the loop is busy.
 * What the kernel drops all the same (the buffer full) is counted: once a
 * second the socket's drop counter (SO_MEMINFO's SK_MEMINFO_DROPS, the count
 * SO_RXQ_OVFL reports) is read into the input's kernel_drops and logged.  A
 * per-datagram control message would not do: libuv's recvmmsg passes none.
 */
#include "agent/input/in_common.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* libuv hands recvmmsg one 64 KiB slot per datagram, at most 20 of them. */
#define UDP_SLOT  (64 * 1024)
#define UDP_SLOTS 20
/* Receive buffer asked of the kernel: a few seconds of a busy sender. */
#ifndef CORRAL_UDP_RCVBUF
#define CORRAL_UDP_RCVBUF (8 * 1024 * 1024)
#endif

/* How often the kernel's drop counter is read. */
#define UDP_DROPS_EVERY_MS 1000

/* Batching can be turned off, and the buffer changed, at build time: to measure what they bring. */
#ifndef CORRAL_UDP_RECVMMSG
#define CORRAL_UDP_RECVMMSG 1
#endif

struct udp_input {
    struct input base;
    uv_udp_t udp;
    char *rbuf;
    size_t rbuflen;
    /* the last sender, so that a burst from one host is named once, not per datagram */
    struct sockaddr_storage last;
    char peer[64];
    uint64_t last_error_log;
    /* kernel drops: the socket's counter when last read, and when they were last logged */
    uv_timer_t drops_timer;
    uint32_t kernel_seen;
    uint64_t last_drop_log, drops_unlogged;
    int closing; /* handles still to close */
};

static void
udp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct udp_input *u = h->data;

    (void)suggested;
    buf->base = u->rbuf;
    buf->len = u->rbuflen;
}

/* The sender's name, from the cache when it sent the previous datagram too. */
static const char *
peer_of(struct udp_input *u, const struct sockaddr *sa)
{
    size_t len;

    if (sa->sa_family == AF_INET)
        len = sizeof(struct sockaddr_in);
    else if (sa->sa_family == AF_INET6)
        len = sizeof(struct sockaddr_in6);
    else
        return NULL;
    if (u->peer[0] && u->last.ss_family == sa->sa_family) {
        /* the port does not matter: only the address is named */
        if (sa->sa_family == AF_INET &&
            memcmp(&((const struct sockaddr_in *)sa)->sin_addr,
                   &((struct sockaddr_in *)&u->last)->sin_addr, sizeof(struct in_addr)) == 0)
            return u->peer;
        if (sa->sa_family == AF_INET6 &&
            memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
                   &((struct sockaddr_in6 *)&u->last)->sin6_addr, sizeof(struct in6_addr)) == 0)
            return u->peer;
    }
    memcpy(&u->last, sa, len);
    input_peer_name(sa, u->peer, sizeof(u->peer));
    return u->peer[0] ? u->peer : NULL;
}

static void
udp_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
         unsigned flags)
{
    struct udp_input *u = h->data;
    const char *p = buf->base;
    size_t n;
    bool truncated;

    if (flags & UV_UDP_MMSG_FREE) return; /* the end of a batch: the buffer is ours, kept */
    if (nread < 0) {
        u->base.stats.errors++;
        if (input_log_allowed(&u->last_error_log, uv_now(h->loop), 10000))
            log_msg(LOG_WARNING, "%s: receive error: %s", u->base.conf.name,
                    uv_strerror((int)nread));
        return;
    }
    if (!addr) return; /* nothing more to read now */

    truncated = (flags & UV_UDP_PARTIAL) != 0;
    n = input_datagram_len(&u->base, p, (size_t)nread, &truncated);
    if (n) input_deliver(&u->base, p, n, truncated, peer_of(u, addr));
}

/* The socket's drop counter (32 bits, wrapping): false where the kernel has none. */
static bool
kernel_drops(struct udp_input *u, uint32_t *drops)
{
    uint32_t mem[SK_MEMINFO_VARS];
    socklen_t len = sizeof(mem);
    uv_os_fd_t fd;

    if (uv_fileno((uv_handle_t *)&u->udp, &fd) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0 ||
        len < (SK_MEMINFO_DROPS + 1) * sizeof(uint32_t))
        return false;
    *drops = mem[SK_MEMINFO_DROPS];
    return true;
}

static void
on_drops_timer(uv_timer_t *t)
{
    struct udp_input *u = t->data;
    uint32_t now, n;

    if (!kernel_drops(u, &now)) return;
    n = now - u->kernel_seen;
    u->kernel_seen = now;
    u->base.stats.kernel_drops += n;
    u->drops_unlogged += n;
    if (u->drops_unlogged && input_log_allowed(&u->last_drop_log, uv_now(t->loop), 10000)) {
        log_msg(LOG_WARNING,
                "%s: the kernel dropped %llu datagrams: receive buffer full (the loop was "
                "too slow)",
                u->base.conf.name, (unsigned long long)u->drops_unlogged);
        u->drops_unlogged = 0;
    }
}

static void
udp_closed(uv_handle_t *h)
{
    struct udp_input *u = h->data;

    if (--u->closing > 0) return;
    free(u->rbuf);
    input_fini(&u->base);
    free(u);
}

static void
udp_hold(struct input *in, bool hold)
{
    struct udp_input *u = (struct udp_input *)in;

    if (hold)
        uv_udp_recv_stop(&u->udp);
    else
        uv_udp_recv_start(&u->udp, udp_alloc, udp_recv);
}

static void
udp_close(struct input *in)
{
    struct udp_input *u = (struct udp_input *)in;

    uv_udp_recv_stop(&u->udp);
    u->closing = 2;
    uv_close((uv_handle_t *)&u->udp, udp_closed);
    uv_close((uv_handle_t *)&u->drops_timer, udp_closed);
}

struct input *
in_udp_open(const struct input_sink *sink, uv_loop_t *loop, const struct conf_input *ci,
            const struct conf *conf, struct buf *err)
{
    struct udp_input *u = xcalloc(1, sizeof(*u));
    struct sockaddr_storage ss;
    struct buf e = BUF_INIT;
    uv_os_fd_t fd;
    unsigned flags = AF_UNSPEC;
    int rc;

    input_init(&u->base, sink, loop, ci, conf);
    u->base.close = udp_close;
    u->base.hold = udp_hold;
    if (input_resolve(ci->listen, SOCK_DGRAM, &ss, &e) < 0) {
        buf_printf(err, "input %s: %s", u->base.conf.name, buf_str(&e));
        buf_free(&e);
        input_fini(&u->base);
        free(u);
        return NULL;
    }
    if (CORRAL_UDP_RECVMMSG) flags |= UV_UDP_RECVMMSG;
    rc = uv_udp_init_ex(loop, &u->udp, flags);
    if (rc < 0 && (flags & UV_UDP_RECVMMSG)) rc = uv_udp_init_ex(loop, &u->udp, AF_UNSPEC);
    if (rc < 0) {
        buf_printf(err, "input %s: %s", u->base.conf.name, uv_strerror(rc));
        input_fini(&u->base);
        free(u);
        return NULL;
    }
    u->udp.data = u;
    uv_timer_init(loop, &u->drops_timer);
    u->drops_timer.data = u;
    /* from here on the handle exists and must be closed, so errors go through udp_close */
    rc = uv_udp_bind(&u->udp, (const struct sockaddr *)&ss, 0);
    if (rc < 0) {
        buf_printf(err, "input %s: cannot bind %s: %s", u->base.conf.name, ci->listen,
                   uv_strerror(rc));
        udp_close(&u->base);
        return NULL;
    }
    if (uv_fileno((uv_handle_t *)&u->udp, &fd) == 0) {
        char where[INET6_ADDRSTRLEN + 8];
        if (input_bound_name(fd, where, sizeof(where)))
            log_msg(LOG_INFO, "input %s: listening on %s", u->base.conf.name, where);
        input_set_rcvbuf(fd, CORRAL_UDP_RCVBUF, u->base.conf.name);
    }

    /* recvmmsg needs one 64 KiB slot per datagram of the batch; without it one slot */
    u->rbuflen = uv_udp_using_recvmmsg(&u->udp) ? UDP_SLOT * UDP_SLOTS : UDP_SLOT;
    u->rbuf = xmalloc(u->rbuflen);
    /* the counter of a new socket is 0, but a kernel may count from elsewhere: start from it */
    kernel_drops(u, &u->kernel_seen);
    uv_timer_start(&u->drops_timer, on_drops_timer, UDP_DROPS_EVERY_MS, UDP_DROPS_EVERY_MS);
    uv_unref((uv_handle_t *)&u->drops_timer);
    rc = uv_udp_recv_start(&u->udp, udp_alloc, udp_recv);
    if (rc < 0) {
        buf_printf(err, "input %s: cannot receive: %s", u->base.conf.name, uv_strerror(rc));
        udp_close(&u->base);
        return NULL;
    }
    log_msg(LOG_DEBUG, "%s: %s", u->base.conf.name,
            uv_udp_using_recvmmsg(&u->udp) ? "batched reads (recvmmsg)" : "one read per datagram");
    return &u->base;
}
