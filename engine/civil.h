/*
 * civil: proleptic Gregorian calendar dates <-> days since 1970-01-01
 * (Howard Hinnant's algorithms, exact for every date, no time zone), and the
 * one reader and writer of ISO 8601 times the project has for its own data
 * (silences, alerts, the API, --now, scenario files).  Parsing stamps
 * (syslogfmt.c) and the date macros (macros.c) share the date arithmetic;
 * they read and write the syslog-ng formats on the per-message path.
 *
 * Callers keep times within years 1-9999 (msg.c refuses others), far inside
 * the range where this arithmetic on int64_t cannot overflow (about
 * +-10^15 days); the fuzz harness tests/fuzz/fuzz_template.c once found an
 * overflow with a stamp near INT64_MAX before that bound existed.
 */
#ifndef CORRAL_CIVIL_H
#define CORRAL_CIVIL_H

#include "engine/buf.h"

#include <stdint.h>

/* Days since 1970-01-01 of year y, month m (1..12), day d (1..31). */
int64_t civil_to_days(int64_t y, int m, int d);
/* The date of day days since 1970-01-01: year, month 1..12, day 1..31. */
void civil_from_days(int64_t days, int64_t *y, int *m, int *d);

/* 9999-12-31T23:59:59Z in seconds since the epoch: the last second a year of four digits writes. */
#define CIVIL_MAX_SEC 253402300799LL

/*
 * Reads a time: seconds since the epoch, digits only, 0 to CIVIL_MAX_SEC
 * ("1796400000"), or ISO 8601: YYYY-MM-DD, then optionally 'T' or ' ' and
 * hh:mm[:ss[.f...]], then optionally 'Z' or an offset +hh:mm, +hhmm, -hh:mm
 * ("2026-12-04T18:00:00Z", "2026-12-04 18:00+01:00"); no zone is UTC.
 * Milliseconds are kept, finer digits dropped.  0 and the milliseconds since
 * the epoch in *ms, or -1 (*ms untouched) when s is anything else.
 */
int civil_parse_time(const char *s, int64_t *ms);
/* Appends ms as ISO 8601 UTC in whole seconds, rounded down ("2026-12-04T18:00:00Z"). */
void civil_format_time(int64_t ms, struct buf *out);

#endif
