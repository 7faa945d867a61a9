/*
 * test_snmp: the SNMP executor (actions/snmp.c), driven directly from a
 * small libuv loop, no corrald.
 *
 * Configuration checks and render() run everywhere.  The delivery tests
 * need a real receiver: each starts its own snmptrapd (net-snmp 5.9) on a
 * free loopback port with a private configuration, and reads what it
 * logged with a format that prints every varbind's OID and, for octet
 * strings, every byte in hex.  Without snmptrapd they are skipped (and
 * say so).  A test only ever stops the snmptrapd it started, and that one
 * dies with the test process (PR_SET_PDEATHSIG) if the test fails midway.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
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

#include "engine/buf.h"
#include "agent/conf/conf.h"
#include "actions/executor.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

#define BASE ".1.3.6.1.4.1.32473"

static char workdir[256];

/* ---- helpers: configuration ---- */

static void
make_workdir(void)
{
    if (workdir[0]) return;
    snprintf(workdir, sizeof(workdir), "%s/test_snmp.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(workdir));
}

/* Loads "<corrald><executors>EXECUTORS</executors></corrald>" (EXECUTORS from line 3). */
static struct conf *
load(const char *executors, char *file, size_t filesize)
{
    make_workdir();
    return ul_load_executors(workdir, executors, file, filesize);
}

static void
close_cb(void *arg)
{
    *(bool *)arg = true;
}

static void
tick(uv_timer_t *t)
{
    (void)t;
}

/* ---- helpers: the loop ---- */

struct outcome {
    bool called;
    enum deliver_result r;
    char reason[512];
    double at; /* seconds after deliver() */
};

static double delivered_at;

static void
on_done(void *token, enum deliver_result r, const char *reason)
{
    struct outcome *o = token;

    ck_assert_msg(!o->called, "done() called twice");
    o->called = true;
    o->r = r;
    o->at = ul_now() - delivered_at;
    snprintf(o->reason, sizeof(o->reason), "%s", reason ? reason : "");
}

struct harness {
    uv_loop_t loop;
    uv_timer_t ticker; /* keeps UV_RUN_ONCE from sleeping forever */
    const struct executor_kind *kind;
    void *x;
};

static void
harness_init(struct harness *h)
{
    uv_loop_init(&h->loop);
    uv_timer_init(&h->loop, &h->ticker);
    uv_timer_start(&h->ticker, tick, 20, 20);
    h->kind = &snmp_executor;
    h->x = NULL;
}

/* Opens the first executor of a configuration; err gets what open() says. */
static void *
harness_open(struct harness *h, const char *executors, struct buf *err)
{
    char file[512];
    struct conf *c = load(executors, file, sizeof(file));

    ck_assert_uint_ge(c->nexecutors, 1);
    h->x = h->kind->open(&h->loop, &c->executors[0], file, err);
    conf_free(c);
    return h->x;
}

static void
harness_close(struct harness *h)
{
    bool closed = false;

    if (h->x) {
        h->kind->close(h->x, close_cb, &closed);
        ul_run_until(&h->loop, ul_flag_set, &closed, 10);
        ck_assert_msg(closed, "close() never finished");
    }
    uv_close((uv_handle_t *)&h->ticker, NULL);
    uv_run(&h->loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&h->loop), 0);
}

static void
deliver(struct harness *h, const struct alert *a, struct outcome *o)
{
    memset(o, 0, sizeof(*o));
    delivered_at = ul_now();
    h->kind->deliver(h->x, a, on_done, o);
}

/* ---- helpers: messages ---- */

static void
set(struct msg *m, const char *name, const char *val)
{
    msg_set(m, nv_intern_str(name), val, strlen(val));
}

/* A generated message as a correlation rule would produce it. */
static struct msg *
sample_msg(void)
{
    struct msg *m = msg_new();

    set(m, "MESSAGE", "5 failed logins for root from 192.0.2.7");
    set(m, "HOST", "web1");
    set(m, "PROGRAM", "sshd");
    set(m, ".classifier.class", "violation");
    set(m, ".classifier.rule_id", "ssh-brute");
    set(m, ".classifier.context_id", "web1/192.0.2.7");
    set(m, "corral.alert_id", "ignored: the alert's id is sent");
    set(m, "user", "root");
    set(m, "src_ip", "192.0.2.7");
    return m;
}

/* ---- helpers: snmptrapd ---- */

struct trapd {
    pid_t pid;
    int port;
    char out[512];
};

static bool
have_snmptrapd(void)
{
    static const char *const dirs[] = {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin",
                                       "/sbin"};
    char p[256];
    size_t i;

    for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(p, sizeof(p), "%s/snmptrapd", dirs[i]);
        if (access(p, X_OK) == 0) return true;
    }
    return false;
}

static char *
read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    struct buf b = BUF_INIT;
    char chunk[4096];
    size_t n;

    if (!f) return calloc(1, 1);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(&b, chunk, n);
    fclose(f);
    if (!b.p) return calloc(1, 1);
    return b.p;
}

static int
count_of(const char *text, const char *what)
{
    int n = 0;

    while ((text = strstr(text, what))) n++, text++;
    return n;
}

/*
 * Starts snmptrapd with `extra` configuration lines.  Each notification is
 * logged as "BEGIN <type, version, community or user>", the varbinds
 * separated by tabs (octet strings as quoted hex), "END".
 *
 * snmptrapd can neither take a socket nor report the port it bound, so a
 * port is handed over, and it may be taken between our check and its bind.
 * port 0: a port of the kernel's choosing, tried again with another one
 * when snmptrapd cannot bind it (it exits), so the race costs a retry, not
 * a failed test.  A given port (held by the test until the moment it calls
 * here, see ul_reserve_port) is the only one tried.
 */
