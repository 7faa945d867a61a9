/*
 * log: corral's own diagnostics, one line each, to stderr, the journal,
 * syslog(3) or a sink the program sets.  Kept in the engine so that every layer reports the
 * same way without knowing which program it runs in.
 */
#include "engine/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/buf.h"

enum target { TO_STDERR, TO_JOURNAL, TO_SYSLOG };

static int max_level = LOG_INFO;
static enum target target = TO_STDERR;
static const char *log_ident = "corral";
static log_sink_fn log_sink;
static void *log_sink_arg;

/* Whether stderr is the stream systemd connected to the journal ($JOURNAL_STREAM is "dev:inode").
 */
static bool
stderr_is_journal(void)
{
    const char *v = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;

    if (!v || sscanf(v, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static int
level_of(const char *name)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    static const int levels[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0) return levels[i];
    return -1;
}

bool
log_setup(const char *ident, const char *level, const char *to)
{
    enum target want;
    struct stat st;
    int lvl = level ? level_of(level) : max_level;

    if (!to)
        want = stderr_is_journal() ? TO_JOURNAL : TO_STDERR;
    else if (strcmp(to, "stderr") == 0)
        want = TO_STDERR;
    else if (strcmp(to, "journal") == 0)
        want = TO_JOURNAL;
    else if (strcmp(to, "syslog") == 0)
        want = TO_SYSLOG;
    else
        return false;
    if (lvl < 0) return false;
    if (ident) log_ident = ident;
    max_level = lvl;
    if (want == TO_SYSLOG && (stat("/dev/log", &st) < 0 || !S_ISSOCK(st.st_mode))) {
        /* syslog(3) would drop every line without a word: say so where someone can see it */
        fprintf(stderr, "%s: logging to syslog, but /dev/log is not a socket: logging to stderr\n",
                log_ident);
        want = stderr_is_journal() ? TO_JOURNAL : TO_STDERR;
    }
    if (want == TO_SYSLOG && target != TO_SYSLOG)
        openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
    if (want != TO_SYSLOG && target == TO_SYSLOG) closelog();
    target = want;
    return true;
}

void
log_set_sink(log_sink_fn sink, void *arg)
{
    log_sink = sink;
    log_sink_arg = arg;
}

/*
 * A whole line in one write(2): corrald's worker threads and its privsep
 * processes share stderr with the loop, and a line written in pieces (a
 * prefix, the text, the newline) could be cut by another's.  A pipe or
 * journald's stream socket keeps one write of up to PIPE_BUF bytes whole.
 */
static void
write_line(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* stderr is gone: there is nowhere left to say so */
        p += w;
        n -= (size_t)w;
    }
}

/*
 * The local time as RFC 3339 with milliseconds and the offset from UTC
 * (2026-12-06T04:36:18.123+01:00): a line read on another machine, or
 * beside the journal's UTC, says when it was written without knowing the
 * zone of the machine that wrote it; milliseconds order the lines of one
 * second that the threads and processes wrote.
 */
static void
format_stamp(char *out, size_t size)
{
    struct timespec ts;
    struct tm tm;
    long off;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
    off = tm.tm_gmtoff / 60; /* whole minutes: every zone in use is */
    snprintf(out + n, size - n, ".%03ld%c%02ld:%02ld", ts.tv_nsec / 1000000L, off < 0 ? '-' : '+',
             labs(off) / 60, labs(off) % 60);
}

void
log_msg(int level, const char *fmt, ...)
{
    static const char *const names[] = {"emerg",   "alert",  "crit", "error",
                                        "warning", "notice", "info", "debug"};
    struct buf b = BUF_INIT;
    char stamp[40];
    va_list ap;

    if (level > max_level) return;
    va_start(ap, fmt);
    if (log_sink) {
        buf_vprintf(&b, fmt, ap);
        log_sink(log_sink_arg, level, buf_str(&b));
    } else if (target == TO_SYSLOG) {
        vsyslog(level, fmt, ap);
    } else {
        if (target == TO_JOURNAL) {
            /* journald takes the priority from the prefix and adds time and name itself */
            buf_printf(&b, "<%d>", level & 7);
        } else {
            format_stamp(stamp, sizeof(stamp));
            buf_printf(&b, "%s %s[%s]: ", stamp, log_ident, names[level & 7]);
        }
        buf_vprintf(&b, fmt, ap);
        buf_putc(&b, '\n');
        write_line(b.p, b.len);
    }
    va_end(ap);
    buf_free(&b);
}
