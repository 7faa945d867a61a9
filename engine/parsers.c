/*
 * parsers: field parsers of the pattern language.
 *
 * Each parser follows syslog-ng 3.38's acceptance rules byte for byte,
 * including its quirks (a lone "-" is a FLOAT, IPv6 reads "addr:443" as one
 * more group, MACADDR accepts a prefix of pairs); tests/unit/test_parsers.c
 * pins them down and tests/compat checks them against pdbtool itself.
 * Unlike syslog-ng, which works on NUL-terminated strings, every parser here
 * is bounded by the subject length, so NUL bytes in a message are just data.
 */
#include "engine/parsers.h"
#include "engine/rematch.h"
#include "engine/xalloc.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdlib.h>
#include <string.h>

struct parser {
    enum parser_type type;
    nv_handle name;
    char *arg; /* third field of the reference, NULL when absent */
    size_t arglen;
    uint8_t set[32];       /* STRING extra chars, SET chars, EMAIL skip chars */
    char qclose;           /* QSTRING closing quote */
    char qopen;            /* QSTRING opening quote */
    int32_t lladdr_parts;  /* LLADDR maximum number of pairs */
    int32_t lladdr_maxlen; /* LLADDR longest accepted text, 3 * parts - 1 */
    pcre2_code *re;        /* PCRE */
};

static const char *const type_names[] = {
    [PARSER_STRING] = "STRING",
    [PARSER_ESTRING] = "ESTRING",
    [PARSER_QSTRING] = "QSTRING",
    [PARSER_NUMBER] = "NUMBER",
    [PARSER_FLOAT] = "FLOAT",
    [PARSER_IPV4] = "IPv4",
    [PARSER_IPV6] = "IPv6",
    [PARSER_IPVANY] = "IPvANY",
    [PARSER_MACADDR] = "MACADDR",
    [PARSER_LLADDR] = "LLADDR",
    [PARSER_EMAIL] = "EMAIL",
    [PARSER_HOSTNAME] = "HOSTNAME",
    [PARSER_ANYSTRING] = "ANYSTRING",
    [PARSER_SET] = "SET",
    [PARSER_OPTIONALSET] = "OPTIONALSET",
    [PARSER_NLSTRING] = "NLSTRING",
    [PARSER_PCRE] = "PCRE",
};

const char *
parser_type_name(enum parser_type t)
{
    return type_names[t];
}

static inline bool
in_set(const uint8_t *set, unsigned char c)
{
    return set[c >> 3] & (1u << (c & 7));
}

static void
set_add(uint8_t *set, const char *chars, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)chars[i];
        if (c) set[c >> 3] |= (uint8_t)(1u << (c & 7));
    }
}

static inline bool
is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static inline bool
is_alnum(unsigned char c)
{
    return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static inline int
xdigit_value(unsigned char c)
{
    if (is_digit(c)) return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/*
 * The int that syslog-ng's 32-bit arithmetic leaves, e.g. for an IPv4 octet
 * of many digits: its octet counters are plain ints whose multiplications
 * wrap (compiled as 32-bit imul), so "4294967297.1.1.1" is taken as "1.1.1.1"
 * and a long enough run of digits can even come out negative and pass the
 * "> 255" checks.  Computed on unsigned values here, so corral itself never
 * overflows.
 */
static inline int32_t
wrap_i32(uint32_t u)
{
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

/* The byte at i, or NUL past the end: mirrors reading a C string's terminator. */
static inline unsigned char
at(const char *s, size_t n, size_t i)
{
    return i < n ? (unsigned char)s[i] : '\0';
}

static bool
type_from_name(const char *s, size_t n, enum parser_type *t)
{
    static const struct {
        const char *name;
        enum parser_type type;
    } names[] = {
        {"STRING", PARSER_STRING},     {"ESTRING", PARSER_ESTRING},
        {"NUMBER", PARSER_NUMBER},     {"FLOAT", PARSER_FLOAT},
        {"DOUBLE", PARSER_FLOAT}, /* deprecated alias */
        {"IPv4", PARSER_IPV4},         {"IPv6", PARSER_IPV6},
        {"IPvANY", PARSER_IPVANY},     {"MACADDR", PARSER_MACADDR},
        {"LLADDR", PARSER_LLADDR},     {"EMAIL", PARSER_EMAIL},
        {"HOSTNAME", PARSER_HOSTNAME}, {"ANYSTRING", PARSER_ANYSTRING},
        {"SET", PARSER_SET},           {"OPTIONALSET", PARSER_OPTIONALSET},
        {"NLSTRING", PARSER_NLSTRING}, {"PCRE", PARSER_PCRE},
    };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i].name) == n && memcmp(names[i].name, s, n) == 0) {
            *t = names[i].type;
            return true;
        }
    /* syslog-ng tests QSTRING with a prefix comparison, so QSTRINGX is a QSTRING too. */
    if (n >= 7 && memcmp(s, "QSTRING", 7) == 0) {
        *t = PARSER_QSTRING;
        return true;
    }
    return false;
}

