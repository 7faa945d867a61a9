/*
 * sender: a load generator that is not the bottleneck (issue 13, item 5).
 * Replays a pre-generated corpus at full speed over several TCP connections
 * and/or UDP sockets and reports what it sent.  loggen formats every message
 * as it goes and tops out below corrald; this one builds each connection's
 * byte stream once (line i goes to connection i mod C, so the order within
 * one connection is the corpus order) and then only writes it, R times.
 *
 *   sender [-t HOST:PORT] [-u HOST:PORT] [-c CONNS] [-r REPEAT] [-o] FILE
 *
 *   -t HOST:PORT  TCP target (newline framing; -o: octet counting, RFC 6587)
 *   -u HOST:PORT  UDP target: one datagram a line
 *   -c CONNS      connections (TCP) and sockets (UDP), each on its own thread
 *                 (default 4)
 *   -r REPEAT     send the corpus this many times (default 1)
 *
 * Prints one line per transport:
 *   tcp connections=4 messages=N bytes=B seconds=S rate=R
 *   udp sockets=4 messages=N bytes=B failed=F seconds=S rate=R
 * (failed: datagrams the kernel refused, e.g. ENOBUFS; a UDP receiver's own
 * drops are not visible here: compare with its counters).  Exit status 1 if a
 * TCP connection failed.  Built by make (noinst), not run by the test suite
 * except a smoke test (tests/integration/bench_sender.sh).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sendmmsg */
#endif
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct line {
    const char *p;
    size_t len;
};

struct worker {
    pthread_t thread;
    struct addrinfo *addr;
    bool udp, octet;
    unsigned index, nconns, repeat;
    const struct line *lines;
    size_t nlines;
    /* TCP: the connection's stream, built once */
    char *stream;
    size_t streamlen;
    /* results */
    uint64_t messages, bytes, failed;
    int error; /* errno of a failed TCP connection, 0 */
};

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct addrinfo *
resolve(const char *target, bool udp)
{
    struct addrinfo hints, *res = NULL;
    char host[256];
    const char *colon = strrchr(target, ':');
    size_t hl;

    if (!colon || colon == target || (hl = (size_t)(colon - target)) >= sizeof(host)) {
        fprintf(stderr, "sender: bad target '%s' (HOST:PORT)\n", target);
        return NULL;
    }
    memcpy(host, target, hl);
    host[hl] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = udp ? SOCK_DGRAM : SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res) {
        fprintf(stderr, "sender: cannot resolve '%s'\n", target);
        return NULL;
    }
    return res;
}

/* The lines of connection w, framed, back to back. */
static void
build_stream(struct worker *w)
{
    size_t i, cap = 0, n = 0;
    char *p = NULL;

    for (i = w->index; i < w->nlines; i += w->nconns) {
        size_t need = n + w->lines[i].len + 24;
        if (need > cap) {
            cap = need * 2;
            p = realloc(p, cap);
            if (!p) {
                perror("sender");
                exit(1);
            }
        }
        if (w->octet) n += (size_t)sprintf(p + n, "%zu ", w->lines[i].len);
        memcpy(p + n, w->lines[i].p, w->lines[i].len);
        n += w->lines[i].len;
        if (!w->octet) p[n++] = '\n';
        w->messages++;
    }
    w->stream = p;
    w->streamlen = n;
}

static void *
tcp_worker(void *arg)
{
    struct worker *w = arg;
    int fd = socket(w->addr->ai_family, SOCK_STREAM, 0);
    unsigned r;

    if (fd < 0 || connect(fd, w->addr->ai_addr, w->addr->ai_addrlen) != 0) {
        w->error = errno;
        if (fd >= 0) close(fd);
        return NULL;
    }
    for (r = 0; r < w->repeat; r++) {
        size_t off = 0;
        while (off < w->streamlen) {
            ssize_t k = write(fd, w->stream + off, w->streamlen - off);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                w->error = errno;
                close(fd);
                return NULL;
            }
            off += (size_t)k;
            w->bytes += (uint64_t)k;
        }
    }
    w->messages *= w->repeat;
    close(fd);
    return NULL;
}

#define UDP_BATCH 64

static void *
udp_worker(void *arg)
{
    struct worker *w = arg;
    int fd = socket(w->addr->ai_family, SOCK_DGRAM, 0);
    struct mmsghdr msgs[UDP_BATCH];
    struct iovec iov[UDP_BATCH];
    unsigned r;

    if (fd < 0 || connect(fd, w->addr->ai_addr, w->addr->ai_addrlen) != 0) {
        w->error = errno;
        if (fd >= 0) close(fd);
        return NULL;
    }
    for (r = 0; r < w->repeat; r++) {
        size_t i = w->index;
        while (i < w->nlines) {
            int n = 0, sent;
            while (n < UDP_BATCH && i < w->nlines) {
                iov[n].iov_base = (void *)w->lines[i].p;
                iov[n].iov_len = w->lines[i].len;
                memset(&msgs[n], 0, sizeof(msgs[n]));
                msgs[n].msg_hdr.msg_iov = &iov[n];
                msgs[n].msg_hdr.msg_iovlen = 1;
                n++;
                i += w->nconns;
            }
            for (int done = 0; done < n;) {
                sent = sendmmsg(fd, msgs + done, (unsigned)(n - done), 0);
                if (sent < 0) {
                    if (errno == EINTR) continue;
                    /* the datagram the kernel refused is counted, the rest go on */
                    w->failed++;
                    done++;
                    continue;
                }
                for (int k = 0; k < sent; k++) {
                    w->messages++;
                    w->bytes += msgs[done + k].msg_len;
                }
                done += sent;
            }
        }
    }
    close(fd);
    return NULL;
}

