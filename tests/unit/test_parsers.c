/*
 * test_parsers: the @TYPE:name:arg@ field parsers, one table per parser.
 *
 * Every row was checked against pdbtool 3.38 (syslog-ng 3.38.1): the parser
 * was put in a pattern "k <prefix>@TYPE:v:arg@", and again followed by
 * "@ANYSTRING:rest@", and pdbtool's match of "k <prefix><input>" told
 * whether the parser matches, how much it consumes (the input less the rest;
 * one byte more than the input when it also consumed the terminating NUL,
 * which only a prefix match can use) and the value it stores as "v".
 *
 * Each subject is parsed from a heap copy of exactly its length, without a
 * terminating NUL, so that under AddressSanitizer a parser reading past the
 * end fails the test: where syslog-ng reads on into memory, corral must not.
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/buf.h"
#include "engine/parsers.h"
#include "tests/unit/unit_run.h"

struct row {
    const char *spec;   /* the text between the '@'s */
    const char *prefix; /* subject text before the parser's start */
    const char *input;  /* subject text from the parser's start */
    bool ok;
    size_t len;      /* bytes consumed */
    const char *cap; /* the value stored */
};

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

/* checked against pdbtool 3.38 */
/* clang-format off */
static const struct row string_rows[] = {
    {"STRING:v", "", "abc", true, 3, "abc"},
    {"STRING:v", "", "abc def", true, 3, "abc"},
    {"STRING:v", "", "a.b", true, 1, "a"},
    /* an empty STRING never matches */
    {"STRING:v", "", " abc", false, 0, NULL},
    {"STRING:v", "", ".", false, 0, NULL},
    /* character classes are ASCII only */
    {"STRING:v", "", "\303\251", false, 0, NULL},
    {"STRING:v", "", "Ab9_", true, 3, "Ab9"},
    {"STRING:v:.", "", "a.b c", true, 3, "a.b"},
    {"STRING:v:.", "", "..x ", true, 3, "..x"},
    {"STRING:v:.-", "", "-a.b-:", true, 5, "-a.b-"},
    {"STRING:v::", "", "ab:c d", true, 4, "ab:c"},
    {"STRING:v:", "", "ab.", true, 2, "ab"},
    {"STRING:v: ", "", "a b c.", true, 5, "a b c"},
    {"STRING:v:\303\251", "", "a\303\251b!", true, 4, "a\303\251b"},
};

static const struct row estring_rows[] = {
    {"ESTRING:v: ", "", "abc def", true, 4, "abc"},
    /* empty capture */
    {"ESTRING:v: ", "", " x", true, 1, ""},
    /* no stop ahead: no match */
    {"ESTRING:v: ", "", "abc", false, 0, NULL},
    {"ESTRING:v: ", "", "a  b", true, 2, "a"},
    {"ESTRING:v:, ", "", "a,b, c", true, 5, "a,b"},
    {"ESTRING:v:, ", "", "a,b,c", false, 0, NULL},
    {"ESTRING:v:--", "", "a-b--c", true, 5, "a-b"},
    {"ESTRING:v:--", "", "--", true, 2, ""},
    {"ESTRING:v:--", "", "a-", false, 0, NULL},
    /* empty stop: takes the rest and its NUL, past the end */
    {"ESTRING:v:", "", "abc", true, 4, "abc"},
    {"ESTRING:v:", "", "a b", true, 4, "a b"},
    {"ESTRING:v::", "", "ab:c", true, 3, "ab"},
    /* multi-char stop, found where it first starts */
    {"ESTRING:v:ab", "", "xaab", true, 4, "xa"},
};

static const struct row qstring_rows[] = {
    {"QSTRING:v:\"", "", "\"abc\" x", true, 5, "abc"},
    /* empty quotes: empty capture */
    {"QSTRING:v:\"", "", "\"\"", true, 2, ""},
    {"QSTRING:v:\"", "", "\"abc", false, 0, NULL},
    {"QSTRING:v:\"", "", "abc\"", false, 0, NULL},
    {"QSTRING:v:\"", "", "\"", false, 0, NULL},
    {"QSTRING:v:\"", "", "\"a\"b\"", true, 3, "a"},
    /* 3.38 does not nest */
    {"QSTRING:v:<>", "", "<a<b>c>", true, 5, "a<b"},
    {"QSTRING:v:<>", "", "<>", true, 2, ""},
    {"QSTRING:v:<>", "", "<abc", false, 0, NULL},
    {"QSTRING:v:<>", "", ">a<", false, 0, NULL},
    {"QSTRING:v:'", "", "'it''s'", true, 4, "it"},
    /* an argument of other than 2 chars: its first is both quotes */
    {"QSTRING:v:abc", "", "axyza", true, 5, "xyz"},
    {"QSTRING:v:abc", "", "bxyzb", false, 0, NULL},
    /* no quote character: never matches */
    {"QSTRING:v:", "", "\"x\"", false, 0, NULL},
};

