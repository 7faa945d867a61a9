/*
 * Unit tests of the parts every input shares (agent/input/input.c): listen
 * addresses as they are resolved, peers' names, the socket files of unix
 * inputs (what is refused before anything is removed), the end of a
 * datagram, the log limiter, and an input that cannot open reported with
 * file:line.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "agent/conf/conf.h"
#include "agent/input/in_common.h"
#include "agent/input/input.h"
#include "tests/unit/unit_run.h"
#include "tests/unit/unitlib.h"

START_TEST(test_resolve)
{
    struct sockaddr_storage ss;
    struct buf err = BUF_INIT;
    char name[64];

    ck_assert_int_eq(input_resolve(NULL, SOCK_DGRAM, &ss, &err), -1);
    ck_assert_str_eq(buf_str(&err),
                     "bad address \"\" (expected host:port, [v6-address]:port or :port)");
    buf_reset(&err);
    ck_assert_int_eq(input_resolve("no-port", SOCK_DGRAM, &ss, &err), -1);
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "bad address \"no-port\""));

    /* literal addresses, without a resolver */
    buf_reset(&err);
    ck_assert_int_eq(input_resolve("127.0.0.2:5514", SOCK_DGRAM, &ss, &err), 0);
    ck_assert_int_eq(ss.ss_family, AF_INET);
    ck_assert_int_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), 5514);
    input_peer_name((struct sockaddr *)&ss, name, sizeof(name));
    ck_assert_str_eq(name, "127.0.0.2");
    ck_assert_int_eq(input_resolve("[::1]:514", SOCK_STREAM, &ss, &err), 0);
    ck_assert_int_eq(ss.ss_family, AF_INET6);
    input_peer_name((struct sockaddr *)&ss, name, sizeof(name));
    ck_assert_str_eq(name, "::1");
    /* every address: the port alone, or * */
    ck_assert_int_eq(input_resolve(":514", SOCK_DGRAM, &ss, &err), 0);
    ck_assert(ss.ss_family == AF_INET6 || ss.ss_family == AF_INET);
    ck_assert_int_eq(input_resolve("*:514", SOCK_DGRAM, &ss, &err), 0);
    ck_assert(ss.ss_family == AF_INET6 || ss.ss_family == AF_INET);
    /* a name, from /etc/hosts */
    ck_assert_int_eq(input_resolve("localhost:514", SOCK_STREAM, &ss, &err), 0);
    ck_assert(ss.ss_family == AF_INET6 || ss.ss_family == AF_INET);
    ck_assert_uint_eq(err.len, 0);
    buf_free(&err);
}
END_TEST

START_TEST(test_peer_name)
{
    struct sockaddr_in6 s6;
    struct sockaddr_un su;
    char name[64] = "x";

    /* a dual-stack socket's IPv4 client is named as IPv4 */
    memset(&s6, 0, sizeof(s6));
    s6.sin6_family = AF_INET6;
    ck_assert_int_eq(inet_pton(AF_INET6, "::ffff:10.1.2.3", &s6.sin6_addr), 1);
    input_peer_name((struct sockaddr *)&s6, name, sizeof(name));
    ck_assert_str_eq(name, "10.1.2.3");
    ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8::7", &s6.sin6_addr), 1);
    input_peer_name((struct sockaddr *)&s6, name, sizeof(name));
    ck_assert_str_eq(name, "2001:db8::7");
    /* no address, or one of no IP family: no name */
    input_peer_name(NULL, name, sizeof(name));
    ck_assert_str_eq(name, "");
    memset(&su, 0, sizeof(su));
    su.sun_family = AF_UNIX;
    strcpy(name, "x");
    input_peer_name((struct sockaddr *)&su, name, sizeof(name));
    ck_assert_str_eq(name, "");
    strcpy(name, "x");
    input_peer_name((struct sockaddr *)&s6, name, 0); /* no room: untouched */
    ck_assert_str_eq(name, "x");
}
END_TEST

