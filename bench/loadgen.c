/* bench/loadgen.c: a syslog load generator that is not the bottleneck.
 *
 * loggen (syslog-ng's) makes one send() a message and tops out below
 * corrald, so the daemon's own ceiling could not be measured with it.  This
 * sender loads a corpus (one syslog line a line) into memory once, frames all
 * of it once (RFC 6587 octet counting, or newline), and then replays it over
 * N TCP connections, one thread each, in large writes straight from that
 * buffer (no per-message work at all at full speed), or over UDP in
 * sendmmsg() batches of one datagram a line.  Lines are sent verbatim: their
 * own time stamps (corrald's correlation runs on its own clock).  With -T the
 * TCP connections speak TLS (OpenSSL, TLS 1.2 or later; RFC 5425 is octet
 * counting over TLS, the default framing here too): the same large writes
 * go through SSL_write(), so the only work a message costs is its share of
 * the encryption.  The server's certificate is checked only when --ca is
 * given (a benchmark on loopback needs no more); --cert/--key present a
 * client certificate.
 *
 *   loadgen [-U | -T [--ca FILE] [--cert FILE --key FILE]] [-c CONNS]
 *           [-r RATE] [-d SECONDS] [-n COUNT] [-N] [-H HOST] -p PORT -f CORPUS
 *   loadgen --sink [-U | -T [--cert FILE --key FILE]] [-p PORT]
 *                                       a receiver that reads and discards
 *   loadgen --self-test [options] -f CORPUS   sends to an in-process sink
 *
 * The TLS sink decrypts what it reads (one thread a connection) with the
 * certificate given, or with a self-signed one made at start-up (P-256):
 * loadgen's ceiling over TLS includes the receiver's decryption, as a
 * daemon's does.
 *
 * It stops after -d seconds or -n messages (whichever comes first; at least
 * one of them), and prints what it sent: human text on stderr and one JSON
 * line on stdout (messages, bytes, elapsed, rate, per connection, and
 * `started`: CLOCK_MONOTONIC seconds when sending began, after the corpus was
 * loaded, so that a benchmark can time a daemon from the first byte).  A
 * receiver that closes, or refuses, ends that connection with its error in
 * the report (exit status 1); SIGPIPE is ignored.  Blocking sockets with a
 * send timeout: a receiver that stops reading (back-pressure) makes writes
 * time out (EAGAIN), and the deadline is checked between them.  A message
 * cut by the deadline is finished (within a grace period) so the receiver
 * never sees a truncated frame (over TLS, a write is retried whole within
 * the grace period: OpenSSL needs the same write again).  Not part of corral: built as a noinst
 * program for bench/daemon.sh and tests/integration/bench_loadgen.sh.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS      1024
#define TCP_CHUNK      (256 * 1024) /* bytes a write at full speed */
#define UDP_BATCH      64           /* datagrams a sendmmsg() */
#define UDP_MAX        65507
#define GRACE_SECS     10 /* to finish a message cut by the deadline */
#define SNDTIMEO_MS    200
#define HANDSHAKE_SECS 10 /* TLS: a server that does not finish its handshake */

struct corpus {
    char *buf;    /* every message, framed, back to back */
    size_t *off;  /* message i is buf[off[i] .. off[i + 1]) */
    size_t *plen; /* UDP: length of message i without framing */
    size_t n;     /* messages */
};

struct conn {
    pthread_t tid;
    int idx;
    uint64_t quota;    /* messages to send, 0: no limit */
    double rate;       /* messages a second, 0: full speed */
    uint64_t messages; /* sent completely */
    uint64_t bytes;
    uint64_t refused;                 /* UDP: datagrams the kernel refused (ICMP unreachable) */
    int err;                          /* errno that ended it, 0 if it ended normally */
    const char *what;                 /* where err happened */
    SSL *ssl;                         /* TLS: the connection's session */
    char detail[160];                 /* TLS: OpenSSL's reason, when it ended one */
    const char *tls_version, *cipher; /* TLS: what the handshake agreed */
};

