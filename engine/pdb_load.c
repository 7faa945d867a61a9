/*
 * pdb_load: reads patterndb XML (versions 2 to 6) into a pattern database.
 *
 * The accepted structure is syslog-ng 3.38's: the same elements in the same
 * places, wrapper elements (<patterns>, <rules>' siblings <tags>, <values>,
 * <urls>) transparent, element text taken exactly as written, unknown
 * attributes ignored, unknown elements an error.  Like syslog-ng, a file with
 * a structural error contributes no rules at all; unlike syslog-ng, which
 * stops at the first problem, every problem in the file is reported with its
 * line.  A pattern that does not compile drops only that pattern.
 */
#include "engine/evidence.h"
#include "engine/filter.h"
#include "engine/pdb.h"
#include "engine/radix.h"
#include "engine/strlist.h"
#include "engine/xalloc.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlreader.h>
#include <libxml/xmlerror.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Patterns and rules read from one <ruleset>, committed once the whole file is known good. */
struct pending_pattern {
    struct pdb_rule *rule;
    char *text;
    int line;
};

struct ruleset {
    char **programs;
    int *program_lines;
    size_t nprograms, capprograms;
    struct pending_pattern *patterns;
    size_t npatterns, cappatterns;
    int line;
};

struct loader {
    struct pdb *db;
    const char *file;
    int version;
    size_t errors; /* structural errors in this file */
    struct ruleset *rulesets;
    size_t nrulesets, caprulesets;
    struct pdb_rule **rules;
    size_t nrules, caprules;
    struct pdb_example **examples;
    size_t nexamples, capexamples;
};

static void error(struct loader *ld, const xmlNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
error(struct loader *ld, const xmlNode *n, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;

    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    pdb_diag(ld->db, PDB_ERROR, ld->file, n ? (int)xmlGetLineNo(n) : 0, "%s", buf_str(&b));
    buf_free(&b);
    ld->errors++;
}

static bool
is(const xmlNode *n, const char *name)
{
    return strcmp((const char *)n->name, name) == 0;
}

/* The element's text, entities decoded, exactly as written; NULL if it has none. */
static char *
text_of(const xmlNode *n)
{
    xmlChar *c = xmlNodeGetContent(n);
    char *s;

    if (!c) return NULL;
    if (!c[0]) {
        xmlFree(c);
        return NULL;
    }
    s = xstrdup((const char *)c);
    xmlFree(c);
    return s;
}

static char *
attr(const xmlNode *n, const char *name)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    char *s;

    if (!v) return NULL;
    s = xstrdup((const char *)v);
    xmlFree(v);
    return s;
}

static bool
only_whitespace(const char *s)
{
    for (; *s; s++)
        if (!strchr(" \t\r\n", *s)) return false;
    return true;
}

/* Text directly inside an element that holds only elements must be blank. */
static void
check_text(struct loader *ld, const xmlNode *n)
{
    if ((n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) && n->content &&
        !only_whitespace((const char *)n->content))
        error(ld, n, "unexpected text inside <%s>",
              n->parent ? (const char *)n->parent->name : "?");
}

/* An element that must hold only text: child elements are an error. */
static bool
check_text_only(struct loader *ld, const xmlNode *n)
{
    const xmlNode *c;

    for (c = n->children; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE) {
            error(ld, c, "unexpected <%s> inside <%s>", c->name, n->name);
            return false;
        }
    return true;
}

static bool
parse_scope(struct loader *ld, const xmlNode *n, const char *s, enum pdb_scope *scope)
{
    if (strcmp(s, "process") == 0)
        *scope = PDB_SCOPE_PROCESS;
    else if (strcmp(s, "program") == 0)
        *scope = PDB_SCOPE_PROGRAM;
    else if (strcmp(s, "host") == 0)
        *scope = PDB_SCOPE_HOST;
    else if (strcmp(s, "global") == 0)
        *scope = PDB_SCOPE_GLOBAL;
    else {
        error(ld, n, "unknown context-scope '%s' (process, program, host or global)", s);
        return false;
    }
    return true;
}

/*
 * context-timeout: syslog-ng reads an integer (strtol base 0); corral also
 * accepts fractions of a second.
 */
