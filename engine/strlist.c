/*
 * strlist: see strlist.h.
 */
#include "engine/strlist.h"
#include "engine/xalloc.h"

#include <string.h>

#define SEPARATORS ", "

bool
strlist_next(const char **pos, const char **item, size_t *len)
{
    const char *s = *pos;

    if (!s) return false;
    s += strspn(s, SEPARATORS);
    *item = s;
    *len = strcspn(s, SEPARATORS);
    *pos = s + *len;
    return *len > 0;
}

void
strlist_split(const char *s, char ***list, size_t *n)
{
    size_t cap = 0, len;
    const char *item;

    *list = NULL;
    *n = 0;
    while (strlist_next(&s, &item, &len)) {
        *list = xgrow(*list, &cap, *n + 1, sizeof(**list));
        (*list)[(*n)++] = xstrndup(item, len);
    }
}
