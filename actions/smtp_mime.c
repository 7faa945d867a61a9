/*
 * smtp_mime: the smtp executor's message composition (RFC 5322, MIME,
 * RFC 2047).
 *
 * Everything that reaches a header may come from a log line, so it is made
 * harmless before it is written: a value can never start a header line of
 * its own (every CR, LF, NEL, U+2028 and U+2029 becomes a space), never add a
 * recipient (recipients come from the configuration only), and never end the
 * DATA phase (no line of the message starts with '.', whatever curl's dot
 * stuffing does; every line end is CRLF, so no bare LF can be taken for one
 * by a lenient server).  The message is 7-bit on the wire: non-ASCII text
 * goes as encoded-words in headers and quoted-printable in the body, which
 * needs no 8BITMIME from the server.
 */
#include "actions/smtp_int.h"
#include "engine/base64.h"
#include "engine/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Longest line we aim for when folding headers (RFC 5322 2.1.1 "SHOULD"). */
#define FOLD_AT 78
/* Bytes of text per encoded-word: 56 base64 characters, a 68-character word. */
#define EW_BYTES 42
/* Longest quoted-printable line, soft break included (RFC 2045 6.7). */
#define QP_LINE 76
/* Longest line in a 7bit body (RFC 5322 2.1.1 "MUST"), CRLF not counted. */
#define MAX_LINE 998

#define REPLACEMENT 0xfffdu

/* Decodes one character; a malformed or truncated sequence gives U+FFFD for one byte. */
static size_t
utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
    uint32_t c = s[0];
    size_t n, i;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        c &= 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        c &= 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        c &= 0x07;
    } else {
        goto bad;
    }
    if (len < n) goto bad;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) goto bad;
        c = (c << 6) | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and values past U+10FFFF are not characters */
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        goto bad;
    *cp = c;
    return n;
bad:
    *cp = REPLACEMENT;
    return 1;
}

static void
utf8_put(struct buf *out, uint32_t cp)
{
    char b[4];

    if (cp < 0x80) {
        buf_putc(out, (char)cp);
        return;
    }
    if (cp < 0x800) {
        b[0] = (char)(0xc0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3f));
        buf_append(out, b, 2);
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        buf_append(out, b, 3);
    } else {
        b[0] = (char)(0xf0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        buf_append(out, b, 4);
    }
}

/* ---- addresses ---- */

static bool
is_atext(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

static bool
is_ldh(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

bool
smtp_addr_valid(const char *s, size_t len)
{
    const char *at = memrchr(s, '@', len);
    size_t local, i, label = 0;

    if (!at || len > 254) return false;
    local = (size_t)(at - s);
    if (local == 0 || local > 64 || s[0] == '.' || s[local - 1] == '.') return false;
    for (i = 0; i < local; i++) {
        if (s[i] == '.') {
            if (s[i + 1] == '.') return false;
        } else if (!is_atext((unsigned char)s[i])) {
            return false;
        }
    }
    /* the host: LDH labels of 1..63, no '-' at either end of one */
    if (local + 1 == len) return false;
    for (i = local + 1; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (label == 0 || label > 63 || s[i - 1] == '-' || s[i - label] == '-') return false;
            label = 0;
        } else if (is_ldh((unsigned char)s[i])) {
            label++;
        } else {
            return false;
        }
    }
    return true;
}

static void
trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t')) (*len)--;
}

bool
smtp_parse_mailbox(const char *s, char **name, char **addr)
{
    size_t len = strlen(s), i;
    const char *lt, *a = s, *n;
    size_t alen = len, nlen;

    *name = *addr = NULL;
    trim(&a, &alen);
    if (alen && a[alen - 1] == '>') {
        lt = memrchr(a, '<', alen);
        if (!lt) return false;
        n = a;
        nlen = (size_t)(lt - a);
        a = lt + 1;
        alen = alen - nlen - 2;
        trim(&n, &nlen);
        if (nlen >= 2 && n[0] == '"' && n[nlen - 1] == '"') {
            n++;
            nlen -= 2;
        }
        for (i = 0; i < nlen; i++)
            if ((unsigned char)n[i] < 0x20 || n[i] == 0x7f || n[i] == '"' || n[i] == '<' ||
                n[i] == '>')
                return false;
        if (nlen) *name = xstrndup(n, nlen);
    }
    if (!smtp_addr_valid(a, alen)) {
        free(*name);
        *name = NULL;
        return false;
    }
    *addr = xstrndup(a, alen);
    return true;
}

/* ---- headers ---- */

