/*
 * pdb: the pattern database and the classification of a message.
 *
 * Layout: a radix tree over program patterns whose values are programs; each
 * program owns a radix tree over message patterns whose values are rules.
 * The generic program (rulesets without a <pattern>) sits at the root of the
 * program tree, so it serves every program no specific set claims, exactly
 * as in syslog-ng.  A load reads its files first and then builds the trees
 * it added patterns to, each program's on its own (on several threads, with
 * pdb_set_build_threads()).
 */
#include "engine/pdb.h"
#include "engine/durable.h"
#include "engine/evidence.h"
#include "engine/fanout.h"
#include "engine/filter.h"
#include "engine/radix.h"
#include "engine/sigma.h"
#include "engine/strtab.h"
#include "engine/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * The largest rule file read: the biggest public patterndb files are a few
 * MiB; a bound keeps a wrong path (a disk image, a log) from eating memory.
 */
#define PDB_FILE_MAX ((size_t)64 << 20)

struct pdb_program {
    const char *pattern; /* the first program name given; NULL for the generic program */
    struct radix *rules;
    size_t *pending; /* indexes into db->pending of the patterns this load adds, in load order */
    size_t npending, cappending;
};

/*
 * A message pattern of the load under way, inserted into its program's tree
 * once the files are read (build_trees()): the trees of different programs
 * are independent, so several threads may build them.  What the insert
 * says comes back here and becomes a diagnostic in load order.
 */
struct pending_pattern {
    const struct pdb_rule *rule;
    char *pattern;
    int line;
    size_t diag_at; /* pdb_diag() calls before it: where its diagnostic goes */
    enum radix_insert_result result;
    void *existing; /* RADIX_DUPLICATE: the rule that keeps the pattern */
    char *err;      /* RADIX_BAD_PATTERN: why */
};

/* A program pattern of the program tree; several may share one program. */
struct prog_name {
    char *pattern;
    struct pdb_program *prog;
    bool in_tree; /* already inserted into the program tree */
};

struct pdb {
    struct radix *programs;
    struct sigma *sigma; /* Sigma rules evaluated beside these (corr.c), or NULL */
    struct pdb_program *generic;
    struct pdb_program **progs;
    size_t nprogs, capprogs;
    struct prog_name *names;
    size_t nnames, capnames;
    struct strtab *prog_names; /* pattern text; its id - 1 indexes names */

    struct pdb_rule **rules;
    size_t nrules, caprules;
    struct strtab *rule_ids; /* rule ids, interned */
    uint32_t *rule_index;    /* strtab id - 1 -> index into rules */
    size_t nrule_index, caprule_index;

    struct pdb_example **examples;
    size_t nexamples, capexamples;

    struct pdb_diag *diags;
    size_t ndiags, capdiags, nerrors;
    size_t ndiag_calls; /* diagnostics reported, kept or not (MAX_DIAGS) */

    struct pending_pattern *pending; /* the load's patterns, until build_trees() */
    size_t npending, cappending;
    struct pdb_program **dirty; /* the programs they go to */
    size_t ndirty, capdirty;
    unsigned build_threads; /* pdb_set_build_threads() */

    char **files;
    size_t nfiles, capfiles;

    unsigned char *keep; /* see pdb_context_keep(); computed on first use */
    bool keep_known, keep_all;

    /* scratch for classification (pdb_lookup, pdb_apply) */
    struct pdb_scratch *scratch;
    struct buf value;
};

/* What one classification needs to write: the captures of the two radix lookups. */
struct pdb_scratch {
    struct radix_caps pcaps, caps;
};

struct pdb_scratch *
pdb_scratch_new(void)
{
    return xcalloc(1, sizeof(struct pdb_scratch));
}

void
pdb_scratch_free(struct pdb_scratch *s)
{
    if (!s) return;
    radix_caps_free(&s->pcaps);
    radix_caps_free(&s->caps);
    free(s);
}

/* Upper bound on diagnostics kept; a hostile file must not make us store millions. */
#define MAX_DIAGS 1000

struct pdb *
pdb_new(void)
{
    struct pdb *db = xcalloc(1, sizeof(*db));

    db->programs = radix_new();
    db->prog_names = strtab_new(UINT32_MAX);
    db->rule_ids = strtab_new(UINT32_MAX);
    db->generic = xcalloc(1, sizeof(*db->generic));
    db->generic->rules = radix_new();
    db->scratch = pdb_scratch_new();
    return db;
}

