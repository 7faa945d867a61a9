/*
 * test_smtp: the smtp executor (actions/smtp.c, smtp_mime.c, smtp_send.c).
 *
 * Without a server: the configuration and its errors, the header and body
 * encodings (RFC 5322, RFC 2047, quoted-printable) checked by decoding them
 * again, the neutralising of line breaks in headers, render().
 *
 * With a real server: Debian's python3-aiosmtpd, run by this test on a free
 * loopback port (tests/integration/smtp_server.py, which stores what it
 * receives, or the stock `python3 -m aiosmtpd`), each message then checked
 * by Python's email package (tests/integration/smtp_check.py).  The executor
 * runs on a libuv loop here as in corrald.  These tests are left out, with a
 * note, when /usr/bin/python3 cannot import aiosmtpd; the TLS ones when the
 * openssl command cannot make a throw-away certificate.  The test starts and
 * stops only its own servers (they also exit when this process goes).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "engine/clock.h"
#include "engine/buf.h"
#include "agent/conf/conf.h"
#include "actions/executor.h"
#include "engine/labelmatch.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "actions/smtp_int.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

#define PYTHON "/usr/bin/python3"

static char srcdir[2048];  /* where tests/integration is */
static char workdir[2048]; /* this run's scratch directory */
static bool have_server, have_tls;

/* ---- helpers: configuration ---- */

/* kv: name, value pairs ending with NULL; body: <body> text or NULL. */
static struct exconf *
make_cfg(const char *const *kv, const char *body)
{
    struct exconf *e = calloc(1, sizeof(*e));
    size_t n = 0, i;

    while (kv[2 * n]) n++;
    e->kind = (char *)"smtp";
    e->name = (char *)"admins";
    e->line = 7;
    e->attrs = calloc(n + 1, sizeof(*e->attrs));
    e->attrs[0].name = (char *)"name";
    e->attrs[0].value = (char *)"admins";
    for (i = 0; i < n; i++) {
        e->attrs[i + 1].name = (char *)kv[2 * i];
        e->attrs[i + 1].value = (char *)kv[2 * i + 1];
    }
    e->nattrs = n + 1;
    if (body) {
        e->children = calloc(1, sizeof(*e->children));
        e->children[0].name = (char *)"body";
        e->children[0].text = (char *)body;
        e->children[0].line = 9;
        e->nchildren = 1;
    }
    return e;
}

static void
free_cfg(struct exconf *e)
{
    free(e->attrs);
    free(e->children);
    free(e);
}

static void *
open_ok(uv_loop_t *loop, const char *const *kv, const char *body)
{
    struct buf err = BUF_INIT;
    struct exconf *e = make_cfg(kv, body);
    void *x = smtp_executor.open(loop, e, "test.conf", &err);

    ck_assert_msg(x != NULL, "open failed: %s", buf_str(&err));
    ck_assert_msg(err.len == 0, "open complained: %s", buf_str(&err));
    free_cfg(e);
    buf_free(&err);
    return x;
}

/* Opening must fail; returns the error text (free it). */
static char *
open_err(uv_loop_t *loop, const char *const *kv, const char *body)
{
    struct buf err = BUF_INIT;
    struct exconf *e = make_cfg(kv, body);
    void *x = smtp_executor.open(loop, e, "test.conf", &err);
    char *s;

    ck_assert_msg(x == NULL, "open accepted a bad configuration");
    ck_assert_msg(err.len > 0, "no error text");
    free_cfg(e);
    s = strdup(buf_str(&err));
    buf_free(&err);
    return s;
}

/* ---- helpers: alerts and the loop ---- */

static void
set(struct msg *m, const char *name, const char *val)
{
    msg_set(m, nv_intern_str(name), val, strlen(val));
}

static struct msg *
alert_msg(const char *host, const char *message)
{
    struct msg *m = msg_new();
    struct msg_time t = {1704067200, 0, 0}; /* 2024-01-01T00:00:00Z */

    set(m, "HOST", host);
    set(m, "PROGRAM", "diskmon");
    set(m, ".classifier.rule_id", "r-disk");
    set(m, "MESSAGE", message);
    msg_set_stamp(m, &t);
    return m;
}

struct outcome {
    int n;
    enum deliver_result r;
    char reason[2048];
    uint64_t at; /* ms, loop time */
};

static int ndone;
static uv_loop_t *cur_loop;

static void
on_done(void *token, enum deliver_result r, const char *reason)
{
    struct outcome *o = token;

    o->n++;
    o->r = r;
    snprintf(o->reason, sizeof(o->reason), "%s", reason ? reason : "");
    o->at = uv_now(cur_loop);
    ndone++;
}

static void
deliver(void *x, struct msg *m, const char *id, struct outcome *o)
{
    struct alert a = {1, id, "major", m, 0};

    smtp_executor.deliver(x, &a, on_done, o);
}

/* For ul_run_until: true once *arg deliveries are done. */
static bool
ndone_reached(void *arg)
{
    return ndone >= *(const int *)arg;
}

static bool closed;

static void
on_closed(void *arg)
{
    (void)arg;
    closed = true;
}

/* Closes the executor and checks that it leaves no handle behind on the loop. */
static void
close_x(uv_loop_t *loop, void *x)
{
    closed = false;
    smtp_executor.close(x, on_closed, NULL);
    ck_assert_msg(ul_run_until(loop, ul_flag_set, &closed, 20), "close did not finish");
    ck_assert_int_eq(uv_loop_close(loop), 0);
}

static uv_loop_t *
new_loop(void)
{
    uv_loop_t *loop = malloc(sizeof(*loop));

    uv_loop_init(loop);
    uv_update_time(loop);
    cur_loop = loop;
    ndone = 0;
    return loop;
}

/* ---- helpers: servers ---- */

