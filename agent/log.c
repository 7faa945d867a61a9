/* log: corrald's own diagnostics, one line each, to stderr or syslog(3). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int max_level = LOG_INFO;
static bool use_syslog;

void
corrald_log_setup(const char *level, bool to_syslog)
{
    if (level) {
        if (strcmp(level, "error") == 0)
            max_level = LOG_ERR;
        else if (strcmp(level, "warning") == 0)
            max_level = LOG_WARNING;
        else if (strcmp(level, "info") == 0)
            max_level = LOG_INFO;
        else if (strcmp(level, "debug") == 0)
            max_level = LOG_DEBUG;
    }
    if (to_syslog && !use_syslog) openlog("corrald", LOG_PID | LOG_NDELAY, LOG_DAEMON);
    if (!to_syslog && use_syslog) closelog();
    use_syslog = to_syslog;
}

void
corrald_log(int level, const char *fmt, ...)
{
    static const char *const names[] = {"emerg",   "alert",  "crit", "error",
                                        "warning", "notice", "info", "debug"};
    char stamp[32];
    struct tm tm;
    time_t now;
    va_list ap;

    if (level > max_level) return;
    va_start(ap, fmt);
    if (use_syslog) {
        vsyslog(level, fmt, ap);
    } else {
        now = time(NULL);
        localtime_r(&now, &tm);
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
        fprintf(stderr, "%s corrald[%s]: ", stamp, names[level & 7]);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}
