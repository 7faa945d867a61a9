/*
 * cmd: the verbs of the corral command and what they share.
 */
#ifndef CORRAL_CMD_H
#define CORRAL_CMD_H

#include <stdbool.h>

#include "engine/pdb.h"

int cmd_test(int argc, char **argv);
int cmd_match(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_check_config(int argc, char **argv);

/*
 * Loads rule files or directories into one database and prints its
 * diagnostics to stderr.  Returns NULL only if nothing could be loaded; with
 * strict set, any error counts as a failure.
 */
struct pdb *cmd_load_rules(char **paths, int npaths, bool strict);

/*
 * Runs the correlation scenarios of a .scenario file (see scenario.c),
 * counting them; -1 if the file itself is unusable.
 */
int scenario_run_file(const char *file, bool verbose, unsigned long *passed, unsigned long *failed);

/* Prints "corral VERB: " and the message to stderr. */
void cmd_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
