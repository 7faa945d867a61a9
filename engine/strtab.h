/*
 * strtab: a table of interned strings.  Each distinct string gets a small,
 * stable, non-zero id; ids let the per-message path compare and index names
 * without hashing.  Used for value names (nv.c) and tags (tags.c).
 */
#ifndef CORRAL_STRTAB_H
#define CORRAL_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab;

/* A table holding at most `max` strings. */
struct strtab *strtab_new(uint32_t max);
void strtab_free(struct strtab *t);
/* Returns the id of the string, adding it if needed; 0 when the table is full. */
uint32_t strtab_intern(struct strtab *t, const char *s, size_t len);
/* Returns the id of the string, or 0 if it was never interned. */
uint32_t strtab_lookup(const struct strtab *t, const char *s, size_t len);
/* The string of an id (NUL-terminated), or NULL for an unknown id. */
const char *strtab_str(const struct strtab *t, uint32_t id, size_t *len);
uint32_t strtab_count(const struct strtab *t);

#endif
