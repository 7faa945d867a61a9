/*
 * libFuzzer harness for the required literal of a regular expression
 * (engine/relit), against PCRE2 itself: the input is a pattern and a
 * subject separated by a NUL byte.  When the pattern compiles (as written,
 * and caseless) and matches the subject, the subject must hold the literal
 * relit_required() gave, without regard to ASCII case: a literal that a
 * match can lack would hide that match from a Sigma rule.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/relit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned char
lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

static int
holds(const uint8_t *s, size_t n, const char *lit, size_t len)
{
    size_t i, j;

    for (i = 0; i + len <= n; i++) {
        for (j = 0; j < len && lower(s[i + j]) == (unsigned char)lit[j]; j++) continue;
        if (j == len) return 1;
    }
    return !len;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t plen = nul ? (size_t)(nul - data) : size, slen = nul ? size - plen - 1 : 0, len;
    const uint8_t *subject = nul ? nul + 1 : data + size;
    char lit[64];
    unsigned k;

    if (plen > 512) return 0;
    len = relit_required((const char *)data, plen, lit, sizeof(lit));
    if (len > sizeof(lit)) __builtin_trap();
    for (k = 0; k < 2; k++) {
        int err;
        PCRE2_SIZE off;
        pcre2_code *re = pcre2_compile(data, plen, k ? PCRE2_CASELESS : 0, &err, &off, NULL);
        pcre2_match_data *md;
        pcre2_match_context *mc;
        int rc;
        if (!re) continue;
        md = pcre2_match_data_create_from_pattern(re, NULL);
        mc = pcre2_match_context_create(NULL);
        pcre2_set_match_limit(mc, 100000);
        pcre2_set_depth_limit(mc, 1000);
        rc = pcre2_match(re, subject, slen, 0, 0, md, mc);
        if (rc >= 0 && !holds(subject, slen, lit, len)) __builtin_trap();
        pcre2_match_context_free(mc);
        pcre2_match_data_free(md);
        pcre2_code_free(re);
    }
    return 0;
}
