/*
 * parsers: the @TYPE:name:arg@ field parsers of the patterndb pattern
 * language (@STRING@, @ESTRING@, @IPv4@, ...), with syslog-ng 3.38's exact
 * acceptance rules.  The radix tree (radix.c) calls them at parser nodes.
 */
#ifndef CORRAL_PARSERS_H
#define CORRAL_PARSERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/buf.h"
#include "engine/nv.h"

enum parser_type {
    PARSER_STRING,
    PARSER_ESTRING,
    PARSER_QSTRING,
    PARSER_NUMBER,
    PARSER_FLOAT,
    PARSER_IPV4,
    PARSER_IPV6,
    PARSER_IPVANY,
    PARSER_MACADDR,
    PARSER_LLADDR,
    PARSER_EMAIL,
    PARSER_HOSTNAME,
    PARSER_ANYSTRING,
    PARSER_SET,
    PARSER_OPTIONALSET,
    PARSER_NLSTRING,
    PARSER_PCRE,
};

struct parser;

/*
 * Compiles the text between the two '@' of a parser reference, for example
 * "ESTRING:user: ".  Returns NULL and writes a message to err when the type is
 * unknown, a required argument is missing or a regular expression is bad.
 */
struct parser *parser_compile(const char *spec, size_t len, struct buf *err);
void parser_free(struct parser *p);
/* Two parser references that would match the same way and store the same name. */
bool parser_equal(const struct parser *a, const struct parser *b);

/*
 * A read-only copy of p for matching, written into mem (parser_shadow_size(p)
 * bytes, 8-aligned), with its argument inline: the radix tree puts it next to
 * the node that tries it, so matching reads no memory elsewhere.  It shares
 * p's compiled regular expression, so it is valid while p lives, and is never
 * freed (its memory is the caller's).
 */
size_t parser_shadow_size(const struct parser *p);
const struct parser *parser_shadow(const struct parser *p, void *mem);

/* Result of a successful parse, relative to the position the parser started at. */
struct parser_match {
    /*
     * Bytes consumed.  One more than what is left of the subject when the
     * parser, like syslog-ng's, also consumed the terminating NUL (an empty
     * ESTRING stop, a SET or OPTIONALSET or EMAIL skip run to the end): the
     * match is then past the end and can only serve a prefix match.
     */
    size_t len;
    size_t cap_off; /* start of the captured value */
    size_t cap_len; /* length of the captured value */
};

/*
 * Tries the parser on subject[pos..n).  The whole subject is passed because
 * one quirk (EMAIL) looks at the byte before pos.  Callers never call it with
 * pos == n; pos > n (after a match past the end) is allowed, and there only
 * ANYSTRING and OPTIONALSET succeed, consuming nothing.  The capture may then
 * start past the end too: callers clamp it.
 */
bool parser_match(const struct parser *p, const char *subject, size_t n, size_t pos,
                  struct parser_match *m);

enum parser_type parser_type(const struct parser *p);
const char *parser_type_name(enum parser_type t);
nv_handle parser_name(const struct parser *p);
/* Prints the parser back in @TYPE:name:arg@ form. */
void parser_format(const struct parser *p, struct buf *out);

/*
 * The calling thread's PCRE2 match data (room for 256 groups), for every
 * regular expression match of the engine; a thread that ends releases it.
 */
void *parser_match_data(void);
void parser_match_data_release(void);

#endif
