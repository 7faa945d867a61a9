/*
 * libFuzzer harness for the engine-executor frame decoder (actions/ipc.c),
 * the first thing the privileged executor process runs on bytes from the
 * engine, which may be compromised.  The input is the stream; its first
 * byte picks how the stream is cut into feeds (as reads would).  Checked on
 * every run:
 *   - every frame handed out lies inside the decoder's buffer and within
 *     IPC_BODY_MAX;
 *   - the frames, framed again, are a prefix of the input (after the
 *     selector byte): the decoder neither invents nor reorders bytes;
 *   - after -1 (a bad length) the decoder stays stopped, and then the
 *     offending length is 0 or past IPC_FRAME_MAX;
 *   - what it holds never exceeds one frame plus one feed;
 *   - every submit frame's body goes through the executor process's check
 *     (ipcserve_parse_submit, with 4 executors): an accepted one names an
 *     executor below 4, its alert lies inside the body and decodes whole;
 *     and every body through the count of new value names
 *     (ipcserve_new_names, which runs before the alert decodes), which
 *     must read within it whatever it holds;
 *   - every hello (H) and reload (L) body through the executor process's
 *     parsers: accepted only at exactly 4 and 8 bytes;
 *   - every reload answer (R) body through the engine's parser
 *     (ipcproxy_parse_reloaded): an accepted one has ok 0 or 1, a report
 *     inside the body, n names without NUL (none when not ok), and
 *     framed again as the executor process frames it, it is the body.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "actions/ipc.h"
#include "actions/ipcproxy.h"
#include "actions/ipcserve.h"
#include "engine/buf.h"
#include "engine/msg.h"
#include "engine/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* queue.c comes with ipcserve.c but without the executors (run.sh): nothing here opens a queue. */
const struct executor_kind *
executor_kind_find(const char *name)
{
    (void)name;
    return NULL;
}

bool
executor_common_attr(const char *name)
{
    (void)name;
    return false;
}

static void
check_submit(const void *body, size_t len)
{
    struct ipcserve_submit sub;
    const char *why = NULL;
    const char *b = body;

    (void)ipcserve_new_names(body, len); /* as on an alert's bytes, before they decode */
    sub.msg = msg_new();
    if (ipcserve_parse_submit(body, len, 4, &sub, &why) == 0) {
        if (sub.index >= 4 || sub.keep > 1) __builtin_trap();
        if (sub.alert < b || sub.alert + sub.alert_len != b + len) __builtin_trap();
    } else if (!why) {
        __builtin_trap();
    }
    msg_unref(sub.msg);
}

static void
check_small(char type, const void *body, size_t len)
{
    uint32_t version;
    uint64_t gen;

    if (type == IPC_HELLO && (ipcserve_parse_hello(body, len, &version) == 0) != (len == 4))
        __builtin_trap();
    if (type == IPC_RELOAD && (ipcserve_parse_reload(body, len, &gen) == 0) != (len == 8))
        __builtin_trap();
}

static void
check_reloaded(const void *body, size_t len)
{
    struct ipcproxy_reloaded r;
    struct buf again = BUF_INIT;
    const char *b = body;
    size_t i;

    if (ipcproxy_parse_reloaded(body, len, &r) < 0) return;
    if (r.report_len && (r.report < b || r.report + r.report_len > b + len)) __builtin_trap();
    if (!r.ok && r.n) __builtin_trap();
    wire_put64(&again, r.generation);
    wire_put32(&again, r.ok ? 1 : 0);
    wire_put_bytes(&again, r.report, r.report_len);
    wire_put32(&again, (uint32_t)r.n);
    for (i = 0; i < r.n; i++) {
        if (!r.names[i]) __builtin_trap();
        wire_put_bytes(&again, r.names[i], strlen(r.names[i])); /* a NUL would cut it short */
    }
    if (r.names[r.n] || again.len != len || memcmp(again.p, body, len) != 0) __builtin_trap();
    ipcproxy_reloaded_free(&r);
    buf_free(&again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ipc_decoder d;
    struct buf again = BUF_INIT;
    size_t at, step, feed;
    int rc = 0;

    if (size < 1) return 0;
    step = (size_t)data[0] + 1; /* 1..256 bytes per feed */
    data++;
    size--;
    ipc_decoder_init(&d);
    for (at = 0; at < size && rc >= 0; at += feed) {
        const void *body;
        size_t len;
        char type;

        feed = size - at < step ? size - at : step;
        ipc_decoder_feed(&d, data + at, feed);
        if (ipc_decoder_pending(&d) > IPC_FRAME_MAX + 4 + step) __builtin_trap();
        while ((rc = ipc_decoder_next(&d, &type, &body, &len)) == 1) {
            const char *b = body;
            if (len > IPC_BODY_MAX) __builtin_trap();
            if (b < d.in.p || b + len > d.in.p + d.in.len) __builtin_trap();
            if (ipc_frame(&again, type, body, len) != 0) __builtin_trap();
            if (type == IPC_SUBMIT) check_submit(body, len);
            if (type == IPC_HELLO || type == IPC_RELOAD) check_small(type, body, len);
            if (type == IPC_X_RELOADED) check_reloaded(body, len);
        }
    }
    if (again.len > size || (again.len && memcmp(again.p, data, again.len) != 0)) __builtin_trap();
    if (rc < 0) {
        const void *body;
        size_t len;
        char type;
        if (!d.bad || (d.bad_len >= 1 && d.bad_len <= IPC_FRAME_MAX)) __builtin_trap();
        ipc_decoder_feed(&d, "\x01\0\0\0Y", 5);
        if (ipc_decoder_next(&d, &type, &body, &len) != -1) __builtin_trap();
    }
    ipc_decoder_free(&d);
    buf_free(&again);
    return 0;
}
