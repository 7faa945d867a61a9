/*
 * tfargs: the arguments of a template function as syslog-ng 3.38 hands them
 * to it, for the functions that take raw arguments (a prepare() in struct
 * tfunc): the argument text re-derived as 3.38 sees it, GLib GOption-style
 * options, and sub-templates and filter expressions compiled with a bound
 * on how deep such compiles nest.  Internal to the template functions.
 */
#ifndef CORRAL_TFARGS_H
#define CORRAL_TFARGS_H

#include <stdbool.h>

#include "engine/buf.h"
#include "engine/tfunc.h"

struct filter;

/* The unquoted arguments of a prepare() call; freed with tfargs_free(). */
char **tfargs_unquote(int argc, char **rawq);
void tfargs_free(int argc, char **a);

/* Compiles a sub-template or filter expression; NULL with err set. */
struct template *tfargs_template(const char *src, struct buf *err);
struct filter *tfargs_filter(const char *fname, const char *src, struct buf *err);
/* Compiles args[from..argc) into call->argv, which template.c frees. */
bool tfargs_compile(struct tfunc_call *call, char **args, int from, int argc, struct buf *err);
/* Compiles the positional arguments args[pos[0..npos)] into call->argv, after tfargs_parse(). */
bool tfargs_compile_positionals(struct tfunc_call *call, char **args, const int *pos, int npos,
                                struct buf *err);

/*
 * Option parsing as GLib's GOption does it for 3.38's functions: "--name
 * value", "--name=value", "-x value", grouped short flags ("-cC"), options
 * anywhere among the arguments, "--" ends the options.  GOption drops the
 * "--" itself unless an argument after it starts with '-'.
 */
enum tfargs_kind { TFARGS_FLAG, TFARGS_STRING, TFARGS_INT };

/* A positional argument handed to the callback (GOption's G_OPTION_REMAINING). */
#define TFARGS_REST (-1)

struct tfargs_opt {
    const char *name;
    char letter;
    enum tfargs_kind kind;
    int id;
};

typedef bool (*tfargs_cb)(void *ctx, int id, const char *sval, int ival, struct buf *err);

/*
 * Parses args[0..argc) against defs (ended by a NULL name); positional
 * arguments go to pos[] (indices) or, with rest_to_cb, to the callback as
 * TFARGS_REST.  Returns the number of positionals, -1 on error.
 */
int tfargs_parse(char **args, int argc, const struct tfargs_opt *defs, tfargs_cb cb, void *ctx,
                 bool rest_to_cb, int *pos, struct buf *err);

#endif