static bool
trapd_try_start(struct trapd *t, int port, const char *extra)
{
    char conf[512], persist[512], mibs[512];
    struct buf text = BUF_INIT;
    double end;

    make_workdir();
    t->port = port;
    snprintf(conf, sizeof(conf), "%s/snmptrapd-%d.conf", workdir, port);
    snprintf(persist, sizeof(persist), "%s/persist-%d", workdir, port);
    snprintf(mibs, sizeof(mibs), "%s/nomibs", workdir);
    snprintf(t->out, sizeof(t->out), "%s/snmptrapd-%d.out", workdir, port);
    mkdir(mibs, 0700);
    buf_printf(&text,
               "disableAuthorization no\n"
               "authCommunity log public\n"
               "format2 BEGIN %%P\\n%%v\\nEND\\n\n"
               "%s\n",
               extra ? extra : "");
    ul_write_file(conf, buf_str(&text));
    buf_free(&text);
    t->pid = fork();
    ck_assert_int_ge(t->pid, 0);
    if (t->pid == 0) {
        char listen[64];
        int fd = open(t->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlives the test */
        dup2(fd, 1);
        dup2(fd, 2);
        /* its own persistent directory and no MIBs: nothing outside workdir is touched */
        setenv("SNMP_PERSISTENT_DIR", persist, 1);
        setenv("MIBDIRS", mibs, 1);
        setenv("MIBS", "", 1);
        snprintf(listen, sizeof(listen), "udp:127.0.0.1:%d", port);
        execlp("snmptrapd", "snmptrapd", "-f", "-Lo", "-C", "-c", conf, "-n", "-On", "-Oq", "-Ox",
               "-Ot", listen, (char *)NULL);
        _exit(127);
    }
    /* a generous bound for a loaded machine: this waits on its log, it does not sleep it out */
    end = ul_now() + 60;
    while (ul_now() < end) {
        char *all = read_all(t->out);
        bool up = strstr(all, "NET-SNMP version") != NULL;
        free(all);
        if (up) return true;
        if (waitpid(t->pid, NULL, WNOHANG) == t->pid) { /* exited: it could not bind */
            t->pid = 0;
            return false;
        }
        usleep(20000);
    }
    ck_abort_msg("snmptrapd did not start");
    return false;
}

static void
trapd_start(struct trapd *t, int port, const char *extra)
{
    int i;

    if (port) {
        if (!trapd_try_start(t, port, extra))
            ck_abort_msg("snmptrapd could not bind port %d (see %s)", port, t->out);
        return;
    }
    for (i = 0; i < 20; i++) {
        int held = ul_reserve_port(SOCK_DGRAM, &port);
        close(held);
        if (trapd_try_start(t, port, extra)) return;
    }
    ck_abort_msg("snmptrapd could not bind any of 20 ports (last: see %s)", t->out);
}

static void
trapd_stop(struct trapd *t)
{
    if (t->pid > 0) {
        kill(t->pid, SIGTERM);
        waitpid(t->pid, NULL, 0);
        t->pid = 0;
    }
}

/* Waits until snmptrapd has logged n notifications; returns its log. */
static char *
trapd_wait(struct trapd *t, int n)
{
    double end = ul_now() + 10;
    char *all;

    for (;;) {
        all = read_all(t->out);
        if (count_of(all, "\nEND\n") >= n || ul_now() > end) break;
        free(all);
        usleep(20000);
    }
    return all;
}

/* One notification as snmptrapd logged it. */
struct vbind {
    char oid[256];
    struct buf val; /* octet strings: the decoded bytes; others: the text */
    bool octets;
};

struct record {
    char head[256];
    struct vbind vb[128];
    size_t nvb;
};

static void
record_free(struct record *r)
{
    size_t i;

    for (i = 0; i < r->nvb; i++) buf_free(&r->vb[i].val);
    r->nvb = 0;
}

static int
hexv(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Parses the index-th (from 0) record of the log. */
static void
parse_record(const char *log, int index, struct record *r)
{
    const char *p = log, *end, *nl;
    int i;

    memset(r, 0, sizeof(*r));
    for (i = 0; i <= index; i++) {
        p = strstr(p, "BEGIN ");
        ck_assert_ptr_nonnull(p);
        if (i < index) p++;
    }
    p += 6;
    nl = strchr(p, '\n');
    ck_assert_ptr_nonnull(nl);
    snprintf(r->head, sizeof(r->head), "%.*s", (int)(nl - p), p);
    p = nl + 1;
    end = strstr(p, "\nEND\n");
    ck_assert_ptr_nonnull(end);
    while (p < end) {
        const char *tab = memchr(p, '\t', (size_t)(end - p)), *sp;
        struct vbind *v = &r->vb[r->nvb++];
        if (!tab) tab = end;
        sp = memchr(p, ' ', (size_t)(tab - p));
        ck_assert_ptr_nonnull(sp);
        snprintf(v->oid, sizeof(v->oid), "%.*s", (int)(sp - p), p);
        sp++;
        buf_init(&v->val);
        if (*sp == '"') {
            int hi = -1;
            v->octets = true;
            for (sp++; sp < tab && *sp != '"'; sp++) {
                int d = hexv((unsigned char)*sp);
                if (d < 0) continue;
                if (hi < 0) {
                    hi = d;
                } else {
                    buf_putc(&v->val, (char)(hi << 4 | d));
                    hi = -1;
                }
            }
        } else {
            buf_append(&v->val, sp, (size_t)(tab - sp));
        }
        p = tab + 1;
    }
}

static const struct vbind *
find_vb(const struct record *r, const char *oid)
{
    size_t i;

    for (i = 0; i < r->nvb; i++)
        if (strcmp(r->vb[i].oid, oid) == 0) return &r->vb[i];
    ck_abort_msg("varbind %s missing", oid);
    return NULL;
}

static void
expect_vb(const struct record *r, const char *oid, const char *want, size_t wantlen)
{
    const struct vbind *v = find_vb(r, oid);

    ck_assert_msg(v->val.len == wantlen && memcmp(v->val.p ? v->val.p : "", want, wantlen) == 0,
                  "varbind %s: got \"%.*s\" (%zu bytes), want \"%.*s\" (%zu bytes)", oid,
                  (int)(v->val.len > 200 ? 200 : v->val.len), v->val.p ? v->val.p : "", v->val.len,
                  (int)(wantlen > 200 ? 200 : wantlen), want, wantlen);
}

static void
expect_str(const struct record *r, const char *oid, const char *want)
{
    expect_vb(r, oid, want, strlen(want));
}

/* Every varbind of the sample message's notification, and nothing else. */
static void
expect_sample(const struct record *r, const char *trap_oid, const char *id, const char *severity)
{
    ck_assert_uint_eq(r->nvb, 12);
    ck_assert_str_eq(r->vb[0].oid, ".1.3.6.1.2.1.1.3.0");
    ck_assert_str_eq(r->vb[1].oid, ".1.3.6.1.6.3.1.1.4.1.0");
    expect_str(r, ".1.3.6.1.6.3.1.1.4.1.0", trap_oid);
    expect_str(r, BASE ".1.1.0", "5 failed logins for root from 192.0.2.7");
    expect_str(r, BASE ".1.2.0", "web1");
    expect_str(r, BASE ".1.3.0", "sshd");
    expect_str(r, BASE ".1.4.0", "violation");
    expect_str(r, BASE ".1.5.0", "ssh-brute");
    expect_str(r, BASE ".1.6.0", "web1/192.0.2.7");
    expect_str(r, BASE ".1.7.0", id);
    expect_str(r, BASE ".1.8.0", severity);
    expect_str(r, BASE ".1.9.1.2.1", "user=root");
    expect_str(r, BASE ".1.9.1.2.2", "src_ip=192.0.2.7");
}

#define NEED_SNMPTRAPD()                                                                           \
    do {                                                                                           \
        if (!have_snmptrapd()) {                                                                   \
            fprintf(stderr, "%s: skipped: snmptrapd is not installed\n", __func__);                \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* ---- configuration ---- */

static void
expect_open_error(const char *executor, const char *want)
{
    struct harness h;
    struct buf err = BUF_INIT;

    harness_init(&h);
    ck_assert_ptr_null(harness_open(&h, executor, &err));
    ck_assert_msg(strstr(buf_str(&err), want), "error \"%s\" does not say \"%s\"", buf_str(&err),
                  want);
    /* every line names the file and a line */
    ck_assert_msg(strstr(buf_str(&err), ".conf:"), "no FILE:LINE in \"%s\"", buf_str(&err));
    buf_free(&err);
    harness_close(&h);
}

START_TEST(test_config_errors)
{
    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    setenv("TEST_SNMP_SHORT", "short", 1);
    expect_open_error("<snmp name=\"a\" target=\"udp:127.0.0.1:162\" "
                      "community-env=\"TEST_SNMP_COMMUNITY\" colour=\"red\"/>",
                      ".conf:3: executor a: unknown attribute colour");
    expect_open_error("<snmp name=\"a\" target=\"udp:127.0.0.1:162\"/>",
                      "community-file or community-env is required");
    expect_open_error("<snmp name=\"a\" community-env=\"TEST_SNMP_COMMUNITY\"/>", "target");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" version=\"1\" "
                      "community-env=\"TEST_SNMP_COMMUNITY\"/>",
                      "bad version=\"1\" (2c or 3)");
    expect_open_error(
        "<snmp name=\"a\" target=\"127.0.0.1\" user=\"u\" community-env=\"TEST_SNMP_COMMUNITY\"/>",
        "user is an SNMPv3 setting");
    expect_open_error(
        "<snmp name=\"a\" target=\"tcp:127.0.0.1:162\" community-env=\"TEST_SNMP_COMMUNITY\"/>",
        "only UDP");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" inform=\"maybe\" "
                      "community-env=\"TEST_SNMP_COMMUNITY\"/>",
                      "inform=\"maybe\"");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" timeout=\"soon\" "
                      "community-env=\"TEST_SNMP_COMMUNITY\"/>",
                      "timeout=\"soon\"");
    expect_open_error(
        "<snmp name=\"a\" target=\"127.0.0.1\" community-env=\"TEST_SNMP_UNSET_VARIABLE\"/>",
        "TEST_SNMP_UNSET_VARIABLE");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" version=\"3\"/>", "user is required");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" version=\"3\" user=\"u\" "
                      "community-env=\"TEST_SNMP_COMMUNITY\"/>",
                      "not a community");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" version=\"3\" user=\"u\"/>",
                      "auth-password-file or auth-password-env is required");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" version=\"3\" user=\"u\" "
                      "security-level=\"authNoPriv\" auth-password-env=\"TEST_SNMP_SHORT\"/>",
                      "shorter than 8");
    expect_open_error(
        "<snmp name=\"a\" target=\"127.0.0.1\" version=\"3\" user=\"u\" security-level=\"high\"/>",
        "security-level=\"high\"");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" version=\"3\" user=\"u\" "
                      "security-level=\"noAuthNoPriv\" auth-protocol=\"SHA-3\"/>",
                      "auth-protocol=\"SHA-3\"");
    expect_open_error("<snmp name=\"a\" target=\"127.0.0.1\" version=\"3\" user=\"u\" "
                      "security-level=\"noAuthNoPriv\" engine-id=\"0xzz\"/>",
                      "engine-id=\"0xzz\"");
    expect_open_error(
        "<snmp name=\"a\" target=\"127.0.0.1\" community-env=\"TEST_SNMP_COMMUNITY\">\n"
        "  <varbind oid=\"1.3.6.x\" value=\"v\"/>\n</snmp>",
        ":4: executor a: <varbind> needs oid=");
    expect_open_error(
        "<snmp name=\"a\" target=\"127.0.0.1\" community-env=\"TEST_SNMP_COMMUNITY\">\n"
        "  <varbind oid=\"1.3.6.1\" type=\"q\" value=\"v\"/>\n</snmp>",
        ":4: executor a: <varbind> type=\"q\"");
    expect_open_error(
        "<snmp name=\"a\" target=\"127.0.0.1\" community-env=\"TEST_SNMP_COMMUNITY\">\n"
        "  <varbind oid=\"1.3.6.1\" type=\"i\" value=\"twelve\"/>\n</snmp>",
        "not a 32-bit integer");
    expect_open_error(
        "<snmp name=\"a\" target=\"127.0.0.1\" community-env=\"TEST_SNMP_COMMUNITY\">\n"
        "  <varbind oid=\"1.3.6.1\" value=\"$(\"/>\n</snmp>",
        "bad <varbind> value template");
    expect_open_error(
        "<snmp name=\"a\" target=\"127.0.0.1\" community-env=\"TEST_SNMP_COMMUNITY\">\n"
        "  <header name=\"x\"/>\n</snmp>",
        ":4: executor a: unknown element <header>");
}
END_TEST

