/*
 * Unit tests of inputs driven end to end without corrald's server: a real
 * UDP and a real unix-stream input on a libuv loop, fed through sockets,
 * deliver into a test sink (struct input_sink) what they frame: messages,
 * their senders, the counters, cut messages.  This test links no server.c:
 * the inputs know their receiver only through the sink.
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
#include "engine/xalloc.h"
#include "tests/unit/unit_run.h"
#include "tests/unit/unitlib.h"

#define SINK_MAX 16

/* What a test sink received, in order. */
struct sink_log {
    size_t n;
    char *msg[SINK_MAX];
    char *peer[SINK_MAX];
    bool tls_peer[SINK_MAX]; /* input_tls_peer() was set during the call */
    bool can_pause[SINK_MAX];
    struct input *from[SINK_MAX];
};

static void
sink_deliver(void *ctx, struct input *in, const char *data, size_t len, const char *peer)
{
    struct sink_log *l = ctx;

    ck_assert_uint_lt(l->n, SINK_MAX);
    l->msg[l->n] = xstrndup(data, len);
    l->peer[l->n] = peer ? xstrdup(peer) : NULL;
    l->tls_peer[l->n] = input_tls_peer(in) != NULL;
    l->can_pause[l->n] = input_can_pause(in);
    l->from[l->n] = in;
    l->n++;
}

