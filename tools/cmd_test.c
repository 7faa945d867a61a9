/*
 * corral test: runs the <example>s embedded in rule files, as `pdbtool test`
 * does: each test message is classified with the rules of its file and must
 * hit the example's own rule and yield every <test_value>.
 *
 * A FILE argument is loaded on its own (as pdbtool does); a DIR argument is
 * loaded as one database, the way corrald loads it, so that rules of
 * different files that steal each other's messages show up as failures.
 * Each action that raises an alert and can generate it without the labels
 * of the alert contract (engine/alertlabels.h) is a failure too.
 */
#include "tools/cmd.h"
#include "tools/scenario.h"
#include "engine/alertlabels.h"
#include "actions/jsonval.h"
#include "engine/macros.h"
#include "engine/template.h"
#include "engine/xalloc.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

struct tester {
    bool verbose;
    bool json;
    unsigned long passed, failed, skipped;
    bool load_failed;
    struct buf detail;
    json_t *failures; /* with json: the failed values of the example under test */
};

/* A test value may name a macro ($DATE-style names) as well as a stored value. */
static const char *
lookup(struct msg *m, const char *name, struct buf *scratch, size_t *len)
{
    int id = macro_lookup(name, strlen(name));
    struct template_env env;

    if (id >= 0) {
        buf_reset(scratch);
        template_env_single(&env, &m);
        macro_eval(id, &env, m, scratch);
        *len = scratch->len;
        return buf_str(scratch);
    }
    return msg_get(m, nv_lookup(name, strlen(name)), len);
}

static bool
check_value(struct tester *t, struct msg *m, const char *name, const char *expected,
            struct buf *scratch)
{
    size_t len;
    const char *v = lookup(m, name, scratch, &len);

    if (v && len == strlen(expected) && memcmp(v, expected, len) == 0) return true;
    if (t->json) {
        json_array_append_new(t->failures, json_pack("{s:o, s:o, s:o}", "name", jsonval_str(name),
                                                     "expected", jsonval_str(expected), "got",
                                                     v ? jsonval_text(v, len) : json_null()));
    } else if (v) {
        buf_printf(&t->detail, "  %s: got '%.*s', expected '%s'\n", name, (int)len, v, expected);
    } else {
        buf_printf(&t->detail, "  %s: not set, expected '%s'\n", name, expected);
    }
    return false;
}

static void
add_conflict(const struct pdb_rule *rule, void *arg)
{
    struct buf *b = arg;

    buf_printf(b, " %s", rule->id);
}

/* Like pdbtool, point out examples that more than one rule matches completely. */
static void
report_conflicts(struct pdb *db, const struct msg *m, const struct pdb_example *ex)
{
    struct buf ids = BUF_INIT;

    if (pdb_conflicts(db, m, add_conflict, &ids) > 1)
        fprintf(stderr, "%s:%d: warning: the example of rule %s matches several rules:%s\n",
                ex->file, ex->line, ex->rule->id, buf_str(&ids));
    buf_free(&ids);
}

static void
run_example(struct tester *t, struct pdb *db, const struct pdb_example *ex, struct msg *m,
            struct buf *scratch)
{
    bool ok = true;
    size_t i;

    if (!ex->program || !ex->message) {
        t->skipped++;
        fprintf(stderr, "%s:%d: warning: example of rule %s not tested: %s\n", ex->file, ex->line,
                ex->rule->id,
                !ex->program ? "its <test_message> has no program attribute"
                             : "it has no <test_message> text");
        return;
    }
    msg_reset(m);
    msg_set(m, NV_MESSAGE, ex->message, strlen(ex->message));
    if (ex->program[0]) msg_set(m, NV_PROGRAM, ex->program, strlen(ex->program));
    report_conflicts(db, m, ex);
    pdb_classify(db, m);

    buf_reset(&t->detail);
    if (t->json) json_array_clear(t->failures);
    if (!check_value(t, m, ".classifier.rule_id", ex->rule->id, scratch)) ok = false;
    for (i = 0; i < ex->nvalues; i++)
        if (!check_value(t, m, ex->values[i].name, ex->values[i].value, scratch)) ok = false;

    if (ok)
        t->passed++;
    else
        t->failed++;
    if (t->json) {
        struct buf out = BUF_INIT;
        jsonval_put_new(
            &out, json_pack("{s:o, s:i, s:o, s:o, s:o, s:s, s:O}", "file", jsonval_str(ex->file),
                            "line", ex->line, "rule", jsonval_str(ex->rule->id), "program",
                            jsonval_str(ex->program), "message", jsonval_str(ex->message), "result",
                            ok ? "pass" : "fail", "failures", t->failures));
        buf_putc(&out, '\n');
        fwrite(out.p, 1, out.len, stdout);
        buf_free(&out);
    } else if (!ok) {
        printf("FAIL %s:%d: rule %s, program '%s', message '%s'\n%s", ex->file, ex->line,
               ex->rule->id, ex->program, ex->message, buf_str(&t->detail));
    } else if (t->verbose) {
        printf("pass %s:%d: rule %s\n", ex->file, ex->line, ex->rule->id);
    }
}