struct parser *
parser_compile(const char *spec, size_t len, struct buf *err)
{
    const char *c1, *c2 = NULL, *end = spec + len;
    struct parser *p;
    enum parser_type type;

    /* Split on ':' into at most three fields; the third keeps any further ':'. */
    c1 = memchr(spec, ':', len);
    if (c1) c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
    if (!type_from_name(spec, c1 ? (size_t)(c1 - spec) : len, &type)) {
        buf_printf(err, "unknown parser type '%.*s'", (int)(c1 ? c1 - spec : (long)len), spec);
        return NULL;
    }

    p = xcalloc(1, sizeof(*p));
    p->type = type;
    if (c1) {
        const char *name = c1 + 1, *name_end = c2 ? c2 : end;
        if (name_end > name) {
            p->name = nv_intern(name, (size_t)(name_end - name));
            if (!p->name) {
                buf_printf(err, "too many distinct value names");
                goto fail;
            }
        }
    }
    if (c2) {
        p->arglen = (size_t)(end - c2 - 1);
        p->arg = xstrndup(c2 + 1, p->arglen);
    }

    switch (type) {
    case PARSER_STRING:
    case PARSER_EMAIL:
        if (p->arg) set_add(p->set, p->arg, p->arglen);
        break;
    case PARSER_SET:
    case PARSER_OPTIONALSET:
        if (!p->arg) {
            buf_printf(err, "%s needs a set of characters: @%s:name:chars@", type_names[type],
                       type_names[type]);
            goto fail;
        }
        set_add(p->set, p->arg, p->arglen);
        break;
    case PARSER_ESTRING:
        if (!p->arg) {
            buf_printf(err, "ESTRING needs stop characters: @ESTRING:name:stop@");
            goto fail;
        }
        break;
    case PARSER_QSTRING:
        if (!p->arg) {
            buf_printf(err,
                       "QSTRING needs a quote character: @QSTRING:name:\"@ or @QSTRING:name:<>@");
            goto fail;
        }
        p->qopen = p->arglen ? p->arg[0] : '\0';
        p->qclose = p->arglen == 2 ? p->arg[1] : p->qopen;
        break;
    case PARSER_LLADDR:
        /*
         * The leading digits of the argument, read as syslog-ng does: into an
         * int that wraps, so a non-numeric argument or "0" gives 0 pairs (no
         * match) and absurd counts behave as their 32-bit remainders do.
         */
        p->lladdr_parts = 20;
        if (p->arg) {
            size_t i;
            p->lladdr_parts = 0;
            for (i = 0; i < p->arglen && is_digit((unsigned char)p->arg[i]); i++)
                p->lladdr_parts =
                    wrap_i32((uint32_t)p->lladdr_parts * 10u + (uint32_t)(p->arg[i] - '0'));
        }
        p->lladdr_maxlen = wrap_i32((uint32_t)p->lladdr_parts * 3u - 1u);
        break;
    case PARSER_NLSTRING:
        if (c2) {
            buf_printf(err, "NLSTRING takes no third argument");
            goto fail;
        }
        break;
    case PARSER_PCRE: {
        int errcode;
        PCRE2_SIZE erroff;
        uint32_t groups = 0;
        if (!p->arg) {
            buf_printf(err, "PCRE needs a regular expression: @PCRE:name:regex@");
            goto fail;
        }
        p->re =
            pcre2_compile((PCRE2_SPTR)p->arg, p->arglen, PCRE2_ANCHORED, &errcode, &erroff, NULL);
        if (!p->re) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(errcode, msg, sizeof(msg));
            buf_printf(err, "bad regular expression '%s' at offset %zu: %s", p->arg, (size_t)erroff,
                       (char *)msg);
            goto fail;
        }
        pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* optional speed-up; falls back if absent */
        /*
         * syslog-ng gives the match room for the whole match and up to 256
         * groups; when a match sets a group beyond that, it fails ("Error while
         * storing matching substrings").  The same room here (parser_match_data())
         * makes pcre2_match() return 0 in just those cases.
         */
        pcre2_pattern_info(p->re, PCRE2_INFO_CAPTURECOUNT, &groups);
        (void)groups;
        break;
    }
    default: break;
    }
    return p;