void
pdb_synth_free(struct pdb_synth *s)
{
    size_t i;

    for (i = 0; i < s->nvalues; i++) template_free(s->values[i].tpl);
    free(s->values);
    free(s->tags);
    memset(s, 0, sizeof(*s));
}

void
pdb_action_free(struct pdb_action *a)
{
    size_t i;

    free(a->condition_src);
    filter_free(a->condition);
    pdb_synth_free(&a->message);
    template_free(a->cc_id);
    template_free(a->rate_key);
    for (i = 0; i < a->nroutes; i++) free(a->routes[i]);
    free(a->routes);
}

void
pdb_rule_free(struct pdb_rule *r)
{
    size_t i;

    if (!r) return;
    free(r->id);
    free(r->class);
    free(r->provider);
    free(r->description);
    free(r->program);
    pdb_synth_free(&r->msg);
    template_free(r->context_id);
    for (i = 0; i < r->nactions; i++) pdb_action_free(&r->actions[i]);
    free(r->actions);
    for (i = 0; i < r->npatterns; i++) free(r->patterns[i]);
    free(r->patterns);
    for (i = 0; i < r->nalso; i++) free(r->also_ids[i]);
    free(r->also_ids);
    free(r->also);
    free(r);
}

void
pdb_example_free(struct pdb_example *ex)
{
    size_t i;

    if (!ex) return;
    free(ex->program);
    free(ex->message);
    for (i = 0; i < ex->nvalues; i++) {
        free(ex->values[i].name);
        free(ex->values[i].value);
    }
    free(ex->values);
    free(ex);
}

static void
program_free(struct pdb_program *p)
{
    if (!p) return;
    radix_free(p->rules, NULL);
    free(p->pending);
    free(p);
}

void
pdb_free(struct pdb *db)
{
    size_t i;

    if (!db) return;
    sigma_free(db->sigma);
    radix_free(db->programs, NULL);
    for (i = 0; i < db->nprogs; i++) program_free(db->progs[i]);
    free(db->progs);
    for (i = 0; i < db->nnames; i++) free(db->names[i].pattern);
    free(db->names);
    program_free(db->generic);
    strtab_free(db->prog_names);
    for (i = 0; i < db->nrules; i++) pdb_rule_free(db->rules[i]);
    free(db->rules);
    strtab_free(db->rule_ids);
    free(db->rule_index);
    for (i = 0; i < db->nexamples; i++) pdb_example_free(db->examples[i]);
    free(db->examples);
    for (i = 0; i < db->ndiags; i++) free(db->diags[i].text);
    free(db->diags);
    for (i = 0; i < db->npending; i++) free(db->pending[i].pattern);
    free(db->pending);
    free(db->dirty);
    for (i = 0; i < db->nfiles; i++) free(db->files[i]);
    free(db->files);
    free(db->keep);
    pdb_scratch_free(db->scratch);
    buf_free(&db->value);
    free(db);
}

/* ---- diagnostics ---- */

/* Keeps d (its text is then the database's), unless MAX_DIAGS are kept already. */
static void
keep_diag(struct pdb *db, const struct pdb_diag *d)
{
    if (db->ndiags >= MAX_DIAGS) {
        free(d->text);
        return;
    }
    db->diags = xgrow(db->diags, &db->capdiags, db->ndiags + 1, sizeof(*db->diags));
    db->diags[db->ndiags++] = *d;
}

void
pdb_diag(struct pdb *db, enum pdb_diag_level level, const char *file, int line, const char *fmt,
         ...)
{
    struct buf b = BUF_INIT;
    struct pdb_diag d = {level, file, line, NULL};
    va_list ap;

    db->ndiag_calls++;
    if (level == PDB_ERROR) db->nerrors++;
    if (db->ndiags >= MAX_DIAGS) return;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    d.text = xstrndup(buf_str(&b), b.len);
    keep_diag(db, &d);
    buf_free(&b);
}

size_t
pdb_ndiags(const struct pdb *db)
{
    return db->ndiags;
}

const struct pdb_diag *
pdb_diag_at(const struct pdb *db, size_t i)
{
    return i < db->ndiags ? &db->diags[i] : NULL;
}

size_t
pdb_nerrors(const struct pdb *db)
{
    return db->nerrors;
}