static void test_rules(struct tester *t, const char *path);

static bool
ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Runs every .scenario file under a directory, in name order. */
static void
run_scenarios(struct tester *t, const char *dir, int depth)
{
    struct dirent **names;
    int n, i;

    n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) return;
    for (i = 0; i < n; i++) {
        struct buf path = BUF_INIT;
        struct stat st;
        size_t len = strlen(dir);
        while (len > 1 && dir[len - 1] == '/') len--;
        buf_printf(&path, "%.*s/%s", (int)len, dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(buf_str(&path), &st) == 0) {
            if (S_ISDIR(st.st_mode) && depth < 16)
                run_scenarios(t, buf_str(&path), depth + 1);
            else if (S_ISREG(st.st_mode) && ends_with(names[i]->d_name, ".scenario") &&
                     scenario_run_file(buf_str(&path), t->verbose, &t->passed, &t->failed) < 0)
                t->load_failed = true;
        }
        buf_free(&path);
        free(names[i]);
    }
    free(names);
}

static void
test_path(struct tester *t, const char *path)
{
    struct stat st;

    if (ends_with(path, ".scenario")) {
        if (scenario_run_file(path, t->verbose, &t->passed, &t->failed) < 0) t->load_failed = true;
        return;
    }
    test_rules(t, path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) run_scenarios(t, path, 0);
}

/* Every action that raises an alert must set its labels: one failure per line of the check. */
static void
check_alert_labels(struct tester *t, const struct pdb *db)
{
    struct buf out = BUF_INIT;
    const char *line, *nl;

    t->failed += alertlabels_check_pdb(db, &out);
    for (line = buf_str(&out); *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (t->json) {
            struct buf o = BUF_INIT;
            jsonval_put_new(&o, json_pack("{s:s, s:o}", "result", "fail", "alert_labels",
                                          jsonval_text(line, (size_t)(nl - line))));
            buf_putc(&o, '\n');
            fwrite(o.p, 1, o.len, stdout);
            buf_free(&o);
        } else {
            printf("FAIL %.*s\n", (int)(nl - line), line);
        }
    }
    buf_free(&out);
}

static void
test_rules(struct tester *t, const char *path)
{
    struct pdb *db = pdb_new();
    struct msg *m = msg_new();
    struct buf scratch = BUF_INIT;
    size_t i;

    if (pdb_load(db, path) < 0) t->load_failed = true;
    pdb_print_diags(db, stderr);
    for (i = 0; i < pdb_nexamples(db); i++) run_example(t, db, pdb_example_at(db, i), m, &scratch);
    check_alert_labels(t, db);
    buf_free(&scratch);
    msg_unref(m);
    pdb_free(db);
}

int
cmd_test(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"verbose", no_argument, NULL, 'v'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct tester t = {0};
    int c, i;

    while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'v': t.verbose = true; break;
        case 'j': t.json = true; break;
        case 'h':
            puts("usage: corral test [-v] [--json] FILE|DIR|SCENARIO...\n"
                 "Runs every <example> of the rule files.  A FILE is loaded on its own, a DIR as\n"
                 "one database, and the correlation scenarios (*.scenario) under a DIR or named\n"
                 "on the command line are replayed.  An action that raises an alert without its\n"
                 "labels (HOST, corral.alert_id, .severity, .event, .summary) fails too.  Ends\n"
                 "with 'N passed, M failed'; exits 1 on any failure or rule file error.  --json\n"
                 "prints one JSON object per example.  A scenario file's sigma= and\n"
                 "sigma-mapping= run Sigma rules beside the rules; their alerts must be expected.");
            return 0;
        default: return 2;
        }
    }
    if (optind >= argc) {
        cmd_error("test", "no rule files given");
        return 2;
    }
    if (t.json) t.failures = json_array();
    for (i = optind; i < argc; i++) test_path(&t, argv[i]);
    buf_free(&t.detail);
    json_decref(t.failures);
    if (t.skipped) fprintf(stderr, "%lu examples not tested\n", t.skipped);
    if (!t.json) printf("%lu passed, %lu failed\n", t.passed, t.failed);
    return t.failed || t.load_failed ? 1 : 0;
}