START_TEST(test_config_accepts)
{
    struct harness h;
    struct buf err = BUF_INIT;

    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    setenv("TEST_SNMP_AUTH", "authpass1", 1);
    setenv("TEST_SNMP_PRIV", "privpass1", 1);
    /* the queue's attributes are accepted silently */
    harness_init(&h);
    ck_assert_ptr_nonnull(harness_open(
        &h,
        "<snmp name=\"nms\" target=\"udp:127.0.0.1:16299\" community-env=\"TEST_SNMP_COMMUNITY\" "
        "queue=\"100\" attempts=\"3\" backoff=\"1s\" max-backoff=\"1m\" rate=\"10/60\" "
        "dedupe=\"5m\" "
        "dedupe-key=\"$HOST\" alert-id=\"$HOST\" severity=\"major\" dead-letter=\"/tmp/x\" "
        "inform=\"yes\" timeout=\"250ms\" retries=\"0\" values=\"no\" "
        "base-oid=\"1.3.6.1.4.1.99999.7\" "
        "trap-oid=\"1.3.6.1.4.1.99999.7.0.${n:-1}\" clear-trap-oid=\"1.3.6.1.4.1.99999.7.0.2\"/>",
        &err));
    ck_assert_str_eq(buf_str(&err), "");
    ck_assert_uint_eq(h.kind->max_inflight(h.x), 64);
    harness_close(&h);

    harness_init(&h);
    ck_assert_ptr_nonnull(harness_open(
        &h,
        "<snmp name=\"v3\" target=\"127.0.0.1:16299\" version=\"3\" user=\"corral\" "
        "auth-protocol=\"SHA-512\" auth-password-env=\"TEST_SNMP_AUTH\" priv-protocol=\"DES\" "
        "priv-password-env=\"TEST_SNMP_PRIV\" engine-id=\"80:00:7e:d9:04:63:6f:72:72:61:6c\"/>",
        &err));
    ck_assert_str_eq(buf_str(&err), "");
    harness_close(&h);
    buf_free(&err);
}
END_TEST

/* ---- render ---- */

static char *
render(const char *executor, const struct alert *a)
{
    struct harness h;
    struct buf err = BUF_INIT, out = BUF_INIT;
    char *s;

    harness_init(&h);
    if (!harness_open(&h, executor, &err)) ck_abort_msg("open: %s", buf_str(&err));
    h.kind->render(h.x, a, &out);
    harness_close(&h);
    s = strdup(buf_str(&out));
    buf_free(&out);
    buf_free(&err);
    return s;
}

#define HAS(text, want) ck_assert_msg(strstr(text, want), "render lacks \"%s\":\n%s", want, text)