static const struct row number_rows[] = {
    {"NUMBER:v", "", "123 ", true, 3, "123"},
    {"NUMBER:v", "", "-12", true, 3, "-12"},
    /* a sign alone is no number */
    {"NUMBER:v", "", "-", false, 0, NULL},
    {"NUMBER:v", "", "0x1F", true, 4, "0x1F"},
    {"NUMBER:v", "", "0X1f", true, 4, "0X1f"},
    /* 0x commits to hex: no fallback to the 0 */
    {"NUMBER:v", "", "0x", false, 0, NULL},
    /* likewise */
    {"NUMBER:v", "", "0xg", false, 0, NULL},
    /* no '+' in 3.38 */
    {"NUMBER:v", "", "+5", false, 0, NULL},
    /* no negative hex in 3.38 */
    {"NUMBER:v", "", "-0x5", true, 2, "-0"},
    {"NUMBER:v", "", "007", true, 3, "007"},
    {"NUMBER:v", "", "12.5", true, 2, "12"},
    {"NUMBER:v", "", "1e5", true, 1, "1"},
    {"NUMBER:v", "", "0x1.5", true, 3, "0x1"},
    {"NUMBER:v", "", "--1", false, 0, NULL},
    {"NUMBER:v", "", "99999999999999999999", true, 20, "99999999999999999999"},
    {"NUMBER:v", "", "0", true, 1, "0"},
    {"NUMBER:v", "", "-0", true, 2, "-0"},
    {"NUMBER:v", "", "x1", false, 0, NULL},
    {"NUMBER:v", "", "0xfffffffffffffffff", true, 19, "0xfffffffffffffffff"},
};

static const struct row float_rows[] = {
    {"FLOAT:v", "", "1.5", true, 3, "1.5"},
    {"FLOAT:v", "", ".5", true, 2, ".5"},
    {"FLOAT:v", "", "3.", true, 2, "3."},
    /* a lone '-' is a FLOAT */
    {"FLOAT:v", "", "-", true, 1, "-"},
    {"FLOAT:v", "", "-.", true, 2, "-."},
    /* so is a lone '.' */
    {"FLOAT:v", "", ".", true, 1, "."},
    {"FLOAT:v", "", "1e5", true, 3, "1e5"},
    {"FLOAT:v", "", "1e-5", true, 4, "1e-5"},
    /* no '+' after the e in 3.38 */
    {"FLOAT:v", "", "2e+5", true, 2, "2e"},
    /* an exponent needs something before it */
    {"FLOAT:v", "", "e5", false, 0, NULL},
    {"FLOAT:v", "", "1E", true, 2, "1E"},
    {"FLOAT:v", "", "1.2.3", true, 3, "1.2"},
    {"FLOAT:v", "", "-1.5e-3", true, 7, "-1.5e-3"},
    {"FLOAT:v", "", "1ee5", true, 2, "1e"},
    {"FLOAT:v", "", "+1.5", false, 0, NULL},
    /* ... and a '-' is something */
    {"FLOAT:v", "", "-e5", true, 3, "-e5"},
    {"FLOAT:v", "", ".e1", true, 3, ".e1"},
    {"FLOAT:v", "", "1.e5", true, 4, "1.e5"},
    {"FLOAT:v", "", "-x", true, 1, "-"},
    {"FLOAT:v", "", "5-", true, 1, "5"},
    {"DOUBLE:v", "", "2.5x", true, 3, "2.5"},
};

static const struct row ipv4_rows[] = {
    {"IPv4:v", "", "1.2.3.4", true, 7, "1.2.3.4"},
    {"IPv4:v", "", "255.255.255.255", true, 15, "255.255.255.255"},
    {"IPv4:v", "", "256.1.1.1", false, 0, NULL},
    {"IPv4:v", "", "1.2.3.256", false, 0, NULL},
    {"IPv4:v", "", "1.2.3", false, 0, NULL},
    /* a fifth group is left over */
    {"IPv4:v", "", "1.2.3.4.5", true, 7, "1.2.3.4"},
    {"IPv4:v", "", "1.2.3.4.", true, 7, "1.2.3.4"},
    {"IPv4:v", "", "1..2.3", false, 0, NULL},
    {"IPv4:v", "", "01.02.03.004", true, 12, "01.02.03.004"},
    {"IPv4:v", "", "1.2.3.4a", true, 7, "1.2.3.4"},
    /* octets are ints that wrap: 4294967297 is 1 */
    {"IPv4:v", "", "4294967297.1.1.1", true, 16, "4294967297.1.1.1"},
    {"IPv4:v", "", "1.2.3.4:80", true, 7, "1.2.3.4"},
    {"IPv4:v", "", ".1.2.3.4", false, 0, NULL},
    {"IPv4:v", "", "0.0.0.0", true, 7, "0.0.0.0"},
    /* ... and this one wraps negative, which passes '> 255' */
    {"IPv4:v", "", "999999999999.1.1.1", true, 18, "999999999999.1.1.1"},
    /* wraps to 0 */
    {"IPv4:v", "", "1.2.3.4294967296", true, 16, "1.2.3.4294967296"},
};

