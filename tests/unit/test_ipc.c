/*
 * Unit tests of the engine-executor framing (actions/ipc.c): frames come
 * out as they went in however the stream is cut; lengths of 0 and past
 * IPC_FRAME_MAX stop the decoder for good; the writer refuses what the
 * reader would refuse; and on a real socketpair, many frames arrive whole
 * and in order, even when the sender closes at once (what it queued is
 * written first), the peer closing is reported, and a peer sending a bad
 * length is reported as a protocol error.
 */
#include "actions/ipc.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "engine/buf.h"
#include "engine/wire.h"
#include "tests/unit/unit_run.h"

/* Decodes everything d yields, as "type:body|" into out; returns what next() last said. */
static int
drain(struct ipc_decoder *d, struct buf *out)
{
    const void *body;
    size_t len;
    char type;
    int rc;

    while ((rc = ipc_decoder_next(d, &type, &body, &len)) == 1) {
        buf_printf(out, "%c:", type);
        buf_append(out, body, len);
        buf_putc(out, '|');
    }
    return rc;
}

/* Three frames, one with an empty body, one with NUL bytes. */
static void
sample(struct buf *s)
{
    ck_assert_int_eq(ipc_frame(s, 'S', "hello", 5), 0);
    ck_assert_int_eq(ipc_frame(s, 'Y', NULL, 0), 0);
    ck_assert_int_eq(ipc_frame(s, 'e', "a\0b", 3), 0);
}

static const char expect[] = "S:hello|Y:|e:a\0b|";

/* Every frame type has a name of its own for the log; other bytes are "unknown". */
START_TEST(test_type_names)
{
    static const char types[] = {IPC_HELLO,      IPC_SUBMIT,    IPC_SYNC,     IPC_RELOAD,
                                 IPC_QUEUECTL,   IPC_TERMINATE, IPC_NOTIFY,   IPC_X_HELLO,
                                 IPC_X_EVENT,    IPC_X_STATS,   IPC_X_SERVED, IPC_X_PRESSURE,
                                 IPC_X_RELOADED, IPC_X_ANSWER,  IPC_X_BYE,    IPC_X_SIGNAL};
    size_t i, j;

    ck_assert_str_eq(ipc_type_name(IPC_SUBMIT), "submit");
    ck_assert_str_eq(ipc_type_name(IPC_X_STATS), "stats");
    ck_assert_str_eq(ipc_type_name('Z'), "unknown");
    ck_assert_str_eq(ipc_type_name('\0'), "unknown");
    for (i = 0; i < sizeof(types); i++) {
        ck_assert_str_ne(ipc_type_name(types[i]), "unknown");
        for (j = 0; j < i; j++) ck_assert_str_ne(ipc_type_name(types[i]), ipc_type_name(types[j]));
    }
}
END_TEST

START_TEST(test_roundtrip_every_cut)
{
    struct buf s = BUF_INIT;
    size_t cut, cut2;

    sample(&s);
    ck_assert_uint_eq(s.len, 3 * IPC_HEADER_SIZE + 8);
    for (cut = 0; cut <= s.len; cut++) {
        for (cut2 = cut; cut2 <= s.len; cut2++) {
            struct ipc_decoder d;
            struct buf out = BUF_INIT;

            ipc_decoder_init(&d);
            ipc_decoder_feed(&d, s.p, cut);
            ck_assert_int_eq(drain(&d, &out), 0);
            ipc_decoder_feed(&d, s.p + cut, cut2 - cut);
            ck_assert_int_eq(drain(&d, &out), 0);
            ipc_decoder_feed(&d, s.p + cut2, s.len - cut2);
            ck_assert_int_eq(drain(&d, &out), 0);
            ck_assert_uint_eq(out.len, sizeof(expect) - 1);
            ck_assert_mem_eq(out.p, expect, out.len);
            ck_assert_uint_eq(ipc_decoder_pending(&d), 0);
            ipc_decoder_free(&d);
            buf_free(&out);
        }
    }
    buf_free(&s);
}
END_TEST

