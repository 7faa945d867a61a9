/*
 * Unit tests: the pattern database loader (structure, errors with file:line)
 * and classification (program selection, what a match sets).  Expectations
 * about syslog-ng behaviour were checked with pdbtool 3.38.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/pdb.h"
#include "tests/unit/unit_run.h"

#define HEAD "<?xml version='1.0'?>\n<patterndb version='4' pub_date='2026-01-01'>\n"
#define TAIL "</patterndb>\n"

static struct pdb *
load(const char *xml, int *rc)
{
    struct pdb *db = pdb_new();

    *rc = pdb_load_memory(db, "mem.xml", xml, strlen(xml));
    return db;
}

/* True when some diagnostic is on that line and contains text. */
static bool
has_diag(const struct pdb *db, int line, const char *text)
{
    size_t i;

    for (i = 0; i < pdb_ndiags(db); i++) {
        const struct pdb_diag *d = pdb_diag_at(db, i);
        if ((line == 0 || d->line == line) && strstr(d->text, text)) return true;
    }
    return false;
}

static const char *
value(struct msg *m, const char *name)
{
    static char out[256];
    size_t len;
    const char *v = msg_get(m, nv_intern_str(name), &len);

    if (!v) return NULL;
    snprintf(out, sizeof(out), "%.*s", (int)len, v);
    return out;
}

static const struct pdb_rule *
classify(struct pdb *db, struct msg *m, const char *program, const char *message)
{
    msg_reset(m);
    if (program) msg_set(m, NV_PROGRAM, program, strlen(program));
    msg_set(m, NV_MESSAGE, message, strlen(message));
    return pdb_classify(db, m);
}

static const char *ssh_rules = HEAD
    "<ruleset name='ssh' id='rs1'><patterns><pattern>sshd</pattern></patterns><rules>\n"
    "<rule provider='t' id='accepted' class='system'><patterns>\n"
    "<pattern>Accepted @ESTRING:method: @for @ESTRING:user: @from @IPvANY:ip@ port "
    "@NUMBER:port@ ssh2</pattern></patterns>\n"
    "<tags><tag>login</tag><tag>usracct</tag></tags>\n"
    "<values><value name='app'>$PROGRAM</value><value name='who'>${user}@@${ip}</value>"
    "<value name='again'>[$who]</value><value name='empty'></value></values>\n"
    "</rule>\n"
    "<rule provider='t' id='failed' class='violation'><patterns>\n"
    "<pattern>Failed password for @ESTRING:user: @from @IPvANY:ip@ port @NUMBER@ ssh2</pattern>\n"
    "</patterns></rule>\n"
    "</rules></ruleset>\n"
    "<ruleset name='generic' id='rs2'><rules>\n"
    "<rule provider='t' id='generic'><patterns><pattern>generic @ANYSTRING:rest@</pattern>"
    "<pattern>Failed password for nobody from 1.2.3.4 port 1 ssh2</pattern></patterns></rule>\n"
    "</rules></ruleset>\n" TAIL;

START_TEST(test_match_sets_everything)
{
    int rc;
    struct pdb *db = load(ssh_rules, &rc);
    struct msg *m = msg_new();
    const struct pdb_rule *r;

    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(pdb_nerrors(db), 0);
    r = classify(db, m, "sshd", "Accepted password for alice from 10.0.0.1 port 2222 ssh2");
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->id, "accepted");
    ck_assert_str_eq(value(m, ".classifier.rule_id"), "accepted");
    ck_assert_str_eq(value(m, ".classifier.class"), "system");
    ck_assert_str_eq(value(m, "user"), "alice");
    ck_assert_str_eq(value(m, "method"), "password");
    ck_assert_str_eq(value(m, "port"), "2222");
    ck_assert_str_eq(value(m, "app"), "sshd");
    ck_assert_str_eq(value(m, "who"), "alice@10.0.0.1");     /* "@@" after ${} is one '@' */
    ck_assert_str_eq(value(m, "again"), "[alice@10.0.0.1]"); /* values see earlier values */
    ck_assert_ptr_null(value(m, "empty"));                   /* empty <value/> sets nothing */
    ck_assert(msg_tag_has(m, tag_intern(".classifier.system", 18)));
    ck_assert(msg_tag_has(m, tag_intern("login", 5)));
    ck_assert(msg_tag_has(m, tag_intern("usracct", 7)));
    ck_assert(!msg_tag_has(m, TAG_CLASSIFIER_UNKNOWN));

    r = classify(db, m, "sshd", "Failed password for bob from ::1 port 22 ssh2");
    ck_assert_str_eq(r->id, "failed");
    ck_assert_str_eq(value(m, ".classifier.class"), "violation");
    ck_assert(msg_tag_has(m, tag_intern(".classifier.violation", 21)));

    r = classify(db, m, "sshd", "something else");
    ck_assert_ptr_null(r);
    ck_assert_str_eq(value(m, ".classifier.class"), "unknown");
    ck_assert_ptr_null(value(m, ".classifier.rule_id"));
    ck_assert(msg_tag_has(m, TAG_CLASSIFIER_UNKNOWN));
    msg_unref(m);
    pdb_free(db);
}
END_TEST