START_TEST(test_render)
{
    struct msg *m = sample_msg();
    struct alert a = {0, "ssh-brute/web1", "major", m, 0};
    char *r;

    setenv("TEST_SNMP_COMMUNITY", "s3cret-community", 1);
    setenv("TEST_SNMP_AUTH", "s3cret-auth", 1);
    setenv("TEST_SNMP_PRIV", "s3cret-priv", 1);
    r = render(
        "<snmp name=\"nms\" target=\"udp:127.0.0.1:16299\" community-env=\"TEST_SNMP_COMMUNITY\"/>",
        &a);
    HAS(r, "snmp nms: SNMPv2c trap to udp:127.0.0.1:16299\n");
    HAS(r, "varbind: 1.3.6.1.2.1.1.3.0 t (uptime when sent) # sysUpTime.0\n");
    HAS(r,
        "varbind: 1.3.6.1.6.3.1.1.4.1.0 o 1.3.6.1.4.1.32473.0.1 (corralAlert) # snmpTrapOID.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.1.0 s \"5 failed logins for root from 192.0.2.7\" # "
           "corralAlertText.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.2.0 s \"web1\" # corralAlertHost.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.3.0 s \"sshd\" # corralAlertProgram.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.4.0 s \"violation\" # corralAlertClass.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.5.0 s \"ssh-brute\" # corralAlertRuleId.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.6.0 s \"web1/192.0.2.7\" # corralAlertContextId.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.7.0 s \"ssh-brute/web1\" # corralAlertId.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.8.0 i 5 (major) # corralAlertSeverity.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.9.1.2.1 s \"user=root\" # corralAlertValue.1\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.9.1.2.2 s \"src_ip=192.0.2.7\" # corralAlertValue.2\n");
    ck_assert_int_eq(count_of(r, "varbind: "), 12);
    ck_assert_ptr_null(strstr(r, "s3cret"));
    ck_assert_ptr_null(strstr(r, "ignored"));
    free(r);

    /* clear: the corralClear notification, severity clear(1) */
    a.severity = "clear";
    r = render("<snmp name=\"nms\" target=\"udp:127.0.0.1:16299\" "
               "community-env=\"TEST_SNMP_COMMUNITY\" inform=\"yes\"/>",
               &a);
    HAS(r, "snmp nms: SNMPv2c inform to udp:127.0.0.1:16299\n");
    HAS(r, "1.3.6.1.4.1.32473.0.2 (corralClear) # snmpTrapOID.0\n");
    HAS(r, "1.3.6.1.4.1.32473.1.8.0 i 1 (clear) #");
    free(r);

    /* unknown severities are sent as warning(3) */
    a.severity = "Disaster";
    r = render(
        "<snmp name=\"nms\" target=\"udp:127.0.0.1:16299\" community-env=\"TEST_SNMP_COMMUNITY\"/>",
        &a);
    HAS(r, "1.3.6.1.4.1.32473.1.8.0 i 3 (warning) #");
    free(r);

    /* v3: the security settings but never a password */
    a.severity = "critical";
    r = render("<snmp name=\"v3\" target=\"udp:127.0.0.1:16299\" version=\"3\" user=\"corral\" "
               "auth-password-env=\"TEST_SNMP_AUTH\" priv-password-env=\"TEST_SNMP_PRIV\" "
               "engine-id=\"0x80007ed9040102\"/>",
               &a);
    HAS(r, "snmp v3: SNMPv3 trap to udp:127.0.0.1:16299\n");
    HAS(r, "security: user corral, authPriv, auth SHA, priv AES\n");
    HAS(r, "engine-id: 0x80007ed9040102 (engine-id)\n");
    HAS(r, "i 6 (critical)");
    ck_assert_ptr_null(strstr(r, "s3cret"));
    free(r);

    /* the derived engine id: enterprise 32473, format 5, 12 octets; stable */
    {
        char *r2;
        r = render("<snmp name=\"v3\" target=\"udp:127.0.0.1:16299\" version=\"3\" user=\"corral\" "
                   "auth-password-env=\"TEST_SNMP_AUTH\" priv-password-env=\"TEST_SNMP_PRIV\"/>",
                   &a);
        r2 =
            render("<snmp name=\"v3\" target=\"udp:127.0.0.1:16299\" version=\"3\" user=\"corral\" "
                   "auth-password-env=\"TEST_SNMP_AUTH\" priv-password-env=\"TEST_SNMP_PRIV\"/>",
                   &a);
        HAS(r, "engine-id: 0x80007ed905");
        HAS(r, "(derived from the host and executor names)");
        ck_assert_str_eq(r, r2);
        free(r2);
        r2 = render(
            "<snmp name=\"other\" target=\"udp:127.0.0.1:16299\" version=\"3\" user=\"corral\" "
            "auth-password-env=\"TEST_SNMP_AUTH\" priv-password-env=\"TEST_SNMP_PRIV\"/>",
            &a);
        ck_assert_ptr_null(strstr(r2, strstr(r, "engine-id: ")));
        free(r2);
        free(r);
    }
    msg_unref(m);
}
END_TEST

