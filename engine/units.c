/*
 * units: durations and sizes as configuration files write them ("250ms",
 * "5m", "64k"), read the same way wherever a setting takes one.
 */
#include "engine/units.h"

#include <stdlib.h>
#include <string.h>

double
units_duration(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || v < 0) return -1;
    if (!*end || strcmp(end, "s") == 0) return v;
    if (strcmp(end, "ms") == 0) return v / 1000;
    if (strcmp(end, "m") == 0) return v * 60;
    if (strcmp(end, "h") == 0) return v * 3600;
    if (strcmp(end, "d") == 0) return v * 86400;
    return -1;
}

size_t
units_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);

    if (end == s) return 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
        v <<= 10;
        end++;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        end++;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        end++;
        break;
    default: return 0;
    }
    return *end ? 0 : (size_t)v;
}
