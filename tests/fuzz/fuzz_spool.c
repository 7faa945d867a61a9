/*
 * libFuzzer harness for the spool reader (queue_spool_scan in
 * actions/queue.c): whatever bytes a spool file holds, reading it must not
 * crash or read out of bounds, and must account for every byte.  Checked
 * on every run:
 *   - each record handed over lies inside the input, after the one before;
 *   - good records and skipped bytes never add up to more than the input;
 *   - the good records, framed again into a fresh spool, read back as the
 *     same records with nothing skipped (the writer and reader agree);
 *   - every alert payload is fed to msg_decode, as the replay does (a
 *     retried dead letter's after its id, as queue_spool_retried splits it).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "actions/queue.h"
#include "engine/buf.h"
#include "engine/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* queue.c is linked without the executors (run.sh): nothing here opens a queue. */
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

struct seen {
    const uint8_t *base;
    size_t size, end, n, bytes;
    struct buf again; /* the records, framed again */
    struct buf list;  /* type, seq, length of each, to compare */
};

static void
on_record(void *arg, char type, uint64_t seq, const void *payload, size_t len)
{
    struct seen *s = arg;
    const uint8_t *p = payload;

    if (len && (p < s->base || p + len > s->base + s->size)) __builtin_trap();
    if (len && (size_t)(p - s->base) < s->end) __builtin_trap(); /* out of order, or overlapping */
    if (len) s->end = (size_t)(p - s->base) + len;
    s->n++;
    s->bytes += len;
    queue_spool_frame(&s->again, type, seq, payload, len);
    buf_putc(&s->list, type);
    buf_append(&s->list, &seq, sizeof(seq));
    buf_append(&s->list, &len, sizeof(len));
    if (type == QUEUE_REC_ALERT) {
        struct msg *m = msg_new();
        msg_decode(m, payload, len);
        msg_unref(m);
    } else if (type == QUEUE_REC_RETRIED) {
        const char *id;
        const void *alert;
        size_t idlen, alen;
        if (queue_spool_retried(payload, len, &id, &idlen, &alert, &alen)) {
            struct msg *m = msg_new();
            if ((const uint8_t *)id != p + 4 || idlen + alen + 4 != len) __builtin_trap();
            msg_decode(m, alert, alen);
            msg_unref(m);
        }
    }
}

static void
on_record2(void *arg, char type, uint64_t seq, const void *payload, size_t len)
{
    struct buf *list = arg;

    (void)payload;
    buf_putc(list, type);
    buf_append(list, &seq, sizeof(seq));
    buf_append(list, &len, sizeof(len));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct seen s = {data, size, 0, 0, 0, BUF_INIT, BUF_INIT};
    struct buf list2 = BUF_INIT;
    struct queue_scan res, res2;

    buf_puts(&s.again, QUEUE_SPOOL_HEADER);
    queue_spool_scan(data, size, on_record, &s, &res);
    if (res.records != s.n || res.corrupt_bytes > size || res.tail_bytes > res.corrupt_bytes ||
        s.bytes + res.corrupt_bytes > size || (res.corrupt_bytes && !res.corrupt))
        __builtin_trap();
    queue_spool_scan(s.again.p, s.again.len, on_record2, &list2, &res2);
    if (res2.version != 2 || res2.records != s.n || res2.corrupt || list2.len != s.list.len ||
        (list2.len && memcmp(list2.p, s.list.p, list2.len) != 0))
        __builtin_trap();
    buf_free(&s.again);
    buf_free(&s.list);
    buf_free(&list2);
    return 0;
}
