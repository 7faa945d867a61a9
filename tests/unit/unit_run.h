/*
 * unit_run: how every unit test's main() runs its suite, in one place, and
 * the check that no test leaves a process behind: the runner is the child
 * subreaper of everything its tests start, so that what outlives the test
 * that started it (a test failed before its clean-up, a child that was not
 * stopped) becomes the runner's child; after the suite, what still runs is
 * given a few seconds to end, then killed, named and made a failure.
 */
#ifndef CORRAL_UNIT_RUN_H
#define CORRAL_UNIT_RUN_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Reaps what has ended; 1 while children remain, 0 when none, -1 on error. */
static inline int
unit_reap(void)
{
    int status;
    pid_t pid;

    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) continue;
    if (pid == 0) return 1;
    return errno == ECHILD ? 0 : -1;
}

/* Names and kills the processes whose parent is this one: how many there were. */
static inline int
unit_kill_children(void)
{
    char path[300], stat[512], *p;
    struct dirent *d;
    DIR *dir = opendir("/proc");
    FILE *f;
    long ppid;
    int n = 0;

    if (!dir) return 0;
    while ((d = readdir(dir))) {
        if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
        if (!(f = fopen(path, "r"))) continue;
        if (!fgets(stat, sizeof(stat), f)) stat[0] = '\0';
        fclose(f);
        p = strrchr(stat, ')');
        if (!p || sscanf(p + 2, "%*c %ld", &ppid) != 1 || ppid != (long)getpid() || p[2] == 'Z')
            continue;
        fprintf(stderr, "left behind by a test: %.*s\n", (int)(p + 1 - stat), stat);
        kill((pid_t)atol(d->d_name), SIGKILL);
        n++;
    }
    closedir(dir);
    return n;
}

/*
 * Waits (10 s at most) for the children left to end by themselves, as one
 * just sent SIGTERM does; kills and names those that do not.  0, or how
 * many were left behind.
 */
static inline int
unit_left_behind(void)
{
    struct timespec step = {0, 20 * 1000 * 1000};
    int i, left = 0;

    for (i = 0; i < 500 && unit_reap() > 0; i++) nanosleep(&step, NULL);
    /* killed: their children come to this process in turn (bounded: a fork bomb would not end) */
    for (i = 0; i < 50 && unit_reap() > 0; i++) {
        left += unit_kill_children();
        nanosleep(&step, NULL);
    }
    return left;
}

/* Runs suite s (freed here) and returns main()'s exit status: failure if any test failed. */
static inline int
unit_run(Suite *s)
{
    SRunner *sr;
    int failed, left;

    prctl(PR_SET_CHILD_SUBREAPER, 1);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    left = unit_left_behind();
    if (left) fprintf(stderr, "%d processes left behind by the tests\n", left);
    return failed || left ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