START_TEST(test_program_selection)
{
    int rc;
    struct pdb *db = load(ssh_rules, &rc);
    struct msg *m = msg_new();
    const struct pdb_rule *r;

    /* a program pattern that is a prefix of the program serves it (sshd serves sshd(pam_unix)) */
    r = classify(db, m, "sshd(pam_unix)", "Failed password for x from 1.1.1.1 port 1 ssh2");
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->id, "failed");
    /* the sshd set hides the generic rules for sshd */
    ck_assert_ptr_null(classify(db, m, "sshd", "generic thing"));
    /* other programs, or none, get the generic set */
    r = classify(db, m, "cron", "generic thing");
    ck_assert_str_eq(r->id, "generic");
    ck_assert_str_eq(value(m, "rest"), "thing");
    ck_assert_str_eq(value(m, ".classifier.class"), "system"); /* default class */
    r = classify(db, m, NULL, "generic x");
    ck_assert_str_eq(r->id, "generic");
    /* program names are case-sensitive */
    ck_assert_ptr_null(classify(db, m, "SSHD", "Failed password for x from 1.1.1.1 port 1 ssh2"));
    msg_unref(m);
    pdb_free(db);
}
END_TEST

START_TEST(test_malformed_xml)
{
    int rc;
    struct pdb *db = load(HEAD "<ruleset name='x' id='y'>\n<rules>\n</ruleset>\n" TAIL, &rc);

    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 5, "malformed XML: Opening and ending tag mismatch: rules line 4"));
    ck_assert_uint_eq(pdb_nrules(db), 0);
    pdb_free(db);
}
END_TEST

START_TEST(test_unknown_element_rejects_file)
{
    int rc;
    struct pdb *db =
        load(HEAD "<ruleset name='x' id='y'><rules>\n"
                  "<rule id='a'><patterns><pattern>a</pattern></patterns></rule>\n"
                  "<rule id='b'><bogus/><patterns><pattern>b</pattern></patterns></rule>\n"
                  "</rules></ruleset>\n" TAIL,
             &rc);

    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 5, "unexpected <bogus> in <rule>"));
    ck_assert_uint_eq(pdb_nrules(db), 0); /* like syslog-ng: the whole file is refused */
    pdb_free(db);
}
END_TEST

START_TEST(test_bad_patterns_drop_only_themselves)
{
    int rc;
    struct pdb *db = load(
        HEAD "<ruleset name='x' id='y'><rules>\n"
             "<rule id='unknown'><patterns><pattern>a @FOO:x@</pattern></patterns></rule>\n"
             "<rule id='unterminated'><patterns><pattern>b @STRING:x</pattern></patterns></rule>\n"
             "<rule id='noarg'><patterns><pattern>c @ESTRING:x@</pattern></patterns></rule>\n"
             "<rule id='badre'><patterns><pattern>d @PCRE:x:(@</pattern></patterns></rule>\n"
             "<rule id='good'><patterns><pattern>e @STRING:x@</pattern></patterns></rule>\n"
             "</rules></ruleset>\n" TAIL,
        &rc);
    struct msg *m = msg_new();

    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 4, "unknown parser type 'FOO'"));
    ck_assert(has_diag(db, 5, "unterminated '@'"));
    ck_assert(has_diag(db, 6, "ESTRING needs stop characters"));
    ck_assert(has_diag(db, 7, "bad regular expression"));
    ck_assert_uint_eq(pdb_nerrors(db), 4);
    ck_assert_ptr_nonnull(classify(db, m, "p", "e word"));
    ck_assert_ptr_null(classify(db, m, "p", "a x"));
    msg_unref(m);
    pdb_free(db);
}
END_TEST