static const struct row ipv6_rows[] = {
    {"IPv6:v", "", "::", true, 2, "::"},
    {"IPv6:v", "", "::1", true, 3, "::1"},
    {"IPv6:v", "", "fe80::1", true, 7, "fe80::1"},
    {"IPv6:v", "", "1:2:3:4:5:6:7:8", true, 15, "1:2:3:4:5:6:7:8"},
    /* 7 colons at most */
    {"IPv6:v", "", "1:2:3:4:5:6:7:8:9", true, 15, "1:2:3:4:5:6:7:8"},
    /* '::' twice */
    {"IPv6:v", "", "1::2::3", false, 0, NULL},
    {"IPv6:v", "", "::ffff:1.2.3.4", true, 14, "::ffff:1.2.3.4"},
    /* addr:port is read as one more group */
    {"IPv6:v", "", "2001:db8::1:443", true, 15, "2001:db8::1:443"},
    /* a trailing '.' is given back */
    {"IPv6:v", "", "::1.", true, 3, "::1"},
    /* a trailing single ':' is given back */
    {"IPv6:v", "", "::1:", true, 3, "::1"},
    /* 8 groups and a shortening */
    {"IPv6:v", "", "1:2:3:4:5:6:7::", false, 0, NULL},
    {"IPv6:v", "", "abcd::12345", false, 0, NULL},
    {"IPv6:v", "", "1:2:3:4:5:6:1.2.3.4", true, 19, "1:2:3:4:5:6:1.2.3.4"},
    {"IPv6:v", "", "::1.2.3", false, 0, NULL},
    {"IPv6:v", "", "::1.2.3.4.5", true, 9, "::1.2.3.4"},
    /* a group read as hex above 0x597 cannot start an IPv4 tail */
    {"IPv6:v", "", "::fff.1.2.3", true, 5, "::fff"},
    /* the tail's first octet is decimal 256: stops before the '.' */
    {"IPv6:v", "", "::256.1.1.1", true, 5, "::256"},
    {"IPv6:v", "", "1:2", false, 0, NULL},
    {"IPv6:v", "", "1:2:3", false, 0, NULL},
    /* after an IPv4 tail a ':' ends the address */
    {"IPv6:v", "", "::ffff:1.2.3.4:80", true, 14, "::ffff:1.2.3.4"},
    {"IPv6:v", "", "fe80:::1", false, 0, NULL},
    {"IPv6:v", "", ":::", false, 0, NULL},
    {"IPv6:v", "", "::598.1.2.3", true, 5, "::598"},
    {"IPv6:v", "", "::597.1.2.3", true, 5, "::597"},
    {"IPv6:v", "", "1::", true, 3, "1::"},
    {"IPv6:v", "", "1.2.3.4", false, 0, NULL},
    {"IPv6:v", "", "::g", true, 2, "::"},
    {"IPv6:v", "", "10000::1", false, 0, NULL},
    {"IPv6:v", "", "1:2:3:4:5:6:7:8.", true, 15, "1:2:3:4:5:6:7:8"},
    {"IPv6:v", "", "1::2:3.4.5.6", true, 12, "1::2:3.4.5.6"},
    /* hex digits are taken in the dotted tail */
    {"IPv6:v", "", "::1.2.3.a", true, 9, "::1.2.3.a"},
    {"IPv6:v", "", "[::1]:80", false, 0, NULL},
    {"IPv6:v", "", "fe80::1%eth0", true, 7, "fe80::1"},
    /* a group that wraps negative passes '> 0xffff' */
    {"IPv6:v", "", "98:cb:b5:d3F:a9F0:6:46:92abFd4d:1", true, 31, "98:cb:b5:d3F:a9F0:6:46:92abFd4d"},
    {"IPv6:v", "", "::1.2.3.4 x", true, 9, "::1.2.3.4"},
    {"IPv6:v", "", "1:2:3:4:5:6:7:1.2.3.4", true, 15, "1:2:3:4:5:6:7:1"},
    {"IPv6:v", "", "::ffff:1.2.3.4.", true, 14, "::ffff:1.2.3.4"},
};

static const struct row ipvany_rows[] = {
    {"IPvANY:v", "", "1.2.3.4", true, 7, "1.2.3.4"},
    {"IPvANY:v", "", "::1", true, 3, "::1"},
    {"IPvANY:v", "", "1.2.3", false, 0, NULL},
    {"IPvANY:v", "", "1.2.3.4.5.6", true, 7, "1.2.3.4"},
    {"IPvANY:v", "", "fe80::1.2.3.4x", true, 13, "fe80::1.2.3.4"},
    {"IPvANY:v", "", "x", false, 0, NULL},
};

