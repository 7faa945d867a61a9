/*
 * Unit tests of the datagram inputs driven through a test sink on a libuv
 * loop: a unix-dgram input (the local syslog(3) socket) takes datagrams
 * ended by a newline, a NUL or nothing, cuts one over max-message-size, and
 * after a reload's new limits (input_set_limits) takes a longer one whole;
 * its socket file goes when it closes.  A UDP input on IPv6 loopback names
 * the sender of every datagram, the same address twice in a row included.
 * Every wait is on what the sink received, bounded.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "agent/conf/conf.h"
#include "agent/input/input.h"
#include "engine/buf.h"
#include "tests/unit/unit_run.h"
#include "tests/unit/unitlib.h"

#define SINK_MAX 16
#define WAIT_S   30

/* What the sink received, one "MESSAGE|PEER" line each, in order. */
struct sink_log {
    size_t n;
    struct buf text;
};

static void
sink_deliver(void *ctx, struct input *in, const char *data, size_t len, const char *peer)
{
    struct sink_log *l = ctx;

    (void)in;
    ck_assert_uint_lt(l->n, SINK_MAX);
    buf_printf(&l->text, "%.*s|%s\n", (int)len, data, peer ? peer : "-");
    l->n++;
}

struct wait_for {
    const struct sink_log *log;
    size_t n;
};

static bool
has_n(void *arg)
{
    const struct wait_for *w = arg;

    return w->log->n >= w->n;
}

static void
expect(uv_loop_t *loop, struct sink_log *log, size_t n, const char *lines)
{
    struct wait_for w = {log, n};

    ck_assert_msg(ul_run_until(loop, has_n, &w, WAIT_S), "got only: %s", buf_str(&log->text));
    ck_assert_str_eq(buf_str(&log->text), lines);
}

static void
send_to(int fd, const char *data, size_t len)
{
    ck_assert_int_eq(send(fd, data, len, 0), (ssize_t)len);
}

START_TEST(test_unix_dgram)
{
    struct sink_log log = {0, BUF_INIT};
    struct input_sink sink = {sink_deliver, &log};
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    struct sockaddr_un sa;
    struct input *in;
    uv_loop_t loop;
    int fd;

    ck_assert_ptr_nonnull(ul_workdir_new("in_dgram"));
    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    conf.max_message_size = 8;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ci.type = CONF_IN_UNIX_DGRAM;
    ci.name = "devlog";
    ci.path = (char *)ul_wpath("log");
    ci.mode = 0666;
    in = input_open(&sink, &loop, &ci, &conf, &err);
    ck_assert_msg(in != NULL, "%s", buf_str(&err));
    ck_assert(!input_can_pause(in));

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ul_wpath("log"));
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    /* syslog(3) ends a datagram with a newline, a NUL, or neither */
    send_to(fd, "<13>a\n", 6);
    send_to(fd, "<13>b\0", 6);
    send_to(fd, "<13>c", 5);
    send_to(fd, "<13>0123456789", 14); /* over max-message-size (8): cut */
    expect(&loop, &log, 4, "<13>a|-\n<13>b|-\n<13>c|-\n<13>0123|-\n");
    ck_assert_uint_eq(input_get_stats(in)->truncated, 1);

    /* a reload raises the limit: the same datagram now fits */
    conf.max_message_size = 64;
    input_set_limits(in, &conf);
    send_to(fd, "<13>0123456789", 14);
    expect(&loop, &log, 5, "<13>a|-\n<13>b|-\n<13>c|-\n<13>0123|-\n<13>0123456789|-\n");
    ck_assert_uint_eq(input_get_stats(in)->received, 5);
    ck_assert_uint_eq(input_get_stats(in)->truncated, 1);
    ck_assert_uint_eq(input_get_stats(in)->errors, 0);
    close(fd);

    /* closed: the socket file is gone at once, for a restart to take the path */
    input_close(in);
    ck_assert_int_ne(access(ul_wpath("log"), F_OK), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&log.text);
    buf_free(&err);
    ul_workdir_remove();
}
END_TEST

/* A unix-dgram input cannot take a path where something that is not a socket lies. */
START_TEST(test_unix_dgram_refused)
{
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    uv_loop_t loop;

    ck_assert_ptr_nonnull(ul_workdir_new("in_dgram"));
    ul_write_file(ul_wpath("log"), "a file\n");
    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    conf.file = "corrald.conf";
    ci.type = CONF_IN_UNIX_DGRAM;
    ci.name = "devlog";
    ci.line = 3;
    ci.path = (char *)ul_wpath("log");
    ci.mode = 0666;
    ck_assert_ptr_null(input_open(NULL, &loop, &ci, &conf, &err));
    ck_assert_msg(strncmp(buf_str(&err), "corrald.conf:3: input devlog: ", 30) == 0, "%s",
                  buf_str(&err));
    /* the file is left as it was */
    ck_assert_int_eq(access(ul_wpath("log"), F_OK), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
    ul_workdir_remove();
}
END_TEST

/* A port on ::1 that the kernel picked and that was free a moment ago; 0 without IPv6. */
static int
free_port6(void)
{
    struct sockaddr_in6 sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET6, SOCK_DGRAM, 0), port = 0;

    if (fd < 0) return 0;
    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_loopback;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin6_port);
    close(fd);
    return port;
}

/* UDP on IPv6 loopback: each datagram names its sender, the same one twice in a row too. */
START_TEST(test_udp_ipv6)
{
    struct sink_log log = {0, BUF_INIT};
    struct input_sink sink = {sink_deliver, &log};
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    struct sockaddr_in6 to;
    struct input *in = NULL;
    uv_loop_t loop;
    char listen_at[64];
    int attempt, port = 0, fd;

    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ci.type = CONF_IN_UDP;
    ci.name = "udp6";
    /* should another process take the port in between, another one */
    for (attempt = 0; attempt < 5 && !in; attempt++) {
        if (!(port = free_port6())) break; /* no IPv6 on loopback: nothing to test here */
        snprintf(listen_at, sizeof(listen_at), "[::1]:%d", port);
        ci.listen = listen_at;
        buf_reset(&err);
        in = input_open(&sink, &loop, &ci, &conf, &err);
    }
    if (!port) goto out;
    ck_assert_msg(in != NULL, "%s", buf_str(&err));
    fd = socket(AF_INET6, SOCK_DGRAM, 0);
    ck_assert_int_ge(fd, 0);
    memset(&to, 0, sizeof(to));
    to.sin6_family = AF_INET6;
    to.sin6_addr = in6addr_loopback;
    to.sin6_port = htons((uint16_t)port);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
    send_to(fd, "<13>one\n", 8);
    send_to(fd, "<13>two\n", 8);
    expect(&loop, &log, 2, "<13>one|::1\n<13>two|::1\n");
    close(fd);
    input_close(in);
out:
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&log.text);
    buf_free(&err);
}
END_TEST

static Suite *
in_dgram_suite(void)
{
    Suite *s = suite_create("in_dgram");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_unix_dgram);
    tcase_add_test(tc, test_unix_dgram_refused);
    tcase_add_test(tc, test_udp_ipv6);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(in_dgram_suite());
}