fail:
    parser_free(p);
    return NULL;
}

/*
 * Match data for the whole match and 256 groups, per thread: the parallel
 * engine (par.c) matches on several threads at once, and a pattern's own
 * match data would be shared between them.
 */
static _Thread_local pcre2_match_data *thread_md;

void *
parser_match_data(void)
{
    if (!thread_md) thread_md = pcre2_match_data_create(257, NULL);
    if (!thread_md) abort(); /* out of memory: xalloc's policy */
    return thread_md;
}

void
parser_match_data_release(void)
{
    if (thread_md) pcre2_match_data_free(thread_md);
    thread_md = NULL;
}

void
parser_free(struct parser *p)
{
    if (!p) return;
    free(p->arg);
    if (p->re) pcre2_code_free(p->re);
    free(p);
}

size_t
parser_shadow_size(const struct parser *p)
{
    return sizeof(*p) + (p->arg ? p->arglen + 1 : 0);
}

const struct parser *
parser_shadow(const struct parser *p, void *mem)
{
    struct parser *c = mem;

    *c = *p;
    if (p->arg) {
        c->arg = (char *)(c + 1);
        memcpy(c->arg, p->arg, p->arglen + 1);
    }
    return c;
}

bool
parser_equal(const struct parser *a, const struct parser *b)
{
    if (a->type != b->type || a->name != b->name) return false;
    if (!a->arg || !b->arg) return a->arg == b->arg;
    return a->arglen == b->arglen && memcmp(a->arg, b->arg, a->arglen) == 0;
}

enum parser_type
parser_type(const struct parser *p)
{
    return p->type;
}

nv_handle
parser_name(const struct parser *p)
{
    return p->name;
}

void
parser_format(const struct parser *p, struct buf *out)
{
    size_t nlen = 0;
    const char *name = p->name ? nv_name(p->name, &nlen) : "";

    buf_printf(out, "@%s", type_names[p->type]);
    if (p->name || p->arg) buf_printf(out, ":%.*s", (int)nlen, name);
    if (p->arg) buf_printf(out, ":%.*s", (int)p->arglen, p->arg);
    buf_putc(out, '@');
}

/* ---- the parsers ---- */

static bool
parse_string(const struct parser *p, const char *s, size_t n, size_t *len)
{
    size_t i = 0;

    while (i < n && (is_alnum((unsigned char)s[i]) || in_set(p->set, (unsigned char)s[i]))) i++;
    *len = i;
    return i > 0;
}

