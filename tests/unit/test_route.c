/*
 * test_route: the routing tree (agent/alerting/route.c), compiled from <routes> of a
 * configuration read by the real loader: each matcher (class, rule, tag,
 * filter), all matchers of a route at once, nested routes refining their
 * parent, continue="yes", the messages= selection, each executor getting a
 * message once, and executor names that do not exist.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/conf/conf.h"
#include "agent/alerting/route.h"
#include "engine/buf.h"
#include "engine/msg.h"
#include "engine/pdb.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

/* The executors every test configures, in the order route_new() numbers them. */
static const char *const names[] = {"a", "b", "c", "d"};

static char workdir[256];

static void
setup(void)
{
    char tmpl[] = "/tmp/corral-test-route-XXXXXX";
    char rules[300];

    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(workdir, sizeof(workdir), "%s", tmpl);
    snprintf(rules, sizeof(rules), "%s/rules.xml", workdir);
    ul_write_file(rules, "<patterndb version=\"4\" pub_date=\"2024-01-01\"></patterndb>\n");
}

static void
teardown(void)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Loads a configuration with executors a..d and ROUTES inside <routes> (from line 4 on). */
static struct conf *
load(const char *routes)
{
    static int count;
    char file[300];
    struct buf text = BUF_INIT, err = BUF_INIT;
    struct conf *c;

    snprintf(file, sizeof(file), "%s/corrald%d.conf", workdir, count++);
    buf_printf(&text,
               "<?xml version=\"1.0\"?>\n"
               "<corrald><rules path=\"%s/rules.xml\"/><executors>"
               "<exec name=\"a\" program=\"/bin/true\"/><exec name=\"b\" program=\"/bin/true\"/>"
               "<exec name=\"c\" program=\"/bin/true\"/><exec name=\"d\" program=\"/bin/true\"/>"
               "</executors>\n<routes>\n%s\n</routes></corrald>\n",
               workdir, routes);
    ul_write_file(file, buf_str(&text));
    c = conf_load(file, NULL, &err);
    ck_assert_msg(c != NULL, "%s", buf_str(&err));
    buf_free(&text);
    buf_free(&err);
    return c;
}

static struct route_table *
table(const struct conf *c)
{
    struct buf err = BUF_INIT;
    struct route_table *r = route_new(c, names, 4, &err);

    ck_assert_msg(r != NULL, "%s", buf_str(&err));
    ck_assert_uint_eq(err.len, 0);
    buf_free(&err);
    return r;
}

/* What route_message chose: a bit per executor index, and how many calls in all. */
struct chosen {
    unsigned mask;
    int calls;
};

static void
choose(size_t index, void *arg)
{
    struct chosen *ch = arg;

    ck_assert_uint_lt(index, 4);
    ch->mask |= 1u << index;
    ch->calls++;
}

#define A 1u
#define B 2u
#define C 4u
#define D 8u

/* Routes m and returns the executors chosen; each must be chosen at most once. */
static unsigned
route(struct route_table *r, const struct msg *m, const struct pdb_action *action)
{
    struct chosen ch = {0, 0};

    route_message(r, m, action, choose, &ch);
    ck_assert_int_eq(ch.calls, __builtin_popcount(ch.mask));
    return ch.mask;
}

/*
 * A message: generated or not, with class, rule id, a tag and host when not
 * NULL.  Freed by the caller with msg_unref.
 */
static struct msg *
mk(bool generated, const char *class, const char *rule, const char *tag, const char *host)
{
    struct msg *m = msg_new();

    if (generated) msg_set_flags(m, MSG_F_GENERATED);
    if (class) msg_set(m, NV_CLASS, class, strlen(class));
    if (rule) msg_set(m, NV_RULE_ID, rule, strlen(rule));
    if (tag) msg_tag_set(m, tag_intern(tag, strlen(tag)));
    if (host) msg_set(m, NV_HOST, host, strlen(host));
    msg_set(m, NV_MESSAGE, "text", 4);
    return m;
}

/* Routes one message made by mk() and frees it. */
static unsigned
route_mk(struct route_table *r, bool generated, const char *class, const char *rule,
         const char *tag, const char *host)
{
    struct msg *m = mk(generated, class, rule, tag, host);
    unsigned mask = route(r, m, NULL);

    msg_unref(m);
    return mask;
}

