/*
 * test_conf: reading corrald's configuration (agent/conf/conf.c) through the
 * built-in schema: a file using every element lands in struct conf as
 * written, durations and sizes are read in their units, conf_default()'s
 * values, and errors name the file and the line.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/conf/conf.h"
#include "engine/buf.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

static char workdir[256];

static void
setup(void)
{
    char tmpl[] = "/tmp/corral-test-conf-XXXXXX";

    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(workdir, sizeof(workdir), "%s", tmpl);
}

static void
teardown(void)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Writes BODY after "<?xml?>\n<corrald>\n" (so BODY starts on line 3) into file. */
static void
write_conf(const char *body, char *file, size_t filesize)
{
    static int count;
    struct buf text = BUF_INIT;

    snprintf(file, filesize, "%s/corrald%d.conf", workdir, count++);
    buf_printf(&text, "<?xml version=\"1.0\"?>\n<corrald>\n%s</corrald>\n", body);
    ul_write_file(file, buf_str(&text));
    buf_free(&text);
}

static struct conf *
load_ok(const char *body)
{
    char file[300];
    struct buf err = BUF_INIT;
    struct conf *c;

    write_conf(body, file, sizeof(file));
    c = conf_load(file, NULL, &err);
    ck_assert_msg(c != NULL, "%s", buf_str(&err));
    ck_assert_uint_eq(err.len, 0);
    buf_free(&err);
    return c;
}

/*
 * Loads BODY, which must fail; the first error line must begin with
 * "FILE:LINE: " and contain `what`.
 */
static void
load_fails(const char *body, int line, const char *what)
{
    char file[300], prefix[400];
    struct buf err = BUF_INIT;

    write_conf(body, file, sizeof(file));
    ck_assert_ptr_null(conf_load(file, NULL, &err));
    snprintf(prefix, sizeof(prefix), "%s:%d: ", file, line);
    ck_assert_msg(strncmp(buf_str(&err), prefix, strlen(prefix)) == 0, "want %s...\ngot %s", prefix,
                  buf_str(&err));
    ck_assert_msg(strstr(buf_str(&err), what) != NULL, "want %s\ngot %s", what, buf_str(&err));
    buf_free(&err);
}

