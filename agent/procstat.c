/*
 * procstat: the process_* metrics of the process serving /metrics, and
 * corral_build_info (see procstat.h).
 */
#include "agent/procstat.h"

#include <config.h>

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void
metric(struct buf *out, const char *name, const char *help, const char *type)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The system's boot time in seconds since the epoch (btime of /proc/stat), or 0. */
static unsigned long long
boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long btime = 0;
    char line[256];

    if (!f) return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "btime %llu", &btime) == 1) break;
    fclose(f);
    return btime;
}

/* The entries of /proc/self/fd, less the one opendir holds while counting; -1 if unreadable. */
static long
open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    long n = 0;

    if (!d) return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1;
}

/*
 * Fields 14-15 (utime, stime), 22 (starttime, in ticks after boot), 23
 * (vsize, bytes) and 24 (rss, pages) of /proc/self/stat (proc(5)).  The
 * command name, field 2, is in parentheses and may hold spaces and
 * parentheses itself: the fields are counted from the last ')'.
 */
static void
stat_metrics(struct buf *out)
{
    unsigned long long utime, stime, start, vsize, rss, btime;
    long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    char text[1024], *p;
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n;

    if (!f) return;
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    p = strrchr(text, ')');
    if (!p || ticks <= 0 || page <= 0) return;
    /* after ')': state (3) ... cstime (17), priority, nice, num_threads, itrealvalue, starttime */
    if (sscanf(p + 1,
               " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
               "%llu %llu %llu",
               &utime, &stime, &start, &vsize, &rss) != 5)
        return;
    metric(out, "process_cpu_seconds_total",
           "User and system CPU time the process serving /metrics (the engine process under "
           "privilege separation) used, in seconds.",
           "counter");
    buf_printf(out, "process_cpu_seconds_total %.2f\n", (double)(utime + stime) / (double)ticks);
    metric(out, "process_resident_memory_bytes", "Resident memory size of that process in bytes.",
           "gauge");
    buf_printf(out, "process_resident_memory_bytes %llu\n", rss * (unsigned long long)page);
    metric(out, "process_virtual_memory_bytes", "Virtual memory size of that process in bytes.",
           "gauge");
    buf_printf(out, "process_virtual_memory_bytes %llu\n", vsize);
    btime = boot_time();
    if (btime) {
        metric(out, "process_start_time_seconds",
               "Start time of that process since the epoch, in seconds.", "gauge");
        buf_printf(out, "process_start_time_seconds %.2f\n",
                   (double)btime + (double)start / (double)ticks);
    }
}

void
procstat_metrics(struct buf *out)
{
    struct rlimit rl;
    long fds;

    metric(out, "corral_build_info", "Always 1; the labels say which corrald is running.", "gauge");
    buf_printf(out, "corral_build_info{version=\"%s\"} 1\n", PACKAGE_VERSION);
    stat_metrics(out);
    fds = open_fds();
    if (fds >= 0) {
        metric(out, "process_open_fds", "File descriptors that process has open.", "gauge");
        buf_printf(out, "process_open_fds %ld\n", fds);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        metric(out, "process_max_fds", "Its limit on open file descriptors (RLIMIT_NOFILE, soft).",
               "gauge");
        if (rl.rlim_cur == RLIM_INFINITY)
            buf_puts(out, "process_max_fds +Inf\n");
        else
            buf_printf(out, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    }
}
