/*
 * nv: the registry of value names.  Every name a message can carry (HOST,
 * MESSAGE, a pattern's capture, .classifier.class, .SDATA.origin.ip) is
 * interned once into a small integer handle; messages, templates and the
 * matcher only ever deal in handles.  The built-in names have fixed handles.
 *
 * The registry is process-wide and thread-safe (the parallel pipeline
 * parses, and a load builds its rule trees, on several threads); reading a
 * name takes no lock, nor does interning again a name the same thread
 * interned recently.  Names are never
 * freed (handles live in messages, templates and rules), so the names that
 * input chooses (structured-data parameters, frames from another process)
 * are registered only within a budget of their own, NV_MAX_INPUT_NAMES:
 * however much input has tried, the configuration and the rules, at load
 * and at every reload, still have the rest of the registry.
 */
#ifndef CORRAL_NV_H
#define CORRAL_NV_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t nv_handle;

enum {
    NV_NONE = 0,
    NV_HOST,
    NV_HOST_FROM,
    NV_PROGRAM,
    NV_PID,
    NV_MSGID,
    NV_MESSAGE,
    NV_SOURCEIP,
    NV_LEGACY_MSGHDR,
    NV_CLASS,      /* .classifier.class */
    NV_RULE_ID,    /* .classifier.rule_id */
    NV_CONTEXT_ID, /* .classifier.context_id */
    NV_NBUILTIN
};

/* Upper bound on distinct names, so hostile input cannot grow the registry forever. */
#define NV_MAX_NAMES 65536
/* Of them, how many nv_intern_input() may register. */
#define NV_MAX_INPUT_NAMES 16384

/* Returns the handle for a name, registering it if new; 0 if the registry is full.  For names
 * of the configuration and rules. */
nv_handle nv_intern(const char *name, size_t len);
nv_handle nv_intern_str(const char *name);
/*
 * For a name that input chose: the handle of a known name, else a new one
 * within the input budget (NV_MAX_INPUT_NAMES names registered this way);
 * 0 when refused, counted in nv_stats().refused.
 */
nv_handle nv_intern_input(const char *name, size_t len);

struct nv_stats {
    uint32_t names;       /* registered, built-in names included */
    uint32_t input_names; /* of them, registered by nv_intern_input() */
    uint64_t refused;     /* nv_intern_input() calls refused a new name */
};
void nv_stats(struct nv_stats *out);
/* Returns the handle for a known name, or 0. */
nv_handle nv_lookup(const char *name, size_t len);
/* The name of a handle (NUL-terminated), or NULL. */
const char *nv_name(nv_handle h, size_t *len);

#endif