START_TEST(test_unix_paths)
{
    struct buf err = BUF_INIT;
    struct sockaddr_un su;
    char longp[sizeof(su.sun_path) + 8], sock[512];
    dev_t dev;
    ino_t ino;
    int fd;

    ck_assert_ptr_nonnull(ul_workdir_new("input"));
    ck_assert_int_eq(input_unix_prepare("", &err), -1);
    ck_assert_str_eq(buf_str(&err), "empty socket path");
    buf_reset(&err);
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    ck_assert_int_eq(input_unix_prepare(longp, &err), -1);
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "socket path longer than"));
    /* a file that is not a socket is never removed */
    buf_reset(&err);
    ul_write_file(ul_wpath("file"), "keep me\n");
    ck_assert_int_eq(input_unix_prepare(ul_wpath("file"), &err), -1);
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "exists and is not a socket"));
    ck_assert_int_eq(access(ul_wpath("file"), F_OK), 0);
    /* under a file: neither there nor creatable */
    buf_reset(&err);
    snprintf(sock, sizeof(sock), "%s/x.sock", ul_wpath("file"));
    ck_assert_int_eq(input_unix_prepare(sock, &err), -1);
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "Not a directory"));
    buf_reset(&err);
    ck_assert_int_eq(input_unix_created(sock, 0660, &dev, &ino, &err), -1);
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "cannot set mode 0660"));

    /* an old socket is removed, a new one given its mode and removed only while it is ours */
    snprintf(sock, sizeof(sock), "%s", ul_wpath("in.sock"));
    memset(&su, 0, sizeof(su));
    su.sun_family = AF_UNIX;
    strcpy(su.sun_path, sock);
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&su, sizeof(su)), 0);
    close(fd);
    buf_reset(&err);
    ck_assert_int_eq(input_unix_prepare(sock, &err), 0);
    ck_assert_int_eq(access(sock, F_OK), -1);
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&su, sizeof(su)), 0);
    ck_assert_int_eq(input_unix_created(sock, 0640, &dev, &ino, &err), 0);
    {
        struct stat st;
        ck_assert_int_eq(lstat(sock, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0640);
    }
    input_unix_remove(sock, dev, ino + 1); /* another inode took the path: left alone */
    ck_assert_int_eq(access(sock, F_OK), 0);
    input_unix_remove(sock, dev, ino);
    ck_assert_int_eq(access(sock, F_OK), -1);
    close(fd);
    buf_free(&err);
    ul_workdir_remove();
}
END_TEST

/* An input that cannot open: no input, and file:line with the reason. */
START_TEST(test_open_refused)
{
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    uv_loop_t loop;

    ck_assert_ptr_nonnull(ul_workdir_new("input"));
    ul_write_file(ul_wpath("file"), "");
    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    conf.file = "corrald.conf";
    ci.type = CONF_IN_UNIX_DGRAM;
    ci.name = "local";
    ci.path = (char *)ul_wpath("file");
    ci.mode = 0666;
    ci.line = 7;
    ck_assert_ptr_null(input_open(NULL, &loop, &ci, &conf, &err));
    ck_assert_msg(strncmp(buf_str(&err), "corrald.conf:7: input local: ", 29) == 0 &&
                      strstr(buf_str(&err), "exists and is not a socket\n"),
                  "%s", buf_str(&err));
    /* without a line: the message alone */
    buf_reset(&err);
    ci.line = 0;
    ci.type = (enum conf_input_type)99;
    ck_assert_ptr_null(input_open(NULL, &loop, &ci, &conf, &err));
    ck_assert_str_eq(buf_str(&err), "input local: unknown type 99\n");
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
    ul_workdir_remove();
}
END_TEST

/* A standard input that is closed cannot be read: refused. */
START_TEST(test_stdin_closed)
{
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    uv_loop_t loop;
    int saved = dup(0);

    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    ci.type = CONF_IN_STDIN;
    ci.name = "stdin";
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    close(0);
    ck_assert_ptr_null(input_open(NULL, &loop, &ci, &conf, &err));
    dup2(saved, 0);
    close(saved);
    ck_assert_str_eq(buf_str(&err),
                     "input stdin: standard input is not readable (closed, or a UDP socket)\n");
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
}
END_TEST