START_TEST(test_matchers)
{
    struct conf *c = load("<route class=\"security\" to=\"a\"/>\n"
                          "<route rule=\"r.disk\" to=\"b\"/>\n"
                          "<route tag=\"urgent\" to=\"c\"/>\n"
                          "<route filter='\"${HOST}\" eq \"db1\"' to=\"d\"/>");
    struct route_table *r = table(c);

    ck_assert_uint_eq(route_mk(r, true, "security", NULL, NULL, NULL), A);
    ck_assert_uint_eq(route_mk(r, true, "other", "r.disk", NULL, NULL), B);
    ck_assert_uint_eq(route_mk(r, true, NULL, NULL, "urgent", NULL), C);
    ck_assert_uint_eq(route_mk(r, true, NULL, NULL, NULL, "db1"), D);
    /* the first route that matches wins */
    ck_assert_uint_eq(route_mk(r, true, "security", "r.disk", "urgent", "db1"), A);
    /* near misses */
    ck_assert_uint_eq(route_mk(r, true, "securityx", "r.dis", "urgen", "db2"), 0);
    ck_assert_uint_eq(route_mk(r, true, NULL, NULL, NULL, NULL), 0);
    ck_assert_uint_eq(route_unknown(r), 0);
    route_free(r);
    conf_free(c);
}
END_TEST

START_TEST(test_all_must_hold)
{
    struct conf *c = load("<route class=\"security\" rule=\"r.ssh\" tag=\"urgent\" "
                          "filter='\"${HOST}\" eq \"web1\"' to=\"a,b\"/>");
    struct route_table *r = table(c);

    ck_assert_uint_eq(route_mk(r, true, "security", "r.ssh", "urgent", "web1"), A | B);
    ck_assert_uint_eq(route_mk(r, true, NULL, "r.ssh", "urgent", "web1"), 0);
    ck_assert_uint_eq(route_mk(r, true, "security", NULL, "urgent", "web1"), 0);
    ck_assert_uint_eq(route_mk(r, true, "security", "r.ssh", NULL, "web1"), 0);
    ck_assert_uint_eq(route_mk(r, true, "security", "r.ssh", "urgent", "web2"), 0);
    route_free(r);
    conf_free(c);
}
END_TEST

/* A matching child replaces its parent's executors; a child without to= inherits them. */
START_TEST(test_nested)
{
    struct conf *c = load("<route class=\"security\" to=\"a\">\n"
                          "  <route rule=\"r.ssh\" to=\"b\"/>\n"
                          "  <route tag=\"urgent\"/>\n"
                          "  <route tag=\"late\" to=\"c\" continue=\"yes\"/>\n"
                          "  <route tag=\"late\" to=\"d\"/>\n"
                          "</route>\n"
                          "<route to=\"c\"/>");
    struct route_table *r = table(c);

    ck_assert_uint_eq(route_mk(r, true, "security", NULL, NULL, NULL), A);
    ck_assert_uint_eq(route_mk(r, true, "security", "r.ssh", NULL, NULL), B);
    ck_assert_uint_eq(route_mk(r, true, "security", NULL, "urgent", NULL), A);
    /* the first child that matches wins, as at the top */
    ck_assert_uint_eq(route_mk(r, true, "security", "r.ssh", "urgent", NULL), B);
    ck_assert_uint_eq(route_mk(r, true, "security", NULL, "late", NULL), C | D);
    /* children refine: without the parent's class they never match */
    ck_assert_uint_eq(route_mk(r, true, "other", "r.ssh", "urgent", NULL), C);
    route_free(r);
    conf_free(c);
}
END_TEST

START_TEST(test_continue)
{
    struct conf *c = load("<route class=\"x\" to=\"a\" continue=\"yes\"/>\n"
                          "<route class=\"y\" to=\"d\" continue=\"yes\"/>\n"
                          "<route class=\"x\" to=\"a,b\"/>\n"
                          "<route class=\"x\" to=\"c\"/>\n"
                          "<route to=\"d\" continue=\"no\"/>");
    struct route_table *r = table(c);

    /* a reached twice is called once; the route after the one without continue is not tried */
    ck_assert_uint_eq(route_mk(r, true, "x", NULL, NULL, NULL), A | B);
    /* y: d from the first route, and again from the catch-all, once */
    ck_assert_uint_eq(route_mk(r, true, "y", NULL, NULL, NULL), D);
    ck_assert_uint_eq(route_mk(r, true, "z", NULL, NULL, NULL), D);
    route_free(r);
    conf_free(c);
}
END_TEST

