/*
 * scenario: correlation tests for rule files.  pdbtool's <example>s test one
 * message at a time; a scenario replays a timestamped log through the whole
 * correlation engine and checks the messages the rules generate, where they
 * appear in the stream, their values and tags:
 *
 *   <scenarios rules="sshd.xml">
 *     <scenario name="a session that closes" now="2026-12-03T12:00:00Z">
 *       <log>
 *         Dec  3 10:00:01 web1 sshd[42]: Accepted password for alice from ...
 *         Dec  3 10:05:00 web1 sshd[42]: pam_unix(sshd:session): session closed ...
 *       </log>
 *       <expect after="2">
 *         <value name="MESSAGE">An SSH session for alice from ... closed. ...</value>
 *         <value name="usracct.service" unset="yes"/>
 *         <tag>ssh.session</tag>
 *       </expect>
 *     </scenario>
 *   </scenarios>
 *
 * Scenario files end in .scenario, so that neither corral nor syslog-ng
 * loads them as rules.  rules= names rule files or directories relative to
 * the scenario file (several separated by spaces; default: its directory).
 * after="N" means emitted after the N-th log line and before the next one
 * (timeouts that line N+1 triggers come before it, so they count as after N);
 * after="end" means at the end of the log, when open contexts expire.  Every
 * generated message must be expected, in order.  now= fixes the clock (year
 * guessing, the clamp on message times); keep-open="yes" skips the final
 * expiry.  sigma= names Sigma rules (a file or directory, relative to the
 * scenario file) that run beside the rules, with the mapping file
 * sigma-mapping= (default: the shipped one); their alerts are generated
 * messages like any other.
 */
#include "tools/scenario.h"
#include "tools/cmd.h"
#include "engine/civil.h"
#include "engine/corr.h"
#include "engine/syslogfmt.h"
#include "engine/xalloc.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct generated {
    struct msg *m;
    long after; /* -1: at the end */
};

struct run {
    long lines_emitted;
    bool at_end;
    struct generated *gen;
    size_t ngen, capgen;
    uint64_t now_ms;
};

static void
on_emit(void *arg, struct msg *m, enum corr_emit_kind kind, const struct pdb_action *a)
{
    struct run *r = arg;

    (void)a;
    if (kind == CORR_INPUT) {
        r->lines_emitted++;
        return;
    }
    r->gen = xgrow(r->gen, &r->capgen, r->ngen + 1, sizeof(*r->gen));
    r->gen[r->ngen].m = msg_ref(m);
    r->gen[r->ngen].after = r->at_end ? -1 : r->lines_emitted;
    r->ngen++;
}

static uint64_t
fixed_clock(void *arg)
{
    return ((struct run *)arg)->now_ms;
}

static char *
prop(const xmlNode *n, const char *name)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    char *s = v ? xstrdup((const char *)v) : NULL;

    xmlFree(v);
    return s;
}

static char *
content(const xmlNode *n)
{
    xmlChar *v = xmlNodeGetContent(n);
    char *s = xstrdup(v ? (const char *)v : "");

    xmlFree(v);
    return s;
}