struct server {
    pid_t pid;
    int port;
    int in_fd; /* its standard input: it exits when this closes */
    char dir[2300];
};

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void
rm_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Starts smtp_server.py with extra options (NULL-terminated); fills s. */
static void
server_start(struct server *s, const char *const *extra)
{
    int out[2], in[2];
    const char *argv[40];
    char script[2100], line[128];
    size_t n = 0, i;
    struct pollfd p;
    ssize_t got, used = 0;

    snprintf(s->dir, sizeof(s->dir), "%s/server.XXXXXX", workdir);
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    snprintf(script, sizeof(script), "%s/tests/integration/smtp_server.py", srcdir);
    argv[n++] = PYTHON;
    argv[n++] = script;
    argv[n++] = "--dir";
    argv[n++] = s->dir;
    for (i = 0; extra && extra[i]; i++) argv[n++] = extra[i];
    argv[n] = NULL;
    ck_assert_int_eq(pipe(out), 0);
    ck_assert_int_eq(pipe(in), 0);
    s->pid = fork();
    ck_assert_int_ge(s->pid, 0);
    if (s->pid == 0) {
        char log[2400];
        int fd;
        snprintf(log, sizeof(log), "%s/server.log", s->dir);
        fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (fd >= 0) dup2(fd, 2);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execv(PYTHON, (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->in_fd = in[1];
    p.fd = out[0];
    p.events = POLLIN;
    memset(line, 0, sizeof(line));
    while (!strchr(line, '\n') && poll(&p, 1, 15000) == 1 &&
           (got = read(out[0], line + used, sizeof(line) - 1 - (size_t)used)) > 0)
        used += got;
    close(out[0]);
    ck_assert_msg(sscanf(line, "PORT %d", &s->port) == 1, "the SMTP server did not start (%s)",
                  s->dir);
}

static void
server_stop(struct server *s)
{
    int st;

    kill(s->pid, SIGTERM);
    close(s->in_fd);
    waitpid(s->pid, &st, 0);
    rm_tree(s->dir);
}

static int
count_msgs(const struct server *s)
{
    DIR *d = opendir(s->dir);
    struct dirent *e;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "msg-", 4) == 0 && !strstr(e->d_name, ".tmp")) n++;
    closedir(d);
    return n;
}

/* The server's events.log (what the client did), or "". */
static char *
events(const struct server *s)
{
    char path[2400];
    struct buf b = BUF_INIT;
    FILE *f;
    char chunk[4096];
    size_t n;

    snprintf(path, sizeof(path), "%s/events.log", s->dir);
    if ((f = fopen(path, "r"))) {
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(&b, chunk, n);
        fclose(f);
    }
    {
        char *r = strdup(buf_str(&b));
        buf_free(&b);
        return r;
    }
}

static int
count_events(const struct server *s, const char *prefix)
{
    char *ev = events(s), *p = ev;
    int n = 0;
    size_t len = strlen(prefix);

    while (p && *p) {
        if (strncmp(p, prefix, len) == 0) n++;
        p = strchr(p, '\n');
        if (p) p++;
    }
    free(ev);
    return n;
}

/* Runs smtp_check.py on message number n with the given options; true when it passes. */
static bool
check_msg_opt(const struct server *s, int n, const char *const *opts, bool quiet)
{
    const char *argv[64];
    char script[2100], file[2400];
    size_t k = 0, i;
    pid_t pid;
    int st;

    snprintf(script, sizeof(script), "%s/tests/integration/smtp_check.py", srcdir);
    snprintf(file, sizeof(file), "%s/msg-%04d.json", s->dir, n);
    argv[k++] = PYTHON;
    argv[k++] = script;
    argv[k++] = file;
    if (quiet) argv[k++] = "--quiet";
    for (i = 0; opts && opts[i]; i++) argv[k++] = opts[i];
    argv[k] = NULL;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        execv(PYTHON, (char *const *)argv);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static bool
check_msg(const struct server *s, int n, const char *const *opts)
{
    return check_msg_opt(s, n, opts, false);
}

/* Messages a and b, in either order, one passing opts_a and the other opts_b. */
static bool
check_pair(const struct server *s, const char *const *opts_a, const char *const *opts_b)
{
    if (check_msg_opt(s, 1, opts_a, true)) return check_msg(s, 2, opts_b);
    return check_msg(s, 2, opts_a) && check_msg(s, 1, opts_b);
}

static char *
url_of(const char *scheme, const char *host, int port)
{
    static char u[4][128]; /* a few at once: plain_kv() makes one of its own */
    static int next;
    char *p = u[next++ % 4];

    snprintf(p, sizeof(u[0]), "%s://%s:%d", scheme, host, port);
    return p;
}

static char cert[2100], key[2100], pwfile[2100];

/* ---- decoders, to check encodings by their inverse ---- */

static int
b64val(char c)
{
    const char *tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = c ? strchr(tab, c) : NULL;
    return p ? (int)(p - tab) : -1;
}

static void
b64decode(const char *s, size_t len, struct buf *out)
{
    uint32_t v = 0;
    int bits = 0;
    size_t i;

    for (i = 0; i < len && s[i] != '='; i++) {
        int d = b64val(s[i]);
        ck_assert_int_ge(d, 0);
        v = v << 6 | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf_putc(out, (char)(v >> bits));
        }
    }
}

/* Unfolds a header line and decodes its encoded-words (the RFC 2047 subset we write). */
static void
decode_header_value(const char *field, const char *hdr, struct buf *out)
{
    struct buf unf = BUF_INIT;
    const char *p;
    size_t flen = strlen(field), i;

    ck_assert_msg(strncmp(hdr, field, flen) == 0 && hdr[flen] == ':', "not %s: %s", field, hdr);
    /* unfold: CRLF followed by a blank is removed; any other CR or LF is an error */
    for (i = flen + 2; hdr[i]; i++) {
        if (hdr[i] == '\r') {
            ck_assert_int_eq(hdr[i + 1], '\n');
            if (hdr[i + 2] == '\0') break;
            ck_assert_msg(hdr[i + 2] == ' ' || hdr[i + 2] == '\t', "a header line break: %s", hdr);
            i++;
            continue;
        }
        ck_assert_msg(hdr[i] != '\n', "bare LF in header: %s", hdr);
        buf_putc(&unf, hdr[i]);
    }
    p = buf_str(&unf);
    if (strncmp(p, "=?UTF-8?B?", 10) != 0) {
        buf_puts(out, p);
    } else {
        while (*p) {
            const char *e;
            ck_assert_msg(strncmp(p, "=?UTF-8?B?", 10) == 0, "not an encoded-word: %s", p);
            e = strstr(p + 10, "?=");
            ck_assert_ptr_nonnull(e);
            ck_assert_msg(e + 2 - p <= 75, "encoded-word longer than 75: %.*s", (int)(e + 2 - p),
                          p);
            b64decode(p + 10, (size_t)(e - p - 10), out);
            p = e + 2;
            while (*p == ' ') p++; /* white space between encoded-words is dropped */
        }
    }
    buf_free(&unf);
}

static int
hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes a wire body (7bit or quoted-printable) back to text with LF line ends. */
static void
decode_body(const char *wire, size_t len, bool qp, struct buf *out)
{
    size_t i = 0;

    while (i < len) {
        const char *crlf = memmem(wire + i, len - i, "\r\n", 2);
        size_t end, j;
        bool soft = false;
        ck_assert_msg(crlf != NULL, "body does not end with CRLF");
        end = (size_t)(crlf - wire);
        ck_assert_msg(!memchr(wire + i, '\n', end - i) && !memchr(wire + i, '\r', end - i),
                      "bare CR or LF in the body");
        ck_assert_msg(wire[i] != '.', "a body line starts with '.'");
        ck_assert_msg(end - i <= (qp ? 76u : 998u), "body line of %zu bytes", end - i);
        for (j = i; j < end; j++) {
            unsigned char c = (unsigned char)wire[j];
            ck_assert_msg(c < 0x80, "8-bit byte on the wire");
            if (qp && c == '=') {
                if (j + 1 == end) {
                    soft = true;
                    break;
                }
                ck_assert(j + 2 < end || j + 2 == end);
                ck_assert_int_ge(hexval(wire[j + 1]), 0);
                ck_assert_int_ge(hexval(wire[j + 2]), 0);
                buf_putc(out, (char)(hexval(wire[j + 1]) * 16 + hexval(wire[j + 2])));
                j += 2;
            } else {
                if (qp && j + 1 == end)
                    ck_assert_msg(c != ' ' && c != '\t', "trailing blank in qp");
                buf_putc(out, (char)c);
            }
        }
        if (!soft) buf_putc(out, '\n');
        i = end + 2;
    }
}

/* The text smtp_body_encode should give back, given clean input. */
static void
roundtrip_body(const char *text, size_t len, const char *want_cte)
{
    struct buf wire = BUF_INIT, back = BUF_INIT, want = BUF_INIT;
    const char *cte = smtp_body_encode(text, len, &wire);

    if (want_cte) ck_assert_str_eq(cte, want_cte);
    decode_body(wire.p ? wire.p : "", wire.len, strcmp(cte, "quoted-printable") == 0, &back);
    buf_append(&want, text, len);
    if (len && text[len - 1] != '\n') buf_putc(&want, '\n');
    ck_assert_uint_eq(back.len, want.len);
    ck_assert_msg(memcmp(back.p ? back.p : "", want.p ? want.p : "", want.len) == 0,
                  "body changed by the round trip");
    buf_free(&wire);
    buf_free(&back);
    buf_free(&want);
}

/* ==== tests without a server ==== */

static const char *const BASE[] = {"url",  "smtp://127.0.0.1:2525", "tls", "none",
                                   "from", "corral@example.com",    "to",  "ops@example.com",
                                   NULL};

START_TEST(test_conf_minimal)
{
    uv_loop_t *loop = new_loop();
    void *x = open_ok(loop, BASE, NULL);
    const char *const common[] = {"url",         "smtp://127.0.0.1:2525",
                                  "tls",         "none",
                                  "from",        "corral@example.com",
                                  "to",          "ops@example.com",
                                  "queue",       "100",
                                  "attempts",    "3",
                                  "backoff",     "2s",
                                  "max-backoff", "1m",
                                  "rate",        "10/60",
                                  "dedupe",      "5m",
                                  "dedupe-key",  "$HOST",
                                  "alert-id",    "$HOST",
                                  "severity",    "major",
                                  "dead-letter", "/tmp/x",
                                  NULL};

    ck_assert_uint_eq(smtp_executor.max_inflight(x), 4);
    close_x(loop, x);
    free(loop);
    /* the queue's own attributes are accepted silently */
    loop = new_loop();
    x = open_ok(loop, common, NULL);
    close_x(loop, x);
    free(loop);
}
END_TEST

struct bad_conf {
    const char *kv[24];
    const char *body;
    const char *want; /* in the error text */
};

static const struct bad_conf bad_confs[] = {
    {{"url", "smtp://h:25", "tls", "none", "from", "a@b.org", "to", "c@d.org", "colour", "red"},
     NULL,
     "test.conf:7: executor admins: unknown attribute colour="},
    {{"tls", "none", "from", "a@b.org", "to", "c@d.org"},
     NULL,
     "test.conf:7: executor admins: url is missing"},
    {{"url", "http://h/", "from", "a@b.org", "to", "c@d.org"},
     NULL,
     "scheme must be smtp or smtps"},
    {{"url", "smtp://u:secret@h:25", "from", "a@b.org", "to", "c@d.org"},
     NULL,
     "must not hold credentials"},
    {{"url", "smtp://h", "tls", "maybe", "from", "a@b.org", "to", "c@d.org"},
     NULL,
     "bad tls=\"maybe\""},
    {{"url", "smtps://h", "tls", "none", "from", "a@b.org", "to", "c@d.org"}, NULL, "always TLS"},
    {{"url", "smtp://h", "tls-verify", "perhaps", "from", "a@b.org", "to", "c@d.org"},
     NULL,
     "bad tls-verify"},
    {{"url", "smtp://h", "ca-file", "/nonexistent/ca.pem", "from", "a@b.org", "to", "c@d.org"},
     NULL,
     "cannot read ca-file"},
    {{"url", "smtp://h", "to", "c@d.org"}, NULL, "from is missing"},
    {{"url", "smtp://h", "from", "not an address", "to", "c@d.org"}, NULL, "is not an address"},
    {{"url", "smtp://h", "from", "a@b.org"}, NULL, "to is missing"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org, evil"},
     NULL,
     "\"evil\" is not an address"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org\r\nRCPT TO:<x@y.org>"},
     NULL,
     "is not an address"},
    {{"url", "smtp://h", "from", "a@b.org\r\nBcc: x@y.org", "to", "c@d.org"},
     NULL,
     "is not an address"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "Ops <c@d.org>"}, NULL, "no display names"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org", "user", "u"},
     NULL,
     "without password-file"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org", "password-env", "CORRAL_TEST_PW"},
     NULL,
     "a password without user="},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org", "user", "u", "password-file",
      "/nonexistent/pw"},
     NULL,
     "cannot read password-file"},
    {{"url", "smtp://h", "tls", "optional", "from", "a@b.org", "to", "c@d.org", "user", "u",
      "password-env", "CORRAL_TEST_PW"},
     NULL,
     "in the clear"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org", "group-wait", "10s"},
     NULL,
     "need group-by"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org", "group-by", "HOST", "group-wait",
      "soon"},
     NULL,
     "bad group-wait=\"soon\""},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org", "repeat-interval", "-1"},
     NULL,
     "bad repeat-interval"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org", "connections", "0"},
     NULL,
     "bad connections"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org", "timeout", "100ms"}, NULL, "below 1s"},
    {{"url", "smtp://h", "from", "a@b.org", "to", "c@d.org"},
     "",
     "test.conf:9: executor admins: empty <body>"},
};

START_TEST(test_conf_errors)
{
    const struct bad_conf *b = &bad_confs[_i];
    uv_loop_t *loop = new_loop();
    char *err;

    setenv("CORRAL_TEST_PW", "pw", 1);
    err = open_err(loop, b->kv, b->body);
    ck_assert_msg(strstr(err, b->want), "case %d: want \"%s\" in: %s", _i, b->want, err);
    ck_assert_msg(strncmp(err, "test.conf:", 10) == 0, "not FILE:LINE: %s", err);
    free(err);
    ck_assert_int_eq(uv_loop_close(loop), 0);
    free(loop);
}
END_TEST

START_TEST(test_conf_children)
{
    uv_loop_t *loop = new_loop();
    struct buf err = BUF_INIT;
    struct exconf *e = make_cfg(BASE, NULL);
    struct exconf_node kids[2];
    struct exconf_attr a = {(char *)"format", (char *)"html"};

    memset(kids, 0, sizeof(kids));
    kids[0].name = (char *)"html";
    kids[0].line = 12;
    kids[0].text = (char *)"x";
    kids[1].name = (char *)"body";
    kids[1].line = 13;
    kids[1].text = (char *)"$MESSAGE";
    kids[1].attrs = &a;
    kids[1].nattrs = 1;
    e->children = NULL;
    e->nchildren = 2;
    {
        struct exconf_node *saved = e->children;
        e->children = kids;
        ck_assert_ptr_null(smtp_executor.open(loop, e, "test.conf", &err));
        e->children = saved;
    }
    ck_assert_msg(strstr(buf_str(&err), "test.conf:12: executor admins: unknown element <html>"),
                  "%s", buf_str(&err));
    ck_assert_msg(strstr(buf_str(&err), "test.conf:13: executor admins: <body> takes no attribute"),
                  "%s", buf_str(&err));
    e->nchildren = 0;
    free_cfg(e);
    buf_free(&err);
    ck_assert_int_eq(uv_loop_close(loop), 0);
    free(loop);
}
END_TEST

START_TEST(test_addresses)
{
    static const char *const good[] = {"a@b.org", "first.last+tag@mail.example.com",
                                       "root@localhost", "x!#$%&'*/=?^_`{|}~-@a-b.c9", NULL};
    static const char *const bad[] = {"",
                                      "a",
                                      "@b.org",
                                      "a@",
                                      "a@@b.org",
                                      ".a@b.org",
                                      "a.@b.org",
                                      "a..b@c.org",
                                      "a b@c.org",
                                      "a@b .org",
                                      "a@-b.org",
                                      "a@b-.org",
                                      "a@b..org",
                                      "<a@b.org>",
                                      "a@b.org\r\n",
                                      "\"a\"@b.org",
                                      "a@[127.0.0.1]",
                                      "ü@b.org",
                                      "a@b.org,c@d.org",
                                      NULL};
    char *name, *addr;
    size_t i;

    for (i = 0; good[i]; i++)
        ck_assert_msg(smtp_addr_valid(good[i], strlen(good[i])), "%s", good[i]);
    for (i = 0; bad[i]; i++) ck_assert_msg(!smtp_addr_valid(bad[i], strlen(bad[i])), "%s", bad[i]);

    ck_assert(smtp_parse_mailbox("Corral Alerts <corral@example.com>", &name, &addr));
    ck_assert_str_eq(name, "Corral Alerts");
    ck_assert_str_eq(addr, "corral@example.com");
    free(name);
    free(addr);
    ck_assert(smtp_parse_mailbox("  \"Corral, the daemon\" <c@example.com> ", &name, &addr));
    ck_assert_str_eq(name, "Corral, the daemon");
    free(name);
    free(addr);
    ck_assert(smtp_parse_mailbox("c@example.com", &name, &addr));
    ck_assert_ptr_null(name);
    ck_assert_str_eq(addr, "c@example.com");
    free(addr);
    ck_assert(!smtp_parse_mailbox("Evil\r\nBcc: x@y.org <c@example.com>", &name, &addr));
    ck_assert(!smtp_parse_mailbox("Name <c@example.com", &name, &addr));
    ck_assert(!smtp_parse_mailbox("Name <c@example.com, d@example.com>", &name, &addr));
}
END_TEST

