/*
 * tfunc_int: what the template-function files (tfuncs.c, tf_*.c) share and
 * nothing else sees: the helpers of tfuncs.c for evaluating arguments, the
 * syslog-ng list codec of tf_list.c, integer parsing of tf_num.c and each
 * family's part of the catalogue.  Internal to the engine.
 *
 * Shared conventions:
 *  - syslog-ng lists are comma separated, an item quoted when it holds a
 *    comma, a quote, whitespace or a backslash; tf_list_encode() and struct
 *    tf_list_scan reproduce 3.38's encoder and scanner.
 *  - Functions that need raw arguments (options, filter expressions, literal
 *    strings) have a prepare(), built on tfargs.h.
 *  - Output added by one call is capped at TF_MAX_OUTPUT, so a template
 *    cannot make memory use explode (a list map, an iterate chain).
 */
#ifndef CORRAL_TFUNC_INT_H
#define CORRAL_TFUNC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/tfunc.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Most bytes a single function call may add to its output. */
#define TF_MAX_OUTPUT (1024u * 1024u)

/* ---- tfuncs.c: evaluating arguments ---- */

/* Cuts what a call added beyond TF_MAX_OUTPUT; true when it had to. */
bool tfunc_over_cap(struct buf *out, size_t start);
/* Evaluates argument i into a borrowed scratch buffer (give it back with template_scratch_put). */
struct buf *tfunc_arg_get(const struct tfunc_call *call, int i, const struct template_env *env);

/* All arguments from `first` on, evaluated once (3.38 evaluates each argument once per call). */
struct tfunc_args {
    struct buf *inl[8];
    struct buf **b;
    int n;
};

void tfunc_args_eval(struct tfunc_args *a, const struct tfunc_call *call, int first,
                     const struct template_env *env);
void tfunc_args_release(struct tfunc_args *a);
/* The environment of message i of env alone; $CONTEXT_ID and the clock stay. */
void tfunc_env_one(struct template_env *one, const struct template_env *env, size_t i);

/* ---- tf_cond.c: the context's message set ---- */

/*
 * When call is $(context-values T...): appends what it makes of the oldest
 * message alone (the start of its whole output, complete items) and returns
 * true; else false.
 */
bool tf_context_values_oldest(const struct tfunc_call *call, const struct template_env *env,
                              struct buf *out);
/*
 * When call is $(filter (EXPR) $(context-values T...)): sets *n to the
 * number of items its output holds, without writing it, and returns true;
 * false when that needs the output written and scanned (an item that is
 * empty or not plain, a list longer than TF_MAX_OUTPUT), or call is not
 * that.
 */
bool tf_filter_count(const struct tfunc_call *call, const struct template_env *env, size_t *n);

/* ---- tf_list.c: syslog-ng lists ---- */

/*
 * Appends one list item: as is when it is plain, else in single quotes when
 * it holds only double quotes, else in double quotes; the empty item is "".
 */
void tf_list_encode(struct buf *out, const char *s, size_t len);
/* Whether s is an item tf_list_encode() writes as itself (not empty, nothing to quote): the list's
 * scanner reads it back as itself. */
bool tf_list_plain(const char *s, size_t len);
/* Appends the comma between list items unless the output already ends in one (as 3.38). */
void tf_list_comma(struct buf *out, size_t start);

/*
 * The 3.38 list scanner over a run of arguments: items never span
 * arguments, unquoted empty items are skipped, a quoted item is unescaped,
 * and a malformed one (text after the closing quote, an open quote) is
 * taken raw, up to and including the comma that ends it.
 *     tf_list_scan_init(&s, args, n); while (tf_list_scan_next(&s)) ...s.val...;
 *     tf_list_scan_done(&s);
 */
struct tf_list_scan {
    struct buf **args;
    int nargs, ai;
    const char *p, *end;
    struct buf *val;
};

void tf_list_scan_init(struct tf_list_scan *s, struct buf **args, int nargs);
bool tf_list_scan_next(struct tf_list_scan *s);
void tf_list_scan_done(struct tf_list_scan *s);

/* ---- tf_num.c ---- */

/* strtoll over the whole string (leading blanks and a sign allowed), as 3.38's parse_dec_number. */
bool tf_num_parse_int(const char *s, int base, int64_t *v);

/* ---- the catalogue: each family's functions, ended by a NULL name ---- */

extern const struct tfunc tf_cond_funcs[];   /* tf_cond.c */
extern const struct tfunc tf_list_funcs[];   /* tf_list.c */
extern const struct tfunc tf_net_funcs[];    /* tf_net.c */
extern const struct tfunc tf_num_funcs[];    /* tf_num.c */
extern const struct tfunc tf_string_funcs[]; /* tf_string.c */
extern const struct tfunc tf_value_funcs[];  /* tf_value.c */

#endif