static void
sink_log_free(struct sink_log *l)
{
    size_t i;

    for (i = 0; i < l->n; i++) {
        free(l->msg[i]);
        free(l->peer[i]);
    }
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

/* Every connection the input accepted (at least one) has ended. */
static bool
closed(void *arg)
{
    const struct input_stats *st = input_get_stats(arg);

    return st->connections > 0 && st->active == 0;
}

/* Datagrams to a UDP input: their ends trimmed, an over-long one cut, each with its sender. */
START_TEST(test_udp_sink)
{
    struct sink_log log = {0};
    struct input_sink sink = {sink_deliver, &log};
    struct wait_for w = {&log, 3};
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    struct sockaddr_in to;
    struct input *in = NULL;
    uv_loop_t loop;
    char listen_at[64];
    const char *long_msg = "<13>0123456789abcdefghij";
    int attempt, port, fd;

    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    conf.max_message_size = 16;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ci.type = CONF_IN_UDP;
    ci.name = "udp";
    /* a port the kernel picked; should another process take it in between, another one */
    for (attempt = 0; attempt < 5 && !in; attempt++) {
        fd = ul_reserve_port(SOCK_DGRAM, &port);
        close(fd);
        snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%d", port);
        ci.listen = listen_at;
        buf_reset(&err);
        in = input_open(&sink, &loop, &ci, &conf, &err);
    }
    ck_assert_msg(in != NULL, "%s", buf_str(&err));
    ck_assert(!input_can_pause(in));

    fd = socket(AF_INET, SOCK_DGRAM, 0);
    ck_assert_int_ge(fd, 0);
    memset(&to, 0, sizeof(to));
    to.sin_family = AF_INET;
    to.sin_port = htons((uint16_t)port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(sendto(fd, "<13>one\n", 8, 0, (struct sockaddr *)&to, sizeof(to)), 8);
    ck_assert_int_eq(sendto(fd, "<13>two\r\n\0", 10, 0, (struct sockaddr *)&to, sizeof(to)), 10);
    ck_assert_int_eq(sendto(fd, long_msg, strlen(long_msg), 0, (struct sockaddr *)&to, sizeof(to)),
                     (ssize_t)strlen(long_msg));
    ck_assert(ul_run_until(&loop, has_n, &w, 30));

    ck_assert_uint_eq(log.n, 3);
    ck_assert_str_eq(log.msg[0], "<13>one");
    ck_assert_str_eq(log.msg[1], "<13>two");
    ck_assert_str_eq(log.msg[2], "<13>0123456789ab"); /* max-message-size: 16 */
    ck_assert_str_eq(log.peer[0], "127.0.0.1");
    ck_assert_ptr_eq(log.from[2], in);
    ck_assert(!log.tls_peer[0] && !log.can_pause[0]);
    ck_assert_uint_eq(input_get_stats(in)->received, 3);
    ck_assert_uint_eq(input_get_stats(in)->bytes, 7 + 7 + 16);
    ck_assert_uint_eq(input_get_stats(in)->truncated, 1);
    close(fd);
    input_close(in);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    sink_log_free(&log);
    buf_free(&err);
}
END_TEST

/*
 * A unix-stream input: lines and an octet-counted stream, split at any
 * byte, on two connections; a last line without its newline is delivered at
 * the end of its connection.
 */
START_TEST(test_unix_stream_sink)
{
    struct sink_log log = {0};
    struct input_sink sink = {sink_deliver, &log};
    struct wait_for w = {&log, 2};
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    struct sockaddr_un sa;
    struct input *in;
    uv_loop_t loop;
    int a, b;

    ck_assert_ptr_nonnull(ul_workdir_new("input_sink"));
    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    conf.max_connections = 4;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ci.type = CONF_IN_UNIX_STREAM;
    ci.name = "local";
    ci.path = (char *)ul_wpath("sock");
    ci.mode = 0600;
    in = input_open(&sink, &loop, &ci, &conf, &err);
    ck_assert_msg(in != NULL, "%s", buf_str(&err));
    ck_assert(input_can_pause(in));

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ul_wpath("sock"));
    a = socket(AF_UNIX, SOCK_STREAM, 0);
    b = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(a, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(connect(b, (struct sockaddr *)&sa, sizeof(sa)), 0);
    /* newline framing, a message split across two writes */
    ck_assert_int_eq(write(a, "<13>first li", 12), 12);
    ck_assert_int_eq(write(a, "ne\n<13>sec", 10), 10);
    /* octet counting (auto: the stream begins "LEN <") */
    ck_assert_int_eq(write(b, "9 <13>third", 11), 11);
    ck_assert(ul_run_until(&loop, has_n, &w, 30));
    ck_assert_uint_eq(log.n, 2);
    /* the unterminated line goes out when its connection ends */
    ck_assert_int_eq(write(a, "ond", 3), 3);
    close(a);
    w.n = 3;
    ck_assert(ul_run_until(&loop, has_n, &w, 30));

    ck_assert_uint_eq(log.n, 3);
    /* the two connections' first messages, in the order the loop read them */
    if (strcmp(log.msg[0], "<13>third") == 0) {
        ck_assert_str_eq(log.msg[1], "<13>first line");
    } else {
        ck_assert_str_eq(log.msg[0], "<13>first line");
        ck_assert_str_eq(log.msg[1], "<13>third");
    }
    ck_assert_str_eq(log.msg[2], "<13>second");
    ck_assert_ptr_null(log.peer[2]); /* a unix socket's sender has no address */
    ck_assert(log.can_pause[0] && !log.tls_peer[0] && log.from[0] == in);
    ck_assert_uint_eq(input_get_stats(in)->received, 3);
    ck_assert_uint_eq(input_get_stats(in)->connections, 2);
    close(b);
    ck_assert(ul_run_until(&loop, closed, in, 30));
    input_close(in);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    sink_log_free(&log);
    buf_free(&err);
    ul_workdir_remove();
}
END_TEST

/* Without a sink an input still opens, counts, and delivers nowhere. */
START_TEST(test_no_sink)
{
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    struct sockaddr_un sa;
    struct input *in;
    uv_loop_t loop;
    int fd;

    ck_assert_ptr_nonnull(ul_workdir_new("input_sink"));
    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ci.type = CONF_IN_UNIX_STREAM;
    ci.name = "local";
    ci.path = (char *)ul_wpath("sock");
    ci.mode = 0600;
    in = input_open(NULL, &loop, &ci, &conf, &err);
    ck_assert_msg(in != NULL, "%s", buf_str(&err));
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ul_wpath("sock"));
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(write(fd, "<13>x\n", 6), 6);
    close(fd);
    ck_assert(ul_run_until(&loop, closed, in, 30));
    ck_assert_uint_eq(input_get_stats(in)->received, 1);
    input_close(in);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
    ul_workdir_remove();
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("input_sink");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_udp_sink);
    tcase_add_test(tc, test_unix_stream_sink);
    tcase_add_test(tc, test_no_sink);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
