/*
 * libFuzzer harness for the dead-letter file reader (deadletter_parse in
 * actions/deadletter.c), which `corral queue` runs on a file anyone with
 * write access to the spool directory may have edited: whatever bytes the
 * file holds, reading it must not crash or read out of bounds.  Checked on
 * every run:
 *   - entries lie inside the input, in order, without overlapping, each a
 *     whole line (ending at a newline or at the end);
 *   - entries and unreadable lines never outnumber the lines;
 *   - every alert read back, written again as a dead letter, reads back as
 *     the same alert (the writer and reader agree).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "actions/deadletter.h"
#include "engine/buf.h"
#include "engine/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *d = (const char *)data;
    struct deadletter_list l, again;
    size_t i, lines = 0, end = 0;

    for (i = 0; i < size; i++) lines += d[i] == '\n';
    if (size && d[size - 1] != '\n') lines++;
    deadletter_parse(d, size, &l);
    if (l.n + l.unreadable > lines) __builtin_trap();
    for (i = 0; i < l.n; i++) {
        const struct deadletter *e = &l.v[i];
        struct buf line = BUF_INIT, x = BUF_INIT, y = BUF_INIT;
        if (e->off < end || e->len == 0 || e->off + e->len > size) __builtin_trap();
        if (e->off && d[e->off - 1] != '\n') __builtin_trap();
        if (memchr(d + e->off, '\n', e->len - 1)) __builtin_trap();
        if (e->off + e->len < size && d[e->off + e->len - 1] != '\n') __builtin_trap();
        end = e->off + e->len;
        if (!e->id[0] || !e->executor) __builtin_trap();
        if (!e->msg) continue;
        deadletter_format(&line, 1000, 1, e->executor, e->reason, e->attempts, e->alert_id, e->msg);
        deadletter_parse(line.p, line.len, &again);
        if (again.n != 1 || !again.v[0].msg) __builtin_trap();
        msg_encode(e->msg, &x);
        msg_encode(again.v[0].msg, &y);
        if (x.len != y.len || memcmp(x.p, y.p, x.len) != 0) __builtin_trap();
        deadletter_list_free(&again);
        buf_free(&line);
        buf_free(&x);
        buf_free(&y);
    }
    deadletter_list_free(&l);
    return 0;
}
