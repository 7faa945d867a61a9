/*
 * Unit tests of the syslog parser (engine/syslog.c).
 *
 * The expected values in the two tables were not written by hand: they are
 * what syslog-ng 3.38's pdbtool produced for the same lines (`pdbtool match
 * -f`, all name-value pairs plus $PRI $UNIXTIME $USEC $TZOFFSET), run under
 * faketime at the clock the tests pass in opts->now, with TZ=UTC and
 * TZ=Europe/Budapest.  Checked against syslog-ng 3.38.1 (Debian).  The
 * hand-written tests further down say where their expectations come from.
 */
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/syslogfmt.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define L(s) s, sizeof(s) - 1
/* The stamp is the receive time (opts->now): the line has none of its own. */
#define RECVD INT64_MIN
/* PID of an "Error processing log message": syslog-ng's own, here ours. */
static const char pid_self[] = "<getpid>";
#define PID_SELF pid_self

struct row {
    const char *name;
    const char *line;
    size_t len;
    /* NULL: the value must be unset */
    const char *host, *program, *pid, *msgid, *message, *legacy;
    /* further values, "NAME=value" lines, or NULL */
    const char *extra;
    int pri;
    size_t nvalues;
    int64_t sec;
    int32_t usec, gmtoff;
};

/* pdbtool's clock for the tables: 2026-06-15T12:00:00Z. */
#define NOW_SEC 1781524800

