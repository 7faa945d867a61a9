/*
 * libFuzzer harness for templates and filter expressions, the two small
 * languages of rule values and action conditions.  The rule author writes
 * them, but they run on whatever the network sends, so both the compilers
 * and the evaluation over hostile values are fuzzed.
 *
 * Input: "template\0filter\0stamp(8 bytes)value\0value\0...".  The values
 * fill three messages (a small correlation context: a, b, MESSAGE, PROGRAM,
 * HOST in turn), whose time stamp comes from the 8 bytes, so that date
 * macros see any time a message can hold.  The template and the filter are
 * compiled, then evaluated against the context; a filter is also run as a
 * template argument by $(if).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/filter.h"
#include "engine/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NMSGS 3

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
    static nv_handle names[5];
    const char *p = (const char *)data, *end = p + size, *tsrc, *fsrc;
    size_t tlen, flen, i, k = 0;
    struct msg *msgs[NMSGS];
    struct msg_time stamp = {0, 0, 0};
    struct template_env env;
    struct buf err = BUF_INIT, out = BUF_INIT;
    struct template *t;
    struct filter *f;

    if (!names[0]) {
        names[0] = nv_intern_str("a");
        names[1] = nv_intern_str("b");
        names[2] = nv_intern_str("MESSAGE");
        names[3] = nv_intern_str("PROGRAM");
        names[4] = nv_intern_str("HOST");
    }
    tsrc = next_part(&p, end, &tlen);
    fsrc = next_part(&p, end, &flen);
    if (end - p >= 8) {
        uint64_t s;
        memcpy(&s, p, 8);
        stamp.sec = (int64_t)s;
        stamp.gmtoff = (int32_t)((s >> 7) % 100800) - 50400; /* within +-14 h */
        p += 8;
    }
    for (i = 0; i < NMSGS; i++) {
        msgs[i] = msg_new();
        msg_set_stamp(msgs[i], &stamp);
        msg_set_recvd(msgs[i], &stamp);
    }
    while (p < end) {
        size_t vlen;
        const char *v = next_part(&p, end, &vlen);
        msg_set(msgs[k % NMSGS], names[(k / NMSGS) % 5], v, vlen);
        k++;
    }

    env.msgs = msgs;
    env.nmsgs = NMSGS;
    env.context_id = "ctx";
    env.context_id_len = 3;
    env.now = msg_stamp(msgs[0]); /* as msg_set_stamp keeps it */

    if ((t = template_compile(tsrc, tlen, &err))) {
        template_eval(t, &env, &out);
        env.nmsgs = 1; /* outside a context */
        template_eval(t, &env, &out);
        env.nmsgs = NMSGS;
        template_free(t);
    }
    buf_reset(&err);
    if ((f = filter_compile(fsrc, flen, &err))) {
        (void)filter_eval(f, &env);
        filter_free(f);
    }
    for (i = 0; i < NMSGS; i++) msg_unref(msgs[i]);
    buf_free(&err);
    buf_free(&out);
    return 0;
}