START_TEST(test_header_clean)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"  padded  ", "padded"},
        {"a\r\nBcc: evil@x.org", "a  Bcc: evil@x.org"},
        {"a\nb\rc\td\x0b"
         "e\x1b[31mf\x7fg",
         "a b c d e [31mf g"},
        {"line\xe2\x80\xa8sep\xe2\x80\xa9par\xc2\x85nel\xc2\x9b"
         "csi",
         "line sep par nel csi"},
        {"bidi \xe2\x80\xae"
         "evil\xe2\x81\xa6x",
         "bidi  evil x"},
        {"bad \xff\xc3 utf8 \xc0\xaf \xed\xa0\x80",
         "bad \xef\xbf\xbd\xef\xbf\xbd utf8 "
         "\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"caf\xc3\xa9 \xf0\x9f\x94\xa5", "caf\xc3\xa9 \xf0\x9f\x94\xa5"},
        {"nul\0byte", "nul"},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct buf b = BUF_INIT;
        smtp_header_clean(cases[i].in, strlen(cases[i].in), 0, &b);
        ck_assert_msg(strcmp(buf_str(&b), cases[i].out) == 0, "case %zu: got \"%s\"", i,
                      buf_str(&b));
        buf_free(&b);
    }
    {
        /* a NUL inside the value is a control too */
        struct buf b = BUF_INIT;
        smtp_header_clean("nul\0byte", 8, 0, &b);
        ck_assert_str_eq(buf_str(&b), "nul byte");
        buf_free(&b);
    }
    {
        /* cut at max characters (not bytes), with "..." */
        struct buf b = BUF_INIT;
        const char *s = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
        smtp_header_clean(s, strlen(s), 5, &b);
        ck_assert_str_eq(buf_str(&b), "\xc3\xa9\xc3\xa9...");
        buf_reset(&b);
        smtp_header_clean(s, strlen(s), 8, &b);
        ck_assert_str_eq(buf_str(&b), s);
        buf_free(&b);
    }
}
END_TEST

/* The subject builder: what the title of an alert mail says, and how a long one is cut. */
static const char *
subject_of(const char *sev, const char *host, const char *text, bool resolved, size_t more,
           struct buf *out)
{
    struct smtp_subject sj;

    memset(&sj, 0, sizeof(sj));
    sj.severity = sev;
    sj.host = host;
    sj.host_len = host ? strlen(host) : 0;
    sj.text = text;
    sj.text_len = strlen(text);
    sj.resolved = resolved;
    sj.more = more;
    buf_reset(out);
    smtp_subject(&sj, out);
    return buf_str(out);
}

