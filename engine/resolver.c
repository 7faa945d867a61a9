/*
 * resolver: the hook for reverse DNS lookups of templates; see resolver.h.
 */
#include "engine/resolver.h"

#include <netdb.h>

static resolver_fn hook;
static void *hook_arg;
static _Thread_local int no_names; /* resolver_off_thread() */

void
resolver_off_thread(void)
{
    no_names = 1;
}

void
resolver_set(resolver_fn fn, void *arg)
{
    hook = fn;
    hook_arg = arg;
}

int
resolver_name(const struct sockaddr *sa, socklen_t salen, char *host, size_t hostlen)
{
    if (no_names) return -1;
    if (hook) return hook(hook_arg, sa, salen, host, hostlen);
    /* NI_NAMEREQD: an address without a name is a failure, not its numeric form */
    return getnameinfo(sa, salen, host, (socklen_t)hostlen, NULL, 0, NI_NAMEREQD) == 0 ? 0 : -1;
}