START_TEST(test_messages)
{
    struct conf *c = load("<route tag=\"g\" to=\"a\"/>\n"
                          "<route tag=\"c\" messages=\"classified\" to=\"b\"/>\n"
                          "<route tag=\"all\" messages=\"all\" to=\"c\"/>\n"
                          "<route tag=\"gen\" messages=\"generated\" to=\"d\"/>");
    struct route_table *r = table(c);

    /* default and messages="generated": generated messages only */
    ck_assert_uint_eq(route_mk(r, true, "k", NULL, "g", NULL), A);
    ck_assert_uint_eq(route_mk(r, false, "k", NULL, "g", NULL), 0);
    ck_assert_uint_eq(route_mk(r, true, "k", NULL, "gen", NULL), D);
    ck_assert_uint_eq(route_mk(r, false, "k", NULL, "gen", NULL), 0);
    /* classified: input messages a rule classified, not unknown ones, not generated ones */
    ck_assert_uint_eq(route_mk(r, false, "k", NULL, "c", NULL), B);
    ck_assert_uint_eq(route_mk(r, false, "unknown", NULL, "c", NULL), 0);
    ck_assert_uint_eq(route_mk(r, false, NULL, NULL, "c", NULL), 0);
    ck_assert_uint_eq(route_mk(r, true, "k", NULL, "c", NULL), 0);
    /* all: every message */
    ck_assert_uint_eq(route_mk(r, false, NULL, NULL, "all", NULL), C);
    ck_assert_uint_eq(route_mk(r, false, "unknown", NULL, "all", NULL), C);
    ck_assert_uint_eq(route_mk(r, true, "k", NULL, "all", NULL), C);
    route_free(r);
    conf_free(c);
}
END_TEST

/* route="..." of the rule action: named executors get the message, once with the tree's. */
START_TEST(test_action_routes)
{
    struct conf *c = load("<route class=\"security\" to=\"a,c\"/>");
    struct route_table *r = table(c);
    char *routes[] = {"a", "nosuch", "b", "nosuch"};
    struct pdb_action action;
    struct msg *m = mk(true, "security", NULL, NULL, NULL);

    memset(&action, 0, sizeof(action));
    action.routes = routes;
    action.nroutes = 4;
    ck_assert_uint_eq(route(r, m, &action), A | B | C);
    ck_assert_uint_eq(route_unknown(r), 2);
    ck_assert_uint_eq(route(r, m, &action), A | B | C);
    ck_assert_uint_eq(route_unknown(r), 4);
    /* no action: the tree alone */
    ck_assert_uint_eq(route(r, m, NULL), A | C);
    ck_assert_uint_eq(route_unknown(r), 4);
    msg_unref(m);
    route_free(r);
    conf_free(c);
}
END_TEST

/* A rule action routing to an executor the configuration lacks is named with its file:line. */
START_TEST(test_check_actions)
{
    static const char xml[] =
        "<patterndb version=\"4\" pub_date=\"2024-01-01\">\n"
        "<ruleset name=\"r\" id=\"r\"><pattern>p</pattern><rules>\n"
        "<rule provider=\"t\" id=\"good\" class=\"system\"><patterns><pattern>a</pattern>"
        "</patterns><actions>\n"
        "<action route=\"a,b\"><message><values><value name=\"MESSAGE\">x</value></values>"
        "</message></action></actions></rule>\n"
        "<rule provider=\"t\" id=\"bad\" class=\"system\"><patterns><pattern>b</pattern>"
        "</patterns><actions>\n"
        "<action route=\"c,ops\"><message><values><value name=\"MESSAGE\">y</value></values>"
        "</message></action></actions></rule>\n"
        "</rules></ruleset></patterndb>\n";
    struct conf *c = load("");
    struct route_table *r = table(c);
    struct pdb *db = pdb_new();
    struct buf err = BUF_INIT;

    ck_assert_int_eq(pdb_load_memory(db, "mem.xml", xml, sizeof(xml) - 1), 0);
    ck_assert_int_eq(route_check_actions(r, db, &err), -1);
    ck_assert_str_eq(buf_str(&err), "mem.xml:6: rule bad: action routes to executor 'ops', which "
                                    "the configuration does not define\n");
    /* every action's routes resolve once "ops" is the fifth executor */
    buf_reset(&err);
    route_free(r);
    {
        static const char *const five[] = {"a", "b", "c", "d", "ops"};
        r = route_new(c, five, 5, &err);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(route_check_actions(r, db, &err), 0);
        ck_assert_uint_eq(err.len, 0);
    }
    pdb_free(db);
    route_free(r);
    buf_free(&err);
    conf_free(c);
}
END_TEST