/* Characters (UTF-8 code points) of s. */
static size_t
chars_of(const char *s)
{
    size_t n = 0;

    for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

START_TEST(test_subject)
{
    struct buf out = BUF_INIT, words = BUF_INIT;
    const char *s;
    size_t i;

    ck_assert_str_eq(
        subject_of("critical", "web1", "Read-only file system on /var", false, 0, &out),
        "[CRITICAL] web1: Read-only file system on /var");
    ck_assert_str_eq(subject_of("warning", "web1", "disk 80% full", false, 3, &out),
                     "[WARNING] web1: disk 80% full (+3 more)");
    /* a resolution says so first, and its severity no longer matters */
    ck_assert_str_eq(subject_of("critical", "web1", "Read-only file system", true, 0, &out),
                     "[RESOLVED] web1: Read-only file system");
    /* no severity: the default; no host: no "HOST: " */
    ck_assert_str_eq(subject_of("", "", "disk full", false, 0, &out), "[WARNING] disk full");
    ck_assert_str_eq(subject_of("major", "web1", "", false, 0, &out), "[MAJOR] web1");
    /* a template's text stands alone, a resolution still says so */
    ck_assert_str_eq(subject_of(NULL, NULL, "web1 is on fire", false, 1, &out),
                     "web1 is on fire (+1 more)");
    ck_assert_str_eq(subject_of(NULL, NULL, "web1 is on fire", true, 0, &out),
                     "[RESOLVED] web1 is on fire");
    ck_assert_str_eq(subject_of(NULL, NULL, "", false, 0, &out), "[corral] alert");
    /* line breaks anywhere never start a header line of their own */
    ck_assert_str_eq(subject_of("info\r\nBcc: a@b.example", "web1\r\nCc: c@d.example",
                                "x\nTo: e@f.example", false, 0, &out),
                     "[INFO  BCC: A@B.EXAMPLE] web1  Cc: c@d.example: x To: e@f.example");
    /* a long summary is cut at a word boundary, with an ellipsis */
    for (i = 0; words.len < 300; i++) buf_printf(&words, "word%zu ", i);
    s = subject_of("critical", "web1", buf_str(&words), false, 2, &out);
    ck_assert_uint_eq(chars_of(s), strlen(s) - 2); /* "…" is 3 bytes, 1 character */
    ck_assert_uint_le(chars_of(s), SMTP_SUBJECT_MAX + strlen(" (+2 more)"));
    ck_assert_msg(strstr(s, "\xe2\x80\xa6 (+2 more)"), "%s", s);
    {
        /* what comes before the ellipsis ends with a whole word of the summary */
        size_t keep = (size_t)(strstr(s, "\xe2\x80\xa6") - s);
        const char *last = s + keep;
        while (last > s && last[-1] != ' ') last--;
        ck_assert_msg(strncmp(last, "word", 4) == 0, "%s", s);
        buf_reset(&out);
        buf_append(&out, last, keep - (size_t)(last - s));
        buf_putc(&out, ' ');
        ck_assert_msg(strstr(buf_str(&words), buf_str(&out)), "cut mid-word: %s", s);
    }
    /* exactly SMTP_SUBJECT_MAX characters: not cut */
    buf_reset(&words);
    while (words.len < SMTP_SUBJECT_MAX - strlen("[INFO] h: ")) buf_putc(&words, 'a');
    s = subject_of("info", "h", buf_str(&words), false, 0, &out);
    ck_assert_uint_eq(chars_of(s), SMTP_SUBJECT_MAX);
    ck_assert(!strstr(s, "\xe2\x80\xa6"));
    buf_free(&out);
    buf_free(&words);
}
END_TEST

START_TEST(test_header_text)
{
    static const char *const cases[] = {
        "[corral] disk full on web1",
        "[corral] a fairly long subject line that has to be folded somewhere because it is far "
        "longer than seventy-eight characters",
        "double  spaces   kept",
        "looks like =?UTF-8?B?ZXZpbA==?= an encoded word",
        "Temperatur \xc3\xbc"
        "ber 45 \xc2\xb0"
        "C \xe2\x80\x94 \xf0\x9f\x94\xa5 im Serverraum, "
        "und noch mehr Text, damit es mehrere encoded-words braucht: \xc3\xa4\xc3\xb6\xc3\xbc",
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe4\xbb\xb6\xe5\x90\x8d\xe3\x81\xa7"
        "\xe3\x81\x99\xe3\x80\x82\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe4\xbb\xb6"
        "\xe5\x90\x8d\xe3\x81\xa7\xe3\x81\x99\xe3\x80\x82",
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct buf h = BUF_INIT, back = BUF_INIT;
        const char *p;
        smtp_header_text(&h, "Subject", cases[i], strlen(cases[i]));
        /* every line of it at most 78 + the longest word; each decoded word whole UTF-8 */
        for (p = buf_str(&h); *p;) {
            const char *e = strstr(p, "\r\n");
            ck_assert_ptr_nonnull(e);
            ck_assert_msg(e - p <= 85, "line of %d: %s", (int)(e - p), buf_str(&h));
            p = e + 2;
        }
        decode_header_value("Subject", buf_str(&h), &back);
        ck_assert_msg(strcmp(buf_str(&back), cases[i]) == 0, "case %zu: %s -> %s", i, buf_str(&h),
                      buf_str(&back));
        if (i == 3 || i == 4) ck_assert(strstr(buf_str(&h), "Subject: =?UTF-8?B?"));
        if (i < 3) ck_assert(!strstr(buf_str(&h), "=?"));
        buf_free(&h);
        buf_free(&back);
    }
}
END_TEST

START_TEST(test_header_mailbox)
{
    struct buf h = BUF_INIT, back = BUF_INIT;
    char *to[] = {"a@example.com", "bb@example.com",
                  "a-much-longer-address-for-folding@example.com",
                  "another.long.one@subdomain.example.com"};

    smtp_header_mailbox(&h, "From", "Corral \"the\" daemon", "c@example.com");
    ck_assert_str_eq(buf_str(&h), "From: \"Corral \\\"the\\\" daemon\" <c@example.com>\r\n");
    buf_reset(&h);
    smtp_header_mailbox(&h, "From", NULL, "c@example.com");
    ck_assert_str_eq(buf_str(&h), "From: c@example.com\r\n");
    buf_reset(&h);
    smtp_header_mailbox(&h, "From", "K\xc3\xb6nig", "c@example.com");
    ck_assert_str_eq(buf_str(&h), "From: =?UTF-8?B?S8O2bmln?= <c@example.com>\r\n");
    buf_reset(&h);
    smtp_header_addrs(&h, "To", to, 4);
    decode_header_value("To", buf_str(&h), &back);
    ck_assert_str_eq(buf_str(&back), "a@example.com, bb@example.com,"
                                     " a-much-longer-address-for-folding@example.com,"
                                     " another.long.one@subdomain.example.com");
    ck_assert(strstr(buf_str(&h), ",\r\n "));
    buf_free(&h);
    buf_free(&back);
}
END_TEST

START_TEST(test_body_clean)
{
    struct buf b = BUF_INIT;
    const char in[] = "a\r\nb\rc\nd\te\0f\x1b[0mg\x7fh\xc2\x85i\xff"
                      "caf\xc3\xa9";

    smtp_body_clean(in, sizeof(in) - 1, &b);
    ck_assert_str_eq(buf_str(&b), "a\nb\nc\nd\te\xef\xbf\xbd"
                                  "f\xef\xbf\xbd[0mg\xef\xbf\xbdh"
                                  "\xef\xbf\xbdi\xef\xbf\xbd"
                                  "caf\xc3\xa9");
    buf_free(&b);
}
END_TEST

START_TEST(test_body_encode)
{
    struct buf big = BUF_INIT, clean = BUF_INIT;
    size_t i;

    roundtrip_body("hello\nworld\n", 12, "7bit");
    roundtrip_body("no final newline", 16, "7bit");
    roundtrip_body("", 0, "7bit");
    roundtrip_body("\n\n\n", 3, "7bit");
    /* a dot at the start of a line could end DATA: the body goes quoted-printable, as =2E */
    roundtrip_body("a\n.\nb\n..x\n", 10, "quoted-printable");
    roundtrip_body(".", 1, "quoted-printable");
    roundtrip_body("From here\n", 10, "7bit");
    roundtrip_body("caf\xc3\xa9 \xf0\x9f\x94\xa5\n", 11, "quoted-printable");
    roundtrip_body("trailing blank \nand tab\t\n", 25, "7bit");
    roundtrip_body("x = y\n", 6, "7bit");
    roundtrip_body("\xc3\xa9 trailing blank \nequals = sign\n.dot after soft break\n", 54,
                   "quoted-printable");
    /* long lines: 998 is fine for 7bit, 999 is not */
    for (i = 0; i < 998; i++) buf_putc(&big, 'x');
    roundtrip_body(big.p, big.len, "7bit");
    buf_putc(&big, 'x');
    roundtrip_body(big.p, big.len, "quoted-printable");
    /* soft breaks falling just before a '.': each new line must not start with one */
    buf_reset(&big);
    for (i = 0; i < 2000; i++) buf_putc(&big, i % 3 ? '.' : 'a');
    roundtrip_body(big.p, big.len, "quoted-printable");
    /* 100 KB on one line, with some UTF-8 and blanks in it */
    buf_reset(&big);
    for (i = 0; big.len < 100 * 1024; i++) buf_puts(&big, i % 7 ? "abc def " : "\xc3\xbc=. ");
    roundtrip_body(big.p, big.len, "quoted-printable");
    /* anything at all, once clean */
    buf_reset(&big);
    srand(1);
    for (i = 0; i < 20000; i++) buf_putc(&big, (char)(rand() & 0xff));
    smtp_body_clean(big.p, big.len, &clean);
    roundtrip_body(clean.p, clean.len, NULL);
    buf_free(&big);
    buf_free(&clean);
}
END_TEST

START_TEST(test_date_and_id)
{
    struct buf b = BUF_INIT;
    char *seen[200];
    size_t i, j;

    setenv("TZ", "UTC", 1);
    tzset();
    smtp_format_date(0, &b);
    ck_assert_str_eq(buf_str(&b), "Thu, 01 Jan 1970 00:00:00 +0000");
    buf_reset(&b);
    smtp_format_date(1709251199, &b);
    ck_assert_str_eq(buf_str(&b), "Thu, 29 Feb 2024 23:59:59 +0000");
    setenv("TZ", "Asia/Kolkata", 1); /* +05:30, when the zone data is installed */
    tzset();
    buf_reset(&b);
    smtp_format_date(0, &b);
    ck_assert(strcmp(buf_str(&b), "Thu, 01 Jan 1970 05:30:00 +0530") == 0 ||
              strcmp(buf_str(&b), "Thu, 01 Jan 1970 00:00:00 +0000") == 0);
    setenv("TZ", "UTC", 1);
    tzset();
    for (i = 0; i < 200; i++) {
        buf_reset(&b);
        smtp_message_id("example.com", &b);
        ck_assert_msg(b.p[0] == '<' && strstr(b.p, "@example.com>") &&
                          strlen(strstr(b.p, "@example.com>")) == 13,
                      "%s", b.p);
        ck_assert(!strchr(b.p + 1, '<') && !strchr(b.p, ' '));
        seen[i] = strdup(b.p);
        for (j = 0; j < i; j++) ck_assert_str_ne(seen[i], seen[j]);
    }
    for (i = 0; i < 200; i++) free(seen[i]);
    buf_free(&b);
}
END_TEST

START_TEST(test_classify)
{
    ck_assert_int_eq(smtp_classify(0, 250), DELIVER_OK);
    ck_assert_int_eq(smtp_classify(55 /* CURLE_SEND_ERROR: RCPT failed */, 550), DELIVER_FAIL);
    ck_assert_int_eq(smtp_classify(55, 450), DELIVER_RETRY);
    ck_assert_int_eq(smtp_classify(8 /* CURLE_WEIRD_SERVER_REPLY */, 554), DELIVER_FAIL);
    ck_assert_int_eq(smtp_classify(8, 451), DELIVER_RETRY);
    ck_assert_int_eq(smtp_classify(7 /* CURLE_COULDNT_CONNECT */, 0), DELIVER_RETRY);
    ck_assert_int_eq(smtp_classify(28 /* CURLE_OPERATION_TIMEDOUT */, 220), DELIVER_RETRY);
    ck_assert_int_eq(smtp_classify(64 /* CURLE_USE_SSL_FAILED */, 554), DELIVER_RETRY);
    ck_assert_int_eq(smtp_classify(35 /* CURLE_SSL_CONNECT_ERROR */, 220), DELIVER_RETRY);
    ck_assert_int_eq(smtp_classify(60 /* CURLE_PEER_FAILED_VERIFICATION */, 220), DELIVER_RETRY);
    ck_assert_int_eq(smtp_classify(67 /* CURLE_LOGIN_DENIED */, 535), DELIVER_RETRY);
}
END_TEST

START_TEST(test_render)
{
    uv_loop_t *loop = new_loop();
    const char *const kv[] = {"url",
                              "smtp://mail.example.com:587",
                              "from",
                              "Corral <corral@example.com>",
                              "to",
                              "ops@example.com, oncall@example.com",
                              "user",
                              "corral",
                              "password-env",
                              "CORRAL_TEST_SECRET",
                              NULL};
    struct msg *m = alert_msg("web1", "disk full\r\nBcc: evil@evil.example\r\n.\r\nQUIT");
    struct alert a = {0, "r-disk/web1/", "critical", m, 0};
    struct buf out = BUF_INIT;
    void *x;
    const char *s, *p;

    setenv("CORRAL_TEST_SECRET", "hunter2-very-secret", 1);
    x = open_ok(loop, kv, NULL);
    smtp_executor.render(x, &a, &out);
    s = buf_str(&out);
    ck_assert_msg(strstr(s, "# smtp executor admins: smtp://mail.example.com:587, STARTTLS "
                            "required, AUTH as corral\n"),
                  "%s", s);
    ck_assert(strstr(s, "\nMAIL FROM:<corral@example.com>\nRCPT TO:<ops@example.com>\n"
                        "RCPT TO:<oncall@example.com>\nDATA\n"));
    ck_assert(strstr(s, "\nFrom: \"Corral\" <corral@example.com>\n"));
    ck_assert(strstr(s, "\nTo: ops@example.com, oncall@example.com\n"));
    ck_assert_msg(
        strstr(s, "\nSubject: [CRITICAL] web1: disk full  Bcc: evil@evil.example  .  QUIT\n"), "%s",
        s);
    ck_assert(strstr(s, "\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
                        "Content-Transfer-Encoding: quoted-printable\n"));
    ck_assert(strstr(s, "\nX-Corral-Alert-Id: r-disk/web1/\nX-Corral-Severity: critical\n"));
    ck_assert(strstr(s, "\nDate: ") && strstr(s, "\nMessage-ID: <") &&
              strstr(s, "@example.com>\n"));
    ck_assert(strstr(s, "\n=2E\n")); /* the lone dot of MESSAGE, encoded */
    ck_assert(strstr(s, "HOST: web1\n") && strstr(s, "Severity: critical\n"));
    ck_assert(!strstr(s, "hunter2"));
    ck_assert(!strchr(s, '\r'));
    /* no header line but ours: nothing injected (the body may say what it likes) */
    for (p = strstr(s, "\nDATA\n"); (p = strchr(p, '\n')) && p[1] != '\n'; p++)
        ck_assert(strncmp(p + 1, "Bcc:", 4) != 0);
    ck_assert(strlen(s) > 2 && strcmp(s + strlen(s) - 3, "\n.\n") == 0);
    buf_free(&out);
    msg_unref(m);
    close_x(loop, x);
    free(loop);
}
END_TEST

/*
 * The silence command of a mail, run by /bin/sh: every word reaches corral
 * as meant, however the values are quoted (printf stands for corral).
 */
START_TEST(test_silence_command)
{
    uv_loop_t *loop = new_loop();
    const char *const kv[] = {"url",  "smtp://mail.example.com", "tls", "none",
                              "from", "corral@example.com",      "to",  "ops@example.com",
                              NULL};
    struct msg *m = alert_msg("we'b \"1\", $(x) `y` \\z!", "disk full");
    struct alert a = {0, "r-disk/web1", "major", m, 0};
    struct buf out = BUF_INIT, cmd = BUF_INIT, got = BUF_INIT;
    const char *s, *line, *end;
    char chunk[512];
    size_t n;
    FILE *f;
    void *x;

    set(m, "corral.alert_id", "r-disk/web1");
    set(m, "corral.summary", "can't write \"data\" to $HOME");
    x = open_ok(loop, kv, NULL);
    smtp_executor.render(x, &a, &out);
    s = buf_str(&out);
    ck_assert_msg((line = strstr(s, "\n  corral silence add ")), "%s", s);
    line += strlen("\n  corral silence add ");
    end = strchr(line, '\n');
    buf_puts(&cmd, "printf '%s\\n' ");
    buf_append(&cmd, line, (size_t)(end - line));
    ck_assert((f = popen(buf_str(&cmd), "r")));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(&got, chunk, n);
    ck_assert_int_eq(pclose(f), 0);
    ck_assert_msg(strcmp(buf_str(&got), "HOST=\"we'b \\\"1\\\", $(x) `y` \\\\z!\"\n"
                                        "corral.alert_id=r-disk/web1\n"
                                        "--duration\n2h\n--comment\n"
                                        "can't write \"data\" to $HOME\n") == 0,
                  "%s\n->\n%s", buf_str(&cmd), buf_str(&got));
    {
        /* and the matcher means the value itself */
        struct buf err = BUF_INIT;
        char *first = strndup(buf_str(&got), (size_t)(strchr(buf_str(&got), '\n') - got.p));
        struct labelmatch *lm = labelmatch_parse(first, &err);
        const char *name, *value;
        enum labelmatch_op op;
        ck_assert_msg(lm, "%s", buf_str(&err));
        ck_assert_uint_eq(labelmatch_count(lm), 1);
        labelmatch_at(lm, 0, &name, &op, &value);
        ck_assert_str_eq(name, "HOST");
        ck_assert_int_eq(op, LABELMATCH_EQ);
        ck_assert_str_eq(value, "we'b \"1\", $(x) `y` \\z!");
        ck_assert(labelmatch_match(lm, m));
        labelmatch_free(lm);
        free(first);
        buf_free(&err);
    }
    /* a resolution has nothing to silence */
    msg_tag_set(m, tag_intern("corral.clear", 12));
    buf_reset(&out);
    smtp_executor.render(x, &a, &out);
    ck_assert(!strstr(buf_str(&out), "corral silence add"));
    /* without corral.alert_id, HOST alone would silence the whole host: no command */
    msg_unref(m);
    a.msg = m = alert_msg("web1", "disk full");
    buf_reset(&out);
    smtp_executor.render(x, &a, &out);
    ck_assert(!strstr(buf_str(&out), "corral silence add"));
    buf_free(&out);
    buf_free(&cmd);
    buf_free(&got);
    msg_unref(m);
    close_x(loop, x);
    free(loop);
}
END_TEST

START_TEST(test_render_group_and_body)
{
    uv_loop_t *loop = new_loop();
    const char *const kv[] = {"url",
                              "smtps://mail.example.com",
                              "from",
                              "corral@example.com",
                              "to",
                              "ops@example.com",
                              "group-by",
                              "HOST, .classifier.rule_id",
                              "group-wait",
                              "10s",
                              "group-interval",
                              "2m",
                              "repeat-interval",
                              "4h",
                              "subject",
                              "$(uppercase $HOST): ${MESSAGE}",
                              NULL};
    struct msg *m = alert_msg("web1", "disk full");
    struct alert a = {0, "id-1", "warning", m, 0};
    struct buf out = BUF_INIT;
    void *x;
    const char *s;

    x = open_ok(loop, kv, "\n      Host $HOST says:\n\n        $MESSAGE\n      -- corral\n    ");
    ck_assert_uint_eq(smtp_executor.max_inflight(x), 1000);
    smtp_executor.render(x, &a, &out);
    s = buf_str(&out);
    ck_assert_msg(
        strstr(s,
               "# smtp executor admins: smtps://mail.example.com, TLS from the start, no AUTH\n"),
        "%s", s);
    ck_assert_msg(strstr(s, "# group: HOST=web1, .classifier.rule_id=r-disk; a new group waits 10s "
                            "for more alerts, then mails at most every 2m\n"),
                  "%s", s);
    ck_assert(strstr(s, "# repeat-interval: an identical alert is mailed at most once per 4h\n"));
    /* the body template, dedented: blank first and last lines gone, common indent gone */
    ck_assert_msg(strstr(s, "Content-Transfer-Encoding: 7bit\n") &&
                      strstr(s, "\n\nHost web1 says:\n\n  disk full\n-- corral\n.\n"),
                  "%s", s);
    buf_free(&out);
    msg_unref(m);
    close_x(loop, x);
    free(loop);
}
END_TEST

START_TEST(test_close_unused)
{
    uv_loop_t *loop = new_loop();
    void *x = open_ok(loop, BASE, NULL);

    /* nothing was ever sent: no thread, no handle; close is immediate */
    closed = false;
    smtp_executor.close(x, on_closed, NULL);
    ck_assert(closed);
    ck_assert_int_eq(uv_loop_close(loop), 0);
    free(loop);
}
END_TEST

/* ==== tests with a server ==== */

/* The options every plain-text test uses: URL, no TLS, sender, one recipient. */
static const char *const *
plain_kv(int port, const char *const *more)
{
    static const char *kv[64];
    size_t n = 0, i;

    kv[n++] = "url";
    kv[n++] = url_of("smtp", "127.0.0.1", port);
    kv[n++] = "tls";
    kv[n++] = "none";
    kv[n++] = "from";
    kv[n++] = "Corral Alerts <corral@example.com>";
    kv[n++] = "to";
    kv[n++] = "ops@example.com";
    kv[n++] = "timeout";
    kv[n++] = "10s";
    for (i = 0; more && more[i]; i++) {
        /* a later value for the same name wins */
        size_t j;
        for (j = 0; j < n; j += 2)
            if (strcmp(kv[j], more[i]) == 0) break;
        if (j < n && i % 2 == 0) {
            kv[j + 1] = more[i + 1];
            i++;
            continue;
        }
        kv[n++] = more[i];
    }
    kv[n] = NULL;
    return kv;
}

/* Sends one alert to the server with extra settings; returns its outcome. */
static struct outcome
send_one(int port, const char *const *more, const char *body, struct msg *m)
{
    uv_loop_t *loop = new_loop();
    void *x = open_ok(loop, plain_kv(port, more), body);
    struct outcome o;

    memset(&o, 0, sizeof(o));
    deliver(x, m, "r-disk/web1/", &o);
    ul_run_until(loop, ndone_reached, &(int){1}, 30);
    ck_assert_msg(o.n == 1, "done called %d times", o.n);
    close_x(loop, x);
    free(loop);
    return o;
}

/*
 * Starts `python3 -m aiosmtpd` on 127.0.0.1 and returns its pid, *port its
 * port.  aiosmtpd can neither take a socket nor report the port it bound:
 * a port the kernel chose a moment ago is handed over, and when something
 * took it meanwhile aiosmtpd exits and another port is tried, so the race
 * costs a retry, not a failed test.  Ready once it answers with its banner.
 */
static pid_t
aiosmtpd_start(int *port)
{
    int try;

    for (try = 0; try < 20; try++) {
        char listen[64];
        int held = ul_reserve_port(SOCK_STREAM, port);
        double end;
        pid_t pid;

        close(held);
        snprintf(listen, sizeof(listen), "127.0.0.1:%d", *port);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlives the test */
            dup2(fd, 1);
            dup2(fd, 2);
            execl(PYTHON, PYTHON, "-m", "aiosmtpd", "-n", "-l", listen, (char *)NULL);
            _exit(127);
        }
        /* a generous bound for a loaded machine; each round waits on a connect */
        end = ul_now() + 60;
        while (ul_now() < end) {
            struct sockaddr_in a;
            char banner[64] = "";
            struct timeval patience = {5, 0}; /* whatever else took the port may say nothing */
            int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
            memset(&a, 0, sizeof(a));
            a.sin_family = AF_INET;
            a.sin_port = htons((uint16_t)*port);
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
                 read(fd, banner, sizeof(banner) - 1) > 0;
            close(fd);
            if (ok && strncmp(banner, "220 ", 4) == 0) return pid;
            if (waitpid(pid, NULL, WNOHANG) == pid) break; /* it could not bind: next port */
            usleep(50000);
        }
        if (ul_now() >= end) {
            kill(pid, SIGTERM);
            waitpid(pid, NULL, 0);
            ck_abort_msg("aiosmtpd did not answer on port %d", *port);
        }
    }
    ck_abort_msg("aiosmtpd could not bind any of 20 ports");
    return -1;
}