static bool
parse_timeout(struct loader *ld, const xmlNode *n, const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || !isfinite(v) || v < 0 || v > 1e9) {
        error(ld, n, "bad context-timeout '%s': expected seconds", s);
        return false;
    }
    while (*end == ' ') end++;
    if (*end)
        pdb_diag(ld->db, PDB_WARNING, ld->file, (int)xmlGetLineNo(n),
                 "context-timeout '%s': text after the number ignored", s);
    *out = v;
    return true;
}

static struct template *
compile_template(struct loader *ld, const xmlNode *n, const char *what, const char *src)
{
    struct buf err = BUF_INIT;
    struct template *t = template_compile_str(src, &err);

    if (!t) error(ld, n, "bad template in %s '%s': %s", what, src, buf_str(&err));
    buf_free(&err);
    return t;
}

/* corral.evidence_lines and corral.evidence_bytes written as literals must be valid (evidence.h) */
static void
check_evidence_limit(struct loader *ld, const xmlNode *n, const char *name,
                     const struct template *t)
{
    bool bytes = strcmp(name, EVIDENCE_BYTES_NAME) == 0;
    const char *text;
    size_t len, v;

    if (!bytes && strcmp(name, EVIDENCE_LINES_NAME) != 0) return;
    if (!template_is_literal(t, &text, &len) || evidence_parse_limit(text, len, bytes, &v)) return;
    if (bytes)
        error(ld, n, "%s must be a size from %d to %u bytes", name, EVIDENCE_BYTES_MIN,
              EVIDENCE_BYTES_MAX);
    else
        error(ld, n, "%s must be a number from 0 to %d", name, EVIDENCE_LINES_MAX);
}

static void
add_value(struct loader *ld, const xmlNode *n, struct pdb_synth *s, const char *rule_id)
{
    char *name = attr(n, "name"), *text;
    struct pdb_value *v;
    size_t cap = s->nvalues;
    struct template *t;

    if (!check_text_only(ld, n)) goto out;
    if (!name) {
        error(ld, n, "<value> misses its name attribute in rule %s", rule_id);
        goto out;
    }
    if (!name[0]) {
        error(ld, n, "<value> with an empty name in rule %s", rule_id);
        goto out;
    }
    text = text_of(n);
    if (!text) goto out; /* an empty <value/> sets nothing, as in syslog-ng */
    t = compile_template(ld, n, "value", text);
    free(text);
    if (!t) goto out;
    s->values = xgrow(s->values, &cap, s->nvalues + 1, sizeof(*s->values));
    v = &s->values[s->nvalues++];
    v->name = nv_intern_str(name);
    v->tpl = t;
    if (!v->name) error(ld, n, "too many distinct value names");
    check_evidence_limit(ld, n, name, t);
out:
    free(name);
}

static void
add_tag(struct loader *ld, const xmlNode *n, struct pdb_synth *s)
{
    char *text;
    size_t cap = s->ntags;
    tag_id t;

    if (!check_text_only(ld, n)) return;
    text = text_of(n);
    if (!text) return;
    t = tag_intern(text, strlen(text));
    free(text);
    if (!t) {
        error(ld, n, "too many distinct tags");
        return;
    }
    s->tags = xgrow(s->tags, &cap, s->ntags + 1, sizeof(*s->tags));
    s->tags[s->ntags++] = t;
}

/* Children of <message> (and of its transparent <values>/<tags> wrappers). */
static void
load_message_children(struct loader *ld, const xmlNode *n, struct pdb_synth *s, const char *rule_id)
{
    const xmlNode *c;

    for (c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) {
            check_text(ld, c);
            continue;
        }
        if (is(c, "values") || is(c, "tags"))
            load_message_children(ld, c, s, rule_id);
        else if (is(c, "value"))
            add_value(ld, c, s, rule_id);
        else if (is(c, "tag"))
            add_tag(ld, c, s);
        else
            error(ld, c,
                  "unexpected <%s> in <message>: expected <values>, <value>, <tags> or <tag>",
                  c->name);
    }
}

