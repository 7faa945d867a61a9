/*
 * civil: proleptic Gregorian calendar dates <-> days since 1970-01-01
 * (Howard Hinnant's algorithms, exact for every date, no time zone).
 * Parsing stamps (syslogfmt.c) and the date macros (macros.c) share it.
 *
 * Callers keep times within years 1-9999 (msg.c refuses others), far inside
 * the range where this arithmetic on int64_t cannot overflow (about
 * +-10^15 days); the fuzz harness tests/fuzz/fuzz_template.c once found an
 * overflow with a stamp near INT64_MAX before that bound existed.
 */
#ifndef CORRAL_CIVIL_H
#define CORRAL_CIVIL_H

#include <stdint.h>

/* Days since 1970-01-01 of year y, month m (1..12), day d (1..31). */
int64_t civil_to_days(int64_t y, int m, int d);
/* The date of day days since 1970-01-01: year, month 1..12, day 1..31. */
void civil_from_days(int64_t days, int64_t *y, int *m, int *d);

#endif