START_TEST(test_stock_aiosmtpd)
{
    int port, st;
    pid_t pid;
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;

    pid = aiosmtpd_start(&port);
    o = send_one(port, NULL, NULL, m);
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    msg_unref(m);
}
END_TEST

START_TEST(test_plain_delivery)
{
    struct server s;
    struct msg *m = alert_msg("web1", "disk full on /var");
    const char *const more[] = {"to", "ops@example.com, oncall@example.net,third@example.org",
                                NULL};
    struct outcome o;

    server_start(&s, NULL);
    o = send_one(s.port, more, NULL, m);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    ck_assert_int_eq(count_msgs(&s), 1);
    {
        const char *const opts[] = {
            "--mail-from",
            "corral@example.com",
            "--rcpt",
            "ops@example.com",
            "--rcpt",
            "oncall@example.net",
            "--rcpt",
            "third@example.org",
            "--to",
            "ops@example.com",
            "--to",
            "oncall@example.net",
            "--to",
            "third@example.org",
            "--from-header",
            "Corral Alerts <corral@example.com>",
            "--subject",
            "[MAJOR] web1: disk full on /var",
            "--cte",
            "7bit",
            "--header",
            "X-Corral-Alert-Id=r-disk/web1/",
            "--header",
            "X-Corral-Severity=major",
            "--header",
            "Auto-Submitted=auto-generated",
            "--header",
            "X-Corral-Executor=admins",
            "--body-contains",
            "disk full on /var\n\nHost:     web1\nSeverity: major\n"
            "Since:    2024-01-01T00:00:00+00:00\nAlert:    r-disk/web1/\n",
            "--body-contains",
            "\n\nValues:\n  HOST: web1\n  PROGRAM: diskmon\n  .classifier.rule_id: r-disk\n",
            "--tls",
            "no",
            NULL};
        ck_assert(check_msg(&s, 1, opts));
    }
    ck_assert_int_eq(count_events(&s, "MAIL "), 1);
    ck_assert_int_eq(count_events(&s, "QUIT"), 1);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_utf8)
{
    struct server s;
    const char *text = "\xc3\x9c"
                       "berhitzung: 45 \xc2\xb0"
                       "C im Serverraum \xe2\x80\x94 "
                       "\xf0\x9f\x94\xa5 na\xc3\xafve caf\xc3\xa9";
    struct msg *m = alert_msg("h\xc3\xb6st", text);
    struct outcome o;
    char subject[256], line[256];

    server_start(&s, NULL);
    o = send_one(s.port, NULL, NULL, m);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    snprintf(subject, sizeof(subject), "[MAJOR] h\xc3\xb6st: %s", text);
    snprintf(line, sizeof(line), "%s\n", text);
    {
        const char *const opts[] = {"--subject",
                                    subject,
                                    "--cte",
                                    "quoted-printable",
                                    "--body-contains",
                                    line,
                                    "--body-contains",
                                    "HOST: h\xc3\xb6st\n",
                                    NULL};
        ck_assert(check_msg(&s, 1, opts));
    }
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_injection)
{
    struct server s;
    const char *evil = "disk full\r\nBcc: evil@evil.example\r\nX-Injected: yes\r\n\r\n.\r\n"
                       "MAIL FROM:<evil@evil.example>\r\nRCPT TO:<evil@evil.example>\r\nDATA\r\n"
                       "Subject: smuggled\r\n\r\nsmuggled body\r\n.\r\nQUIT\r\n";
    struct msg *m = alert_msg("web1", evil);
    const char *const more[] = {"subject", "[corral] ${sep} ${lf} $MESSAGE", NULL};
    struct outcome o;

    /* other line breaks: bare LF and lone dot, U+2028, U+2029, NEL, and a bare CR */
    set(m, "lf", "a\n.\nRCPT TO:<evil2@evil.example>\n");
    set(m, "sep",
        "line\xe2\x80\xa8"
        "Bcc: u2028@evil.example\xc2\x85"
        "Bcc: nel@evil.example\xe2\x80\xa9"
        "To: u2029@evil.example\rCc: cr@evil.example");
    server_start(&s, NULL);
    o = send_one(s.port, more, NULL, m);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    ck_assert_int_eq(count_msgs(&s), 1); /* nothing smuggled in as a second message */
    ck_assert_int_eq(count_events(&s, "MAIL "), 1);
    ck_assert_int_eq(count_events(&s, "RCPT "), 1);
    {
        const char *const opts[] = {
            "--rcpt", "ops@example.com", "--to", "ops@example.com", "--no-header", "Bcc",
            "--no-header", "Cc", "--no-header", "X-Injected", "--subject-contains",
            "[corral] line Bcc: u2028@evil.example Bcc: nel@evil.example To: u2029@evil.example "
            "Cc: cr@evil.example a . RCPT",
            /* the body keeps the text, line breaks and the lone dot included */
            "--body-contains",
            "disk full\nBcc: evil@evil.example\nX-Injected: yes\n\n.\n"
            "MAIL FROM:<evil@evil.example>\n",
            "--body-contains", "\nsmuggled body\n.\nQUIT\n", "--body-contains",
            "  lf: a\n      .\n      RCPT TO:<evil2@evil.example>\n", NULL};
        ck_assert(check_msg(&s, 1, opts));
    }
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_big_value)
{
    struct server s;
    struct buf big = BUF_INIT, want = BUF_INIT, subj = BUF_INIT;
    struct msg *m;
    struct outcome o;
    size_t i;

    for (i = 0; big.len < 100 * 1024; i++)
        buf_puts(&big, i % 50 != 49 ? "0123456789abcdef" : "\xc3\xbc");
    m = alert_msg("web1", big.p);
    set(m, "big", big.p);
    buf_printf(&want, "\n  big: %s\n", big.p);
    /* one word longer than the subject: cut between characters, with an ellipsis */
    buf_puts(&subj, "[MAJOR] web1: ");
    buf_append(&subj, big.p, SMTP_SUBJECT_MAX - 1 - strlen("[MAJOR] web1: "));
    buf_puts(&subj, "\xe2\x80\xa6");
    server_start(&s, NULL);
    o = send_one(s.port, NULL, NULL, m);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    {
        const char *const opts[] = {"--subject",        subj.p, "--body-contains", want.p, "--cte",
                                    "quoted-printable", NULL};
        ck_assert(check_msg(&s, 1, opts));
    }
    server_stop(&s);
    msg_unref(m);
    buf_free(&big);
    buf_free(&want);
    buf_free(&subj);
}
END_TEST

