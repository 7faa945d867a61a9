/*
 * test_deadletter: the dead-letter file (actions/deadletter.c) read back:
 * a line written is read as the same alert, byte for byte; lines written
 * before ids and "encoded" existed get a stable id and their values back;
 * lines that are not dead letters are counted and survive a rewrite; a
 * rewrite takes out exactly the entries asked for, with every other byte
 * as it was.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actions/deadletter.h"
#include "engine/buf.h"
#include "engine/msg.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "tests/unit/unitlib.h"
#include "tests/unit/unit_run.h"

static struct msg *
alert(const char *message, size_t len)
{
    struct msg *m = msg_new();
    struct msg_time t = {1796400000, 250000, 3600};

    msg_set_stamp(m, &t);
    msg_set_flags(m, MSG_F_GENERATED);
    msg_set(m, NV_HOST, "web1", 4);
    msg_set(m, NV_MESSAGE, message, len);
    msg_set(m, nv_intern_str("corral.alert_id"), "a-1", 3);
    msg_tag_set(m, tag_intern("corral.alert", 12));
    return m;
}

static void
same_encoding(const struct msg *a, const struct msg *b)
{
    struct buf x = BUF_INIT, y = BUF_INIT;

    msg_encode(a, &x);
    msg_encode(b, &y);
    ck_assert_uint_eq(x.len, y.len);
    ck_assert(memcmp(x.p, y.p, x.len) == 0);
    buf_free(&x);
    buf_free(&y);
}

START_TEST(test_round_trip)
{
    /* bytes that JSON cannot carry as they are: NUL, invalid UTF-8, quotes, a newline */
    static const char hostile[] = "bad \0 \xff\xfe \"quoted\"\nnext line";
    struct msg *m = alert(hostile, sizeof(hostile) - 1);
    struct buf file = BUF_INIT;
    struct deadletter_list l;

    deadletter_format(&file, 1796400000123ULL, 42, "mail", "550 no such user", 3, "a-1", m);
    deadletter_format(&file, 1796400000124ULL, 43, "pager", NULL, 1, "a-2", m);
    {
        size_t i, lines = 0;
        for (i = 0; i < file.len; i++) lines += file.p[i] == '\n';
        ck_assert_uint_eq(lines, 2); /* the newline in the message is escaped */
    }
    deadletter_parse(file.p, file.len, &l);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_uint_eq(l.unreadable, 0);
    ck_assert_str_eq(l.v[0].id, "d1796400000123-42");
    ck_assert_str_eq(l.v[0].executor, "mail");
    ck_assert_str_eq(l.v[0].reason, "550 no such user");
    ck_assert_str_eq(l.v[0].alert_id, "a-1");
    ck_assert_str_eq(l.v[0].time, "2026-12-04T16:00:00+00:00");
    ck_assert_uint_eq(l.v[0].attempts, 3);
    ck_assert_ptr_nonnull(l.v[0].msg);
    same_encoding(l.v[0].msg, m);
    ck_assert_str_eq(l.v[1].id, "d1796400000124-43");
    ck_assert_str_eq(l.v[1].executor, "pager");
    ck_assert_str_eq(l.v[1].reason, "");
    /* the entries cover the file exactly */
    ck_assert_uint_eq(l.v[0].off, 0);
    ck_assert_uint_eq(l.v[1].off, l.v[0].len);
    ck_assert_uint_eq(l.v[1].off + l.v[1].len, file.len);
    deadletter_list_free(&l);
    msg_unref(m);
    buf_free(&file);
}
END_TEST

/* Lines of an older corrald: no id, no encoded; the alert comes from message. */
START_TEST(test_old_lines)
{
    static const char old[] =
        "{\"time\":\"2026-12-01T10:00:00+00:00\",\"executor\":\"mail\",\"reason\":\"x\","
        "\"attempts\":10,\"alert_id\":\"r/web1\",\"message\":{\"ISODATE\":\"2026-12-01T10:00:00+00:"
        "00\",\"HOST\":\"web1\",\"MESSAGE\":\"disk full\",\"TAGS\":\"corral.alert,t2\"}}\n";
    struct deadletter_list l, again;
    const char *v;
    size_t len;

    deadletter_parse(old, sizeof(old) - 1, &l);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_int_eq(l.v[0].id[0], 'h');
    ck_assert_uint_eq(strlen(l.v[0].id), 17);
    ck_assert_uint_eq(l.v[0].attempts, 10);
    ck_assert_ptr_nonnull(l.v[0].msg);
    v = msg_get(l.v[0].msg, NV_MESSAGE, &len);
    ck_assert(v && len == 9 && memcmp(v, "disk full", 9) == 0);
    v = msg_get(l.v[0].msg, NV_HOST, &len);
    ck_assert(v && len == 4 && memcmp(v, "web1", 4) == 0);
    ck_assert_ptr_null(msg_get(l.v[0].msg, nv_intern_str("ISODATE"), &len));
    ck_assert(msg_tag_has(l.v[0].msg, tag_intern("corral.alert", 12)));
    ck_assert(msg_tag_has(l.v[0].msg, tag_intern("t2", 2)));
    /* the same line, the same id: it can be named again in a later command, which is another
     * process (`corral queue` lists, corrald retries), so the hash is unkeyed: FNV-1a */
    deadletter_parse(old, sizeof(old) - 1, &again);
    ck_assert_str_eq(again.v[0].id, l.v[0].id);
    ck_assert_str_eq(l.v[0].id, "he40bfa8fb8909eb3");
    deadletter_list_free(&l);
    deadletter_list_free(&again);
}
END_TEST

