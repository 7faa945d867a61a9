/*
 * libFuzzer harness for Sigma's condition parser (engine/sigma_cond): the
 * input is a condition over five identifiers.  What parses is evaluated
 * for a few truth assignments; what does not must say why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sigma_cond.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
bit(void *arg, size_t i)
{
    return (*(unsigned *)arg >> i) & 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"selection", "sel_a", "sel_b", "filter", "_hidden"};
    char *src = malloc(size + 1), err[256];
    struct sigma_cond *c;
    unsigned v;

    memcpy(src, data, size);
    src[size] = '\0';
    c = sigma_cond_parse(src, names, 5, err, sizeof(err));
    if (c) {
        for (v = 0; v < 32; v += 7) sigma_cond_eval(c, bit, &v);
        sigma_cond_free(c);
    } else if (!err[0]) {
        __builtin_trap();
    }
    free(src);
    return 0;
}
