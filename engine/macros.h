/*
 * macros: the computed names of the template language ($ISODATE, $FACILITY,
 * $TAGS, $CONTEXT_ID, ...), as opposed to stored values ($HOST, $MESSAGE).
 * Date macros come in three flavours like syslog-ng's: plain and S_ use the
 * message's own timestamp, R_ the time it was received, C_ the current time.
 */
#ifndef CORRAL_MACROS_H
#define CORRAL_MACROS_H

#include <stddef.h>

#include "engine/buf.h"
#include "engine/msg.h"
#include "engine/template.h"

/* Returns the macro id for a name, or -1 if the name is not a macro. */
int macro_lookup(const char *name, size_t len);
/* Marks the stored values a macro reads; false when it reads names at run time ($SDATA). */
bool macro_refs(int id, unsigned char *keep);
/* Appends the macro's value for message m (m may be NULL: only context macros expand). */
void macro_eval(int id, const struct template_env *env, const struct msg *m, struct buf *out);

/* 2024-01-05T10:00:00+01:00, with fractional digits when frac_digits > 0. */
void macro_format_iso(const struct msg_time *t, int frac_digits, struct buf *out);
/* Jan  5 10:00:00 */
void macro_format_bsd(const struct msg_time *t, struct buf *out);

const char *macro_facility_name(int facility);
/* $FACILITY of a priority: the name, or syslog-ng's hex code for facilities without one. */
void macro_format_facility(int pri, struct buf *out);
const char *macro_severity_name(int severity);
/* Looks up a facility or severity by name; -1 if unknown. */
int macro_facility_code(const char *name, size_t len);
int macro_severity_code(const char *name, size_t len);

#endif