static const struct row macaddr_rows[] = {
    {"MACADDR:v", "", "00:11:22:33:44:55", true, 17, "00:11:22:33:44:55"},
    {"MACADDR:v", "", "00:11:22:33:44:55:66", true, 17, "00:11:22:33:44:55"},
    /* a prefix of pairs is accepted */
    {"MACADDR:v", "", "00:11:22", true, 8, "00:11:22"},
    /* the ':' after the last pair is given back */
    {"MACADDR:v", "", "00:11:22:", true, 8, "00:11:22"},
    {"MACADDR:v", "", "00-11-22", true, 2, "00"},
    /* pairs are 2 hex digits */
    {"MACADDR:v", "", "0:11:22", false, 0, NULL},
    {"MACADDR:v", "", "00:1g:22", true, 2, "00"},
    {"MACADDR:v", "", "aA:bB:cC:dD:eE:fF x", true, 17, "aA:bB:cC:dD:eE:fF"},
    {"MACADDR:v", "", "00", true, 2, "00"},
};

static const struct row lladdr_rows[] = {
    {"LLADDR:v", "", "00:11:22:33:44:55:66:77", true, 23, "00:11:22:33:44:55:66:77"},
    {"LLADDR:v", "", "00:11", true, 5, "00:11"},
    {"LLADDR:v", "", "0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a", true, 59, "0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a"},
    /* 20 pairs by default; more are left over */
    {"LLADDR:v", "", "0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a", true, 59, "0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a:0a"},
    {"LLADDR:v:2", "", "00:11", true, 5, "00:11"},
    {"LLADDR:v:2", "", "00:11:22", true, 5, "00:11"},
    {"LLADDR:v:2", "", "00", true, 2, "00"},
    /* 0 pairs: never matches */
    {"LLADDR:v:0", "", "00:11", false, 0, NULL},
    /* the leading digits of the argument count */
    {"LLADDR:v:3x", "", "00:11:22:33", true, 8, "00:11:22"},
    /* an empty argument is 0 pairs */
    {"LLADDR:v:", "", "00:11", false, 0, NULL},
    /* the count is an int that wraps: 1 pair */
    {"LLADDR:v:4294967297", "", "00:11", true, 2, "00"},
    /* 3 * count - 1 wraps negative: never matches */
    {"LLADDR:v:1431655765", "", "00:11", false, 0, NULL},
    /* a count that wraps negative accepts the empty text */
    {"LLADDR:v:2147483648", "", "00:11", true, 0, ""},
};

static const struct row email_rows[] = {
    {"EMAIL:v", "", "a@b.c", true, 5, "a@b.c"},
    {"EMAIL:v", "", "a.b@c.d", true, 7, "a.b@c.d"},
    /* the local part may not start with a '.' */
    {"EMAIL:v", "", ".a@b.c", false, 0, NULL},
    /* ... nor end with one */
    {"EMAIL:v", "", "a.@b.c", false, 0, NULL},
    /* two labels at least */
    {"EMAIL:v", "", "a@b", false, 0, NULL},
    {"EMAIL:v", "", "a@b.", false, 0, NULL},
    /* a trailing '.' is part of the host */
    {"EMAIL:v", "", "a@b.c.", true, 6, "a@b.c."},
    {"EMAIL:v", "", "a+b@c-d.e", true, 9, "a+b@c-d.e"},
    {"EMAIL:v", "", "a..b@c.d", true, 8, "a..b@c.d"},
    {"EMAIL:v", "", "a@-b.c", true, 6, "a@-b.c"},
    {"EMAIL:v", "", "a@b..c", false, 0, NULL},
    {"EMAIL:v", "", "a@b.c x", true, 5, "a@b.c"},
    {"EMAIL:v", "", "a@b.c-", true, 6, "a@b.c-"},
    {"EMAIL:v", "", "x_y%z@h.example.com", true, 19, "x_y%z@h.example.com"},
    {"EMAIL:v", "", "a{b}@c.d", true, 8, "a{b}@c.d"},
    {"EMAIL:v", "", "a@b.c:", true, 5, "a@b.c"},
    {"EMAIL:v", "", "ab", false, 0, NULL},
    /* empty local part: the byte before it is looked at */
    {"EMAIL:v", "x", "@b.c", true, 4, "@b.c"},
    /* empty local part: the byte before it is looked at */
    {"EMAIL:v", "x.", "@b.c", false, 0, NULL},
    {"EMAIL:v:<>", "", "<a@b.c> x", true, 7, "a@b.c"},
    /* skip chars up to the end take the NUL too: past the end */
    {"EMAIL:v:<>", "", "<a@b.c>", true, 8, "a@b.c"},
    {"EMAIL:v:<>", "", "a@b.c x", true, 5, "a@b.c"},
    {"EMAIL:v:<>", "", "<<a@b.c>>", true, 10, "a@b.c"},
    {"EMAIL:v:<>", "", "<.a@b.c>", false, 0, NULL},
    /* the byte before the empty local part is a skip char */
    {"EMAIL:v:<>", "", "<@b.c>", true, 7, "@b.c"},
    /* even an empty skip set takes the NUL */
    {"EMAIL:v:", "", "a@b.c", true, 6, "a@b.c"},
    {"EMAIL:v:", "", "a@b.c x", true, 5, "a@b.c"},
};

