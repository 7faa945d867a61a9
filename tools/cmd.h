/*
 * cmd: the verbs of the corral command (one cmd_*.c each) and what they
 * share (cmd.c).
 */
#ifndef CORRAL_CMD_H
#define CORRAL_CMD_H

#include <stdbool.h>

#include "engine/buf.h"
#include "engine/pdb.h"

int cmd_test(int argc, char **argv);
int cmd_match(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_check_config(int argc, char **argv);
int cmd_alerts(int argc, char **argv);
int cmd_alert(int argc, char **argv);
int cmd_silence(int argc, char **argv);
int cmd_queue(int argc, char **argv);

#define CMD_DEFAULT_SOCKET "/run/corrald/control.sock"
/* Sends one request line to corrald's control socket; the whole answer into out.  0 or -1. */
int cmd_ask_socket(const char *path, const char *request, struct buf *out);
/* Says why the control socket could not be reached, with a hint where one helps. */
void cmd_socket_error(const char *verb, const char *path);

/*
 * Loads rule files or directories into one database and prints its
 * diagnostics to stderr.  Returns NULL only if nothing could be loaded; with
 * strict set, any error counts as a failure.
 */
struct pdb *cmd_load_rules(char **paths, int npaths, bool strict, unsigned threads);

/*
 * Loads Sigma rules (a file or directory) with a mapping file (NULL: the
 * shipped one) into db, beside its patterndb rules, and prints the
 * diagnostics to stderr.  Returns the number of rules loaded, or -1 when
 * the mapping or the rules path could not be read.
 */
long cmd_load_sigma(struct pdb *db, const char *rules, const char *mapping);

/* Prints "corral VERB: " and the message to stderr. */
void cmd_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
