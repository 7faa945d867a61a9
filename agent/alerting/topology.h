/*
 * topology: which host sits behind which device and port, or depends on
 * which host, read from a text file (corrald.conf(5), <topology>), for the
 * inhibition rules that hold back the alerts of the hosts behind something
 * that is down.
 *
 * The file: one link a line, fields separated by blanks, # to the end of
 * the line a comment:
 *     HOST  UPSTREAM  [PORT]
 * HOST reaches the network (or works) only through UPSTREAM, on UPSTREAM's
 * PORT when one is given (a switch port, an interface name or an ifIndex);
 * without a port HOST depends on UPSTREAM as a whole.  Links are followed
 * transitively: a host behind a switch that sits behind a router port is
 * behind that router port too.  A cycle, a host behind itself, more than
 * TOPOLOGY_MAX_DEPTH hops, a line of 1 or more than 3 fields, control
 * characters and more than TOPOLOGY_MAX_LINKS links are errors, each with
 * the file and line.
 */
#ifndef CORRAL_TOPOLOGY_H
#define CORRAL_TOPOLOGY_H

#include "engine/buf.h"

#include <stdbool.h>
#include <stddef.h>

#define TOPOLOGY_MAX_LINKS 100000
#define TOPOLOGY_MAX_DEPTH 16
#define TOPOLOGY_MAX_LINE  1024

struct topology;

/* Reads path; NULL with "path:line: message" lines in err. */
struct topology *topology_load(const char *path, struct buf *err);
/* The same from text in memory, named name in errors (for tests). */
struct topology *topology_parse(const char *name, const char *text, size_t len, struct buf *err);
void topology_free(struct topology *t);
size_t topology_links(const struct topology *t);

/*
 * Whether host (hlen bytes) sits behind upstream (ulen bytes), directly or
 * through the hosts it depends on, on a link without a port or on one whose
 * port is one of the nports ports (ports[i], plens[i] bytes).
 */
bool topology_behind(const struct topology *t, const char *host, size_t hlen, const char *upstream,
                     size_t ulen, const char *const *ports, const size_t *plens, size_t nports);

#endif
