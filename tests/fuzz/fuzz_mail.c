/*
 * libFuzzer harness for the mail encoder (actions/smtp_mime.c): whatever a
 * generated message's fields hold, the mail corrald writes must keep its
 * shape.  The input is "header text\0mailbox\0body".  Checked on every run:
 *   - a header is one logical line: CRLF only at its end or before a folding
 *     space, no bare CR or LF, only ASCII, no line over 998 bytes, so a value
 *     can never add a header or a recipient;
 *   - a mailbox that parses has a valid address and makes one such header;
 *   - the body has CRLF line ends only, no line over 998 bytes and none that
 *     starts with '.' (which SMTP would read as the end of the data).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "actions/smtp_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_lines(const struct buf *b, bool header)
{
    size_t i, start = 0;

    for (i = 0; i < b->len; i++) {
        unsigned char c = (unsigned char)b->p[i];
        if (c == '\r') {
            if (i + 1 >= b->len || b->p[i + 1] != '\n') __builtin_trap(); /* bare CR */
            if (i - start > 998) __builtin_trap();
            i++;
            start = i + 1;
            /* a header continues only on a line that starts with a space */
            if (header && start < b->len && b->p[start] != ' ' && b->p[start] != '\t')
                __builtin_trap();
            if (!header && start < b->len && b->p[start] == '.') __builtin_trap();
        } else if (c == '\n') {
            __builtin_trap(); /* bare LF */
        } else if (header && (c >= 0x80 || c == 0)) {
            __builtin_trap();
        }
    }
    if (b->len && start != b->len) __builtin_trap(); /* ends with CRLF */
    if (!header && b->len && b->p[0] == '.') __builtin_trap();
}

static const char *
next_part(const char **p, const char *end, size_t *len)
{
    const char *s = *p, *z = memchr(s, '\0', (size_t)(end - s));

    *len = z ? (size_t)(z - s) : (size_t)(end - s);
    *p = z ? z + 1 : end;
    return s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size, *text, *mbox, *body;
    size_t tlen, mlen, blen;
    struct buf clean = BUF_INIT, out = BUF_INIT;
    char *cstr, *name = NULL, *addr = NULL;

    text = next_part(&p, end, &tlen);
    mbox = next_part(&p, end, &mlen);
    body = p;
    blen = (size_t)(end - p);

    smtp_header_clean(text, tlen, SMTP_SUBJECT_MAX, &clean);
    smtp_header_text(&out, "Subject", clean.p ? clean.p : "", clean.len);
    check_lines(&out, true);

    buf_reset(&out);
    cstr = malloc(mlen + 1);
    memcpy(cstr, mbox, mlen);
    cstr[mlen] = '\0';
    if (smtp_parse_mailbox(cstr, &name, &addr)) {
        if (!smtp_addr_valid(addr, strlen(addr))) __builtin_trap();
        smtp_header_mailbox(&out, "To", name, addr);
        check_lines(&out, true);
    }
    free(name);
    free(addr);
    free(cstr);

    buf_reset(&clean);
    buf_reset(&out);
    smtp_body_clean(body, blen, &clean);
    smtp_body_encode(clean.p ? clean.p : "", clean.len, &out);
    check_lines(&out, false);

    buf_free(&clean);
    buf_free(&out);
    return 0;
}
