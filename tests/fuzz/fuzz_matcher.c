/*
 * libFuzzer harness for the matcher: the input is a set of patterns and a
 * message, separated by NUL bytes ("pattern\0pattern\0...\0\0message").
 * Every pattern is inserted into a radix tree, then the message is searched,
 * in both the complete-match and the find-all modes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/radix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int values[64];

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    struct radix *r = radix_new();
    struct radix_caps caps = {0};
    struct buf err = BUF_INIT;
    int n = 0;
    size_t i;

    while (p < end && n < 64) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        size_t len = z ? (size_t)(z - p) : (size_t)(end - p);
        if (len == 0) {
            p = z ? z + 1 : end;
            break;
        }
        buf_reset(&err);
        radix_insert(r, p, len, &values[n], NULL, &err);
        n++;
        p = z ? z + 1 : end;
    }
    if (radix_find(r, p, (size_t)(end - p), &caps)) {
        for (i = 0; i < caps.n; i++)
            if (caps.v[i].off + caps.v[i].len > (size_t)(end - p) + 1) __builtin_trap();
    }
    radix_find_all(r, p, (size_t)(end - p), NULL, NULL);
    radix_caps_free(&caps);
    buf_free(&err);
    radix_free(r, NULL);
    return 0;
}