START_TEST(test_full)
{
    struct conf *c = load_ok(
        "<rules path=\"/etc/corral/rules\"/>\n"                                  /* 3 */
        "<rules path=\"extra.xml\"/>\n"                                          /* 4 */
        "<state file=\"/var/lib/corral/state\" interval=\"5m\"/>\n"              /* 5 */
        "<daemon user=\"corral\" group=\"adm\" pidfile=\"/run/corrald.pid\"/>\n" /* 6 */
        "<log level=\"debug\" to=\"stderr\"/>\n"                                 /* 7 */
        "<control socket=\"/run/corrald.sock\" timeout=\"2s\"/>\n"               /* 8 */
        "<stats listen=\"127.0.0.1:9100\"/>\n"                                   /* 9 */
        "<limits max-message-size=\"64k\" max-connections=\"50\" max-connections-per-peer=\"5\" "
        "idle-timeout=\"250ms\" max-contexts=\"1000\" max-context-messages=\"20\" "
        "context-share=\"100\" "
        "max-context-bytes=\"1M\" max-context-memory=\"64M\" max-rate-buckets=\"5000\"/>\n" /* 10 */
        "<inputs>\n"                                                                        /* 11 */
        "  <udp listen=\"0.0.0.0:514\"/>\n"                                                 /* 12 */
        "  <tcp listen=\"[::1]:601\" framing=\"octet-counting\" name=\"t\"/>\n"
        "  <unix-stream path=\"/run/log.sock\" mode=\"0600\" framing=\"newline\"/>\n"
        "  <unix-dgram path=\"/dev/log\"/>\n"
        "  <file path=\"/var/log/app/x.log\" from=\"start\"/>\n" /* 16 */
        "  <file path=\"/var/log/y.log\" position-file=\"/tmp/y.pos\"/>\n"
        "  <stdin/>\n"
        "</inputs>\n"
        "<outputs>\n"
        "  <stdout/>\n" /* 21 */
        "  <file path=\"/var/log/out.log\" format=\"syslog\" select=\"classified\"/>\n"
        "  <forward to=\"logs.example:6514\" protocol=\"tcp\" select=\"generated\" "
        "queue=\"50\" name=\"fw\"/>\n"
        "</outputs>\n"
        "<absence host=\"web1\" program=\"sshd\" after=\"2h\"/>\n" /* 25 */
        "<silence after=\"90\"/>\n"
        "<executors spool=\"/var/spool/corral\">\n"
        "  <exec name=\"a\" program=\"/bin/true\"><arg>x</arg></exec>\n" /* 28 */
        "  <smtp name=\"m\" server=\"mail:25\" to=\"ops@example.org\"/>\n"
        "</executors>\n"
        "<routes>\n"
        "  <route class=\"security\" to=\"a, m\" continue=\"yes\">\n" /* 32 */
        "    <route rule=\"r1\" tag=\"t\" filter='\"${HOST}\" eq \"x\"' messages=\"all\"/>\n"
        "  </route>\n"
        "  <route to=\"m\" messages=\"classified\"/>\n"
        "</routes>\n");
    const struct conf_input *in;
    const struct conf_output *out;
    const struct conf_route *rt;

    ck_assert_ptr_nonnull(c->file);
    ck_assert_uint_eq(c->nrules, 2);
    ck_assert_str_eq(c->rules[0], "/etc/corral/rules");
    ck_assert_str_eq(c->rules[1], "extra.xml");
    ck_assert_int_eq(c->rules_line[0], 3);
    ck_assert_int_eq(c->rules_line[1], 4);
    ck_assert_str_eq(c->state_file, "/var/lib/corral/state");
    ck_assert(c->state_interval == 300);
    ck_assert_str_eq(c->user, "corral");
    ck_assert_str_eq(c->group, "adm");
    ck_assert_str_eq(c->pidfile, "/run/corrald.pid");
    ck_assert_str_eq(c->log_level, "debug");
    ck_assert_str_eq(c->log_to, "stderr");
    ck_assert_str_eq(c->control_socket, "/run/corrald.sock");
    ck_assert_str_eq(c->stats_listen, "127.0.0.1:9100");
    ck_assert_uint_eq(c->max_message_size, 65536);
    ck_assert_uint_eq(c->max_connections, 50);
    ck_assert_uint_eq(c->max_connections_per_peer, 5);
    ck_assert(c->idle_timeout == 0.25);
    ck_assert(c->control_timeout == 2);
    ck_assert_uint_eq(c->max_contexts, 1000);
    ck_assert_uint_eq(c->max_context_messages, 20);
    ck_assert_uint_eq(c->context_share, 100);
    ck_assert_uint_eq(c->max_context_bytes, 1 << 20);
    ck_assert_uint_eq(c->max_context_memory, 64 << 20);
    ck_assert_uint_eq(c->max_rate_buckets, 5000);

    ck_assert_uint_eq(c->ninputs, 7);
    in = &c->inputs[0];
    ck_assert_int_eq(in->type, CONF_IN_UDP);
    ck_assert_str_eq(in->listen, "0.0.0.0:514");
    ck_assert_str_eq(in->name, "udp:0.0.0.0:514");
    ck_assert_int_eq(in->line, 12);
    in = &c->inputs[1];
    ck_assert_int_eq(in->type, CONF_IN_TCP);
    ck_assert_str_eq(in->listen, "[::1]:601");
    ck_assert_str_eq(in->name, "t");
    ck_assert_int_eq(in->framing, CONF_FRAMING_OCTET_COUNTING);
    in = &c->inputs[2];
    ck_assert_int_eq(in->type, CONF_IN_UNIX_STREAM);
    ck_assert_str_eq(in->path, "/run/log.sock");
    ck_assert_uint_eq(in->mode, 0600);
    ck_assert_int_eq(in->framing, CONF_FRAMING_NEWLINE);
    ck_assert_str_eq(in->name, "unix-stream:/run/log.sock");
    in = &c->inputs[3];
    ck_assert_int_eq(in->type, CONF_IN_UNIX_DGRAM);
    ck_assert_uint_eq(in->mode, 0666);
    ck_assert_int_eq(in->framing, CONF_FRAMING_AUTO);
    in = &c->inputs[4];
    ck_assert_int_eq(in->type, CONF_IN_FILE);
    ck_assert(in->from_start);
    /* beside the state file, the path escaped */
    ck_assert_str_eq(in->position_file, "/var/lib/corral/%2Fvar%2Flog%2Fapp%2Fx.log.pos");
    ck_assert_int_eq(in->line, 16);
    in = &c->inputs[5];
    ck_assert(!in->from_start);
    ck_assert_str_eq(in->position_file, "/tmp/y.pos");
    in = &c->inputs[6];
    ck_assert_int_eq(in->type, CONF_IN_STDIN);
    ck_assert_str_eq(in->name, "stdin:-");

    ck_assert_uint_eq(c->noutputs, 3);
    out = &c->outputs[0];
    ck_assert_int_eq(out->type, CONF_OUT_STDOUT);
    ck_assert_str_eq(out->name, "stdout");
    ck_assert_int_eq(out->format, CONF_FORMAT_JSON);
    ck_assert_int_eq(out->select, CONF_SELECT_ALL);
    ck_assert_uint_eq(out->queue, 10000);
    ck_assert_int_eq(out->line, 21);
    out = &c->outputs[1];
    ck_assert_int_eq(out->type, CONF_OUT_FILE);
    ck_assert_str_eq(out->name, "file:/var/log/out.log");
    ck_assert_int_eq(out->format, CONF_FORMAT_SYSLOG);
    ck_assert_int_eq(out->select, CONF_SELECT_CLASSIFIED);
    out = &c->outputs[2];
    ck_assert_int_eq(out->type, CONF_OUT_FORWARD);
    ck_assert_str_eq(out->name, "fw");
    ck_assert_str_eq(out->to, "logs.example:6514");
    ck_assert(out->tcp);
    ck_assert_int_eq(out->format, CONF_FORMAT_SYSLOG); /* a forward's default */
    ck_assert_int_eq(out->select, CONF_SELECT_GENERATED);
    ck_assert_uint_eq(out->queue, 50);

    ck_assert_uint_eq(c->nabsences, 2);
    ck_assert_str_eq(c->absences[0].host, "web1");
    ck_assert_str_eq(c->absences[0].program, "sshd");
    ck_assert(c->absences[0].after == 7200);
    ck_assert_int_eq(c->absences[0].line, 25);
    /* line 26 is the old spelling, <silence>: read alike, with a warning naming <absence> */
    ck_assert_ptr_null(c->absences[1].host);
    ck_assert_ptr_null(c->absences[1].program);
    ck_assert(c->absences[1].after == 90);
    ck_assert_ptr_nonnull(c->warnings);
    ck_assert_msg(strstr(c->warnings, ":26: warning: <silence> is deprecated: write <absence>"),
                  "%s", c->warnings);
    ck_assert_ptr_null(strchr(strchr(c->warnings, '\n') + 1, '\n')); /* the only one */

    ck_assert_str_eq(c->spool_dir, "/var/spool/corral");
    ck_assert_uint_eq(c->nexecutors, 2);
    ck_assert_str_eq(c->executors[0].kind, "exec");
    ck_assert_str_eq(c->executors[0].name, "a");
    ck_assert_int_eq(c->executors[0].line, 28);
    ck_assert_str_eq(exconf_attr(&c->executors[0], "program"), "/bin/true");
    ck_assert_str_eq(exconf_attr(&c->executors[0], "name"), "a");
    ck_assert_ptr_null(exconf_attr(&c->executors[0], "nosuch"));
    ck_assert_uint_eq(c->executors[0].nchildren, 1);
    ck_assert_str_eq(c->executors[0].children[0].name, "arg");
    ck_assert_str_eq(c->executors[0].children[0].text, "x");
    ck_assert_str_eq(c->executors[1].kind, "smtp");
    ck_assert_str_eq(exconf_attr(&c->executors[1], "to"), "ops@example.org");
    ck_assert_uint_eq(c->executors[1].nattrs, 3);

    ck_assert_uint_eq(c->nroutes, 2);
    rt = &c->routes[0];
    ck_assert_uint_eq(rt->nto, 2);
    ck_assert_str_eq(rt->to[0], "a");
    ck_assert_str_eq(rt->to[1], "m");
    ck_assert_str_eq(rt->class, "security");
    ck_assert(rt->cont);
    ck_assert_int_eq(rt->messages, CONF_SELECT_GENERATED);
    ck_assert_int_eq(rt->line, 32);
    ck_assert_uint_eq(rt->nchildren, 1);
    rt = &rt->children[0];
    ck_assert_uint_eq(rt->nto, 0);
    ck_assert_ptr_null(rt->class);
    ck_assert_str_eq(rt->rule, "r1");
    ck_assert_str_eq(rt->tag, "t");
    ck_assert_str_eq(rt->filter, "\"${HOST}\" eq \"x\"");
    ck_assert_int_eq(rt->messages, CONF_SELECT_ALL);
    ck_assert(!rt->cont);
    rt = &c->routes[1];
    ck_assert_int_eq(rt->messages, CONF_SELECT_CLASSIFIED);
    ck_assert_uint_eq(rt->nchildren, 0);
    conf_free(c);
}
END_TEST

