/*
 * units: durations and sizes as configuration files write them ("250ms",
 * "5m", "64k"), read the same way wherever a setting takes one.  What does
 * not fit is refused, never wrapped or rounded to infinity: strtoull and
 * strtod saturate on overflow, and a shift by the unit would wrap.
 */
#include "engine/units.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

double
units_duration(const char *s)
{
    char *end;
    double v;

    /* strtod would take a sign, spaces, "inf", "nan" and "0x1p4" too */
    if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '.' && s[1] >= '0' && s[1] <= '9'))) return -1;
    if (strchr(s, 'x') || strchr(s, 'X')) return -1;
    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v) || v < 0) return -1;
    if (!*end || strcmp(end, "s") == 0)
        ;
    else if (strcmp(end, "ms") == 0)
        v /= 1000;
    else if (strcmp(end, "m") == 0)
        v *= 60;
    else if (strcmp(end, "h") == 0)
        v *= 3600;
    else if (strcmp(end, "d") == 0)
        v *= 86400;
    else
        return -1;
    return v <= UNITS_DURATION_MAX ? v : -1;
}

/* The digits at the start of s into *v; 0 when none, -1 when they do not fit. */
static int
digits(const char *s, unsigned long long *v, char **end)
{
    if (s[0] < '0' || s[0] > '9') return 0; /* strtoull would take a sign and spaces */
    errno = 0;
    *v = strtoull(s, end, 10);
    if (errno == ERANGE || *v > SIZE_MAX) return -1;
    return 1;
}

/* -1: too large, 0: malformed, else 1 with the bytes in *out. */
static int
parse_size(const char *s, size_t *out)
{
    unsigned long long v;
    char *end;
    unsigned shift = 0;
    int rc = digits(s, &v, &end);

    if (rc <= 0) return rc;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: return 0;
    }
    if (shift && *++end) return 0;
    if (*end) return 0;
    if (v > (SIZE_MAX >> shift)) return -1;
    *out = (size_t)(v << shift);
    return 1;
}

size_t
units_size(const char *s)
{
    size_t v = 0;

    return parse_size(s, &v) == 1 ? v : 0;
}

size_t
units_count(const char *s)
{
    unsigned long long v;
    char *end;

    if (digits(s, &v, &end) != 1 || *end) return 0;
    return (size_t)v;
}

const char *
units_why(const char *s, int size)
{
    unsigned long long v;
    size_t b;
    char *end;

    if (size) return parse_size(s, &b) < 0 ? "too large" : "malformed";
    return digits(s, &v, &end) < 0 && !*end ? "too large" : "malformed";
}
