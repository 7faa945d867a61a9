/*
 * syslogfmt: turns one syslog line into a message exactly as syslog-ng 3.38's
 * syslog-format module does when driven the way pdbtool drives it: the
 * syslog-protocol (RFC5424) parser, which falls back to the RFC3164 one when
 * the line has no "<PRI>1 " header, with hostnames expected and the legacy
 * message header stored.
 *
 * syslog-ng's parser has many oddities; each one here was checked against
 * pdbtool 3.38 and is matched on purpose.  Comments starting "syslog-ng:"
 * mark them, so nobody "fixes" them by accident.
 *
 * The line is copied into the message once; every field is a slice of that
 * copy.  Only structured-data values that had escapes in them and the text
 * made up for an unparsable line are copied separately.
 */
#include "engine/syslogfmt.h"
#include "engine/buf.h"
#include "engine/civil.h"
#include "engine/nv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* syslog-ng keeps the priority in 16 bits. */
#define PRI_MASK 0xffff
/* LOG_SYSLOG | LOG_ERR: the priority of the "Error processing" message. */
#define PRI_PARSE_ERROR 43
/* syslog-ng's hostname buffer holds 255 characters. */
#define HOST_MAX 255
/* RFC5424 column limits as syslog-ng applies them (longer values are cut). */
#define APPNAME_MAX 48
#define PROCID_MAX  128
#define MSGID_MAX   32
/*
 * Structured data limits of syslog-ng 3.38, found by probing pdbtool: an
 * SD-ID may have 248 characters, an SD-ID and a parameter name together
 * 255, and a value name longer than 255 is silently not stored.  Values
 * are cut at sdata_param_value_max (65535).
 */
#define SD_ID_MAX         248
#define SD_NAMES_MAX      255
#define SD_VALUE_NAME_MAX 255
#define SD_VALUE_MAX      65535
#define SD_PREFIX         ".SDATA."
#define SD_PREFIX_LEN     (sizeof(SD_PREFIX) - 1)

#define DAY  86400
#define HOUR 3600

static const char aix_forwarded[] = "Message forwarded from ";
static const char last_repeated[] = "last message repeated";
static const char parse_error_prefix[] = "Error processing log message: ";

/* ---- characters, as the C locale classifies them ---- */

static bool
is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool
is_xdigit(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool
is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Bytes that end a token, by token; indexed by the byte. */
enum {
    STOP_HOST = 1 << 0,    /* ' ' '[' */
    STOP_PROGRAM = 1 << 1, /* ' ' '[' ':' */
    STOP_PID = 1 << 2,     /* ' ' ']' ':' */
};

static const unsigned char stops[256] = {
    [' '] = STOP_HOST | STOP_PROGRAM | STOP_PID,
    ['['] = STOP_HOST | STOP_PROGRAM,
    [':'] = STOP_PROGRAM | STOP_PID,
    [']'] = STOP_PID,
};

static bool
is_stop(unsigned char c, int which)
{
    return (stops[c] & which) != 0;
}

/* A character allowed in an SD-ID or a parameter name. */
static bool
is_sd_name_char(unsigned char c)
{
    return c < 0x80 && c != '=' && c != ' ' && c != ']' && c != '"';
}

/*
 * A cursor over the line.  syslog-ng works on a NUL-terminated buffer and in
 * places looks at the byte after the end; peek() returns that terminator
 * instead of reading out of bounds.
 */
struct cur {
    const char *s;
    size_t len;
    size_t pos;
};

static unsigned char
peek(const struct cur *c)
{
    return c->pos < c->len ? (unsigned char)c->s[c->pos] : '\0';
}

static unsigned char
peek_at(const struct cur *c, size_t off)
{
    return c->pos + off < c->len ? (unsigned char)c->s[c->pos + off] : '\0';
}

static size_t
left(const struct cur *c)
{
    return c->len - c->pos;
}

static bool
expect(struct cur *c, char ch)
{
    if (c->pos < c->len && c->s[c->pos] == ch) {
        c->pos++;
        return true;
    }
    return false;
}

/*
 * syslog-ng: its skip loops test bytes with a strchr() look-alike, which
 * also finds the terminating NUL, so NUL bytes count as spaces here.
 */
static void
skip_spaces(struct cur *c)
{
    while (c->pos < c->len && (c->s[c->pos] == ' ' || c->s[c->pos] == '\0')) c->pos++;
}

/*
 * syslog-ng's scan_positive_int(): exactly `width` bytes, leading spaces
 * then digits ("Jun  4" is the 4th; "1 " and tabs do not count).
 */
static bool
scan_num(struct cur *c, size_t width, int *out)
{
    size_t i = 0;
    int v = 0;

    if (left(c) < width) return false;
    while (i < width && c->s[c->pos + i] == ' ') i++;
    for (; i < width; i++) {
        unsigned char ch = (unsigned char)c->s[c->pos + i];
        if (!is_digit(ch)) return false;
        v = v * 10 + (ch - '0');
    }
    c->pos += width;
    *out = v;
    return true;
}

/*
 * syslog-ng: the first letter must be upper case (it switches on it), the
 * rest is compared case-insensitively, so "JUN" is a month and "jun" is not.
 */
static bool
scan_month(struct cur *c, int *mon)
{
    static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    int i;

    if (left(c) < 3) return false;
    for (i = 0; i < 12; i++) {
        const char *n = names + 3 * i;
        if (c->s[c->pos] == n[0] && (c->s[c->pos + 1] | 0x20) == n[1] &&
            (c->s[c->pos + 2] | 0x20) == n[2]) {
            *mon = i;
            c->pos += 3;
            return true;
        }
    }
    return false;
}

/* ---- time ---- */

/* A broken-down stamp as scanned; fields may be out of range ("25:61:60"). */
struct tfields {
    int64_t year;
    int mon; /* 0-based; ISO stamps may give -1..98 */
    int mday, hour, min, sec;
    int32_t usec;
    bool has_zone;
    int32_t zone; /* seconds east of UTC, when has_zone */
};

/* a / b rounded down, for b > 0. */
static int64_t
floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;

    return a % b < 0 ? q - 1 : q;
}

