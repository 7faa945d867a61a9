/*
 * unitlib: what the executor unit tests (test_exec, test_snmp, test_smtp)
 * share: writing files, loading an <executors> snippet through the real
 * configuration loader and schema, a monotonic clock, free loopback ports.
 * Failures are Check assertions.
 */
#ifndef CORRAL_UNITLIB_H
#define CORRAL_UNITLIB_H

#include <stddef.h>

#include "agent/conf.h"

/* etc/corrald.xsd under $top_srcdir (or the current directory). */
const char *ul_schema_path(void);
void ul_write_file(const char *path, const char *text);
/*
 * Writes "<corrald><executors>EXECUTORS</executors></corrald>" (EXECUTORS from
 * line 3) into a new file in dir, named in file, and loads it.
 */
struct conf *ul_load_executors(const char *dir, const char *executors, char *file, size_t filesize);
/* Seconds on the monotonic clock. */
double ul_now(void);
/* A port on 127.0.0.1 free a moment ago, for SOCK_STREAM or SOCK_DGRAM. */
int ul_free_port(int socktype);

#endif