static void
load_message(struct loader *ld, const xmlNode *n, struct pdb_synth *s, const char *rule_id)
{
    char *ip = attr(n, "inherit-properties"), *im = attr(n, "inherit-mode");

    s->inherit = PDB_INHERIT_NONE;
    if (ip) {
        if (strcmp(ip, "context") == 0)
            s->inherit = PDB_INHERIT_CONTEXT;
        else if (strchr("tT1", ip[0]) && ip[0])
            s->inherit = PDB_INHERIT_LAST_MESSAGE;
        else if (strchr("fF0", ip[0]) && ip[0])
            s->inherit = PDB_INHERIT_NONE;
        else
            error(ld, n, "bad inherit-properties '%s' (TRUE, FALSE or context)", ip);
    }
    if (im) {
        if (strcmp(im, "none") == 0)
            s->inherit = PDB_INHERIT_NONE;
        else if (strcmp(im, "last-message") == 0)
            s->inherit = PDB_INHERIT_LAST_MESSAGE;
        else if (strcmp(im, "context") == 0)
            s->inherit = PDB_INHERIT_CONTEXT;
        else
            error(ld, n, "bad inherit-mode '%s' (none, last-message or context)", im);
    }
    free(ip);
    free(im);
    load_message_children(ld, n, s, rule_id);
}

static void
parse_rate(struct loader *ld, const xmlNode *n, const char *s, struct pdb_action *a)
{
    char *end;
    long num = strtol(s, &end, 10), per = 1;

    if (*end == '/') per = strtol(end + 1, &end, 10);
    if (num <= 0 || num > 1000000000 || per < 0 || per > 1000000000 || *end) {
        error(ld, n, "bad rate '%s': expected N or N/SECONDS", s);
        return;
    }
    a->rate_n = (uint32_t)num;
    a->rate_s = per ? (uint32_t)per : 1;
}

/* also-correlate="ID,ID": rule ids separated by commas or spaces, resolved after loading. */
static void
parse_also(struct loader *ld, const xmlNode *n, struct pdb_rule *rule, const char *s)
{
    size_t cap = 0, len, i;
    const char *id;

    while (strlist_next(&s, &id, &len)) {
        for (i = 0; i < rule->nalso; i++)
            if (strlen(rule->also_ids[i]) == len && strncmp(rule->also_ids[i], id, len) == 0) break;
        if (i < rule->nalso) continue;
        if (rule->nalso == PDB_ALSO_MAX) {
            error(ld, n, "rule %s: also-correlate names more than %d rules", rule->id,
                  PDB_ALSO_MAX);
            return;
        }
        rule->also_ids = xgrow(rule->also_ids, &cap, rule->nalso + 1, sizeof(*rule->also_ids));
        rule->also_ids[rule->nalso++] = xstrndup(id, len);
    }
}