static struct corpus C;
static int use_udp, newline, use_tls;
static const char *tls_ca, *tls_cert, *tls_key; /* -T: --ca, --cert, --key */
static SSL_CTX *client_ctx;                     /* -T: shared by the connections */
static const char *host = "127.0.0.1", *port;
static double duration; /* seconds, 0: none */
static struct timespec t_start;
static volatile sig_atomic_t interrupted;

static double
now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static double
since_start(void)
{
    return now_s() - ((double)t_start.tv_sec + t_start.tv_nsec / 1e9);
}

static void
on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Reads FILE, drops CRs and empty lines, and frames every line. */
static int
corpus_load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) < 0 || st.st_size == 0) {
        fprintf(stderr, "loadgen: %s: empty or unreadable\n", path);
        fclose(f);
        return -1;
    }
    size_t sz = (size_t)st.st_size;
    char *raw = malloc(sz + 1);
    if (!raw || fread(raw, 1, sz, f) != sz) {
        fprintf(stderr, "loadgen: %s: read failed\n", path);
        free(raw);
        fclose(f);
        return -1;
    }
    fclose(f);
    raw[sz] = '\n';
    size_t lines = 0;
    for (size_t i = 0; i <= sz; i++) lines += raw[i] == '\n';
    /* framed size: each line plus at most 11 bytes of octet count and space */
    C.buf = malloc(sz + 1 + lines * 12);
    C.off = malloc((lines + 1) * sizeof *C.off);
    C.plen = malloc((lines + 1) * sizeof *C.plen);
    if (!C.buf || !C.off || !C.plen) {
        fprintf(stderr, "loadgen: out of memory for %zu lines\n", lines);
        free(raw);
        return -1;
    }
    size_t w = 0;
    char *p = raw, *end = raw + sz;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p) + 1);
        size_t len = (size_t)(nl - p);
        if (len && p[len - 1] == '\r') len--;
        if (len) {
            if (use_udp && len > UDP_MAX) {
                fprintf(stderr, "loadgen: %s: line %zu: %zu bytes, too long for a datagram\n", path,
                        C.n + 1, len);
                free(raw);
                return -1;
            }
            C.off[C.n] = w;
            C.plen[C.n] = len;
            if (!use_udp && !newline) w += (size_t)sprintf(C.buf + w, "%zu ", len);
            memcpy(C.buf + w, p, len);
            w += len;
            if (!use_udp && newline) C.buf[w++] = '\n';
            C.n++;
        }
        p = nl + 1;
    }
    C.off[C.n] = w;
    free(raw);
    if (!C.n) {
        fprintf(stderr, "loadgen: %s: no lines\n", path);
        return -1;
    }
    return 0;
}

static int
open_socket(struct conn *c)
{
    struct addrinfo hints = {.ai_socktype = use_udp ? SOCK_DGRAM : SOCK_STREAM}, *ai, *a;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc) {
        fprintf(stderr, "loadgen: %s:%s: %s\n", host, port, gai_strerror(rc));
        c->err = EINVAL;
        c->what = "resolve";
        return -1;
    }
    int fd = -1;
    for (a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        c->err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        c->what = "connect";
        return -1;
    }
    c->err = 0;
    struct timeval tv = {.tv_sec = 0, .tv_usec = SNDTIMEO_MS * 1000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (!use_udp) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    } else {
        int sz = 4 << 20;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    }
    return fd;
}

/* Whether to stop taking new messages: the deadline passed or a signal came. */
static int
time_up(void)
{
    return interrupted || (duration > 0 && since_start() >= duration);
}

/* Writes buf[0..len) completely; 0, or -1 with c->err set.  Timeouts
 * (EAGAIN: the receiver is not reading) retry until the grace deadline when
 * finishing, else until time_up(). */
static int
write_all(struct conn *c, int fd, const char *buf, size_t len, size_t *done, double grace_until)
{
    *done = 0;
    while (*done < len) {
        ssize_t k = send(fd, buf + *done, len - *done, MSG_NOSIGNAL);
        if (k > 0) {
            *done += (size_t)k;
            continue;
        }
        if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (grace_until > 0 ? now_s() >= grace_until : time_up()) return 1;
            continue;
        }
        c->err = k < 0 ? errno : EPIPE;
        c->what = "send";
        return -1;
    }
    return 0;
}