void
pdb_print_diags(const struct pdb *db, FILE *out)
{
    size_t i;

    for (i = 0; i < db->ndiags; i++) {
        const struct pdb_diag *d = &db->diags[i];
        if (d->line > 0)
            fprintf(out, "%s:%d: %s: %s\n", d->file, d->line,
                    d->level == PDB_ERROR ? "error" : "warning", d->text);
        else
            fprintf(out, "%s: %s: %s\n", d->file, d->level == PDB_ERROR ? "error" : "warning",
                    d->text);
    }
    if (db->ndiags >= MAX_DIAGS) fprintf(out, "(further messages suppressed)\n");
}

const char *
pdb_intern_file(struct pdb *db, const char *file)
{
    size_t i;

    for (i = 0; i < db->nfiles; i++)
        if (strcmp(db->files[i], file) == 0) return db->files[i];
    db->files = xgrow(db->files, &db->capfiles, db->nfiles + 1, sizeof(*db->files));
    db->files[db->nfiles] = xstrdup(file);
    return db->files[db->nfiles++];
}

size_t
pdb_nfiles(const struct pdb *db)
{
    return db->nfiles;
}

const char *
pdb_file_at(const struct pdb *db, size_t i)
{
    return i < db->nfiles ? db->files[i] : NULL;
}

/* ---- building ---- */

struct pdb_program *
pdb_program_generic(struct pdb *db)
{
    return db->generic;
}

struct pdb_program *
pdb_program_lookup(struct pdb *db, const char *pattern)
{
    uint32_t id;

    if (!pattern) return db->generic;
    id = strtab_lookup(db->prog_names, pattern, strlen(pattern));
    return id ? db->names[id - 1].prog : NULL;
}

void
pdb_program_alias(struct pdb *db, const char *pattern, struct pdb_program *prog)
{
    struct prog_name *n;

    if (strtab_lookup(db->prog_names, pattern, strlen(pattern))) return;
    strtab_intern(db->prog_names, pattern, strlen(pattern));
    db->names = xgrow(db->names, &db->capnames, db->nnames + 1, sizeof(*db->names));
    n = &db->names[db->nnames++];
    n->pattern = xstrdup(pattern);
    n->prog = prog;
    n->in_tree = false;
}

struct pdb_program *
pdb_program_create(struct pdb *db, const char *pattern)
{
    struct pdb_program *p = xcalloc(1, sizeof(*p));

    p->rules = radix_new();
    db->progs = xgrow(db->progs, &db->capprogs, db->nprogs + 1, sizeof(*db->progs));
    db->progs[db->nprogs++] = p;
    pdb_program_alias(db, pattern, p);
    p->pattern = db->names[db->nnames - 1].pattern;
    return p;
}

void
pdb_add_rule(struct pdb *db, struct pdb_rule *rule)
{
    uint32_t id;

    rule->index = (uint32_t)db->nrules;
    db->rules = xgrow(db->rules, &db->caprules, db->nrules + 1, sizeof(*db->rules));
    db->rules[db->nrules++] = rule;
    /* ids are handed out in sequence, so a new id is one past the last; a repeated id keeps
     * pointing at the first rule that used it */
    id = strtab_intern(db->rule_ids, rule->id, strlen(rule->id));
    if (id > db->nrule_index) {
        db->rule_index = xgrow(db->rule_index, &db->caprule_index, id, sizeof(*db->rule_index));
        db->rule_index[id - 1] = rule->index;
        db->nrule_index = id;
    }
}

static const char *
rule_name(const void *value)
{
    return ((const struct pdb_rule *)value)->id;
}

void
pdb_add_pattern(struct pdb *db, struct pdb_program *prog, const struct pdb_rule *rule,
                const char *pattern, int line)
{
    struct pending_pattern *pp;

    db->pending = xgrow(db->pending, &db->cappending, db->npending + 1, sizeof(*db->pending));
    pp = &db->pending[db->npending];
    memset(pp, 0, sizeof(*pp));
    pp->rule = rule;
    pp->pattern = xstrdup(pattern);
    pp->line = line;
    pp->diag_at = db->ndiag_calls;
    if (prog->npending == 0) {
        db->dirty = xgrow(db->dirty, &db->capdirty, db->ndirty + 1, sizeof(*db->dirty));
        db->dirty[db->ndirty++] = prog;
    }
    prog->pending = xgrow(prog->pending, &prog->cappending, prog->npending + 1, sizeof(size_t));
    prog->pending[prog->npending++] = db->npending++;
}

