/*
 * macros: values computed from a message's timestamp, priority and tags.
 * Time is broken down in the zone the message was written in (its gmtoff),
 * without consulting the process time zone, so output does not depend on TZ.
 */
#include "engine/macros.h"
#include "engine/civil.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum macro_id {
    M_FACILITY,
    M_FACILITY_NUM,
    M_PRIORITY, /* also LEVEL */
    M_LEVEL_NUM,
    M_PRI,
    M_TAG,
    M_TAGS,
    M_MSGHDR,
    M_CONTEXT_ID,
    M_SDATA,
    M_LOGHOST,
    M_DATE_FIRST, /* date macros: a base id plus a time source */
};

/* Date macros, each available as X, S_X, R_X and C_X. */
enum date_macro {
    D_DATE,
    D_FULLDATE,
    D_ISODATE,
    D_STAMP,
    D_YEAR,
    D_MONTH,
    D_MONTH_ABBREV,
    D_MONTH_NAME,
    D_DAY,
    D_HOUR,
    D_HOUR12,
    D_AMPM,
    D_MIN,
    D_SEC,
    D_MSEC,
    D_USEC,
    D_WEEKDAY,
    D_WEEK_DAY_ABBREV,
    D_WEEK_DAY_NAME,
    D_WEEK_DAY,
    D_WEEK,
    D_DAY_OF_YEAR,
    D_TZOFFSET,
    D_TZ,
    D_UNIXTIME,
    D_COUNT
};

enum time_source { T_STAMP, T_RECVD, T_NOW };

static const struct {
    const char *name;
    int id;
} plain[] = {
    {"FACILITY", M_FACILITY},
    {"FACILITY_NUM", M_FACILITY_NUM},
    {"PRIORITY", M_PRIORITY},
    {"LEVEL", M_PRIORITY},
    {"SEVERITY", M_PRIORITY},
    {"LEVEL_NUM", M_LEVEL_NUM},
    {"SEVERITY_NUM", M_LEVEL_NUM},
    {"PRI", M_PRI},
    {"TAG", M_TAG},
    {"TAGS", M_TAGS},
    {"MSGHDR", M_MSGHDR},
    {"CONTEXT_ID", M_CONTEXT_ID},
    {"_", M_CONTEXT_ID},
    {"SDATA", M_SDATA},
    {"LOGHOST", M_LOGHOST},
};

static const char *const date_names[D_COUNT] = {
    [D_DATE] = "DATE",
    [D_FULLDATE] = "FULLDATE",
    [D_ISODATE] = "ISODATE",
    [D_STAMP] = "STAMP",
    [D_YEAR] = "YEAR",
    [D_MONTH] = "MONTH",
    [D_MONTH_ABBREV] = "MONTH_ABBREV",
    [D_MONTH_NAME] = "MONTH_NAME",
    [D_DAY] = "DAY",
    [D_HOUR] = "HOUR",
    [D_HOUR12] = "HOUR12",
    [D_AMPM] = "AMPM",
    [D_MIN] = "MIN",
    [D_SEC] = "SEC",
    [D_MSEC] = "MSEC",
    [D_USEC] = "USEC",
    [D_WEEKDAY] = "WEEKDAY",
    [D_WEEK_DAY_ABBREV] = "WEEK_DAY_ABBREV",
    [D_WEEK_DAY_NAME] = "WEEK_DAY_NAME",
    [D_WEEK_DAY] = "WEEK_DAY",
    [D_WEEK] = "WEEK",
    [D_DAY_OF_YEAR] = "DAY_OF_YEAR",
    [D_TZOFFSET] = "TZOFFSET",
    [D_TZ] = "TZ",
    [D_UNIXTIME] = "UNIXTIME",
};

static const char *const facilities[24] = {
    "kern",   "user",   "mail",     "daemon", "auth",   "syslog",   "lpr",     "news",
    "uucp",   "cron",   "authpriv", "ftp",    "ntp",    "security", "console", "solaris-cron",
    "local0", "local1", "local2",   "local3", "local4", "local5",   "local6",  "local7",
};

static const char *const severities[8] = {"emerg",   "alert",  "crit", "err",
                                          "warning", "notice", "info", "debug"};