/* ---- TLS ---- */

/* Ends connection c with OpenSSL's reason for the failure of call (e: its
 * SSL_get_error()). */
static void
tls_failed(struct conn *c, const char *call, int e)
{
    unsigned long q = ERR_get_error();
    c->err = e == SSL_ERROR_SYSCALL && errno ? errno : EPROTO;
    c->what = call;
    if (q)
        ERR_error_string_n(q, c->detail, sizeof c->detail);
    else if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !errno))
        snprintf(c->detail, sizeof c->detail, "the server closed the connection");
    ERR_clear_error();
}

static void
tls_print_errors(const char *what)
{
    unsigned long q;
    char b[200];
    fprintf(stderr, "loadgen: %s\n", what);
    while ((q = ERR_get_error())) {
        ERR_error_string_n(q, b, sizeof b);
        fprintf(stderr, "loadgen:   %s\n", b);
    }
}

/* Loads --cert and --key into ctx, or (a sink without them) a self-signed
 * P-256 certificate made now.  0 or -1. */
static int
tls_ctx_identity(SSL_CTX *ctx, int self_signed)
{
    if (tls_cert) {
        if (SSL_CTX_use_certificate_chain_file(ctx, tls_cert) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, tls_key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            tls_print_errors("cannot load --cert/--key");
            return -1;
        }
        return 0;
    }
    if (!self_signed) return 0;
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    int ok = pk && x && X509_set_version(x, 2) && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
             X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
             X509_gmtime_adj(X509_getm_notAfter(x), 86400) && X509_set_pubkey(x, pk) &&
             X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                        (const unsigned char *)"loadgen-sink", -1, -1, 0) &&
             X509_set_issuer_name(x, X509_get_subject_name(x)) && X509_sign(x, pk, EVP_sha256()) &&
             SSL_CTX_use_certificate(ctx, x) == 1 && SSL_CTX_use_PrivateKey(ctx, pk) == 1;
    X509_free(x);
    EVP_PKEY_free(pk);
    if (!ok) tls_print_errors("cannot make a self-signed certificate");
    return ok ? 0 : -1;
}

/* The context of the sending side (server = 0) or of the sink; NULL after
 * printing why not. */
static SSL_CTX *
tls_ctx_new(int server)
{
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        tls_print_errors("cannot make a TLS context");
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (tls_ctx_identity(ctx, server) < 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (!server && tls_ca) {
        struct stat st;
        int dir = stat(tls_ca, &st) == 0 && S_ISDIR(st.st_mode);
        if (SSL_CTX_load_verify_locations(ctx, dir ? NULL : tls_ca, dir ? tls_ca : NULL) != 1) {
            tls_print_errors("cannot load --ca");
            SSL_CTX_free(ctx);
            return NULL;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    return ctx;
}

/* The client side of the handshake on fd (blocking, with send and receive
 * timeouts so that the deadline is seen).  0, or -1 with c->err set. */
static int
tls_connect(struct conn *c, int fd)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = SNDTIMEO_MS * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    c->ssl = SSL_new(client_ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
        tls_failed(c, "SSL_new", SSL_ERROR_SSL);
        return -1;
    }
    unsigned char a[16];
    int literal = inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
    if (!literal) SSL_set_tlsext_host_name(c->ssl, host); /* SNI takes names only */
    if (tls_ca && SSL_set1_host(c->ssl, host) != 1) {     /* a name or an address */
        tls_failed(c, "SSL_set1_host", SSL_ERROR_SSL);
        return -1;
    }
    double until = now_s() + HANDSHAKE_SECS;
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_connect(c->ssl);
        if (r == 1) break;
        int e = SSL_get_error(c->ssl, r);
        if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && now_s() < until &&
            !interrupted)
            continue;
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) errno = ETIMEDOUT;
        tls_failed(c, "TLS handshake", e);
        return -1;
    }
    c->tls_version = SSL_get_version(c->ssl);
    c->cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(c->ssl));
    return 0;
}