START_TEST(test_versions)
{
    int rc;
    struct pdb *db;

    db = load("<patterndb version='6' pub_date='x'><ruleset name='x' id='y'><rules>"
              "<rule id='r'><patterns><pattern>v6</pattern></patterns>"
              "<values><value name='n' type='integer'>1</value></values></rule>"
              "</rules></ruleset></patterndb>",
              &rc);
    ck_assert_int_eq(rc, 0); /* corral reads version 6, which syslog-ng 3.38 refuses */
    ck_assert_uint_eq(pdb_nrules(db), 1);
    pdb_free(db);

    db = load("<patterndb version='7'><ruleset name='x' id='y'/></patterndb>", &rc);
    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 1, "too new"));
    pdb_free(db);

    db = load("<patterndb version='1'><ruleset name='x' id='y'/></patterndb>", &rc);
    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 1, "too old"));
    pdb_free(db);

    db = load("<patterndb><ruleset name='x' id='y'/></patterndb>", &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert(has_diag(db, 1, "assuming version 4"));
    pdb_free(db);

    db = load("<rules/>", &rc);
    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 1, "root element must be <patterndb>"));
    pdb_free(db);
}
END_TEST

START_TEST(test_rule_errors)
{
    int rc;
    struct pdb *db = load(
        HEAD
        "<ruleset name='x' id='y'><rules>\n"
        "<rule><patterns><pattern>x</pattern></patterns></rule>\n"
        "<rule id='s' context-scope='galaxy'/>\n"
        "<rule id='v'><values><value>no name</value></values></rule>\n"
        "<rule id='t'><values><value name='x'>${broken</value></values></rule>\n"
        "<rule id='a'><actions><action trigger='sometimes'><message/></action></actions></rule>\n"
        "<rule id='c'><actions><action condition='\"a\" =~ "
        "\"b\"'><message/></action></actions></rule>\n"
        "<rule id='text'>stray text</rule>\n"
        "<rule id='k'><actions><action rate-key='${a}'><message/></action></actions></rule>\n"
        "<rule id='m'><actions><action rate='1/5' rate-key='${a'><message/></action></actions>"
        "</rule>\n"
        "</rules></ruleset>\n" TAIL,
        &rc);

    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 4, "without an id"));
    ck_assert(has_diag(db, 5, "unknown context-scope 'galaxy'"));
    ck_assert(has_diag(db, 6, "misses its name"));
    ck_assert(has_diag(db, 7, "bad template"));
    ck_assert(has_diag(db, 8, "unknown action trigger"));
    ck_assert(has_diag(db, 9, "bad condition"));
    ck_assert(has_diag(db, 10, "unexpected text"));
    ck_assert(has_diag(db, 11, "rate-key without rate"));
    ck_assert(has_diag(db, 12, "bad template in rate-key"));
    pdb_free(db);
}
END_TEST

START_TEST(test_duplicates_first_wins)
{
    int rc;
    struct pdb *db =
        load(HEAD "<ruleset name='x' id='y'><rules>\n"
                  "<rule id='first'><patterns><pattern>same</pattern></patterns></rule>\n"
                  "<rule id='second'><patterns><pattern>same</pattern></patterns></rule>\n"
                  "</rules></ruleset>\n" TAIL,
             &rc);
    struct msg *m = msg_new();

    ck_assert_int_eq(rc, 0); /* a warning, as in syslog-ng */
    ck_assert(has_diag(db, 5, "already used by rule first"));
    ck_assert_str_eq(classify(db, m, "p", "same")->id, "first");
    msg_unref(m);
    pdb_free(db);
}
END_TEST

