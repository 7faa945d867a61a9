/*
 * input: opens an input by type (the modules are in_udp.c, in_stream.c for
 * TCP, TLS and unix-stream, in_unix.c for unix-dgram, in_file.c, in_stdin.c), and
 * the helpers they share (in_common.h): counting and submitting messages,
 * where a datagram's message ends, resolving listen addresses, naming peers,
 * socket buffers and unix socket files.
 */
#include "agent/input/in_common.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct input *
input_open(const struct input_sink *sink, uv_loop_t *loop, const struct conf_input *ci,
           const struct conf *conf, struct buf *err)
{
    struct input *in = NULL;
    struct buf e = BUF_INIT;

    switch (ci->type) {
    case CONF_IN_UDP: in = in_udp_open(sink, loop, ci, conf, &e); break;
    case CONF_IN_TCP:
    case CONF_IN_TLS:
    case CONF_IN_UNIX_STREAM: in = in_stream_open(sink, loop, ci, conf, &e); break;
    case CONF_IN_UNIX_DGRAM: in = in_unix_dgram_open(sink, loop, ci, conf, &e); break;
    case CONF_IN_FILE: in = in_file_open(sink, loop, ci, conf, &e); break;
    case CONF_IN_STDIN: in = in_stdin_open(sink, loop, ci, conf, &e); break;
    case CONF_IN_SNMP_TRAP: in = in_snmptrap_open(sink, loop, ci, conf, &e); break;
    default: buf_printf(&e, "input %s: unknown type %d", ci->name ? ci->name : "?", (int)ci->type);
    }
    if (!in) {
        /* "file:line: message" lines, as server_start() reports every configuration error */
        if (conf->file && ci->line > 0)
            buf_printf(err, "%s:%d: %s\n", conf->file, ci->line, buf_str(&e));
        else
            buf_printf(err, "%s\n", buf_str(&e));
    }
    buf_free(&e);
    return in;
}

void
input_close(struct input *in)
{
    if (in) in->close(in);
}

const char *
input_name(const struct input *in)
{
    return in->conf.name;
}

const struct conf_input *
input_conf(const struct input *in)
{
    return &in->conf;
}

const struct input_stats *
input_get_stats(const struct input *in)
{
    return &in->stats;
}

bool
input_can_pause(const struct input *in)
{
    return in->pause != NULL;
}

void
input_pause(struct input *in, bool pause)
{
    if (!in->pause || in->paused == pause) return;
    in->paused = pause;
    in->pause(in, pause);
}

bool
input_can_hold(const struct input *in)
{
    return in->hold != NULL;
}

void
input_hold(struct input *in, bool hold)
{
    if (!in->hold || in->held == hold) return;
    in->held = hold;
    in->hold(in, hold);
}

const char *
input_tls_peer(const struct input *in)
{
    return in->tls_peer;
}

int
input_reload_prepare(struct input *in, const struct conf_input *ci, const struct conf *conf,
                     struct buf *err)
{
    struct buf e = BUF_INIT;
    int rc;

    if (!in->reload_prepare) return 0;
    rc = in->reload_prepare(in, ci, &e);
    if (rc < 0) {
        if (conf->file && ci->line > 0)
            buf_printf(err, "%s:%d: input %s: %s\n", conf->file, ci->line, in->conf.name,
                       buf_str(&e));
        else
            buf_printf(err, "input %s: %s\n", in->conf.name, buf_str(&e));
    }
    buf_free(&e);
    return rc;
}

void
input_reload_commit(struct input *in)
{
    if (in->reload_commit) in->reload_commit(in);
}

bool
input_finished(const struct input *in)
{
    return in->finished;
}

/* ---- the common head ---- */

void
input_init(struct input *in, const struct input_sink *sink, uv_loop_t *loop,
           const struct conf_input *ci, const struct conf *conf)
{
    conf_input_copy(&in->conf, ci);
    if (sink)
        in->sink = *sink;
    else
        memset(&in->sink, 0, sizeof(in->sink));
    in->loop = loop;
    in->limits_changed = NULL;
    in->pause = NULL;
    in->reload_prepare = NULL;
    in->reload_commit = NULL;
    in->tls_peer = NULL;
    in->paused = false;
    input_set_limits(in, conf);
    memset(&in->stats, 0, sizeof(in->stats));
    in->finished = false;
}

void
input_set_limits(struct input *in, const struct conf *conf)
{
    in->max_message_size = conf->max_message_size ? conf->max_message_size : 65536;
    in->max_connections = conf->max_connections;
    in->max_per_peer = conf->max_connections_per_peer;
    in->idle_timeout_ms = conf->idle_timeout > 0 ? (uint64_t)(conf->idle_timeout * 1000.0) : 0;
    if (conf->idle_timeout > 0 && in->idle_timeout_ms == 0) in->idle_timeout_ms = 1;
    if (in->limits_changed) in->limits_changed(in);
}

