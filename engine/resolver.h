/*
 * resolver: the reverse DNS lookups of templates ($(dns-resolve-ip)),
 * through a hook.  Without one, a lookup is a blocking getnameinfo(), which
 * suits the corral command; corrald, whose event loop must never block,
 * installs a cache that answers at once and resolves in the background
 * (agent/net/dnscache.c).
 */
#ifndef CORRAL_RESOLVER_H
#define CORRAL_RESOLVER_H

#include <stddef.h>
#include <sys/socket.h>

/*
 * Writes the host name of address sa into host (hostlen bytes, NUL
 * terminated) and returns 0, or returns -1 when there is no name to give
 * (none exists, or it is not known yet).
 */
typedef int (*resolver_fn)(void *arg, const struct sockaddr *sa, socklen_t salen, char *host,
                           size_t hostlen);

/* Installs fn (NULL: back to the blocking getnameinfo()); not thread-safe. */
void resolver_set(resolver_fn fn, void *arg);
/*
 * On the calling thread, every lookup fails (the address is answered): for
 * corrald's worker threads, whose hook (a cache on the loop thread) is not
 * theirs to call, and which must not block.
 */
void resolver_off_thread(void);
/* The host name of sa through the installed resolver; see resolver_fn. */
int resolver_name(const struct sockaddr *sa, socklen_t salen, char *host, size_t hostlen);

#endif