/*
 * Set when a parser ran into the end of the message and, like syslog-ng's,
 * consumed the terminating NUL as well: it then ends one byte past the end.
 */
static bool
past_end(size_t n, size_t cap_off, size_t cap_len, struct parser_match *m)
{
    m->len = n + 1;
    m->cap_off = cap_off;
    m->cap_len = cap_len;
    return true;
}

static bool
parse_set(const struct parser *p, const char *s, size_t n, struct parser_match *m, bool optional)
{
    size_t i = 0;

    while (i < n && in_set(p->set, (unsigned char)s[i])) i++;
    /*
     * syslog-ng tests each byte with strchr(set, c), which also finds the
     * string's terminating NUL, so a run that reaches the end of the message
     * goes on through the terminator: such a match is never complete, only a
     * prefix match can use it.  (It then keeps reading whatever follows the
     * NUL in memory while those bytes are NULs or in the set; which it is
     * cannot matter to the result, and corral reads nothing there.)
     */
    if (i == n) return past_end(n, 0, n, m);
    m->len = m->cap_len = i;
    return optional || i > 0;
}

static bool
parse_number(const char *s, size_t n, size_t *len)
{
    size_t i = 0, min = 1;

    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        i = 2;
        min = 3;
        while (i < n && xdigit_value((unsigned char)s[i]) >= 0) i++;
    } else {
        if (s[0] == '-') i++, min++;
        while (i < n && is_digit((unsigned char)s[i])) i++;
    }
    *len = i;
    return i >= min;
}

static bool
parse_float(const char *s, size_t n, size_t *len)
{
    size_t i = 0;
    bool dot = false;

    if (s[0] == '-') i++;
    while (i < n && (is_digit((unsigned char)s[i]) || (!dot && s[i] == '.' && (dot = true)))) i++;
    if (i > 0 && i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && s[i] == '-') i++;
        while (i < n && is_digit((unsigned char)s[i])) i++;
    }
    *len = i;
    return i > 0;
}

static bool
parse_ipv4(const char *s, size_t n, size_t *len)
{
    size_t i = 0;
    int dots = 0;
    int32_t octet = -1;

    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.') {
            if (octet > 255 || octet == -1) return false;
            if (dots == 3) break;
            dots++;
            octet = -1;
        } else if (is_digit(c)) {
            octet = octet == -1 ? 0 : wrap_i32((uint32_t)octet * 10u);
            octet = wrap_i32((uint32_t)octet + (uint32_t)(c - '0'));
        } else
            break;
    }
    *len = i;
    return dots == 3 && octet <= 255 && octet != -1;
}

static bool
parse_ipv6(const char *s, size_t n, size_t *len)
{
    int colons = 0, dots = 0, digit = 16;
    int32_t octet = 0;
    bool shortened = false;
    size_t i = 0;

    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int x;
        if (c == ':') {
            if (octet > 0xffff || (octet == -1 && shortened)) return false;
            if (colons == 7 || dots == 3) break;
            if (digit == 10) return false;
            if (octet == -1) shortened = true;
            colons++;
            octet = -1;
        } else if ((x = xdigit_value(c)) >= 0) {
            /* hex digits count in the dotted tail too, as syslog-ng's isxdigit() test lets them */
            octet = octet == -1 ? 0 : wrap_i32((uint32_t)octet * (uint32_t)digit);
            octet = wrap_i32((uint32_t)octet + (uint32_t)x);
        } else if (c == '.') {
            if (digit == 10 && octet > 255) return false;
            if ((digit == 16 && octet > 597) || octet == -1 || colons == 7 || dots == 3) break;
            dots++;
            octet = -1;
            digit = 10;
        } else
            break;
    }
    /* A trailing '.' or single ':' belongs to the text after the address. */
    if (i > 0 && s[i - 1] == '.') {
        i--;
        dots--;
    } else if (i > 1 && s[i - 1] == ':' && s[i - 2] != ':') {
        i--;
        colons--;
    }
    *len = i;
    if (colons < 2 || colons > 7 || (digit == 10 && octet > 255) ||
        (digit == 16 && octet > 0xffff) || !(dots == 0 || dots == 3) ||
        (!shortened && colons < 7 && dots == 0))
        return false;
    return true;
}