static void
load_action(struct loader *ld, const xmlNode *n, struct pdb_rule *rule)
{
    struct pdb_action *a;
    const xmlNode *c;
    char *v;
    size_t cap = rule->nactions;
    bool have_content = false;

    rule->actions = xgrow(rule->actions, &cap, rule->nactions + 1, sizeof(*rule->actions));
    a = &rule->actions[rule->nactions++];
    memset(a, 0, sizeof(*a));
    a->line = (int)xmlGetLineNo(n);
    a->cc_timeout = 0;

    if ((v = attr(n, "trigger"))) {
        if (strcmp(v, "match") == 0)
            a->trigger = PDB_TRIGGER_MATCH;
        else if (strcmp(v, "timeout") == 0)
            a->trigger = PDB_TRIGGER_TIMEOUT;
        else
            error(ld, n, "unknown action trigger '%s' (match or timeout)", v);
        free(v);
    }
    if ((v = attr(n, "condition"))) {
        struct buf err = BUF_INIT;
        a->condition = filter_compile(v, strlen(v), &err);
        if (!a->condition) error(ld, n, "bad condition '%s': %s", v, buf_str(&err));
        buf_free(&err);
        a->condition_src = v;
    }
    if ((v = attr(n, "rate"))) {
        parse_rate(ld, n, v, a);
        free(v);
    }
    if ((v = attr(n, "rate-key"))) {
        if (!a->rate_n) error(ld, n, "rate-key without rate");
        a->rate_key = compile_template(ld, n, "rate-key", v);
        free(v);
    }
    if ((v = attr(n, "route"))) {
        strlist_split(v, &a->routes, &a->nroutes);
        free(v);
    }

    for (c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) {
            check_text(ld, c);
            continue;
        }
        if (have_content) {
            error(ld, c, "an <action> holds one <message> or <create-context>");
            continue;
        }
        if (is(c, "message")) {
            a->kind = PDB_ACTION_MESSAGE;
            load_message(ld, c, &a->message, rule->id);
            have_content = true;
        } else if (is(c, "create-context")) {
            const xmlNode *m;
            a->kind = PDB_ACTION_CREATE_CONTEXT;
            have_content = true;
            a->cc_scope = PDB_SCOPE_GLOBAL; /* syslog-ng 3.38's default for create-context */
            if ((v = attr(c, "context-id"))) {
                a->cc_id = compile_template(ld, c, "create-context context-id", v);
                free(v);
            } else {
                error(ld, c, "<create-context> misses its context-id attribute in rule %s",
                      rule->id);
            }
            if ((v = attr(c, "context-timeout"))) {
                parse_timeout(ld, c, v, &a->cc_timeout);
                free(v);
            }
            if ((v = attr(c, "context-scope"))) {
                parse_scope(ld, c, v, &a->cc_scope);
                free(v);
            }
            for (m = c->children; m; m = m->next) {
                if (m->type != XML_ELEMENT_NODE) {
                    check_text(ld, m);
                    continue;
                }
                if (is(m, "message"))
                    load_message(ld, m, &a->message, rule->id);
                else
                    error(ld, m, "unexpected <%s> in <create-context>: expected <message>",
                          m->name);
            }
        } else {
            error(ld, c, "unexpected <%s> in <action>: expected <message> or <create-context>",
                  c->name);
        }
    }
    if (!have_content) error(ld, n, "<action> without <message> or <create-context>");
}

static void
load_example(struct loader *ld, const xmlNode *n, struct pdb_rule *rule)
{
    struct pdb_example *ex = xcalloc(1, sizeof(*ex));
    const xmlNode *c, *tv;
    size_t cap = 0;

    ex->rule = rule;
    ex->file = ld->file;
    ex->line = (int)xmlGetLineNo(n);
    for (c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) continue; /* text inside <example> is ignored */
        if (is(c, "test_message")) {
            if (!check_text_only(ld, c)) continue;
            free(ex->program);
            free(ex->message);
            ex->program = attr(c, "program");
            ex->message = text_of(c);
        } else if (is(c, "test_values")) {
            for (tv = c->children; tv; tv = tv->next) {
                char *name, *value;
                if (tv->type != XML_ELEMENT_NODE) {
                    check_text(ld, tv);
                    continue;
                }
                if (!is(tv, "test_value")) {
                    error(ld, tv, "unexpected <%s> in <test_values>: expected <test_value>",
                          tv->name);
                    continue;
                }
                if (!check_text_only(ld, tv)) continue;
                name = attr(tv, "name");
                if (!name) {
                    error(ld, tv, "<test_value> misses its name attribute");
                    continue;
                }
                value = text_of(tv);
                if (!value) { /* syslog-ng checks nothing for an empty <test_value/> */
                    free(name);
                    continue;
                }
                ex->values = xgrow(ex->values, &cap, ex->nvalues + 1, sizeof(*ex->values));
                ex->values[ex->nvalues].name = name;
                ex->values[ex->nvalues].value = value;
                ex->nvalues++;
            }
        } else {
            error(ld, c, "unexpected <%s> in <example>: expected <test_message> or <test_values>",
                  c->name);
        }
    }
    ld->examples = xgrow(ld->examples, &ld->capexamples, ld->nexamples + 1, sizeof(*ld->examples));
    ld->examples[ld->nexamples++] = ex;
}

static void
add_rule_pattern(struct loader *ld, struct ruleset *rs, struct pdb_rule *rule, const xmlNode *n)
{
    char *text;
    size_t cap = rule->npatterns;
    struct pending_pattern *p;

    if (!check_text_only(ld, n)) return;
    text = text_of(n);
    if (!text) return; /* an empty <pattern/> adds nothing, as in syslog-ng */
    rule->patterns = xgrow(rule->patterns, &cap, rule->npatterns + 1, sizeof(*rule->patterns));
    rule->patterns[rule->npatterns++] = xstrdup(text);
    rs->patterns = xgrow(rs->patterns, &rs->cappatterns, rs->npatterns + 1, sizeof(*rs->patterns));
    p = &rs->patterns[rs->npatterns++];
    p->rule = rule;
    p->text = text;
    p->line = (int)xmlGetLineNo(n);
}

