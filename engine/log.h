/*
 * log: corral's own diagnostics (not the logs it processes).  Library code
 * reports through log_msg(); the program decides where the lines go: stderr
 * (the default, with a time stamp and the program's name), syslog(3), or a
 * sink of its own (tests record what was logged).  Levels are syslog's:
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
 * to_syslog sends lines to syslog(3) instead of stderr.  Returns false for
 * an unknown level name, which changes nothing.
 */
bool log_setup(const char *ident, const char *level, bool to_syslog);
/* Sends every line that passes the level filter to sink instead; NULL restores stderr/syslog. */
void log_set_sink(log_sink_fn sink, void *arg);

#endif