void
input_fini(struct input *in)
{
    conf_input_clear(&in->conf);
}

void
input_deliver(struct input *in, const char *data, size_t len, bool truncated, const char *peer)
{
    in->stats.received++;
    in->stats.bytes += len;
    if (truncated) in->stats.truncated++;
    if (in->sink.deliver) in->sink.deliver(in->sink.ctx, in, data, len, peer);
}

size_t
input_datagram_len(const struct input *in, const char *p, size_t n, bool *truncated)
{
    if (!*truncated) {
        while (n && p[n - 1] == '\0') n--;
        if (n && p[n - 1] == '\n') n--;
        if (n && p[n - 1] == '\r') n--;
        while (n && p[n - 1] == '\0') n--;
    }
    if (n > in->max_message_size) {
        n = in->max_message_size;
        *truncated = true;
    }
    return n;
}

bool
input_log_allowed(uint64_t *last_ms, uint64_t now_ms, uint64_t every_ms)
{
    if (*last_ms && now_ms - *last_ms < every_ms) return false;
    *last_ms = now_ms ? now_ms : 1;
    return true;
}

/* ---- addresses ---- */

static bool
have_ipv6(void)
{
    static int known = -1;
    int fd;

    if (known < 0) {
        fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        known = fd >= 0;
        if (fd >= 0) close(fd);
    }
    return known;
}

int
input_resolve(const char *listen, int socktype, struct sockaddr_storage *ss, struct buf *err)
{
    char host[256];
    int port, rc;
    struct addrinfo hints, *res = NULL;
    char service[16];

    memset(ss, 0, sizeof(*ss));
    if (!listen || !conf_split_address(listen, host, sizeof(host), &port)) {
        buf_printf(err, "bad address \"%s\" (expected host:port, [v6-address]:port or :port)",
                   listen ? listen : "");
        return -1;
    }
    if (host[0] == '\0' || strcmp(host, "*") == 0) {
        /* every address: a dual-stack IPv6 socket takes IPv4 as well */
        if (have_ipv6())
            rc = uv_ip6_addr("::", port, (struct sockaddr_in6 *)ss);
        else
            rc = uv_ip4_addr("0.0.0.0", port, (struct sockaddr_in *)ss);
        if (rc < 0) {
            buf_printf(err, "%s: %s", listen, uv_strerror(rc));
            return -1;
        }
        return 0;
    }
    /* literal addresses need no resolver */
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0) return 0;
    memset(ss, 0, sizeof(*ss));
    if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0) return 0;
    memset(ss, 0, sizeof(*ss));

    /* a name: resolved once, at opening (blocking is fine before the loop serves anything) */
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = socktype;
    hints.ai_flags = AI_PASSIVE;
    snprintf(service, sizeof(service), "%d", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || !res) {
        buf_printf(err, "%s: cannot resolve \"%s\": %s", listen, host,
                   rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        if (res) freeaddrinfo(res);
        return -1;
    }
    if (res->ai_addrlen > sizeof(*ss)) {
        buf_printf(err, "%s: unusable address for \"%s\"", listen, host);
        freeaddrinfo(res);
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

void
input_peer_name(const struct sockaddr *sa, char *out, size_t outlen)
{
    int rc = UV_EAFNOSUPPORT;

    if (outlen == 0) return;
    out[0] = '\0';
    if (!sa) return;
    if (sa->sa_family == AF_INET) {
        rc = uv_ip4_name((const struct sockaddr_in *)sa, out, outlen);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            /* a dual-stack socket's IPv4 client: name it as IPv4, as it would be on an IPv4 socket
             */
            struct sockaddr_in s4;
            memset(&s4, 0, sizeof(s4));
            s4.sin_family = AF_INET;
            memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
            rc = uv_ip4_name(&s4, out, outlen);
        } else {
            rc = uv_ip6_name(s6, out, outlen);
        }
    }
    if (rc != 0) out[0] = '\0';
}

bool
input_bound_name(uv_os_fd_t fd, char *out, size_t outlen)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[INET6_ADDRSTRLEN];
    unsigned port;

    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) return false;
    input_peer_name((const struct sockaddr *)&ss, host, sizeof(host));
    if (!host[0]) return false;
    port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
    snprintf(out, outlen, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
    return true;
}

