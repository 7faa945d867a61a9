/*
 * unicase: Unicode case mapping as GLib does it (see unicase.h), from tables
 * generated out of Python's unicodedata (Unicode 14, as the GLib syslog-ng
 * 3.38 runs on): upper-casing covers letters of category Ll and Lt (and
 * U+0345), lower-casing Lu and Lt, as GLib does.  Regenerate the tables with
 * contrib/gen-unicase.py.
 */
#include "engine/unicase.h"
#include "engine/utf8.h"

#include <stdint.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The tables (unicase_tab.h): simple mappings as runs (every `stride`-th code
 * point from lo to hi maps to itself + delta), one-to-many mappings
 * (SpecialCasing) listed apart, upper-case only.
 */
struct case_range {
    uint32_t lo, hi;
    int32_t delta;
    uint8_t stride;
};

struct case_special {
    uint32_t cp;
    const char *utf8;
};

#include "engine/unicase_tab.h"

static int32_t
case_delta(const struct case_range *r, size_t n, uint32_t c)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < r[mid].lo)
            hi = mid;
        else if (c > r[mid].hi)
            lo = mid + 1;
        else
            return (c - r[mid].lo) % r[mid].stride == 0 ? r[mid].delta : 0;
    }
    return 0;
}

static const char *
upper_special_of(uint32_t c)
{
    size_t lo = 0, hi = ARRAY_LEN(upper_special);

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < upper_special[mid].cp)
            hi = mid;
        else if (c > upper_special[mid].cp)
            lo = mid + 1;
        else
            return upper_special[mid].utf8;
    }
    return NULL;
}

/* Approximates GLib's "is a letter" test for the final-sigma rule by "has a case mapping". */
static bool
is_cased(uint32_t c)
{
    return (c < 0x80 && ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) ||
           case_delta(upper_ranges, ARRAY_LEN(upper_ranges), c) ||
           case_delta(lower_ranges, ARRAY_LEN(lower_ranges), c) || upper_special_of(c);
}

void
unicase_map(struct buf *out, const char *s, size_t len, bool upper)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;

    while (p < end && *p) {
        uint32_t c, c2;
        size_t n = utf8_char(p, (size_t)(end - p), &c), skip;
        int32_t d;

        if (n == 0) {
            skip = utf8_skip(*p);
            if (skip > (size_t)(end - p)) skip = (size_t)(end - p);
            buf_append(out, p, skip);
            p += skip;
            continue;
        }
        p += n;
        if (upper) {
            const char *sp = upper_special_of(c);
            if (sp) {
                buf_puts(out, sp);
                continue;
            }
            d = case_delta(upper_ranges, ARRAY_LEN(upper_ranges), c);
        } else if (c == 0x3a3) {
            /* GREEK CAPITAL SIGMA: final form unless a letter follows */
            bool letter = p < end && utf8_char(p, (size_t)(end - p), &c2) && is_cased(c2);
            utf8_put(out, letter ? 0x3c3 : 0x3c2);
            continue;
        } else if (c == 0x130) {
            /* LATIN CAPITAL LETTER I WITH DOT ABOVE: i + COMBINING DOT ABOVE */
            buf_puts(out, "i\xcc\x87");
            continue;
        } else {
            d = case_delta(lower_ranges, ARRAY_LEN(lower_ranges), c);
        }
        utf8_put(out, (uint32_t)((int32_t)c + d));
    }
}
