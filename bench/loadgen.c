/* bench/loadgen.c: a syslog load generator that is not the bottleneck.
 *
 * loggen (syslog-ng's) makes one send() a message and tops out below
 * corrald, so the daemon's own ceiling could not be measured with it.  This
 * sender loads a corpus (one syslog line a line) into memory once, frames all
 * of it once (RFC 6587 octet counting, or newline), and then replays it over
 * N TCP connections, one thread each, in large writes straight from that
 * buffer (no per-message work at all at full speed), or over UDP in
 * sendmmsg() batches of one datagram a line.  Lines are sent verbatim: their
 * own time stamps (corrald's correlation runs on its own clock).
 *
 *   loadgen [-U] [-c CONNS] [-r RATE] [-d SECONDS] [-n COUNT] [-N]
 *           [-H HOST] -p PORT -f CORPUS
 *   loadgen --sink [-U] [-p PORT]       a receiver that reads and discards
 *   loadgen --self-test [options] -f CORPUS   sends to an in-process sink
 *
 * It stops after -d seconds or -n messages (whichever comes first; at least
 * one of them), and prints what it sent: human text on stderr and one JSON
 * line on stdout (messages, bytes, elapsed, rate, per connection).  A
 * receiver that closes, or refuses, ends that connection with its error in
 * the report (exit status 1); SIGPIPE is ignored.  Blocking sockets with a
 * send timeout: a receiver that stops reading (back-pressure) makes writes
 * time out (EAGAIN), and the deadline is checked between them.  A message
 * cut by the deadline is finished (within a grace period) so the receiver
 * never sees a truncated frame.  Not part of corral: built as a noinst
 * program for bench/daemon.sh and tests/integration/bench_loadgen.sh.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

#define MAX_CONNS   1024
#define TCP_CHUNK   (256 * 1024) /* bytes a write at full speed */
#define UDP_BATCH   64           /* datagrams a sendmmsg() */
#define UDP_MAX     65507
#define GRACE_SECS  10 /* to finish a message cut by the deadline */
#define SNDTIMEO_MS 200

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
    uint64_t refused; /* UDP: datagrams the kernel refused (ICMP unreachable) */
    int err;          /* errno that ended it, 0 if it ended normally */
    const char *what; /* where err happened */
};

static struct corpus C;
static int use_udp, newline;
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
        int rc = write_all(c, fd, C.buf + C.off[i], len, &done, 0);
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
    else
        tcp_run(c, fd, i);
    close(fd);
    return NULL;
}

/* ---- the sink: reads and discards, for measuring loadgen itself ---- */

struct sink {
    int lfd;
    uint64_t bytes, datagrams; /* updated with atomic adds by the readers */
};

static void *
sink_reader(void *arg)
{
    int fd = (int)(intptr_t)((void **)arg)[0];
    struct sink *s = ((void **)arg)[1];
    free(arg);
    char *b = malloc(1 << 20);
    ssize_t k;
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
    fprintf(stderr,
            "loadgen: sent %" PRIu64 " messages, %" PRIu64 " bytes in %.3f s over %d %s "
            "connection(s) (%s): %.0f msg/s, %.1f MB/s\n",
            m, b, elapsed, nc, use_udp ? "UDP" : "TCP", fr, elapsed > 0 ? m / elapsed : 0,
            elapsed > 0 ? b / elapsed / 1e6 : 0);
    for (int i = 0; i < nc; i++) {
        fprintf(stderr, "loadgen:   connection %d: %" PRIu64 " messages, %" PRIu64 " bytes", i,
                cs[i].messages, cs[i].bytes);
        if (cs[i].refused) fprintf(stderr, ", %" PRIu64 " refused", cs[i].refused);
        if (cs[i].err) fprintf(stderr, ", ended by %s: %s", cs[i].what, strerror(cs[i].err));
        fputc('\n', stderr);
    }
    if (self)
        fprintf(stderr, "loadgen: self-test sink received %" PRIu64 " bytes\n",
                __atomic_load_n(&self->bytes, __ATOMIC_RELAXED));
    printf("{\"proto\":\"%s\",\"framing\":\"%s\",\"connections\":%d,\"messages\":%" PRIu64
           ",\"bytes\":%" PRIu64 ",\"elapsed\":%.6f,\"rate\":%.1f,\"failed\":%d",
           use_udp ? "udp" : "tcp", fr, nc, m, b, elapsed, elapsed > 0 ? m / elapsed : 0, failed);
    if (self) printf(",\"sink_bytes\":%" PRIu64, __atomic_load_n(&self->bytes, __ATOMIC_RELAXED));
    printf(",\"per_connection\":[");
    for (int i = 0; i < nc; i++)
        printf("%s{\"messages\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"refused\":%" PRIu64
               ",\"error\":%s%s%s}",
               i ? "," : "", cs[i].messages, cs[i].bytes, cs[i].refused, cs[i].err ? "\"" : "",
               cs[i].err ? strerror(cs[i].err) : "null", cs[i].err ? "\"" : "");
    printf("]}\n");
    fflush(stdout);
}

static void
usage(void)
{
    fprintf(stderr,
            "usage: loadgen [-U] [-c CONNS] [-r RATE] [-d SECONDS] [-n COUNT] [-N]\n"
            "               [-H HOST] -p PORT -f CORPUS\n"
            "       loadgen --sink [-U] [-p PORT]\n"
            "       loadgen --self-test [-U] [-c CONNS] [-d SECONDS] [-n COUNT] -f CORPUS\n"
            "  -U          UDP, one datagram a line, sendmmsg() batches (default TCP)\n"
            "  -N          TCP newline framing (default RFC 6587 octet counting)\n"
            "  -c CONNS    connections (TCP) or sockets (UDP), one thread each (default 1)\n"
            "  -r RATE     messages a second in all (default 0: as fast as possible)\n"
            "  -d SECONDS  stop after this long;  -n COUNT  stop after this many messages\n"
            "  --sink      read and discard on 127.0.0.1:PORT (0: any; prints the port)\n"
            "  --self-test send to a sink in this process (loadgen's own ceiling)\n");
}

int
main(int argc, char **argv)
{
    static const struct option lo[] = {{"sink", no_argument, NULL, 'S'},
                                       {"self-test", no_argument, NULL, 'T'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    const char *file = NULL;
    int nc = 1, sink = 0, self_test = 0, o;
    double rate = 0;
    uint64_t count = 0;
    while ((o = getopt_long(argc, argv, "UNc:r:d:n:H:p:f:h", lo, NULL)) != -1) {
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
        case 'T': self_test = 1; break;
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

    if (sink) {
        struct sink s = {0};
        int p = sink_open(&s, port);
        if (p < 0) return 1;
        printf("%d\n", p);
        fflush(stdout);
        pthread_t t;
        if (pthread_create(&t, NULL, sink_main, &s)) return 1;
        while (!interrupted) pause();
        fprintf(stderr, "loadgen: sink received %" PRIu64 " bytes, %" PRIu64 " datagrams\n",
                __atomic_load_n(&s.bytes, __ATOMIC_RELAXED),
                __atomic_load_n(&s.datagrams, __ATOMIC_RELAXED));
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

    struct sink self = {0};
    char portbuf[16];
    if (self_test) {
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
    return failed ? 1 : 0;
}
