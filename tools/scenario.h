/*
 * scenario: correlation scenarios, a timestamped log replayed through the
 * whole engine and the messages it must generate (see scenario.c for the
 * file format); `corral test` runs them beside the rule files' examples.
 */
#ifndef CORRAL_SCENARIO_H
#define CORRAL_SCENARIO_H

#include <stdbool.h>

/*
 * Runs the correlation scenarios of a .scenario file, counting them; -1 if
 * the file itself is unusable.
 */
int scenario_run_file(const char *file, bool verbose, unsigned long *passed, unsigned long *failed);

#endif
