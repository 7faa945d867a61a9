/*
 * units: durations and sizes as configuration files write them, read the
 * same way by corrald's configuration and by every executor.
 */
#ifndef CORRAL_UNITS_H
#define CORRAL_UNITS_H

#include <stddef.h>

/* The longest duration taken: 100 years, in seconds (a longer one is a typo, or an attack). */
#define UNITS_DURATION_MAX (100.0 * 365 * 86400)

/*
 * Parses "300", "5s", "250ms", "10m", "2h", "1d" into seconds; -1 if
 * malformed (not a decimal number then a unit: no sign, no "inf", "nan" or
 * hexadecimal) or above UNITS_DURATION_MAX.
 */
double units_duration(const char *s);
/*
 * Parses "65536", "64k", "10M", "1G" into bytes; 0 if malformed (digits,
 * then at most a unit: no sign, no space) or if it does not fit in a size_t
 * (the digits, or the digits times the unit: "18014398509481984064k" is
 * refused, not wrapped to 64 KiB).
 */
size_t units_size(const char *s);
/* A count: digits only, "65536"; 0 if malformed or if it does not fit in a size_t. */
size_t units_count(const char *s);
/*
 * Why units_size (size true) or units_count refused s, for an error
 * message: "too large" or "malformed".
 */
const char *units_why(const char *s, int size);

#endif
