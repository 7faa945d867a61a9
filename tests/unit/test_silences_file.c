/*
 * Unit tests: the silences file (agent/silences) as read at the start:
 * every line that checks out is kept, past lines that are damaged (no
 * checksum, a wrong one, not JSON, not an object, a field missing, bad
 * matchers, an id twice), each counted in load_errors; the file as read is
 * kept as PATH.corrupt and rewritten with the intact silences, so that the
 * damage is reported once.  The older one-document format (version 1) is
 * read with the same checks; an unreadable file is one load error.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/alerting/silences.h"
#include "engine/durable.h"
#include "tests/unit/unit_run.h"

#define T0 1796400000000ULL /* 2026-12-04T16:00:00Z */

static char dir[64], path[96], corrupt[112];

static void
setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/test_silences_file.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/silences", dir);
    snprintf(corrupt, sizeof(corrupt), "%s.corrupt", path);
}

static void
teardown(void)
{
    unlink(path);
    unlink(corrupt);
    rmdir(dir);
}

static void
append(const char *text)
{
    FILE *f = fopen(path, "a");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A line as the file holds it: the CRC-32 of json in 8 hex digits, a space, json. */
static void
append_line(const char *json)
{
    char crc[16];

    snprintf(crc, sizeof(crc), "%08x ", (unsigned)durable_crc32(0, json, strlen(json)));
    append(crc);
    append(json);
    append("\n");
}

/* A silence in the file's own form, with id ID (one digit, repeated to an id's length). */
static const char *
silence(char digit, const char *matchers)
{
    static char text[512];
    char id[SILENCES_ID_LEN + 1];

    memset(id, digit, SILENCES_ID_LEN);
    id[SILENCES_ID_LEN] = '\0';
    snprintf(text, sizeof(text),
             "{\"id\":\"%s\",\"matchers\":\"%s\",\"start\":%llu,\"end\":%llu,"
             "\"createdBy\":\"ops\",\"comment\":\"c\"}",
             id, matchers, (unsigned long long)T0, (unsigned long long)(T0 + 3600000));
    return text;
}

START_TEST(test_damaged_lines_skipped_and_counted)
{
    struct silences *s;
    char line[600];

    append("{\"version\":2}\n");
    append_line(silence('1', "HOST=\\\"web1\\\""));
    append("\n");      /* empty: nothing, no error */
    append("short\n"); /* no checksum */
    snprintf(line, sizeof(line), "00000000 %s\n", silence('2', "HOST=\\\"web2\\\""));
    append(line);             /* a wrong checksum */
    append("zzzzzzzz {}\n");  /* a checksum that is no number */
    append_line("{not json"); /* checksum right, JSON not */
    append_line("[1,2]");     /* JSON, not an object */
    append_line("{\"id\":\"short\",\"matchers\":\"a=b\",\"start\":1,\"end\":2}"); /* bad id */
    append_line(silence('3', "HOST=~\\\"(\\\""));   /* matchers that do not parse */
    append_line(silence('1', "HOST=\\\"web1\\\"")); /* the first one's id again */
    append_line(silence('4', "HOST=\\\"web4\\\""));

    s = silences_new(path, 86400, 100, T0);
    ck_assert_uint_eq(silences_count(s), 2);
    ck_assert_uint_eq(silences_active(s, T0 + 1000), 2);
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 8);
    ck_assert_int_eq(access(corrupt, R_OK), 0);
    silences_free(s);

    /* rewritten with the intact ones: read again, no damage left */
    s = silences_new(path, 86400, 100, T0);
    ck_assert_uint_eq(silences_count(s), 2);
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 0);
    silences_free(s);
}
END_TEST

START_TEST(test_cut_last_line)
{
    struct silences *s;
    const char *j = silence('5', "HOST=\\\"web5\\\"");
    char crc[16];

    append("{\"version\":2}\n");
    append_line(silence('6', "HOST=\\\"web6\\\""));
    /* the last write cut short: no newline, and fewer bytes than its checksum covers */
    snprintf(crc, sizeof(crc), "%08x ", (unsigned)durable_crc32(0, j, strlen(j)));
    append(crc);
    fflush(NULL);
    {
        FILE *f = fopen(path, "a");
        ck_assert_ptr_nonnull(f);
        fwrite(j, 1, strlen(j) / 2, f);
        fclose(f);
    }
    s = silences_new(path, 86400, 100, T0);
    ck_assert_uint_eq(silences_count(s), 1);
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 1);
    silences_free(s);
}
END_TEST

START_TEST(test_version_1)
{
    struct silences *s;
    char text[2048];
    char one[512];

    snprintf(one, sizeof(one), "%s", silence('7', "HOST=\\\"web7\\\""));
    snprintf(text, sizeof(text), "{\"version\":1,\"silences\":[%s,%s,{\"id\":1},%s]}\n", one, one,
             silence('8', "HOST=\\\"web8\\\""));
    append(text);
    s = silences_new(path, 86400, 100, T0);
    ck_assert_uint_eq(silences_count(s), 2);
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 2); /* the copy, the one without fields */
    silences_free(s);

    /* rewritten in the current form */
    s = silences_new(path, 86400, 100, T0);
    ck_assert_uint_eq(silences_count(s), 2);
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 0);
    silences_free(s);
}
END_TEST

START_TEST(test_version_1_unusable)
{
    struct silences *s;

    append("{\"version\":1, \"silences\": 3}\n");
    s = silences_new(path, 86400, 100, T0);
    ck_assert_uint_eq(silences_count(s), 0);
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 1);
    silences_free(s);
    unlink(path);

    append("{\"version\":1, \"silences\": [");
    s = silences_new(path, 86400, 100, T0);
    ck_assert_uint_eq(silences_count(s), 0);
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 1);
    silences_free(s);
}
END_TEST

START_TEST(test_unreadable)
{
    struct silences *s;

    ck_assert_int_eq(mkdir(path, 0700), 0); /* a directory where the file should be */
    s = silences_new(path, 86400, 100, T0);
    ck_assert_uint_eq(silences_count(s), 0);
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 1);
    silences_free(s);
    rmdir(path);

    s = silences_new(path, 86400, 100, T0); /* none yet: no error */
    ck_assert_uint_eq(silences_get_stats(s)->load_errors, 0);
    silences_free(s);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("silences_file");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_damaged_lines_skipped_and_counted);
    tcase_add_test(tc, test_cut_last_line);
    tcase_add_test(tc, test_version_1);
    tcase_add_test(tc, test_version_1_unusable);
    tcase_add_test(tc, test_unreadable);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