START_TEST(test_wrappers_are_transparent_and_text_exact)
{
    int rc;
    /* elements may appear without their plural wrappers; pattern text keeps its spaces */
    struct pdb *db =
        load(HEAD "<ruleset name='x' id='y'><pattern>prog</pattern><rules>\n"
                  "<rule id='r' class='a-very-long-class-name-that-is-cut'>"
                  "<pattern> two  spaces </pattern><tag>t</tag><value name='v'>x</value>"
                  "<description>d</description><url>u</url></rule>\n"
                  "</rules></ruleset>\n" TAIL,
             &rc);
    struct msg *m = msg_new();

    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(classify(db, m, "prog", " two  spaces "));
    ck_assert_ptr_null(classify(db, m, "prog", "two spaces"));
    ck_assert(msg_tag_has(m, TAG_CLASSIFIER_UNKNOWN));
    classify(db, m, "prog", " two  spaces ");
    ck_assert(msg_tag_has(m, tag_intern("t", 1)));
    /* syslog-ng 3.38 cuts the class tag to 31 bytes */
    ck_assert(msg_tag_has(m, tag_intern(".classifier.a-very-long-class-n", 31)));
    ck_assert_str_eq(value(m, ".classifier.class"), "a-very-long-class-name-that-is-cut");
    msg_unref(m);
    pdb_free(db);
}
END_TEST

START_TEST(test_mismatching_program_sets)
{
    int rc;
    struct pdb *db = load(
        HEAD
        "<ruleset name='a' id='a'><pattern>one</pattern><rules>"
        "<rule id='r1'><patterns><pattern>x</pattern></patterns></rule></rules></ruleset>\n"
        "<ruleset name='b' id='b'><pattern>two</pattern><pattern>one</pattern><rules>"
        "<rule id='r2'><patterns><pattern>y</pattern></patterns></rule></rules></ruleset>\n"
        "<ruleset name='c' id='c'><pattern>one</pattern><pattern>three</pattern><rules>"
        "<rule id='r3'><patterns><pattern>z</pattern></patterns></rule></rules></ruleset>\n" TAIL,
        &rc);
    struct msg *m = msg_new();

    ck_assert(has_diag(db, 4, "mismatching program name sets"));
    /* joining rulesets that name the same first program works, and shares the set */
    ck_assert_str_eq(classify(db, m, "three", "x")->id, "r1");
    ck_assert_str_eq(classify(db, m, "one", "z")->id, "r3");
    msg_unref(m);
    pdb_free(db);
}
END_TEST

/* corral extension also-correlate: ids resolved after loading; bad names are errors with the line.
 */