static bool
parse_lladdr(const char *s, size_t n, size_t *len, int32_t maxlen, int32_t parts)
{
    size_t i = 0;
    int32_t k;

    /*
     * No pairs wanted (a count of 0, or one that wrapped negative): syslog-ng's
     * loop does not run, and the empty text passes its length check exactly
     * when 3 * parts - 1 is not negative - never for 0.
     */
    if (parts <= 0) {
        *len = 0;
        return maxlen >= 0;
    }
    for (k = 1; k <= parts; k++) {
        if (xdigit_value(at(s, n, i)) < 0 || xdigit_value(at(s, n, i + 1)) < 0) {
            if (k > 1) {
                i--; /* give back the ':' after the last complete pair */
                break;
            }
            return false;
        }
        if (k == parts) {
            i += 2;
        } else if (at(s, n, i + 2) != ':') {
            i += 2;
            break;
        } else
            i += 3;
    }
    *len = i;
    return maxlen >= 0 && i <= (size_t)maxlen;
}

/* Counts dot-separated labels of [A-Za-z0-9-], eating a trailing dot. */
static size_t
scan_hostname(const char *s, size_t n, size_t i, int *labels)
{
    *labels = 0;
    while (i < n && (is_alnum((unsigned char)s[i]) || s[i] == '-')) {
        i++;
        (*labels)++;
        while (i < n && (is_alnum((unsigned char)s[i]) || s[i] == '-')) i++;
        if (i < n && s[i] == '.') i++;
    }
    return i;
}

static bool
is_email_local(unsigned char c)
{
    return is_alnum(c) || (c && strchr("!#$%&'*+-/=?^_`{|}~.", c));
}

static bool
parse_email(const struct parser *p, const char *subject, size_t n, size_t pos,
            struct parser_match *m)
{
    const char *s = subject + pos;
    size_t rest = n - pos, i = 0, start, end;
    int labels;

    /*
     * Where syslog-ng's loops would run through the terminating NUL and on into
     * memory past the message (leading skip characters up to the end, a local
     * part up to the end: both test bytes with strchr(), which finds the NUL),
     * corral stops at the end and does not match.
     */
    if (p->arg)
        while (i < rest && in_set(p->set, (unsigned char)s[i])) i++;
    start = i;
    if (i < rest && s[i] == '.') return false;
    while (i < rest && is_email_local((unsigned char)s[i])) i++;
    /*
     * syslog-ng checks the byte before the '@' even when the local part is
     * empty, i.e. the byte before the parser's start.  At the very start of the
     * message that byte lies outside it (pdbtool's answer then depends on what
     * was in memory before); corral takes it as not a '.'.
     */
    if (pos + i > 0 && subject[pos + i - 1] == '.') return false;
    if (i < rest && s[i] == '@')
        i++;
    else
        return false;
    i = scan_hostname(s, rest, i, &labels);
    if (labels < 2) return false;
    end = i;
    if (p->arg) {
        while (i < rest && in_set(p->set, (unsigned char)s[i])) i++;
        /*
         * The trailing skip characters are tested with strchr() like SET's, so
         * when they (or the host name) reach the end of the message the NUL is
         * consumed too: a prefix match only.  This holds even for "@EMAIL:n:@",
         * whose empty set still "contains" the NUL.
         */
        if (i == rest) return past_end(rest, start, end - start, m);
    }
    m->len = i;
    m->cap_off = start;
    m->cap_len = end - start;
    return i > 0;
}