/* The wall-clock fields as seconds on a zone-less time line, normalized as mktime() would. */
static int64_t
wall_seconds(const struct tfields *f)
{
    int64_t y = f->year + floor_div(f->mon, 12);
    int m = (int)(f->mon - floor_div(f->mon, 12) * 12);

    return (civil_to_days(y, m + 1, 1) + f->mday - 1) * DAY + (int64_t)f->hour * HOUR +
           (int64_t)f->min * 60 + f->sec;
}

/*
 * The process time zone, cached: converting every stamp with mktime() or
 * localtime_r() would cost more than the rest of the parse.  The caches are
 * direct-mapped by day (TZ_DAYS each: more than a year, since a BSD stamp's
 * year is guessed within a year of now, so a log that interleaves the days
 * of a whole year never evicts one day for another); each entry holds one day with a single UTC
 * offset throughout, assuming, as holds for the tz database, that no zone changes its offset twice
 * within 32 hours or by more than 4 hours at once (except Samoa's date-line jump in 2011). Looking
 * at TZ for every line costs more than the parse, so a change of TZ takes effect at
 * syslogfmt_tz_reset(). The caches are per thread (the parallel engine, par.c, parses on several);
 * syslogfmt_tz_reset() resets the calling thread's.
 */
#define TZ_DAYS 512 /* a power of two */
struct tz_day {
    bool ok;
    int64_t day; /* utc[]: UTC day (since the epoch) whose offset is off;
                    local[]: local day that maps to UTC by off */
    int32_t off;
};
static _Thread_local struct {
    bool init;
    bool tz_set;
    char tz[256];
    struct tz_day utc[TZ_DAYS];
    struct tz_day local[TZ_DAYS];
    bool ym_ok;
    int64_t ym_day; /* local day of ym_year and ym_mon */
    int64_t ym_year;
    int ym_mon;
} tzc;

static void
tz_check(void)
{
    const char *tz = getenv("TZ");
    size_t n = tz ? strlen(tz) : 0;

    if (tzc.init && tzc.tz_set == (tz != NULL) &&
        (!tz || (n < sizeof(tzc.tz) && strcmp(tz, tzc.tz) == 0)))
        return;
    {
        /* glibc locks tzset() with a lock of its own that thread sanitizers do not see; one at a
         * time keeps them quiet when several threads fill their caches (par.c) */
        static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&tz_lock);
        tzset();
        pthread_mutex_unlock(&tz_lock);
    }
    memset(&tzc, 0, sizeof(tzc));
    /* An overlong TZ is not remembered, so the caches are rebuilt every time. */
    tzc.init = !tz || n < sizeof(tzc.tz);
    tzc.tz_set = tz != NULL;
    if (tz && n < sizeof(tzc.tz)) memcpy(tzc.tz, tz, n + 1);
}

void
syslogfmt_tz_reset(void)
{
    tzc.init = false;
}

static int32_t
offset_at(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (!localtime_r(&tt, &tm)) return 0;
    return (int32_t)tm.tm_gmtoff;
}

/* The UTC offset of the process zone at UTC time t. */
static int32_t
utc_offset(int64_t t)
{
    int64_t day = floor_div(t, DAY);
    struct tz_day *e = &tzc.utc[day & (TZ_DAYS - 1)];
    int32_t off;

    if (e->ok && e->day == day) return e->off;
    off = offset_at(t);
    if (offset_at(day * DAY) == off && offset_at(day * DAY + DAY - 1) == off) {
        e->ok = true;
        e->day = day;
        e->off = off;
    }
    return off;
}

/*
 * Resolves local wall-clock seconds `wall` as syslog-ng's mktime() call with
 * tm_isdst = -1 does: *t is the UTC time, *norm the wall-clock time mktime()
 * normalized it to (later than `wall` in a spring-forward gap).  A day is
 * cached when the offset is the same from 4 hours before it to 4 hours after
 * it, so none of its times is skipped or repeated.  Other days go to
 * mktime() itself, whose choice within a repeated hour depends on glibc's
 * memory of earlier calls, as it does in syslog-ng.
 */
