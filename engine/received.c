/*
 * received: the normalisation of a received message (see received.h).
 */
#include "engine/received.h"
#include "engine/nv.h"

#include <string.h>

/* .tls.peer_name's handle, interned on first use: interning is idempotent and thread-safe, so
 * threads that race here store the same handle */
static nv_handle
tls_peer_handle(void)
{
    static nv_handle h;
    nv_handle v = __atomic_load_n(&h, __ATOMIC_RELAXED);

    if (!v) {
        v = nv_intern_str(".tls.peer_name");
        __atomic_store_n(&h, v, __ATOMIC_RELAXED);
    }
    return v;
}

void
received_normalise(struct msg *m, const struct received_from *from)
{
    size_t hlen = 0;

    if (from->peer) msg_set(m, NV_SOURCEIP, from->peer, from->peerlen);
    /*
     * A message that names no host (logger on a local socket, devices that
     * leave the field out) is from its sender, as syslog-ng has it with
     * use-dns(no): the peer's address, or this host for local inputs.  Left
     * empty, the messages of every such sender would share one HOST, and
     * with it one context of each host-scoped rule.
     */
    if (!msg_get(m, NV_HOST, &hlen) || hlen == 0) {
        if (from->peer)
            msg_set(m, NV_HOST, from->peer, from->peerlen);
        else
            msg_set(m, NV_HOST, from->hostname, strlen(from->hostname));
    }
    /* the name in the client's TLS certificate, for rules and routes */
    if (from->tls_peer) msg_set(m, tls_peer_handle(), from->tls_peer, from->tls_peerlen);
}