START_TEST(test_also_correlate_load)
{
    int rc;
    struct pdb *db = load(
        HEAD
        "<ruleset name='a' id='a'><pattern>p</pattern><rules>"
        "<rule id='r1' also-correlate='t1, t1,t2'><patterns><pattern>x</pattern></patterns></rule>"
        "<rule id='t1' context-id='u'></rule>"
        "<rule id='t2' context-id='v' context-scope='host'></rule>"
        "</rules></ruleset>\n" TAIL,
        &rc);
    const struct pdb_rule *r;
    struct msg *m = msg_new();

    ck_assert_int_eq(rc, 0);
    r = pdb_rule_by_id(db, "r1");
    /* a repeated name counts once; rules without patterns classify nothing */
    ck_assert_uint_eq(r->nalso, 2);
    ck_assert_ptr_eq(r->also[0], pdb_rule_by_id(db, "t1"));
    ck_assert_ptr_eq(r->also[1], pdb_rule_by_id(db, "t2"));
    ck_assert_str_eq(classify(db, m, "p", "x")->id, "r1");
    ck_assert_ptr_null(classify(db, m, "p", ""));
    pdb_free(db);

    db = load(
        HEAD
        "<ruleset name='a' id='a'><pattern>p</pattern><rules>\n"
        "<rule id='r1' also-correlate='nope'><patterns><pattern>x</pattern></patterns></rule>\n"
        "<rule id='r2' also-correlate='t0'><patterns><pattern>y</pattern></patterns></rule>\n"
        "<rule id='r3' also-correlate='r3' "
        "context-id='c'><patterns><pattern>z</pattern></patterns></rule>\n"
        "<rule id='r4' also-correlate='r3'><patterns><pattern>w</pattern></patterns></rule>\n"
        "<rule id='t0'></rule>\n"
        "</rules></ruleset>\n" TAIL,
        &rc);
    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 4, "names rule 'nope', which is not loaded"));
    ck_assert(has_diag(db, 5, "rule 't0' has no context-id"));
    ck_assert(has_diag(db, 6, "rule 'r3' is the rule itself"));
    ck_assert(has_diag(db, 7, "has an also-correlate of its own"));
    pdb_free(db);
    /* too many names: a structural error, the file is refused */
    db = load(HEAD
              "<ruleset name='a' id='a'><pattern>p</pattern><rules>\n"
              "<rule id='r5' also-correlate='a b c d e'><patterns><pattern>v</pattern></patterns>"
              "</rule>\n</rules></ruleset>\n" TAIL,
              &rc);
    ck_assert_int_eq(rc, -1);
    ck_assert(has_diag(db, 4, "names more than 4 rules"));
    msg_unref(m);
    pdb_free(db);
}
END_TEST