/* What is not a dead letter is counted, never dropped; a bad encoded gives no alert. */
START_TEST(test_unreadable_kept)
{
    struct msg *m = alert("one", 3);
    struct buf file = BUF_INIT, out = BUF_INIT;
    struct deadletter_list l;
    struct durable_file df;
    char tmpl[] = "/tmp/corral-test-deadletter-XXXXXX", path[600];
    bool remove[4] = {false, false, false, false};
    char *data;
    size_t len;

    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(path, sizeof(path), "%s/dead.jsonl", tmpl);
    buf_puts(&file, "not json at all\n");
    deadletter_format(&file, 1000, 1, "mail", "r1", 1, "a-1", m);
    buf_puts(&file, "{\"executor\":\"mail\",\"id\":\"dX\",\"encoded\":\"zz\"}\n");
    buf_puts(&file, "[1,2]\n\n");
    deadletter_format(&file, 2000, 2, "mail", "r2", 1, "a-2", m);
    buf_puts(&file, "{\"torn\":"); /* no newline: a crash while appending */
    ul_write_file(path, buf_str(&file));

    ck_assert_int_eq(deadletter_read(path, &l, &data, &len), 0);
    ck_assert_uint_eq(len, file.len);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_uint_eq(l.unreadable, 3);
    ck_assert_str_eq(l.v[1].id, "dX");
    ck_assert_ptr_null(l.v[1].msg);
    ck_assert_ptr_nonnull(l.v[0].msg);
    ck_assert_ptr_nonnull(l.v[2].msg);

    /* take out the first good one: every other byte stays */
    remove[0] = true;
    ck_assert_int_eq(deadletter_remove_begin(&df, path, data, len, &l, remove), 0);
    ck_assert_int_eq(durable_commit(&df), 0);
    {
        FILE *f = fopen(path, "rb");
        char chunk[4096];
        size_t n;
        ck_assert_ptr_nonnull(f);
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(&out, chunk, n);
        fclose(f);
    }
    ck_assert_uint_eq(out.len, file.len - l.v[0].len);
    ck_assert(memcmp(out.p, file.p, l.v[0].off) == 0);
    ck_assert(memcmp(out.p + l.v[0].off, file.p + l.v[0].off + l.v[0].len,
                     file.len - l.v[0].off - l.v[0].len) == 0);
    deadletter_list_free(&l);
    free(data);

    /* an abort leaves the file alone; a missing file has no entries */
    ck_assert_int_eq(deadletter_read(path, &l, &data, &len), 0);
    ck_assert_uint_eq(l.n, 2);
    remove[0] = remove[1] = true;
    ck_assert_int_eq(deadletter_remove_begin(&df, path, data, len, &l, remove), 0);
    durable_abort(&df);
    deadletter_list_free(&l);
    free(data);
    ck_assert_int_eq(deadletter_read(path, &l, &data, &len), 0);
    ck_assert_uint_eq(l.n, 2);
    deadletter_list_free(&l);
    free(data);
    unlink(path);
    ck_assert_int_eq(deadletter_read(path, &l, &data, &len), 0);
    ck_assert_uint_eq(l.n, 0);
    ck_assert_uint_eq(len, 0);
    deadletter_list_free(&l);
    free(data);

    ck_assert_int_eq(rmdir(tmpl), 0);
    msg_unref(m);
    buf_free(&file);
    buf_free(&out);
}
END_TEST

static Suite *
deadletter_suite(void)
{
    Suite *s = suite_create("deadletter");
    TCase *tc = tcase_create("read back");

    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_old_lines);
    tcase_add_test(tc, test_unreadable_kept);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(deadletter_suite());
}
