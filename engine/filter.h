/*
 * filter: syslog-ng filter expressions, as rule files use them in action
 * conditions and in $(if), $(grep) and $(context-lookup):
 *
 *   "$(context-length)" >= "5" and not tags("noalert")
 *   match("^Accepted" value("MESSAGE")) or program("sshd")
 *
 * Comparisons: == != < > <= >= compare as integers (syslog-ng 3.38 reads
 * each side like atoi), eq ne lt gt le ge as strings.  Functions: match(),
 * message(), program(), host(), tags(), level()/priority(), facility().
 */
#ifndef CORRAL_FILTER_H
#define CORRAL_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/buf.h"
#include "engine/template.h"

struct filter;

/* Compiles an expression; NULL with a message in err on a syntax error. */
struct filter *filter_compile(const char *src, size_t len, struct buf *err);
void filter_free(struct filter *f);
/* Marks the stored values the expression reads (see template_refs). */
bool filter_refs(const struct filter *f, unsigned char *keep);
/* Evaluates against env; functions such as match() look at the current message (@0). */
bool filter_eval(const struct filter *f, const struct template_env *env);

/*
 * f evaluated for many values of $_ (env->context_id) over environments
 * that differ in nothing else, as $(filter) does over a list's items: a
 * comparison with one side that reads only the messages' values
 * (template_values_only) has that side evaluated once, at begin.  Between
 * begin and end, filter_each_eval(fe, env) is filter_eval(f, env).
 */
struct filter_each {
    const struct filter *f;
    struct buf *fixed; /* that side's text; NULL: f is evaluated whole */
    bool fixed_left;
};
void filter_each_begin(struct filter_each *fe, const struct filter *f,
                       const struct template_env *env);
bool filter_each_eval(const struct filter_each *fe, const struct template_env *env);
void filter_each_end(struct filter_each *fe);

#endif