/* What a file that only names its rules gets. */
START_TEST(test_file_defaults)
{
    struct conf *c = load_ok("<rules path=\"r\"/>\n<inputs><file path=\"/var/log/z\"/></inputs>\n");

    ck_assert_uint_eq(c->max_message_size, 65536);
    ck_assert_uint_eq(c->max_connections, 1000);
    ck_assert_uint_eq(c->max_connections_per_peer, 100);
    ck_assert(c->idle_timeout == 300);
    ck_assert(c->control_timeout == 10);
    ck_assert(c->state_interval == 60);
    ck_assert_str_eq(c->log_level, "info");
    ck_assert_ptr_null(c->log_to);
    ck_assert_ptr_null(c->state_file);
    ck_assert_ptr_null(c->spool_dir);
    ck_assert_uint_eq(c->noutputs, 0);
    ck_assert_uint_eq(c->nexecutors, 0);
    ck_assert_uint_eq(c->nroutes, 0);
    /* no state file: the position is kept beside the followed file */
    ck_assert_str_eq(c->inputs[0].position_file, "/var/log/z.corral-pos");
    ck_assert(!c->inputs[0].from_start);
    conf_free(c);
}
END_TEST

/* An element given twice: the last counts, the first is freed (ASan finds a leak otherwise). */
START_TEST(test_given_twice)
{
    struct conf *c =
        load_ok("<rules path=\"r\"/>\n<control socket=\"/a\"/>\n<control socket=\"/b\"/>\n"
                "<stats listen=\"127.0.0.1:1\"/>\n<stats listen=\"127.0.0.1:2\"/>\n"
                "<daemon user=\"u1\" pidfile=\"/p1\"/>\n<daemon user=\"u2\"/>\n");

    ck_assert_str_eq(c->control_socket, "/b");
    ck_assert_str_eq(c->stats_listen, "127.0.0.1:2");
    ck_assert_str_eq(c->user, "u2");
    ck_assert_ptr_null(c->pidfile);
    conf_free(c);
}
END_TEST