void
input_set_rcvbuf(int fd, int want, const char *name)
{
    int got = 0;
    socklen_t len = sizeof(got);
    bool forced = true;

    /* SO_RCVBUFFORCE ignores net.core.rmem_max but needs CAP_NET_ADMIN */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) < 0) {
        forced = false;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want)) < 0)
            log_msg(LOG_WARNING, "%s: cannot set the receive buffer: %s", name, strerror(errno));
    }
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) < 0) {
        log_msg(LOG_WARNING, "%s: cannot read the receive buffer size: %s", name, strerror(errno));
        return;
    }
    /* Linux reports twice the size asked for (the other half is its bookkeeping) */
    if (got / 2 >= want)
        log_msg(LOG_INFO, "%s: receive buffer %d KiB", name, got / 2 / 1024);
    else if (forced)
        log_msg(LOG_WARNING,
                "%s: receive buffer %d KiB, not the %d KiB asked for: bursts may be dropped by "
                "the kernel",
                name, got / 2 / 1024, want / 1024);
    else
        /*
         * unprivileged, SO_RCVBUF stops at net.core.rmem_max: say what
         * lets it through (the Debian package raises it from sysctl.d)
         */
        log_msg(LOG_WARNING,
                "%s: receive buffer %d KiB, not the %d KiB asked for (net.core.rmem_max is lower "
                "and corrald lacks CAP_NET_ADMIN): bursts may be dropped by the kernel; allow it "
                "with `sysctl -w net.core.rmem_max=%d`, and the same line in a file of "
                "/etc/sysctl.d for the next boots",
                name, got / 2 / 1024, want / 1024, want);
}

/* ---- unix socket files ---- */

/* What input_unix_prepare refuses, without touching the file system. */
static int
unix_path_check(const char *path, struct buf *err)
{
    struct sockaddr_un sun;
    struct stat st;

    if (!path || !*path) {
        buf_printf(err, "empty socket path");
        return -1;
    }
    if (strlen(path) >= sizeof(sun.sun_path)) {
        buf_printf(err, "%s: socket path longer than %zu bytes", path, sizeof(sun.sun_path) - 1);
        return -1;
    }
    /* never remove a file that is not a socket: the path is probably a mistake */
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        buf_printf(err, "%s: exists and is not a socket", path);
        return -1;
    }
    return 0;
}

int
input_unix_prepare(const char *path, struct buf *err)
{
    struct stat st;

    if (unix_path_check(path, err) < 0) return -1;
    if (lstat(path, &st) == 0) {
        if (unlink(path) < 0 && errno != ENOENT) {
            buf_printf(err, "%s: cannot remove the old socket: %s", path, strerror(errno));
            return -1;
        }
        log_msg(LOG_DEBUG, "%s: removed an old socket", path);
    } else if (errno != ENOENT) {
        buf_printf(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int
input_unix_created(const char *path, uint32_t mode, dev_t *dev, ino_t *ino, struct buf *err)
{
    struct stat st;

    if (chmod(path, (mode_t)mode) < 0) {
        buf_printf(err, "%s: cannot set mode %04o: %s", path, (unsigned)mode, strerror(errno));
        return -1;
    }
    if (lstat(path, &st) < 0) {
        buf_printf(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    *dev = st.st_dev;
    *ino = st.st_ino;
    return 0;
}

void
input_unix_remove(const char *path, dev_t dev, ino_t ino)
{
    struct stat st;

    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
        unlink(path);
}

int
input_check(const struct conf_input *ci, const struct conf *conf, struct buf *err)
{
    struct sockaddr_storage ss;
    struct buf e = BUF_INIT;
    int rc = 0;

    switch (ci->type) {
    case CONF_IN_UDP: rc = input_resolve(ci->listen, SOCK_DGRAM, &ss, &e); break;
    case CONF_IN_TCP: rc = input_resolve(ci->listen, SOCK_STREAM, &ss, &e); break;
    case CONF_IN_TLS: {
        /* the certificate, key and CA are loaded as at opening: -t reports what start would */
        struct tls_ctx *ctx = NULL;
        rc = input_resolve(ci->listen, SOCK_STREAM, &ss, &e);
        if (rc == 0 && !(ctx = tls_ctx_new(&ci->tls, true, &e))) rc = -1;
        if (rc == 0) tls_ctx_unref(ctx);
        break;
    }
    case CONF_IN_UNIX_STREAM:
    case CONF_IN_UNIX_DGRAM: rc = unix_path_check(ci->path, &e); break;
    default: break; /* a file may appear later; stdin is always there */
    }
    if (rc < 0) {
        if (conf->file && ci->line > 0)
            buf_printf(err, "%s:%d: input %s: %s\n", conf->file, ci->line, ci->name, buf_str(&e));
        else
            buf_printf(err, "input %s: %s\n", ci->name, buf_str(&e));
    }
    buf_free(&e);
    return rc;
}
