/*
 * received: what a received message gets from how it came, before it is
 * classified, the same whether one engine takes it (server.c) or corrald's
 * workers do (workers.c): SOURCEIP, a HOST for a message that names none,
 * and .tls.peer_name.  No I/O, no allocation beyond the message's own
 * values.
 */
#ifndef CORRAL_RECEIVED_H
#define CORRAL_RECEIVED_H

#include <stddef.h>

#include "engine/msg.h"

struct received_from {
    const char *peer; /* the sender's address (peerlen bytes); NULL: a local input */
    size_t peerlen;
    const char *tls_peer; /* the name in the client's certificate (tls_peerlen bytes); NULL: none */
    size_t tls_peerlen;
    const char *hostname; /* this host, NUL-terminated: HOST of a local message that names none */
};

/*
 * Sets SOURCEIP to the peer; HOST, when the message names none or an empty
 * one, to the peer, or for a local input to this host; .tls.peer_name to
 * the certificate's name.  Any thread may call it.
 */
void received_normalise(struct msg *m, const struct received_from *from);

#endif