/* Runs C workers of one transport and prints its line; returns -1 if a TCP connection failed. */
static int
run(const char *target, bool udp, bool octet, unsigned nconns, unsigned repeat,
    const struct line *lines, size_t nlines)
{
    struct addrinfo *addr = resolve(target, udp);
    struct worker *w;
    uint64_t messages = 0, bytes = 0, failed = 0;
    double t0, secs;
    unsigned i;
    int rc = 0;

    if (!addr) return -1;
    w = calloc(nconns, sizeof(*w));
    if (!w) return -1;
    for (i = 0; i < nconns; i++) {
        w[i].addr = addr;
        w[i].udp = udp;
        w[i].octet = octet;
        w[i].index = i;
        w[i].nconns = nconns;
        w[i].repeat = repeat;
        w[i].lines = lines;
        w[i].nlines = nlines;
        if (!udp) build_stream(&w[i]);
    }
    t0 = now_s();
    for (i = 0; i < nconns; i++)
        if (pthread_create(&w[i].thread, NULL, udp ? udp_worker : tcp_worker, &w[i]) != 0) {
            fprintf(stderr, "sender: cannot start a thread\n");
            exit(1);
        }
    for (i = 0; i < nconns; i++) pthread_join(w[i].thread, NULL);
    secs = now_s() - t0;
    for (i = 0; i < nconns; i++) {
        if (w[i].error) {
            fprintf(stderr, "sender: %s connection %u: %s\n", udp ? "udp" : "tcp", i,
                    strerror(w[i].error));
            rc = -1;
            continue;
        }
        messages += w[i].messages;
        bytes += w[i].bytes;
        failed += w[i].failed;
        free(w[i].stream);
    }
    if (udp)
        printf("udp sockets=%u messages=%llu bytes=%llu failed=%llu seconds=%.3f rate=%.0f\n",
               nconns, (unsigned long long)messages, (unsigned long long)bytes,
               (unsigned long long)failed, secs, secs > 0 ? (double)messages / secs : 0);
    else
        printf("tcp connections=%u messages=%llu bytes=%llu seconds=%.3f rate=%.0f\n", nconns,
               (unsigned long long)messages, (unsigned long long)bytes, secs,
               secs > 0 ? (double)messages / secs : 0);
    fflush(stdout);
    free(w);
    freeaddrinfo(addr);
    return rc;
}

static void
usage(void)
{
    fputs("usage: sender [-t HOST:PORT] [-u HOST:PORT] [-c CONNS] [-r REPEAT] [-o] FILE\n", stderr);
    exit(2);
}

int
main(int argc, char **argv)
{
    const char *tcp = NULL, *udp = NULL;
    unsigned conns = 4, repeat = 1;
    bool octet = false;
    struct line *lines = NULL;
    size_t nlines = 0, lcap = 0, cap = 0, len = 0;
    char *data = NULL, *p, *end;
    FILE *f;
    int c, rc = 0;

    while ((c = getopt(argc, argv, "t:u:c:r:o")) != -1) {
        switch (c) {
        case 't': tcp = optarg; break;
        case 'u': udp = optarg; break;
        case 'c': conns = (unsigned)atoi(optarg); break;
        case 'r': repeat = (unsigned)atoi(optarg); break;
        case 'o': octet = true; break;
        default: usage();
        }
    }
    if (optind != argc - 1 || (!tcp && !udp) || conns < 1 || conns > 1024 || repeat < 1) usage();
    f = fopen(argv[optind], "r");
    if (!f) {
        fprintf(stderr, "sender: %s: %s\n", argv[optind], strerror(errno));
        return 1;
    }
    /* the whole corpus in memory, lines pointing into it */
    for (;;) {
        size_t k;
        if (len + 65536 > cap) {
            cap = (len + 65536) * 2;
            data = realloc(data, cap);
            if (!data) {
                perror("sender");
                return 1;
            }
        }
        k = fread(data + len, 1, cap - len, f);
        if (k == 0) break;
        len += k;
    }
    fclose(f);
    for (p = data, end = data + len; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (nlines == lcap) {
            lcap = lcap ? lcap * 2 : 1024;
            lines = realloc(lines, lcap * sizeof(*lines));
            if (!lines) {
                perror("sender");
                return 1;
            }
        }
        if (l) {
            lines[nlines].p = p;
            lines[nlines].len = l;
            nlines++;
        }
        p += l + 1;
    }
    if (tcp && run(tcp, false, octet, conns, repeat, lines, nlines) < 0) rc = 1;
    if (udp && run(udp, true, false, conns, repeat, lines, nlines) < 0) rc = 1;
    free(lines);
    free(data);
    return rc;
}
