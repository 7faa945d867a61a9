/* tags: process-wide registry of tag names; see tags.h. */
#include "engine/tags.h"
#include "engine/strtab.h"

#include <string.h>

static struct strtab *tags;

static struct strtab *
registry(void)
{
    if (tags) return tags;
    tags = strtab_new(TAG_MAX_TAGS);
    strtab_intern(tags, ".classifier.unknown", strlen(".classifier.unknown"));
    strtab_intern(tags, ".classifier.system", strlen(".classifier.system"));
    return tags;
}

tag_id
tag_intern(const char *name, size_t len)
{
    return strtab_intern(registry(), name, len);
}

tag_id
tag_lookup(const char *name, size_t len)
{
    return strtab_lookup(registry(), name, len);
}

const char *
tag_name(tag_id id, size_t *len)
{
    return strtab_str(registry(), id, len);
}