void
pdb_set_build_threads(struct pdb *db, unsigned n)
{
    db->build_threads = n;
}

/* One program's tree: its patterns of this load inserted in load order, then laid out. Runs on any
 * thread: it touches only this program and its pending patterns. */
static void
build_tree(void *arg, size_t i)
{
    struct pdb *db = arg;
    struct pdb_program *prog = db->dirty[i];
    struct buf err = BUF_INIT;
    size_t k;

    for (k = 0; k < prog->npending; k++) {
        struct pending_pattern *pp = &db->pending[prog->pending[k]];
        buf_reset(&err);
        pp->result = radix_insert(prog->rules, pp->pattern, strlen(pp->pattern), (void *)pp->rule,
                                  &pp->existing, &err);
        if (pp->result == RADIX_BAD_PATTERN) pp->err = xstrndup(buf_str(&err), err.len);
    }
    prog->npending = 0;
    radix_compact(prog->rules);
    buf_free(&err);
}

/* What an insert said, among the other diagnostics where it would have come had the pattern been
 * inserted as it was read (pdb_diag() counts it in ndiag_calls, as it would have then). */
static void
report_inserts(struct pdb *db)
{
    struct pdb_diag *read = db->diags;
    size_t nread = db->ndiags, j = 0, k;

    db->diags = NULL;
    db->ndiags = db->capdiags = 0;
    for (k = 0; k < db->npending; k++) {
        struct pending_pattern *pp = &db->pending[k];
        const struct pdb_rule *rule = pp->rule;
        if (pp->result == RADIX_INSERTED) continue;
        while (j < nread && j < pp->diag_at) keep_diag(db, &read[j++]);
        if (pp->result == RADIX_DUPLICATE)
            pdb_diag(db, PDB_WARNING, rule->file, pp->line,
                     "rule %s: pattern already used by rule %s, which keeps it", rule->id,
                     rule_name(pp->existing));
        else
            pdb_diag(db, PDB_ERROR, rule->file, pp->line, "rule %s: bad pattern: %s", rule->id,
                     pp->err);
        free(pp->err);
    }
    while (j < nread) keep_diag(db, &read[j++]);
    free(read);
}

/* The rule trees that this load added patterns to, built on up to build_threads threads. */
static void
build_trees(struct pdb *db)
{
    size_t k;

    fanout_run(db->build_threads ? db->build_threads : 1, db->ndirty, build_tree, db);
    report_inserts(db);
    for (k = 0; k < db->npending; k++) free(db->pending[k].pattern);
    db->npending = 0;
    db->ndirty = 0;
}

void
pdb_add_example(struct pdb *db, struct pdb_example *ex)
{
    db->examples = xgrow(db->examples, &db->capexamples, db->nexamples + 1, sizeof(*db->examples));
    db->examples[db->nexamples++] = ex;
}

/* Program patterns enter the tree once all files are read, as at syslog-ng's </patterndb>. */
static void
insert_programs(struct pdb *db, const char *file)
{
    struct buf err = BUF_INIT;
    size_t i;

    radix_set_root_value(db->programs, db->generic);
    for (i = 0; i < db->nnames; i++) {
        struct prog_name *n = &db->names[i];
        void *existing = NULL;
        if (n->in_tree) continue;
        n->in_tree = true;
        buf_reset(&err);
        if (radix_insert(db->programs, n->pattern, strlen(n->pattern), n->prog, &existing, &err) ==
            RADIX_BAD_PATTERN)
            pdb_diag(db, PDB_ERROR, file, 0, "bad program pattern '%s': %s", n->pattern,
                     buf_str(&err));
    }
    buf_free(&err);
    radix_compact(db->programs); /* laid out for searching (see radix_compact) */
}

/*
 * corral extension: resolves the also-correlate rule ids of the rules loaded
 * so far (a rule names rules of its own file or directory, or of an earlier
 * load).  A name that does not resolve, or a target that cannot correlate
 * (no context-id), is an error with the naming rule's line: a typo must not
 * leave an alert silently off.  Targets do not chain.
 */