static const struct row hostname_rows[] = {
    {"HOSTNAME:v", "", "a.b", true, 3, "a.b"},
    /* one label is not a host name */
    {"HOSTNAME:v", "", "a", false, 0, NULL},
    /* a trailing '.' is kept */
    {"HOSTNAME:v", "", "a.b.", true, 4, "a.b."},
    {"HOSTNAME:v", "", "a-b.c-d", true, 7, "a-b.c-d"},
    {"HOSTNAME:v", "", "-a.b", true, 4, "-a.b"},
    /* an empty label ends it: a single label */
    {"HOSTNAME:v", "", "a..b", false, 0, NULL},
    {"HOSTNAME:v", "", "a.b.c.d.e x", true, 9, "a.b.c.d.e"},
    {"HOSTNAME:v", "", "a_b.c", false, 0, NULL},
    {"HOSTNAME:v", "", ".a.b", false, 0, NULL},
    {"HOSTNAME:v", "", "1.2.3.4", true, 7, "1.2.3.4"},
    {"HOSTNAME:v", "", "a.b:80", true, 3, "a.b"},
};

static const struct row anystring_rows[] = {
    {"ANYSTRING:v", "", "abc", true, 3, "abc"},
    {"ANYSTRING:v", "", " x ", true, 3, " x "},
};

static const struct row set_rows[] = {
    {"SET:v:abc", "", "abcd", true, 3, "abc"},
    /* a run to the end takes the NUL too: past the end */
    {"SET:v:abc", "", "abc", true, 4, "abc"},
    {"SET:v:abc", "", "xab", false, 0, NULL},
    {"SET:v:abc", "", "cab ", true, 3, "cab"},
    /* an empty set matches nothing */
    {"SET:v:", "", "abc", false, 0, NULL},
};

static const struct row optionalset_rows[] = {
    {"OPTIONALSET:v:abc", "", "abcd", true, 3, "abc"},
    /* past the end, like SET */
    {"OPTIONALSET:v:abc", "", "abc", true, 4, "abc"},
    /* an empty match */
    {"OPTIONALSET:v:abc", "", "xab", true, 0, ""},
    {"OPTIONALSET:v:", "", "abc", true, 0, ""},
};

static const struct row nlstring_rows[] = {
    {"NLSTRING:v", "", "ab\ncd", true, 2, "ab"},
    /* the CR before the LF is not taken */
    {"NLSTRING:v", "", "ab\r\ncd", true, 2, "ab"},
    /* 3.38 needs a newline */
    {"NLSTRING:v", "", "ab", false, 0, NULL},
    {"NLSTRING:v", "", "\nx", true, 0, ""},
    {"NLSTRING:v", "", "ab\r", false, 0, NULL},
    {"NLSTRING:v", "", "\r\nx", true, 0, ""},
    /* only right before the LF */
    {"NLSTRING:v", "", "a\rb\n", true, 3, "a\rb"},
};

static const struct row pcre_rows[] = {
    {"PCRE:v:[a-z]+", "", "abc1", true, 3, "abc"},
    {"PCRE:v:[a-z]+", "", "1abc", false, 0, NULL},
    {"PCRE:v:[a-z]+", "", "abc", true, 3, "abc"},
    /* an empty regex match is a match */
    {"PCRE:v:x*", "", "yy", true, 0, ""},
    {"PCRE:v:x*", "", "xxy", true, 2, "xx"},
    /* the regex's first match, not the longest */
    {"PCRE:v:a|ab", "", "abc", true, 1, "a"},
    {"PCRE:v:", "", "abc", true, 0, ""},
    {"PCRE:v:(?i)abc", "", "ABCd", true, 3, "ABC"},
};
/* clang-format on */

static struct parser *
compile(const char *spec)
{
    struct buf err = BUF_INIT;
    struct parser *p = parser_compile(spec, strlen(spec), &err);

    ck_assert_msg(p != NULL, "@%s@ does not compile: %s", spec, buf_str(&err));
    buf_free(&err);
    return p;
}

