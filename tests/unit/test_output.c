/*
 * Unit tests: corrald's outputs.  Formats (JSON, syslog lines, octet
 * counting), selection, file writing and reopening, forwarding to real UDP and
 * TCP sockets on loopback (reconnection included), queue overflow, the lane
 * of generated messages past it, and stdout
 * into a pipe nobody reads.  Each test runs its own libuv loop and drives it
 * in small steps, reading the test's own plain sockets in between.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/json.h"
#include "engine/log.h"
#include "agent/output/output.h"
#include "engine/syslogfmt.h"
#include "tests/unit/unit_run.h"

/* corrald's own log: kept quiet here unless TEST_OUTPUT_VERBOSE is set */
static void
quiet_log(void *arg, int level, const char *text)
{
    (void)arg;
    if (getenv("TEST_OUTPUT_VERBOSE")) fprintf(stderr, "log[%d]: %s\n", level, text);
}

/* 2024-01-05 10:00:00 UTC */
#define STAMP 1704448800

static uint64_t
now_ms(void)
{
    return uv_hrtime() / 1000000;
}

/* Runs the loop until *flag is set or ms pass; returns whether it was set. */
static bool
pump_until(uv_loop_t *loop, const bool *flag, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;

    while (!*flag && now_ms() < end) {
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    return *flag;
}

/* Runs the loop until the counter reaches want or ms pass (fixed sleeps would be flaky on a busy
 * machine). */
static void
pump_count(uv_loop_t *loop, const uint64_t *counter, uint64_t want, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;

    while (*counter < want && now_ms() < end) {
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
}

/* Runs the loop and reads fd into b until b holds want bytes or ms pass. */
static void
pump_read(uv_loop_t *loop, int fd, struct buf *b, size_t want, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    char tmp[65536];

    while (b->len < want && now_ms() < end) {
        ssize_t n;
        uv_run(loop, UV_RUN_NOWAIT);
        while ((n = read(fd, tmp, sizeof(tmp))) > 0) buf_append(b, tmp, (size_t)n);
        usleep(1000);
    }
}

/* Reads non-blocking fd into b until its end (true) or ms pass (false). */
static bool
read_to_eof(int fd, struct buf *b, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    char tmp[65536];
    ssize_t n;

    while (now_ms() < end) {
        while ((n = read(fd, tmp, sizeof(tmp))) > 0) buf_append(b, tmp, (size_t)n);
        if (n == 0) return true;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
        usleep(1000);
    }
    return false;
}

static int
pump_accept(uv_loop_t *loop, int lfd, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    int fd;

    while (now_ms() < end) {
        uv_run(loop, UV_RUN_NOWAIT);
        fd = accept(lfd, NULL, NULL);
        if (fd >= 0) {
            fcntl(fd, F_SETFL, O_NONBLOCK);
            return fd;
        }
        usleep(1000);
    }
    return -1;
}

/* A loopback socket of the given type bound to port (0: any); *bound gets the port. */
static int
loopback_socket(int type, int port, int *bound)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, type, 0), one = 1;

    ck_assert_int_ge(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    if (bound) *bound = ntohs(sa.sin_port);
    if (type == SOCK_STREAM) ck_assert_int_eq(listen(fd, 16), 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

static struct msg *
parse(const char *line)
{
    struct msg *m = msg_new();

    syslogfmt_parse(m, line, strlen(line), NULL);
    return m;
}

static struct msg *
generated(const char *text)
{
    struct msg *m = msg_new();
    struct msg_time t = {STAMP, 0, 0};

    msg_set_stamp(m, &t);
    msg_set_flags(m, MSG_F_GENERATED);
    msg_set(m, NV_MESSAGE, text, strlen(text));
    return m;
}

static const char *
hostname(void)
{
    static char name[256];

    if (gethostname(name, sizeof(name) - 1) < 0 || !name[0]) strcpy(name, "localhost");
    return name;
}

static struct conf_output
conf_out(enum conf_output_type type, enum conf_format f, enum conf_select sel, size_t queue)
{
    struct conf_output co;

    memset(&co, 0, sizeof(co));
    co.type = type;
    co.name = "test";
    co.format = f;
    co.select = sel;
    co.queue = queue;
    return co;
}

static void
set_done(void *arg)
{
    *(bool *)arg = true;
}

/* Closes o, runs the loop until it is gone, and closes the loop. */
static void
close_all(uv_loop_t *loop, struct output *o, int ms)
{
    bool done = false;

    if (o) {
        output_close(o, set_done, &done);
        ck_assert(pump_until(loop, &done, ms));
    }
    uv_run(loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(loop), 0);
}

static char *
read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    struct buf b = BUF_INIT;
    char tmp[4096];
    size_t n;

    if (!f) return strdup("");
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0) buf_append(&b, tmp, n);
    fclose(f);
    buf_append(&b, "", 0);
    return b.p;
}

static size_t
count_lines(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        if (*s == '\n') n++;
    return n;
}

static char tmpdir[256];

static void
make_tmpdir(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "%s/test_output.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
remove_tmpdir(void)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* ---- formats ---- */

START_TEST(test_format_json)
{
    struct msg *m = parse("<38>Jan  5 10:00:00 web1 sshd[123]: Accepted password for bob");
    struct buf a = BUF_INIT, b = BUF_INIT;

    msg_set(m, NV_CLASS, "system", 6);
    output_format(m, CONF_FORMAT_JSON, &a);
    json_format_msg(m, &b);
    ck_assert_str_eq(buf_str(&a), buf_str(&b));
    ck_assert_ptr_null(strchr(buf_str(&a), '\n'));
    buf_free(&a);
    buf_free(&b);
    msg_unref(m);
}
END_TEST

START_TEST(test_format_syslog_input)
{
    static const char *lines[] = {
        "<38>Jan  5 10:00:00 web1 sshd[123]: Accepted password for bob from 10.0.0.1 port 22 ssh2",
        "<13>Feb 15 01:02:03 host prog: x",
        "<165>Dec 31 23:59:59 mail-1 postfix/smtpd[9]: connect from a: b [c]",
        "<0>Oct 10 00:00:00 h kernel: ",
    };
    struct buf b = BUF_INIT;
    struct msg *m;
    size_t i;

    /* a parsed RFC 3164 line comes back as it was */
    for (i = 0; i < sizeof(lines) / sizeof(*lines); i++) {
        m = parse(lines[i]);
        buf_reset(&b);
        output_format(m, CONF_FORMAT_SYSLOG, &b);
        ck_assert_str_eq(buf_str(&b), lines[i]);
        msg_unref(m);
    }

    /* one line: CR and LF inside MESSAGE become spaces */
    m = parse("<13>Jan  5 10:00:00 web1 app[7]: x");
    msg_set(m, NV_MESSAGE, "one\ntwo\r\nthree", 14);
    buf_reset(&b);
    output_format(m, CONF_FORMAT_SYSLOG, &b);
    ck_assert_str_eq(buf_str(&b), "<13>Jan  5 10:00:00 web1 app[7]: one two  three");
    msg_unref(m);

    /* an input message without PROGRAM has no tag; no HOST: this host */
    {
        struct msg_time t = {STAMP, 0, 0};
        char want[512];
        m = msg_new();
        msg_set_stamp(m, &t);
        msg_set(m, NV_MESSAGE, "just text", 9);
        buf_reset(&b);
        output_format(m, CONF_FORMAT_SYSLOG, &b);
        snprintf(want, sizeof(want), "<13>Jan  5 10:00:00 %s just text", hostname());
        ck_assert_str_eq(buf_str(&b), want);
        msg_unref(m);
    }

    /* header fields cannot break the header: spaces and separators are replaced */
    m = parse("<13>Jan  5 10:00:00 web1 app[7]: x");
    msg_set(m, NV_HOST, "a b", 3);
    msg_set(m, NV_PROGRAM, "p:q[r", 5);
    msg_set(m, NV_PID, "1 ]", 3);
    buf_reset(&b);
    output_format(m, CONF_FORMAT_SYSLOG, &b);
    ck_assert_str_eq(buf_str(&b), "<13>Jan  5 10:00:00 a_b p_q_r[1__]: x");
    msg_unref(m);
    buf_free(&b);
}
END_TEST

START_TEST(test_format_syslog_generated)
{
    struct msg *m = generated("3 failed logins for bob");
    struct buf b = BUF_INIT;
    char want[512];

    /* no HOST, no PROGRAM: this host, "corral" */
    output_format(m, CONF_FORMAT_SYSLOG, &b);
    snprintf(want, sizeof(want), "<13>Jan  5 10:00:00 %s corral: 3 failed logins for bob",
             hostname());
    ck_assert_str_eq(buf_str(&b), want);

    /* a context's HOST and PROGRAM are kept; an empty PID is left out */
    msg_set(m, NV_HOST, "web1", 4);
    msg_set(m, NV_PROGRAM, "sshd", 4);
    msg_set(m, NV_PID, "", 0);
    msg_set_pri(m, 4 * 8 + 4);
    buf_reset(&b);
    output_format(m, CONF_FORMAT_SYSLOG, &b);
    ck_assert_str_eq(buf_str(&b), "<36>Jan  5 10:00:00 web1 sshd: 3 failed logins for bob");
    buf_free(&b);
    msg_unref(m);
}
END_TEST

/* ---- selection ---- */

START_TEST(test_select)
{
    static const enum conf_select sels[] = {CONF_SELECT_ALL, CONF_SELECT_CLASSIFIED,
                                            CONF_SELECT_GENERATED};
    static const char *want[] = {
        "a: matched\na: unknown\na: unclassified\ncorral: generated\n",
        "a: matched\n",
        "corral: generated\n",
    };
    struct msg *ms[4];
    size_t i, j;
    uv_loop_t loop;
    char path[300];

    make_tmpdir();
    ms[0] = parse("<13>Jan  5 10:00:00 h a: matched");
    msg_set(ms[0], NV_CLASS, "violation", 9);
    ms[1] = parse("<13>Jan  5 10:00:00 h a: unknown");
    msg_set(ms[1], NV_CLASS, "unknown", 7);
    ms[2] = parse("<13>Jan  5 10:00:00 h a: unclassified");
    ms[3] = generated("generated");
    msg_set(ms[3], NV_CLASS, "violation", 9); /* inherited from its trigger */
    msg_set(ms[3], NV_HOST, "h", 1);

    for (i = 0; i < 3; i++) {
        struct conf_output co = conf_out(CONF_OUT_FILE, CONF_FORMAT_SYSLOG, sels[i], 100);
        struct buf err = BUF_INIT;
        struct output *o;
        char *text, *p;
        const char *line;

        snprintf(path, sizeof(path), "%s/sel%zu.log", tmpdir, i);
        co.path = path;
        uv_loop_init(&loop);
        o = output_open(&loop, &co, &err);
        ck_assert_msg(o != NULL, "%s", buf_str(&err));
        for (j = 0; j < 4; j++) output_write(o, ms[j]);
        close_all(&loop, o, 30000);
        text = read_file(path);
        /* keep only what follows the date and host */
        {
            struct buf b = BUF_INIT;
            for (line = text; *line; line = p + 1) {
                p = strchr(line, '\n');
                ck_assert_ptr_nonnull(p);
                buf_append(&b, line + 22, (size_t)(p - line - 22) + 1);
            }
            ck_assert_str_eq(buf_str(&b), want[i]);
            buf_free(&b);
        }
        free(text);
        buf_free(&err);
    }
    for (j = 0; j < 4; j++) msg_unref(ms[j]);
    remove_tmpdir();
}
END_TEST

/* ---- file ---- */

START_TEST(test_file_write_reopen)
{
    struct conf_output co = conf_out(CONF_OUT_FILE, CONF_FORMAT_JSON, CONF_SELECT_ALL, 100);
    struct buf err = BUF_INIT, want1 = BUF_INIT, want2 = BUF_INIT;
    struct msg *m = parse("<13>Jan  5 10:00:00 h app: before rotation");
    struct msg *n = parse("<13>Jan  5 10:00:01 h app: after rotation");
    char path[300], rotated[300], *text;
    struct output *o;
    uv_loop_t loop;
    struct stat st;
    int i;

    make_tmpdir();
    snprintf(path, sizeof(path), "%s/out.log", tmpdir);
    snprintf(rotated, sizeof(rotated), "%s/out.log.1", tmpdir);
    co.path = path;
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    ck_assert_str_eq(output_name(o), "test");
    ck_assert_int_eq(stat(path, &st), 0);
    {
        mode_t um = umask(0);
        umask(um);
        ck_assert_int_eq(st.st_mode & 0777, 0640 & ~um);
    }
    for (i = 0; i < 3; i++) {
        output_write(o, m);
        json_format_msg(m, &want1);
        buf_putc(&want1, '\n');
    }
    pump_count(&loop, &output_get_stats(o)->written, 3, 30000);
    ck_assert_uint_eq(output_get_stats(o)->written, 3);
    ck_assert_uint_eq(output_get_stats(o)->queued, 0);

    /* rotation: the file is renamed, then the output reopens its path */
    ck_assert_int_eq(rename(path, rotated), 0);
    output_reopen(o);
    for (i = 0; i < 2; i++) {
        output_write(o, n);
        json_format_msg(n, &want2);
        buf_putc(&want2, '\n');
    }
    close_all(&loop, o, 30000);

    text = read_file(rotated);
    ck_assert_str_eq(text, buf_str(&want1));
    free(text);
    text = read_file(path);
    ck_assert_str_eq(text, buf_str(&want2));
    free(text);

    /* a path that cannot be opened is an error at once */
    snprintf(path, sizeof(path), "%s/no/such/dir/out.log", tmpdir);
    uv_loop_init(&loop);
    buf_reset(&err);
    ck_assert_ptr_null(output_open(&loop, &co, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "no such file"));
    close_all(&loop, NULL, 0);

    buf_free(&err);
    buf_free(&want1);
    buf_free(&want2);
    msg_unref(m);
    msg_unref(n);
    remove_tmpdir();
}
END_TEST

START_TEST(test_queue_overflow)
{
    struct conf_output co = conf_out(CONF_OUT_FILE, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 10);
    struct msg *m = parse("<13>Jan  5 10:00:00 h app: line");
    struct buf err = BUF_INIT;
    const struct output_stats *st;
    struct output *o;
    uv_loop_t loop;
    char path[300], *text;
    bool done = false;
    int i;

    make_tmpdir();
    snprintf(path, sizeof(path), "%s/q.log", tmpdir);
    co.path = path;
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    st = output_get_stats(o);
    /* the loop does not run: the queue fills at 10 and the rest is dropped */
    for (i = 0; i < 100; i++) output_write(o, m);
    ck_assert_uint_eq(st->queued, 10);
    ck_assert_uint_eq(st->dropped, 90);
    ck_assert_uint_eq(st->written, 0);
    /* full: stream inputs should wait; what they still bring is kept (back-pressure) */
    ck_assert(output_full(o));
    ck_assert(!output_low(o));
    for (i = 0; i < 5; i++) output_write_keep(o, m);
    ck_assert_uint_eq(st->queued, 15);
    ck_assert_uint_eq(st->dropped, 90);
    /* once it drains, messages are taken again */
    pump_count(&loop, &st->written, 15, 30000);
    ck_assert_uint_eq(st->written, 15);
    ck_assert_uint_eq(st->queued, 0);
    ck_assert(!output_full(o));
    ck_assert(output_low(o));
    for (i = 0; i < 5; i++) output_write(o, m);
    ck_assert(!output_full(o));
    ck_assert(output_low(o)); /* 5 of 10: half */
    output_write(o, m);
    ck_assert(!output_low(o));
    pump_count(&loop, &st->written, 21, 30000);
    ck_assert_uint_eq(st->written, 21);
    ck_assert_uint_eq(st->dropped, 90);
    ck_assert_uint_eq(st->errors, 0);
    output_close(o, set_done, &done);
    ck_assert(pump_until(&loop, &done, 30000));
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    text = read_file(path);
    ck_assert_uint_eq(count_lines(text), 21);
    free(text);
    buf_free(&err);
    msg_unref(m);
    remove_tmpdir();
}
END_TEST

/*
 * Generated messages have a lane of their own: a burst of them is not
 * dropped at the queue's message bound, as input messages are, and goes
 * past its byte bound too; only past that lane's bytes (an output that
 * does not write: here the loop does not run) are they dropped, and
 * counted apart.  Then the output writes all it took.
 */
START_TEST(test_generated_lane)
{
    struct conf_output co = conf_out(CONF_OUT_FILE, CONF_FORMAT_JSON, CONF_SELECT_ALL, 10);
    struct msg *in = parse("<13>Jan  5 10:00:00 h app: line");
    struct msg *gen = msg_new(), *big = msg_new();
    struct buf err = BUF_INIT;
    const struct output_stats *st;
    struct output *o;
    uv_loop_t loop;
    char path[300], *text, *pad = malloc(1u << 20);
    bool done = false;
    uint64_t taken;
    int i;

    make_tmpdir();
    snprintf(path, sizeof(path), "%s/gen.log", tmpdir);
    co.path = path;
    msg_set_flags(gen, MSG_F_GENERATED);
    msg_set(gen, NV_MESSAGE, "summary", 7);
    memset(pad, 'x', 1u << 20);
    msg_set_flags(big, MSG_F_GENERATED);
    msg_set(big, NV_MESSAGE, pad, 1u << 20);
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    st = output_get_stats(o);
    for (i = 0; i < 100; i++) output_write(o, in);
    ck_assert_uint_eq(st->queued, 10);
    ck_assert_uint_eq(st->dropped, 90);
    /* past the message bound: all 1,000 taken, and the output says it is full */
    for (i = 0; i < 1000; i++) output_write(o, gen);
    ck_assert_uint_eq(st->queued, 1010);
    ck_assert_uint_eq(st->dropped, 90);
    ck_assert(output_full(o));
    /* 100 MiB: the lane (64 MiB past the 16 MiB bound) takes about 80 of them */
    for (i = 0; i < 100; i++) output_write(o, big);
    ck_assert_uint_ge(st->queued, 1010 + 75);
    ck_assert_uint_le(st->queued, 1010 + 80);
    ck_assert_uint_eq(st->generated_dropped, 1110 - st->queued);
    ck_assert_uint_eq(st->dropped, 90 + st->generated_dropped);
    taken = st->queued;
    pump_count(&loop, &st->written, taken, 30000);
    ck_assert_uint_eq(st->written, taken);
    output_close(o, set_done, &done);
    ck_assert(pump_until(&loop, &done, 30000));
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    text = read_file(path);
    ck_assert_uint_eq(count_lines(text), taken);
    free(text);
    free(pad);
    buf_free(&err);
    msg_unref(in);
    msg_unref(gen);
    msg_unref(big);
    remove_tmpdir();
}
END_TEST

/* ---- forward ---- */

START_TEST(test_forward_udp)
{
    static const char *lines[] = {
        "<13>Jan  5 10:00:00 web1 app[1]: first",
        "<14>Jan  5 10:00:01 web1 app[1]: second",
    };
    struct conf_output co = conf_out(CONF_OUT_FORWARD, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 100);
    struct buf err = BUF_INIT;
    struct output *o;
    struct msg *m;
    uv_loop_t loop;
    char to[64], dgram[70000];
    int port, fd, got = 0;
    uint64_t end;
    size_t i;

    fd = loopback_socket(SOCK_DGRAM, 0, &port);
    snprintf(to, sizeof(to), "127.0.0.1:%d", port);
    co.to = to;
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    /* written before the address is resolved: queued, then sent */
    for (i = 0; i < 2; i++) {
        m = parse(lines[i]);
        output_write(o, m);
        msg_unref(m);
    }
    /* a multi-line message is one datagram, newlines kept */
    m = parse("<13>Jan  5 10:00:02 web1 app[1]: x");
    msg_set(m, NV_MESSAGE, "line one\nline two", 17);
    output_write(o, m);
    msg_unref(m);

    end = now_ms() + 30000;
    while (got < 3 && now_ms() < end) {
        ssize_t n;
        uv_run(&loop, UV_RUN_NOWAIT);
        while ((n = recv(fd, dgram, sizeof(dgram) - 1, 0)) > 0) {
            dgram[n] = '\0';
            if (got < 2)
                ck_assert_str_eq(dgram, lines[got]);
            else
                ck_assert_str_eq(dgram, "<13>Jan  5 10:00:02 web1 app[1]: line one\nline two");
            got++;
        }
        usleep(1000);
    }
    ck_assert_int_eq(got, 3);
    ck_assert_uint_eq(output_get_stats(o)->written, 3);
    ck_assert_uint_eq(output_get_stats(o)->dropped, 0);
    close_all(&loop, o, 30000);
    close(fd);
    buf_free(&err);

    /* a malformed address is refused */
    co.to = "no-port";
    uv_loop_init(&loop);
    ck_assert_ptr_null(output_open(&loop, &co, &err));
    ck_assert_ptr_nonnull(strstr(buf_str(&err), "bad address"));
    close_all(&loop, NULL, 0);
    buf_free(&err);
}
END_TEST

/* Writes message i ("<13>Jan  5 10:00:00 web1 app[1]: message i") and appends its frame to want. */
static void
write_numbered(struct output *o, int i, struct buf *want)
{
    char line[128];
    struct msg *m;

    snprintf(line, sizeof(line), "<13>Jan  5 10:00:00 web1 app[1]: message %d", i);
    m = parse(line);
    output_write(o, m);
    msg_unref(m);
    if (want) buf_printf(want, "%zu %s", strlen(line), line);
}

START_TEST(test_forward_tcp)
{
    struct conf_output co = conf_out(CONF_OUT_FORWARD, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 100);
    struct conf_output cj = conf_out(CONF_OUT_FORWARD, CONF_FORMAT_JSON, CONF_SELECT_ALL, 100);
    struct buf err = BUF_INIT, want = BUF_INIT, got = BUF_INIT, wantj = BUF_INIT, gotj = BUF_INIT;
    const char *multi = "<13>Jan  5 10:00:01 web1 app[1]: first line\nsecond line\n";
    struct output *o, *oj;
    struct msg *m;
    uv_loop_t loop;
    char to[64], toj[64];
    int port, portj, lfd, lfdj, fd, fdj;

    lfd = loopback_socket(SOCK_STREAM, 0, &port);
    lfdj = loopback_socket(SOCK_STREAM, 0, &portj);
    snprintf(to, sizeof(to), "127.0.0.1:%d", port);
    snprintf(toj, sizeof(toj), "localhost:%d", portj);
    co.to = to;
    co.tcp = true;
    cj.to = toj;
    cj.tcp = true;
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    oj = output_open(&loop, &cj, &err);
    ck_assert_msg(oj != NULL, "%s", buf_str(&err));

    write_numbered(o, 1, &want);
    /* octet counting: a message with newlines arrives whole, as one frame */
    m = parse("<13>Jan  5 10:00:01 web1 app[1]: x");
    msg_set(m, NV_MESSAGE, "first line\nsecond line\n", 23);
    output_write(o, m);
    output_write(oj, m);
    buf_printf(&want, "%zu %s", strlen(multi), multi);
    json_format_msg(m, &wantj);
    buf_putc(&wantj, '\n');
    msg_unref(m);
    write_numbered(o, 2, &want);

    fd = pump_accept(&loop, lfd, 30000);
    ck_assert_int_ge(fd, 0);
    fdj = pump_accept(&loop, lfdj, 30000);
    ck_assert_int_ge(fdj, 0);
    pump_read(&loop, fd, &got, want.len, 30000);
    ck_assert_str_eq(buf_str(&got), buf_str(&want));
    /* JSON over TCP: one object per line */
    pump_read(&loop, fdj, &gotj, wantj.len, 30000);
    ck_assert_str_eq(buf_str(&gotj), buf_str(&wantj));
    ck_assert_uint_eq(output_get_stats(o)->written, 3);
    ck_assert_uint_eq(output_get_stats(oj)->written, 1);

    {
        bool d1 = false, d2 = false;
        output_close(o, set_done, &d1);
        output_close(oj, set_done, &d2);
        ck_assert(pump_until(&loop, &d1, 30000));
        ck_assert(pump_until(&loop, &d2, 30000));
    }
    close_all(&loop, NULL, 0);
    close(fd);
    close(fdj);
    close(lfd);
    close(lfdj);
    buf_free(&err);
    buf_free(&want);
    buf_free(&got);
    buf_free(&wantj);
    buf_free(&gotj);
}
END_TEST

START_TEST(test_forward_tcp_reconnect)
{
    struct conf_output co = conf_out(CONF_OUT_FORWARD, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 100);
    struct buf err = BUF_INIT, want = BUF_INIT, got = BUF_INIT;
    const struct output_stats *st;
    struct output *o;
    uv_loop_t loop;
    char to[64];
    int port, lfd, fd, i;

    lfd = loopback_socket(SOCK_STREAM, 0, &port);
    snprintf(to, sizeof(to), "127.0.0.1:%d", port);
    co.to = to;
    co.tcp = true;
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    st = output_get_stats(o);

    for (i = 1; i <= 3; i++) write_numbered(o, i, &want);
    fd = pump_accept(&loop, lfd, 30000);
    ck_assert_int_ge(fd, 0);
    pump_read(&loop, fd, &got, want.len, 30000);
    ck_assert_str_eq(buf_str(&got), buf_str(&want));
    ck_assert_uint_eq(st->written, 3);

    /* the receiver goes away; the output notices and waits before retrying */
    close(fd);
    close(lfd);
    pump_count(&loop, &st->errors, 1, 30000);
    ck_assert_uint_ge(st->errors, 1);
    buf_reset(&want);
    buf_reset(&got);
    for (i = 4; i <= 8; i++) write_numbered(o, i, &want);
    uv_run(&loop, UV_RUN_NOWAIT); /* nobody listens: they can only wait */
    ck_assert_uint_eq(st->queued, 5);
    ck_assert_uint_eq(st->written, 3);

    /* it comes back on the same port: what was queued arrives once, in order */
    lfd = loopback_socket(SOCK_STREAM, port, NULL);
    fd = pump_accept(&loop, lfd, 30000);
    ck_assert_int_ge(fd, 0);
    pump_read(&loop, fd, &got, want.len, 30000);
    write_numbered(o, 9, &want);
    pump_read(&loop, fd, &got, want.len, 30000);
    ck_assert_uint_eq(st->written, 9);
    ck_assert_uint_eq(st->dropped, 0);
    ck_assert_uint_eq(st->queued, 0);

    /* nothing more comes: all there is to read up to the end of the connection, once closed */
    close_all(&loop, o, 30000);
    ck_assert(read_to_eof(fd, &got, 10000));
    ck_assert_str_eq(buf_str(&got), buf_str(&want));
    close(fd);
    close(lfd);
    buf_free(&err);
    buf_free(&want);
    buf_free(&got);
}
END_TEST

START_TEST(test_forward_tcp_down)
{
    struct conf_output co = conf_out(CONF_OUT_FORWARD, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 5);
    struct buf err = BUF_INIT;
    const struct output_stats *st;
    struct output *o;
    uv_loop_t loop;
    bool done = false;
    char to[64];
    int port, fd, i;

    /* a port nobody listens on */
    fd = loopback_socket(SOCK_STREAM, 0, &port);
    close(fd);
    snprintf(to, sizeof(to), "127.0.0.1:%d", port);
    co.to = to;
    co.tcp = true;
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    st = output_get_stats(o);
    for (i = 0; i < 20; i++) write_numbered(o, i, NULL);
    ck_assert_uint_eq(st->queued, 5);
    ck_assert_uint_eq(st->dropped, 15);
    pump_count(&loop, &st->errors, 1, 30000);
    ck_assert_uint_ge(st->errors, 1);
    ck_assert_uint_eq(st->written, 0);

    /* closing waits (it has not ended before the loop ran), then gives up after about 5 s and
     * counts the rest as dropped */
    output_close(o, set_done, &done);
    ck_assert(!done);
    ck_assert(pump_until(&loop, &done, 30000));
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
}
END_TEST

/* ---- stdout ---- */

START_TEST(test_stdout_pipe)
{
    struct conf_output co = conf_out(CONF_OUT_STDOUT, CONF_FORMAT_JSON, CONF_SELECT_ALL, 1000);
    struct msg *m = parse("<13>Jan  5 10:00:00 web1 app[1]: a line of some length to fill the pipe "
                          "sooner rather than later, with a few more words");
    struct buf err = BUF_INIT, sink = BUF_INIT;
    const struct output_stats *st;
    struct output *o;
    uv_loop_t loop;
    uint64_t before;
    int p[2], saved, i, n = 20000;
    bool done = false;

    ck_assert_int_eq(pipe(p), 0);
    saved = dup(STDOUT_FILENO);
    ck_assert_int_eq(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
    close(p[1]);
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    st = output_get_stats(o);

    /* nobody reads: the pipe fills, then the queue, then messages are dropped (a write that
     * blocked on the full pipe would never return: nothing reads it) */
    for (i = 0; i < n; i++) {
        output_write(o, m);
        if (i % 100 == 0) uv_run(&loop, UV_RUN_NOWAIT);
    }
    ck_assert_uint_gt(st->dropped, 0);
    ck_assert_uint_le(st->queued, 1000);
    ck_assert_uint_eq(st->written + st->dropped + st->queued, (uint64_t)n);

    /* a reader drains the pipe: writing resumes */
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    {
        uint64_t end = now_ms() + 30000;
        char tmp[65536];
        while ((st->queued > 0) && now_ms() < end) {
            uv_run(&loop, UV_RUN_NOWAIT);
            while (read(p[0], tmp, sizeof(tmp)) > 0) continue;
            usleep(1000);
        }
    }
    ck_assert_uint_eq(st->queued, 0);
    before = st->dropped;
    for (i = 0; i < 10; i++) output_write(o, m);
    pump_read(&loop, p[0], &sink, 1, 30000);
    pump_count(&loop, &st->written, (uint64_t)n + 10 - before, 30000);
    ck_assert_uint_eq(st->dropped, before);
    ck_assert_uint_eq(st->written + st->dropped, (uint64_t)n + 10);
    ck_assert_uint_eq(st->errors, 0);

    output_close(o, set_done, &done);
    ck_assert(pump_until(&loop, &done, 30000));
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    close(p[0]);
    buf_free(&err);
    buf_free(&sink);
    msg_unref(m);
}
END_TEST

/*
 * stdout's reader is gone (EPIPE): counted once as an error, and from then
 * on every message is dropped and counted, generated ones apart, and the
 * output never holds the inputs back.
 */
START_TEST(test_stdout_reader_gone)
{
    struct conf_output co = conf_out(CONF_OUT_STDOUT, CONF_FORMAT_JSON, CONF_SELECT_ALL, 1000);
    struct msg *m = parse("<13>Jan  5 10:00:00 web1 app[1]: to nobody");
    struct msg *g = msg_clone(m);
    struct buf err = BUF_INIT;
    const struct output_stats *st;
    struct output *o;
    uv_loop_t loop;
    int p[2], saved;
    bool done = false;

    msg_set_flags(g, MSG_F_GENERATED);
    ck_assert_int_eq(pipe(p), 0);
    saved = dup(STDOUT_FILENO);
    ck_assert_int_eq(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
    close(p[1]);
    close(p[0]); /* the reader is gone before anything is written */
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    st = output_get_stats(o);

    output_write(o, m);
    pump_count(&loop, &st->errors, 1, 30000);
    ck_assert_uint_eq(st->errors, 1);
    ck_assert_uint_eq(st->written, 0);
    ck_assert_uint_eq(st->queued, 0);
    /* broken for good: dropped on arrival, the inputs not held back */
    output_write(o, m);
    output_write_keep(o, m);
    ck_assert_uint_eq(st->dropped, 3);
    output_write(o, g);
    output_write(o, g);
    ck_assert_uint_eq(st->generated_dropped, 2);
    ck_assert(!output_full(o));
    ck_assert(output_low(o));
    ck_assert_uint_eq(st->errors, 1);

    output_close(o, set_done, &done);
    ck_assert(pump_until(&loop, &done, 30000));
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    buf_free(&err);
    msg_unref(g);
    msg_unref(m);
}
END_TEST

START_TEST(test_stdout_file)
{
    struct conf_output co =
        conf_out(CONF_OUT_STDOUT, CONF_FORMAT_SYSLOG, CONF_SELECT_GENERATED, 100);
    struct msg *in = parse("<13>Jan  5 10:00:00 web1 app[1]: input");
    struct msg *gen = generated("alert\nwith two lines");
    struct buf err = BUF_INIT;
    struct output *o;
    uv_loop_t loop;
    char path[300], want[512], *text;
    int fd, saved;

    make_tmpdir();
    snprintf(path, sizeof(path), "%s/stdout.log", tmpdir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    saved = dup(STDOUT_FILENO);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    output_write(o, in);
    output_write(o, gen);
    close_all(&loop, o, 30000);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    /* stdout is the process's: closing the output leaves it open */
    ck_assert_int_ge(fcntl(STDOUT_FILENO, F_GETFD), 0);
    text = read_file(path);
    snprintf(want, sizeof(want), "<13>Jan  5 10:00:00 %s corral: alert with two lines\n",
             hostname());
    ck_assert_str_eq(text, want);
    free(text);
    buf_free(&err);
    msg_unref(in);
    msg_unref(gen);
    remove_tmpdir();
}
END_TEST

/* ---- checks of the configuration ---- */

/* output_check's answer for co: 0, or -1 with what in the message. */
static void
check_says(const struct conf_output *co, const char *file, const char *what)
{
    struct buf err = BUF_INIT;
    int rc = output_check(co, file, &err);

    if (!what) {
        ck_assert_msg(rc == 0 && err.len == 0, "%s", buf_str(&err));
    } else {
        ck_assert_int_eq(rc, -1);
        ck_assert_msg(strstr(buf_str(&err), what), "want %s in: %s", what, buf_str(&err));
    }
    buf_free(&err);
}

START_TEST(test_check)
{
    struct conf_output co = conf_out(CONF_OUT_FILE, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 10);
    char path[400];

    make_tmpdir();
    check_says(&co, NULL, "output test: a file output needs a path\n");
    co.path = tmpdir;
    check_says(&co, NULL, ": is a directory");
    snprintf(path, sizeof(path), "%s/no/such/dir/out.log", tmpdir);
    co.path = path;
    check_says(&co, NULL, "out.log: no directory ");
    /* with the file and the line of the configuration in front */
    co.line = 12;
    check_says(&co, "corrald.conf", "corrald.conf:12: output test: ");
    snprintf(path, sizeof(path), "%s/out.log", tmpdir);
    check_says(&co, "corrald.conf", NULL); /* it would be created */
    ck_assert_int_eq(access(path, F_OK), -1);

    co = conf_out(CONF_OUT_FORWARD, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 10);
    co.to = "nohost";
    check_says(&co, NULL, "bad address \"nohost\" (expected host:port)");
    co.to = "127.0.0.1:0";
    check_says(&co, NULL, "bad address");
    co.to = NULL;
    check_says(&co, NULL, "bad address \"\"");
    co.to = "127.0.0.1:514";
    check_says(&co, NULL, NULL);
    /* TLS: the certificate is loaded as opening would */
    co.tcp = co.tls = true;
    snprintf(path, sizeof(path), "%s/missing.pem", tmpdir);
    co.tls_conf.cert = co.tls_conf.key = path;
    check_says(&co, NULL, "missing.pem");
    remove_tmpdir();
}
END_TEST

/* A forward output whose TLS certificate cannot be loaded does not open. */
START_TEST(test_forward_tls_unloadable)
{
    struct conf_output co = conf_out(CONF_OUT_FORWARD, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 10);
    struct buf err = BUF_INIT;
    uv_loop_t loop;

    co.to = "127.0.0.1:6514";
    co.tcp = co.tls = true;
    co.tls_conf.cert = co.tls_conf.key = "/nonexistent/cert.pem";
    uv_loop_init(&loop);
    ck_assert_ptr_null(output_open(&loop, &co, &err));
    ck_assert_msg(strncmp(buf_str(&err), "output test: ", 13) == 0 &&
                      strstr(buf_str(&err), "/nonexistent/cert.pem"),
                  "%s", buf_str(&err));
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&err);
}
END_TEST

/* stdout a TCP socket (systemd's StandardOutput=socket): written to as a stream. */
START_TEST(test_stdout_tcp)
{
    struct conf_output co = conf_out(CONF_OUT_STDOUT, CONF_FORMAT_SYSLOG, CONF_SELECT_ALL, 100);
    struct msg *m = parse("<13>Jan  5 10:00:00 web1 app[1]: over tcp");
    struct buf err = BUF_INIT, got = BUF_INIT;
    struct sockaddr_in a;
    struct output *o;
    uv_loop_t loop;
    int lfd, cfd, peer, saved, port;
    const char *want = "<13>Jan  5 10:00:00 web1 app[1]: over tcp\n";

    lfd = loopback_socket(SOCK_STREAM, 0, &port); /* listening */
    cfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(cfd, (struct sockaddr *)&a, sizeof(a)), 0);
    peer = accept(lfd, NULL, NULL);
    ck_assert_int_ge(peer, 0);
    fcntl(peer, F_SETFL, O_NONBLOCK);
    saved = dup(STDOUT_FILENO);
    ck_assert_int_eq(dup2(cfd, STDOUT_FILENO), STDOUT_FILENO);
    close(cfd);
    uv_loop_init(&loop);
    o = output_open(&loop, &co, &err);
    ck_assert_msg(o != NULL, "%s", buf_str(&err));
    output_write(o, m);
    pump_read(&loop, peer, &got, strlen(want), 30000);
    ck_assert_str_eq(buf_str(&got), want);
    ck_assert_uint_eq(output_get_stats(o)->written, 1);
    close_all(&loop, o, 30000);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    close(peer);
    close(lfd);
    msg_unref(m);
    buf_free(&err);
    buf_free(&got);
}
END_TEST

static Suite *
output_suite(void)
{
    Suite *s = suite_create("output");
    TCase *tc = tcase_create("format");

    tcase_add_test(tc, test_format_json);
    tcase_add_test(tc, test_format_syslog_input);
    tcase_add_test(tc, test_format_syslog_generated);
    suite_add_tcase(s, tc);

    tc = tcase_create("io");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_file_write_reopen);
    tcase_add_test(tc, test_queue_overflow);
    tcase_add_test(tc, test_generated_lane);
    tcase_add_test(tc, test_forward_udp);
    tcase_add_test(tc, test_forward_tcp);
    tcase_add_test(tc, test_forward_tcp_reconnect);
    tcase_add_test(tc, test_forward_tcp_down);
    tcase_add_test(tc, test_stdout_pipe);
    tcase_add_test(tc, test_stdout_reader_gone);
    tcase_add_test(tc, test_stdout_file);
    tcase_add_test(tc, test_check);
    tcase_add_test(tc, test_forward_tls_unloadable);
    tcase_add_test(tc, test_stdout_tcp);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    /* a peer or reader that goes away must be an error return, not a signal */
    signal(SIGPIPE, SIG_IGN);
    log_set_sink(quiet_log, NULL);
    return unit_run(output_suite());
}