START_TEST(test_directory_is_one_database)
{
    char dir[] = "/tmp/test_pdb.XXXXXX", path[256];
    struct pdb *db = pdb_new();
    struct msg *m = msg_new();
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/a.xml", dir);
    f = fopen(path, "w");
    fputs(HEAD "<ruleset name='a' id='a'><pattern>prog</pattern><rules><rule id='from-a'>"
               "<patterns><pattern>alpha</pattern></patterns></rule></rules></ruleset>" TAIL,
          f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/b.pdb", dir);
    f = fopen(path, "w");
    fputs(HEAD "<ruleset name='b' id='b'><pattern>prog</pattern><rules><rule id='from-b'>"
               "<patterns><pattern>beta</pattern></patterns></rule></rules></ruleset>" TAIL,
          f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/README.md", dir);
    f = fopen(path, "w");
    fputs("not xml", f);
    fclose(f);

    ck_assert_int_eq(pdb_load(db, dir), 0);
    ck_assert_uint_eq(pdb_nfiles(db), 2);
    ck_assert_str_eq(classify(db, m, "prog", "alpha")->id, "from-a");
    ck_assert_str_eq(classify(db, m, "prog", "beta")->id, "from-b"); /* same program merged */

    snprintf(path, sizeof(path), "%s/a.xml", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/b.pdb", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/README.md", dir);
    unlink(path);
    rmdir(dir);
    ck_assert_int_eq(pdb_load(db, dir), -1);
    ck_assert(has_diag(db, 0, "cannot read"));
    msg_unref(m);
    pdb_free(db);
}
END_TEST

/* Writes text to dir/name. */
static void
write_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void
remove_file(const char *dir, const char *name)
{
    char path[256];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
}

/*
 * The patterns are inserted once the files are read, but what an insert
 * says (a duplicate, a bad pattern) stays where reading them one by one put
 * it: after its file's own messages, before the next file's, before what
 * comes after every file (also-correlate names).
 */
START_TEST(test_diagnostics_in_load_order)
{
    static const struct {
        const char *file;
        int line;
        const char *text;
    } want[] = {
        {"a.xml", 2, "version is unspecified"},  {"a.xml", 6, "text after the number ignored"},
        {"a.xml", 4, "already used by rule a1"}, {"a.xml", 5, "bad pattern"},
        {"b.xml", 2, "version is unspecified"},  {"b.xml", 3, "already used by rule a1"},
        {"b.xml", 5, "names rule 'nowhere'"},
    };
    static const unsigned threads[] = {1, 2, 8};
    char dir[] = "/tmp/test_pdb.XXXXXX";
    size_t i, t;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    write_file(dir, "a.xml",
               "<?xml version='1.0'?>\n<patterndb pub_date='2026-01-01'>\n"
               "<ruleset name='a' id='a'><pattern>p</pattern><rules>"
               "<rule id='a1'><patterns><pattern>same</pattern></patterns></rule>\n"
               "<rule id='a2'><patterns><pattern>same</pattern></patterns></rule>\n"
               "<rule id='a3'><patterns><pattern>x @FOO:y@</pattern></patterns></rule>\n"
               "<rule id='a4' context-id='k' context-timeout='5 s'><patterns><pattern>z</pattern>"
               "</patterns></rule>\n"
               "</rules></ruleset></patterndb>\n");
    write_file(dir, "b.xml",
               "<?xml version='1.0'?>\n<patterndb pub_date='2026-01-01'>\n"
               "<ruleset name='b' id='b'><pattern>p</pattern><rules>"
               "<rule id='b1'><patterns><pattern>same</pattern></patterns></rule>\n"
               "<rule id='b2'><patterns><pattern>other</pattern></patterns></rule>\n"
               "<rule id='b3' context-id='k' also-correlate='nowhere'><patterns>"
               "<pattern>w</pattern></patterns></rule>\n"
               "</rules></ruleset></patterndb>\n");
    for (t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
        struct pdb *db = pdb_new();
        pdb_set_build_threads(db, threads[t]);
        ck_assert_int_eq(pdb_load(db, dir), -1);
        ck_assert_uint_eq(pdb_ndiags(db), sizeof(want) / sizeof(want[0]));
        for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            const struct pdb_diag *d = pdb_diag_at(db, i);
            const char *base = strrchr(d->file, '/');
            ck_assert_msg(strcmp(base ? base + 1 : d->file, want[i].file) == 0 &&
                              d->line == want[i].line && strstr(d->text, want[i].text),
                          "%u threads, message %zu: %s:%d: %s", threads[t], i, d->file, d->line,
                          d->text);
        }
        ck_assert_uint_eq(pdb_nerrors(db), 2);
        pdb_free(db);
    }
    remove_file(dir, "a.xml");
    remove_file(dir, "b.xml");
    rmdir(dir);
}
END_TEST

/* A database of many programs, with duplicates, bad patterns and a program set that does not
 * join, as one load and as two. */
static char *
many_programs(unsigned part)
{
    char *xml = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&xml, &len);
    unsigned p, r;

    fputs(HEAD, f);
    for (p = part * 150; p < part * 150 + 150; p++) {
        /* ruleset 75 names program 74's program second: its set does not join */
        if (p == 75)
            fprintf(f,
                    "<ruleset name='s%u' id='s%u'><pattern>prog%u</pattern>"
                    "<pattern>prog74</pattern><rules>\n",
                    p, p, p);
        else
            fprintf(f, "<ruleset name='s%u' id='s%u'><pattern>prog%u</pattern><rules>\n", p, p,
                    p % 140);
        for (r = 0; r < 8; r++) {
            unsigned n = p * 8 + r;
            fprintf(f, "<rule id='r%u'><patterns>", n);
            if (n % 7 == 3)
                fprintf(f, "<pattern>msg %u @NUMBER:n@</pattern>", n - 1); /* a duplicate */
            else if (n % 11 == 5)
                fprintf(f, "<pattern>msg %u @STRING:x</pattern>", n); /* bad */
            else
                fprintf(f,
                        "<pattern>msg %u @NUMBER:n@</pattern><pattern>%s %u @ESTRING:w: @end"
                        "</pattern>",
                        n, r % 2 ? "odd" : "even", n);
            fputs("</patterns></rule>\n", f);
        }
        fputs("</rules></ruleset>\n", f);
    }
    fputs(TAIL, f);
    fclose(f);
    return xml;
}

/* Everything a database shows of its load: its messages in order, and every tree. */
static char *
describe(struct pdb *db)
{
    char *out = NULL;
    size_t len = 0, i;
    FILE *f = open_memstream(&out, &len);

    for (i = 0; i < pdb_ndiags(db); i++) {
        const struct pdb_diag *d = pdb_diag_at(db, i);
        fprintf(f, "%d %s:%d %s\n", (int)d->level, d->file, d->line, d->text);
    }
    fprintf(f, "%zu errors\n", pdb_nerrors(db));
    pdb_dump(db, f, NULL);
    fclose(f);
    return out;
}