static void
local_to_utc(int64_t wall, int64_t *t, int64_t *norm)
{
    int64_t day = floor_div(wall, DAY), start = day * DAY, y;
    struct tz_day *e = &tzc.local[day & (TZ_DAYS - 1)];
    int32_t off;
    struct tm tm;
    time_t r;
    int m, d;

    if (e->ok && e->day == day) {
        *t = wall - e->off;
        *norm = wall;
        return;
    }
    /* offset_at(), not utc_offset(): the UTC cache keeps serving the receive time */
    off = offset_at(start - offset_at(start));
    if (offset_at(start - off - 4 * HOUR) == off && offset_at(start - off) == off &&
        offset_at(start + DAY - 1 - off) == off &&
        offset_at(start + DAY - 1 - off + 4 * HOUR) == off) {
        e->ok = true;
        e->day = day;
        e->off = off;
        *t = wall - off;
        *norm = wall;
        return;
    }
    memset(&tm, 0, sizeof(tm));
    civil_from_days(day, &y, &m, &d);
    tm.tm_year = (int)(y - 1900);
    tm.tm_mon = m - 1;
    tm.tm_mday = d;
    tm.tm_hour = (int)((wall - start) / HOUR);
    tm.tm_min = (int)((wall - start) % HOUR / 60);
    tm.tm_sec = (int)((wall - start) % 60);
    tm.tm_isdst = -1;
    errno = 0;
    r = mktime(&tm);
    if (r == (time_t)-1 && errno != 0) {
        /* Out of mktime's range: take the offset of the nearest known time. */
        *t = wall - off;
        *norm = wall;
        return;
    }
    *t = (int64_t)r;
    *norm = (int64_t)r + tm.tm_gmtoff;
}

/*
 * The stamp syslog-ng 3.38 makes of the fields.  syslog-ng: after mktime()
 * it "corrects" the result by the hours mktime() moved the hour field by,
 * meant for daylight-saving gaps but applied to any normalization, so
 * "10:61:00" becomes 10:01:00, "10:59:60" 10:00:00 and "25:00:00" 01:00
 * two days later.  Stamps without a zone are in the process time zone.
 */
static void
resolve_stamp(const struct tfields *f, struct msg_time *out)
{
    int64_t wall = wall_seconds(f), t, norm, moved;

    local_to_utc(wall, &t, &norm);
    moved = (norm - floor_div(norm, DAY) * DAY) / HOUR - f->hour;
    if (f->has_zone) {
        out->sec = norm - moved * HOUR - f->zone;
        out->gmtoff = f->zone;
    } else {
        out->sec = t - moved * HOUR;
        out->gmtoff = (int32_t)(norm - t);
    }
    out->usec = f->usec;
}

/* Fractions of a second after '.' or ','; digits beyond the sixth are skipped. */
static int32_t
scan_usec(struct cur *c)
{
    int32_t frac = 0, div = 1;

    if (c->pos >= c->len || (c->s[c->pos] != '.' && c->s[c->pos] != ',')) return 0;
    c->pos++;
    while (c->pos < c->len && div < 1000000 && is_digit((unsigned char)c->s[c->pos])) {
        frac = frac * 10 + (c->s[c->pos] - '0');
        div *= 10;
        c->pos++;
    }
    while (c->pos < c->len && is_digit((unsigned char)c->s[c->pos])) c->pos++;
    return frac * (1000000 / div);
}

/*
 * YYYY-MM-DDTHH:MM:SS[.frac][Z|+hh:mm], with a space allowed for the 'T'.
 * syslog-ng: a zone must be exactly "+hh:mm" with no digit after it; other
 * forms ("+0530") are no zone, and are left for the hostname.
 */
static bool
scan_iso(struct cur *c, struct tfields *f)
{
    int year;

    if (!scan_num(c, 4, &year) || !expect(c, '-') || !scan_num(c, 2, &f->mon) || !expect(c, '-') ||
        !scan_num(c, 2, &f->mday) || !(expect(c, 'T') || expect(c, ' ')) ||
        !scan_num(c, 2, &f->hour) || !expect(c, ':') || !scan_num(c, 2, &f->min) ||
        !expect(c, ':') || !scan_num(c, 2, &f->sec))
        return false;
    f->year = year;
    f->mon -= 1;
    f->usec = scan_usec(c);
    f->has_zone = false;
    if (expect(c, 'Z')) {
        f->has_zone = true;
        f->zone = 0;
    } else if (left(c) >= 6 && (peek(c) == '+' || peek(c) == '-') && is_digit(peek_at(c, 1)) &&
               is_digit(peek_at(c, 2)) && peek_at(c, 3) == ':' && is_digit(peek_at(c, 4)) &&
               is_digit(peek_at(c, 5)) && !is_digit(peek_at(c, 6))) {
        int h = (peek_at(c, 1) - '0') * 10 + (peek_at(c, 2) - '0');
        int mi = (peek_at(c, 4) - '0') * 10 + (peek_at(c, 5) - '0');
        f->has_zone = true;
        f->zone = (peek(c) == '-' ? -1 : 1) * (h * 3600 + mi * 60);
        c->pos += 6;
    }
    return true;
}

static bool
looks_iso(const struct cur *c)
{
    return left(c) >= 19 && peek_at(c, 4) == '-' && peek_at(c, 7) == '-' &&
           (peek_at(c, 10) == 'T' || peek_at(c, 10) == ' ') && peek_at(c, 13) == ':' &&
           peek_at(c, 16) == ':';
}