/* <daemon privsep>: yes, no, or not given (auto: corrald decides by whether it is root). */
START_TEST(test_privsep)
{
    struct conf *c = load_ok("<rules path=\"r\"/>\n<daemon user=\"u\"/>\n");

    ck_assert_int_eq(c->privsep, CONF_PRIVSEP_AUTO);
    conf_free(c);
    c = load_ok("<rules path=\"r\"/>\n<daemon privsep=\"yes\"/>\n");
    ck_assert_int_eq(c->privsep, CONF_PRIVSEP_YES);
    ck_assert_int_gt(c->privsep_line, 0);
    conf_free(c);
    c = load_ok("<rules path=\"r\"/>\n<daemon user=\"u\" privsep=\"no\"/>\n");
    ck_assert_int_eq(c->privsep, CONF_PRIVSEP_NO);
    conf_free(c);
    load_fails("<rules path=\"r\"/>\n<daemon privsep=\"maybe\"/>\n", 4, "privsep");
}
END_TEST

START_TEST(test_default)
{
    struct conf *c = conf_default("/usr/share/corral/rules");

    ck_assert_ptr_null(c->file);
    ck_assert_uint_eq(c->nrules, 1);
    ck_assert_str_eq(c->rules[0], "/usr/share/corral/rules");
    ck_assert_int_eq(c->rules_line[0], 0);
    ck_assert_uint_eq(c->ninputs, 2);
    ck_assert_int_eq(c->inputs[0].type, CONF_IN_UDP);
    ck_assert_str_eq(c->inputs[0].listen, "127.0.0.1:5514");
    ck_assert_str_eq(c->inputs[0].name, "udp:127.0.0.1:5514");
    ck_assert_int_eq(c->inputs[1].type, CONF_IN_TCP);
    ck_assert_str_eq(c->inputs[1].listen, "127.0.0.1:5514");
    ck_assert_str_eq(c->inputs[1].name, "tcp:127.0.0.1:5514");
    ck_assert_uint_eq(c->noutputs, 1);
    ck_assert_int_eq(c->outputs[0].type, CONF_OUT_STDOUT);
    ck_assert_int_eq(c->outputs[0].format, CONF_FORMAT_JSON);
    ck_assert_int_eq(c->outputs[0].select, CONF_SELECT_GENERATED);
    ck_assert_uint_eq(c->max_message_size, 65536);
    ck_assert_uint_eq(c->max_connections, 1000);
    ck_assert(c->idle_timeout == 300);
    ck_assert(c->state_interval == 60);
    ck_assert_str_eq(c->log_level, "info");
    ck_assert_ptr_null(c->state_file);
    ck_assert_uint_eq(c->nabsences, 0);
    ck_assert_ptr_null(c->warnings);
    ck_assert_uint_eq(c->nexecutors, 0);
    ck_assert_uint_eq(c->nroutes, 0);
    conf_free(c);
}
END_TEST