static void
resolve_also(struct pdb *db)
{
    size_t i, j;

    for (i = 0; i < db->nrules; i++) {
        struct pdb_rule *r = db->rules[i];
        if (!r->nalso || r->also) continue;
        r->also = xcalloc(r->nalso, sizeof(*r->also));
        for (j = 0; j < r->nalso; j++) {
            const struct pdb_rule *t = pdb_rule_by_id(db, r->also_ids[j]);
            if (!t)
                pdb_diag(db, PDB_ERROR, r->file, r->line,
                         "rule %s: also-correlate names rule '%s', which is not loaded", r->id,
                         r->also_ids[j]);
            else if (t == r || !t->context_id || t->nalso)
                pdb_diag(db, PDB_ERROR, r->file, r->line, "rule %s: also-correlate rule '%s' %s",
                         r->id, r->also_ids[j],
                         t == r     ? "is the rule itself"
                         : t->nalso ? "has an also-correlate of its own (they do not chain)"
                                    : "has no context-id");
            else
                r->also[j] = t;
        }
    }
}

static int
load_file(struct pdb *db, const char *path)
{
    size_t len = 0;
    char *xml = durable_read_file(path, PDB_FILE_MAX, &len);
    int err = errno, rc;
    const char *file = pdb_intern_file(db, path);

    if (!xml) {
        pdb_diag(db, PDB_ERROR, file, 0, "cannot read: %s", durable_strerror(err));
        return -1;
    }
    rc = pdb_load_xml(db, file, xml, len);
    free(xml);
    return rc;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool
is_rule_file(const char *name)
{
    size_t n = strlen(name);

    if (name[0] == '.') return false;
    return (n > 4 && (strcmp(name + n - 4, ".xml") == 0 || strcmp(name + n - 4, ".pdb") == 0));
}

static int
load_dir(struct pdb *db, const char *path, int depth)
{
    DIR *d = opendir(path);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    int rc = 0;

    if (!d) {
        pdb_diag(db, PDB_ERROR, pdb_intern_file(db, path), 0, "cannot open directory: %s",
                 strerror(errno));
        return -1;
    }
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        names = xgrow(names, &cap, n + 1, sizeof(*names));
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (n > 1) qsort(names, n, sizeof(*names), cmp_str); /* an empty directory: names is NULL */
    for (i = 0; i < n; i++) {
        struct buf full = BUF_INIT;
        struct stat st;
        size_t plen = strlen(path);
        while (plen > 1 && path[plen - 1] == '/') plen--;
        buf_printf(&full, "%.*s/%s", (int)plen, path, names[i]);
        if (stat(buf_str(&full), &st) == 0) {
            if (S_ISDIR(st.st_mode) && depth < 16) {
                if (load_dir(db, buf_str(&full), depth + 1) < 0) rc = -1;
            } else if (S_ISREG(st.st_mode) && is_rule_file(names[i])) {
                if (load_file(db, buf_str(&full)) < 0) rc = -1;
            }
        }
        buf_free(&full);
        free(names[i]);
    }
    free(names);
    return rc;
}

int
pdb_load(struct pdb *db, const char *path)
{
    struct stat st;
    size_t errors = db->nerrors;
    int rc;

    if (stat(path, &st) != 0) {
        pdb_diag(db, PDB_ERROR, pdb_intern_file(db, path), 0, "cannot read: %s", strerror(errno));
        return -1;
    }
    db->keep_known = false;
    rc = S_ISDIR(st.st_mode) ? load_dir(db, path, 0) : load_file(db, path);
    build_trees(db);
    insert_programs(db, path);
    resolve_also(db);
    return rc < 0 || db->nerrors > errors ? -1 : 0;
}

int
pdb_load_memory(struct pdb *db, const char *name, const char *xml, size_t len)
{
    size_t errors = db->nerrors;
    const char *file = pdb_intern_file(db, name);
    int rc;

    db->keep_known = false;
    rc = pdb_load_xml(db, file, xml, len);
    build_trees(db);
    insert_programs(db, file);
    resolve_also(db);
    return rc < 0 || db->nerrors > errors ? -1 : 0;
}

/* ---- queries ---- */

size_t
pdb_nrules(const struct pdb *db)
{
    return db->nrules;
}

const struct pdb_rule *
pdb_rule_at(const struct pdb *db, size_t i)
{
    return i < db->nrules ? db->rules[i] : NULL;
}

const struct pdb_rule *
pdb_rule_by_id(const struct pdb *db, const char *id)
{
    uint32_t k = strtab_lookup(db->rule_ids, id, strlen(id));

    return k ? db->rules[db->rule_index[k - 1]] : NULL;
}

size_t
pdb_nexamples(const struct pdb *db)
{
    return db->nexamples;
}

const struct pdb_example *
pdb_example_at(const struct pdb *db, size_t i)
{
    return i < db->nexamples ? db->examples[i] : NULL;
}

const char *
pdb_scope_name(enum pdb_scope s)
{
    switch (s) {
    case PDB_SCOPE_PROCESS: return "process";
    case PDB_SCOPE_PROGRAM: return "program";
    case PDB_SCOPE_HOST: return "host";
    case PDB_SCOPE_GLOBAL: return "global";
    }
    return "?";
}

/* ---- what contexts keep ---- */

static bool
synth_refs(const struct pdb_synth *s, unsigned char *keep)
{
    size_t i;

    /* a generated message that inherits copies values nobody names */
    if (s->inherit != PDB_INHERIT_NONE) return false;
    for (i = 0; i < s->nvalues; i++)
        if (!template_refs(s->values[i].tpl, keep)) return false;
    return true;
}

const unsigned char *
pdb_context_keep(struct pdb *db)
{
    size_t i, j;
    bool ok = true;
    struct evidence_names ev;

    if (db->keep_known) return db->keep_all ? NULL : db->keep;
    if (!db->keep) db->keep = xcalloc(NV_MAX_NAMES + 1, 1);
    memset(db->keep, 0, NV_MAX_NAMES + 1);
    /* the scope fields, for state dumps and generated messages */
    db->keep[NV_HOST] = db->keep[NV_PROGRAM] = db->keep[NV_PID] = 1;
    evidence_names_init(&ev);
    for (i = 0; i < db->nrules && ok; i++) {
        const struct pdb_rule *r = db->rules[i];
        ok = template_refs(r->context_id, db->keep) && synth_refs(&r->msg, db->keep);
        for (j = 0; j < r->nactions && ok; j++) {
            const struct pdb_action *a = &r->actions[j];
            ok = filter_refs(a->condition, db->keep) && synth_refs(&a->message, db->keep) &&
                 template_refs(a->cc_id, db->keep) && template_refs(a->rate_key, db->keep);
            /* the lines an alert carries (evidence.h) are its context's MESSAGEs */
            if (evidence_synth_wants(&ev, &a->message)) db->keep[NV_MESSAGE] = 1;
        }
    }
    db->keep_all = !ok;
    db->keep_known = true;
    return db->keep_all ? NULL : db->keep;
}

/* ---- classification ---- */

static void
set_captures(struct msg *m, const struct radix_caps *caps, const char *text)
{
    size_t i;

    for (i = 0; i < caps->n; i++)
        if (caps->v[i].name) msg_set(m, caps->v[i].name, text + caps->v[i].off, caps->v[i].len);
}

static const struct pdb_program *
select_program(const struct pdb *db, struct msg *m, struct pdb_scratch *s)
{
    size_t plen;
    const char *prog = msg_get(m, NV_PROGRAM, &plen);
    const struct pdb_program *p;

    if (!prog) prog = "", plen = 0;
    p = radix_find(db->programs, prog, plen, &s->pcaps);
    if (p) set_captures(m, &s->pcaps, prog);
    return p;
}

const struct pdb_rule *
pdb_lookup(struct pdb *db, struct msg *m)
{
    return pdb_lookup_r(db, m, db->scratch);
}

const struct pdb_rule *
pdb_lookup_r(const struct pdb *db, struct msg *m, struct pdb_scratch *s)
{
    const struct pdb_program *p = select_program(db, m, s);
    const struct pdb_rule *rule = NULL;
    const char *text;
    size_t tlen;

    if (p) {
        text = msg_get(m, NV_MESSAGE, &tlen);
        if (!text) text = "", tlen = 0;
        rule = radix_find(p->rules, text, tlen, &s->caps);
        if (rule) set_captures(m, &s->caps, text);
    }
    if (!rule) {
        msg_set(m, NV_CLASS, "unknown", 7);
        msg_tag_set(m, TAG_CLASSIFIER_UNKNOWN);
        return NULL;
    }
    if (rule->class)
        msg_set(m, NV_CLASS, rule->class, strlen(rule->class));
    else
        msg_set(m, NV_CLASS, "system", 6);
    msg_set(m, NV_RULE_ID, rule->id, strlen(rule->id));
    return rule;
}

void
pdb_apply(struct pdb *db, const struct pdb_rule *rule, struct msg *m,
          const struct template_env *env)
{
    pdb_apply_r(rule, m, env, &db->value);
}

void
pdb_apply_r(const struct pdb_rule *rule, struct msg *m, const struct template_env *env,
            struct buf *value)
{
    size_t i;

    msg_tag_clear(m, TAG_CLASSIFIER_UNKNOWN);
    msg_tag_set(m, rule->class_tag);
    for (i = 0; i < rule->msg.ntags; i++) msg_tag_set(m, rule->msg.tags[i]);
    for (i = 0; i < rule->msg.nvalues; i++) {
        const struct pdb_value *v = &rule->msg.values[i];
        const char *lit;
        size_t len;
        if (template_is_literal(v->tpl, &lit, &len)) {
            msg_set(m, v->name, lit, len);
            continue;
        }
        buf_reset(value);
        template_eval(v->tpl, env, value);
        msg_set(m, v->name, value->p, value->len);
    }
}

const struct pdb_rule *
pdb_classify(struct pdb *db, struct msg *m)
{
    const struct pdb_rule *rule = pdb_lookup(db, m);
    struct template_env env;

    if (rule) {
        template_env_single(&env, &m);
        pdb_apply(db, rule, m, &env);
    }
    return rule;
}

struct conflict_arg {
    void (*fn)(const struct pdb_rule *, void *);
    void *arg;
};

static void
conflict_cb(void *value, void *arg)
{
    struct conflict_arg *ca = arg;

    if (ca->fn) ca->fn(value, ca->arg);
}

size_t
pdb_conflicts(struct pdb *db, const struct msg *m, void (*fn)(const struct pdb_rule *, void *),
              void *arg)
{
    size_t plen, tlen;
    const char *prog = msg_get(m, NV_PROGRAM, &plen), *text = msg_get(m, NV_MESSAGE, &tlen);
    const struct pdb_program *p;
    struct conflict_arg ca = {fn, arg};

    if (!prog) prog = "", plen = 0;
    if (!text) text = "", tlen = 0;
    p = radix_find(db->programs, prog, plen, NULL);
    if (!p) return 0;
    return radix_find_all(p->rules, text, tlen, conflict_cb, &ca);
}

static const char *
program_name(const void *value)
{
    const struct pdb_program *p = value;

    return p->pattern ? "(rules)" : "(generic rules)";
}

void
pdb_dump(const struct pdb *db, FILE *out, const char *program)
{
    size_t i;

    if (program) {
        const struct pdb_program *p = radix_find(db->programs, program, strlen(program), NULL);
        if (!p) {
            fprintf(out, "no rules for program '%s'\n", program);
            return;
        }
        fprintf(out, "# rules for program '%s' (%s)\n", program,
                p->pattern ? p->pattern : "generic set");
        radix_dump(p->rules, out, rule_name);
        return;
    }
    fprintf(out, "# program tree\n");
    radix_dump(db->programs, out, program_name);
    fprintf(out, "\n# generic rules\n");
    radix_dump(db->generic->rules, out, rule_name);
    for (i = 0; i < db->nprogs; i++) {
        fprintf(out, "\n# rules for program pattern '%s'\n", db->progs[i]->pattern);
        radix_dump(db->progs[i]->rules, out, rule_name);
    }
}

/* True when m's value h is not already text. */
static bool
differs(const struct msg *m, nv_handle h, const char *text)
{
    size_t n;
    const char *v = msg_get(m, h, &n);

    return n != strlen(text) || (n && memcmp(v, text, n) != 0);
}

struct msg *
pdb_action_alert(const struct pdb_action *a, const struct msg *m)
{
    const struct pdb_rule *r = a ? a->rule : NULL;
    const char *class, *program;
    struct msg *copy;

    if (!r) return NULL;
    class = r->class ? r->class : "system";
    program = r->program ? r->program : "";
    if (!differs(m, NV_RULE_ID, r->id) && !differs(m, NV_CLASS, class) &&
        (!r->program || !differs(m, NV_PROGRAM, program)))
        return NULL;
    copy = msg_clone(m);
    msg_set(copy, NV_RULE_ID, r->id, strlen(r->id));
    msg_set(copy, NV_CLASS, class, strlen(class));
    if (r->program) msg_set(copy, NV_PROGRAM, program, strlen(program));
    return copy;
}

void
pdb_set_sigma(struct pdb *db, struct sigma *s)
{
    sigma_free(db->sigma);
    db->sigma = s;
}

const struct sigma *
pdb_sigma(const struct pdb *db)
{
    return db->sigma;
}