START_TEST(test_unknown_executor)
{
    struct conf *c = load("<route class=\"x\" to=\"a\"/>\n<route to=\"b,d\"/>");
    struct buf err = BUF_INIT;
    char want[400];

    /* route_new resolves against the executors it is given, here a and c only */
    static const char *const few[] = {"a", "c"};
    ck_assert_ptr_null(route_new(c, few, 2, &err));
    snprintf(want, sizeof(want),
             "%s:5: route to unknown executor 'b'\n%s:5: route to unknown executor 'd'\n", c->file,
             c->file);
    ck_assert_str_eq(buf_str(&err), want);
    buf_free(&err);
    conf_free(c);
}
END_TEST

START_TEST(test_unknown_executor_in_file)
{
    char file[300];
    struct buf text = BUF_INIT, err = BUF_INIT;

    snprintf(file, sizeof(file), "%s/bad.conf", workdir);
    buf_printf(&text,
               "<?xml version=\"1.0\"?>\n<corrald>\n<rules path=\"%s/rules.xml\"/>\n"
               "<executors><exec name=\"a\" program=\"/bin/true\"/></executors>\n"
               "<routes>\n<route to=\"a\">\n<route to=\"zz\"/>\n</route>\n</routes>\n"
               "</corrald>\n",
               workdir);
    ul_write_file(file, buf_str(&text));
    ck_assert_ptr_null(conf_load(file, NULL, &err));
    buf_reset(&text);
    buf_printf(&text, "%s:7: route to unknown executor 'zz'\n", file);
    ck_assert_str_eq(buf_str(&err), buf_str(&text));
    buf_free(&text);
    buf_free(&err);
}
END_TEST

START_TEST(test_bad_filter)
{
    struct conf *c = load("<route filter='\"a\" =~ \"b\"' to=\"a\"/>");
    struct buf err = BUF_INIT;
    char want[400];

    ck_assert_ptr_null(route_new(c, names, 4, &err));
    snprintf(want, sizeof(want), "%s:4: bad route filter", c->file);
    ck_assert_msg(strncmp(buf_str(&err), want, strlen(want)) == 0, "%s", buf_str(&err));
    buf_free(&err);
    conf_free(c);
}
END_TEST

/* Without <routes>, only the rule action's route= counts. */
START_TEST(test_no_routes)
{
    struct conf *c = conf_default("rules");
    struct buf err = BUF_INIT;
    struct route_table *r = route_new(c, names, 4, &err);
    char *routes[] = {"d"};
    struct pdb_action action;
    struct msg *m = mk(true, "security", "r", "t", "h");

    ck_assert_ptr_nonnull(r);
    memset(&action, 0, sizeof(action));
    ck_assert_uint_eq(route(r, m, &action), 0);
    action.routes = routes;
    action.nroutes = 1;
    ck_assert_uint_eq(route(r, m, &action), D);
    msg_unref(m);
    route_free(r);
    conf_free(c);
    buf_free(&err);
}
END_TEST

static Suite *
route_suite(void)
{
    Suite *s = suite_create("route");
    TCase *tc = tcase_create("route");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_matchers);
    tcase_add_test(tc, test_all_must_hold);
    tcase_add_test(tc, test_nested);
    tcase_add_test(tc, test_continue);
    tcase_add_test(tc, test_messages);
    tcase_add_test(tc, test_action_routes);
    tcase_add_test(tc, test_check_actions);
    tcase_add_test(tc, test_unknown_executor);
    tcase_add_test(tc, test_unknown_executor_in_file);
    tcase_add_test(tc, test_bad_filter);
    tcase_add_test(tc, test_no_routes);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(route_suite());
}