START_TEST(test_units)
{
    struct conf *c = load_ok("<rules path=\"r\"/>\n"
                             "<limits max-message-size=\"2M\" idle-timeout=\"1.5h\"/>\n"
                             "<state file=\"s\" interval=\"0\"/>\n"
                             "<absence after=\"1d\"/><absence after=\"30s\"/>\n");

    ck_assert_uint_eq(c->max_message_size, 2 * 1024 * 1024);
    ck_assert(c->idle_timeout == 5400);
    ck_assert(c->state_interval == 0);
    ck_assert(c->absences[0].after == 86400);
    ck_assert(c->absences[1].after == 30);
    /* forget: a week, or twice after= when that is longer */
    ck_assert(c->absences[0].forget == 604800);
    ck_assert(c->absences[1].forget == 604800);
    ck_assert_uint_eq(c->max_absence_sources, 100000);
    ck_assert_ptr_null(c->warnings);
    conf_free(c);
    c = load_ok("<rules path=\"r\"/>\n<limits max-absence-sources=\"7\"/>\n"
                "<absence after=\"5d\"/><absence after=\"1m\" forget=\"2h\"/>\n");
    ck_assert(c->absences[0].forget == 10 * 86400);
    ck_assert(c->absences[1].forget == 7200);
    ck_assert_uint_eq(c->max_absence_sources, 7);
    conf_free(c);
    /* bound to the sending address unless address="any"; severity= for the reports */
    c = load_ok("<rules path=\"r\"/>\n<absence after=\"1m\" address=\"any\" severity=\"major\"/>"
                "<absence after=\"1m\" address=\"bound\"/>\n");
    ck_assert(c->absences[0].any_address);
    ck_assert_str_eq(c->absences[0].severity, "major");
    ck_assert(!c->absences[1].any_address);
    ck_assert_ptr_null(c->absences[1].severity);
    conf_free(c);
    /* the old attribute name still counts, with a warning */
    c = load_ok("<rules path=\"r\"/>\n<limits max-silence-sources=\"9\"/>\n");
    ck_assert_uint_eq(c->max_absence_sources, 9);
    ck_assert_msg(c->warnings && strstr(c->warnings, ":4: warning: max-silence-sources= is "
                                                     "deprecated: write max-absence-sources="),
                  "%s", c->warnings ? c->warnings : "(none)");
    conf_free(c);
}
END_TEST