/* Characters that must not reach a header: they end lines or reorder what is shown. */
static bool
header_unsafe(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

void
smtp_header_clean(const char *s, size_t len, size_t max_chars, struct buf *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t start = out->len, i = 0, chars = 0, cut = 0;

    while (i < len) {
        uint32_t cp;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (header_unsafe(cp)) cp = ' ';
        i += n;
        if (cp == ' ' && out->len == start) continue; /* leading space */
        if (max_chars && chars == max_chars - 3) cut = out->len;
        chars++;
        utf8_put(out, cp);
    }
    if (max_chars && chars > max_chars) {
        buf_truncate(out, cut);
        while (out->len > start && out->p[out->len - 1] == ' ') buf_truncate(out, out->len - 1);
        buf_puts(out, "...");
    }
    while (out->len > start && out->p[out->len - 1] == ' ') buf_truncate(out, out->len - 1);
}

/*
 * Cuts clean header text out->p[start..] to at most max_chars characters: at
 * the last space that leaves room for the ellipsis, or between two
 * characters when the last such space lies in the first half (one long
 * word); the cut text ends in "…".
 */
static void
cut_words(struct buf *out, size_t start, size_t max_chars)
{
    const unsigned char *p = (const unsigned char *)out->p;
    size_t i = start, chars = 0, room = 0, space = 0, space_chars = 0;

    if (max_chars < 2) return;
    while (i < out->len) {
        uint32_t cp;
        size_t n = utf8_decode(p + i, out->len - i, &cp);
        if (chars == max_chars - 1) room = i;
        if (cp == ' ' && chars < max_chars - 1) {
            space = i;
            space_chars = chars;
        }
        chars++;
        i += n;
    }
    if (chars <= max_chars) return;
    buf_truncate(out, space > start && space_chars >= max_chars / 2 ? space : room);
    while (out->len > start && out->p[out->len - 1] == ' ') buf_truncate(out, out->len - 1);
    buf_puts(out, "\xe2\x80\xa6");
}

void
smtp_subject(const struct smtp_subject *s, struct buf *out)
{
    struct buf raw = BUF_INIT;
    size_t i;

    if (s->resolved) buf_puts(out, "[RESOLVED] ");
    if (s->severity && !s->resolved) {
        const char *sev = s->severity[0] ? s->severity : "warning";
        buf_putc(&raw, '[');
        for (i = 0; sev[i] && i < 32; i++)
            buf_putc(&raw, sev[i] >= 'a' && sev[i] <= 'z' ? (char)(sev[i] - 'a' + 'A') : sev[i]);
        buf_puts(&raw, "] ");
    }
    if (s->severity && s->host_len) {
        buf_append(&raw, s->host, s->host_len);
        if (s->text_len) buf_puts(&raw, ": ");
    }
    if (s->text_len) buf_append(&raw, s->text, s->text_len);
    i = out->len;
    smtp_header_clean(raw.p ? raw.p : "", raw.len, 0, out);
    cut_words(out, i, SMTP_SUBJECT_MAX);
    if (out->len == i) buf_puts(out, s->severity ? "alert" : "[corral] alert");
    if (s->more) buf_printf(out, " (+%zu more)", s->more);
    buf_free(&raw);
}

static bool
plain_ascii(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e) return false;
        /* looks like an encoded-word: a reader would decode it */
        if (c == '=' && i + 1 < len && s[i + 1] == '?') return false;
    }
    return true;
}

/*
 * Writes text as encoded-words separated by folding white space, which a
 * reader drops between encoded-words: the text comes back exactly.  A word
 * holds whole characters only (RFC 2047 5).
 */
static void
encoded_words(struct buf *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        size_t j = i;
        while (j < len) {
            uint32_t cp;
            size_t n = utf8_decode(p + j, len - j, &cp);
            if (j + n - i > EW_BYTES) break;
            j += n;
        }
        if (i) buf_puts(out, "\r\n ");
        buf_puts(out, "=?UTF-8?B?");
        base64_encode(out, p + i, j - i);
        buf_puts(out, "?=");
        i = j;
    }
}

void
smtp_header_text(struct buf *out, const char *field, const char *value, size_t len)
{
    size_t col, i = 0;

    buf_printf(out, "%s: ", field);
    col = strlen(field) + 2;
    if (!plain_ascii(value, len)) {
        encoded_words(out, value, len);
        buf_puts(out, "\r\n");
        return;
    }
    /* fold before a space when the line grows long; unfolding gives the text back */
    while (i < len) {
        size_t j = i + 1;
        while (j < len && value[j] != ' ') j++;
        if (value[i] == ' ' && col + (j - i) > FOLD_AT && col > 1) {
            buf_puts(out, "\r\n");
            col = 0;
        }
        buf_append(out, value + i, j - i);
        col += j - i;
        i = j;
    }
    buf_puts(out, "\r\n");
}