static bool
finished(void *arg)
{
    return input_finished(arg);
}

/* Standard input a TCP connection (inetd style) that the peer resets: an error, then the end. */
START_TEST(test_stdin_socket_reset)
{
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    struct sockaddr_in a;
    struct linger now = {1, 0};
    socklen_t alen = sizeof(a);
    struct input *in;
    uv_loop_t loop;
    int lfd, cfd, peer, saved = dup(0);

    memset(&conf, 0, sizeof(conf));
    memset(&ci, 0, sizeof(ci));
    ci.type = CONF_IN_STDIN;
    ci.name = "stdin";
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(lfd, 1), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    cfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(cfd, (struct sockaddr *)&a, sizeof(a)), 0);
    peer = accept(lfd, NULL, NULL);
    ck_assert_int_ge(peer, 0);
    ck_assert_int_eq(dup2(cfd, 0), 0);
    close(cfd);
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    in = input_open(NULL, &loop, &ci, &conf, &err);
    ck_assert_msg(in != NULL, "%s", buf_str(&err));
    /* closed with SO_LINGER 0: a reset, not an end */
    ck_assert_int_eq(setsockopt(peer, SOL_SOCKET, SO_LINGER, &now, sizeof(now)), 0);
    close(peer);
    ck_assert(ul_run_until(&loop, finished, in, 30));
    ck_assert_uint_eq(input_get_stats(in)->errors, 1);
    ck_assert_uint_eq(input_get_stats(in)->received, 0);
    input_close(in);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    dup2(saved, 0); /* libuv closed the socket with its handle */
    close(saved);
    close(lfd);
    buf_free(&err);
}
END_TEST

/* Network inputs that cannot open: an address that is none, a port another socket holds. */
START_TEST(test_open_busy)
{
    static const enum conf_input_type types[] = {CONF_IN_UDP, CONF_IN_TCP};
    struct conf conf;
    struct conf_input ci;
    struct buf err = BUF_INIT;
    uv_loop_t loop;
    char listen_at[64];
    size_t i;

    memset(&conf, 0, sizeof(conf));
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    for (i = 0; i < 2; i++) {
        int port, fd = ul_reserve_port(types[i] == CONF_IN_UDP ? SOCK_DGRAM : SOCK_STREAM, &port);
        memset(&ci, 0, sizeof(ci));
        ci.type = types[i];
        ci.name = "net";
        ci.listen = "nohost";
        buf_reset(&err);
        ck_assert_ptr_null(input_open(NULL, &loop, &ci, &conf, &err));
        ck_assert_msg(strstr(buf_str(&err), "input net: bad address \"nohost\""), "%s",
                      buf_str(&err));
        /* a listening socket's port is not shared, SO_REUSEADDR or not */
        if (types[i] == CONF_IN_TCP) ck_assert_int_eq(listen(fd, 1), 0);
        snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%d", port);
        ci.listen = listen_at;
        buf_reset(&err);
        ck_assert_ptr_null(input_open(NULL, &loop, &ci, &conf, &err));
        ck_assert_msg(strstr(buf_str(&err), listen_at) && strstr(buf_str(&err), "in use"), "%s",
                      buf_str(&err));
        close(fd);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
}
END_TEST

START_TEST(test_log_allowed)
{
    uint64_t last = 0;

    ck_assert(input_log_allowed(&last, 0, 10000)); /* a clock at 0 still counts as logged */
    ck_assert_uint_eq(last, 1);
    ck_assert(!input_log_allowed(&last, 5000, 10000));
    ck_assert(input_log_allowed(&last, 10001, 10000));
    ck_assert(!input_log_allowed(&last, 20000, 10000));
    ck_assert(input_log_allowed(&last, 20001, 10000));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("input");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_resolve);
    tcase_add_test(tc, test_peer_name);
    tcase_add_test(tc, test_unix_paths);
    tcase_add_test(tc, test_open_refused);
    tcase_add_test(tc, test_stdin_closed);
    tcase_add_test(tc, test_stdin_socket_reset);
    tcase_add_test(tc, test_open_busy);
    tcase_add_test(tc, test_log_allowed);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