START_TEST(test_byte_by_byte_pending)
{
    struct buf s = BUF_INIT, out = BUF_INIT;
    struct ipc_decoder d;
    size_t i;

    sample(&s);
    ipc_decoder_init(&d);
    for (i = 0; i < s.len; i++) {
        ipc_decoder_feed(&d, s.p + i, 1);
        ck_assert_int_eq(drain(&d, &out), 0);
    }
    ck_assert_mem_eq(out.p, expect, sizeof(expect) - 1);
    /* half a frame more: pending, not a frame */
    ipc_decoder_feed(&d, s.p, 3);
    ck_assert_int_eq(drain(&d, &out), 0);
    ck_assert_uint_eq(ipc_decoder_pending(&d), 3);
    ipc_decoder_free(&d);
    buf_free(&s);
    buf_free(&out);
}
END_TEST

/* A length of 0, or past the bound, stops the decoder for good, frames before it delivered. */
START_TEST(test_bad_lengths)
{
    static const uint32_t bad[] = {0, IPC_FRAME_MAX + 1, 0xffffffffu};
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct buf s = BUF_INIT, out = BUF_INIT;
        struct ipc_decoder d;
        unsigned char h[4];
        const void *body;
        size_t len;
        char type;

        ipc_frame(&s, 'S', "ok", 2);
        wire_store32(h, bad[i]);
        buf_append(&s, h, 4);
        ipc_frame(&s, 'S', "after", 5);
        ipc_decoder_init(&d);
        ipc_decoder_feed(&d, s.p, s.len);
        ck_assert_int_eq(drain(&d, &out), -1);
        ck_assert_str_eq(buf_str(&out), "S:ok|");
        ck_assert(d.bad);
        ck_assert_uint_eq(d.bad_len, bad[i]);
        /* sticky: a good frame after it is not decoded */
        ipc_decoder_feed(&d, s.p, s.len);
        ck_assert_int_eq(ipc_decoder_next(&d, &type, &body, &len), -1);
        ipc_decoder_free(&d);
        buf_free(&s);
        buf_free(&out);
    }
}
END_TEST

/* The largest frame passes; the writer refuses one byte more, as the reader would. */
START_TEST(test_bounds)
{
    struct buf s = BUF_INIT, out = BUF_INIT;
    struct ipc_decoder d;
    const void *body;
    size_t len, start;
    char type, *big = calloc(1, IPC_BODY_MAX + 1);

    ck_assert_ptr_nonnull(big);
    ck_assert_int_eq(ipc_frame(&s, 'S', big, IPC_BODY_MAX + 1), -1);
    ck_assert_uint_eq(s.len, 0);
    big[IPC_BODY_MAX - 1] = 'z';
    ck_assert_int_eq(ipc_frame(&s, 'S', big, IPC_BODY_MAX), 0);
    ipc_decoder_init(&d);
    ipc_decoder_feed(&d, s.p, s.len);
    ck_assert_int_eq(ipc_decoder_next(&d, &type, &body, &len), 1);
    ck_assert_int_eq(type, 'S');
    ck_assert_uint_eq(len, IPC_BODY_MAX);
    ck_assert_int_eq(((const char *)body)[len - 1], 'z');
    ipc_decoder_free(&d);

    /* built in place: the same bound, and a refused frame leaves nothing behind */
    buf_reset(&s);
    ipc_frame(&s, 'Y', NULL, 0);
    start = ipc_begin(&s, 'S');
    wire_put32(&s, 7);
    wire_put_bytes(&s, "alert", 5);
    ck_assert_int_eq(ipc_end(&s, start), 0);
    start = ipc_begin(&s, 'S');
    buf_append(&s, big, IPC_BODY_MAX + 1);
    ck_assert_int_eq(ipc_end(&s, start), -1);
    ck_assert_uint_eq(s.len, start);
    ipc_decoder_init(&d);
    ipc_decoder_feed(&d, s.p, s.len);
    ck_assert_int_eq(drain(&d, &out), 0);
    ck_assert_uint_eq(out.len, 3 + 2 + 4 + 4 + 5 + 1); /* "Y:|" "S:" u32 u32 "alert" "|" */
    ck_assert_mem_eq(out.p, "Y:|S:\x07\0\0\0\x05\0\0\0alert|", out.len);
    ck_assert_uint_eq(ipc_decoder_pending(&d), 0);
    ipc_decoder_free(&d);
    free(big);
    buf_free(&s);
    buf_free(&out);
}
END_TEST

/* ---- on a socketpair ---- */

#define NFRAMES 200

struct side {
    struct ipc_conn *c;
    int frames;
    bool in_order;
    size_t bytes;
    char reason[128];
    bool ended;
};

