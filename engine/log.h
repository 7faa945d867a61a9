/*
 * log: corral's own diagnostics (not the logs it processes).  Library code
 * reports through log_msg(); the program decides where the lines go: stderr
 * (the default, with an RFC 3339 local time stamp with milliseconds and
 * offset, and the program's name), the journal
 * (stderr with "<N>" priority prefixes, which journald reads, and no stamp of
 * our own), syslog(3), or a sink of its own (tests record what was logged).  Levels are syslog's:
 * LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG.
 */
#ifndef CORRAL_LOG_H
#define CORRAL_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Receives one formatted line, without a newline, of a level that passed the filter. */
typedef void (*log_sink_fn)(void *arg, int level, const char *text);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * ident: the program name shown in each line ("corrald"); level: "error",
 * "warning", "info" or "debug" (NULL keeps the current one, info at first);
 * to: "stderr", "journal", "syslog", or NULL for the journal when stderr is
 * the stream systemd named in $JOURNAL_STREAM and stderr otherwise.  syslog
 * without a /dev/log socket says so on stderr and logs there instead.
 * Returns false for an unknown level or destination, which changes nothing.
 */
bool log_setup(const char *ident, const char *level, const char *to);
/* Sends every line that passes the level filter to sink instead; NULL restores stderr/syslog. */
void log_set_sink(log_sink_fn sink, void *arg);

#endif
