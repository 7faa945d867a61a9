/*
 * Unit tests of agent/alerting/topology.c: the topology file, its errors with the
 * file and line, and what a host sits behind (directly, through the hosts
 * it depends on, on a port or on a device as a whole).
 */
#include "agent/alerting/topology.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct topology *
parse(const char *text, struct buf *err)
{
    buf_reset(err);
    return topology_parse("topo", text, strlen(text), err);
}

/* The error of text, which must be refused. */
static void
refused(const char *text, const char *want)
{
    struct buf err = BUF_INIT;
    struct topology *t = parse(text, &err);

    ck_assert_msg(t == NULL, "accepted: %s", text);
    ck_assert_msg(strstr(buf_str(&err), want), "error \"%s\", want \"%s\"", buf_str(&err), want);
    buf_free(&err);
}

static bool
behind(const struct topology *t, const char *host, const char *up, const char *port)
{
    const char *ports[1] = {port};
    size_t plens[1] = {port ? strlen(port) : 0};

    return topology_behind(t, host, strlen(host), up, strlen(up), ports, plens, port ? 1 : 0);
}

static const char *const FILE_TEXT = "# host   upstream  port\n"
                                     "web1     sw1       ge-0/0/1\n"
                                     "web2\tsw1\tge-0/0/1   # tabs work too\n"
                                     "\n"
                                     "db1      sw1       ge-0/0/2\n"
                                     "sw1      core1     xe-1/0/0\n"
                                     "app1     db1\n"
                                     "nas1     sw2\n";

START_TEST(test_behind)
{
    struct buf err = BUF_INIT;
    struct topology *t = parse(FILE_TEXT, &err);

    ck_assert_msg(t != NULL, "%s", buf_str(&err));
    ck_assert_uint_eq(topology_links(t), 6);
    /* directly, on the port */
    ck_assert(behind(t, "web1", "sw1", "ge-0/0/1"));
    ck_assert(behind(t, "web2", "sw1", "ge-0/0/1"));
    ck_assert(!behind(t, "web1", "sw1", "ge-0/0/2"));
    ck_assert(behind(t, "db1", "sw1", "ge-0/0/2"));
    /* a source without the port label names no port: only port-less links hold */
    ck_assert(!behind(t, "web1", "sw1", NULL));
    /* a link without a port: any port of the upstream, or none */
    ck_assert(behind(t, "nas1", "sw2", "ge-0/0/9"));
    ck_assert(behind(t, "nas1", "sw2", NULL));
    /* transitively: through a host it depends on, and through the switch's uplink */
    ck_assert(behind(t, "app1", "db1", NULL));
    ck_assert(behind(t, "app1", "sw1", "ge-0/0/2"));
    ck_assert(!behind(t, "app1", "sw1", "ge-0/0/1"));
    ck_assert(behind(t, "web1", "core1", "xe-1/0/0"));
    ck_assert(behind(t, "app1", "core1", "xe-1/0/0"));
    ck_assert(!behind(t, "web1", "core1", "xe-1/0/1"));
    /* nothing is behind itself or its own hosts; unknown hosts are behind nothing */
    ck_assert(!behind(t, "sw1", "web1", NULL));
    ck_assert(!behind(t, "sw1", "sw1", "ge-0/0/1"));
    ck_assert(!behind(t, "web9", "sw1", "ge-0/0/1"));
    /* names are compared whole: a prefix is another host */
    ck_assert(!behind(t, "web", "sw1", "ge-0/0/1"));
    ck_assert(!behind(t, "web11", "sw1", "ge-0/0/1"));
    ck_assert(!behind(t, "web1", "sw", "ge-0/0/1"));
    /* any of several port labels' values */
    {
        const char *ports[2] = {"3", "ge-0/0/1"};
        size_t plens[2] = {1, 8};
        ck_assert(topology_behind(t, "web1", 4, "sw1", 3, ports, plens, 2));
    }
    topology_free(t);
    /* an empty file, or one of comments only, is an empty topology */
    t = parse("", &err);
    ck_assert(t != NULL && topology_links(t) == 0);
    ck_assert(!behind(t, "web1", "sw1", NULL));
    topology_free(t);
    t = parse("# nothing yet\n\n   \n", &err);
    ck_assert(t != NULL && topology_links(t) == 0);
    topology_free(t);
    ck_assert(!topology_behind(NULL, "a", 1, "b", 1, NULL, NULL, 0));
    buf_free(&err);
}
END_TEST

