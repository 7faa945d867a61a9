/*
 * pdb: a pattern database, the rules of one or more patterndb XML files.
 *
 * The database maps a message to a rule in two steps, as syslog-ng does:
 * PROGRAM selects a set of rules (a radix tree of program patterns, with the
 * generic rules at its root), then MESSAGE is matched against that set's
 * radix tree of message patterns.  pdb_classify() applies the winning rule:
 * captures, .classifier.class and .classifier.rule_id, tags and values.
 *
 * Rules, actions and examples are plain read-only records once loaded; the
 * correlation engine and the tools read them directly.
 */
#ifndef CORRAL_PDB_H
#define CORRAL_PDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/msg.h"
#include "engine/template.h"

struct pdb;
struct filter;

enum pdb_scope { PDB_SCOPE_PROCESS, PDB_SCOPE_PROGRAM, PDB_SCOPE_HOST, PDB_SCOPE_GLOBAL };

enum pdb_inherit { PDB_INHERIT_NONE, PDB_INHERIT_LAST_MESSAGE, PDB_INHERIT_CONTEXT };

/* A <value name="...">template</value>. */
struct pdb_value {
    nv_handle name;
    struct template *tpl;
};

/* The <message> of an action: how to build a generated message. */
struct pdb_synth {
    enum pdb_inherit inherit;
    struct pdb_value *values;
    size_t nvalues;
    tag_id *tags;
    size_t ntags;
};

enum pdb_trigger { PDB_TRIGGER_MATCH, PDB_TRIGGER_TIMEOUT };
enum pdb_action_kind { PDB_ACTION_MESSAGE, PDB_ACTION_CREATE_CONTEXT };

struct pdb_action {
    enum pdb_trigger trigger;
    enum pdb_action_kind kind;
    char *condition_src;      /* the condition attribute as written, or NULL */
    struct filter *condition; /* compiled condition, or NULL */
    uint32_t rate_n;          /* rate="N/S": N messages per S seconds; 0 = unlimited */
    uint32_t rate_s;
    /* corral extension rate-key="TPL": evaluated per run, it splits the rule's bucket further */
    struct template *rate_key;
    struct pdb_synth message;
    /* create-context */
    struct template *cc_id;
    enum pdb_scope cc_scope;
    double cc_timeout;
    /* corral extension: where generated messages go (route="a,b") */
    char **routes;
    size_t nroutes;
    int line;
    const struct pdb_rule *rule; /* the rule this action belongs to */
};

struct pdb_test_value {
    char *name;
    char *value;
};

/* An <example>: a test message and the values its rule must extract. */
struct pdb_example {
    char *program; /* NULL when the attribute is missing */
    char *message; /* NULL when <test_message> is missing or empty */
    struct pdb_test_value *values;
    size_t nvalues;
    const struct pdb_rule *rule;
    const char *file;
    int line;
};

struct pdb_rule {
    char *id;
    char *class; /* NULL: "system" */
    char *provider;
    char *description;
    tag_id class_tag;     /* .classifier.<class> */
    struct pdb_synth msg; /* the rule's own values and tags */
    /* correlation */
    struct template *context_id; /* NULL: the rule does not correlate */
    enum pdb_scope scope;
    double timeout; /* seconds; fractions are a corral extension */
    struct pdb_action *actions;
    size_t nactions;
    /*
     * corral extension also-correlate="ID,...": the rules whose contexts a
     * message this rule matches joins as well (see corr.c).  also[] is
     * resolved from also_ids once the rules are loaded (pdb_load()).
     */
    char **also_ids;
    const struct pdb_rule **also;
    size_t nalso;
    /* bookkeeping */
    char **patterns;
    size_t npatterns;
    const char *file;
    int line;
    uint32_t index; /* position in the database, stable for its lifetime */
    char *program;  /* the first program name of its ruleset; NULL: the generic ruleset */
};

/* The most rules one also-correlate attribute may name. */
#define PDB_ALSO_MAX 4

enum pdb_diag_level { PDB_WARNING, PDB_ERROR };

struct pdb_diag {
    enum pdb_diag_level level;
    const char *file;
    int line;
    char *text;
};

struct pdb *pdb_new(void);
void pdb_free(struct pdb *db);

/*
 * Loads a patterndb file, or every *.xml and *.pdb file under a directory
 * (recursively, in name order) as one database, as if merged into one file.
 * Can be called several times before the first classification.  Returns 0 when
 * everything loaded cleanly, -1 when any error was reported; problems are in
 * pdb_diags() either way, with file and line.  A file that cannot be read or
 * parsed contributes no rules; a bad pattern drops only that pattern.
 */
int pdb_load(struct pdb *db, const char *path);
/*
 * The programs' trees of a load are built on up to n threads (default 1,
 * the caller's): the trees of different programs are independent.  The
 * database, its diagnostics and their order are the same for every n.
 */
void pdb_set_build_threads(struct pdb *db, unsigned n);
/* Loads a database from memory; name is used in diagnostics. */
int pdb_load_memory(struct pdb *db, const char *name, const char *xml, size_t len);