static const char *const month_abbrev[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char *const month_name[12] = {"January",   "February", "March",    "April",
                                           "May",       "June",     "July",     "August",
                                           "September", "October",  "November", "December"};
static const char *const wday_abbrev[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const wday_name[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};

const char *
macro_facility_name(int facility)
{
    return facility >= 0 && facility < 24 ? facilities[facility] : "";
}

const char *
macro_severity_name(int severity)
{
    return severity >= 0 && severity < 8 ? severities[severity] : "";
}

void
macro_format_facility(int pri, struct buf *out)
{
    /* syslog-ng masks the facility to 7 bits and prints unnamed ones in hex */
    int fac = (pri & 0x3f8) >> 3;

    if (fac < 24)
        buf_puts(out, facilities[fac]);
    else
        buf_printf(out, "%x", fac);
}

int
macro_facility_code(const char *name, size_t len)
{
    int i;

    for (i = 0; i < 24; i++)
        if (strlen(facilities[i]) == len && strncmp(facilities[i], name, len) == 0) return i;
    return -1;
}

int
macro_severity_code(const char *name, size_t len)
{
    static const struct {
        const char *name;
        int code;
    } aliases[] = {{"panic", 0}, {"error", 3}, {"warn", 4}};
    size_t i;

    for (i = 0; i < 8; i++)
        if (strlen(severities[i]) == len && strncmp(severities[i], name, len) == 0) return (int)i;
    for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strlen(aliases[i].name) == len && strncmp(aliases[i].name, name, len) == 0)
            return aliases[i].code;
    return -1;
}

int
macro_lookup(const char *name, size_t len)
{
    size_t i;
    int src = T_STAMP;

    for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        if (strlen(plain[i].name) == len && memcmp(plain[i].name, name, len) == 0)
            return plain[i].id;
    if (len > 2 && name[1] == '_' && (name[0] == 'S' || name[0] == 'R' || name[0] == 'C')) {
        src = name[0] == 'S' ? T_STAMP : name[0] == 'R' ? T_RECVD : T_NOW;
        name += 2;
        len -= 2;
    }
    for (i = 0; i < D_COUNT; i++)
        if (strlen(date_names[i]) == len && memcmp(date_names[i], name, len) == 0)
            return M_DATE_FIRST + src * D_COUNT + (int)i;
    return -1;
}

struct broken {
    int year, mon, mday, hour, min, sec, wday, yday;
};

static void
breakdown(const struct msg_time *t, struct broken *b)
{
    int64_t local = t->sec + t->gmtoff;
    int64_t days = local >= 0 ? local / 86400 : (local - 86399) / 86400;
    int64_t secs = local - days * 86400;
    int64_t y;
    int m, d;
    static const int cum[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

    civil_from_days(days, &y, &m, &d);
    b->year = (int)y;
    b->mon = m - 1;
    b->mday = d;
    b->hour = (int)(secs / 3600);
    b->min = (int)(secs / 60 % 60);
    b->sec = (int)(secs % 60);
    b->wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
    b->yday = cum[b->mon] + d - 1 + (m > 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
}

/*
 * Writes v in exactly `width` digits, zero-padded, and returns the end.  The
 * stamps of every written message go through here (file and JSON outputs),
 * where printf cost twenty times as much; v always fits: years 1 to 9999,
 * offsets within a day, microseconds below a million.
 */
static char *
put_digits(char *p, unsigned v, int width)
{
    int i;

    for (i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

/* "+hh:mm" */
static char *
put_tzoffset(char *p, int32_t gmtoff)
{
    unsigned a = (unsigned)(gmtoff < 0 ? -gmtoff : gmtoff);

    *p++ = gmtoff < 0 ? '-' : '+';
    p = put_digits(p, a / 3600, 2);
    *p++ = ':';
    return put_digits(p, a / 60 % 60, 2);
}

static void
format_tzoffset(int32_t gmtoff, struct buf *out)
{
    char s[8];

    buf_append(out, s, (size_t)(put_tzoffset(s, gmtoff) - s));
}

/* "hh:mm:ss" */
static char *
put_clock(char *p, const struct broken *b)
{
    p = put_digits(p, (unsigned)b->hour, 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)b->min, 2);
    *p++ = ':';
    return put_digits(p, (unsigned)b->sec, 2);
}

void
macro_format_iso(const struct msg_time *t, int frac_digits, struct buf *out)
{
    struct broken b;
    char s[40], *p = s;

    breakdown(t, &b);
    if (b.year < 0 || b.year > 9999) /* no stamp a message can hold: as printf writes it */
        p += snprintf(s, 16, "%04d", b.year);
    else
        p = put_digits(p, (unsigned)b.year, 4);
    *p++ = '-';
    p = put_digits(p, (unsigned)b.mon + 1, 2);
    *p++ = '-';
    p = put_digits(p, (unsigned)b.mday, 2);
    *p++ = 'T';
    p = put_clock(p, &b);
    if (frac_digits > 0) {
        size_t n = frac_digits > 6 ? 6 : (size_t)frac_digits;
        char frac[6];
        put_digits(frac, (unsigned)t->usec, 6);
        *p++ = '.';
        memcpy(p, frac, n);
        p += n;
    }
    p = put_tzoffset(p, t->gmtoff);
    buf_append(out, s, (size_t)(p - s));
}

void
macro_format_bsd(const struct msg_time *t, struct buf *out)
{
    struct broken b;
    char s[16], *p = s;

    breakdown(t, &b);
    memcpy(p, month_abbrev[b.mon], 3);
    p += 3;
    *p++ = ' ';
    if (b.mday < 10)
        *p++ = ' ', p = put_digits(p, (unsigned)b.mday, 1);
    else
        p = put_digits(p, (unsigned)b.mday, 2);
    *p++ = ' ';
    p = put_clock(p, &b);
    buf_append(out, s, (size_t)(p - s));
}

static void
date_macro(int which, const struct msg_time *t, struct buf *out)
{
    struct broken b;

    breakdown(t, &b);
    switch (which) {
    case D_DATE:
    case D_STAMP: macro_format_bsd(t, out); break;
    case D_FULLDATE:
        buf_printf(out, "%d %s %2d %02d:%02d:%02d", b.year, month_abbrev[b.mon], b.mday, b.hour,
                   b.min, b.sec);
        break;
    case D_ISODATE: macro_format_iso(t, 0, out); break;
    case D_YEAR: buf_printf(out, "%04d", b.year); break;
    case D_MONTH: buf_printf(out, "%02d", b.mon + 1); break;
    case D_MONTH_ABBREV: buf_puts(out, month_abbrev[b.mon]); break;
    case D_MONTH_NAME: buf_puts(out, month_name[b.mon]); break;
    case D_DAY: buf_printf(out, "%02d", b.mday); break;
    case D_HOUR: buf_printf(out, "%02d", b.hour); break;
    case D_HOUR12: buf_printf(out, "%02d", b.hour % 12 ? b.hour % 12 : 12); break;
    case D_AMPM: buf_puts(out, b.hour < 12 ? "AM" : "PM"); break;
    case D_MIN: buf_printf(out, "%02d", b.min); break;
    case D_SEC: buf_printf(out, "%02d", b.sec); break;
    case D_MSEC: buf_printf(out, "%03d", t->usec / 1000); break;
    case D_USEC: buf_printf(out, "%06d", t->usec); break;
    case D_WEEKDAY:
    case D_WEEK_DAY_ABBREV: buf_puts(out, wday_abbrev[b.wday]); break;
    case D_WEEK_DAY_NAME: buf_puts(out, wday_name[b.wday]); break;
    case D_WEEK_DAY: buf_printf(out, "%d", b.wday + 1); break;
    case D_WEEK: buf_printf(out, "%02d", (b.yday + 7 - (b.wday + 6) % 7) / 7); break;
    case D_DAY_OF_YEAR: buf_printf(out, "%03d", b.yday + 1); break;
    case D_TZOFFSET:
    case D_TZ: format_tzoffset(t->gmtoff, out); break;
    case D_UNIXTIME: buf_printf(out, "%lld", (long long)t->sec); break;
    }
}

static void
format_tags(const struct msg *m, struct buf *out)
{
    size_t i, n = msg_ntags(m), len;

    for (i = 0; i < n; i++) {
        const char *name = tag_name(msg_tag_at(m, i), &len);
        if (i) buf_putc(out, ',');
        buf_append(out, name, len);
    }
}

static void
format_msghdr(const struct msg *m, struct buf *out)
{
    size_t plen, pidlen;
    const char *prog = msg_get(m, NV_PROGRAM, &plen), *pid = msg_get(m, NV_PID, &pidlen);

    if (!prog || !plen) return;
    buf_append(out, prog, plen);
    if (pid && pidlen) {
        buf_putc(out, '[');
        buf_append(out, pid, pidlen);
        buf_putc(out, ']');
    }
    buf_puts(out, ": ");
}

/* $SDATA: the .SDATA.id.param pairs rebuilt as RFC5424 structured data. */
static void
format_sdata(const struct msg *m, struct buf *out)
{
    size_t i, n = msg_nvalues(m);
    const char *cur_id = NULL;
    size_t cur_idlen = 0;

    for (i = 0; i < n; i++) {
        const char *val, *name, *dot;
        size_t vlen, nlen, k;
        nv_handle h = msg_value_at(m, i, &val, &vlen);

        name = nv_name(h, &nlen);
        if (nlen < 7 || memcmp(name, ".SDATA.", 7) != 0) continue;
        name += 7;
        nlen -= 7;
        dot = memrchr(name, '.', nlen);
        if (!dot) continue;
        if (!cur_id || cur_idlen != (size_t)(dot - name) || memcmp(cur_id, name, cur_idlen)) {
            if (cur_id) buf_putc(out, ']');
            cur_id = name;
            cur_idlen = (size_t)(dot - name);
            buf_putc(out, '[');
            buf_append(out, name, cur_idlen);
        }
        buf_putc(out, ' ');
        buf_append(out, dot + 1, nlen - cur_idlen - 1);
        buf_puts(out, "=\"");
        for (k = 0; k < vlen; k++) {
            if (val[k] == '"' || val[k] == '\\' || val[k] == ']') buf_putc(out, '\\');
            buf_putc(out, val[k]);
        }
        buf_putc(out, '"');
    }
    if (cur_id) buf_putc(out, ']');
}

bool
macro_refs(int id, unsigned char *keep)
{
    if (id == M_SDATA) return false;
    if (id == M_MSGHDR) {
        keep[NV_PROGRAM] = 1;
        keep[NV_PID] = 1;
    }
    return true;
}

void
macro_eval(int id, const struct template_env *env, const struct msg *m, struct buf *out)
{
    int pri;

    if (id == M_CONTEXT_ID) {
        if (env->context_id) buf_append(out, env->context_id, env->context_id_len);
        return;
    }
    if (id >= M_DATE_FIRST) {
        int src = (id - M_DATE_FIRST) / D_COUNT, which = (id - M_DATE_FIRST) % D_COUNT;
        struct msg_time now;
        const struct msg_time *t;

        if (src == T_NOW) {
            if (env->now) {
                t = env->now;
            } else {
                struct timeval tv;
                struct tm tm;
                gettimeofday(&tv, NULL);
                localtime_r(&tv.tv_sec, &tm);
                now.sec = tv.tv_sec;
                now.usec = (int32_t)tv.tv_usec;
                now.gmtoff = (int32_t)tm.tm_gmtoff;
                t = &now;
            }
        } else if (!m) {
            return;
        } else {
            t = src == T_RECVD ? msg_recvd(m) : msg_stamp(m);
        }
        date_macro(which, t, out);
        return;
    }
    if (!m) return;
    pri = msg_pri(m);
    switch (id) {
    case M_FACILITY: macro_format_facility(pri, out); break;
    case M_FACILITY_NUM: buf_printf(out, "%d", pri >> 3); break;
    case M_PRIORITY: buf_puts(out, macro_severity_name(pri & 7)); break;
    case M_LEVEL_NUM: buf_printf(out, "%d", pri & 7); break;
    case M_PRI: buf_printf(out, "%d", pri); break;
    case M_TAG: buf_printf(out, "%02x", pri); break;
    case M_TAGS: format_tags(m, out); break;
    case M_MSGHDR: format_msghdr(m, out); break;
    case M_SDATA: format_sdata(m, out); break;
    case M_LOGHOST: {
        char host[256];
        if (gethostname(host, sizeof(host)) == 0) {
            host[sizeof(host) - 1] = '\0';
            buf_puts(out, host);
        }
        break;
    }
    }
}