/* The trees built on several threads are those of one, and say the same in the same order: after
 * two loads, and after six, whose messages are more than a database keeps. */
START_TEST(test_build_threads_same_database)
{
    static const unsigned threads[] = {1, 2, 3, 16, 100};
    static const char *const names[] = {"zero.xml",  "one.xml",  "two.xml",
                                        "three.xml", "four.xml", "five.xml"};
    char *xml[6], *one[2] = {NULL, NULL};
    struct msg *m = msg_new();
    size_t t, k;

    for (k = 0; k < 6; k++) xml[k] = many_programs((unsigned)k);
    for (t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
        struct pdb *db = pdb_new();
        pdb_set_build_threads(db, threads[t]);
        for (k = 0; k < 6; k++) {
            char *got;
            ck_assert_int_eq(pdb_load_memory(db, names[k], xml[k], strlen(xml[k])), -1);
            if (k != 1 && k != 5) continue;
            got = describe(db);
            if (t == 0) {
                one[k / 5] = got;
                continue;
            }
            ck_assert_msg(strcmp(got, one[k / 5]) == 0,
                          "%u threads, %zu loads: the database differs", threads[t], k + 1);
            free(got);
        }
        /* what the database is made to show */
        ck_assert_str_eq(classify(db, m, "prog3", "msg 25 17")->id, "r25");
        ck_assert_str_eq(classify(db, m, "prog13", "msg 1225 17")->id, "r1225");
        ck_assert_str_eq(classify(db, m, "prog3", "odd 25 x end")->id, "r25");
        ck_assert_ptr_null(classify(db, m, "prog3", "msg 27 x")); /* r27's is bad */
        pdb_free(db);
    }
    ck_assert_ptr_nonnull(strstr(one[0], "zero.xml:"));
    ck_assert_ptr_nonnull(strstr(one[0], "one.xml:"));
    ck_assert_ptr_nonnull(strstr(one[0], "already used by rule r"));
    ck_assert_ptr_nonnull(strstr(one[0], "bad pattern"));
    ck_assert_ptr_nonnull(strstr(one[0], "mismatching program name sets"));
    ck_assert_ptr_null(strstr(one[0], "two.xml:"));
    /* six loads say more than a database keeps (1000 messages): the first are kept, in order */
    ck_assert_ptr_nonnull(strstr(one[1], "four.xml:"));
    ck_assert_ptr_null(strstr(one[1], "five.xml:"));
    for (k = 0; k < 6; k++) free(xml[k]);
    free(one[0]);
    free(one[1]);
    msg_unref(m);
}
END_TEST

START_TEST(test_hostile_messages)
{
    int rc;
    struct pdb *db = load(ssh_rules, &rc);
    struct msg *m = msg_new();
    size_t n = 64 * 1024, i;
    char *big = malloc(n + 1);
    const struct pdb_rule *r;

    /* 64 KiB message */
    memcpy(big, "generic ", 8);
    for (i = 8; i < n; i++) big[i] = (char)('a' + i % 26);
    msg_reset(m);
    msg_set(m, NV_MESSAGE, big, n);
    r = pdb_classify(db, m);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(strlen(value(m, "rest")) > 0, 1);

    /* NUL bytes and invalid UTF-8 are data */
    msg_reset(m);
    msg_set(m, NV_MESSAGE, "generic a\0b\xff\xfe", 14);
    r = pdb_classify(db, m);
    ck_assert_ptr_nonnull(r);
    {
        size_t len;
        const char *v = msg_get(m, nv_intern_str("rest"), &len);
        ck_assert_uint_eq(len, 6);
        ck_assert(memcmp(v, "a\0b\xff\xfe", 5) == 0);
    }
    /* every prefix of a matching message, and binary junk */
    for (i = 0; i < 200; i++) {
        const char *s = "Accepted password for alice from 10.0.0.1 port 2222 ssh2";
        size_t len = i % (strlen(s) + 1);
        msg_reset(m);
        msg_set(m, NV_PROGRAM, "sshd", 4);
        msg_set(m, NV_MESSAGE, s, len);
        pdb_classify(db, m);
        msg_reset(m);
        big[0] = (char)i;
        msg_set(m, NV_MESSAGE, big, i);
        pdb_classify(db, m);
    }
    free(big);
    msg_unref(m);
    pdb_free(db);
}
END_TEST

