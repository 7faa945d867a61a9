/*
 * cmd: the verbs of the corral command (one cmd_*.c each) and what they
 * share (cmd.c).
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

/* Prints "corral VERB: " and the message to stderr. */
void cmd_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
