/*
 * procstat: the process_* metrics of the process serving /metrics, and
 * corral_build_info (see procstat.h).
 */
#include "agent/core/procstat.h"
#include "agent/core/metrics.h"

#include <config.h>

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

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

/* What one rendering reads, gathered once; a source left NULL leaves its metrics out. */
struct pstat {
    double cpu_seconds;
    uint64_t rss, vsize; /* bytes */
    double start_time;
    uint64_t open_fds;
    uint64_t max_fds;
    bool max_fds_inf;
};

enum psrc {
    P_ALWAYS,
    P_STAT,   /* /proc/self/stat was read */
    P_START,  /* and the boot time is known */
    P_FDS,    /* /proc/self/fd was read */
    P_MAXFDS, /* getrlimit(RLIMIT_NOFILE) answered */
    P_NSRC
};

/*
 * Fields 14-15 (utime, stime), 22 (starttime, in ticks after boot), 23
 * (vsize, bytes) and 24 (rss, pages) of /proc/self/stat (proc(5)).  The
 * command name, field 2, is in parentheses and may hold spaces and
 * parentheses itself: the fields are counted from the last ')'.  False if
 * it cannot be read.
 */
static bool
read_stat(struct pstat *ps, bool *start_known)
{
    unsigned long long utime, stime, start, vsize, rss, btime;
    long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    char text[1024], *p;
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n;

    if (!f) return false;
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    p = strrchr(text, ')');
    if (!p || ticks <= 0 || page <= 0) return false;
    /* after ')': state (3) ... cstime (17), priority, nice, num_threads, itrealvalue, starttime */
    if (sscanf(p + 1,
               " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
               "%llu %llu %llu",
               &utime, &stime, &start, &vsize, &rss) != 5)
        return false;
    ps->cpu_seconds = (double)(utime + stime) / (double)ticks;
    ps->rss = rss * (unsigned long long)page;
    ps->vsize = vsize;
    btime = boot_time();
    *start_known = btime != 0;
    ps->start_time = (double)btime + (double)start / (double)ticks;
    return true;
}

static void
m_build_info(struct buf *out, const struct metrics_desc *d, void *c)
{
    (void)c;
    buf_printf(out, "%s{version=\"%s\"} 1\n", d->name, PACKAGE_VERSION);
}

static void
m_max_fds(struct buf *out, const struct metrics_desc *d, void *c)
{
    const struct pstat *ps = c;

    if (ps->max_fds_inf)
        buf_printf(out, "%s +Inf\n", d->name);
    else
        buf_printf(out, "%s %llu\n", d->name, (unsigned long long)ps->max_fds);
}

/* a field of struct pstat: the _Generic refuses to compile unless it is a uint64_t or double */
#define P(member)                                                                                  \
    .field = offsetof(struct pstat, member) +                                                      \
             0 * sizeof(_Generic(((struct pstat *)0)->member, uint64_t : 1, double : 1))

static const struct metrics_desc procstat_mtab[] = {
    {"corral_build_info", "gauge", "Always 1; the labels say which corrald is running.", P_ALWAYS,
     .series = m_build_info},
    {"process_cpu_seconds_total", "counter",
     "User and system CPU time the process serving /metrics (the engine process under "
     "privilege separation) used, in seconds.",
     P_STAT, P(cpu_seconds), .decimals = 2},
    {"process_resident_memory_bytes", "gauge", "Resident memory size of that process in bytes.",
     P_STAT, P(rss)},
    {"process_virtual_memory_bytes", "gauge", "Virtual memory size of that process in bytes.",
     P_STAT, P(vsize)},
    {"process_start_time_seconds", "gauge",
     "Start time of that process since the epoch, in seconds.", P_START, P(start_time),
     .decimals = 2},
    {"process_open_fds", "gauge", "File descriptors that process has open.", P_FDS, P(open_fds)},
    {"process_max_fds", "gauge", "Its limit on open file descriptors (RLIMIT_NOFILE, soft).",
     P_MAXFDS, .series = m_max_fds},
};

#undef P

void
procstat_metrics(struct buf *out)
{
    struct pstat ps = {0};
    const void *src[P_NSRC] = {0};
    struct rlimit rl;
    bool start_known = false;
    long fds;

    src[P_ALWAYS] = &ps;
    if (read_stat(&ps, &start_known)) {
        src[P_STAT] = &ps;
        if (start_known) src[P_START] = &ps;
    }
    if ((fds = open_fds()) >= 0) {
        ps.open_fds = (uint64_t)fds;
        src[P_FDS] = &ps;
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        ps.max_fds_inf = rl.rlim_cur == RLIM_INFINITY;
        ps.max_fds = (uint64_t)rl.rlim_cur;
        src[P_MAXFDS] = &ps;
    }
    metrics_render(out, procstat_mtab, sizeof(procstat_mtab) / sizeof(procstat_mtab[0]), src, &ps);
}