static bool
is(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* A path of a scenario file's attribute, relative to its directory dir. */
static void
rel_path(struct buf *out, const char *dir, const char *p)
{
    if (p[0] == '/')
        buf_puts(out, p);
    else
        buf_printf(out, "%s%s", dir, p);
}

/* Loads the rules a scenario file names, relative to its directory, and its Sigma rules. */
static struct pdb *
load_rules(const char *file, const char *rules, const char *sigma, const char *mapping)
{
    struct pdb *db = pdb_new();
    char *dir = xstrdup(file), *slash = strrchr(dir, '/'), *list, *tok, *save = NULL;

    if (slash)
        slash[1] = '\0';
    else
        strcpy(dir, "./");
    list = xstrdup(rules ? rules : ".");
    for (tok = strtok_r(list, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
        struct buf path = BUF_INIT;
        if (tok[0] == '/')
            buf_puts(&path, tok);
        else
            buf_printf(&path, "%s%s", dir, tok);
        pdb_load(db, buf_str(&path));
        buf_free(&path);
    }
    free(list);
    pdb_print_diags(db, stderr);
    if (!pdb_nerrors(db) && sigma) {
        struct buf sp = BUF_INIT, mp = BUF_INIT;
        rel_path(&sp, dir, sigma);
        if (mapping) rel_path(&mp, dir, mapping);
        if (cmd_load_sigma(db, buf_str(&sp), mapping ? buf_str(&mp) : NULL) < 0) {
            pdb_free(db);
            db = NULL;
        }
        buf_free(&sp);
        buf_free(&mp);
    }
    free(dir);
    if (db && pdb_nerrors(db)) {
        pdb_free(db);
        return NULL;
    }
    return db;
}

/* A time attribute (ISO 8601, see civil.h) in ms, or -1. */
static int64_t
parse_time(const char *s)
{
    int64_t ms;

    return civil_parse_time(s, &ms) == 0 ? ms : -1;
}

/* Compares one generated message with one <expect>; failures go to out. */
static bool
check_expect(const xmlNode *e, const struct generated *g, struct buf *out)
{
    const xmlNode *c;
    char *after = prop(e, "after");
    bool ok = true;

    if (after) {
        long want = strcmp(after, "end") == 0 ? -1 : strtol(after, NULL, 10);
        if (want != g->after) {
            if (g->after < 0)
                buf_printf(out, "    expected after %s, came at the end of the log\n", after);
            else
                buf_printf(out, "    expected after %s, came after line %ld\n", after, g->after);
            ok = false;
        }
    }
    free(after);
    for (c = e->children; c; c = c->next) {
        if (is(c, "value")) {
            char *name = prop(c, "name"), *want = content(c), *unset = prop(c, "unset");
            bool want_unset = unset && strcmp(unset, "yes") == 0;
            size_t len = 0;
            const char *v = name ? msg_get(g->m, nv_intern_str(name), &len) : NULL;
            if (want_unset) {
                if (v) {
                    buf_printf(out, "    %s: got '%.*s', expected it unset\n", name, (int)len, v);
                    ok = false;
                }
            } else if (!name || !v || len != strlen(want) || memcmp(v, want, len) != 0) {
                if (v)
                    buf_printf(out, "    %s: got '%.*s', expected '%s'\n", name, (int)len, v, want);
                else
                    buf_printf(out, "    %s: unset, expected '%s'\n", name ? name : "(no name)",
                               want);
                ok = false;
            }
            free(name);
            free(want);
            free(unset);
        } else if (is(c, "tag")) {
            char *tag = content(c);
            if (!msg_tag_has(g->m, tag_intern(tag, strlen(tag)))) {
                buf_printf(out, "    tag %s missing\n", tag);
                ok = false;
            }
            free(tag);
        }
    }
    return ok;
}

static void
describe(const struct generated *g, struct buf *out)
{
    size_t len;
    const char *msg = msg_get(g->m, NV_MESSAGE, &len);

    if (g->after < 0)
        buf_printf(out, "    at the end: ");
    else
        buf_printf(out, "    after line %ld: ", g->after);
    buf_printf(out, "MESSAGE='%.*s'\n", msg ? (int)len : 0, msg ? msg : "");
}

static bool
run_scenario(const char *file, const xmlNode *sc, const char *default_rules, const char *sigma,
             const char *mapping, bool verbose)
{
    char *name = prop(sc, "name"), *rules = prop(sc, "rules"), *now = prop(sc, "now");
    char *keep = prop(sc, "keep-open");
    struct run r = {0};
    struct corr_opts opts = {0};
    struct pdb *db;
    struct corr *c;
    struct msg *m;
    struct msg_time mt;
    struct syslogfmt_opts sopts = {&mt};
    struct buf report = BUF_INIT;
    const xmlNode *n;
    size_t i = 0;
    bool ok = true;

    db = load_rules(file, rules ? rules : default_rules, sigma, mapping);
    if (!db) {
        printf("FAIL %s:%d: scenario '%s': its rules do not load\n", file, (int)xmlGetLineNo(sc),
               name ? name : "");
        ok = false;
        goto out;
    }
    r.now_ms = now ? (uint64_t)parse_time(now) : (uint64_t)time(NULL) * 1000;
    if (now && (int64_t)r.now_ms < 0) {
        printf("FAIL %s:%d: bad now='%s' (expected 2026-12-03T12:00:00Z)\n", file,
               (int)xmlGetLineNo(sc), now);
        pdb_free(db);
        ok = false;
        goto out;
    }
    mt.sec = (int64_t)(r.now_ms / 1000);
    mt.usec = 0;
    mt.gmtoff = 0;
    opts.emit = on_emit;
    opts.clock = fixed_clock;
    opts.arg = &r;
    c = corr_new(db, &opts);
    m = msg_new();
    for (n = sc->children; n; n = n->next) {
        char *text, *line, *save = NULL;
        if (!is(n, "log")) continue;
        text = content(n);
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            while (*line == ' ' || *line == '\t') line++;
            if (!*line) continue;
            syslogfmt_parse(m, line, strlen(line), &sopts);
            corr_process(c, m);
        }
        free(text);
    }
    r.at_end = true;
    if (!keep || strcmp(keep, "yes") != 0) corr_expire_all(c);

    for (n = sc->children; n; n = n->next) {
        if (!is(n, "expect")) continue;
        if (i >= r.ngen) {
            buf_printf(&report, "  expected message %zu (line %d) was not generated\n", i + 1,
                       (int)xmlGetLineNo(n));
            ok = false;
        } else {
            struct buf why = BUF_INIT;
            if (!check_expect(n, &r.gen[i], &why)) {
                buf_printf(&report,
                           "  generated message %zu does not match <expect> at line %d:\n%s", i + 1,
                           (int)xmlGetLineNo(n), buf_str(&why));
                describe(&r.gen[i], &report);
                ok = false;
            }
            buf_free(&why);
        }
        i++;
    }
    for (; i < r.ngen; i++) {
        buf_printf(&report, "  unexpected generated message %zu:\n", i + 1);
        describe(&r.gen[i], &report);
        ok = false;
    }
    if (!ok)
        printf("FAIL %s:%d: scenario '%s'\n%s", file, (int)xmlGetLineNo(sc), name ? name : "",
               buf_str(&report));
    else if (verbose)
        printf("pass %s:%d: scenario '%s'\n", file, (int)xmlGetLineNo(sc), name ? name : "");
    for (i = 0; i < r.ngen; i++) msg_unref(r.gen[i].m);
    free(r.gen);
    msg_unref(m);
    corr_free(c);
    pdb_free(db);
out:
    buf_free(&report);
    free(name);
    free(rules);
    free(now);
    free(keep);
    return ok;
}

int
scenario_run_file(const char *file, bool verbose, unsigned long *passed, unsigned long *failed)
{
    xmlDocPtr doc = xmlReadFile(file, NULL, XML_PARSE_NONET);
    const xmlNode *root, *sc;
    char *rules, *sigma, *mapping;

    if (!doc) {
        fprintf(stderr, "%s: error: not a readable XML scenario file\n", file);
        return -1;
    }
    root = xmlDocGetRootElement(doc);
    if (!root || !is(root, "scenarios")) {
        fprintf(stderr, "%s: error: the root element must be <scenarios>\n", file);
        xmlFreeDoc(doc);
        return -1;
    }
    rules = prop(root, "rules");
    sigma = prop(root, "sigma");
    mapping = prop(root, "sigma-mapping");
    for (sc = root->children; sc; sc = sc->next) {
        if (!is(sc, "scenario")) continue;
        if (run_scenario(file, sc, rules, sigma, mapping, verbose))
            (*passed)++;
        else
            (*failed)++;
    }
    free(rules);
    free(sigma);
    free(mapping);
    xmlFreeDoc(doc);
    return 0;
}
