/*
 * log: corral's own diagnostics, one line each, to stderr, syslog(3) or a
 * sink the program sets.  Kept in the engine so that every layer reports the
 * same way without knowing which program it runs in.
 */
#include "engine/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/buf.h"

static int max_level = LOG_INFO;
static bool use_syslog;
static const char *log_ident = "corral";
static log_sink_fn log_sink;
static void *log_sink_arg;

bool
log_setup(const char *ident, const char *level, bool to_syslog)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    static const int levels[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    bool known = level == NULL;
    size_t i;

    if (ident) log_ident = ident;
    for (i = 0; level && i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(level, names[i]) == 0) {
            max_level = levels[i];
            known = true;
        }
    if (to_syslog && !use_syslog) openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
    if (!to_syslog && use_syslog) closelog();
    use_syslog = to_syslog;
    return known;
}

void
log_set_sink(log_sink_fn sink, void *arg)
{
    log_sink = sink;
    log_sink_arg = arg;
}

void
log_msg(int level, const char *fmt, ...)
{
    static const char *const names[] = {"emerg",   "alert",  "crit", "error",
                                        "warning", "notice", "info", "debug"};
    char stamp[32];
    struct tm tm;
    time_t now;
    va_list ap;

    if (level > max_level) return;
    va_start(ap, fmt);
    if (log_sink) {
        struct buf b = BUF_INIT;
        buf_vprintf(&b, fmt, ap);
        log_sink(log_sink_arg, level, buf_str(&b));
        buf_free(&b);
    } else if (use_syslog) {
        vsyslog(level, fmt, ap);
    } else {
        now = time(NULL);
        localtime_r(&now, &tm);
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
        fprintf(stderr, "%s %s[%s]: ", stamp, log_ident, names[level & 7]);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}
