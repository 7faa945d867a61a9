/*
 * tf_net: network addresses in templates, $(ipv4-to-int) and
 * $(dns-resolve-ip).
 */
#include "engine/tfunc_int.h"
#include "engine/resolver.h"
#include "engine/tfargs.h"
#include "engine/xalloc.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/*
 * $(ipv4-to-int ADDR...), comma separated.  inet_aton() accepts what 3.38's
 * g_inet_aton() does.  Deviation: an invalid address yields an empty item;
 * 3.38 prints whatever was on its stack.
 */
static void
tf_ipv4_to_int(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    int i;

    for (i = 0; i < call->argc; i++) {
        struct buf *b = tfunc_arg_get(call, i, env);
        struct in_addr ina;
        if (inet_aton(buf_str(b), &ina)) buf_printf(out, "%lu", (unsigned long)ntohl(ina.s_addr));
        if (i < call->argc - 1) buf_putc(out, ',');
        template_scratch_put(b);
    }
}

/* ---- dns-resolve-ip ---- */

struct dns_state {
    bool use_fqdn, use_dns, normalize;
};

enum { DNS_FQDN, DNS_USE, DNS_CACHE, DNS_NORMALIZE };

static const struct tfargs_opt dns_opts[] = {
    {"use-fqdn", 'f', TFARGS_STRING, DNS_FQDN},
    {"use-dns", 'd', TFARGS_STRING, DNS_USE},
    {"dns-cache", 'c', TFARGS_STRING, DNS_CACHE},
    {"normalize-hostnames", 'n', TFARGS_STRING, DNS_NORMALIZE},
    {NULL, 0, TFARGS_FLAG, 0},
};

static bool
yesno(const char *s)
{
    return !strcasecmp(s, "yes") || !strcasecmp(s, "y") || !strcasecmp(s, "on") || !strcmp(s, "1");
}

static bool
dns_opt(void *ctx, int id, const char *sval, int ival, struct buf *err)
{
    struct dns_state *st = ctx;

    (void)ival;
    (void)err;
    if (id == DNS_FQDN) st->use_fqdn = yesno(sval);
    if (id == DNS_USE) st->use_dns = yesno(sval);
    if (id == DNS_NORMALIZE) st->normalize = yesno(sval);
    return true; /* --dns-cache is accepted and ignored: caching is the resolver's (resolver.h) */
}

static bool
dns_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    struct dns_state *st = xcalloc(1, sizeof(*st));
    char **args = tfargs_unquote(argc, rawq);
    int *pos = xcalloc((size_t)argc + 1, sizeof(int));
    int npos;
    bool ok = false;

    (void)raw;
    st->use_dns = true; /* syslog-ng's global defaults: use-dns(yes), use-fqdn(no) */
    call->state = st;
    npos = tfargs_parse(args, argc, dns_opts, dns_opt, st, false, pos, err);
    if (npos > 1)
        buf_printf(
            err,
            "dns-resolve-ip: too many arguments provided. usage: $(dns-resolve-ip [OPTIONS] IP)");
    else if (npos >= 0)
        ok = tfargs_compile_positionals(call, args, pos, npos, err);
    free(pos);
    tfargs_free(argc, args);
    return ok;
}

/*
 * The host name of an address, or the address itself when it has none, as
 * 3.38.  The lookup goes through resolver.h: in the corral command a
 * blocking lookup on every evaluation; in corrald a cache that gives the
 * address itself until the first answer for it has arrived (deviation).
 */
static void
tf_dns_resolve_ip(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct dns_state *st = call->state;
    struct sockaddr_storage ss;
    socklen_t sl;
    char host[NI_MAXHOST], addr[INET6_ADDRSTRLEN];
    struct buf *b;
    size_t start = out->len, i;

    if (call->argc < 1) return;
    b = tfunc_arg_get(call, 0, env);
    memset(&ss, 0, sizeof(ss));
    if (inet_pton(AF_INET, buf_str(b), &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ss.ss_family = AF_INET;
        sl = sizeof(struct sockaddr_in);
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
    } else if (inet_pton(AF_INET6, buf_str(b), &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
        ss.ss_family = AF_INET6;
        sl = sizeof(struct sockaddr_in6);
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
    } else {
        template_scratch_put(b);
        return;
    }
    template_scratch_put(b);
    if (st->use_dns && resolver_name((struct sockaddr *)&ss, sl, host, sizeof(host)) == 0) {
        size_t n = strlen(host);
        if (!st->use_fqdn) {
            const char *dot = strchr(host, '.');
            if (dot) n = (size_t)(dot - host);
        }
        buf_append(out, host, n);
        if (st->normalize)
            for (i = start; i < out->len; i++)
                if (out->p[i] >= 'A' && out->p[i] <= 'Z') out->p[i] = (char)(out->p[i] + 32);
    } else {
        buf_puts(out, addr);
    }
}

const struct tfunc tf_net_funcs[] = {
    {"ipv4-to-int", 0, -1, NULL, tf_ipv4_to_int, NULL, NULL},
    {"dns-resolve-ip", 0, -1, dns_prepare, tf_dns_resolve_ip, free, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL},
};