START_TEST(test_render_overrides)
{
    struct msg *m = sample_msg();
    struct alert a = {0, "ssh-brute/web1", "major", m, 0};
    char *r;

    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    r = render(
        "<snmp name=\"nms\" target=\"127.0.0.1:16299\" community-env=\"TEST_SNMP_COMMUNITY\" "
        "trap-oid=\"1.3.6.1.4.1.99999.0.${n:-7}\" values=\"no\">\n"
        "  <varbind oid=\"1.3.6.1.4.1.32473.1.2.0\" value=\"host ${HOST}!\"/>\n"
        "  <varbind oid=\"1.3.6.1.4.1.99999.1.1.0\" type=\"i\" value=\"-42\"/>\n"
        "  <varbind oid=\"1.3.6.1.4.1.99999.1.2.0\" type=\"u\" value=\"4294967295\"/>\n"
        "  <varbind oid=\"1.3.6.1.4.1.99999.1.3.0\" type=\"c\" value=\"7\"/>\n"
        "  <varbind oid=\"1.3.6.1.4.1.99999.1.4.0\" type=\"a\" value=\"${src_ip}\"/>\n"
        "  <varbind oid=\"1.3.6.1.4.1.99999.1.5.0\" type=\"o\" value=\".1.3.6.1.4.1.99999.9\"/>\n"
        "  <varbind oid=\"1.3.6.1.4.1.99999.1.6.0\" type=\"t\" value=\"12345\"/>\n"
        "  <varbind oid=\"1.3.6.1.4.1.99999.1.7.0\" type=\"x\" value=\"0x00ff:10\"/>\n"
        "</snmp>",
        &a);
    HAS(r, "varbind: 1.3.6.1.6.3.1.1.4.1.0 o 1.3.6.1.4.1.99999.0.7 # snmpTrapOID.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.32473.1.2.0 s \"host web1!\" # corralAlertHost.0\n");
    HAS(r, "varbind: 1.3.6.1.4.1.99999.1.1.0 i -42\n");
    HAS(r, "varbind: 1.3.6.1.4.1.99999.1.2.0 u 4294967295\n");
    HAS(r, "varbind: 1.3.6.1.4.1.99999.1.3.0 c 7\n");
    HAS(r, "varbind: 1.3.6.1.4.1.99999.1.4.0 a 192.0.2.7\n");
    HAS(r, "varbind: 1.3.6.1.4.1.99999.1.5.0 o 1.3.6.1.4.1.99999.9\n");
    HAS(r, "varbind: 1.3.6.1.4.1.99999.1.6.0 t 12345\n");
    HAS(r, "varbind: 1.3.6.1.4.1.99999.1.7.0 x 00ff10\n");
    ck_assert_ptr_null(strstr(r, "corralAlertValue")); /* values="no" */
    ck_assert_int_eq(count_of(r, "varbind: "), 10 + 7);
    free(r);

    /* a template that gives something that is not an OID: the alert can never be sent */
    r = render(
        "<snmp name=\"nms\" target=\"127.0.0.1:16299\" community-env=\"TEST_SNMP_COMMUNITY\" "
        "trap-oid=\"${HOST}\"/>",
        &a);
    HAS(r, "error: the trap-oid template gives no numeric OID");
    free(r);
    r = render(
        "<snmp name=\"nms\" target=\"127.0.0.1:16299\" community-env=\"TEST_SNMP_COMMUNITY\">"
        "<varbind oid=\"1.3.6.1.4.1.99999.1.1.0\" type=\"a\" value=\"${HOST}\"/></snmp>",
        &a);
    HAS(r, "error: <varbind oid=\"1.3.6.1.4.1.99999.1.1.0\"> value: not an IPv4 address");
    free(r);

    /* at most 32 other values */
    {
        struct msg *many = sample_msg();
        struct alert b = {0, "id", "info", many, 0};
        char name[32];
        int i;
        for (i = 0; i < 40; i++) {
            snprintf(name, sizeof(name), "v%d", i);
            set(many, name, "x");
        }
        r = render(
            "<snmp name=\"nms\" target=\"127.0.0.1:16299\" community-env=\"TEST_SNMP_COMMUNITY\"/>",
            &b);
        ck_assert_int_eq(count_of(r, "# corralAlertValue."), 32);
        HAS(r, "varbind: 1.3.6.1.4.1.32473.1.9.1.2.32 s \"v29=x\" # corralAlertValue.32\n");
        free(r);
        /* and at most 16 KiB of them: 15 values of 1 KiB */
        for (i = 0; i < 40; i++) {
            char big[2000];
            memset(big, 'y', sizeof(big) - 1);
            big[sizeof(big) - 1] = '\0';
            snprintf(name, sizeof(name), "v%d", i);
            set(many, name, big);
        }
        r = render("<snmp name=\"nms\" target=\"127.0.0.1:16299\" "
                   "community-env=\"TEST_SNMP_COMMUNITY\"/>",
                   &b);
        ck_assert_int_eq(count_of(r, "# corralAlertValue."), 2 + 15);
        free(r);
        msg_unref(many);
    }

    /* base-oid moves every object and notification */
    r = render(
        "<snmp name=\"nms\" target=\"127.0.0.1:16299\" community-env=\"TEST_SNMP_COMMUNITY\" "
        "base-oid=\"1.3.6.1.4.1.12345.7\"/>",
        &a);
    HAS(r, "o 1.3.6.1.4.1.12345.7.0.1 (corralAlert)");
    HAS(r, "varbind: 1.3.6.1.4.1.12345.7.1.1.0 s ");
    HAS(r, "varbind: 1.3.6.1.4.1.12345.7.1.9.1.2.2 s \"src_ip=192.0.2.7\"");
    free(r);
    msg_unref(m);
}
END_TEST

/* ---- delivery to snmptrapd ---- */

static const char *
v2c_conf(char *buf, size_t size, int port, const char *extra)
{
    snprintf(buf, size,
             "<snmp name=\"nms\" target=\"udp:127.0.0.1:%d\" community-env=\"TEST_SNMP_COMMUNITY\" "
             "attempts=\"5\" %s/>",
             port, extra);
    return buf;
}

START_TEST(test_v2c_trap)
{
    struct harness h;
    struct trapd t;
    struct buf err = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "major", m, 0};
    struct outcome o;
    struct record r;
    char conf[1024], *log;

    NEED_SNMPTRAPD();
    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    trapd_start(&t, 0, NULL);
    harness_init(&h);
    ck_assert_ptr_nonnull(harness_open(&h, v2c_conf(conf, sizeof(conf), t.port, ""), &err));
    deliver(&h, &a, &o);
    ck_assert(o.called); /* a trap is done as soon as it is sent */
    ck_assert_int_eq(o.r, DELIVER_OK);
    a.severity = "clear";
    deliver(&h, &a, &o);
    ck_assert_int_eq(o.r, DELIVER_OK);
    log = trapd_wait(&t, 2);
    parse_record(log, 0, &r);
    ck_assert_str_eq(r.head, "TRAP2, SNMP v2c, community public");
    expect_sample(&r, BASE ".0.1", "ssh-brute/web1", "5");
    record_free(&r);
    /* the clear pairs with the alert by the same id */
    parse_record(log, 1, &r);
    expect_sample(&r, BASE ".0.2", "ssh-brute/web1", "1");
    record_free(&r);
    free(log);
    harness_close(&h);
    trapd_stop(&t);
    msg_unref(m);
    buf_free(&err);
}
END_TEST

START_TEST(test_v2c_inform)
{
    struct harness h;
    struct trapd t;
    struct buf err = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "minor", m, 0};
    struct outcome o[20];
    struct record r;
    char conf[1024], *log;
    int i;

    NEED_SNMPTRAPD();
    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    trapd_start(&t, 0, NULL);
    harness_init(&h);
    ck_assert_ptr_nonnull(harness_open(
        &h, v2c_conf(conf, sizeof(conf), t.port, "inform=\"yes\" timeout=\"2s\""), &err));
    deliver(&h, &a, &o[0]);
    ck_assert(!o[0].called); /* done only once acknowledged */
    ul_run_until(&h.loop, ul_flag_set, &o[0].called, 10);
    ck_assert_msg(o[0].called && o[0].r == DELIVER_OK, "inform: %d %s", o[0].r, o[0].reason);
    log = trapd_wait(&t, 1);
    parse_record(log, 0, &r);
    ck_assert_str_eq(r.head, "INFORM, SNMP v2c, community public");
    expect_sample(&r, BASE ".0.1", "ssh-brute/web1", "4");
    record_free(&r);
    free(log);

    /* many at once: each acknowledged on its own */
    for (i = 0; i < 20; i++) deliver(&h, &a, &o[i]);
    for (i = 0; i < 20; i++) {
        ul_run_until(&h.loop, ul_flag_set, &o[i].called, 10);
        ck_assert_msg(o[i].called && o[i].r == DELIVER_OK, "inform %d: %s", i, o[i].reason);
    }
    log = trapd_wait(&t, 21);
    ck_assert_int_eq(count_of(log, "BEGIN INFORM"), 21);
    free(log);
    harness_close(&h);
    trapd_stop(&t);
    msg_unref(m);
    buf_free(&err);
}
END_TEST

START_TEST(test_inform_nobody_listens)
{
    struct harness h;
    struct buf err = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "major", m, 0};
    struct outcome o;
    char conf[1024];
    int port, fd = ul_reserve_port(SOCK_DGRAM, &port); /* bound, never answers */

    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    harness_init(&h);
    ck_assert_ptr_nonnull(harness_open(
        &h, v2c_conf(conf, sizeof(conf), port, "inform=\"yes\" timeout=\"500ms\" retries=\"1\""),
        &err));
    deliver(&h, &a, &o);
    ck_assert(!o.called);
    ul_run_until(&h.loop, ul_flag_set, &o.called, 10);
    ck_assert(o.called);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    /* two tries of 0.5 s each */
    ck_assert_msg(o.at >= 0.9 && o.at < 3, "gave up after %.2fs: %s", o.at, o.reason);
    ck_assert_msg(strstr(o.reason, "no acknowledgement after 2 tries"), "reason: %s", o.reason);

    /* closing abandons what is in flight without calling done() */
    deliver(&h, &a, &o);
    harness_close(&h);
    ck_assert(!o.called);
    close(fd);
    msg_unref(m);
    buf_free(&err);
}
END_TEST