void
smtp_header_mailbox(struct buf *out, const char *field, const char *name, const char *addr)
{
    struct buf clean = BUF_INIT;
    size_t i, line = out->len;

    buf_printf(out, "%s: ", field);
    if (name) smtp_header_clean(name, strlen(name), 78, &clean);
    if (clean.len && plain_ascii(clean.p, clean.len)) {
        buf_putc(out, '"');
        for (i = 0; i < clean.len; i++) {
            if (clean.p[i] == '"' || clean.p[i] == '\\') buf_putc(out, '\\');
            buf_putc(out, clean.p[i]);
        }
        buf_putc(out, '"');
    } else if (clean.len) {
        encoded_words(out, clean.p, clean.len);
    }
    if (clean.len) {
        /* the address goes on the name's last line if it fits there */
        const char *nl = memrchr(out->p + line, '\n', out->len - line);
        if (nl) line = (size_t)(nl - out->p) + 1;
        buf_puts(out, out->len - line + strlen(addr) + 3 > FOLD_AT ? "\r\n " : " ");
    }
    buf_printf(out, clean.len ? "<%s>\r\n" : "%s\r\n", addr);
    buf_free(&clean);
}

void
smtp_header_addrs(struct buf *out, const char *field, char *const *addrs, size_t n)
{
    size_t i, col;

    buf_printf(out, "%s:", field);
    col = strlen(field) + 1;
    for (i = 0; i < n; i++) {
        size_t len = strlen(addrs[i]);
        if (i && col + len + 2 > FOLD_AT) {
            buf_puts(out, "\r\n");
            col = 0;
        }
        buf_putc(out, ' ');
        buf_puts(out, addrs[i]);
        col += len + 1;
        if (i + 1 < n) {
            buf_putc(out, ',');
            col++;
        }
    }
    buf_puts(out, "\r\n");
}

/* ---- body ---- */

void
smtp_body_clean(const char *s, size_t len, struct buf *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    buf_reserve(out, len);
    while (i < len) {
        uint32_t cp;
        size_t n;
        if (p[i] == '\r') {
            if (i + 1 < len && p[i + 1] == '\n') i++; /* CRLF: the LF ends the line */
            buf_putc(out, '\n');
            i++;
            continue;
        }
        n = utf8_decode(p + i, len - i, &cp);
        if ((cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7f && cp <= 0x9f)) cp = REPLACEMENT;
        if (cp == REPLACEMENT || n == 1)
            utf8_put(out, cp);
        else
            buf_append(out, s + i, n);
        i += n;
    }
}

static bool
fits_7bit(const char *s, size_t len)
{
    size_t i, col = 0;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') {
            col = 0;
            continue;
        }
        if ((c < 0x20 && c != '\t') || c > 0x7e) return false;
        if (col == 0 && c == '.') return false;
        if (++col > MAX_LINE) return false;
    }
    return true;
}

static void
qp_line(struct buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i, col = 0;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char tok[3];
        size_t n = 1;
        bool literal = (c >= 33 && c <= 126 && c != '=') ||
                       ((c == ' ' || c == '\t') && i + 1 < len); /* trailing blanks are encoded */
        /* a line that starts with '.' could end DATA, one with "From " gets mangled by mboxes */
        if (col == 0 && (c == '.' || (c == 'F' && len - i >= 5 && memcmp(s + i, "From ", 5) == 0)))
            literal = false;
        if (literal) {
            tok[0] = (char)c;
        } else {
            tok[0] = '=';
            tok[1] = hex[c >> 4];
            tok[2] = hex[c & 15];
            n = 3;
        }
        if (col + n > QP_LINE - 1) {
            buf_puts(out, "=\r\n");
            col = 0;
            if (c == '.') { /* now at the start of a line after all */
                tok[0] = '=';
                tok[1] = '2';
                tok[2] = 'E';
                n = 3;
            }
        }
        buf_append(out, tok, n);
        col += n;
    }
}

const char *
smtp_body_encode(const char *text, size_t len, struct buf *out)
{
    bool qp = !fits_7bit(text, len);
    size_t i = 0;

    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (qp)
            qp_line(out, text + i, end - i);
        else
            buf_append(out, text + i, end - i);
        buf_puts(out, "\r\n");
        i = end + 1;
    }
    return qp ? "quoted-printable" : "7bit";
}

/* ---- Date and Message-ID ---- */

void
smtp_format_date(time_t t, struct buf *out)
{
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    long off;

    localtime_r(&t, &tm);
    off = tm.tm_gmtoff / 60;
    buf_printf(out, "%s, %02d %s %04d %02d:%02d:%02d %c%02ld%02ld", days[tm.tm_wday], tm.tm_mday,
               months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec,
               off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
}

void
smtp_message_id(const char *domain, struct buf *out)
{
    static uint64_t counter;
    unsigned char r[12];
    size_t i;

    /* random, so that ids stay unique across restarts and hosts sharing a domain */
    if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)&counter;
        for (i = 0; i < sizeof(r); i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            r[i] = (unsigned char)(x >> 56);
        }
    }
    buf_printf(out, "<%lld.", (long long)time(NULL));
    for (i = 0; i < sizeof(r); i++) buf_printf(out, "%02x", r[i]);
    buf_printf(out, ".%llu.corral@%s>", (unsigned long long)++counter, domain);
}