/* "Mmm dd yyyy hh:mm:ss" followed by ':' or ' ' (Cisco PIX/ASA). */
static bool
looks_pix(const struct cur *c)
{
    return left(c) >= 21 && peek_at(c, 3) == ' ' && peek_at(c, 6) == ' ' && peek_at(c, 11) == ' ' &&
           peek_at(c, 14) == ':' && peek_at(c, 17) == ':' &&
           (peek_at(c, 20) == ':' || peek_at(c, 20) == ' ') && is_digit(peek_at(c, 7)) &&
           is_digit(peek_at(c, 8)) && is_digit(peek_at(c, 9)) && is_digit(peek_at(c, 10));
}

static bool
looks_bsd(const struct cur *c)
{
    return left(c) >= 15 && peek_at(c, 3) == ' ' && peek_at(c, 6) == ' ' && peek_at(c, 9) == ':' &&
           peek_at(c, 12) == ':';
}

/* "Mmm dd hh:mm:ss yyyy" followed by white space (LinkSys). */
static bool
looks_linksys(const struct cur *c)
{
    return left(c) >= 21 && looks_bsd(c) && peek_at(c, 15) == ' ' && is_digit(peek_at(c, 16)) &&
           is_digit(peek_at(c, 17)) && is_digit(peek_at(c, 18)) && is_digit(peek_at(c, 19)) &&
           is_space(peek_at(c, 20));
}

/* The calendar year and 0-based month of UTC time t in the process zone. */
static void
local_year_month(int64_t t, int64_t *year, int *mon)
{
    int64_t day = floor_div(t + utc_offset(t), DAY);
    int m, d;

    if (!tzc.ym_ok || tzc.ym_day != day) {
        civil_from_days(day, &tzc.ym_year, &m, &d);
        tzc.ym_mon = m - 1;
        tzc.ym_day = day;
        tzc.ym_ok = true;
    }
    *year = tzc.ym_year;
    *mon = tzc.ym_mon;
}

/*
 * An RFC3164-position stamp: ISO, PIX, LinkSys or plain BSD, then an
 * optional ':'.  A year-less stamp is in the current year, except that
 * December read in January is last year's and January read in December
 * next year's (syslog-ng's whole rule).
 */
static bool
scan_rfc3164_stamp(struct cur *c, int64_t now, struct tfields *f)
{
    struct cur t = *c;
    int year;

    f->usec = 0;
    f->has_zone = false;
    if (looks_iso(&t)) {
        if (!scan_iso(&t, f)) return false;
    } else if (looks_pix(&t)) {
        if (!scan_month(&t, &f->mon) || !expect(&t, ' ') || !scan_num(&t, 2, &f->mday) ||
            !expect(&t, ' ') || !scan_num(&t, 4, &year) || !expect(&t, ' ') ||
            !scan_num(&t, 2, &f->hour) || !expect(&t, ':') || !scan_num(&t, 2, &f->min) ||
            !expect(&t, ':') || !scan_num(&t, 2, &f->sec))
            return false;
        f->year = year;
        /* syslog-ng: skips a ':' here and again below, so "...:01:: host" loses both. */
        expect(&t, ':');
    } else if (looks_linksys(&t) || looks_bsd(&t)) {
        bool linksys = looks_linksys(&t);
        if (!scan_month(&t, &f->mon) || !expect(&t, ' ') || !scan_num(&t, 2, &f->mday) ||
            !expect(&t, ' ') || !scan_num(&t, 2, &f->hour) || !expect(&t, ':') ||
            !scan_num(&t, 2, &f->min) || !expect(&t, ':') || !scan_num(&t, 2, &f->sec))
            return false;
        if (linksys) {
            if (!expect(&t, ' ') || !scan_num(&t, 4, &year)) return false;
            f->year = year;
        } else {
            int64_t now_year;
            int now_mon;
            f->usec = scan_usec(&t);
            local_year_month(now, &now_year, &now_mon);
            f->year = now_year;
            if (f->mon == 11 && now_mon == 0)
                f->year--;
            else if (f->mon == 0 && now_mon == 11)
                f->year++;
        }
    } else {
        return false;
    }
    expect(&t, ':');
    *c = t;
    return true;
}

/* ---- what the parse found ---- */

/* A piece of the line: offset and length, or unset. */
struct slice {
    size_t off, len;
    bool set;
};

struct parsed {
    int pri;
    struct slice host, message, program, pid, msgid, legacy, seqid;
    int synced;     /* .SDATA.timeQuality.isSynced: -1 unset, 0 or 1 */
    bool has_stamp; /* else the stamp is the receive time (also for RFC5424's "-") */
    struct tfields tf;
    bool rfc5424;
    size_t sd_start; /* where the structured data begins, for the second pass */
    bool error;
    size_t error_pos; /* syslog-ng's problem position (0: none) */
};

static void
slice_set(struct slice *s, size_t off, size_t len)
{
    s->off = off;
    s->len = len;
    s->set = true;
}

/* ---- RFC3164 ---- */