START_TEST(test_v3_trap)
{
    struct harness h, h2;
    struct trapd t;
    struct buf err = BUF_INIT, out = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "critical", m, 0};
    struct outcome o;
    struct record r;
    char conf[2048], auth_file[512], trapd_conf[1024], derived[80], *log, *p;
    int port, held;

    NEED_SNMPTRAPD();
    make_workdir();
    snprintf(auth_file, sizeof(auth_file), "%s/auth-password", workdir);
    ul_write_file(auth_file, "authpass1\nsecond line is ignored\n");
    setenv("TEST_SNMP_PRIV", "privpass1", 1);
    held = ul_reserve_port(SOCK_DGRAM, &port); /* ours until snmptrapd starts */

    /* executor 1: an explicit engine id, SHA-256 */
    harness_init(&h);
    snprintf(
        conf, sizeof(conf),
        "<snmp name=\"v3\" target=\"udp:127.0.0.1:%d\" version=\"3\" user=\"corral\" "
        "auth-protocol=\"SHA-256\" auth-password-file=\"%s\" priv-password-env=\"TEST_SNMP_PRIV\" "
        "engine-id=\"0x80007ed904636f7272616c2d74657374\"/>",
        port, auth_file);
    if (!harness_open(&h, conf, &err)) ck_abort_msg("open: %s", buf_str(&err));
    /* executor 2: the derived engine id, SHA (default) and AES (default) */
    harness_init(&h2);
    snprintf(conf, sizeof(conf),
             "<snmp name=\"v3-derived\" target=\"udp:127.0.0.1:%d\" version=\"3\" user=\"corral2\" "
             "auth-password-env=\"TEST_SNMP_PRIV\" priv-password-env=\"TEST_SNMP_PRIV\"/>",
             port);
    if (!harness_open(&h2, conf, &err)) ck_abort_msg("open: %s", buf_str(&err));
    h2.kind->render(h2.x, &a, &out);
    p = strstr(buf_str(&out), "engine-id: 0x");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sscanf(p, "engine-id: %79s", derived), 1);

    snprintf(
        trapd_conf, sizeof(trapd_conf),
        "createUser -e 0x80007ed904636f7272616c2d74657374 corral SHA-256 authpass1 AES privpass1\n"
        "createUser -e %s corral2 SHA privpass1 AES privpass1\n"
        "authUser log corral priv\n"
        "authUser log corral2 priv\n",
        derived);
    close(held);
    trapd_start(&t, port, trapd_conf);
    deliver(&h, &a, &o);
    ck_assert(o.called);
    ck_assert_int_eq(o.r, DELIVER_OK);
    a.severity = "clear";
    deliver(&h2, &a, &o);
    ck_assert_int_eq(o.r, DELIVER_OK);
    log = trapd_wait(&t, 2);
    parse_record(log, 0, &r);
    ck_assert_str_eq(r.head, "TRAP2, SNMP v3, user corral, context ");
    expect_sample(&r, BASE ".0.1", "ssh-brute/web1", "6");
    record_free(&r);
    parse_record(log, 1, &r);
    ck_assert_str_eq(r.head, "TRAP2, SNMP v3, user corral2, context ");
    expect_sample(&r, BASE ".0.2", "ssh-brute/web1", "1");
    record_free(&r);
    free(log);
    harness_close(&h);
    harness_close(&h2);
    trapd_stop(&t);
    msg_unref(m);
    buf_free(&err);
    buf_free(&out);
}
END_TEST

/*
 * A reload opens the new executor before the old one closes; both speak
 * for the same engine id and user.  The new passwords must win, and the
 * old executor's closing must not take the new one's keys away.
 */
START_TEST(test_v3_reload)
{
    struct harness h_old, h_new;
    struct trapd t;
    struct buf err = BUF_INIT, out = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "major", m, 0};
    struct outcome o;
    char conf[2048], trapd_conf[1024], engine[80], *log, *p;
    int port, held;
    bool closed = false;

    NEED_SNMPTRAPD();
    setenv("TEST_SNMP_OLD", "oldpassword", 1);
    setenv("TEST_SNMP_NEW", "newpassword", 1);
    held = ul_reserve_port(SOCK_DGRAM, &port); /* ours until snmptrapd starts */
    harness_init(&h_old);
    snprintf(conf, sizeof(conf),
             "<snmp name=\"nms\" target=\"udp:127.0.0.1:%d\" version=\"3\" user=\"corral\" "
             "auth-password-env=\"TEST_SNMP_OLD\" priv-password-env=\"TEST_SNMP_OLD\"/>",
             port);
    if (!harness_open(&h_old, conf, &err)) ck_abort_msg("open: %s", buf_str(&err));
    /* the new executor runs on the same loop, as in corrald */
    h_new = h_old;
    snprintf(conf, sizeof(conf),
             "<snmp name=\"nms\" target=\"udp:127.0.0.1:%d\" version=\"3\" user=\"corral\" "
             "auth-password-env=\"TEST_SNMP_NEW\" priv-password-env=\"TEST_SNMP_NEW\"/>",
             port);
    {
        char file[512];
        struct conf *c = load(conf, file, sizeof(file));
        h_new.x = h_new.kind->open(&h_old.loop, &c->executors[0], file, &err);
        conf_free(c);
        ck_assert_ptr_nonnull(h_new.x);
    }
    h_new.kind->render(h_new.x, &a, &out);
    p = strstr(buf_str(&out), "engine-id: 0x");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sscanf(p, "engine-id: %79s", engine), 1);
    snprintf(trapd_conf, sizeof(trapd_conf),
             "createUser -e %s corral SHA newpassword AES newpassword\nauthUser log corral priv\n",
             engine);
    close(held);
    trapd_start(&t, port, trapd_conf);
    h_old.kind->close(h_old.x, close_cb, &closed);
    ul_run_until(&h_old.loop, ul_flag_set, &closed, 10);
    ck_assert(closed);
    h_old.x = NULL;
    deliver(&h_new, &a, &o);
    ck_assert_int_eq(o.r, DELIVER_OK);
    log = trapd_wait(&t, 1);
    ck_assert_msg(count_of(log, "BEGIN TRAP2, SNMP v3, user corral") == 1, "%s", log);
    free(log);
    closed = false;
    h_new.kind->close(h_new.x, close_cb, &closed);
    ul_run_until(&h_old.loop, ul_flag_set, &closed, 10);
    h_old.x = NULL;
    harness_close(&h_old);
    trapd_stop(&t);
    msg_unref(m);
    buf_free(&err);
    buf_free(&out);
}
END_TEST

