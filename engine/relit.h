/*
 * relit: the literal a regular expression cannot match without, so that a
 * caller may skip the regular expression when the literal does not occur
 * (a prefilter: cheaper than running PCRE2 on every value).
 *
 * The pattern (PCRE2 syntax, no extended mode) is read as a sequence at
 * its top level: runs of literal characters are candidates, a quantifier
 * that allows zero takes its character out of the run, groups, classes,
 * anchors and class escapes end a run.  A top-level alternation, \Q...\E,
 * escapes with arguments or back-references, and inline options with x
 * give no literal: the caller then always runs the expression.  The
 * literal is in lower case and is to be searched without regard to ASCII
 * case, which holds for a case-sensitive expression as for a caseless one.
 */
#ifndef CORRAL_RELIT_H
#define CORRAL_RELIT_H

#include <stddef.h>

/*
 * The longest literal every match of the n-byte pattern re contains (the
 * first of equal ones), at most cap bytes of it, into out in lower case;
 * returns its length, 0 when none can be told.
 */
size_t relit_required(const char *re, size_t n, char *out, size_t cap);

#endif
