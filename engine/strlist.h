/*
 * strlist: the lists an attribute holds, items separated by commas, spaces
 * or both ("web1, web2 db1"): a rule's routes= and also-correlate=, a
 * route's to=, an inhibit's equal=, allowed-names=, env-pass=.  An empty
 * item ("a,,b") is no item.
 */
#ifndef CORRAL_STRLIST_H
#define CORRAL_STRLIST_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The next item at *pos: true with it in item and len (not NUL-terminated)
 * and *pos moved past it, or false at the end of the list.
 */
bool strlist_next(const char **pos, const char **item, size_t *len);
/* Sets *list to an array of copies of the *n items of s (NULL: no items; *list NULL when none). */
void strlist_split(const char *s, char ***list, size_t *n);

#endif