START_TEST(test_v3_inform)
{
    struct harness h;
    struct trapd t;
    struct buf err = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "warning", m, 0};
    struct outcome o[5];
    int silent, fd = ul_reserve_port(SOCK_DGRAM, &silent); /* bound, never answers */
    struct record r;
    char conf[2048], *log;
    int i;

    NEED_SNMPTRAPD();
    setenv("TEST_SNMP_AUTH", "authpass1", 1);
    setenv("TEST_SNMP_PRIV", "privpass1", 1);
    /* the receiver is the authoritative engine: a user of its own engine id */
    trapd_start(&t, 0,
                "createUser corral SHA-512 authpass1 AES privpass1\nauthUser log corral priv\n");
    harness_init(&h);
    snprintf(conf, sizeof(conf),
             "<snmp name=\"v3i\" target=\"udp:127.0.0.1:%d\" version=\"3\" inform=\"yes\" "
             "user=\"corral\" auth-protocol=\"SHA-512\" auth-password-env=\"TEST_SNMP_AUTH\" "
             "priv-password-env=\"TEST_SNMP_PRIV\" timeout=\"2s\"/>",
             t.port);
    if (!harness_open(&h, conf, &err)) ck_abort_msg("open: %s", buf_str(&err));
    /* these wait for the engine id discovery, then go together */
    for (i = 0; i < 5; i++) deliver(&h, &a, &o[i]);
    for (i = 0; i < 5; i++) {
        ul_run_until(&h.loop, ul_flag_set, &o[i].called, 10);
        ck_assert_msg(o[i].called && o[i].r == DELIVER_OK, "inform %d: %d %s", i, o[i].r,
                      o[i].reason);
    }
    deliver(&h, &a, &o[0]);
    ul_run_until(&h.loop, ul_flag_set, &o[0].called, 10);
    ck_assert_msg(o[0].r == DELIVER_OK, "%s", o[0].reason);
    log = trapd_wait(&t, 6);
    ck_assert_int_eq(count_of(log, "BEGIN INFORM, SNMP v3, user corral"), 6);
    parse_record(log, 0, &r);
    expect_sample(&r, BASE ".0.1", "ssh-brute/web1", "3");
    record_free(&r);
    free(log);
    harness_close(&h);
    trapd_stop(&t);

    /* the wrong password: the receiver refuses, the alert is retried later */
    setenv("TEST_SNMP_AUTH", "wrongpass", 1);
    trapd_start(&t, 0,
                "createUser corral SHA-512 authpass1 AES privpass1\nauthUser log corral priv\n");
    harness_init(&h);
    snprintf(conf, sizeof(conf),
             "<snmp name=\"v3i\" target=\"udp:127.0.0.1:%d\" version=\"3\" inform=\"yes\" "
             "user=\"corral\" auth-protocol=\"SHA-512\" auth-password-env=\"TEST_SNMP_AUTH\" "
             "priv-password-env=\"TEST_SNMP_PRIV\" timeout=\"500ms\" retries=\"1\"/>",
             t.port);
    if (!harness_open(&h, conf, &err)) ck_abort_msg("open: %s", buf_str(&err));
    deliver(&h, &a, &o[0]);
    ul_run_until(&h.loop, ul_flag_set, &o[0].called, 10);
    ck_assert(o[0].called);
    ck_assert_int_eq(o[0].r, DELIVER_RETRY);
    harness_close(&h);
    trapd_stop(&t);

    /* nobody answers the discovery */
    harness_init(&h);
    snprintf(conf, sizeof(conf),
             "<snmp name=\"v3i\" target=\"udp:127.0.0.1:%d\" version=\"3\" inform=\"yes\" "
             "user=\"corral\" auth-password-env=\"TEST_SNMP_AUTH\" "
             "priv-password-env=\"TEST_SNMP_PRIV\" timeout=\"300ms\" retries=\"0\"/>",
             silent);
    if (!harness_open(&h, conf, &err)) ck_abort_msg("open: %s", buf_str(&err));
    deliver(&h, &a, &o[0]);
    ul_run_until(&h.loop, ul_flag_set, &o[0].called, 10);
    ck_assert(o[0].called);
    ck_assert_int_eq(o[0].r, DELIVER_RETRY);
    ck_assert_msg(strstr(o[0].reason, "engine discovery"), "reason: %s", o[0].reason);
    harness_close(&h);
    close(fd);
    msg_unref(m);
    buf_free(&err);
}
END_TEST

/* Control characters, shell metacharacters, broken UTF-8 and 100 KB values. */
START_TEST(test_hostile_values)
{
    struct harness h;
    struct trapd t;
    struct buf err = BUF_INIT, big = BUF_INIT, want = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "id\r\nwith newline", "major", m, 0};
    struct outcome o;
    struct record r;
    const struct vbind *v;
    char conf[1024], *log;
    size_t i;

    NEED_SNMPTRAPD();
    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    set(m, "MESSAGE", "line1\r\nline2\tend $(touch /tmp/pwned) `id` | & ; > < ' \" \\ *\x1b[31m");
    set(m, "HOST", "bad\xff\xfe utf8 \xc3\x28 c1\xc2\x85!");
    for (i = 0; i < 100 * 1024; i++) buf_putc(&big, (char)('a' + i % 26));
    set(m, "PROGRAM", big.p);
    buf_reset(&big);
    buf_putc(&big, 'x');
    for (i = 0; i < 50 * 1024; i++) buf_puts(&big, "\xc3\xa9"); /* é */
    set(m, "big", big.p);

    trapd_start(&t, 0, NULL);
    harness_init(&h);
    ck_assert_ptr_nonnull(
        harness_open(&h, v2c_conf(conf, sizeof(conf), t.port, "inform=\"yes\""), &err));
    deliver(&h, &a, &o);
    ul_run_until(&h.loop, ul_flag_set, &o.called, 10);
    ck_assert_msg(o.called && o.r == DELIVER_OK, "%s", o.reason);
    log = trapd_wait(&t, 1);
    parse_record(log, 0, &r);
    /* control characters become spaces; everything else arrives as it was */
    expect_str(&r, BASE ".1.1.0",
               "line1  line2 end $(touch /tmp/pwned) `id` | & ; > < ' \" \\ * [31m");
    expect_str(&r, BASE ".1.2.0", "bad?? utf8 ?( c1 !");
    expect_str(&r, BASE ".1.7.0", "id  with newline");
    /* 100 KB: cut to 1024 octets, the last 14 the marker */
    buf_reset(&want);
    for (i = 0; i < 1024 - 14; i++) buf_putc(&want, (char)('a' + i % 26));
    buf_puts(&want, "...[truncated]");
    expect_vb(&r, BASE ".1.3.0", want.p, want.len);
    /* cut at a character boundary: "big=x" and 502 whole é, then the marker */
    v = find_vb(&r, BASE ".1.9.1.2.3");
    ck_assert_uint_eq(v->val.len, 5 + 1004 + 14);
    buf_reset(&want);
    buf_puts(&want, "big=x");
    for (i = 0; i < 502; i++) buf_puts(&want, "\xc3\xa9");
    buf_puts(&want, "...[truncated]");
    expect_vb(&r, BASE ".1.9.1.2.3", want.p, want.len);
    record_free(&r);
    free(log);
    harness_close(&h);
    trapd_stop(&t);
    msg_unref(m);
    buf_free(&err);
    buf_free(&big);
    buf_free(&want);
}
END_TEST