static bool
parse_pri(struct cur *c, int *pri)
{
    struct cur t = *c;
    uint32_t v = 0;

    if (!expect(&t, '<')) {
        *pri = MSG_DEFAULT_PRI;
        return true;
    }
    while (t.pos < t.len && t.s[t.pos] != '>') {
        if (!is_digit((unsigned char)t.s[t.pos])) return false;
        /* syslog-ng: no overflow check; the value wraps and is kept in 16 bits. */
        v = v * 10 + (uint32_t)(t.s[t.pos] - '0');
        t.pos++;
    }
    expect(&t, '>');
    *pri = (int)(v & PRI_MASK);
    *c = t;
    return true;
}

/*
 * Cisco's "123: " sequence number.  syslog-ng: zero digits do too, so a
 * line starting ": x" gets an empty .SDATA.meta.sequenceId.
 */
static void
parse_cisco_seqid(struct cur *c, struct parsed *p)
{
    size_t i = c->pos;

    while (i < c->len && c->s[i] != ':') {
        if (!is_digit((unsigned char)c->s[i])) return;
        i++;
    }
    if (i + 1 >= c->len || c->s[i + 1] != ' ') return;
    slice_set(&p->seqid, c->pos, i - c->pos);
    c->pos = i + 1;
}

/* IPv6-looking hostnames may contain ':'; syslog-ng guesses with these rules. */
struct ipv6_guess {
    int segments, digits;
    bool failed;
};

static void
ipv6_feed(struct ipv6_guess *g, unsigned char ch)
{
    if (g->failed) return;
    if (ch != ':' && !is_xdigit(ch)) {
        g->failed = true;
    } else if (ch != ':') {
        if (++g->digits > 4) g->failed = true;
    } else {
        g->digits = 0;
        if (++g->segments >= 8) g->failed = true;
    }
}

/*
 * A hostname is a token of at most 255 bytes ended by a space; it ends
 * early at '[', and at ':' unless it still looks like an IPv6 address.
 * syslog-ng: so "cafe:" (hex digits) is a hostname and "host:" is not.
 */
static bool
parse_hostname(struct cur *c, struct slice *host)
{
    struct ipv6_guess g = {0, 0, false};
    size_t i = c->pos, n = 0;

    while (i < c->len && !is_stop((unsigned char)c->s[i], STOP_HOST) && n < HOST_MAX) {
        ipv6_feed(&g, (unsigned char)c->s[i]);
        if (c->s[i] == ':' && g.failed) break;
        i++;
        n++;
    }
    if (i < c->len && c->s[i] == ' ') {
        slice_set(host, c->pos, i - c->pos);
        c->pos = i;
        return true;
    }
    return false;
}

/*
 * PROGRAM[PID]: up to ' ', '[' or ':'; the pid up to ' ', ']' or ':' (set
 * only if one of those ends it, even if empty); then "]", ":" and " " are
 * each skipped if present.  PROGRAM and LEGACY_MSGHDR are always set.
 */
static void
parse_program(struct cur *c, struct parsed *p)
{
    size_t start = c->pos, i = c->pos;

    while (i < c->len && !is_stop((unsigned char)c->s[i], STOP_PROGRAM)) i++;
    slice_set(&p->program, start, i - start);
    if (i < c->len && c->s[i] == '[') {
        size_t pid = i + 1;
        while (i < c->len && !is_stop((unsigned char)c->s[i], STOP_PID)) i++;
        if (i < c->len) slice_set(&p->pid, pid, i - pid);
        if (i < c->len && c->s[i] == ']') i++;
    }
    if (i < c->len && c->s[i] == ':') i++;
    if (i < c->len && c->s[i] == ' ') i++;
    slice_set(&p->legacy, start, i - start);
    c->pos = i;
}

static void
parse_rfc3164(struct cur *c, struct parsed *p, int64_t now)
{
    c->pos = 0;
    if (!parse_pri(c, &p->pri)) {
        /* syslog-ng reports the position it had reached: the start, so no marker. */
        p->error = true;
        p->error_pos = 0;
        return;
    }
    parse_cisco_seqid(c, p);
    skip_spaces(c);
    /* Cisco's clock state: '*' unsynced, '.' synced; taken even when no stamp follows. */
    if (peek(c) == '*' && c->pos < c->len) {
        p->synced = 0;
        c->pos++;
    } else if (peek(c) == '.' && c->pos < c->len) {
        p->synced = 1;
        c->pos++;
    }

    if (scan_rfc3164_stamp(c, now, &p->tf)) {
        bool have_host = false;
        p->has_stamp = true;
        skip_spaces(c);
        if (left(c) >= sizeof(aix_forwarded) - 1 &&
            memcmp(c->s + c->pos, aix_forwarded, sizeof(aix_forwarded) - 1) == 0) {
            size_t h;
            c->pos += sizeof(aix_forwarded) - 1;
            h = c->pos;
            /* the strchr() look-alike stops at NUL too */
            while (c->pos < c->len && c->s[c->pos] != ':' && c->s[c->pos] != '\0') c->pos++;
            slice_set(&p->host, h, c->pos - h);
            have_host = true;
            while (c->pos < c->len &&
                   (c->s[c->pos] == ' ' || c->s[c->pos] == ':' || c->s[c->pos] == '\0'))
                c->pos++;
        }
        /*
         * syslog-ng: it wants one byte more than the phrase (it compares with
         * sizeof), so a line ending right after "repeated" is parsed normally.
         */
        if (left(c) >= sizeof(last_repeated) &&
            memcmp(c->s + c->pos, last_repeated, sizeof(last_repeated) - 1) == 0) {
            /* no host, no program: all of it is the message */
        } else {
            if (!have_host) {
                parse_hostname(c, &p->host);
                skip_spaces(c);
            }
            parse_program(c, p);
        }
    } else {
        parse_program(c, p);
    }
    slice_set(&p->message, c->pos, left(c));
}

