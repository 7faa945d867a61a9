/*
 * libFuzzer harness for msg_decode, which reads messages back from state
 * files and executor spools.  Those carry a checksum, but a file written by
 * another version, or damaged in a way the checksum misses, must still be
 * refused cleanly.  What decodes must encode and decode again to the same
 * bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct msg *m = msg_new(), *again = msg_new();
    struct buf a = BUF_INIT, b = BUF_INIT;
    size_t used = msg_decode(m, (const char *)data, size);

    if (used > size) __builtin_trap();
    if (used) {
        msg_encode(m, &a);
        if (msg_decode(again, a.p, a.len) != a.len) __builtin_trap();
        msg_encode(again, &b);
        if (a.len != b.len || memcmp(a.p, b.p, a.len) != 0) __builtin_trap();
    }
    buf_free(&a);
    buf_free(&b);
    msg_unref(m);
    msg_unref(again);
    return 0;
}