/* A subject of exactly n bytes, so that reading past it is caught. */
static char *
subject_of(const char *prefix, const char *input, size_t *n)
{
    size_t plen = strlen(prefix), ilen = strlen(input);
    char *s = malloc(plen + ilen ? plen + ilen : 1);

    ck_assert_ptr_nonnull(s);
    memcpy(s, prefix, plen);
    memcpy(s + plen, input, ilen);
    *n = plen + ilen;
    return s;
}

static void
check_row(const struct row *r)
{
    size_t plen = strlen(r->prefix), n;
    char *subject = subject_of(r->prefix, r->input, &n);
    struct parser *p = compile(r->spec);
    struct parser_match m;
    bool ok = parser_match(p, subject, n, plen, &m);

    ck_assert_msg(ok == r->ok, "@%s@ on \"%s\": corral %s, pdbtool %s", r->spec, r->input,
                  ok ? "matches" : "does not match", r->ok ? "matches" : "does not match");
    if (ok) {
        size_t clen = strlen(r->cap);
        ck_assert_msg(m.len == r->len, "@%s@ on \"%s\": corral consumes %zu, pdbtool %zu", r->spec,
                      r->input, m.len, r->len);
        ck_assert_msg(m.cap_len == clen && plen + m.cap_off + m.cap_len <= n &&
                          memcmp(subject + plen + m.cap_off, r->cap, clen) == 0,
                      "@%s@ on \"%s\": corral stores \"%.*s\", pdbtool \"%s\"", r->spec, r->input,
                      (int)(plen + m.cap_off <= n ? m.cap_len : 0), subject + plen + m.cap_off,
                      r->cap);
    }
    parser_free(p);
    free(subject);
}

START_TEST(test_string_rows)
{
    check_row(&string_rows[_i]);
}
END_TEST

START_TEST(test_estring_rows)
{
    check_row(&estring_rows[_i]);
}
END_TEST

START_TEST(test_qstring_rows)
{
    check_row(&qstring_rows[_i]);
}
END_TEST

START_TEST(test_number_rows)
{
    check_row(&number_rows[_i]);
}
END_TEST

START_TEST(test_float_rows)
{
    check_row(&float_rows[_i]);
}
END_TEST

START_TEST(test_ipv4_rows)
{
    check_row(&ipv4_rows[_i]);
}
END_TEST

START_TEST(test_ipv6_rows)
{
    check_row(&ipv6_rows[_i]);
}
END_TEST

START_TEST(test_ipvany_rows)
{
    check_row(&ipvany_rows[_i]);
}
END_TEST

START_TEST(test_macaddr_rows)
{
    check_row(&macaddr_rows[_i]);
}
END_TEST

START_TEST(test_lladdr_rows)
{
    check_row(&lladdr_rows[_i]);
}
END_TEST

START_TEST(test_email_rows)
{
    check_row(&email_rows[_i]);
}
END_TEST

START_TEST(test_hostname_rows)
{
    check_row(&hostname_rows[_i]);
}
END_TEST

START_TEST(test_anystring_rows)
{
    check_row(&anystring_rows[_i]);
}
END_TEST

START_TEST(test_set_rows)
{
    check_row(&set_rows[_i]);
}
END_TEST

START_TEST(test_optionalset_rows)
{
    check_row(&optionalset_rows[_i]);
}
END_TEST

START_TEST(test_nlstring_rows)
{
    check_row(&nlstring_rows[_i]);
}
END_TEST

START_TEST(test_pcre_rows)
{
    check_row(&pcre_rows[_i]);
}
END_TEST

/* Load errors, as pdbtool 3.38 reports them when it loads the pattern. */
START_TEST(test_compile_errors)
{
    static const char *const bad[] = {
        "ESTRING:v", "ESTRING",  "SET:v",       "OPTIONALSET:v", "QSTRING:v",
        "PCRE:v",    "PCRE:v:(", "NLSTRING:v:", "NLSTRING:v:x",  "FOO:v",
        "",          "string:v", ":v",
    };
    static const char *const good[] = {
        "QSTRINGX:v:\"", "DOUBLE:v",    "NUMBER:v:junk", "STRING",
        "STRING:",       "ANYSTRING::", "PCRE:v:",       "OPTIONALSET:v:",
        "SET:v:",        "NLSTRING",    "NLSTRING:v",    "QSTRING:v:",
        "LLADDR:v:abc",  "EMAIL:v:",    "IPv4:v:x",      "PCRE:v:a:b",
    };
    size_t i;

    /* checked against pdbtool 3.38 */
    for (i = 0; i < NROWS(bad); i++) {
        struct buf err = BUF_INIT;
        struct parser *p = parser_compile(bad[i], strlen(bad[i]), &err);
        ck_assert_msg(p == NULL, "@%s@ should not compile", bad[i]);
        ck_assert_msg(err.len > 0, "@%s@: no error message", bad[i]);
        buf_free(&err);
    }
    for (i = 0; i < NROWS(good); i++) parser_free(compile(good[i]));
}
END_TEST