START_TEST(test_errors)
{
    refused("web1 sw1 ge-0/0/1\nweb2\n", "topo:2: expected HOST UPSTREAM [PORT], got 1 field");
    refused("web1 sw1 ge-0/0/1 extra\n", "topo:1: expected HOST UPSTREAM [PORT], got 4 fields");
    refused("\n\nsw1 sw1 ge-0/0/1\n", "topo:3: sw1 behind itself");
    refused("a b\nb c\nc a\n", "closes a cycle");
    refused("a b\nb\x01 c\n", "topo:2: control character 0x01");
    {
        /* every bad line is reported, not only the first */
        struct buf err = BUF_INIT;
        ck_assert(parse("x\nok up\ny\n", &err) == NULL);
        ck_assert(strstr(buf_str(&err), "topo:1:") && strstr(buf_str(&err), "topo:3:"));
        buf_free(&err);
    }
    {
        /* the line of the link that closes the cycle */
        struct buf err = BUF_INIT;
        ck_assert(parse("# ring\na b\nb c p1\nc a\n", &err) == NULL);
        ck_assert_msg(strstr(buf_str(&err), "topo:2:") || strstr(buf_str(&err), "topo:3:") ||
                          strstr(buf_str(&err), "topo:4:"),
                      "%s", buf_str(&err));
        ck_assert(strchr(buf_str(&err), '\n') == buf_str(&err) + err.len - 1); /* one line */
        buf_free(&err);
    }
    {
        /* a chain of TOPOLOGY_MAX_DEPTH links is fine, one more is not */
        struct buf text = BUF_INIT, err = BUF_INIT;
        struct topology *t;
        int i;
        for (i = 0; i < TOPOLOGY_MAX_DEPTH; i++) buf_printf(&text, "h%d h%d\n", i, i + 1);
        t = topology_parse("chain", buf_str(&text), text.len, &err);
        ck_assert_msg(t != NULL, "%s", buf_str(&err));
        ck_assert(behind(t, "h0", "h16", NULL));
        topology_free(t);
        buf_printf(&text, "h%d h%d\n", i, i + 1);
        ck_assert(topology_parse("chain", buf_str(&text), text.len, &err) == NULL);
        ck_assert_msg(strstr(buf_str(&err), "hops behind"), "%s", buf_str(&err));
        buf_free(&text);
        buf_free(&err);
    }
    {
        /* a line longer than the limit */
        struct buf text = BUF_INIT;
        size_t i;
        buf_puts(&text, "ok up\nweb1 ");
        for (i = 0; i < TOPOLOGY_MAX_LINE; i++) buf_puts(&text, "x");
        buf_puts(&text, "\n");
        refused(buf_str(&text), "topo:2: line longer than");
        buf_free(&text);
    }
}
END_TEST

START_TEST(test_load)
{
    char path[] = "/tmp/test_topology.XXXXXX";
    int fd = mkstemp(path);
    struct buf err = BUF_INIT, want = BUF_INIT;
    struct topology *t;

    ck_assert(fd >= 0);
    ck_assert(write(fd, FILE_TEXT, strlen(FILE_TEXT)) == (ssize_t)strlen(FILE_TEXT));
    ck_assert(write(fd, "bad\n", 4) == 4);
    close(fd);
    t = topology_load(path, &err);
    ck_assert(t == NULL);
    buf_printf(&want, "%s:9: expected HOST UPSTREAM [PORT]", path);
    ck_assert_msg(strstr(buf_str(&err), buf_str(&want)), "%s", buf_str(&err));
    /* without the bad line it loads */
    ck_assert(truncate(path, (off_t)strlen(FILE_TEXT)) == 0);
    buf_reset(&err);
    t = topology_load(path, &err);
    ck_assert_msg(t != NULL, "%s", buf_str(&err));
    ck_assert_uint_eq(topology_links(t), 6);
    topology_free(t);
    unlink(path);
    /* a missing file: its name and why */
    buf_reset(&err);
    ck_assert(topology_load(path, &err) == NULL);
    ck_assert_msg(strstr(buf_str(&err), "No such file"), "%s", buf_str(&err));
    buf_free(&err);
    buf_free(&want);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("topology");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_behind);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_load);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
