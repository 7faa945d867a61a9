/*
 * unitlib: what the executor unit tests (test_exec, test_snmp, test_smtp)
 * share: writing files, loading an <executors> snippet through the real
 * configuration loader and schema, a monotonic clock, running a libuv loop
 * until something happened, loopback ports held open.  Failures are Check assertions.
 */
#ifndef CORRAL_UNITLIB_H
#define CORRAL_UNITLIB_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "agent/conf/conf.h"

/* etc/corrald.xsd under $top_srcdir (or the current directory). */
const char *ul_schema_path(void);
void ul_write_file(const char *path, const char *text);
/* A scratch directory for one test (/tmp/corral-test-TAG-XXXXXX), paths in
 * it (the last 4 stay valid), and its removal.  ul_workdir_new: NULL if
 * it cannot be made. */
const char *ul_workdir_new(const char *tag);
const char *ul_workdir(void);
const char *ul_wpath(const char *name);
void ul_workdir_remove(void);
/*
 * Writes "<corrald><executors>EXECUTORS</executors></corrald>" (EXECUTORS from
 * line 3) into a new file in dir, named in file, and loads it.
 */
struct conf *ul_load_executors(const char *dir, const char *executors, char *file, size_t filesize);
/* Seconds on the monotonic clock. */
double ul_now(void);
/*
 * Runs loop until done(arg) is true or `seconds` pass, whichever comes
 * first; returns done's last answer.  done NULL: just runs for `seconds`.
 * The loop needs no timer of its own: a guard timer wakes it at the end.
 */
bool ul_run_until(uv_loop_t *loop, bool (*done)(void *arg), void *arg, double seconds);
/* For ul_run_until: true once the bool at arg is. */
bool ul_flag_set(void *arg);
/*
 * A socket bound to 127.0.0.1 on a port of the kernel's choosing, for
 * SOCK_STREAM or SOCK_DGRAM, kept open so that nothing else can take the
 * port; *port gets the number.  Not listening: a TCP connect to it is
 * refused, a UDP datagram to it is never answered.  Close it when done.
 */
int ul_reserve_port(int socktype, int *port);

#endif