/* The biggest notification the configuration allows still fits in one datagram. */
START_TEST(test_biggest)
{
    struct harness h;
    struct trapd t;
    struct buf err = BUF_INIT, conf = BUF_INIT, big = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "major", m, 0};
    struct outcome o;
    struct record r;
    char name[32], *log;
    int i;

    NEED_SNMPTRAPD();
    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    for (i = 0; i < 4096; i++) buf_puts(&big, "0123456789");
    set(m, "MESSAGE", big.p);
    for (i = 0; i < 40; i++) {
        snprintf(name, sizeof(name), "value%d", i);
        set(m, name, big.p);
    }
    trapd_start(&t, 0, NULL);
    buf_printf(&conf,
               "<snmp name=\"nms\" target=\"udp:127.0.0.1:%d\" inform=\"yes\" "
               "community-env=\"TEST_SNMP_COMMUNITY\">\n",
               t.port);
    for (i = 0; i < 32; i++)
        buf_printf(&conf, "<varbind oid=\"1.3.6.1.4.1.99999.%d\" value=\"${MESSAGE}\"/>\n", i);
    buf_puts(&conf, "</snmp>");
    harness_init(&h);
    if (!harness_open(&h, buf_str(&conf), &err)) ck_abort_msg("open: %s", buf_str(&err));
    deliver(&h, &a, &o);
    ul_run_until(&h.loop, ul_flag_set, &o.called, 10);
    ck_assert_msg(o.called && o.r == DELIVER_OK, "%d %s", o.r, o.reason);
    log = trapd_wait(&t, 1);
    parse_record(log, 0, &r);
    ck_assert_uint_eq(r.nvb, 10 + 2 + 15 + 32);
    record_free(&r);
    free(log);
    harness_close(&h);
    trapd_stop(&t);
    msg_unref(m);
    buf_free(&err);
    buf_free(&conf);
    buf_free(&big);
}
END_TEST

/* A receiver that comes back: the inform that timed out goes through on the next attempt. */
START_TEST(test_receiver_restart)
{
    struct harness h;
    struct trapd t;
    struct buf err = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "major", m, 0};
    struct outcome o;
    char conf[1024], *log;
    int port, held = ul_reserve_port(SOCK_DGRAM, &port); /* bound, never answers */

    NEED_SNMPTRAPD();
    setenv("TEST_SNMP_COMMUNITY", "public", 1);
    harness_init(&h);
    ck_assert_ptr_nonnull(harness_open(
        &h, v2c_conf(conf, sizeof(conf), port, "inform=\"yes\" timeout=\"300ms\" retries=\"0\""),
        &err));
    deliver(&h, &a, &o);
    ul_run_until(&h.loop, ul_flag_set, &o.called, 10);
    ck_assert_int_eq(o.r, DELIVER_RETRY);
    close(held);
    trapd_start(&t, port, NULL);
    deliver(&h, &a, &o);
    ul_run_until(&h.loop, ul_flag_set, &o.called, 10);
    ck_assert_msg(o.r == DELIVER_OK, "%s", o.reason);
    log = trapd_wait(&t, 1);
    ck_assert_int_eq(count_of(log, "BEGIN INFORM"), 1);
    free(log);
    harness_close(&h);
    trapd_stop(&t);
    msg_unref(m);
    buf_free(&err);
}
END_TEST

/*
 * The receiver of SNMPv3 informs starts again with a new engine id (this
 * snmptrapd reads no persistent file): the inform sent to the old engine
 * gets no answer, the next attempt discovers the new engine and gets
 * through, without reopening the executor.
 */
START_TEST(test_v3_receiver_restart)
{
    struct harness h;
    struct trapd t;
    struct buf err = BUF_INIT;
    struct msg *m = sample_msg();
    struct alert a = {1, "ssh-brute/web1", "major", m, 0};
    struct outcome o;
    char conf[1024], *log;
    const char *user =
        "createUser corral SHA-256 authpass1 AES privpass1\nauthUser log corral priv\n";
    int port, i;

    NEED_SNMPTRAPD();
    setenv("TEST_SNMP_AUTH", "authpass1", 1);
    setenv("TEST_SNMP_PRIV", "privpass1", 1);
    trapd_start(&t, 0, user);
    port = t.port;
    harness_init(&h);
    snprintf(conf, sizeof(conf),
             "<snmp name=\"v3i\" target=\"udp:127.0.0.1:%d\" version=\"3\" inform=\"yes\" "
             "user=\"corral\" auth-protocol=\"SHA-256\" auth-password-env=\"TEST_SNMP_AUTH\" "
             "priv-password-env=\"TEST_SNMP_PRIV\" timeout=\"1s\" retries=\"0\"/>",
             port);
    if (!harness_open(&h, conf, &err)) ck_abort_msg("open: %s", buf_str(&err));
    deliver(&h, &a, &o);
    ul_run_until(&h.loop, ul_flag_set, &o.called, 10);
    ck_assert_msg(o.r == DELIVER_OK, "%s", o.reason);
    free(trapd_wait(&t, 1));
    trapd_stop(&t);

    trapd_start(&t, port, user);
    /* at most one failed attempt, which says why */
    for (i = 0; i < 2; i++) {
        deliver(&h, &a, &o);
        ul_run_until(&h.loop, ul_flag_set, &o.called, 10);
        ck_assert(o.called);
        if (o.r == DELIVER_OK) break;
        ck_assert_msg(strstr(o.reason, "(no answer)") || strstr(o.reason, "report"), "reason: %s",
                      o.reason);
    }
    ck_assert_msg(o.r == DELIVER_OK, "after the receiver's restart: %s", o.reason);
    log = trapd_wait(&t, 1);
    ck_assert_int_eq(count_of(log, "BEGIN INFORM, SNMP v3, user corral"), 1);
    free(log);
    harness_close(&h);
    trapd_stop(&t);
    msg_unref(m);
    buf_free(&err);
}
END_TEST

static void
remove_workdir(void)
{
    char cmd[600];

    if (!workdir[0] || getenv("KEEP_WORK")) return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", workdir);
    workdir[0] = '\0';
}

static void
teardown(void)
{
    remove_workdir();
}

static Suite *
snmp_suite(void)
{
    Suite *s = suite_create("snmp");
    TCase *tc = tcase_create("config");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_config_errors);
    tcase_add_test(tc, test_config_accepts);
    tcase_add_test(tc, test_render);
    tcase_add_test(tc, test_render_overrides);
    suite_add_tcase(s, tc);
    tc = tcase_create("delivery");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_v2c_trap);
    tcase_add_test(tc, test_v2c_inform);
    tcase_add_test(tc, test_inform_nobody_listens);
    tcase_add_test(tc, test_v3_trap);
    tcase_add_test(tc, test_v3_reload);
    tcase_add_test(tc, test_v3_inform);
    tcase_add_test(tc, test_hostile_values);
    tcase_add_test(tc, test_biggest);
    tcase_add_test(tc, test_receiver_restart);
    tcase_add_test(tc, test_v3_receiver_restart);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    if (!have_snmptrapd())
        fprintf(stderr, "test_snmp: snmptrapd is not installed: the delivery tests are skipped\n");
    return unit_run(snmp_suite());
}