size_t pdb_ndiags(const struct pdb *db);
const struct pdb_diag *pdb_diag_at(const struct pdb *db, size_t i);
size_t pdb_nerrors(const struct pdb *db);
/* Prints diagnostics as "file:line: error: text". */
void pdb_print_diags(const struct pdb *db, FILE *out);

/*
 * What an executor needs to know of where alert m came from, for a message
 * generated by action a: a copy of m whose .classifier.rule_id,
 * .classifier.class and PROGRAM are those of a's rule (and its ruleset's
 * first program name), or NULL when m already says so.  The message itself
 * stays as syslog-ng generates it (a context-inherited one has no rule id):
 * only what goes to executors gets the copy.
 */
struct msg *pdb_action_alert(const struct pdb_action *a, const struct msg *m);

size_t pdb_nrules(const struct pdb *db);
const struct pdb_rule *pdb_rule_at(const struct pdb *db, size_t i);
const struct pdb_rule *pdb_rule_by_id(const struct pdb *db, const char *id);
size_t pdb_nexamples(const struct pdb *db);
const struct pdb_example *pdb_example_at(const struct pdb *db, size_t i);
/* Files that were loaded, in load order. */
size_t pdb_nfiles(const struct pdb *db);
const char *pdb_file_at(const struct pdb *db, size_t i);

/*
 * Classification in two steps, so that the correlation engine can find a
 * rule's context between them.  pdb_lookup() finds the rule of a message and
 * sets its captures, .classifier.class and .classifier.rule_id; it returns
 * the rule, or NULL (class "unknown", tag .classifier.unknown).
 * pdb_apply() then sets the rule's tags and values; env is the message set
 * its value templates see, ending with m (the correlation engine passes the
 * context).  pdb_classify() is both, with m alone as the set.
 */
const struct pdb_rule *pdb_lookup(struct pdb *db, struct msg *m);
void pdb_apply(struct pdb *db, const struct pdb_rule *rule, struct msg *m,
               const struct template_env *env);
const struct pdb_rule *pdb_classify(struct pdb *db, struct msg *m);

/*
 * The same for several threads at once (engine/par.c): the database is read
 * only, the scratch space each call needs is the caller's (one per thread).
 * pdb_context_keep() must have been called once before the threads start.
 */
struct pdb_scratch;
struct pdb_scratch *pdb_scratch_new(void);
void pdb_scratch_free(struct pdb_scratch *s);
const struct pdb_rule *pdb_lookup_r(const struct pdb *db, struct msg *m, struct pdb_scratch *s);
void pdb_apply_r(const struct pdb_rule *rule, struct msg *m, const struct template_env *env,
                 struct buf *value);

/*
 * Which values a correlation context must keep of its messages: those that
 * some template, condition or inheritance of the database can read (indexed
 * by handle), or NULL when everything must be kept.
 */
const unsigned char *pdb_context_keep(struct pdb *db);

/* Calls fn for every rule whose pattern matches the message completely (pdbtool's conflicts). */
size_t pdb_conflicts(struct pdb *db, const struct msg *m,
                     void (*fn)(const struct pdb_rule *rule, void *arg), void *arg);

/* Writes the program tree and each program's pattern tree (for `corral dump`). */
void pdb_dump(const struct pdb *db, FILE *out, const char *program);

const char *pdb_scope_name(enum pdb_scope s);

/*
 * Sigma detection rules (engine/sigma.h) that the correlation engine
 * evaluates on every message beside this database's rules: the database
 * takes ownership of s (NULL: none).
 */
struct sigma;
void pdb_set_sigma(struct pdb *db, struct sigma *s);
const struct sigma *pdb_sigma(const struct pdb *db);

/* ---- used by the loader (pdb_load.c) ---- */

struct pdb_program;

void pdb_diag(struct pdb *db, enum pdb_diag_level level, const char *file, int line,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Interns a file name for the lifetime of the database. */
const char *pdb_intern_file(struct pdb *db, const char *file);
/* The program rule set for a program pattern; NULL pattern: the generic set. */
struct pdb_program *pdb_program_lookup(struct pdb *db, const char *pattern);
struct pdb_program *pdb_program_create(struct pdb *db, const char *pattern);
struct pdb_program *pdb_program_generic(struct pdb *db);
/* Makes another program pattern select an existing program's rules. */
void pdb_program_alias(struct pdb *db, const char *pattern, struct pdb_program *prog);
/* Takes ownership of the rule. */
void pdb_add_rule(struct pdb *db, struct pdb_rule *rule);
/* One of a rule's message patterns for a program's tree: inserted, in the order given, when the
 * load's files are read (its diagnostic, a duplicate or a bad pattern, comes in that order too). */
void pdb_add_pattern(struct pdb *db, struct pdb_program *prog, const struct pdb_rule *rule,
                     const char *pattern, int line);
/* Takes ownership of the example. */
void pdb_add_example(struct pdb *db, struct pdb_example *ex);
void pdb_rule_free(struct pdb_rule *rule);
void pdb_synth_free(struct pdb_synth *s);
void pdb_action_free(struct pdb_action *a);
void pdb_example_free(struct pdb_example *ex);

/* Implemented in pdb_load.c */
int pdb_load_xml(struct pdb *db, const char *file, const char *xml, size_t len);

#endif
