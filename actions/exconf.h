/*
 * exconf: an executor's configuration as written (the element's name, its
 * attributes and its child elements), kept generic so that the configuration
 * reader needs to know nothing of executor kinds: each kind reads and checks
 * its own settings (see executor.h), with the readers below, so that every
 * kind understands "yes", "30s" or "password-file" the same way and says
 * what is wrong the same way:
 *
 *     FILE:LINE: executor NAME: bad timeout="soon" (a duration ...)
 */
#ifndef CORRAL_EXCONF_H
#define CORRAL_EXCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"

struct template;

/*
 * The default alert-id template: ${corral.alert_id} when the message sets
 * it, else rule id, host and context id, the empty ones left out with their
 * '/'.  corrald's alert store (agent/alerting/alerts.c) keys alerts by it too:
 * here, so that the store needs no queue (nor libuv) for it.
 */
#define QUEUE_ALERT_ID_DEFAULT                                                                     \
    "$(or ${corral.alert_id} ${.classifier.rule_id}"                                               \
    "$(if (\"${.classifier.rule_id}\" ne \"\" and \"${HOST}\" ne \"\") / \"\")"                    \
    "${HOST}"                                                                                      \
    "$(if (\"${.classifier.context_id}\" ne \"\" and "                                             \
    "\"${.classifier.rule_id}${HOST}\" ne \"\") / \"\")"                                           \
    "${.classifier.context_id})"

struct exconf_attr {
    char *name;
    char *value;
};

/* A child element: <varbind .../>, <header .../>, <arg>...</arg>. */
struct exconf_node {
    char *name; /* element name */
    char *text; /* element text, NULL if none */
    struct exconf_attr *attrs;
    size_t nattrs;
    int line;
};

struct exconf {
    char *kind; /* the element's name: "snmp", "smtp", "exec" */
    char *name;
    struct exconf_attr *attrs; /* every attribute as written, name included */
    size_t nattrs;
    struct exconf_node *children;
    size_t nchildren;
    int line;
};

/* The value of an attribute, or NULL. */
const char *exconf_attr(const struct exconf *e, const char *name);
const char *exconf_node_attr(const struct exconf_node *n, const char *name);
/* Whether two configurations are written the same (a reload keeps such an executor running). */
bool exconf_equal(const struct exconf *a, const struct exconf *b);
/* Frees what e holds (not e itself). */
void exconf_free(struct exconf *e);

/*
 * What the readers need to say where an error is: the configuration, the
 * file it came from, and where the "FILE:LINE: executor NAME: message" lines
 * go.  An open() declares one and hands it to every reader.
 */
struct exconf_reader {
    const struct exconf *cfg;
    const char *file;
    struct buf *err;
};

/* Appends "FILE:LINE: executor NAME: message" at the executor's line, or at line (a child's). */
void exconf_error(const struct exconf_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void exconf_error_at(const struct exconf_reader *r, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Reports every attribute that is neither in known nor in more (lists ending
 * with NULL; more may be NULL) nor one every executor has
 * (executor_common_attr), as "unknown attribute X= for KIND".
 */
void exconf_check_attrs(const struct exconf_reader *r, const char *const *known,
                        const char *const *more);
/*
 * The same for a child element's attributes; known NULL: it takes none.
 */
void exconf_check_node_attrs(const struct exconf_reader *r, const struct exconf_node *n,
                             const char *const *known);
/* Whether child n is a <name>; reports it as unknown when not. */
bool exconf_child_is(const struct exconf_reader *r, const struct exconf_node *n, const char *name);

/*
 * The readers.  Each leaves *out as it was (the default) when the attribute
 * is absent, and returns false after reporting the error when its value is
 * not one it takes; true otherwise.
 */
/* "yes" or "no". */
bool exconf_bool(const struct exconf_reader *r, const char *attr, bool *out);
/* One of names (NULL-terminated, matched exactly): *out gets its index. */
bool exconf_enum(const struct exconf_reader *r, const char *attr, const char *const *names,
                 int *out);
/*
 * A duration (units_duration: "30", "5s", "250ms", "10m", "2h", "1d") in
 * seconds, at most max (0: no limit); 0 itself only when zero_ok.
 */
bool exconf_duration(const struct exconf_reader *r, const char *attr, bool zero_ok, double max,
                     double *out);
/* The same in whole milliseconds. */
bool exconf_duration_ms(const struct exconf_reader *r, const char *attr, bool zero_ok, double max,
                        uint64_t *out);
/* A size (units_size: "65536", "64k", "10M", "1G") in bytes, from min to max. */
bool exconf_size(const struct exconf_reader *r, const char *attr, size_t min, size_t max,
                 size_t *out);
/* A whole number from min to max (0: no limit). */
bool exconf_uint(const struct exconf_reader *r, const char *attr, unsigned long min,
                 unsigned long max, unsigned long *out);
/* An absolute path; *out points into the configuration. */
bool exconf_path(const struct exconf_reader *r, const char *attr, const char **out);

/*
 * The next item of a comma-separated list ("a@b.org, c@d.org"), white space
 * around it dropped and empty items skipped; false at the end:
 *     for (p = value; exconf_list_next(&p, &item, &len);)
 */
bool exconf_list_next(const char **pos, const char **item, size_t *len);

/*
 * A template: the attribute's value, or def when it is absent (NULL def:
 * NULL is returned, no error).  NULL after reporting a template that does
 * not compile.
 */
struct template *exconf_template(const struct exconf_reader *r, const char *attr, const char *def);
/* A template written elsewhere (a child's text): what names it in the error, line is its line. */
struct template *exconf_compile(const struct exconf_reader *r, int line, const char *what,
                                const char *src);

/*
 * A secret named by an attribute pair: ATTR-file="/path" (the first line
 * of the file) or ATTR-env="VARIABLE", never the configuration itself, which
 * may be world-readable.  Returns a malloc'ed string, or NULL: when neither
 * is given (no error) or after reporting why it cannot be read.  Free it
 * with exconf_secret_free.
 */
char *exconf_secret(const struct exconf_reader *r, const char *attr);
/* Whether ATTR-file or ATTR-env is given. */
bool exconf_secret_given(const struct exconf_reader *r, const char *attr);
/* Wipes a secret (where the compiler cannot drop it) and frees it; NULL is fine. */
void exconf_secret_free(char *secret);

#endif
