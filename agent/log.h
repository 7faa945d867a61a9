/*
 * log: corrald's own messages (not the logs it processes), to stderr or to
 * syslog, filtered by level.  Levels are syslog's: LOG_ERR, LOG_WARNING,
 * LOG_INFO, LOG_DEBUG.
 */
#ifndef CORRAL_LOG_H
#define CORRAL_LOG_H

#include <stdbool.h>
#include <syslog.h>

void corrald_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* level: "error", "warning", "info" or "debug"; to_syslog sends to syslog(3) instead of stderr. */
void corrald_log_setup(const char *level, bool to_syslog);

#endif