/* Children of <rule>, including those of its transparent wrappers. */
static void
load_rule_children(struct loader *ld, struct ruleset *rs, struct pdb_rule *rule, const xmlNode *n)
{
    const xmlNode *c, *e;

    for (c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) {
            check_text(ld, c);
            continue;
        }
        if (is(c, "patterns") || is(c, "tags") || is(c, "values") || is(c, "urls")) {
            load_rule_children(ld, rs, rule, c);
        } else if (is(c, "pattern")) {
            add_rule_pattern(ld, rs, rule, c);
        } else if (is(c, "tag")) {
            add_tag(ld, c, &rule->msg);
        } else if (is(c, "value")) {
            add_value(ld, c, &rule->msg, rule->id);
        } else if (is(c, "description")) {
            if (!rule->description) rule->description = text_of(c);
        } else if (is(c, "url")) {
            /* documentation only */
        } else if (is(c, "actions")) {
            for (e = c->children; e; e = e->next) {
                if (e->type != XML_ELEMENT_NODE) {
                    check_text(ld, e);
                    continue;
                }
                if (is(e, "action"))
                    load_action(ld, e, rule);
                else
                    error(ld, e, "unexpected <%s> in <actions>: expected <action>", e->name);
            }
        } else if (is(c, "examples")) {
            for (e = c->children; e; e = e->next) {
                if (e->type != XML_ELEMENT_NODE) {
                    check_text(ld, e);
                    continue;
                }
                if (is(e, "example"))
                    load_example(ld, e, rule);
                else
                    error(ld, e, "unexpected <%s> in <examples>: expected <example>", e->name);
            }
        } else {
            error(ld, c,
                  "unexpected <%s> in <rule>: expected <patterns>, <pattern>, <tags>, <tag>, "
                  "<values>, <value>, <description>, <urls>, <url>, <actions> or <examples>",
                  c->name);
        }
    }
}

static void
load_rule(struct loader *ld, struct ruleset *rs, const xmlNode *n)
{
    struct pdb_rule *rule = xcalloc(1, sizeof(*rule));
    char *v, tagname[32];
    size_t i;

    rule->file = ld->file;
    rule->line = (int)xmlGetLineNo(n);
    rule->scope = PDB_SCOPE_PROCESS;
    rule->id = attr(n, "id");
    if (!rule->id) {
        error(ld, n, "<rule> without an id attribute");
        rule->id = xstrdup("");
    }
    rule->class = attr(n, "class");
    rule->provider = attr(n, "provider");
    /* syslog-ng builds the class tag in a 32-byte buffer, so long class names are cut */
    snprintf(tagname, sizeof(tagname), ".classifier.%s", rule->class ? rule->class : "system");
    rule->class_tag = tag_intern(tagname, strlen(tagname));
    if ((v = attr(n, "context-id"))) {
        rule->context_id = compile_template(ld, n, "context-id", v);
        free(v);
    }
    if ((v = attr(n, "context-timeout"))) {
        parse_timeout(ld, n, v, &rule->timeout);
        free(v);
    }
    if ((v = attr(n, "context-scope"))) {
        parse_scope(ld, n, v, &rule->scope);
        free(v);
    }
    if ((v = attr(n, "also-correlate"))) {
        parse_also(ld, n, rule, v);
        free(v);
    }
    ld->rules = xgrow(ld->rules, &ld->caprules, ld->nrules + 1, sizeof(*ld->rules));
    ld->rules[ld->nrules++] = rule;
    load_rule_children(ld, rs, rule, n);
    /* the actions array is final now: each may point back at its rule */
    for (i = 0; i < rule->nactions; i++) rule->actions[i].rule = rule;
}