START_TEST(test_custom_body)
{
    struct server s;
    struct msg *m = alert_msg("web1", "disk full");
    const char *const more[] = {"subject", "$HOST: $MESSAGE", NULL};
    struct outcome o;

    server_start(&s, NULL);
    o = send_one(s.port, more,
                 "\n    Host:   $HOST\n    Rule:   ${.classifier.rule_id}\n\n"
                 "    .leading dot\n    ",
                 m);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    {
        const char *const opts[] = {"--subject",
                                    "web1: disk full",
                                    "--body-contains",
                                    "Host:   web1\nRule:   r-disk\n\n.leading dot\n",
                                    "--body-not-contains",
                                    "Alert:",
                                    NULL};
        ck_assert(check_msg(&s, 1, opts));
    }
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_reject_550)
{
    struct server s;
    const char *const sopts[] = {"--reject-rcpt", "gone@example.com", NULL};
    const char *const more[] = {"to", "ops@example.com, gone@example.com", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;

    server_start(&s, sopts);
    o = send_one(s.port, more, NULL, m);
    ck_assert_int_eq(o.r, DELIVER_FAIL);
    ck_assert_msg(strstr(o.reason, "550 5.1.1 <gone@example.com>: Recipient address rejected: "
                                   "User unknown"),
                  "%s", o.reason);
    ck_assert_int_eq(count_msgs(&s), 0);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_tempfail_450)
{
    struct server s;
    const char *const sopts[] = {"--tempfail-rcpt", "ops@example.com", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;

    server_start(&s, sopts);
    o = send_one(s.port, NULL, NULL, m);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ck_assert_msg(strstr(o.reason, "450 4.2.0"), "%s", o.reason);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_data_replies)
{
    static const struct {
        const char *reply;
        enum deliver_result want;
    } cases[] = {
        {"554 5.7.1 Message rejected as spam", DELIVER_FAIL},
        {"451 4.3.0 Try again later", DELIVER_RETRY},
        {"552 5.3.4 Message too big", DELIVER_FAIL},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct server s;
        const char *const sopts[] = {"--data-reply", cases[i].reply, NULL};
        struct msg *m = alert_msg("web1", "disk full");
        struct outcome o;

        server_start(&s, sopts);
        o = send_one(s.port, NULL, NULL, m);
        ck_assert_msg(o.r == cases[i].want, "%s: %d %s", cases[i].reply, o.r, o.reason);
        ck_assert_msg(strstr(o.reason, cases[i].reply), "%s", o.reason);
        server_stop(&s);
        msg_unref(m);
    }
}
END_TEST

START_TEST(test_server_down)
{
    struct msg *m = alert_msg("web1", "disk full");
    int port, fd = ul_reserve_port(SOCK_STREAM, &port); /* bound, not listening */
    struct outcome o = send_one(port, NULL, NULL, m);

    close(fd);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ck_assert_msg(strstr(o.reason, "onnect"), "%s", o.reason);
    msg_unref(m);
}
END_TEST

START_TEST(test_timeout)
{
    struct server s;
    const char *const sopts[] = {"--hang", NULL};
    const char *const more[] = {"timeout", "1s", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    uv_loop_t *loop = new_loop();
    void *x;
    struct outcome o;

    server_start(&s, sopts);
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    memset(&o, 0, sizeof(o));
    deliver(x, m, "id", &o);
    /* waited for less than the default timeout (30 s): only the one set ends it in time */
    ul_run_until(loop, ndone_reached, &(int){1}, 20);
    ck_assert_msg(o.n == 1, "no outcome before the default timeout");
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ck_assert_msg(strstr(o.reason, "imed out") || strstr(o.reason, "timeout"), "%s", o.reason);
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

/*
 * A server slow to answer QUIT (or the end of DATA) must not stall corrald's
 * loop.  The server holds its answer to QUIT until a file exists, and only
 * a timer of the loop under test makes it, after it has turned a few times
 * with QUIT outstanding: a loop that waited for the answer would never
 * make it, and the mail would end in the executor's timeout instead.
 */
static struct server *tick_server;
static char tick_release[2400];
static int tick_turns;

static void
on_tick(uv_timer_t *t)
{
    (void)t;
    if (tick_turns < 5 && count_events(tick_server, "QUIT") > 0 && ++tick_turns == 5)
        ul_write_file(tick_release, "");
}

START_TEST(test_loop_not_blocked)
{
    struct server s;
    const char *sopts[] = {"--quit-hold", tick_release, NULL};
    const char *const more[] = {"timeout", "60s", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    uv_loop_t *loop = new_loop();
    uv_timer_t tick;
    void *x;
    struct outcome o;

    snprintf(tick_release, sizeof(tick_release), "%s/quit.release", workdir);
    unlink(tick_release);
    server_start(&s, sopts);
    tick_server = &s;
    tick_turns = 0;
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    uv_timer_init(loop, &tick);
    uv_timer_start(&tick, on_tick, 20, 20);
    memset(&o, 0, sizeof(o));
    deliver(x, m, "id", &o);
    ul_run_until(loop, ndone_reached, &(int){1}, 30);
    uv_close((uv_handle_t *)&tick, NULL);
    ck_assert_msg(tick_turns == 5, "the loop turned %d times while QUIT was unanswered",
                  tick_turns);
    ck_assert_msg(o.n == 1 && o.r == DELIVER_OK, "%d %d %s", o.n, o.r, o.reason);
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_connections_bound)
{
    struct server s;
    const char *const sopts[] = {"--quit-delay", "0.3", NULL};
    const char *const more[] = {"connections", "2", NULL};
    uv_loop_t *loop = new_loop();
    struct outcome o[6];
    struct msg *m[6];
    void *x;
    int i;
    char text[32];

    server_start(&s, sopts);
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    ck_assert_uint_eq(smtp_executor.max_inflight(x), 2);
    memset(o, 0, sizeof(o));
    for (i = 0; i < 6; i++) {
        snprintf(text, sizeof(text), "alert %d", i);
        m[i] = alert_msg("web1", text);
        deliver(x, m[i], "id", &o[i]);
    }
    ul_run_until(loop, ndone_reached, &(int){6}, 30);
    for (i = 0; i < 6; i++)
        ck_assert_msg(o[i].n == 1 && o[i].r == DELIVER_OK, "%d: %s", i, o[i].reason);
    ck_assert_int_eq(count_msgs(&s), 6);
    ck_assert_int_eq(count_events(&s, "ACTIVE 1"), 6 - count_events(&s, "ACTIVE 2"));
    ck_assert_int_eq(count_events(&s, "ACTIVE 3"), 0);
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    for (i = 0; i < 6; i++) msg_unref(m[i]);
}
END_TEST

/* For ul_run_until: true once the server at arg has had a connection. */
static bool
connected(void *arg)
{
    return count_events(arg, "CONNECT") > 0;
}

static void
on_poll(uv_timer_t *t)
{
    (void)t; /* only wakes the loop, so that a condition outside it is looked at */
}

/* ul_run_until for a condition the loop is not woken by (the server's events file). */
static bool
run_until_polled(uv_loop_t *loop, bool (*done)(void *arg), void *arg, double seconds)
{
    uv_timer_t poll;
    bool ok;

    uv_timer_init(loop, &poll);
    uv_timer_start(&poll, on_poll, 10, 10);
    ok = ul_run_until(loop, done, arg, seconds);
    uv_close((uv_handle_t *)&poll, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    return ok;
}

START_TEST(test_close_inflight)
{
    struct server s;
    const char *const sopts[] = {"--hang", NULL};
    /* long enough that the first session is still under way when close comes */
    const char *const more[] = {"timeout", "5s", "connections", "1", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    uv_loop_t *loop = new_loop();
    struct outcome o[3];
    void *x;
    int i;

    server_start(&s, sopts);
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    memset(o, 0, sizeof(o));
    for (i = 0; i < 3; i++) deliver(x, m, "id", &o[i]);
    /* the first session under way: the server has its connection (and never answers) */
    ck_assert(run_until_polled(loop, connected, &s, 20));
    close_x(loop, x);
    /* the session under way ran into its timeout and said so; the waiting ones were dropped */
    ck_assert_msg(o[0].n == 1 && o[0].r == DELIVER_RETRY, "%d %d %s", o[0].n, o[0].r, o[0].reason);
    ck_assert_msg(o[1].n == 0 && o[2].n == 0, "%d %s / %d %s (first: %s at %llu ms)", o[1].n,
                  o[1].reason, o[2].n, o[2].reason, o[0].reason, (unsigned long long)o[0].at);
    free(loop);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

/* ---- TLS ---- */

START_TEST(test_starttls_auth)
{
    struct server s;
    const char *const sopts[] = {
        "--cert", cert, "--key", key, "--require-starttls", "--auth", "corral:s3cret pass", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;
    const char *more[16];

    server_start(&s, sopts);
    more[0] = "url";
    more[1] = url_of("smtp", "localhost", s.port);
    more[2] = "tls";
    more[3] = "required";
    more[4] = "ca-file";
    more[5] = cert;
    more[6] = "user";
    more[7] = "corral";
    more[8] = "password-file";
    more[9] = pwfile;
    more[10] = NULL;
    o = send_one(s.port, more, NULL, m);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    {
        const char *const opts[] = {
            "--tls", "yes", "--auth", "corral", "--subject", "[MAJOR] web1: disk full", NULL};
        ck_assert(check_msg(&s, 1, opts));
    }
    ck_assert_int_eq(count_events(&s, "STARTTLS"), 1);
    ck_assert_int_eq(count_events(&s, "AUTH PLAIN tls=0") + count_events(&s, "AUTH LOGIN tls=0"),
                     0);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_starttls_missing)
{
    struct server s;
    /* no STARTTLS, but AUTH offered in the clear: a client must not take the bait */
    const char *const sopts[] = {"--auth", "corral:s3cret pass", "--auth-plaintext", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;
    const char *more[8];
    char *ev;

    server_start(&s, sopts);
    more[0] = "tls";
    more[1] = "required";
    more[2] = "user";
    more[3] = "corral";
    more[4] = "password-file";
    more[5] = pwfile;
    more[6] = NULL;
    o = send_one(s.port, more, NULL, m);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ev = events(&s);
    ck_assert_msg(strstr(ev, "EHLO"), "%s", ev);
    ck_assert_msg(!strstr(ev, "AUTH") && !strstr(ev, "MAIL"), "%s", ev);
    free(ev);
    ck_assert_int_eq(count_msgs(&s), 0);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_default_is_starttls)
{
    struct server s;
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;
    uv_loop_t *loop = new_loop();
    const char *kv[] = {"url",     NULL, "from", "corral@example.com", "to", "ops@example.com",
                        "timeout", "5s", NULL};
    void *x;

    server_start(&s, NULL);
    kv[1] = url_of("smtp", "127.0.0.1", s.port);
    x = open_ok(loop, kv, NULL); /* no tls=: STARTTLS required */
    memset(&o, 0, sizeof(o));
    deliver(x, m, "id", &o);
    ul_run_until(loop, ndone_reached, &(int){1}, 15);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ck_assert_int_eq(count_msgs(&s), 0);
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_smtps)
{
    struct server s;
    const char *const sopts[] = {"--cert", cert, "--key", key, "--implicit-tls", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;
    const char *more[8];

    server_start(&s, sopts);
    more[0] = "url";
    more[1] = url_of("smtps", "localhost", s.port);
    more[2] = "tls";
    more[3] = "required";
    more[4] = "ca-file";
    more[5] = cert;
    more[6] = NULL;
    o = send_one(s.port, more, NULL, m);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    ck_assert(check_msg(&s, 1, (const char *const[]){"--tls", "yes", NULL}));
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_tls_verify)
{
    struct server s;
    const char *const sopts[] = {"--cert", cert, "--key", key, "--require-starttls", NULL};
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;
    const char *more[8];

    server_start(&s, sopts);
    /* the self-signed certificate is not trusted without ca-file */
    more[0] = "url";
    more[1] = url_of("smtp", "localhost", s.port);
    more[2] = "tls";
    more[3] = "required";
    more[4] = NULL;
    o = send_one(s.port, more, NULL, m);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    ck_assert_msg(strstr(o.reason, "certificate") || strstr(o.reason, "SSL"), "%s", o.reason);
    ck_assert_int_eq(count_events(&s, "MAIL"), 0);
    ck_assert_int_eq(count_msgs(&s), 0);
    /* tls-verify="no" takes it anyway */
    more[1] = url_of("smtp", "localhost", s.port);
    more[4] = "tls-verify";
    more[5] = "no";
    more[6] = NULL;
    o = send_one(s.port, more, NULL, m);
    ck_assert_msg(o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    server_stop(&s);
    msg_unref(m);
}
END_TEST

START_TEST(test_auth_denied)
{
    struct server s;
    const char *const sopts[] = {
        "--cert", cert, "--key", key, "--require-starttls", "--auth", "corral:other password",
        NULL};
    struct msg *m = alert_msg("web1", "disk full");
    struct outcome o;
    const char *more[12];

    server_start(&s, sopts);
    more[0] = "url";
    more[1] = url_of("smtp", "localhost", s.port);
    more[2] = "ca-file";
    more[3] = cert;
    more[4] = "user";
    more[5] = "corral";
    more[6] = "password-file";
    more[7] = pwfile;
    more[8] = "tls";
    more[9] = "required";
    more[10] = NULL;
    o = send_one(s.port, more, NULL, m);
    ck_assert_int_eq(o.r, DELIVER_RETRY); /* the credentials, not the alert, are wrong */
    ck_assert_msg(strstr(o.reason, "535"), "%s", o.reason);
    ck_assert(!strstr(o.reason, "s3cret"));
    server_stop(&s);
    msg_unref(m);
}
END_TEST

/* ---- grouping and repeats ---- */

/* A grouped mail is titled after its worst firing alert, not a resolution, whatever comes first. */
START_TEST(test_group_title)
{
    struct server s;
    const char *const more[] = {"group-by", "HOST", "group-wait", "300ms", NULL};
    const char *const sev[] = {"critical", "warning", "major"};
    uv_loop_t *loop;
    struct outcome o[3];
    struct msg *m[3];
    void *x;
    int i;
    char text[64];

    server_start(&s, NULL);
    loop = new_loop();
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    memset(o, 0, sizeof(o));
    for (i = 0; i < 3; i++) {
        struct alert a = {1, "id", sev[i], NULL, 0};
        snprintf(text, sizeof(text), "disk %d full", i + 1);
        a.msg = m[i] = alert_msg("web1", text);
        if (i == 0) msg_tag_set(m[i], tag_intern("corral.clear", 12)); /* the critical resolved */
        smtp_executor.deliver(x, &a, on_done, &o[i]);
    }
    ul_run_until(loop, ndone_reached, &(int){3}, 15);
    for (i = 0; i < 3; i++) ck_assert_msg(o[i].r == DELIVER_OK, "%d: %s", i, o[i].reason);
    {
        const char *const opts[] = {
            "--subject",
            "[MAJOR] web1: disk 3 full (+2 more)",
            "--header",
            "X-Corral-Severity=major",
            "--body-contains",
            "  [RESOLVED] web1: disk 1 full\n  [WARNING] web1: disk 2 full\n"
            "  [MAJOR] web1: disk 3 full\n",
            NULL};
        ck_assert(check_msg(&s, 1, opts));
    }
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    for (i = 0; i < 3; i++) msg_unref(m[i]);
}
END_TEST

START_TEST(test_group_one)
{
    struct server s;
    const char *const more[] = {"group-by",       "HOST", "group-wait", "500ms",
                                "group-interval", "2s",   NULL};
    uv_loop_t *loop;
    struct outcome o[5];
    struct msg *m[5];
    void *x;
    int i;
    char text[64];
    uint64_t t0;

    server_start(&s, NULL);
    loop = new_loop();
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    memset(o, 0, sizeof(o));
    t0 = uv_now(loop);
    for (i = 0; i < 5; i++) {
        snprintf(text, sizeof(text), "disk %d full", i + 1);
        m[i] = alert_msg("web1", text);
        deliver(x, m[i], "id", &o[i]);
    }
    ul_run_until(loop, ndone_reached, &(int){5}, 15);
    for (i = 0; i < 5; i++) {
        ck_assert_msg(o[i].n == 1 && o[i].r == DELIVER_OK, "%d: %s", i, o[i].reason);
        ck_assert_msg(o[i].at - t0 >= 450, "mailed after %llu ms, before group-wait",
                      (unsigned long long)(o[i].at - t0));
    }
    ck_assert_int_eq(count_msgs(&s), 1);
    {
        const char *const opts[] = {
            "--subject",
            "[MAJOR] web1: disk 1 full (+4 more)",
            "--header",
            "X-Corral-Alerts=5",
            "--no-header",
            "X-Corral-Alert-Id",
            "--body-contains",
            "5 alerts, grouped by HOST=web1.\n\n  [MAJOR] web1: disk 1 full\n"
            "  [MAJOR] web1: disk 2 full\n",
            "--body-contains",
            "  [MAJOR] web1: disk 5 full\n\n--- alert 1 of 5 ---\ndisk 1 full\n",
            "--body-contains",
            "\n--- alert 5 of 5 ---\ndisk 5 full\n",
            "--body-count",
            "HOST: web1=5",
            NULL};
        ck_assert(check_msg(&s, 1, opts));
    }
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    for (i = 0; i < 5; i++) msg_unref(m[i]);
}
END_TEST

START_TEST(test_group_two)
{
    struct server s;
    const char *const more[] = {"group-by", ".classifier.rule_id,HOST", "group-wait", "300ms",
                                NULL};
    uv_loop_t *loop;
    struct outcome o[5];
    struct msg *m[5];
    void *x;
    int i;

    server_start(&s, NULL);
    loop = new_loop();
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    memset(o, 0, sizeof(o));
    for (i = 0; i < 5; i++) {
        m[i] = alert_msg(i % 2 ? "web2" : "web1", i % 2 ? "on web2" : "on web1");
        deliver(x, m[i], "id", &o[i]);
    }
    ul_run_until(loop, ndone_reached, &(int){5}, 15);
    for (i = 0; i < 5; i++) ck_assert_msg(o[i].n == 1 && o[i].r == DELIVER_OK, "%d", i);
    ck_assert_int_eq(count_msgs(&s), 2);
    {
        const char *const a[] = {"--body-count",
                                 "HOST: web1=3",
                                 "--body-count",
                                 "HOST: web2=0",
                                 "--header",
                                 "X-Corral-Alerts=3",
                                 NULL};
        const char *const b[] = {"--body-count",
                                 "HOST: web2=2",
                                 "--body-count",
                                 "HOST: web1=0",
                                 "--body-contains",
                                 "grouped by .classifier.rule_id=r-disk, HOST=web2",
                                 NULL};
        ck_assert(check_pair(&s, a, b));
    }
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    for (i = 0; i < 5; i++) msg_unref(m[i]);
}
END_TEST

/* The clocks as the test has moved them on (engine/clock.h's hook): no waiting for time. */
static uint64_t clock_skip;

static uint64_t
skipped_clock(clockid_t id)
{
    return clock_system_ms(id) + clock_skip;
}

/*
 * group-wait, group-interval and forgetting a quiet group, on a clock the
 * test moves on by hours.  The executor's timer is armed for real hours, so
 * after each move an alert for the same group re-arms it (for now) and goes
 * out with the ones that waited: how many a mail holds tells whether they
 * waited.
 */
START_TEST(test_group_interval)
{
    struct server s;
    const char *const more[] = {"group-by",       "HOST", "group-wait", "1h",
                                "group-interval", "2h",   NULL};
    uv_loop_t *loop;
    struct outcome o[7];
    struct msg *m = alert_msg("web1", "disk full");
    void *x;
    int i;

    clock_set_source(skipped_clock);
    server_start(&s, NULL);
    loop = new_loop();
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    memset(o, 0, sizeof(o));
    /* the first alert waits group-wait, and the one in that hour joins it */
    deliver(x, m, "id", &o[0]);
    clock_skip += 3600 * 1000;
    deliver(x, m, "id", &o[1]);
    ck_assert(ul_run_until(loop, ndone_reached, &(int){2}, 30));
    ck_assert_int_eq(count_msgs(&s), 1);
    ck_assert(check_msg(&s, 1, (const char *const[]){"--header", "X-Corral-Alerts=2", NULL}));
    /* the group was mailed: more alerts wait until group-interval after that mail */
    deliver(x, m, "id", &o[2]);
    clock_skip += 3600 * 1000;
    deliver(x, m, "id", &o[3]); /* an hour: not yet */
    clock_skip += 3600 * 1000 + 1;
    deliver(x, m, "id", &o[4]); /* two: all three in one mail */
    ck_assert(ul_run_until(loop, ndone_reached, &(int){5}, 30));
    ck_assert_int_eq(count_msgs(&s), 2);
    ck_assert(check_msg(&s, 2, (const char *const[]){"--header", "X-Corral-Alerts=3", NULL}));
    /* after a quiet group-interval the group is forgotten: group-wait again */
    clock_skip += 2 * 3600 * 1000 + 1;
    deliver(x, m, "id", &o[5]);
    clock_skip += 3600 * 1000;
    deliver(x, m, "id", &o[6]);
    ck_assert(ul_run_until(loop, ndone_reached, &(int){7}, 30));
    ck_assert_int_eq(count_msgs(&s), 3);
    ck_assert(check_msg(&s, 3, (const char *const[]){"--header", "X-Corral-Alerts=2", NULL}));
    for (i = 0; i < 7; i++) ck_assert_msg(o[i].n == 1 && o[i].r == DELIVER_OK, "%d", i);
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    msg_unref(m);
    clock_set_source(NULL);
}
END_TEST

START_TEST(test_group_failure)
{
    const char *const more[] = {"group-by", "", "group-wait", "100ms", NULL};
    uv_loop_t *loop = new_loop();
    struct outcome o[3];
    struct msg *m = alert_msg("web1", "disk full");
    void *x;
    int i, port, fd = ul_reserve_port(SOCK_STREAM, &port);

    /* nobody listens: one mail for all three fails, each alert hears RETRY */
    x = open_ok(loop, plain_kv(port, more), NULL);
    memset(o, 0, sizeof(o));
    for (i = 0; i < 3; i++) deliver(x, m, "id", &o[i]);
    ul_run_until(loop, ndone_reached, &(int){3}, 10);
    for (i = 0; i < 3; i++) ck_assert_msg(o[i].n == 1 && o[i].r == DELIVER_RETRY, "%d", i);
    close_x(loop, x);
    close(fd);
    free(loop);
    msg_unref(m);
}
END_TEST

START_TEST(test_group_close_pending)
{
    const char *const more[] = {"group-by", "HOST", "group-wait", "1h", NULL};
    uv_loop_t *loop = new_loop();
    struct outcome o;
    struct msg *m = alert_msg("web1", "disk full");
    void *x;
    int port, fd = ul_reserve_port(SOCK_STREAM, &port);

    x = open_ok(loop, plain_kv(port, more), NULL);
    memset(&o, 0, sizeof(o));
    deliver(x, m, "id", &o);
    uv_run(loop, UV_RUN_NOWAIT); /* waiting in its group (for an hour) */
    close_x(loop, x);            /* abandoned: the queue keeps it in the spool */
    close(fd);
    ck_assert_int_eq(o.n, 0);
    free(loop);
    msg_unref(m);
}
END_TEST

START_TEST(test_repeat_interval)
{
    struct server s;
    const char *const more[] = {"repeat-interval", "1h",    "group-by", "HOST",
                                "group-wait",      "300ms", NULL};
    const char *const plain[] = {"repeat-interval", "1h", NULL};
    uv_loop_t *loop;
    struct outcome o[8];
    struct msg *a = alert_msg("web1", "disk full"), *b = alert_msg("web2", "disk full"),
               *c = alert_msg("web3", "disk full");
    void *x;
    int i;

    server_start(&s, NULL);
    loop = new_loop();
    x = open_ok(loop, plain_kv(s.port, more), NULL);
    memset(o, 0, sizeof(o));
    deliver(x, a, "id", &o[0]);
    deliver(x, a, "id", &o[1]); /* folded into the first, which waits in its group */
    ck_assert_int_eq(o[1].n, 1);
    deliver(x, b, "id", &o[2]); /* another host: another alert */
    ul_run_until(loop, ndone_reached, &(int){3}, 10);
    deliver(x, a, "id", &o[3]); /* mailed less than repeat-interval ago: held back */
    ck_assert_int_eq(o[3].n, 1);
    /* a third host after it, waited for: a mail of the repeat would have gone out first */
    deliver(x, c, "id", &o[6]);
    ck_assert(ul_run_until(loop, ndone_reached, &(int){5}, 10));
    for (i = 0; i < 4; i++) ck_assert_msg(o[i].n == 1 && o[i].r == DELIVER_OK, "%d", i);
    ck_assert_int_eq(o[6].r, DELIVER_OK);
    ck_assert_int_eq(count_msgs(&s), 3);
    {
        const char *const w1[] = {"--body-contains", "This alert came 1 more time; repeat-interval",
                                  "--body-contains", "HOST: web1", NULL};
        const char *const w2[] = {"--body-contains", "HOST: web2", "--body-not-contains",
                                  "repeat-interval", NULL};
        ck_assert(check_pair(&s, w1, w2));
    }
    close_x(loop, x);
    free(loop);

    /* without grouping the first goes at once; a repeat while it is on its way is held back too */
    loop = new_loop();
    x = open_ok(loop, plain_kv(s.port, plain), NULL);
    deliver(x, b, "id", &o[4]);
    deliver(x, b, "id", &o[5]);
    ck_assert_int_eq(o[5].n, 1);
    ul_run_until(loop, ndone_reached, &(int){2}, 10);
    ck_assert_int_eq(o[4].r, DELIVER_OK);
    ck_assert_int_eq(count_msgs(&s), 4);
    close_x(loop, x);
    free(loop);
    server_stop(&s);
    msg_unref(a);
    msg_unref(b);
    msg_unref(c);
}
END_TEST

/* ---- curl's own dot stuffing, which the executor does not rely on ---- */

static bool tx_done;
static enum deliver_result tx_r;

static void
on_tx_done(void *arg, enum deliver_result r, const char *reason)
{
    (void)arg;
    (void)reason;
    tx_r = r;
    tx_done = true;
}

START_TEST(test_curl_dot_stuffing)
{
    struct server s;
    uv_loop_t *loop = new_loop();
    char *rcpt[] = {"ops@example.com"};
    struct smtp_tx_conf c;
    struct smtp_tx *tx;
    struct buf msg = BUF_INIT;
    const char *body = "Subject: dots\r\n\r\n.first\r\n..second\r\n.\r\nafter\r\n";

    server_start(&s, NULL);
    memset(&c, 0, sizeof(c));
    c.url = url_of("smtp", "127.0.0.1", s.port);
    c.tls = SMTP_TLS_NONE;
    c.verify = true;
    c.mail_from = "corral@example.com";
    c.rcpts = rcpt;
    c.nrcpts = 1;
    c.timeout_ms = 10000;
    c.connections = 1;
    tx = smtp_tx_new(loop, &c);
    buf_puts(&msg, body);
    tx_done = false;
    smtp_tx_send(tx, &msg, on_tx_done, NULL);
    ul_run_until(loop, ul_flag_set, &tx_done, 10);
    ck_assert_int_eq(tx_r, DELIVER_OK);
    /* the server got every line back as sent: curl stuffed the dots and the server removed them */
    {
        char path[2400], cmd[5000];
        snprintf(path, sizeof(path), "%s/msg-0001.json", s.dir);
        snprintf(cmd, sizeof(cmd),
                 PYTHON
                 " -c 'import json,base64,sys; d=base64.b64decode(json.load(open(sys.argv[1]))"
                 "[\"data\"]); sys.exit(d != sys.argv[2].encode())' '%s' '%s'",
                 path, body);
        ck_assert_int_eq(system(cmd), 0);
    }
    closed = false;
    smtp_tx_close(tx, on_closed, NULL);
    ck_assert(ul_run_until(loop, ul_flag_set, &closed, 10));
    ck_assert_int_eq(uv_loop_close(loop), 0);
    free(loop);
    server_stop(&s);
}
END_TEST

/* ==== setup ==== */

static bool
run_quiet(const char *cmd)
{
    return system(cmd) == 0;
}

static void
setup_world(void)
{
    const char *top = getenv("top_srcdir"), *tmp = getenv("TMPDIR");
    char cmd[8192];
    FILE *f;

    snprintf(srcdir, sizeof(srcdir), "%s", top ? top : ".");
    snprintf(workdir, sizeof(workdir), "%s/test_smtp.XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(cmd, sizeof(cmd),
             "test -f '%s/tests/integration/smtp_server.py' && " PYTHON
             " -c 'import aiosmtpd' >/dev/null 2>&1",
             srcdir);
    have_server = run_quiet(cmd);
    if (!have_server)
        printf("test_smtp: " PYTHON " with aiosmtpd (Debian: python3-aiosmtpd) not found: "
               "the tests against a real server are skipped\n");
    snprintf(cert, sizeof(cert), "%s/cert.pem", workdir);
    snprintf(key, sizeof(key), "%s/key.pem", workdir);
    snprintf(pwfile, sizeof(pwfile), "%s/password", workdir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 "
             "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout '%s' -out '%s' "
             ">/dev/null 2>&1",
             key, cert);
    have_tls = have_server && run_quiet(cmd);
    if (have_server && !have_tls)
        printf("test_smtp: the openssl command cannot make a certificate: TLS tests skipped\n");
    if ((f = fopen(pwfile, "w"))) {
        fputs("s3cret pass\nsecond line is ignored\n", f);
        fclose(f);
    }
    setenv("TZ", "UTC", 1);
    tzset();
    signal(SIGPIPE, SIG_IGN);
}

static Suite *
smtp_suite(void)
{
    Suite *s = suite_create("smtp");
    TCase *tc = tcase_create("offline");

    tcase_add_test(tc, test_conf_minimal);
    tcase_add_loop_test(tc, test_conf_errors, 0, (int)(sizeof(bad_confs) / sizeof(bad_confs[0])));
    tcase_add_test(tc, test_conf_children);
    tcase_add_test(tc, test_addresses);
    tcase_add_test(tc, test_header_clean);
    tcase_add_test(tc, test_header_text);
    tcase_add_test(tc, test_subject);
    tcase_add_test(tc, test_header_mailbox);
    tcase_add_test(tc, test_body_clean);
    tcase_add_test(tc, test_body_encode);
    tcase_add_test(tc, test_date_and_id);
    tcase_add_test(tc, test_classify);
    tcase_add_test(tc, test_render);
    tcase_add_test(tc, test_render_group_and_body);
    tcase_add_test(tc, test_silence_command);
    tcase_add_test(tc, test_close_unused);
    tcase_add_test(tc, test_server_down);
    tcase_add_test(tc, test_group_failure);
    tcase_add_test(tc, test_group_close_pending);
    suite_add_tcase(s, tc);

    if (have_server) {
        tc = tcase_create("server");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_stock_aiosmtpd);
        tcase_add_test(tc, test_plain_delivery);
        tcase_add_test(tc, test_utf8);
        tcase_add_test(tc, test_injection);
        tcase_add_test(tc, test_big_value);
        tcase_add_test(tc, test_custom_body);
        tcase_add_test(tc, test_reject_550);
        tcase_add_test(tc, test_tempfail_450);
        tcase_add_test(tc, test_data_replies);
        tcase_add_test(tc, test_timeout);
        tcase_add_test(tc, test_loop_not_blocked);
        tcase_add_test(tc, test_connections_bound);
        tcase_add_test(tc, test_close_inflight);
        tcase_add_test(tc, test_default_is_starttls);
        tcase_add_test(tc, test_group_one);
        tcase_add_test(tc, test_group_title);
        tcase_add_test(tc, test_group_two);
        tcase_add_test(tc, test_group_interval);
        tcase_add_test(tc, test_repeat_interval);
        tcase_add_test(tc, test_curl_dot_stuffing);
        suite_add_tcase(s, tc);
    }
    if (have_tls) {
        tc = tcase_create("tls");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_starttls_auth);
        tcase_add_test(tc, test_starttls_missing);
        tcase_add_test(tc, test_smtps);
        tcase_add_test(tc, test_tls_verify);
        tcase_add_test(tc, test_auth_denied);
        suite_add_tcase(s, tc);
    }
    return s;
}

int
main(void)
{
    int failed;

    setup_world();
    failed = unit_run(smtp_suite());
    rm_tree(workdir);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