START_TEST(test_errors)
{
    /* the schema's: unknown element, bad attribute value, missing attribute */
    load_fails("<rules path=\"r\"/>\n<bogus/>\n", 4, "bogus");
    load_fails("<rules path=\"r\"/>\n\n<limits idle-timeout=\"soon\"/>\n", 5, "idle-timeout");
    load_fails("<rules path=\"r\"/>\n<outputs><stdout select=\"some\"/></outputs>\n", 4, "select");
    load_fails("<rules/>\n", 3, "path");
    /* not XML */
    load_fails("<rules path=\"r\">\n", 4, "rules");
    /* conf.c's own checks */
    load_fails("<rules path=\"r\"/>\n<inputs>\n<udp listen=\"1.2.3.4:99999\"/></inputs>\n", 5,
               "bad address \"1.2.3.4:99999\"");
    load_fails("<rules path=\"r\"/>\n<inputs><unix-dgram path=\"/s\" mode=\"999\"/></inputs>\n", 4,
               "bad mode \"999\"");
    load_fails("<rules path=\"r\"/>\n<absence after=\"1h\" forget=\"1h\"/>\n", 4,
               "forget= must be more than after=");
    load_fails("<rules path=\"r\"/>\n<control socket=\"/s\" timeout=\"0\"/>\n", 4,
               "timeout must be more than 0");
    load_fails("<rules path=\"r\"/>\n<limits max-message-size=\"10\"/>\n", 4,
               "max-message-size must lie between");
    load_fails("<rules path=\"r\"/>\n<absence after=\"0\"/>\n", 4, "after= must be more than 0");
    load_fails("<rules path=\"r\"/>\n<absence after=\"1h\" address=\"first\"/>\n", 4, "address");
    load_fails("<rules path=\"r\"/>\n<absence after=\"1h\" severity=\"bad\"/>\n", 4, "severity");
    load_fails("<rules path=\"r\"/>\n<limits max-contexts=\"10\" context-share=\"11\"/>\n", 4,
               "context-share must not exceed max-contexts");
    load_fails("<rules path=\"r\"/>\n<executors>\n<exec name=\"a\" program=\"/bin/true\"/>\n"
               "<exec name=\"a\" program=\"/bin/false\"/>\n</executors>\n",
               6, "a second executor named 'a' (the first is at line 5)");
    load_fails("<rules path=\"r\"/>\n<executors><exec name=\"a\"/></executors>\n<routes>\n"
               "<route to=\"a\"/>\n<route class=\"x\" to=\"a,b\"/>\n</routes>\n",
               7, "route to unknown executor 'b'");
    load_fails("<state file=\"s\"/>\n", 2, "no <rules path=");
    /* libxml2 puts the bytes of bad UTF-8 on a line of their own: still one line an error */
    {
        char file[300];
        struct buf err = BUF_INIT;
        const char *line;

        write_conf("<rules path=\"r\"/>\n<inputs><udp listen=\"\304\"/></inputs>\n", file,
                   sizeof(file));
        ck_assert_ptr_null(conf_load(file, NULL, &err));
        ck_assert_uint_gt(err.len, 0);
        for (line = buf_str(&err); *line; line = strchr(line, '\n') + 1)
            ck_assert_msg(strncmp(line, file, strlen(file)) == 0, "a line without its file: %s",
                          buf_str(&err));
        buf_free(&err);
    }
}
END_TEST