/* Children of <ruleset> and of its transparent wrappers (<patterns>, <urls>). */
static void
load_ruleset_children(struct loader *ld, struct ruleset *rs, const xmlNode *n)
{
    const xmlNode *c, *r;

    for (c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) {
            check_text(ld, c);
            continue;
        }
        if (is(c, "patterns") || is(c, "urls")) {
            load_ruleset_children(ld, rs, c);
        } else if (is(c, "pattern")) {
            char *text;
            if (!check_text_only(ld, c)) continue;
            text = text_of(c);
            if (!text) continue;
            rs->programs =
                xgrow(rs->programs, &rs->capprograms, rs->nprograms + 1, sizeof(*rs->programs));
            rs->program_lines = xrealloc(rs->program_lines, rs->capprograms * sizeof(int));
            rs->program_lines[rs->nprograms] = (int)xmlGetLineNo(c);
            rs->programs[rs->nprograms++] = text;
        } else if (is(c, "rules")) {
            for (r = c->children; r; r = r->next) {
                if (r->type != XML_ELEMENT_NODE) {
                    check_text(ld, r);
                    continue;
                }
                if (is(r, "rule"))
                    load_rule(ld, rs, r);
                else
                    error(ld, r, "unexpected <%s> in <rules>: expected <rule>", r->name);
            }
        } else if (is(c, "description") || is(c, "url")) {
            /* documentation only */
        } else {
            error(ld, c,
                  "unexpected <%s> in <ruleset>: expected <rules>, <urls>, <url>, <description>, "
                  "<patterns> or <pattern>",
                  c->name);
        }
    }
}

/* Resolves a ruleset's program set, following syslog-ng's rule for joining rulesets. */
static struct pdb_program *
resolve_program(struct loader *ld, struct ruleset *rs)
{
    struct pdb_program *prog, *other;
    size_t i;

    if (rs->nprograms == 0) return pdb_program_generic(ld->db);
    prog = pdb_program_lookup(ld->db, rs->programs[0]);
    if (!prog) prog = pdb_program_create(ld->db, rs->programs[0]);
    for (i = 1; i < rs->nprograms; i++) {
        other = pdb_program_lookup(ld->db, rs->programs[i]);
        if (!other) {
            pdb_program_alias(ld->db, rs->programs[i], prog);
        } else if (other != prog) {
            pdb_diag(ld->db, PDB_ERROR, ld->file, rs->program_lines[i],
                     "joining rulesets with mismatching program name sets: program '%s' already "
                     "has rules of its own",
                     rs->programs[i]);
            return NULL;
        }
    }
    return prog;
}

static void
commit(struct loader *ld)
{
    size_t i, j;

    for (i = 0; i < ld->nrules; i++) pdb_add_rule(ld->db, ld->rules[i]);
    ld->nrules = 0;
    for (i = 0; i < ld->nrulesets; i++) {
        struct ruleset *rs = &ld->rulesets[i];
        struct pdb_program *prog = resolve_program(ld, rs);
        if (!prog) continue;
        for (j = 0; j < rs->npatterns; j++) {
            struct pdb_rule *rule = rs->patterns[j].rule;
            if (!rule->program && rs->nprograms) rule->program = xstrdup(rs->programs[0]);
            pdb_add_pattern(ld->db, prog, rule, rs->patterns[j].text, rs->patterns[j].line);
        }
    }
    for (i = 0; i < ld->nexamples; i++) pdb_add_example(ld->db, ld->examples[i]);
    ld->nexamples = 0;
}

static void
loader_free(struct loader *ld)
{
    size_t i, j;

    for (i = 0; i < ld->nrulesets; i++) {
        struct ruleset *rs = &ld->rulesets[i];
        for (j = 0; j < rs->nprograms; j++) free(rs->programs[j]);
        free(rs->programs);
        free(rs->program_lines);
        for (j = 0; j < rs->npatterns; j++) free(rs->patterns[j].text);
        free(rs->patterns);
    }
    free(ld->rulesets);
    for (i = 0; i < ld->nrules; i++) pdb_rule_free(ld->rules[i]);
    free(ld->rules);
    for (i = 0; i < ld->nexamples; i++) pdb_example_free(ld->examples[i]);
    free(ld->examples);
}