START_TEST(test_type_aliases)
{
    struct parser *p = compile("DOUBLE:v"), *q = compile("QSTRINGX:v:'");

    /* checked against pdbtool 3.38: DOUBLE is FLOAT, any QSTRING... is QSTRING */
    ck_assert_int_eq(parser_type(p), PARSER_FLOAT);
    ck_assert_int_eq(parser_type(q), PARSER_QSTRING);
    parser_free(p);
    parser_free(q);
}
END_TEST

/*
 * Which references share a tree node; checked against pdbtool 3.38 through the
 * order of parsers at a node ("a @DOUBLE:v@x", "a @NUMBER:v@", "a @FLOAT:v@":
 * FLOAT wins on "a 5", so it reuses DOUBLE's earlier node; with "@STRING:v@x",
 * "@NUMBER:v@", "@STRING:v:@" NUMBER wins: an empty argument is not none).
 */
START_TEST(test_equal)
{
    static const char *const pairs[][2] = {
        {"FLOAT:v", "DOUBLE:v"},
        {"QSTRING:v:\"", "QSTRINGX:v:\""},
        {"STRING:v:.", "STRING:v:."},
    };
    static const char *const differ[][2] = {
        {"STRING:v", "STRING:v:"},      {"STRING:v", "STRING:w"}, {"STRING:v", "STRING"},
        {"ESTRING:v: ", "ESTRING:v:,"}, {"IPv4:v", "IPvANY:v"},   {"NUMBER:v", "NUMBER:v:x"},
    };
    size_t i;

    for (i = 0; i < NROWS(pairs); i++) {
        struct parser *a = compile(pairs[i][0]), *b = compile(pairs[i][1]);
        ck_assert_msg(parser_equal(a, b), "@%s@ and @%s@ should share a node", pairs[i][0],
                      pairs[i][1]);
        parser_free(a);
        parser_free(b);
    }
    for (i = 0; i < NROWS(differ); i++) {
        struct parser *a = compile(differ[i][0]), *b = compile(differ[i][1]);
        ck_assert_msg(!parser_equal(a, b), "@%s@ and @%s@ should not share a node", differ[i][0],
                      differ[i][1]);
        parser_free(a);
        parser_free(b);
    }
}
END_TEST

/*
 * After a parser consumed the terminating NUL, syslog-ng parses whatever
 * memory follows; ANYSTRING and OPTIONALSET succeed there whatever they read
 * (checked against pdbtool 3.38: "a @SET:s:abc@@OPTIONALSET:o:x@" matches
 * "a abc" with o empty), other parsers depend on that memory.  corral reads
 * nothing there: the two succeed empty, the others fail.
 */
START_TEST(test_past_end)
{
    static const char *const accept[] = {"ANYSTRING:v", "OPTIONALSET:v:x"};
    static const char *const refuse[] = {"STRING:v", "SET:v:abc", "ESTRING:v:", "NUMBER:v",
                                         "FLOAT:v",  "PCRE:v:x*", "EMAIL:v:"};
    size_t i, n;
    char *s = subject_of("", "abc", &n);

    for (i = 0; i < NROWS(accept); i++) {
        struct parser *p = compile(accept[i]);
        struct parser_match m;
        ck_assert(parser_match(p, s, n, n + 1, &m));
        ck_assert_uint_eq(m.len, 0);
        ck_assert_uint_eq(m.cap_len, 0);
        parser_free(p);
    }
    for (i = 0; i < NROWS(refuse); i++) {
        struct parser *p = compile(refuse[i]);
        struct parser_match m;
        ck_assert_msg(!parser_match(p, s, n, n + 1, &m), "@%s@ matched past the end", refuse[i]);
        parser_free(p);
    }
    free(s);
}
END_TEST

/* A regex's text: group repeated n times. */
static char *
repeat(const char *head, const char *group, size_t n)
{
    size_t hl = strlen(head), gl = strlen(group), i;
    char *s = malloc(hl + gl * n + 1);

    ck_assert_ptr_nonnull(s);
    memcpy(s, head, hl);
    for (i = 0; i < n; i++) memcpy(s + hl + i * gl, group, gl);
    s[hl + gl * n] = '\0';
    return s;
}

/*
 * syslog-ng 3.38 leaves a regex match room for 256 groups: a match that sets
 * group 257 fails.  Checked against pdbtool 3.38: "(a)" 257 times fails on 257
 * a's, "(a)?" 300 times matches 256 a's before a "b" but not 257 a's.
 */
