/*
 * syslogfmt: parsing of syslog lines into messages, as syslog-ng 3.38's
 * default syslog parser does it.
 *
 *   RFC3164:  <PRI>Mmm dd hh:mm:ss HOST PROGRAM[PID]: MESSAGE
 *             (PRI optional; also "Mmm dd yyyy hh:mm:ss", fractional seconds,
 *             and ISO-8601 stamps in the timestamp position; real-world
 *             program forms such as "sshd(pam_unix)[123]:")
 *   RFC5424:  <PRI>1 TIMESTAMP HOST APP-NAME PROCID MSGID [SD-ELEMENT...] MSG
 *             (structured data becomes .SDATA.<id>.<param> values; a
 *             parameter whose new name the registry refuses, nv_intern_input,
 *             is kept in .corral.sdata_unregistered instead)
 *
 * The parser sets HOST, PROGRAM, PID, MSGID, MESSAGE, LEGACY_MSGHDR and the
 * .SDATA.* values, the priority and the timestamp.  The line is copied into
 * the message once; every field is a slice of that copy.
 */
#ifndef CORRAL_SYSLOGFMT_H
#define CORRAL_SYSLOGFMT_H

#include <stddef.h>

#include "engine/msg.h"

struct syslogfmt_opts {
    /*
     * The current time, used to guess the year of RFC3164 stamps (which have
     * none) and as the receive time.  NULL: the wall clock.
     */
    const struct msg_time *now;
};

/*
 * Parses one line (without its trailing newline) into m, which is reset
 * first.  Never fails: text that is not syslog becomes the MESSAGE of a
 * message stamped with the current time.
 */
void syslogfmt_parse(struct msg *m, const char *line, size_t len,
                     const struct syslogfmt_opts *opts);

/*
 * The current time as syslogfmt_parse() takes it when opts->now is NULL: the
 * wall clock with the local UTC offset.  For a caller that reads the clock
 * once a message and gives that time to the correlation engine as well.
 */
void syslogfmt_now(struct msg_time *now);

/*
 * Forgets the calling thread's cached time-zone offsets.  Call after changing
 * the TZ environment variable (the daemon does on reload).
 */
void syslogfmt_tz_reset(void);

#endif