bool
parser_match(const struct parser *p, const char *subject, size_t n, size_t pos,
             struct parser_match *m)
{
    const char *s, *e;
    size_t rest, len = 0;
    bool ok;

    m->cap_off = 0;
    if (pos > n) {
        /*
         * A parser before this one consumed the message's terminating NUL (see
         * past_end()).  syslog-ng goes on parsing whatever memory follows;
         * ANYSTRING and OPTIONALSET succeed whatever they find there, the
         * others depend on it.  corral reads nothing: those two succeed empty,
         * the others fail.
         */
        m->len = m->cap_len = 0;
        return p->type == PARSER_ANYSTRING || p->type == PARSER_OPTIONALSET;
    }
    s = subject + pos;
    rest = n - pos;
    switch (p->type) {
    case PARSER_STRING: ok = parse_string(p, s, rest, &len); break;
    case PARSER_SET: return parse_set(p, s, rest, m, false);
    case PARSER_OPTIONALSET: return parse_set(p, s, rest, m, true);
    case PARSER_NUMBER: ok = parse_number(s, rest, &len); break;
    case PARSER_FLOAT: ok = parse_float(s, rest, &len); break;
    case PARSER_IPV4: ok = parse_ipv4(s, rest, &len); break;
    case PARSER_IPV6: ok = parse_ipv6(s, rest, &len); break;
    case PARSER_IPVANY: ok = parse_ipv4(s, rest, &len) || parse_ipv6(s, rest, &len); break;
    case PARSER_MACADDR: ok = parse_lladdr(s, rest, &len, 17, 6); break;
    case PARSER_LLADDR: ok = parse_lladdr(s, rest, &len, p->lladdr_maxlen, p->lladdr_parts); break;
    case PARSER_HOSTNAME: {
        int labels;
        len = scan_hostname(s, rest, 0, &labels);
        ok = labels >= 2;
        break;
    }
    case PARSER_ANYSTRING:
        len = rest;
        ok = true;
        break;
    case PARSER_EMAIL: return parse_email(p, subject, n, pos, m);
    case PARSER_ESTRING:
        if (p->arglen == 0) {
            /*
             * "@ESTRING:name:@" (used by the public sudo and su rules): syslog-ng
             * looks for the string's terminating NUL, so it takes the whole rest and
             * consumes one byte past the end.  The radix search treats a position
             * past the end as "input exhausted, only a prefix match is possible".
             */
            return past_end(rest, 0, rest, m);
        }
        if (p->arglen == 1)
            e = memchr(s, p->arg[0], rest);
        else
            e = memmem(s, rest, p->arg, p->arglen);
        if (!e) return false;
        m->len = (size_t)(e - s) + p->arglen;
        m->cap_len = (size_t)(e - s);
        return true;
    case PARSER_QSTRING:
        /* "@QSTRING:n:@" wants a NUL as its opening quote: never there in syslog-ng */
        if (rest < 2 || p->arglen == 0 || s[0] != p->qopen) return false;
        e = memchr(s + 1, p->qclose, rest - 1);
        if (!e) return false;
        m->len = (size_t)(e - s) + 1;
        m->cap_off = 1;
        m->cap_len = m->len - 2;
        return true;
    case PARSER_NLSTRING:
        e = memchr(s, '\n', rest);
        if (!e) return false;
        if (e > s && e[-1] == '\r') e--;
        m->len = m->cap_len = (size_t)(e - s);
        return true;
    case PARSER_PCRE: {
        pcre2_match_data *md = parser_match_data();
        int rc = rematch(p->re, s, rest, md); /* a limit hit is no match, counted */
        PCRE2_SIZE *ov;
        if (rc <= 0) return false; /* 0: more groups set than there is room for, see above */
        ov = pcre2_get_ovector_pointer(md);
        m->len = m->cap_len = ov[1] - ov[0];
        return true;
    }
    default: return false;
    }
    m->len = m->cap_len = len;
    return ok;
}