/* Writes buf[0..len) over TLS, completely: 0, or -1 with c->err set.
 * Without SSL_MODE_ENABLE_PARTIAL_WRITE, SSL_write() returns only once all
 * of it is sent, and after a timeout (the receiver not reading) it must be
 * called again with the same bytes: so the write is never cut, and one that
 * the deadline catches is finished within GRACE_SECS, else the connection
 * ends (the last frame may then be cut: counted in neither figure). */
static int
tls_write_all(struct conn *c, const char *buf, size_t len)
{
    double grace_until = 0;
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int k = SSL_write(c->ssl, buf, (int)len);
        if (k > 0) return 0;
        int e = SSL_get_error(c->ssl, k);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            if (time_up()) {
                if (grace_until == 0)
                    grace_until = now_s() + GRACE_SECS;
                else if (now_s() >= grace_until) {
                    c->err = ETIMEDOUT;
                    c->what = "finishing the last write";
                    return -1;
                }
            }
            continue;
        }
        tls_failed(c, "SSL_write", e);
        return -1;
    }
}

/* Messages allowed now under the rate, at most want; sleeps until one is. */
static uint64_t
pace(struct conn *c, uint64_t want)
{
    if (c->rate <= 0) return want;
    for (;;) {
        double t = since_start();
        double allowed = c->rate * t - (double)c->messages;
        if (allowed >= 1) return (uint64_t)allowed < want ? (uint64_t)allowed : want;
        if (time_up()) return 0;
        double wait = (1 - allowed) / c->rate;
        if (wait > 0.05) wait = 0.05;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(wait * 1e9) + 1000};
        nanosleep(&ts, NULL);
    }
}

static void
tcp_run(struct conn *c, int fd, size_t i)
{
    while (!time_up() && (!c->quota || c->messages < c->quota)) {
        uint64_t want = c->quota ? c->quota - c->messages : UINT64_MAX;
        want = pace(c, want);
        if (!want) break;
        /* a run of whole messages from i, not past the corpus's end */
        size_t j = i + 1;
        while (j < C.n && (uint64_t)(j - i) < want && C.off[j + 1] - C.off[i] <= TCP_CHUNK) j++;
        size_t len = C.off[j] - C.off[i], done;
        int rc;
        if (c->ssl) {
            rc = tls_write_all(c, C.buf + C.off[i], len);
            done = rc == 0 ? len : 0;
        } else {
            rc = write_all(c, fd, C.buf + C.off[i], len, &done, 0);
        }
        if (rc == 1) {
            /* time is up mid-run: finish the message that was cut */
            size_t m = i;
            while (m < j && C.off[m + 1] - C.off[i] <= done) m++;
            if (m < j && C.off[m] - C.off[i] < done) {
                size_t more, need = C.off[m + 1] - C.off[i] - done;
                /* if it is still cut, it counts in the bytes only */
                write_all(c, fd, C.buf + C.off[i] + done, need, &more, now_s() + GRACE_SECS);
                done += more;
            }
        }
        c->bytes += done;
        size_t m = i;
        while (m < j && C.off[m + 1] - C.off[i] <= done) m++;
        c->messages += m - i;
        if (rc != 0) {
            if (rc == 1 && c->err == 0 && m < j && C.off[m] - C.off[i] < done) {
                c->err = ETIMEDOUT;
                c->what = "finishing the last message";
            }
            break;
        }
        i = j == C.n ? 0 : j;
    }
}