/* libxml2 reports syntax errors through this; each becomes a diagnostic with its line. */
static void
xml_error(void *arg, xmlErrorPtr e)
{
    struct loader *ld = arg;
    char msg[512];
    size_t n;

    if (!e || e->level == XML_ERR_WARNING) return;
    snprintf(msg, sizeof(msg), "%s", e->message ? e->message : "XML error");
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = '\0';
    pdb_diag(ld->db, PDB_ERROR, ld->file, e->line, "malformed XML: %s", msg);
    ld->errors++;
}

/*
 * The file is read with libxml2's streaming reader, and only one <ruleset>
 * at a time is expanded into a tree: a 10,000-rule file then costs the
 * memory of one ruleset, not of a DOM of the whole file.
 */
int
pdb_load_xml(struct pdb *db, const char *file, const char *xml, size_t len)
{
    struct loader ld = {.db = db, .file = file};
    xmlTextReaderPtr rd;
    bool seen_root = false;
    int ret, rc = 0;

    if (len > INT32_MAX) {
        pdb_diag(db, PDB_ERROR, file, 0, "file too large");
        return -1;
    }
    /* no network, no external entities, no entity expansion: rule files are data */
    rd = xmlReaderForMemory(xml, (int)len, file, NULL, XML_PARSE_NONET | XML_PARSE_NOWARNING);
    if (!rd) {
        pdb_diag(db, PDB_ERROR, file, 0, "cannot read XML");
        return -1;
    }
    xmlTextReaderSetStructuredErrorHandler(rd, xml_error, &ld);
    ret = xmlTextReaderRead(rd);
    while (ret == 1 && !ld.errors) {
        int type = xmlTextReaderNodeType(rd), depth = xmlTextReaderDepth(rd);
        xmlNodePtr node = xmlTextReaderCurrentNode(rd);

        if (depth == 0 && type == XML_READER_TYPE_ELEMENT) {
            xmlChar *version;
            if (!is(node, "patterndb")) {
                error(&ld, node, "the root element must be <patterndb>, not <%s>", node->name);
                break;
            }
            seen_root = true;
            version = xmlTextReaderGetAttribute(rd, (const xmlChar *)"version");
            if (!version) {
                pdb_diag(db, PDB_WARNING, file, (int)xmlGetLineNo(node),
                         "patterndb version is unspecified, assuming version 4");
                ld.version = 4;
            } else {
                ld.version = atoi((const char *)version);
                if (ld.version < 2)
                    error(&ld, node,
                          "patterndb version %s is too old: corral reads versions 2 to 6",
                          (const char *)version);
                else if (ld.version > 6)
                    error(&ld, node,
                          "patterndb version %s is too new: corral reads versions 2 to 6",
                          (const char *)version);
                xmlFree(version);
            }
        } else if (depth == 1 && type == XML_READER_TYPE_ELEMENT) {
            struct ruleset *rs;
            if (!is(node, "ruleset")) {
                error(&ld, node, "unexpected <%s> in <patterndb>: expected <ruleset>", node->name);
            } else if (!(node = xmlTextReaderExpand(rd))) {
                break; /* malformed inside; the error handler has reported it */
            } else {
                ld.rulesets =
                    xgrow(ld.rulesets, &ld.caprulesets, ld.nrulesets + 1, sizeof(*ld.rulesets));
                rs = &ld.rulesets[ld.nrulesets++];
                memset(rs, 0, sizeof(*rs));
                rs->line = (int)xmlGetLineNo(node);
                load_ruleset_children(&ld, rs, node);
            }
            ret = xmlTextReaderNext(rd); /* past the subtree, freeing it */
            continue;
        } else if (depth == 1 && (type == XML_READER_TYPE_TEXT || type == XML_READER_TYPE_CDATA)) {
            check_text(&ld, node);
        }
        ret = xmlTextReaderRead(rd);
    }
    if (ret < 0 && !ld.errors) pdb_diag(db, PDB_ERROR, file, 0, "malformed XML");
    if (ret < 0) ld.errors++;
    if (!seen_root && !ld.errors) error(&ld, NULL, "no <patterndb> element");
    xmlFreeTextReader(rd);
    if (ld.errors)
        rc = -1;
    else
        commit(&ld);
    loader_free(&ld);
    return rc;
}