/* ---- RFC5424 ---- */

static bool
parse_version(struct cur *c)
{
    struct cur t = *c;
    uint32_t v = 0;

    while (t.pos < t.len && t.s[t.pos] != ' ') {
        if (!is_digit((unsigned char)t.s[t.pos])) return false;
        v = v * 10 + (uint32_t)(t.s[t.pos] - '0');
        t.pos++;
    }
    if (v != 1) return false;
    *c = t;
    return true;
}

/*
 * A header column: up to the next space.  syslog-ng: a column running to
 * the end of the line is not stored (the parse fails right after anyway),
 * and an empty column (two spaces) is stored as an empty value.
 */
static void
parse_column(struct cur *c, struct slice *s, size_t max)
{
    const char *sp = memchr(c->s + c->pos, ' ', left(c));
    size_t n;

    if (!sp) {
        c->pos = c->len;
        return;
    }
    n = (size_t)(sp - (c->s + c->pos));
    if (n > 1 || c->s[c->pos] != '-') slice_set(s, c->pos, n > max ? max : n);
    c->pos += n;
}

/* Writes ".SDATA.<id>[.<param>]" into name; false if syslog-ng would not store it. */
static bool
sd_name(char *name, const char *id, size_t idlen, const char *param, size_t plen, size_t *len)
{
    size_t n = SD_PREFIX_LEN + idlen + (param ? 1 + plen : 0);

    if (n > SD_VALUE_NAME_MAX) return false;
    memcpy(name, SD_PREFIX, SD_PREFIX_LEN);
    memcpy(name + SD_PREFIX_LEN, id, idlen);
    if (param) {
        name[SD_PREFIX_LEN + idlen] = '.';
        memcpy(name + SD_PREFIX_LEN + idlen + 1, param, plen);
    }
    *len = n;
    return true;
}

/* Where the second structured-data pass stores values. */
struct sd_out {
    struct msg *m;
    const char *base;  /* the stored copy of the line */
    size_t anchor_off; /* offset of MESSAGE in it, to find it again */
    struct buf tmp;
    struct buf unregistered; /* SD_UNREGISTERED's value, built while names are refused */
};

/*
 * A parameter whose name the registry refuses (the names input may add are
 * bounded: nv_intern_input) is not lost: it is kept, as id.param="value"
 * with the value escaped as in RFC 5424, space-separated, in this one value.
 */
#define SD_UNREGISTERED ".corral.sdata_unregistered"

/*
 * The arena may move when a value is copied into it: find the stored line
 * again through MESSAGE, which is a slice of it at a known offset.
 */
static void
sd_rebase(struct sd_out *o)
{
    o->base = msg_get(o->m, NV_MESSAGE, NULL) - o->anchor_off;
}

/* Keeps a parameter the registry refused in o->unregistered. */
static void
sd_keep(struct sd_out *o, const char *name, size_t nlen, const char *v, size_t len)
{
    size_t i;

    if (o->unregistered.len) buf_putc(&o->unregistered, ' ');
    buf_append(&o->unregistered, name + SD_PREFIX_LEN, nlen - SD_PREFIX_LEN);
    buf_append(&o->unregistered, "=\"", 2);
    for (i = 0; i < len; i++) {
        if (v[i] == '"' || v[i] == '\\' || v[i] == ']') buf_putc(&o->unregistered, '\\');
        buf_putc(&o->unregistered, v[i]);
    }
    buf_putc(&o->unregistered, '"');
}

static void
sd_store(struct sd_out *o, const char *name, size_t nlen, size_t off, size_t len, bool copy)
{
    nv_handle h = nv_intern_input(name, nlen);

    if (h == NV_NONE) {
        if (copy)
            sd_keep(o, name, nlen, o->tmp.p ? o->tmp.p : "", o->tmp.len);
        else
            sd_keep(o, name, nlen, o->base + off, len);
        return;
    }
    if (copy) {
        msg_set(o->m, h, o->tmp.p ? o->tmp.p : "", o->tmp.len);
        sd_rebase(o);
    } else {
        msg_set(o->m, h, o->base + off, len);
    }
}

/*
 * STRUCTURED-DATA, "-" or [id param="value" ...]..., with syslog-ng's
 * acceptance rules (see the SD_* limits).  With out == NULL it only checks
 * the syntax; with out it stores the values.  In values, \" \\ and \] lose
 * their backslash and other backslashes stay.
 */