START_TEST(test_attribute_errors)
{
    char body[1200], tok[400];

    load_fails("<rules path=\"r\"/>\n<control socket=\"/s\" mode=\"0666\"/>\n", 4,
               "bad mode \"0666\": 0600 (its owner only) or 0660");
    load_fails("<rules path=\"r\"/>\n<alerts evidence-lines=\"100000\"/>\n", 4,
               "evidence-lines must be a number from 0 to");
    load_fails("<rules path=\"r\"/>\n<alerts evidence-bytes=\"1\"/>\n", 4,
               "evidence-bytes must lie between");
    load_fails("<rules path=\"r\"/>\n<alerts alert-id=\"${HOST\"/>\n", 4, "bad alert-id template");
    load_fails("<rules path=\"r\"/>\n<inhibit source=\"a=b\" target=\"a=~(\"/>\n", 4,
               "inhibit target=\"a=~(\"");
    /* digits the schema takes, too many for a count */
    load_fails("<rules path=\"r\"/>\n<engine workers=\"99999999999999999999999\"/>\n", 4,
               "bad value workers=\"99999999999999999999999\"");

    /* the API token file: missing, readable by everyone, too short */
    snprintf(tok, sizeof(tok), "%s/token", workdir);
    snprintf(body, sizeof(body),
             "<rules path=\"r\"/>\n<stats listen=\"127.0.0.1:0\" api-token-file=\"%s\"/>\n", tok);
    load_fails(body, 4, "api-token-file");
    ul_write_file(tok, "0123456789abcdef0123\n");
    ck_assert_int_eq(chmod(tok, 0644), 0);
    load_fails(body, 4, "is readable by everyone");
    ck_assert_int_eq(chmod(tok, 0600), 0);
    ul_write_file(tok, "short\n");
    ck_assert_int_eq(chmod(tok, 0600), 0);
    load_fails(body, 4, "at least 16 characters");
    ul_write_file(tok, "0123456789 abcdef0123\n");
    ck_assert_int_eq(chmod(tok, 0600), 0);
    load_fails(body, 4, "without spaces");
    ul_write_file(tok, "0123456789abcdef0123\r\n");
    ck_assert_int_eq(chmod(tok, 0600), 0);
    {
        struct conf *c = load_ok(body);
        ck_assert_str_eq(c->stats_api_token, "0123456789abcdef0123");
        conf_free(c);
    }
}
END_TEST

/* The rest of the checks of conf.c: spellings taken, values refused, warnings kept. */
START_TEST(test_more_checks)
{
    struct buf body = BUF_INIT, err = BUF_INIT;
    struct conf *c;
    char file[300];
    int i;

    /* the control socket's mode without its leading 0 */
    c = load_ok("<rules path=\"r\"/>\n<control socket=\"/s\" mode=\"660\"/>\n");
    ck_assert_uint_eq(c->control_mode, 0660);
    conf_free(c);
    c = load_ok("<rules path=\"r\"/>\n<control socket=\"/s\" group=\"adm\" mode=\"600\"/>\n");
    ck_assert_uint_eq(c->control_mode, 0600);
    conf_free(c);
    load_fails("<rules path=\"r\"/>\n<engine workers=\"2\" queue=\"1\"/>\n", 4,
               "queue must be at least 2");
    /* routes nest at most 16 deep */
    buf_puts(&body, "<rules path=\"r\"/>\n<executors><exec name=\"a\"/></executors>\n<routes>\n");
    for (i = 0; i < 18; i++) buf_puts(&body, "<route to=\"a\">");
    buf_putc(&body, '\n');
    for (i = 0; i < 18; i++) buf_puts(&body, "</route>");
    buf_puts(&body, "\n</routes>\n");
    load_fails(buf_str(&body), 6, "routes nested too deeply");
    /* inhibit equal= on a label not every alert carries: loaded, with a warning */
    write_conf(
        "<rules path=\"r\"/>\n<inhibit source=\"a=b\" target=\"c=d\" equal=\"HOST,site\"/>\n", file,
        sizeof(file));
    c = conf_load(file, NULL, &err);
    ck_assert_msg(c != NULL, "%s", buf_str(&err));
    ck_assert_ptr_nonnull(c->warnings);
    ck_assert_msg(strstr(c->warnings, ":4: warning: inhibit equal=\"site\": not a label every "
                                      "alert carries") &&
                      !strstr(c->warnings, "\"HOST\""),
                  "%s", c->warnings);
    conf_free(c);
    /* a schema that cannot be loaded */
    buf_reset(&err);
    ck_assert_ptr_null(conf_load(file, "/nonexistent/corrald.xsd", &err));
    ck_assert_msg(strstr(buf_str(&err), "/nonexistent/corrald.xsd: cannot load the configuration "
                                        "schema"),
                  "%s", buf_str(&err));
    /* the names of input types, as logs and counters give them */
    ck_assert_str_eq(conf_input_type_name(CONF_IN_UDP), "udp");
    ck_assert_str_eq(conf_input_type_name(CONF_IN_TCP), "tcp");
    ck_assert_str_eq(conf_input_type_name(CONF_IN_UNIX_DGRAM), "unix-dgram");
    ck_assert_str_eq(conf_input_type_name(CONF_IN_UNIX_STREAM), "unix-stream");
    ck_assert_str_eq(conf_input_type_name(CONF_IN_FILE), "file");
    ck_assert_str_eq(conf_input_type_name(CONF_IN_STDIN), "stdin");
    ck_assert_str_eq(conf_input_type_name(CONF_IN_TLS), "tls");
    ck_assert_str_eq(conf_input_type_name((enum conf_input_type)99), "?");
    buf_free(&body);
    buf_free(&err);
}
END_TEST