static void
udp_run(struct conn *c, int fd, size_t i)
{
    struct mmsghdr mm[UDP_BATCH];
    struct iovec iov[UDP_BATCH];
    while (!time_up() && (!c->quota || c->messages < c->quota)) {
        uint64_t want = c->quota ? c->quota - c->messages : UDP_BATCH;
        if (want > UDP_BATCH) want = UDP_BATCH;
        want = pace(c, want);
        if (!want) break;
        unsigned n = 0;
        size_t k = i;
        while (n < want) {
            iov[n].iov_base = C.buf + C.off[k];
            iov[n].iov_len = C.plen[k];
            memset(&mm[n], 0, sizeof mm[n]);
            mm[n].msg_hdr.msg_iov = &iov[n];
            mm[n].msg_hdr.msg_iovlen = 1;
            n++;
            k = k + 1 == C.n ? 0 : k + 1;
        }
        int sent = sendmmsg(fd, mm, n, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
                continue;
            if (errno == ECONNREFUSED) { /* an ICMP error of an earlier datagram: keep on */
                c->refused++;
                continue;
            }
            c->err = errno;
            c->what = "sendmmsg";
            break;
        }
        for (int s = 0; s < sent; s++) {
            c->bytes += iov[s].iov_len;
            i = i + 1 == C.n ? 0 : i + 1;
        }
        c->messages += (uint64_t)sent;
    }
}

static void *
conn_main(void *arg)
{
    struct conn *c = arg;
    int fd = open_socket(c);
    if (fd < 0) return NULL;
    /* connections start at different places of the corpus, as real senders would */
    size_t i = (size_t)((uint64_t)C.n * (uint64_t)c->idx / MAX_CONNS) % C.n;
    if (use_udp)
        udp_run(c, fd, i);
    else if (!use_tls || tls_connect(c, fd) == 0)
        tcp_run(c, fd, i);
    if (c->ssl) {
        /* close_notify, so that the receiver knows the stream ended whole */
        if (!c->err) {
            ERR_clear_error();
            SSL_shutdown(c->ssl);
        }
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    close(fd);
    return NULL;
}

/* ---- the sink: reads and discards, for measuring loadgen itself ---- */

struct sink {
    int lfd;
    SSL_CTX *tls;              /* -T: the readers decrypt with it */
    uint64_t bytes, datagrams; /* updated with atomic adds by the readers */
    uint64_t tls_failed;       /* -T: handshakes that failed */
};

static void *
sink_reader(void *arg)
{
    int fd = (int)(intptr_t)((void **)arg)[0];
    struct sink *s = ((void **)arg)[1];
    free(arg);
    char *b = malloc(1 << 20);
    ssize_t k;
    if (s->tls) {
        SSL *ssl = SSL_new(s->tls);
        if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_accept(ssl) != 1) {
            __atomic_add_fetch(&s->tls_failed, 1, __ATOMIC_RELAXED);
        } else {
            int n;
            while (b && (n = SSL_read(ssl, b, 1 << 20)) > 0)
                __atomic_add_fetch(&s->bytes, (uint64_t)n, __ATOMIC_RELAXED);
        }
        SSL_free(ssl);
        ERR_clear_error();
        free(b);
        close(fd);
        return NULL;
    }
    while (b && (k = read(fd, b, 1 << 20)) != 0) {
        if (k < 0) {
            if (errno == EINTR) continue;
            break;
        }
        __atomic_add_fetch(&s->bytes, (uint64_t)k, __ATOMIC_RELAXED);
    }
    free(b);
    close(fd);
    return NULL;
}

static void *
sink_main(void *arg)
{
    struct sink *s = arg;
    if (use_udp) {
        enum { B = 64 };
        static char bufs[B][9000]; /* longer datagrams are cut: a sink */
        struct mmsghdr mm[B];
        struct iovec iov[B];
        for (;;) {
            for (int i = 0; i < B; i++) {
                iov[i] = (struct iovec){bufs[i], sizeof bufs[i]};
                memset(&mm[i], 0, sizeof mm[i]);
                mm[i].msg_hdr.msg_iov = &iov[i];
                mm[i].msg_hdr.msg_iovlen = 1;
            }
            int n = recvmmsg(s->lfd, mm, B, MSG_WAITFORONE, NULL);
            if (n < 0) {
                if (errno == EINTR) continue;
                return NULL;
            }
            uint64_t by = 0;
            for (int i = 0; i < n; i++) by += mm[i].msg_len;
            __atomic_add_fetch(&s->bytes, by, __ATOMIC_RELAXED);
            __atomic_add_fetch(&s->datagrams, (uint64_t)n, __ATOMIC_RELAXED);
        }
    }
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return NULL;
        }
        void **a = malloc(2 * sizeof *a);
        pthread_t t;
        if (!a) {
            close(fd);
            continue;
        }
        a[0] = (void *)(intptr_t)fd;
        a[1] = s;
        if (pthread_create(&t, NULL, sink_reader, a)) {
            free(a);
            close(fd);
            continue;
        }
        pthread_detach(t);
    }
}

