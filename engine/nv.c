/* nv: process-wide registry of value names; see nv.h. */
#include "engine/nv.h"
#include "engine/strtab.h"

#include <string.h>

static struct strtab *names;

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
        strtab_intern(names, builtin_names[i], strlen(builtin_names[i]));
    return names;
}

nv_handle
nv_intern(const char *name, size_t len)
{
    /* MSG is syslog-ng's alias of MESSAGE. */
    if (len == 3 && memcmp(name, "MSG", 3) == 0) return NV_MESSAGE;
    return strtab_intern(registry(), name, len);
}

nv_handle
nv_intern_str(const char *name)
{
    return nv_intern(name, strlen(name));
}

nv_handle
nv_lookup(const char *name, size_t len)
{
    if (len == 3 && memcmp(name, "MSG", 3) == 0) return NV_MESSAGE;
    return strtab_lookup(registry(), name, len);
}

const char *
nv_name(nv_handle h, size_t *len)
{
    return strtab_str(registry(), h, len);
}
