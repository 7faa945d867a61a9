/*
 * libFuzzer harness for Alertmanager label matchers (engine/labelmatch): the
 * input is matcher text.  What parses is written back with
 * labelmatch_format, which must parse again to the same text, and is
 * matched against a message carrying a few labels.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/labelmatch.h"
#include "engine/nv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buf err = BUF_INIT, text = BUF_INIT, again = BUF_INIT;
    struct labelmatch *lm = labelmatch_new(), *lm2;
    struct msg *m = msg_new();

    msg_set(m, NV_HOST, "web1", 4);
    msg_set(m, NV_RULE_ID, "corral.sshd.auth.failed", 23);
    msg_set(m, NV_MESSAGE, "a, \"b\" c\\", 9);
    if (labelmatch_add(lm, (const char *)data, size, &err) == 0) {
        labelmatch_match(lm, m);
        labelmatch_format(lm, &text);
        lm2 = labelmatch_parse(buf_str(&text), &err);
        if (!lm2) __builtin_trap();
        labelmatch_format(lm2, &again);
        if (again.len != text.len || memcmp(again.p, text.p, text.len) != 0) __builtin_trap();
        if (labelmatch_match(lm, m) != labelmatch_match(lm2, m)) __builtin_trap();
        labelmatch_free(lm2);
    } else if (labelmatch_count(lm) != 0) {
        __builtin_trap(); /* a refused text leaves the set as it was */
    }
    labelmatch_free(lm);
    msg_unref(m);
    buf_free(&err);
    buf_free(&text);
    buf_free(&again);
    return 0;
}