/* TZ=UTC, now 2026-06-15T12:00:00Z. */
static const struct row utc_rows[] = {
    {"bsd_full",
     L("<34>Oct 11 22:14:15 mymachine su[123]: 'su root' failed for lonvick on /dev/pts/8"),
     "mymachine", "su", "123", NULL, "'su root' failed for lonvick on /dev/pts/8",
     "su[123]: ", NULL, 34, 5, 1791756855, 0, 0},
    {"no_pri",
     L("Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0"),
     "combo", "sshd(pam_unix)", "19939", NULL, "authentication failure; logname= uid=0",
     "sshd(pam_unix)[19939]: ", NULL, 13, 5, 1781450161, 0, 0},
    {"day_padded", L("Jun  4 15:16:01 combo sshd: hello"), "combo", "sshd", NULL, NULL, "hello",
     "sshd: ", NULL, 13, 4, 1780586161, 0, 0},
    {"no_host_prog_pid", L("Jun 14 15:16:01 sshd[19939]: hello"), NULL, "sshd", "19939", NULL,
     "hello", "sshd[19939]: ", NULL, 13, 4, 1781450161, 0, 0},
    {"no_host_prog", L("Jun 14 15:16:01 sshd: hello"), NULL, "sshd", NULL, NULL, "hello",
     "sshd: ", NULL, 13, 3, 1781450161, 0, 0},
    {"prog_without_colon", L("Jun 14 15:16:01 host prog msg here"), "host", "prog", NULL, NULL,
     "msg here", "prog ", NULL, 13, 4, 1781450161, 0, 0},
    {"ipv4_host", L("Jun 14 15:16:01 10.0.0.1 prog: x"), "10.0.0.1", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"ipv6_host", L("Jun 14 15:16:01 fe80::1 prog: x"), "fe80::1", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"ipv6_loopback_host", L("Jun 14 15:16:01 ::1 x: y"), "::1", "x", NULL, NULL, "y", "x: ", NULL,
     13, 4, 1781450161, 0, 0},
    {"hex_colon_is_host", L("Jun 14 15:16:01 cafe: hello"), "cafe:", "hello", NULL, NULL, "",
     "hello", NULL, 13, 4, 1781450161, 0, 0},
    {"digits_colon_not_host", L("Jun 14 15:16:01 12345: hello"), NULL, "12345", NULL, NULL, "hello",
     "12345: ", NULL, 13, 3, 1781450161, 0, 0},
    {"eight_groups_host", L("Jun 14 15:16:01 1:2:3:4:5:6:7:8 x: y"), "1:2:3:4:5:6:7:8", "x", NULL,
     NULL, "y", "x: ", NULL, 13, 4, 1781450161, 0, 0},
    {"bracket_ends_host", L("Jun 14 15:16:01 host[1] x: y"), NULL, "host", "1", NULL, "x: y",
     "host[1] ", NULL, 13, 4, 1781450161, 0, 0},
    {"slash_program", L("Jun 14 15:16:01 h postfix/smtpd[12]: y"), "h", "postfix/smtpd", "12", NULL,
     "y", "postfix/smtpd[12]: ", NULL, 13, 5, 1781450161, 0, 0},
    {"paren_program", L("Jun 14 15:16:01 combo sshd(pam_unix)[19939]: check pass; user unknown"),
     "combo", "sshd(pam_unix)", "19939", NULL, "check pass; user unknown",
     "sshd(pam_unix)[19939]: ", NULL, 13, 5, 1781450161, 0, 0},
    {"empty_pid", L("Jun 14 15:16:01 prog[]: y"), NULL, "prog", "", NULL, "y", "prog[]: ", NULL, 13,
     4, 1781450161, 0, 0},
    {"pid_with_space", L("Jun 14 15:16:01 prog[1 2]: y"), NULL, "prog", "1", NULL, "2]: y",
     "prog[1 ", NULL, 13, 4, 1781450161, 0, 0},
    {"pid_with_colon", L("Jun 14 15:16:01 prog[1:2]: y"), NULL, "prog", "1", NULL, "2]: y",
     "prog[1:", NULL, 13, 4, 1781450161, 0, 0},
    {"pid_unterminated", L("Jun 14 15:16:01 h prog[12"), "h", "prog", NULL, NULL, "", "prog[12",
     NULL, 13, 4, 1781450161, 0, 0},
    {"pid_then_garbage", L("Jun 14 15:16:01 h prog[12]x: y"), "h", "prog", "12", NULL, "x: y",
     "prog[12]", NULL, 13, 5, 1781450161, 0, 0},
    {"colon_without_space", L("Jun 14 15:16:01 h prog[12]:y"), "h", "prog", "12", NULL, "y",
     "prog[12]:", NULL, 13, 5, 1781450161, 0, 0},
    {"two_spaces_after_colon", L("Jun 14 15:16:01 h prog:  y"), "h", "prog", NULL, NULL, " y",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"double_colon", L("Jun 14 15:16:01 h prog ::y"), "h", "prog", NULL, NULL, "::y", "prog ", NULL,
     13, 4, 1781450161, 0, 0},
    {"spaces_around_host", L("Jun 14 15:16:01  h  prog: y"), "h", "prog", NULL, NULL, "y",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"tab_is_no_separator", L("Jun 14 15:16:01 h\tprog: y"), NULL, "h\tprog", NULL, NULL, "y",
     "h\tprog: ", NULL, 13, 3, 1781450161, 0, 0},
    {"empty_program", L("Jun 14 15:16:01 h :prog: y"), "h", "", NULL, NULL, "prog: y", ":", NULL,
     13, 4, 1781450161, 0, 0},
    {"stamp_only", L("Jun 14 15:16:01"), NULL, "", NULL, NULL, "", "", NULL, 13, 3, 1781450161, 0,
     0},
    {"stamp_and_word", L("Jun 14 15:16:01 host"), NULL, "host", NULL, NULL, "", "host", NULL, 13, 3,
     1781450161, 0, 0},
    {"stamp_word_space", L("Jun 14 15:16:01 host "), "host", "", NULL, NULL, "", "", NULL, 13, 4,
     1781450161, 0, 0},
    {"stamp_truncated", L("Jun 14 15:16:0"), NULL, "Jun", NULL, NULL, "14 15:16:0", "Jun ", NULL,
     13, 3, RECVD, 0, 0},
    {"usec", L("Jun 14 15:16:01.123456 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 123456, 0},
    {"usec_7_digits", L("Jun 14 15:16:01.1234567 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 123456, 0},
    {"usec_comma", L("Jun 14 15:16:01,5 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 500000, 0},
    {"usec_no_digits", L("Jun 14 15:16:01.x host prog: x"), "x", "host", NULL, NULL, "prog: x",
     "host ", NULL, 13, 4, 1781450161, 0, 0},
    {"colon_after_stamp", L("Jun 14 15:16:01:host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"pix", L("Jun 14 2024 15:16:01: host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1718378161, 0, 0},
    {"pix_space", L("Jun 14 2024 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1718378161, 0, 0},
    {"pix_two_colons", L("Jun 14 2024 15:16:01:: host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1718378161, 0, 0},
    {"pix_too_short", L("Jun 14 2024 15:16:01"), NULL, "Jun", NULL, NULL, "14 2024 15:16:01",
     "Jun ", NULL, 13, 3, RECVD, 0, 0},
    {"linksys", L("Jun 14 15:16:01 2024 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1718378161, 0, 0},
    {"linksys_too_short", L("Jun 14 15:16:01 2024"), NULL, "2024", NULL, NULL, "", "2024", NULL, 13,
     3, 1781450161, 0, 0},
    {"linksys_colon", L("Jun 14 15:16:01 2024:host prog: x"), "2024:host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"iso_offset", L("2024-01-05T10:00:00+00:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704448800, 0, 0},
    {"iso_z", L("2024-01-05T10:00:00Z host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704448800, 0, 0},
    {"iso_frac_offset", L("2024-01-05T10:00:00.5+01:00 host prog: x"), "host", "prog", NULL, NULL,
     "x", "prog: ", NULL, 13, 4, 1704445200, 500000, 3600},
    {"iso_nanos", L("2024-01-05T10:00:00.123456789+05:30 host prog: x"), "host", "prog", NULL, NULL,
     "x", "prog: ", NULL, 13, 4, 1704429000, 123456, 19800},
    {"iso_negative_offset", L("2024-01-05T10:00:00-08:00 host prog: x"), "host", "prog", NULL, NULL,
     "x", "prog: ", NULL, 13, 4, 1704477600, 0, -28800},
    {"iso_space", L("2024-01-05 10:00:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704448800, 0, 0},
    {"iso_local", L("2024-01-05T10:00:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704448800, 0, 0},
    {"iso_compact_offset", L("2024-01-05T10:00:00+0530 host prog: x"), "+0530", "host", NULL, NULL,
     "prog: x", "host ", NULL, 13, 4, 1704448800, 0, 0},
    {"iso_offset_digit_after", L("2024-01-05T10:00:00+05:301 host prog: x"), NULL, "+05", NULL,
     NULL, "301 host prog: x", "+05:", NULL, 13, 3, 1704448800, 0, 0},
    {"iso_z_glued", L("2024-01-05T10:00:00Zhost prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704448800, 0, 0},
    {"iso_only", L("2024-01-05T10:00:00Z"), NULL, "", NULL, NULL, "", "", NULL, 13, 3, 1704448800,
     0, 0},
    {"iso_bad_sep", L("2024-01-05X10:00:00Z host prog: x"), NULL, "2024-01-05X10", NULL, NULL,
     "00:00Z host prog: x", "2024-01-05X10:", NULL, 13, 3, RECVD, 0, 0},
    {"hour_25", L("Jun 14 25:16:01 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1781572561, 0, 0},
    {"minute_61", L("Jun 14 10:61:01 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781431261, 0, 0},
    {"second_60", L("Jun 14 10:59:60 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781431200, 0, 0},
    {"all_99", L("Jun 14 99:99:99 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1782099639, 0, 0},
    {"feb_30", L("Feb 30 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1772464561, 0, 0},
    {"day_0", L("Jun 00 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1780240561, 0, 0},
    {"iso_month_13", L("2024-13-05T10:00:00Z host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1736071200, 0, 0},
    {"iso_month_0", L("2024-00-05T10:00:00Z host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1701770400, 0, 0},
    {"iso_hour_25", L("2024-01-05T25:00:00Z host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704589200, 0, 0},
    {"month_upper", L("JUN 14 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"month_lower", L("jun 14 15:16:01 host prog: x"), NULL, "jun", NULL, NULL,
     "14 15:16:01 host prog: x", "jun ", NULL, 13, 3, RECVD, 0, 0},
    {"month_bad", L("Jxx 14 15:16:01 host prog: x"), NULL, "Jxx", NULL, NULL,
     "14 15:16:01 host prog: x", "Jxx ", NULL, 13, 3, RECVD, 0, 0},
    {"blank_day", L("Jun    15:16:01 host p: x"), "host", "p", NULL, NULL, "x", "p: ", NULL, 13, 4,
     1780240561, 0, 0},
    {"tab_in_day", L("Jun \t4 15:16:01 host p: x"), NULL, "Jun", NULL, NULL,
     "\t4 15:16:01 host p: x", "Jun ", NULL, 13, 3, RECVD, 0, 0},
    {"space_after_digit", L("Jun 14 15:16:1  host p: x"), NULL, "Jun", NULL, NULL,
     "14 15:16:1  host p: x", "Jun ", NULL, 13, 3, RECVD, 0, 0},
    {"year_dec", L("Dec 31 23:59:59 host p: x"), "host", "p", NULL, NULL, "x", "p: ", NULL, 13, 4,
     1798761599, 0, 0},
    {"year_jan", L("Jan  1 00:00:01 host p: x"), "host", "p", NULL, NULL, "x", "p: ", NULL, 13, 4,
     1767225601, 0, 0},
    {"pri_0", L("<0>Oct 11 22:14:15 h p: x"), "h", "p", NULL, NULL, "x", "p: ", NULL, 0, 4,
     1791756855, 0, 0},
    {"pri_191", L("<191>Oct 11 22:14:15 h p: x"), "h", "p", NULL, NULL, "x", "p: ", NULL, 191, 4,
     1791756855, 0, 0},
    {"pri_999", L("<999>Oct 11 22:14:15 h p: x"), "h", "p", NULL, NULL, "x", "p: ", NULL, 999, 4,
     1791756855, 0, 0},
    {"pri_16bit", L("<99999>Jun 14 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 34463, 4, 1781450161, 0, 0},
    {"pri_wraps", L("<4294967309>Jun 14 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"pri_zeros", L("<00013>x"), NULL, "x", NULL, NULL, "", "x", NULL, 13, 3, RECVD, 0, 0},
    {"pri_empty", L("<>Oct 11 22:14:15 mymachine su: x"), "mymachine", "su", NULL, NULL, "x",
     "su: ", NULL, 0, 4, 1791756855, 0, 0},
    {"pri_unterminated", L("<34"), NULL, "", NULL, NULL, "", "", NULL, 34, 3, RECVD, 0, 0},
    {"pri_only", L("<34>"), NULL, "", NULL, NULL, "", "", NULL, 34, 3, RECVD, 0, 0},
    {"pri_letter", L("<34Oct 11 22:14:15 mymachine su: x"), "", "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <34Oct 11 22:14:15 mymachine su: x", NULL, NULL, 43, 4, RECVD,
     0, 0},
    {"pri_hex", L("<3a>Oct 11 22:14:15 mymachine su: x"), "", "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <3a>Oct 11 22:14:15 mymachine su: x", NULL, NULL, 43, 4, RECVD,
     0, 0},
    {"cisco", L("<13>123: *Jun 14 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", ".SDATA.timeQuality.isSynced=0\n.SDATA.meta.sequenceId=123", 13, 6, 1781450161, 0,
     0},
    {"cisco_synced", L(".Jun 14 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", ".SDATA.timeQuality.isSynced=1", 13, 5, 1781450161, 0, 0},
    {"cisco_empty_seq", L(": foo"), NULL, "foo", NULL, NULL, "", "foo",
     ".SDATA.meta.sequenceId=", 13, 4, RECVD, 0, 0},
    {"cisco_star_no_stamp", L("*foo bar"), NULL, "foo", NULL, NULL, "bar", "foo ",
     ".SDATA.timeQuality.isSynced=0", 13, 4, RECVD, 0, 0},
    {"cisco_seq_no_space", L("123:x"), NULL, "123", NULL, NULL, "x", "123:", NULL, 13, 3, RECVD, 0,
     0},
    {"cisco_seq_at_end", L("<13>123:"), NULL, "123", NULL, NULL, "", "123:", NULL, 13, 3, RECVD, 0,
     0},
    {"cisco_space_star", L("  *  Jun 14 15:16:01 host prog: x"), NULL, "", NULL, NULL,
     " Jun 14 15:16:01 host prog: x", " ", ".SDATA.timeQuality.isSynced=0", 13, 4, RECVD, 0, 0},
    {"digits_only", L("12345"), NULL, "12345", NULL, NULL, "", "12345", NULL, 13, 3, RECVD, 0, 0},
    {"aix", L("Jun 14 15:16:01 Message forwarded from aixhost: prog: x"), "aixhost", "prog", NULL,
     NULL, "x", "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"aix_no_colon", L("Jun 14 15:16:01 Message forwarded from aixhost"), "aixhost", "", NULL, NULL,
     "", "", NULL, 13, 4, 1781450161, 0, 0},
    {"aix_repeated",
     L("Jun 14 15:16:01 Message forwarded from aixhost: last message repeated 2 times"), "aixhost",
     NULL, NULL, NULL, "last message repeated 2 times", NULL, NULL, 13, 2, 1781450161, 0, 0},
    {"repeated", L("Jun 14 15:16:01 last message repeated 3 times"), NULL, NULL, NULL, NULL,
     "last message repeated 3 times", NULL, NULL, 13, 1, 1781450161, 0, 0},
    {"repeated_exact", L("Jun 14 15:16:01 last message repeated"), "last", "message", NULL, NULL,
     "repeated", "message ", NULL, 13, 4, 1781450161, 0, 0},
    {"repeated_after_host", L("Jun 14 15:16:01 host last message repeated 3 times"), "host", "last",
     NULL, NULL, "message repeated 3 times", "last ", NULL, 13, 4, 1781450161, 0, 0},
    {"plain_text", L("hello world"), NULL, "hello", NULL, NULL, "world", "hello ", NULL, 13, 3,
     RECVD, 0, 0},
    {"empty", L(""), NULL, "", NULL, NULL, "", "", NULL, 13, 3, RECVD, 0, 0},
    {"one_word", L("hello"), NULL, "hello", NULL, NULL, "", "hello", NULL, 13, 3, RECVD, 0, 0},
    {"leading_spaces", L("  leading spaces"), NULL, "leading", NULL, NULL, "spaces", "leading ",
     NULL, 13, 3, RECVD, 0, 0},
    {"colon_word", L("a:b"), NULL, "a", NULL, NULL, "b", "a:", NULL, 13, 3, RECVD, 0, 0},
    {"prog_pid_no_stamp", L("prog[12]: msg"), NULL, "prog", "12", NULL, "msg", "prog[12]: ", NULL,
     13, 4, RECVD, 0, 0},
    {"bad_utf8", L("Jun 14 15:16:01 host prog: \xff\xfe bad utf8"), "host", "prog", NULL, NULL,
     "\xff\xfe bad utf8", "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"latin1", L("\xe9t\xe9 x"), NULL, "\xe9t\xe9", NULL, NULL, "x", "\xe9t\xe9 ", NULL, 13, 3,
     RECVD, 0, 0},
    {"crlf", L("Jun 14 15:16:01 host prog: crlf\r"), "host", "prog", NULL, NULL, "crlf",
     "prog: ", NULL, 13, 4, 1781450161, 0, 0},
    {"cr_inside", L("a\rb c"), NULL, "a\rb", NULL, NULL, "c", "a\rb ", NULL, 13, 3, RECVD, 0, 0},
    {"rfc5424_escapes",
     L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a b=\"x\\\"y\\\\z\\]w\"] msg"), "host",
     "app", "1234", "ID47", "msg", NULL, ".SDATA.a.b=x\"y\\z]w", 165, 6, 1065910455, 3000, 0},
    {"rfc5424_other_backslash",
     L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a b=\"x\\ny\"] msg"), "host", "app",
     "1234", "ID47", "msg", NULL, ".SDATA.a.b=x\\ny", 165, 6, 1065910455, 3000, 0},
    {"rfc5424_trailing_backslash", L("<165>1 2003-10-11T22:14:15Z host app 1 2 [a b=\"x\\\\\"] m"),
     "host", "app", "1", "2", "m", NULL, ".SDATA.a.b=x\\", 165, 6, 1065910455, 0, 0},
    {"rfc5424_id_only", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a][b c=\"d\"] msg"),
     "host", "app", "1234", "ID47", "msg", NULL, ".SDATA.a=\n.SDATA.b.c=d", 165, 7, 1065910455,
     3000, 0},
    {"rfc5424_sd_gap", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a] [b c=\"d\"] msg"),
     "host", "app", "1234", "ID47", "[b c=\"d\"] msg", NULL, ".SDATA.a=", 165, 6, 1065910455, 3000,
     0},
    {"rfc5424_dup_param", L("<165>1 2003-10-11T22:14:15Z host app 1 2 [a b=\"1\" b=\"2\"] msg"),
     "host", "app", "1", "2", "msg", NULL, ".SDATA.a.b=2", 165, 6, 1065910455, 0, 0},
    {"rfc5424_nil_sd", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 - msg"), "host", "app",
     "1234", "ID47", "msg", NULL, NULL, 165, 5, 1065910455, 3000, 0},
    {"rfc5424_all_nil", L("<165>1 2003-10-11T22:14:15Z - - - - - msg"), NULL, NULL, NULL, NULL,
     "msg", NULL, NULL, 165, 1, 1065910455, 0, 0},
    {"rfc5424_double_dash", L("<165>1 2003-10-11T22:14:15Z -- -- -- -- - msg"), "--", "--", "--",
     "--", "msg", NULL, NULL, 165, 5, 1065910455, 0, 0},
    {"rfc5424_no_msg", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 -"), "host", "app",
     "1234", "ID47", "", NULL, NULL, 165, 5, 1065910455, 3000, 0},
    {"rfc5424_sd_no_msg", L("<165>1 2003-10-11T22:14:15Z host app 1 2 [a b=\"1\"]"), "host", "app",
     "1", "2", "", NULL, ".SDATA.a.b=1", 165, 6, 1065910455, 0, 0},
    {"rfc5424_empty_msg", L("<165>1 2003-10-11T22:14:15Z host app 1 2 - "), "host", "app", "1", "2",
     "", NULL, NULL, 165, 5, 1065910455, 0, 0},
    {"rfc5424_msg_spaces", L("<165>1 2003-10-11T22:14:15Z host app 1 2 -  two spaces"), "host",
     "app", "1", "2", " two spaces", NULL, NULL, 165, 5, 1065910455, 0, 0},
    /* A nil stamp is "now": pdbtool reads its clock again, a few microseconds after the receive
       time. */
    {"rfc5424_nil_stamp", L("<165>1 - host app 1234 ID47 - msg"), "host", "app", "1234", "ID47",
     "msg", NULL, NULL, 165, 5, RECVD, 0, 0},
    {"rfc5424_local_stamp", L("<165>1 2003-10-11T22:14:15 host app 1234 ID47 - msg"), "host", "app",
     "1234", "ID47", "msg", NULL, NULL, 165, 5, 1065910455, 0, 0},
    {"rfc5424_offset", L("<165>1 2003-10-11T22:14:15.003+02:00 host app 1234 ID47 - msg"), "host",
     "app", "1234", "ID47", "msg", NULL, NULL, 165, 5, 1065903255, 3000, 7200},
    {"rfc5424_space_stamp", L("<165>1 2003-10-11 22:14:15 host app 1234 ID47 - msg"), "host", "app",
     "1234", "ID47", "msg", NULL, NULL, 165, 5, 1065910455, 0, 0},
    {"rfc5424_ipv6", L("<165>1 2003-10-11T22:14:15Z fe80::1 app 1 2 - msg"), "fe80::1", "app", "1",
     "2", "msg", NULL, NULL, 165, 5, 1065910455, 0, 0},
    {"rfc5424_long_app",
     L("<165>1 2003-10-11T22:14:15Z host app12345678901234567890123456789012345678901234567890 1 2 "
       "- msg"),
     "host", "app123456789012345678901234567890123456789012345", "1", "2", "msg", NULL, NULL, 165,
     5, 1065910455, 0, 0},
    {"rfc5424_long_msgid",
     L("<165>1 2003-10-11T22:14:15Z host app 1 msgid789012345678901234567890123456789 - msg"),
     "host", "app", "1", "msgid789012345678901234567890123", "msg", NULL, NULL, 165, 5, 1065910455,
     0, 0},
    {"rfc5424_no_pri", L("1 2003-10-11T22:14:15Z host app 1234 ID47 - msg"), "host", "app", "1234",
     "ID47", "msg", NULL, NULL, 13, 5, 1065910455, 0, 0},
    {"rfc5424_version_01", L("<165>01 2003-10-11T22:14:15Z host app 1234 ID47 - msg"), "host",
     "app", "1234", "ID47", "msg", NULL, NULL, 165, 5, 1065910455, 0, 0},
    {"version_2_is_bsd", L("<165>2 2003-10-11T22:14:15Z host app 1234 ID47 - msg"), NULL, "2", NULL,
     NULL, "2003-10-11T22:14:15Z host app 1234 ID47 - msg", "2 ", NULL, 165, 3, RECVD, 0, 0},
    {"version_1x_is_bsd", L("<165>1x 2003-10-11T22:14:15Z host app 1234 ID47 - msg"), NULL, "1x",
     NULL, NULL, "2003-10-11T22:14:15Z host app 1234 ID47 - msg", "1x ", NULL, 165, 3, RECVD, 0, 0},
    {"pri_alone_is_bsd", L("<165>"), NULL, "", NULL, NULL, "", "", NULL, 165, 3, RECVD, 0, 0},
    {"err_sd_glued_msg", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a b=\"c\"]msg"), "",
     "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a "
     "b=\"c\">@<]msg",
     NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_sd_bracket_in_value",
     L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a b=\"c]\"] msg"), "", "syslog-ng",
     PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a "
     "b=\"c>@<]\"] msg",
     NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_sd_unquoted", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a b=c] msg"), "",
     "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a b>@<=c] "
     "msg",
     NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_sd_trailing_space",
     L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a b=\"c\" ] msg"), "", "syslog-ng",
     PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [a "
     "b=\"c\">@< ] msg",
     NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_sd_leading_space", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 [ a] msg"), "",
     "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 >@<[ a] msg",
     NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_sd_unterminated", L("<165>1 2003-10-11T22:14:15Z host app 1 2 [a b=\"1\""), "",
     "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15Z host app 1 2 [a b=\"1>@<\"", NULL,
     NULL, 43, 4, RECVD, 0, 0},
    {"err_sd_open", L("<165>1 2003-10-11T22:14:15Z host app 1 2 ["), "", "syslog-ng", PID_SELF,
     NULL, "Error processing log message: <165>1 2003-10-11T22:14:15Z host app 1 2 >@<[", NULL,
     NULL, 43, 4, RECVD, 0, 0},
    {"err_sd_id_equals", L("<165>1 2003-10-11T22:14:15Z host app 1 2 [a=b c=\"1\"] msg"), "",
     "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15Z host app 1 2 [>@<a=b c=\"1\"] msg",
     NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_nil_glued", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 -msg"), "", "syslog-ng",
     PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003Z host app 1234 ID47 >@<-msg",
     NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_no_sd", L("<165>1 2003-10-11T22:14:15.003Z host app 1234 ID47"), "", "syslog-ng",
     PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003Z host app 1234 ID4>@<7", NULL,
     NULL, 43, 4, RECVD, 0, 0},
    {"err_only_host", L("<165>1 2003-10-11T22:14:15.003Z host"), "", "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003Z >@<host", NULL, NULL, 43, 4,
     RECVD, 0, 0},
    {"err_only_stamp", L("<165>1 2003-10-11T22:14:15.003Z"), "", "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15.003>@<Z", NULL, NULL, 43, 4, RECVD,
     0, 0},
    {"err_bsd_stamp", L("<165>1 Oct 11 22:14:15 host app 1234 ID47 - msg"), "", "syslog-ng",
     PID_SELF, NULL,
     "Error processing log message: <165>1>@< Oct 11 22:14:15 host app 1234 ID47 - msg", NULL, NULL,
     43, 4, RECVD, 0, 0},
    {"err_version_only", L("<165>1"), "", "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>>@<1", NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_version_space", L("<165>1 "), "", "syslog-ng", PID_SELF, NULL,
     "Error processing log message: <165>1>@< ", NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_one_space_word", L("1 hello world"), "", "syslog-ng", PID_SELF, NULL,
     "Error processing log message: 1>@< hello world", NULL, NULL, 43, 4, RECVD, 0, 0},
    {"err_host_bracket", L("<165>1 2003-10-11T22:14:15Z h[x] app 1 2 - msg"), "", "syslog-ng",
     PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15Z >@<h[x] app 1 2 - msg", NULL, NULL,
     43, 4, RECVD, 0, 0},
    {"err_empty_app", L("<165>1 2003-10-11T22:14:15Z host  app 1 2 - msg"), "", "syslog-ng",
     PID_SELF, NULL,
     "Error processing log message: <165>1 2003-10-11T22:14:15Z host  app 1>@< 2 - msg", NULL, NULL,
     43, 4, RECVD, 0, 0},
    {"err_trailing_space_after_stamp", L("<165>1 2003-10-11T22:14:15.003Z "), "", "syslog-ng",
     PID_SELF, NULL, "Error processing log message: <165>1 2003-10-11T22:14:15.003Z >@<", NULL,
     NULL, 43, 4, RECVD, 0, 0},
    {"dst_gap", L("Mar 29 02:30:00 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1774751400, 0, 0},
    {"dst_before_gap", L("Mar 29 01:59:59 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1774749599, 0, 0},
    {"dst_after_gap", L("Mar 29 03:00:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1774753200, 0, 0},
    {"dst_after_overlap", L("Oct 25 03:30:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1792899000, 0, 0},
    {"iso_gap_utc", L("2026-03-29T02:30:00Z host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1774751400, 0, 0},
    {"iso_gap_offset", L("2026-03-29T02:30:00+05:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1774733400, 0, 18000},
    {"summer", L("Jul 14 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1784042161, 0, 0},
};

/* TZ=Europe/Budapest, now 2026-06-15T12:00:00Z (14:00 local). */
static const struct row budapest_rows[] = {
    {"no_pri",
     L("Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0"),
     "combo", "sshd(pam_unix)", "19939", NULL, "authentication failure; logname= uid=0",
     "sshd(pam_unix)[19939]: ", NULL, 13, 5, 1781442961, 0, 7200},
    {"usec", L("Jun 14 15:16:01.123456 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781442961, 123456, 7200},
    {"pix", L("Jun 14 2024 15:16:01: host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1718370961, 0, 7200},
    {"linksys", L("Jun 14 15:16:01 2024 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1718370961, 0, 7200},
    {"iso_offset", L("2024-01-05T10:00:00+00:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704448800, 0, 0},
    {"iso_frac_offset", L("2024-01-05T10:00:00.5+01:00 host prog: x"), "host", "prog", NULL, NULL,
     "x", "prog: ", NULL, 13, 4, 1704445200, 500000, 3600},
    {"iso_space", L("2024-01-05 10:00:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704445200, 0, 3600},
    {"iso_local", L("2024-01-05T10:00:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1704445200, 0, 3600},
    {"hour_25", L("Jun 14 25:16:01 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1781565361, 0, 7200},
    {"minute_61", L("Jun 14 10:61:01 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781424061, 0, 7200},
    {"second_60", L("Jun 14 10:59:60 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1781424000, 0, 7200},
    {"all_99", L("Jun 14 99:99:99 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1782092439, 0, 7200},
    {"feb_30", L("Feb 30 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1772460961, 0, 3600},
    {"year_dec", L("Dec 31 23:59:59 host p: x"), "host", "p", NULL, NULL, "x", "p: ", NULL, 13, 4,
     1798757999, 0, 3600},
    {"year_jan", L("Jan  1 00:00:01 host p: x"), "host", "p", NULL, NULL, "x", "p: ", NULL, 13, 4,
     1767222001, 0, 3600},
    {"plain_text", L("hello world"), NULL, "hello", NULL, NULL, "world", "hello ", NULL, 13, 3,
     RECVD, 0, 0},
    /* A nil stamp is "now": pdbtool reads its clock again, a few microseconds after the receive
       time. */
    {"rfc5424_nil_stamp", L("<165>1 - host app 1234 ID47 - msg"), "host", "app", "1234", "ID47",
     "msg", NULL, NULL, 165, 5, RECVD, 0, 0},
    {"rfc5424_local_stamp", L("<165>1 2003-10-11T22:14:15 host app 1234 ID47 - msg"), "host", "app",
     "1234", "ID47", "msg", NULL, NULL, 165, 5, 1065903255, 0, 7200},
    {"dst_gap", L("Mar 29 02:30:00 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1774744200, 0, 7200},
    {"dst_before_gap", L("Mar 29 01:59:59 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1774745999, 0, 3600},
    {"dst_after_gap", L("Mar 29 03:00:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1774746000, 0, 7200},
    {"dst_after_overlap", L("Oct 25 03:30:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1792895400, 0, 3600},
    {"iso_gap_utc", L("2026-03-29T02:30:00Z host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1774751400, 0, 0},
    {"iso_gap_offset", L("2026-03-29T02:30:00+05:00 host prog: x"), "host", "prog", NULL, NULL, "x",
     "prog: ", NULL, 13, 4, 1774733400, 0, 18000},
    {"summer", L("Jul 14 15:16:01 host prog: x"), "host", "prog", NULL, NULL, "x", "prog: ", NULL,
     13, 4, 1784034961, 0, 7200},
};

static void
set_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
    syslogfmt_tz_reset();
}

static void
tz_utc(void)
{
    set_tz("UTC");
}

static void
tz_budapest(void)
{
    set_tz("Europe/Budapest");
}

static struct msg *
parse_at(const char *line, size_t len, int64_t now_sec, int32_t now_gmtoff)
{
    struct msg_time now = {now_sec, 0, now_gmtoff};
    struct syslogfmt_opts opts = {&now};
    struct msg *m = msg_new();

    syslogfmt_parse(m, line, len, &opts);
    return m;
}

static void
check_value(const struct msg *m, nv_handle h, const char *want, const char *what, const char *row)
{
    size_t len;
    const char *got = msg_get(m, h, &len);

    if (want == PID_SELF) {
        char pid[32];
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        want = pid;
        ck_assert_msg(got && len == strlen(want) && memcmp(got, want, len) == 0,
                      "%s: %s is not our pid %s", row, what, want);
        return;
    }
    if (!want) {
        ck_assert_msg(!got, "%s: %s should be unset, is \"%.*s\"", row, what, (int)len, got);
        return;
    }
    ck_assert_msg(got, "%s: %s unset, want \"%s\"", row, what, want);
    ck_assert_msg(len == strlen(want) && memcmp(got, want, len) == 0,
                  "%s: %s is \"%.*s\", want \"%s\"", row, what, (int)len, got, want);
}

/* Checks the "NAME=value\n..." list of a row. */
static void
check_extra(const struct msg *m, const char *extra, const char *row)
{
    while (extra && *extra) {
        const char *eq = strchr(extra, '='), *end = strchr(extra, '\n');
        char name[512], want[512];
        size_t nlen, vlen;
        nv_handle h;

        if (!end) end = extra + strlen(extra);
        ck_assert(eq && eq < end);
        nlen = (size_t)(eq - extra);
        vlen = (size_t)(end - eq - 1);
        ck_assert(nlen < sizeof(name) && vlen < sizeof(want));
        memcpy(name, extra, nlen);
        name[nlen] = '\0';
        memcpy(want, eq + 1, vlen);
        want[vlen] = '\0';
        h = nv_lookup(name, nlen);
        ck_assert_msg(h != NV_NONE, "%s: %s was never registered", row, name);
        check_value(m, h, want, name, row);
        extra = *end ? end + 1 : end;
    }
}

static void
check_row(const struct row *r, int32_t now_gmtoff)
{
    struct msg *m = parse_at(r->line, r->len, NOW_SEC, now_gmtoff);
    const struct msg_time *st = msg_stamp(m), *rc = msg_recvd(m);

    check_value(m, NV_HOST, r->host, "HOST", r->name);
    check_value(m, NV_PROGRAM, r->program, "PROGRAM", r->name);
    check_value(m, NV_PID, r->pid, "PID", r->name);
    check_value(m, NV_MSGID, r->msgid, "MSGID", r->name);
    check_value(m, NV_MESSAGE, r->message, "MESSAGE", r->name);
    check_value(m, NV_LEGACY_MSGHDR, r->legacy, "LEGACY_MSGHDR", r->name);
    check_extra(m, r->extra, r->name);
    ck_assert_msg(msg_nvalues(m) == r->nvalues, "%s: %zu values, want %zu", r->name, msg_nvalues(m),
                  r->nvalues);
    ck_assert_msg(msg_pri(m) == r->pri, "%s: pri %d, want %d", r->name, msg_pri(m), r->pri);
    ck_assert_msg(rc->sec == NOW_SEC && rc->usec == 0 && rc->gmtoff == now_gmtoff, "%s: recvd",
                  r->name);
    if (r->sec == RECVD) {
        ck_assert_msg(!(msg_flags(m) & MSG_F_HAS_STAMP), "%s: has a stamp", r->name);
        ck_assert_msg(st->sec == NOW_SEC && st->usec == 0 && st->gmtoff == now_gmtoff,
                      "%s: stamp is not the receive time", r->name);
    } else {
        ck_assert_msg(msg_flags(m) & MSG_F_HAS_STAMP, "%s: no stamp", r->name);
        ck_assert_msg(st->sec == r->sec && st->usec == r->usec && st->gmtoff == r->gmtoff,
                      "%s: stamp %lld.%06d%+d, want %lld.%06d%+d", r->name, (long long)st->sec,
                      (int)st->usec, (int)st->gmtoff, (long long)r->sec, (int)r->usec,
                      (int)r->gmtoff);
    }
    msg_unref(m);
}

START_TEST(test_utc_table)
{
    check_row(&utc_rows[_i], 0);
}
END_TEST

START_TEST(test_budapest_table)
{
    check_row(&budapest_rows[_i], 7200);
}
END_TEST

/* A host of 255 bytes is one; of 256 it is not (syslog-ng's buffer), checked with pdbtool. */
START_TEST(test_host_length_limit)
{
    char line[400], host[257];
    struct msg *m;
    int n;

    memset(host, 'h', 256);
    host[255] = '\0';
    n = snprintf(line, sizeof(line), "Jun 14 15:16:01 %s prog: x", host);
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, NV_HOST, host, "HOST", "host_255");
    check_value(m, NV_PROGRAM, "prog", "PROGRAM", "host_255");
    check_value(m, NV_MESSAGE, "x", "MESSAGE", "host_255");
    msg_unref(m);

    host[255] = 'h';
    host[256] = '\0';
    n = snprintf(line, sizeof(line), "Jun 14 15:16:01 %s prog: x", host);
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, NV_HOST, NULL, "HOST", "host_256");
    check_value(m, NV_PROGRAM, host, "PROGRAM", "host_256");
    check_value(m, NV_MESSAGE, "prog: x", "MESSAGE", "host_256");
    msg_unref(m);
}
END_TEST

/*
 * Structured-data name limits, probed with pdbtool: an SD-ID may have 248
 * characters (the 249th fails the parse), an SD-ID and a parameter name
 * 255 together, and a value whose name would exceed 255 is dropped.
 */
START_TEST(test_sd_name_limits)
{
    char line[1024], name[300], id[300], param[300];
    struct msg *m;
    int n;

    memset(id, 'i', sizeof(id));
    memset(param, 'p', sizeof(param));

    /* 248-byte id alone: stored as .SDATA.<id> (255 bytes of name) */
    n = snprintf(line, sizeof(line), "<165>1 2003-10-11T22:14:15Z host app 1 2 [%.248s] m", id);
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, NV_MESSAGE, "m", "MESSAGE", "id_248");
    ck_assert_uint_eq(msg_nvalues(m), 6);
    msg_unref(m);

    /* 249 bytes: "Error processing log message" */
    n = snprintf(line, sizeof(line), "<165>1 2003-10-11T22:14:15Z host app 1 2 [%.249s] m", id);
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, NV_PROGRAM, "syslog-ng", "PROGRAM", "id_249");
    ck_assert_int_eq(msg_pri(m), 43);
    msg_unref(m);

    /* id 200 + param 47: a 255-byte name, stored */
    n = snprintf(line, sizeof(line),
                 "<165>1 2003-10-11T22:14:15Z host app 1 2 [%.200s %.47s=\"1\"] m", id, param);
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, NV_MESSAGE, "m", "MESSAGE", "name_255");
    ck_assert_uint_eq(msg_nvalues(m), 6);
    n = snprintf(name, sizeof(name), ".SDATA.%.200s.%.47s", id, param);
    ck_assert_int_eq(n, 255);
    check_value(m, nv_lookup(name, (size_t)n), "1", "255-byte name", "name_255");
    msg_unref(m);

    /* id 200 + param 48: parsed, but the value is dropped */
    n = snprintf(line, sizeof(line),
                 "<165>1 2003-10-11T22:14:15Z host app 1 2 [%.200s %.48s=\"1\"] m", id, param);
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, NV_MESSAGE, "m", "MESSAGE", "name_256");
    ck_assert_uint_eq(msg_nvalues(m), 5);
    msg_unref(m);

    /* id 200 + param 56: fails the parse, at the 56th byte of the name */
    n = snprintf(line, sizeof(line),
                 "<165>1 2003-10-11T22:14:15Z host app 1 2 [%.200s %.56s=\"1\"] m", id, param);
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, NV_PROGRAM, "syslog-ng", "PROGRAM", "names_256");
    msg_unref(m);
}
END_TEST

/* pdbtool handles lines up to 65536 bytes whole; this one's MESSAGE had 65502 bytes there. */
START_TEST(test_64k_line)
{
    static const char head[] = "<13>Jun 14 15:16:01 host prog[1]: ";
    size_t len = 65536, mlen;
    char *line = malloc(len);
    struct msg *m;
    const char *msg;

    ck_assert_ptr_nonnull(line);
    memcpy(line, head, sizeof(head) - 1);
    memset(line + sizeof(head) - 1, 'x', len - (sizeof(head) - 1));
    m = parse_at(line, len, NOW_SEC, 0);
    check_value(m, NV_HOST, "host", "HOST", "64k");
    check_value(m, NV_PROGRAM, "prog", "PROGRAM", "64k");
    check_value(m, NV_PID, "1", "PID", "64k");
    msg = msg_get(m, NV_MESSAGE, &mlen);
    ck_assert_uint_eq(mlen, 65502);
    ck_assert(msg[0] == 'x' && msg[mlen - 1] == 'x');
    msg_unref(m);
    free(line);
}
END_TEST

/*
 * Longer lines cannot be checked with pdbtool (its reader splits them at
 * 64 KiB); the parser itself has no limit below the message's 16 MiB value
 * limit, past which the line is cut and the message flagged.
 */
START_TEST(test_huge_lines)
{
    static const char head[] = "Jun 14 15:16:01 host prog: ";
    size_t sizes[] = {10u * 1024 * 1024, MSG_MAX_VALUE + 100};
    size_t i;

    for (i = 0; i < 2; i++) {
        size_t len = sizes[i], mlen, want;
        char *line = malloc(len);
        struct msg *m;

        ck_assert_ptr_nonnull(line);
        memcpy(line, head, sizeof(head) - 1);
        memset(line + sizeof(head) - 1, 'y', len - (sizeof(head) - 1));
        m = parse_at(line, len, NOW_SEC, 0);
        check_value(m, NV_HOST, "host", "HOST", "huge");
        ck_assert_ptr_nonnull(msg_get(m, NV_MESSAGE, &mlen));
        want = (len > MSG_MAX_VALUE ? MSG_MAX_VALUE : len) - (sizeof(head) - 1);
        ck_assert_uint_eq(mlen, want);
        ck_assert_int_eq(!!(msg_flags(m) & MSG_F_TRUNCATED), len > MSG_MAX_VALUE);
        msg_unref(m);
        free(line);
    }
}
END_TEST

/*
 * NUL bytes: pdbtool's reader ends a line at a NUL, so these cannot be
 * compared; syslog-ng's parser drops trailing NULs and newlines
 * (syslog_format_handler) and treats others as ordinary bytes, except that
 * its space-skipping loops also skip NULs.
 */
START_TEST(test_nul_bytes)
{
    static const char inner[] = "Jun 14 15:16:01 host prog: a\0b";
    static const char trailing[] = "Jun 14 15:16:01 host prog: ab\0\0\n";
    static const char only_nul[] = "\0\0\0";
    static const char nul_space[] = "Jun 14 15:16:01 \0host prog: x";
    struct msg *m;
    const char *v;
    size_t len;

    m = parse_at(inner, sizeof(inner) - 1, NOW_SEC, 0);
    v = msg_get(m, NV_MESSAGE, &len);
    ck_assert_uint_eq(len, 3);
    ck_assert(memcmp(v, "a\0b", 3) == 0);
    msg_unref(m);

    m = parse_at(trailing, sizeof(trailing) - 1, NOW_SEC, 0);
    check_value(m, NV_MESSAGE, "ab", "MESSAGE", "trailing NUL");
    msg_unref(m);

    m = parse_at(only_nul, sizeof(only_nul) - 1, NOW_SEC, 0);
    check_value(m, NV_MESSAGE, "", "MESSAGE", "only NULs");
    check_value(m, NV_PROGRAM, "", "PROGRAM", "only NULs");
    msg_unref(m);

    m = parse_at(nul_space, sizeof(nul_space) - 1, NOW_SEC, 0);
    check_value(m, NV_HOST, "host", "HOST", "NUL as space");
    msg_unref(m);
}
END_TEST

/* The CR of a CRLF line and a trailing newline go, as pdbtool's reader drops them. */
START_TEST(test_line_endings)
{
    static const char *const lines[] = {"Jun 14 15:16:01 host prog: x\n",
                                        "Jun 14 15:16:01 host prog: x\r\n",
                                        "Jun 14 15:16:01 host prog: x\r\r\r"};
    size_t i;

    for (i = 0; i < 3; i++) {
        struct msg *m = parse_at(lines[i], strlen(lines[i]), NOW_SEC, 0);
        check_value(m, NV_MESSAGE, "x", "MESSAGE", lines[i]);
        msg_unref(m);
    }
}
END_TEST

/*
 * Year of year-less stamps, from pdbtool under faketime: December read in
 * January is last year's, January read in December next year's, anything
 * else this year's, "now" being local time.
 */
START_TEST(test_year_guess)
{
    static const struct {
        const char *tz;
        int64_t now;
        int32_t gmtoff;
        int64_t dec31, jan1, nov30, feb1, jun14;
    } cases[] = {
        /* 2026-01-15T12:00:00Z */
        {"UTC", 1768478400, 0, 1767225599, 1767225601, 1796032800, 1769940000, 1781450161},
        /* 2026-12-15T12:00:00Z */
        {"UTC", 1797336000, 0, 1798761599, 1798761601, 1796032800, 1769940000, 1781450161},
        /* 2026-12-31T23:30:00Z, already January 2027 in Budapest */
        {"Europe/Budapest", 1798759800, 3600, 1798757999, 1798758001, 1827565200, 1801472400,
         1812978961},
        /* 2025-12-31T23:30:00Z, January 2026 in Budapest */
        {"Europe/Budapest", 1767223800, 3600, 1767221999, 1767222001, 1796029200, 1769936400,
         1781442961},
    };
    static const char *const lines[] = {"Dec 31 23:59:59 host p: x", "Jan  1 00:00:01 host p: x",
                                        "Nov 30 10:00:00 host p: x", "Feb  1 10:00:00 host p: x",
                                        "Jun 14 15:16:01 host p: x"};
    size_t i, j;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const int64_t want[] = {cases[i].dec31, cases[i].jan1, cases[i].nov30, cases[i].feb1,
                                cases[i].jun14};
        set_tz(cases[i].tz);
        for (j = 0; j < 5; j++) {
            struct msg *m = parse_at(lines[j], strlen(lines[j]), cases[i].now, cases[i].gmtoff);
            ck_assert_msg(msg_stamp(m)->sec == want[j], "%s now=%lld \"%s\": %lld, want %lld",
                          cases[i].tz, (long long)cases[i].now, lines[j],
                          (long long)msg_stamp(m)->sec, (long long)want[j]);
            msg_unref(m);
        }
    }
    set_tz("UTC");
}
END_TEST

/* The zone cache notices a TZ change between lines. */
START_TEST(test_tz_change)
{
    static const char line[] = "Jun 14 15:16:01 host prog: x";
    struct msg *m;

    set_tz("UTC");
    m = parse_at(L(line), NOW_SEC, 0);
    ck_assert_int_eq(msg_stamp(m)->sec, 1781450161);
    ck_assert_int_eq(msg_stamp(m)->gmtoff, 0);
    set_tz("Europe/Budapest");
    syslogfmt_parse(m, L(line), &(struct syslogfmt_opts){&(struct msg_time){NOW_SEC, 0, 7200}});
    ck_assert_int_eq(msg_stamp(m)->sec, 1781442961);
    ck_assert_int_eq(msg_stamp(m)->gmtoff, 7200);
    set_tz("America/New_York");
    syslogfmt_parse(m, L(line), NULL);
    ck_assert_int_eq(msg_stamp(m)->gmtoff, -4 * 3600);
    set_tz("UTC");
    syslogfmt_parse(m, L(line), NULL);
    ck_assert_int_eq(msg_stamp(m)->gmtoff, 0);
    msg_unref(m);
}
END_TEST

/* Without opts the receive time is the wall clock. */
START_TEST(test_wall_clock)
{
    struct msg *m = msg_new();
    time_t before = time(NULL), after;

    syslogfmt_parse(m, L("no stamp here"), NULL);
    after = time(NULL);
    ck_assert(msg_recvd(m)->sec >= before && msg_recvd(m)->sec <= after);
    ck_assert(msg_stamp(m)->sec == msg_recvd(m)->sec);
    ck_assert(!(msg_flags(m) & MSG_F_HAS_STAMP));
    msg_unref(m);
}
END_TEST

/* Fields are slices of one stored copy of the line, not copies each. */
START_TEST(test_zero_copy)
{
    static const char line[] = "<13>Jun 14 15:16:01 host prog[7]: the message";
    struct msg *m = parse_at(L(line), NOW_SEC, 0);
    const char *host = msg_get(m, NV_HOST, NULL), *prog = msg_get(m, NV_PROGRAM, NULL);
    const char *pid = msg_get(m, NV_PID, NULL), *msg = msg_get(m, NV_MESSAGE, NULL);
    const char *hdr = msg_get(m, NV_LEGACY_MSGHDR, NULL);

    ck_assert_ptr_eq(prog, host + 5);
    ck_assert_ptr_eq(pid, host + 10);
    ck_assert_ptr_eq(hdr, prog);
    ck_assert_ptr_eq(msg, host + 14);
    ck_assert(memcmp(host - 20, line, sizeof(line) - 1) == 0);
    msg_unref(m);
}
END_TEST

/* Escaped SD values are copies; the slices around them stay right when the arena moves. */
START_TEST(test_sd_copies_and_slices)
{
    char line[4096];
    struct msg *m;
    size_t len;
    int n, i, off;
    const char *v;

    off = snprintf(line, sizeof(line), "<165>1 2003-10-11T22:14:15Z host app 1 2 [x");
    for (i = 0; i < 40; i++)
        off += snprintf(line + off, sizeof(line) - (size_t)off, " e%d=\"a\\\"%d\" p%d=\"plain%d\"",
                        i, i, i, i);
    n = off + snprintf(line + off, sizeof(line) - (size_t)off, "] done");
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, NV_MESSAGE, "done", "MESSAGE", "sd");
    for (i = 0; i < 40; i++) {
        char name[32], want[32];
        snprintf(name, sizeof(name), ".SDATA.x.e%d", i);
        snprintf(want, sizeof(want), "a\"%d", i);
        check_value(m, nv_lookup(name, strlen(name)), want, name, "sd");
        snprintf(name, sizeof(name), ".SDATA.x.p%d", i);
        snprintf(want, sizeof(want), "plain%d", i);
        check_value(m, nv_lookup(name, strlen(name)), want, name, "sd");
    }
    v = msg_get(m, NV_HOST, &len);
    ck_assert(len == 4 && memcmp(v, "host", 4) == 0);
    msg_unref(m);
}
END_TEST

/* A reused message carries nothing over from the previous line. */
START_TEST(test_reuse)
{
    struct msg *m =
        parse_at(L("<165>1 2003-10-11T22:14:15Z host app 1 2 [a b=\"c\\\"\"] m"), NOW_SEC, 0);

    ck_assert_uint_eq(msg_nvalues(m), 6);
    syslogfmt_parse(m, L("plain"), NULL);
    ck_assert_uint_eq(msg_nvalues(m), 3);
    check_value(m, NV_HOST, NULL, "HOST", "reuse");
    check_value(m, NV_PROGRAM, "plain", "PROGRAM", "reuse");
    ck_assert_int_eq(msg_pri(m), MSG_DEFAULT_PRI);
    ck_assert(!(msg_flags(m) & MSG_F_HAS_STAMP));
    msg_unref(m);
}
END_TEST

/* A small deterministic generator, so failures reproduce. */
static uint32_t
next_rand(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/*
 * Garbage and every prefix of tricky lines, each in a buffer of exactly its
 * length so that the sanitizers catch any read past the end.  Whatever the
 * input, MESSAGE is set.
 */
START_TEST(test_garbage_and_prefixes)
{
    static const char *const seeds[] = {
        "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 "
        "iut=\"3\" "
        "eventSource=\"App\\\"lication\"][examplePriority@32473 class=\"high\"] \xef\xbb\xbf"
        "An application event log entry",
        "<13>123: *Jun 14 2024 15:16:01: fe80::1 postfix/smtpd[12]: msg",
        "Jun 14 15:16:01.123456 Message forwarded from aix: last message repeated 2 times",
        "2024-01-05T10:00:00.123+05:30 host prog[1]: x",
        "Jun 14 15:16:01 2024 host prog: x",
        "<99999>1 - - - - [a b=\"\\\\\\]\"]",
    };
    static const char alphabet[] = " <>[]:=\"\\-.,*Z+T0123456789JunDec@\t\xef\xbb\xbf\x80\xff";
    struct msg *m = msg_new();
    struct msg_time now = {NOW_SEC, 0, 0};
    struct syslogfmt_opts opts = {&now};
    uint32_t seed = 42;
    size_t i, n, k;

    /* no line at all */
    syslogfmt_parse(m, NULL, 0, &opts);
    check_value(m, NV_MESSAGE, "", "MESSAGE", "NULL line");
    check_value(m, NV_PROGRAM, "", "PROGRAM", "NULL line");

    for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
        size_t len = strlen(seeds[i]);
        for (n = 0; n <= len; n++) {
            char *buf = malloc(n ? n : 1);
            ck_assert_ptr_nonnull(buf);
            memcpy(buf, seeds[i], n);
            syslogfmt_parse(m, buf, n, &opts);
            ck_assert_ptr_nonnull(msg_get(m, NV_MESSAGE, NULL));
            free(buf);
        }
    }
    for (i = 0; i < 20000; i++) {
        size_t len = next_rand(&seed) % 96;
        char *buf = malloc(len ? len : 1);
        ck_assert_ptr_nonnull(buf);
        for (k = 0; k < len; k++)
            buf[k] = next_rand(&seed) % 4 ? alphabet[next_rand(&seed) % (sizeof(alphabet) - 1)]
                                          : (char)next_rand(&seed);
        if (len > 6 && next_rand(&seed) % 2) memcpy(buf, "<13>1 ", 6);
        syslogfmt_parse(m, buf, len, &opts);
        ck_assert_ptr_nonnull(msg_get(m, NV_MESSAGE, NULL));
        free(buf);
    }
    msg_unref(m);
}
END_TEST

/*
 * Structured data may register NV_MAX_INPUT_NAMES value names, no more: a
 * parameter whose new name is refused is kept, RFC 5424-escaped, in
 * .corral.sdata_unregistered, and counted; names known already (the rules',
 * or registered before) are still stored as values; and the configuration
 * can still register names.  (Last in the suite: it spends the budget, which
 * is the process's, should the tests not run forked.)
 */
START_TEST(test_sd_name_budget)
{
    char line[1024];
    struct nv_stats before, after;
    struct msg *m;
    size_t len;
    const char *v, *want;
    int n, i;

    nv_intern_str(".SDATA.x.rule_name"); /* as a rule would */
    nv_stats(&before);
    for (i = 0; (uint32_t)i < NV_MAX_INPUT_NAMES; i++) {
        n = snprintf(line, sizeof(line), "<165>1 2003-10-11T22:14:15Z host app 1 2 [x f%d=\"v\"] m",
                     i);
        m = parse_at(line, (size_t)n, NOW_SEC, 0);
        msg_unref(m);
    }
    nv_stats(&after);
    ck_assert_uint_le(after.input_names, NV_MAX_INPUT_NAMES);
    n = snprintf(line, sizeof(line),
                 "<165>1 2003-10-11T22:14:15Z host app 1 2 [x f0=\"old\" rule_name=\"r\" "
                 "new1=\"a\\\"b\\]c\" new2=\"plain\"][y@1 new3=\"z\"] m");
    m = parse_at(line, (size_t)n, NOW_SEC, 0);
    check_value(m, nv_lookup(".SDATA.x.f0", 11), "old", ".SDATA.x.f0", "budget");
    check_value(m, nv_lookup(".SDATA.x.rule_name", 18), "r", ".SDATA.x.rule_name", "budget");
    ck_assert_uint_eq(nv_lookup(".SDATA.x.new1", 13), 0);
    v = msg_get(m, nv_lookup(".corral.sdata_unregistered", 26), &len);
    ck_assert_ptr_nonnull(v);
    /* the values as RFC 5424 writes them: '"', '\\' and ']' escaped */
    want = "x.new1=\"a\\\"b\\]c\" x.new2=\"plain\" y@1.new3=\"z\"";
    ck_assert_msg(len == strlen(want) && memcmp(v, want, len) == 0, "%.*s", (int)len, v);
    msg_unref(m);
    nv_stats(&after);
    ck_assert_uint_ge(after.refused, before.refused + 3);
    /* the configuration's room is intact */
    ck_assert_uint_ne(nv_intern_str("rule.fresh_name"), 0);
}
END_TEST

static Suite *
syslog_suite(void)
{
    Suite *s = suite_create("syslog");
    TCase *tc = tcase_create("pdbtool-utc");
    TCase *bud = tcase_create("pdbtool-budapest");
    TCase *misc = tcase_create("misc");

    tcase_add_checked_fixture(tc, tz_utc, tz_utc);
    tcase_add_loop_test(tc, test_utc_table, 0, (int)(sizeof(utc_rows) / sizeof(utc_rows[0])));
    suite_add_tcase(s, tc);

    tcase_add_checked_fixture(bud, tz_budapest, tz_utc);
    tcase_add_loop_test(bud, test_budapest_table, 0,
                        (int)(sizeof(budapest_rows) / sizeof(budapest_rows[0])));
    suite_add_tcase(s, bud);

    tcase_add_checked_fixture(misc, tz_utc, tz_utc);
    tcase_set_timeout(misc, 60);
    tcase_add_test(misc, test_host_length_limit);
    tcase_add_test(misc, test_sd_name_limits);
    tcase_add_test(misc, test_64k_line);
    tcase_add_test(misc, test_huge_lines);
    tcase_add_test(misc, test_nul_bytes);
    tcase_add_test(misc, test_line_endings);
    tcase_add_test(misc, test_year_guess);
    tcase_add_test(misc, test_tz_change);
    tcase_add_test(misc, test_wall_clock);
    tcase_add_test(misc, test_zero_copy);
    tcase_add_test(misc, test_sd_copies_and_slices);
    tcase_add_test(misc, test_reuse);
    tcase_add_test(misc, test_garbage_and_prefixes);
    tcase_add_test(misc, test_sd_name_budget);
    suite_add_tcase(s, misc);
    return s;
}

int
main(void)
{
    return unit_run(syslog_suite());
}
