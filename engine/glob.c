/*
 * glob: GLib's GPatternSpec matching; see glob.h.
 */
#include "engine/glob.h"
#include "engine/utf8.h"

bool
glob_match(const char *pat, const char *s, size_t slen)
{
    const char *p = pat, *star = NULL;
    size_t i = 0, star_i = 0;

    while (i < slen) {
        if (*p == '*') {
            star = ++p;
            star_i = i;
        } else if (*p == '?') {
            p++;
            i += utf8_skip((unsigned char)s[i]);
        } else if (*p && *p == s[i]) {
            p++;
            i++;
        } else if (star) {
            p = star;
            star_i += utf8_skip((unsigned char)s[star_i]);
            i = star_i;
        } else {
            return false;
        }
    }
    while (*p == '*') p++;
    return *p == 0 && i == slen;
}
