/*
 * sigma_cond: the condition language of Sigma detection rules, parsed
 * once into a small tree and evaluated per message.
 *
 *   expr   := term ("or" term)*
 *   term   := factor ("and" factor)*
 *   factor := "not" factor | "(" expr ")" | quant | NAME
 *   quant  := ("1" | N | "all") "of" ("them" | PATTERN)
 *
 * NAME is a detection identifier; PATTERN may hold '*' wildcards and
 * stands for every identifier it matches; "them" stands for every
 * identifier not starting with '_'.  "not" binds tightest, then "and",
 * then "or"; keywords are matched without regard to case.  Identifiers
 * are resolved to indices into the caller's list when parsing, so that an
 * unknown name is an error then, not a silent false later.
 *
 * Evaluation asks the caller for the truth of a selection through a
 * callback, left to right with short-circuit, so that selections that
 * cannot change the outcome are never tested.
 */
#ifndef CORRAL_SIGMA_COND_H
#define CORRAL_SIGMA_COND_H

#include <stdbool.h>
#include <stddef.h>

struct sigma_cond;

/* Most nodes one condition may have (a bound for hostile input). */
#define SIGMA_COND_MAX_NODES 4096

/*
 * Parses src (NUL-terminated) against the identifiers names[0..nnames).
 * Returns the tree, or NULL with a reason in err (at most errlen bytes).
 */
struct sigma_cond *sigma_cond_parse(const char *src, const char *const *names, size_t nnames,
                                    char *err, size_t errlen);
void sigma_cond_free(struct sigma_cond *c);

/* Whether the condition holds, sel(arg, i) telling whether identifier i matched. */
bool sigma_cond_eval(const struct sigma_cond *c, bool (*sel)(void *arg, size_t i), void *arg);

/*
 * The condition in three-valued logic (Kleene's): sel(arg, i) says
 * SIGMA_FALSE, SIGMA_TRUE or SIGMA_UNKNOWN of identifier i.  The loader
 * asks whether a rule can hold while none of its literal selections does
 * (those false, the others unknown): when not, a message without any of
 * their literals need not be evaluated.
 */
enum sigma_tv { SIGMA_FALSE, SIGMA_TRUE, SIGMA_UNKNOWN };
enum sigma_tv sigma_cond_eval3(const struct sigma_cond *c,
                               enum sigma_tv (*sel)(void *arg, size_t i), void *arg);

/* Whether identifier i occurs in the condition (directly or through a pattern). */
bool sigma_cond_uses(const struct sigma_cond *c, size_t i);

#endif