static bool
parse_sd(struct cur *c, struct sd_out *out)
{
    unsigned open = 0;
    char name[SD_PREFIX_LEN + SD_NAMES_MAX + 2];

    if (left(c) && peek(c) == '-') {
        c->pos++;
        return true;
    }
    if (!(left(c) && peek(c) == '[')) return true;
    c->pos++;
    open++;
    do {
        size_t id = c->pos, idlen, nlen;

        if (!is_sd_name_char(peek(c))) return false;
        while (left(c) && peek(c) != ' ' && peek(c) != ']') {
            if (c->pos - id >= SD_ID_MAX || !is_sd_name_char(peek(c))) return false;
            c->pos++;
        }
        idlen = c->pos - id;
        if (idlen == 0) return false;
        if (peek(c) == ']' && out && sd_name(name, c->s + id, idlen, NULL, 0, &nlen))
            sd_store(out, name, nlen, 0, 0, false);

        while (left(c) && peek(c) != ']') {
            size_t param, plen, val, raw;
            bool quote = false, escaped = false;

            if (!expect(c, ' ')) return false;
            if (!is_sd_name_char(peek(c))) return false;
            param = c->pos;
            while (left(c) && peek(c) != '=') {
                if (c->pos - param >= SD_NAMES_MAX - idlen || !is_sd_name_char(peek(c)))
                    return false;
                c->pos++;
            }
            plen = c->pos - param;
            if (!expect(c, '=')) return false;
            if (!expect(c, '"')) return false;

            val = c->pos;
            if (out) buf_reset(&out->tmp);
            while (left(c) && (peek(c) != '"' || quote)) {
                unsigned char ch = peek(c);
                if (!quote && ch == '\\') {
                    quote = true;
                } else {
                    if (quote && ch != '"' && ch != ']' && ch != '\\') {
                        if (out && out->tmp.len < SD_VALUE_MAX) buf_putc(&out->tmp, '\\');
                    } else if (quote) {
                        escaped = true;
                    } else if (ch == ']') {
                        /* syslog-ng: an unescaped ']' fails the parse, after stepping over it */
                        c->pos++;
                        return false;
                    }
                    if (out && out->tmp.len < SD_VALUE_MAX) buf_putc(&out->tmp, (char)ch);
                    quote = false;
                }
                c->pos++;
            }
            raw = c->pos - val;
            if (!expect(c, '"')) return false;
            if (out && sd_name(name, c->s + id, idlen, c->s + param, plen, &nlen))
                sd_store(out, name, nlen, val, raw, escaped || raw > SD_VALUE_MAX);
        }
        if (!expect(c, ']')) return false;
        open--;
        if (expect(c, '[')) open++;
    } while (left(c) && open != 0);
    return true;
}

static void
parse_rfc5424(struct cur *c, struct parsed *p, int64_t now)
{
    struct slice host = {0, 0, false};

    c->pos = 0;
    if (!parse_pri(c, &p->pri) || !parse_version(c)) {
        /* Not RFC5424: start over as RFC3164, as syslog-ng does. */
        parse_rfc3164(c, p, now);
        return;
    }
    p->rfc5424 = true;
    if (!expect(c, ' ')) goto error;
    if (!expect(c, '-')) {
        struct cur t = *c;
        if (!scan_iso(&t, &p->tf)) goto error;
        *c = t;
        p->has_stamp = true;
    }
    if (!expect(c, ' ')) goto error;
    parse_hostname(c, &host);
    if (!expect(c, ' ')) {
        /* syslog-ng steps one byte further before giving up here */
        c->pos++;
        goto error;
    }
    if (host.set && !(host.len == 1 && c->s[host.off] == '-')) p->host = host;
    parse_column(c, &p->program, APPNAME_MAX);
    if (!expect(c, ' ')) goto error;
    parse_column(c, &p->pid, PROCID_MAX);
    if (!expect(c, ' ')) goto error;
    parse_column(c, &p->msgid, MSGID_MAX);
    if (!expect(c, ' ')) goto error;
    p->sd_start = c->pos;
    if (!parse_sd(c, NULL)) goto error;
    if (left(c) == 0) {
        slice_set(&p->message, c->pos, 0);
        return;
    }
    if (!expect(c, ' ')) goto error;
    if (left(c) >= 3 && memcmp(c->s + c->pos, "\xEF\xBB\xBF", 3) == 0) c->pos += 3;
    slice_set(&p->message, c->pos, left(c));
    return;
error:
    p->error = true;
    p->error_pos = c->pos;
}

/* ---- storing the result ---- */

static void
set_slice(struct msg *m, nv_handle h, const char *base, const struct slice *s)
{
    if (s->set) msg_set(m, h, base + s->off, s->len);
}

/* Appends at most n bytes of s, stopping at a NUL as printf's "%.*s" does. */
static void
append_cstr(struct buf *b, const char *s, size_t n)
{
    const char *nul = memchr(s, '\0', n);

    buf_append(b, s, nul ? (size_t)(nul - s) : n);
}

/*
 * What syslog-ng makes of a line it cannot parse: a message of its own
 * about it, with the problem position marked by ">@<" (one byte before
 * where the parser stopped, and no marker when it stopped at the start).
 */