/* Binds the sink on 127.0.0.1:PORT (0: any); the port, or -1. */
static int
sink_open(struct sink *s, const char *p)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(p ? p : "0"))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->lfd = socket(AF_INET, (use_udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
    int one = 1, big = 8 << 20;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (use_udp) setsockopt(s->lfd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    socklen_t sl = sizeof sa;
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        (!use_udp && listen(s->lfd, 128) < 0) ||
        getsockname(s->lfd, (struct sockaddr *)&sa, &sl) < 0) {
        fprintf(stderr, "loadgen: sink: %s\n", strerror(errno));
        return -1;
    }
    return ntohs(sa.sin_port);
}

/* ---- the report ---- */

static void
report(struct conn *cs, int nc, double elapsed, const struct sink *self)
{
    uint64_t m = 0, b = 0, refused = 0;
    int failed = 0;
    for (int i = 0; i < nc; i++) {
        m += cs[i].messages;
        b += cs[i].bytes;
        refused += cs[i].refused;
        failed += cs[i].err != 0;
    }
    const char *fr = use_udp ? "datagram" : newline ? "newline" : "octet-counting";
    const char *ver = NULL, *cipher = NULL; /* the first connection's: all have the same */
    for (int i = 0; i < nc && !ver; i++) ver = cs[i].tls_version, cipher = cs[i].cipher;
    fprintf(stderr,
            "loadgen: sent %" PRIu64 " messages, %" PRIu64 " bytes in %.3f s over %d %s "
            "connection(s) (%s): %.0f msg/s, %.1f MB/s\n",
            m, b, elapsed, nc,
            use_udp   ? "UDP"
            : use_tls ? "TLS"
                      : "TCP",
            fr, elapsed > 0 ? m / elapsed : 0, elapsed > 0 ? b / elapsed / 1e6 : 0);
    if (use_tls)
        fprintf(stderr, "loadgen: TLS %s %s, server certificate %s\n", ver ? ver : "-",
                cipher ? cipher : "-", tls_ca ? "verified (--ca)" : "NOT verified (no --ca)");
    for (int i = 0; i < nc; i++) {
        fprintf(stderr, "loadgen:   connection %d: %" PRIu64 " messages, %" PRIu64 " bytes", i,
                cs[i].messages, cs[i].bytes);
        if (cs[i].refused) fprintf(stderr, ", %" PRIu64 " refused", cs[i].refused);
        if (cs[i].err)
            fprintf(stderr, ", ended by %s: %s", cs[i].what,
                    cs[i].detail[0] ? cs[i].detail : strerror(cs[i].err));
        fputc('\n', stderr);
    }
    if (self)
        fprintf(stderr, "loadgen: self-test sink received %" PRIu64 " bytes\n",
                __atomic_load_n(&self->bytes, __ATOMIC_RELAXED));
    printf("{\"proto\":\"%s\",\"framing\":\"%s\",\"connections\":%d,\"messages\":%" PRIu64
           ",\"bytes\":%" PRIu64 ",\"elapsed\":%.6f,\"started\":%.6f,\"rate\":%.1f,\"failed\":%d",
           use_udp   ? "udp"
           : use_tls ? "tls"
                     : "tcp",
           fr, nc, m, b, elapsed, (double)t_start.tv_sec + t_start.tv_nsec / 1e9,
           elapsed > 0 ? m / elapsed : 0, failed);
    if (use_tls)
        printf(",\"tls_version\":\"%s\",\"cipher\":\"%s\",\"verify\":%s", ver ? ver : "",
               cipher ? cipher : "", tls_ca ? "true" : "false");
    if (self) printf(",\"sink_bytes\":%" PRIu64, __atomic_load_n(&self->bytes, __ATOMIC_RELAXED));
    printf(",\"per_connection\":[");
    for (int i = 0; i < nc; i++)
        printf("%s{\"messages\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"refused\":%" PRIu64
               ",\"error\":%s%s%s}",
               i ? "," : "", cs[i].messages, cs[i].bytes, cs[i].refused, cs[i].err ? "\"" : "",
               cs[i].err ? (cs[i].detail[0] ? cs[i].detail : strerror(cs[i].err)) : "null",
               cs[i].err ? "\"" : "");
    printf("]}\n");
    fflush(stdout);
}

static void
usage(void)
{
    fprintf(stderr,
            "usage: loadgen [-U | -T [--ca FILE] [--cert FILE --key FILE]] [-c CONNS]\n"
            "               [-r RATE] [-d SECONDS] [-n COUNT] [-N] [-H HOST] -p PORT -f CORPUS\n"
            "       loadgen --sink [-U | -T [--cert FILE --key FILE]] [-p PORT]\n"
            "       loadgen --self-test [-U | -T] [-c CONNS] [-d SECONDS] [-n COUNT] -f CORPUS\n"
            "  -U          UDP, one datagram a line, sendmmsg() batches (default TCP)\n"
            "  -T, --tls   TLS over TCP (RFC 5425); the server's certificate is NOT\n"
            "              verified unless --ca FILE|DIR is given (then also its name,\n"
            "              against -H); --cert/--key: a client certificate (PEM); the\n"
            "              sink: its certificate (default: a self-signed one made now)\n"
            "  -N          TCP/TLS newline framing (default RFC 6587 octet counting)\n"
            "  -c CONNS    connections (TCP) or sockets (UDP), one thread each (default 1)\n"
            "  -r RATE     messages a second in all (default 0: as fast as possible)\n"
            "  -d SECONDS  stop after this long;  -n COUNT  stop after this many messages\n"
            "  --sink      read and discard on 127.0.0.1:PORT (0: any; prints the port)\n"
            "  --self-test send to a sink in this process (loadgen's own ceiling)\n");
}

int
main(int argc, char **argv)
{
    enum { O_SELF = 256, O_CA, O_CERT, O_KEY };
    static const struct option lo[] = {
        {"sink", no_argument, NULL, 'S'},          {"self-test", no_argument, NULL, O_SELF},
        {"tls", no_argument, NULL, 'T'},           {"ca", required_argument, NULL, O_CA},
        {"cert", required_argument, NULL, O_CERT}, {"key", required_argument, NULL, O_KEY},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    const char *file = NULL;
    int nc = 1, sink = 0, self_test = 0, o;
    double rate = 0;
    uint64_t count = 0;
    while ((o = getopt_long(argc, argv, "UTNc:r:d:n:H:p:f:h", lo, NULL)) != -1) {
        char *e = NULL;
        switch (o) {
        case 'U': use_udp = 1; break;
        case 'N': newline = 1; break;
        case 'c': nc = (int)strtol(optarg, &e, 10); break;
        case 'r': rate = strtod(optarg, &e); break;
        case 'd': duration = strtod(optarg, &e); break;
        case 'n': count = strtoull(optarg, &e, 10); break;
        case 'H': host = optarg; break;
        case 'p': port = optarg; break;
        case 'f': file = optarg; break;
        case 'S': sink = 1; break;
        case O_SELF: self_test = 1; break;
        case 'T': use_tls = 1; break;
        case O_CA: tls_ca = optarg; break;
        case O_CERT: tls_cert = optarg; break;
        case O_KEY: tls_key = optarg; break;
        default: usage(); return 2;
        }
        if (e && *e) {
            fprintf(stderr, "loadgen: -%c %s: not a number\n", o, optarg);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if ((use_tls && use_udp) || (!tls_cert != !tls_key) || ((tls_ca || tls_cert) && !use_tls)) {
        fprintf(stderr, "loadgen: -T and -U exclude each other; --cert and --key go together, "
                        "with -T, as --ca does\n");
        return 2;
    }
    if (use_tls && self_test && tls_ca) {
        fprintf(stderr, "loadgen: --self-test: its sink's certificate is self-signed: no --ca\n");
        return 2;
    }

    if (sink) {
        struct sink s = {0};
        if (use_tls && !(s.tls = tls_ctx_new(1))) return 1;
        int p = sink_open(&s, port);
        if (p < 0) return 1;
        printf("%d\n", p);
        fflush(stdout);
        pthread_t t;
        if (pthread_create(&t, NULL, sink_main, &s)) return 1;
        while (!interrupted) pause();
        fprintf(stderr,
                "loadgen: sink received %" PRIu64 " bytes, %" PRIu64 " datagrams, %" PRIu64
                " failed TLS handshakes\n",
                __atomic_load_n(&s.bytes, __ATOMIC_RELAXED),
                __atomic_load_n(&s.datagrams, __ATOMIC_RELAXED),
                __atomic_load_n(&s.tls_failed, __ATOMIC_RELAXED));
        SSL_CTX_free(s.tls); /* a reference: readers still running keep theirs */
        return 0;
    }
    if (nc < 1 || nc > MAX_CONNS || rate < 0 || duration < 0 || !file || (!port && !self_test) ||
        (duration == 0 && count == 0)) {
        usage();
        fprintf(stderr, "loadgen: needs -f, -p (unless --self-test), -d or -n, "
                        "and 1 <= -c <= 1024\n");
        return 2;
    }
    if (corpus_load(file) < 0) return 1;
    if (use_tls && !(client_ctx = tls_ctx_new(0))) return 1;

    struct sink self = {0};
    char portbuf[16];
    if (self_test) {
        /* the sink presents a certificate of its own: not the client's --cert */
        const char *cert = tls_cert, *key = tls_key;
        tls_cert = tls_key = NULL;
        if (use_tls && !(self.tls = tls_ctx_new(1))) return 1;
        tls_cert = cert, tls_key = key;
        int p = sink_open(&self, "0");
        pthread_t t;
        if (p < 0 || pthread_create(&t, NULL, sink_main, &self)) return 1;
        pthread_detach(t);
        snprintf(portbuf, sizeof portbuf, "%d", p);
        host = "127.0.0.1";
        port = portbuf;
    }

    struct conn *cs = calloc((size_t)nc, sizeof *cs);
    if (!cs) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    for (int i = 0; i < nc; i++) {
        cs[i].idx = i * (MAX_CONNS / nc);
        cs[i].rate = rate / nc;
        if (count) {
            cs[i].quota = count / (uint64_t)nc + ((uint64_t)i < count % (uint64_t)nc);
            if (!cs[i].quota) continue; /* more connections than messages */
        }
        if (pthread_create(&cs[i].tid, NULL, conn_main, &cs[i])) {
            fprintf(stderr, "loadgen: cannot start thread %d\n", i);
            return 1;
        }
    }
    for (int i = 0; i < nc; i++)
        if (!count || cs[i].quota) pthread_join(cs[i].tid, NULL);
    double elapsed = since_start();
    if (self_test && !use_udp) {
        /* wait (bounded) until the sink has read everything that was sent */
        uint64_t b = 0;
        for (int i = 0; i < nc; i++) b += cs[i].bytes;
        double until = now_s() + 10;
        while (__atomic_load_n(&self.bytes, __ATOMIC_RELAXED) < b && now_s() < until) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    report(cs, nc, elapsed, self_test ? &self : NULL);
    int failed = 0;
    for (int i = 0; i < nc; i++) failed |= cs[i].err != 0;
    if (count && !duration && !interrupted) { /* -n alone: all of them, or a failure */
        uint64_t m = 0;
        for (int i = 0; i < nc; i++) m += cs[i].messages;
        if (m < count) failed = 1;
    }
    free(cs);
    SSL_CTX_free(client_ctx);
    SSL_CTX_free(self.tls);
    return failed ? 1 : 0;
}
