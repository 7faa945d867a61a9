/*
 * radix: the pattern matcher.  A radix tree over literal text whose nodes can
 * also be field parsers (@STRING@, @IPv4@, ...), searched the way syslog-ng
 * 3.38 searches it: literal children before parsers, parsers in the order
 * they were inserted, backtracking between alternatives, a complete match
 * preferred over a pattern that only matches a prefix of the input.
 *
 * Used twice by the pattern database: once over program names, once per
 * program over message texts.
 */
#ifndef CORRAL_RADIX_H
#define CORRAL_RADIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/buf.h"
#include "engine/nv.h"

struct radix;

/*
 * One value captured by a parser on the path to the match (name 0: an
 * unnamed parser).  Always within the searched text; like syslog-ng 3.38,
 * which keeps them in 16 bits, offset and length wrap at 65536.
 */
struct radix_cap {
    nv_handle name;
    uint32_t off; /* into the searched text */
    uint32_t len;
};

/* Reusable capture vector: keeps its memory between searches. */
struct radix_caps {
    struct radix_cap *v;
    size_t n, cap;
};

enum radix_insert_result {
    RADIX_INSERTED,
    RADIX_DUPLICATE, /* the pattern already had a value; *existing is set to it */
    RADIX_BAD_PATTERN,
};

struct radix *radix_new(void);
void radix_free(struct radix *r, void (*free_value)(void *value));

/*
 * Inserts a pattern.  On RADIX_DUPLICATE the tree is unchanged and the first
 * value keeps the pattern, as in syslog-ng.  On RADIX_BAD_PATTERN err says why
 * and the value is not inserted; the pattern's text before the error is, as
 * nodes without a value, because syslog-ng leaves them and they fix the
 * order in which parsers are tried.
 */
enum radix_insert_result radix_insert(struct radix *r, const char *pattern, size_t len, void *value,
                                      void **existing, struct buf *err);

/*
 * Lays the tree out in one block, in the order a search walks it: the same
 * tree and the same results, fewer cache misses.  Call it when a batch of
 * inserts is done; a later insert undoes it (the tree can be compacted
 * again).  Not safe while another thread searches the tree.
 */
void radix_compact(struct radix *r);

/* Sets the value of the empty pattern (the root); the program tree keeps the generic rules there.
 */
void radix_set_root_value(struct radix *r, void *value);

/* Checks a pattern's syntax without inserting it. */
bool radix_check_pattern(const char *pattern, size_t len, struct buf *err);

/*
 * Finds the value of the pattern that matches text.  Captures of the winning
 * path are appended to caps (which is cleared first), shallowest first.
 */
void *radix_find(const struct radix *r, const char *text, size_t len, struct radix_caps *caps);

/*
 * Calls fn for the value of every pattern that matches text completely
 * (what pdbtool reports as a "rule conflict").  Returns how many there were.
 */
size_t radix_find_all(const struct radix *r, const char *text, size_t len,
                      void (*fn)(void *value, void *arg), void *arg);

/* Writes the tree, one node a line, indented by depth. */
void radix_dump(const struct radix *r, FILE *out, const char *(*value_name)(const void *value));

void radix_caps_free(struct radix_caps *caps);

#endif
