/*
 * civil: calendar dates <-> days since the epoch; see civil.h.  The year is
 * shifted to start in March so that the leap day is the last of its year,
 * and counted in 400-year eras of 146097 days (H. Hinnant, "chrono-Compatible
 * Low-Level Date Algorithms").
 */
#include "engine/civil.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* a / b rounded down (C rounds towards zero); b > 0. */
static int64_t
floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;

    return a % b < 0 ? q - 1 : q;
}

int64_t
civil_to_days(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = floor_div(y, 400);
    yoe = y - era * 400;                                  /* [0, 399] */
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* [0, 146096] */
    return era * 146097 + doe - 719468;                   /* 719468: 0000-03-01 to 1970-01-01 */
}

void
civil_from_days(int64_t days, int64_t *y, int *m, int *d)
{
    int64_t z = days + 719468, era, doe, yoe, doy, mp;

    era = floor_div(z, 146097);
    doe = z - era * 146097;                                      /* [0, 146096] */
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    mp = (5 * doy + 2) / 153;                                    /* [0, 11], March = 0 */
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

void
civil_format_time(int64_t ms, struct buf *out)
{
    int64_t secs = floor_div(ms, 1000), days = floor_div(secs, 86400), rem = secs - days * 86400, y;
    int m, d;

    civil_from_days(days, &y, &m, &d);
    buf_printf(out, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, m, d, (int)(rem / 3600),
               (int)(rem / 60 % 60), (int)(rem % 60));
}

/* Reads exactly n digits at *p into *v and moves *p past them. */
static bool
digits(const char **p, int n, int *v)
{
    int i;

    *v = 0;
    for (i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9') return false;
        *v = *v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return true;
}

/* Seconds since the epoch, digits only: 0, or -1 when out of range. */
static int
parse_epoch(const char *s, int64_t *ms)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (*end || errno || v < 0 || v > CIVIL_MAX_SEC) return -1;
    *ms = (int64_t)v * 1000;
    return 0;
}

/* "hh:mm[:ss[.f...]]" at *p: seconds of the day in *sec, milliseconds in *frac. */
static bool
parse_clock(const char **p, int64_t *sec, int *frac)
{
    int h, mi, s = 0, nfrac = 0;

    *frac = 0;
    if (!digits(p, 2, &h) || *(*p)++ != ':' || !digits(p, 2, &mi)) return false;
    if (**p == ':') {
        (*p)++;
        if (!digits(p, 2, &s)) return false;
        if (**p == '.') {
            (*p)++;
            if (**p < '0' || **p > '9') return false;
            for (; **p >= '0' && **p <= '9'; (*p)++) /* finer than milliseconds: read, dropped */
                if (nfrac < 3) *frac = *frac * 10 + (**p - '0'), nfrac++;
            for (; nfrac < 3; nfrac++) *frac *= 10;
        }
    }
    if (h > 23 || mi > 59 || s > 60) return false; /* 60: a leap second */
    *sec = h * 3600 + mi * 60 + s;
    return true;
}

/* 'Z', "+hh:mm", "+hhmm" or nothing at *p: the offset east of UTC in seconds. */
static bool
parse_zone(const char **p, int64_t *off)
{
    int sign, oh, om;

    *off = 0;
    if (**p == 'Z') {
        (*p)++;
        return true;
    }
    if (**p != '+' && **p != '-') return true;
    sign = *(*p)++ == '-' ? -1 : 1;
    if (!digits(p, 2, &oh)) return false;
    if (**p == ':') (*p)++;
    if (!digits(p, 2, &om) || oh > 23 || om > 59) return false;
    *off = sign * (oh * 3600 + om * 60);
    return true;
}

/* The number of days in month m (1..12) of year y. */
static int
month_days(int64_t y, int m)
{
    return (int)(civil_to_days(y + (m == 12), m % 12 + 1, 1) - civil_to_days(y, m, 1));
}

int
civil_parse_time(const char *s, int64_t *ms)
{
    const char *p = s;
    int y, mo, d, frac = 0;
    int64_t sec = 0, off;

    if (!s || !*s) return -1;
    if (strspn(s, "0123456789") == strlen(s)) return parse_epoch(s, ms);
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo)) return -1;
    if ((*p == 'T' || *p == ' ') && (p++, !parse_clock(&p, &sec, &frac))) return -1;
    if (!parse_zone(&p, &off) || *p) return -1;
    *ms = ((civil_to_days(y, mo, d) * 86400 + sec) - off) * 1000 + frac;
    return 0;
}
