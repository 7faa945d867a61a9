/*
 * civil: calendar dates <-> days since the epoch; see civil.h.  The year is
 * shifted to start in March so that the leap day is the last of its year,
 * and counted in 400-year eras of 146097 days (H. Hinnant, "chrono-Compatible
 * Low-Level Date Algorithms").
 */
#include "engine/civil.h"

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