START_TEST(test_pcre_group_room)
{
    char *all = repeat("PCRE:v:", "(a)", 257), *opt = repeat("PCRE:v:", "(a)?", 300);
    char *a257 = repeat("", "a", 257), *a256b = repeat("", "a", 257);
    struct parser *p = compile(all), *q = compile(opt);
    struct parser_match m;

    a256b[256] = 'b'; /* 256 a's set groups 1..256 */
    ck_assert(!parser_match(p, a257, 257, 0, &m));
    ck_assert(parser_match(q, a256b, 257, 0, &m));
    ck_assert_uint_eq(m.len, 256);
    ck_assert(!parser_match(q, a257, 257, 0, &m));
    parser_free(p);
    parser_free(q);
    free(all);
    free(opt);
    free(a257);
    free(a256b);
}
END_TEST

/*
 * corral-only: syslog-ng's messages are C strings, corral's are counted, so
 * a NUL is data to corral.  No parser may stop at it as if the message ended
 * there, nor run past the real end.
 */
START_TEST(test_nul_is_data)
{
    static const char subject[] = {'a', '\0', 'b', ',', 'c', '"'};
    struct parser *est = compile("ESTRING:v:,"), *any = compile("ANYSTRING:v");
    struct parser *qs = compile("QSTRING:v:\""), *str = compile("STRING:v");
    struct parser_match m;

    ck_assert(parser_match(est, subject, sizeof(subject), 0, &m));
    ck_assert_uint_eq(m.len, 4);
    ck_assert_uint_eq(m.cap_len, 3);
    ck_assert(parser_match(any, subject, sizeof(subject), 0, &m));
    ck_assert_uint_eq(m.len, sizeof(subject));
    ck_assert(!parser_match(qs, subject, sizeof(subject), 5, &m));
    ck_assert(parser_match(str, subject, sizeof(subject), 0, &m));
    ck_assert_uint_eq(m.len, 1);
    parser_free(est);
    parser_free(any);
    parser_free(qs);
    parser_free(str);
}
END_TEST

/* The parsers print back as they were written, with aliases resolved. */
START_TEST(test_format)
{
    static const char *const specs[][2] = {
        {"STRING", "@STRING@"},           {"STRING:v", "@STRING:v@"},
        {"ESTRING:v::", "@ESTRING:v::@"}, {"DOUBLE:x", "@FLOAT:x@"},
        {"ESTRING::, ", "@ESTRING::, @"},
    };
    size_t i;

    for (i = 0; i < NROWS(specs); i++) {
        struct parser *p = compile(specs[i][0]);
        struct buf b = BUF_INIT;
        parser_format(p, &b);
        ck_assert_str_eq(buf_str(&b), specs[i][1]);
        buf_free(&b);
        parser_free(p);
    }
}
END_TEST

static Suite *
parsers_suite(void)
{
    Suite *s = suite_create("parsers");
    TCase *tc = tcase_create("pdbtool");

    tcase_add_loop_test(tc, test_string_rows, 0, (int)NROWS(string_rows));
    tcase_add_loop_test(tc, test_estring_rows, 0, (int)NROWS(estring_rows));
    tcase_add_loop_test(tc, test_qstring_rows, 0, (int)NROWS(qstring_rows));
    tcase_add_loop_test(tc, test_number_rows, 0, (int)NROWS(number_rows));
    tcase_add_loop_test(tc, test_float_rows, 0, (int)NROWS(float_rows));
    tcase_add_loop_test(tc, test_ipv4_rows, 0, (int)NROWS(ipv4_rows));
    tcase_add_loop_test(tc, test_ipv6_rows, 0, (int)NROWS(ipv6_rows));
    tcase_add_loop_test(tc, test_ipvany_rows, 0, (int)NROWS(ipvany_rows));
    tcase_add_loop_test(tc, test_macaddr_rows, 0, (int)NROWS(macaddr_rows));
    tcase_add_loop_test(tc, test_lladdr_rows, 0, (int)NROWS(lladdr_rows));
    tcase_add_loop_test(tc, test_email_rows, 0, (int)NROWS(email_rows));
    tcase_add_loop_test(tc, test_hostname_rows, 0, (int)NROWS(hostname_rows));
    tcase_add_loop_test(tc, test_anystring_rows, 0, (int)NROWS(anystring_rows));
    tcase_add_loop_test(tc, test_set_rows, 0, (int)NROWS(set_rows));
    tcase_add_loop_test(tc, test_optionalset_rows, 0, (int)NROWS(optionalset_rows));
    tcase_add_loop_test(tc, test_nlstring_rows, 0, (int)NROWS(nlstring_rows));
    tcase_add_loop_test(tc, test_pcre_rows, 0, (int)NROWS(pcre_rows));
    suite_add_tcase(s, tc);

    tc = tcase_create("api");
    tcase_add_test(tc, test_compile_errors);
    tcase_add_test(tc, test_type_aliases);
    tcase_add_test(tc, test_equal);
    tcase_add_test(tc, test_past_end);
    tcase_add_test(tc, test_nul_is_data);
    tcase_add_test(tc, test_format);
    tcase_add_test(tc, test_pcre_group_room);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(parsers_suite());
}
