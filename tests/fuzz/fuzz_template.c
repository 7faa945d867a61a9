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
 *
 * The template is also the argument of the two shortcuts of the template
 * functions, each checked against its general-path twin over the same
 * context (the values are the fuzzer's; a difference aborts):
 * $(list-head $(context-values T)) against $(list-nth 0 ...), and
 * $(filter (F) $(context-values T)) against the same list with an empty
 * ${nope} after it, for a few fixed filters F.  Only templates without
 * parentheses or quotes, so that T stays one argument in both.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/filter.h"
#include "engine/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Evaluates both sources over env; aborts when both compile and their outputs differ. */
static void
same_output(const char *fast_src, const char *slow_src, const struct template_env *env)
{
    struct buf err = BUF_INIT, fast = BUF_INIT, slow = BUF_INIT;
    struct template *tf = template_compile_str(fast_src, &err),
                    *ts = template_compile_str(slow_src, &err);

    if (tf && ts) {
        template_eval(tf, env, &fast);
        template_eval(ts, env, &slow);
        if (fast.len != slow.len || (fast.len && memcmp(fast.p, slow.p, fast.len) != 0)) abort();
    }
    template_free(tf);
    template_free(ts);
    buf_free(&err);
    buf_free(&fast);
    buf_free(&slow);
}

static void
check_shortcuts(const char *t, size_t len, const struct template_env *env)
{
    static const char *const filters[] = {"(\"$_\" ne \"\")", "(\"$_\" eq \"${a}\")",
                                          "(\"$_\" == \"$(context-length)\")"};
    char fast[256], slow[256];
    size_t i;

    if (len == 0 || len > 64) return;
    for (i = 0; i < len; i++)
        if (t[i] == '\0' || strchr("()\"'\\", t[i])) return;
    snprintf(fast, sizeof(fast), "$(list-head $(context-values %.*s))", (int)len, t);
    snprintf(slow, sizeof(slow), "$(list-nth 0 $(context-values %.*s))", (int)len, t);
    same_output(fast, slow, env);
    for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
        snprintf(fast, sizeof(fast), "$(filter %s $(context-values %.*s))", filters[i], (int)len,
                 t);
        snprintf(slow, sizeof(slow), "$(filter %s $(context-values %.*s)${nope})", filters[i],
                 (int)len, t);
        same_output(fast, slow, env);
    }
}

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
    check_shortcuts(tsrc, tlen, &env);
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