static void
on_frame(void *arg, char type, const void *body, size_t len)
{
    struct side *s = arg;
    struct wire_reader r;

    wire_reader_init(&r, body, len);
    if (type != 'S' || wire_get32(&r) != (uint32_t)s->frames) s->in_order = false;
    s->frames++;
    s->bytes += len;
}

static void
on_end(void *arg, const char *reason)
{
    struct side *s = arg;

    s->ended = true;
    snprintf(s->reason, sizeof(s->reason), "%s", reason);
}

static void
pair(int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
}

START_TEST(test_conn_many_frames_then_close)
{
    uv_loop_t loop;
    struct side a = {0}, b = {0};
    struct buf body = BUF_INIT;
    int sv[2], i;

    uv_loop_init(&loop);
    pair(sv);
    a.c = ipc_open(&loop, sv[0], on_frame, on_end, &a);
    b.c = ipc_open(&loop, sv[1], on_frame, on_end, &b);
    ck_assert_ptr_nonnull(a.c);
    ck_assert_ptr_nonnull(b.c);
    b.in_order = true;
    /* varied sizes, up to past one read's worth, so frames straddle reads */
    for (i = 0; i < NFRAMES; i++) {
        buf_reset(&body);
        wire_put32(&body, (uint32_t)i);
        while (body.len < (size_t)(i * 7919) % 70000) buf_putc(&body, (char)i);
        ck_assert_int_eq(ipc_send(a.c, 'S', body.p, body.len), 0);
    }
    ck_assert_uint_gt(ipc_write_queued(a.c), 0);
    /* closed at once: what was queued is still written before the peer sees the end */
    ipc_close(a.c, NULL, NULL);
    while (!b.ended) uv_run(&loop, UV_RUN_ONCE);
    ck_assert_int_eq(b.frames, NFRAMES);
    ck_assert(b.in_order);
    ck_assert_str_eq(b.reason, "closed");
    ck_assert_int_eq(ipc_send(b.c, 'S', "x", 1), -1); /* over */
    ipc_close(b.c, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&body);
}
END_TEST

/* A peer that sends a bad length is cut off with a protocol error; what came before is kept. */
START_TEST(test_conn_protocol_error)
{
    uv_loop_t loop;
    struct side b = {0};
    struct buf s = BUF_INIT;
    unsigned char h[4];
    int sv[2];

    uv_loop_init(&loop);
    pair(sv);
    b.c = ipc_open(&loop, sv[1], on_frame, on_end, &b);
    b.in_order = true;
    wire_put32(&s, 5);
    buf_putc(&s, 'S');
    wire_put32(&s, 0); /* frame 0 */
    wire_store32(h, IPC_FRAME_MAX + 1);
    buf_append(&s, h, 4);
    ck_assert_int_eq(write(sv[0], s.p, s.len), (ssize_t)s.len);
    while (!b.ended) uv_run(&loop, UV_RUN_ONCE);
    ck_assert_int_eq(b.frames, 1);
    ck_assert(b.in_order);
    ck_assert_ptr_nonnull(strstr(b.reason, "protocol error"));
    ipc_close(b.c, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    close(sv[0]);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    buf_free(&s);
}
END_TEST

/* A peer that dies in the middle of a frame: reported as such, the half frame not delivered. */
START_TEST(test_conn_torn_frame)
{
    uv_loop_t loop;
    struct side b = {0};
    int sv[2];

    uv_loop_init(&loop);
    pair(sv);
    b.c = ipc_open(&loop, sv[1], on_frame, on_end, &b);
    ck_assert_int_eq(write(sv[0], "\x09\0\0\0Sabc", 8), 8);
    close(sv[0]);
    while (!b.ended) uv_run(&loop, UV_RUN_ONCE);
    ck_assert_int_eq(b.frames, 0);
    ck_assert_str_eq(b.reason, "closed in the middle of a frame");
    ipc_close(b.c, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static Suite *
ipc_suite(void)
{
    Suite *s = suite_create("ipc");
    TCase *tc = tcase_create("ipc");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_type_names);
    tcase_add_test(tc, test_roundtrip_every_cut);
    tcase_add_test(tc, test_byte_by_byte_pending);
    tcase_add_test(tc, test_bad_lengths);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_conn_many_frames_then_close);
    tcase_add_test(tc, test_conn_protocol_error);
    tcase_add_test(tc, test_conn_torn_frame);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(ipc_suite());
}