START_TEST(test_examples_and_rule_lookup)
{
    int rc;
    struct pdb *db =
        load(HEAD "<ruleset name='x' id='y'><rules><rule id='r'>"
                  "<patterns><pattern>m @STRING:v@</pattern></patterns>"
                  "<examples><example><test_message program='p'>m 1</test_message>"
                  "<test_values><test_value name='v'>1</test_value></test_values></example>"
                  "<example><test_message>no program</test_message></example></examples>"
                  "</rule></rules></ruleset>" TAIL,
             &rc);
    const struct pdb_example *ex;

    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(pdb_nexamples(db), 2);
    ex = pdb_example_at(db, 0);
    ck_assert_str_eq(ex->program, "p");
    ck_assert_str_eq(ex->message, "m 1");
    ck_assert_uint_eq(ex->nvalues, 1);
    ck_assert_str_eq(ex->values[0].name, "v");
    ck_assert_ptr_eq(ex->rule, pdb_rule_by_id(db, "r"));
    ck_assert_ptr_null(pdb_example_at(db, 1)->program);
    ck_assert_ptr_null(pdb_rule_by_id(db, "nope"));
    pdb_free(db);
}
END_TEST

START_TEST(test_context_keep)
{
    int rc;
    struct pdb *db = load(
        HEAD "<ruleset name='x' id='y'><rules>"
             "<rule id='r' context-id='c'><patterns><pattern>m @STRING:a@ "
             "@STRING:b@</pattern></patterns>"
             "<actions><action condition='\"${b}\" ne \"x\"'><message>"
             "<values><value name='MESSAGE'>${a}@1</value></values></message></action></actions>"
             "</rule></rules></ruleset>" TAIL,
        &rc);
    const unsigned char *keep;

    ck_assert_int_eq(rc, 0);
    keep = pdb_context_keep(db);
    ck_assert_ptr_nonnull(keep);
    ck_assert(keep[nv_intern_str("a")]); /* read by a generated message */
    ck_assert(keep[nv_intern_str("b")]); /* read by a condition */
    ck_assert(!keep[NV_MESSAGE]);        /* written, never read */
    ck_assert(!keep[NV_LEGACY_MSGHDR]);
    pdb_free(db);

    /* inheritance copies values nobody names: everything is kept */
    db = load(HEAD
              "<ruleset name='x' id='y'><rules><rule id='r' context-id='c'>"
              "<patterns><pattern>m</pattern></patterns><actions><action>"
              "<message inherit-mode='context'/></action></actions></rule></rules></ruleset>" TAIL,
              &rc);
    ck_assert_ptr_null(pdb_context_keep(db));
    pdb_free(db);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("pdb");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_match_sets_everything);
    tcase_add_test(tc, test_program_selection);
    tcase_add_test(tc, test_malformed_xml);
    tcase_add_test(tc, test_unknown_element_rejects_file);
    tcase_add_test(tc, test_bad_patterns_drop_only_themselves);
    tcase_add_test(tc, test_versions);
    tcase_add_test(tc, test_rule_errors);
    tcase_add_test(tc, test_duplicates_first_wins);
    tcase_add_test(tc, test_wrappers_are_transparent_and_text_exact);
    tcase_add_test(tc, test_mismatching_program_sets);
    tcase_add_test(tc, test_also_correlate_load);
    tcase_add_test(tc, test_directory_is_one_database);
    tcase_add_test(tc, test_diagnostics_in_load_order);
    tcase_add_test(tc, test_build_threads_same_database);
    tcase_add_test(tc, test_hostile_messages);
    tcase_add_test(tc, test_examples_and_rule_lookup);
    tcase_add_test(tc, test_context_keep);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