START_TEST(test_missing_file)
{
    struct buf err = BUF_INIT;
    char file[300];

    snprintf(file, sizeof(file), "%s/nosuch.conf", workdir);
    ck_assert_ptr_null(conf_load(file, NULL, &err));
    ck_assert_msg(strstr(buf_str(&err), file) != NULL, "%s", buf_str(&err));
    buf_free(&err);
}
END_TEST

START_TEST(test_rules_readable)
{
    char rules[300], body[1200], want[1000];
    struct conf *c;
    struct buf err = BUF_INIT;

    snprintf(rules, sizeof(rules), "%s/rules.xml", workdir);
    ul_write_file(rules, "<patterndb/>\n");
    snprintf(body, sizeof(body),
             "<rules path=\"%s\"/>\n<rules path=\"%s\"/>\n\n<rules path=\"%s/nosuch\"/>\n", rules,
             workdir, workdir);
    c = load_ok(body);
    ck_assert_uint_eq(c->nrules, 3);
    ck_assert(conf_rules_readable(c, 0, &err));
    ck_assert(conf_rules_readable(c, 1, &err)); /* a directory */
    ck_assert_uint_eq(err.len, 0);
    ck_assert(!conf_rules_readable(c, 2, &err));
    snprintf(want, sizeof(want), "%s:6: rules path %s/nosuch: %s\n", c->file, workdir,
             strerror(ENOENT));
    ck_assert_str_eq(buf_str(&err), want);
    /* a path from the command line (line 0) has no place in the file to name */
    buf_reset(&err);
    snprintf(rules, sizeof(rules), "%s/fifo", workdir);
    ck_assert_int_eq(mkfifo(rules, 0600), 0);
    conf_add_rules(c, rules, 0);
    ck_assert(!conf_rules_readable(c, 3, &err));
    snprintf(want, sizeof(want), "rules path %s: not a file or a directory\n", rules);
    ck_assert_str_eq(buf_str(&err), want);
    /* nor is a FIFO a configuration: an error at once, not a wait for a writer */
    buf_reset(&err);
    ck_assert_ptr_null(conf_load(rules, NULL, &err));
    snprintf(want, sizeof(want), "%s: cannot read the configuration: not a regular file\n", rules);
    ck_assert_str_eq(buf_str(&err), want);
    unlink(rules);
    buf_free(&err);
    conf_free(c);
}
END_TEST

START_TEST(test_split_address)
{
    char host[64];
    int port;

    ck_assert(conf_split_address("10.0.0.1:514", host, sizeof(host), &port));
    ck_assert_str_eq(host, "10.0.0.1");
    ck_assert_int_eq(port, 514);
    ck_assert(conf_split_address("[::1]:6514", host, sizeof(host), &port));
    ck_assert_str_eq(host, "::1");
    ck_assert_int_eq(port, 6514);
    ck_assert(conf_split_address(":0", host, sizeof(host), &port));
    ck_assert_str_eq(host, "");
    ck_assert_int_eq(port, 0);
    ck_assert(!conf_split_address("host", host, sizeof(host), &port));
    ck_assert(!conf_split_address("host:", host, sizeof(host), &port));
    ck_assert(!conf_split_address("host:65536", host, sizeof(host), &port));
    ck_assert(!conf_split_address("[::1]514", host, sizeof(host), &port));
    ck_assert(!conf_split_address("host:5x", host, sizeof(host), &port));
}
END_TEST

static Suite *
conf_suite(void)
{
    Suite *s = suite_create("conf");
    TCase *tc = tcase_create("conf");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_full);
    tcase_add_test(tc, test_file_defaults);
    tcase_add_test(tc, test_given_twice);
    tcase_add_test(tc, test_privsep);
    tcase_add_test(tc, test_default);
    tcase_add_test(tc, test_units);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_attribute_errors);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_more_checks);
    tcase_add_test(tc, test_rules_readable);
    tcase_add_test(tc, test_split_address);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(conf_suite());
}