static void
store_error(struct msg *m, const char *line, size_t len, size_t pos)
{
    struct buf b = BUF_INIT;
    char pid[24];
    int n;

    buf_append(&b, parse_error_prefix, sizeof(parse_error_prefix) - 1);
    if (pos > 0) {
        size_t cut = pos - 1 < len ? pos - 1 : len;
        append_cstr(&b, line, cut);
        buf_append(&b, ">@<", 3);
        append_cstr(&b, line + cut, len - cut);
    } else {
        append_cstr(&b, line, len);
    }
    msg_set(m, NV_HOST, "", 0);
    msg_set(m, NV_MESSAGE, b.p ? b.p : "", b.len);
    msg_set(m, NV_PROGRAM, "syslog-ng", 9);
    n = snprintf(pid, sizeof(pid), "%d", (int)getpid());
    if (n > 0 && (size_t)n < sizeof(pid)) msg_set(m, NV_PID, pid, (size_t)n);
    msg_set_pri(m, PRI_PARSE_ERROR);
    buf_free(&b);
}

static void
current_time(const struct syslogfmt_opts *opts, struct msg_time *now)
{
    struct timespec ts;

    if (opts && opts->now) {
        *now = *opts->now;
        return;
    }
    if (clock_gettime(CLOCK_REALTIME, &ts) == 0) {
        now->sec = (int64_t)ts.tv_sec;
        now->usec = (int32_t)(ts.tv_nsec / 1000);
    } else {
        now->sec = (int64_t)time(NULL);
        now->usec = 0;
    }
    now->gmtoff = utc_offset(now->sec);
}

void
syslogfmt_now(struct msg_time *now)
{
    current_time(NULL, now);
}

void
syslogfmt_parse(struct msg *m, const char *line, size_t len, const struct syslogfmt_opts *opts)
{
    /* Cached handles of the two Cisco values (nv handles never change). */
    static nv_handle h_seqid, h_synced;
    struct parsed p;
    struct msg_time now, stamp;
    struct cur c;
    const char *base;
    bool truncated = false;

    msg_reset(m);
    if (!tzc.init) tz_check();
    current_time(opts, &now);
    msg_set_recvd(m, &now);

    /* syslog-ng drops trailing newlines and NULs, pdbtool's reader trailing CRs. */
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == '\0'))
        len--;
    if (len > MSG_MAX_VALUE) {
        len = MSG_MAX_VALUE;
        truncated = true;
    }

    memset(&p, 0, sizeof(p));
    p.synced = -1;
    c.s = line;
    c.len = len;
    c.pos = 0;
    parse_rfc5424(&c, &p, now.sec);

    if (p.error) {
        store_error(m, line, len, p.error_pos);
        msg_set_stamp(m, &now);
        if (truncated) msg_set_flags(m, msg_flags(m) | MSG_F_TRUNCATED);
        return;
    }

    /* Slices of the stored copy first: copying other values in may move it. */
    base = msg_store(m, line, len);
    set_slice(m, NV_HOST, base, &p.host);
    set_slice(m, NV_MESSAGE, base, &p.message);
    set_slice(m, NV_PROGRAM, base, &p.program);
    set_slice(m, NV_PID, base, &p.pid);
    set_slice(m, NV_MSGID, base, &p.msgid);
    set_slice(m, NV_LEGACY_MSGHDR, base, &p.legacy);
    if (p.seqid.set || p.synced >= 0) {
        /* atomic: several threads may parse at once (par.c); interning gives all the same handle */
        nv_handle seqid = __atomic_load_n(&h_seqid, __ATOMIC_RELAXED);
        nv_handle synced = __atomic_load_n(&h_synced, __ATOMIC_RELAXED);
        if (!seqid)
            __atomic_store_n(&h_seqid, seqid = nv_intern_str(".SDATA.meta.sequenceId"),
                             __ATOMIC_RELAXED);
        if (!synced)
            __atomic_store_n(&h_synced, synced = nv_intern_str(".SDATA.timeQuality.isSynced"),
                             __ATOMIC_RELAXED);
        set_slice(m, seqid, base, &p.seqid);
        if (p.synced >= 0) msg_set(m, synced, p.synced ? "1" : "0", 1);
    }
    if (p.rfc5424 && p.sd_start < len && line[p.sd_start] == '[') {
        static nv_handle h_unregistered;
        struct sd_out o = {m, base, p.message.off, BUF_INIT, BUF_INIT};
        c.pos = p.sd_start;
        parse_sd(&c, &o);
        if (o.unregistered.len) {
            nv_handle h = __atomic_load_n(&h_unregistered, __ATOMIC_RELAXED);
            if (!h)
                __atomic_store_n(&h_unregistered, h = nv_intern_str(SD_UNREGISTERED),
                                 __ATOMIC_RELAXED);
            msg_set(m, h, o.unregistered.p, o.unregistered.len);
            buf_free(&o.unregistered);
        }
        buf_free(&o.tmp);
    }

    msg_set_pri(m, p.pri);
    msg_set_flags(m, msg_flags(m) | MSG_F_SYSLOG);
    if (p.has_stamp) {
        resolve_stamp(&p.tf, &stamp);
        msg_set_stamp(m, &stamp);
        msg_set_flags(m, msg_flags(m) | MSG_F_HAS_STAMP);
    } else {
        msg_set_stamp(m, &now);
    }
    if (truncated) msg_set_flags(m, msg_flags(m) | MSG_F_TRUNCATED);
}
