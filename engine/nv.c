/* nv: process-wide registry of value names; see nv.h. */
#include "engine/nv.h"
#include "engine/hash.h"
#include "engine/strtab.h"

#include <pthread.h>
#include <string.h>

/*
 * Interning and lookups take the lock (names are interned at load time, and
 * at run time only for new structured-data names, within the input budget).  nv_name(), called for
 * every value written out, reads the names array without it: an entry is
 * written once, under the lock, before its handle is returned, and a handle
 * reaches another thread only through a message handed over under a lock.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct strtab *names;
static uint32_t input_names; /* under the lock */
static uint64_t refused;     /* under the lock */
static struct {
    const char *s;
    size_t len;
} namev[NV_MAX_NAMES + 1];

/* Records the name of a handle just interned (under the lock). */
static nv_handle
publish(nv_handle h)
{
    if (h && h <= NV_MAX_NAMES && !namev[h].s) namev[h].s = strtab_str(names, h, &namev[h].len);
    return h;
}

static const char *const builtin_names[NV_NBUILTIN] = {
    [NV_HOST] = "HOST",
    [NV_HOST_FROM] = "HOST_FROM",
    [NV_PROGRAM] = "PROGRAM",
    [NV_PID] = "PID",
    [NV_MSGID] = "MSGID",
    [NV_MESSAGE] = "MESSAGE",
    [NV_SOURCEIP] = "SOURCEIP",
    [NV_LEGACY_MSGHDR] = "LEGACY_MSGHDR",
    [NV_CLASS] = ".classifier.class",
    [NV_RULE_ID] = ".classifier.rule_id",
    [NV_CONTEXT_ID] = ".classifier.context_id",
};

static struct strtab *
registry(void)
{
    int i;

    if (names) return names;
    names = strtab_new(NV_MAX_NAMES);
    for (i = 1; i < NV_NBUILTIN; i++)
        publish(strtab_intern(names, builtin_names[i], strlen(builtin_names[i])));
    return names;
}

/*
 * Each thread's memory of the names it interned, by a hash of the name: the
 * threads that build a load's rule trees (fanout.c) intern every parser's
 * name, mostly the same few, and taking the lock for each made them wait
 * for each other (loading the bench rules with `corral match -j 2`:
 * 12,000 futex calls and 97 ms of CPU; 73 calls and 89 ms remembering).  A
 * handle and its published name never change, so a remembered one is
 * checked against the name alone.
 */
#define RECENT 256
static _Thread_local nv_handle recent[RECENT];

nv_handle
nv_intern(const char *name, size_t len)
{
    /* MSG is syslog-ng's alias of MESSAGE. */
    nv_handle h;
    size_t slot;

    if (len == 3 && memcmp(name, "MSG", 3) == 0) return NV_MESSAGE;
    slot = hash_string(name, len) % RECENT; /* names sharing a slot only cost the lock */
    h = recent[slot];
    if (h && namev[h].len == len && memcmp(namev[h].s, name, len) == 0) return h;
    pthread_mutex_lock(&lock);
    h = publish(strtab_intern(registry(), name, len));
    pthread_mutex_unlock(&lock);
    if (h && h <= NV_MAX_NAMES && namev[h].s) recent[slot] = h;
    return h;
}

nv_handle
nv_intern_input(const char *name, size_t len)
{
    nv_handle h;

    if (len == 3 && memcmp(name, "MSG", 3) == 0) return NV_MESSAGE;
    pthread_mutex_lock(&lock);
    h = strtab_lookup(registry(), name, len);
    if (!h && input_names < NV_MAX_INPUT_NAMES && (h = publish(strtab_intern(names, name, len))))
        input_names++;
    if (!h) refused++;
    pthread_mutex_unlock(&lock);
    return h;
}

void
nv_stats(struct nv_stats *out)
{
    pthread_mutex_lock(&lock);
    out->names = strtab_count(registry());
    out->input_names = input_names;
    out->refused = refused;
    pthread_mutex_unlock(&lock);
}

nv_handle
nv_intern_str(const char *name)
{
    return nv_intern(name, strlen(name));
}

nv_handle
nv_lookup(const char *name, size_t len)
{
    nv_handle h;

    if (len == 3 && memcmp(name, "MSG", 3) == 0) return NV_MESSAGE;
    pthread_mutex_lock(&lock);
    h = strtab_lookup(registry(), name, len);
    pthread_mutex_unlock(&lock);
    return h;
}

const char *
nv_name(nv_handle h, size_t *len)
{
    const char *s;

    if (h && h <= NV_MAX_NAMES && namev[h].s) {
        if (len) *len = namev[h].len;
        return namev[h].s;
    }
    pthread_mutex_lock(&lock);
    s = strtab_str(registry(), h, len);
    pthread_mutex_unlock(&lock);
    return s;
}
