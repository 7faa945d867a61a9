/*
 * Unit tests: corral's own log lines (engine/log) as they reach stderr:
 * the stamped format (RFC 3339, milliseconds, the zone's offset) and the
 * journal format, the level filter, and whole lines
 * when several threads log at once (corrald's workers and its loop share
 * stderr; a line written in pieces was cut by another thread's before).
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/durable.h"
#include "engine/log.h"
#include "tests/unit/unit_run.h"

#define THREADS 4
#define LINES   5000

static char path[64];
static int saved_stderr = -1;

/* stderr into a new scratch file until stderr_restore() */
static void
stderr_to_file(void)
{
    int fd;

    snprintf(path, sizeof path, "/tmp/corral-test-log-XXXXXX");
    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    saved_stderr = dup(STDERR_FILENO);
    ck_assert_int_ge(saved_stderr, 0);
    ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    close(fd);
}

/* restores stderr; returns what was written to it (caller frees) */
static char *
stderr_restore(size_t *len)
{
    char *text;

    fflush(stderr);
    ck_assert_int_eq(dup2(saved_stderr, STDERR_FILENO), STDERR_FILENO);
    close(saved_stderr);
    text = durable_read_file(path, DURABLE_MAX_STATE, len);
    ck_assert_ptr_nonnull(text);
    unlink(path);
    return text;
}

static void *
log_many(void *arg)
{
    long t = (long)arg;
    int i;

    for (i = 0; i < LINES; i++)
        log_msg(LOG_WARNING, "thread %ld line %d of the concurrent test", t, i);
    return NULL;
}

START_TEST(test_threads_write_whole_lines)
{
    static unsigned char seen[THREADS][LINES];
    pthread_t tid[THREADS];
    regex_t re;
    regmatch_t m[3];
    size_t len, lines = 0;
    char *text, *line, *save = NULL;
    long t;

    ck_assert(log_setup("corral-test", "info", "stderr"));
    ck_assert_int_eq(regcomp(&re,
                             "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}"
                             "[+-][0-9]{2}:[0-9]{2} "
                             "corral-test\\[warning\\]: thread ([0-9]+) line ([0-9]+) of the "
                             "concurrent test$",
                             REG_EXTENDED),
                     0);
    stderr_to_file();
    for (t = 0; t < THREADS; t++)
        ck_assert_int_eq(pthread_create(&tid[t], NULL, log_many, (void *)t), 0);
    for (t = 0; t < THREADS; t++) pthread_join(tid[t], NULL);
    text = stderr_restore(&len);
    ck_assert_uint_gt(len, 0);
    ck_assert_int_eq(text[len - 1], '\n');
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        long th, n;
        if (regexec(&re, line, 3, m, 0) != 0) ck_abort_msg("a line was cut or mixed: \"%s\"", line);
        th = strtol(line + m[1].rm_so, NULL, 10);
        n = strtol(line + m[2].rm_so, NULL, 10);
        ck_assert(th >= 0 && th < THREADS && n >= 0 && n < LINES);
        ck_assert_msg(!seen[th][n], "thread %ld line %ld twice", th, n);
        seen[th][n] = 1;
        lines++;
    }
    ck_assert_uint_eq(lines, THREADS * LINES);
    regfree(&re);
    free(text);
}
END_TEST

/* The stamp is RFC 3339 with milliseconds and the zone's offset, whatever TZ says. */
START_TEST(test_stamp_has_offset)
{
    static const char *const zones[][2] = {
        {"UTC0", "+00:00"}, {"XST-5:30", "+05:30"}, {"EST5", "-05:00"}, {"NPT-5:45", "+05:45"}};
    char *old = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
    regex_t re;
    size_t i, len;
    char *text;

    ck_assert_int_eq(regcomp(&re,
                             "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}"
                             "([+-][0-9]{2}:[0-9]{2}) corral-test\\[warning\\]: in a zone\n$",
                             REG_EXTENDED),
                     0);
    ck_assert(log_setup("corral-test", "info", "stderr"));
    for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
        regmatch_t m[2];
        setenv("TZ", zones[i][0], 1);
        tzset();
        stderr_to_file();
        log_msg(LOG_WARNING, "in a zone");
        text = stderr_restore(&len);
        ck_assert_msg(regexec(&re, text, 2, m, 0) == 0, "%s: \"%s\"", zones[i][0], text);
        ck_assert_int_eq(m[1].rm_eo - m[1].rm_so, 6);
        ck_assert_msg(strncmp(text + m[1].rm_so, zones[i][1], 6) == 0, "%s: \"%s\"", zones[i][0],
                      text);
        free(text);
    }
    if (old)
        setenv("TZ", old, 1);
    else
        unsetenv("TZ");
    tzset();
    free(old);
    regfree(&re);
}
END_TEST

START_TEST(test_journal_format_and_level)
{
    size_t len;
    char *text;

    ck_assert(log_setup("corral-test", "warning", "journal"));
    stderr_to_file();
    log_msg(LOG_ERR, "an error: %d", 42);
    log_msg(LOG_INFO, "below the level: not written");
    log_msg(LOG_WARNING, "a warning");
    text = stderr_restore(&len);
    /* journald reads the priority from the prefix and stamps the line itself */
    ck_assert_str_eq(text, "<3>an error: 42\n<4>a warning\n");
    free(text);
    ck_assert(!log_setup("corral-test", "loud", NULL));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_threads_write_whole_lines);
    tcase_add_test(tc, test_stamp_has_offset);
    tcase_add_test(tc, test_journal_format_and_level);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
