/*
 * connlimits: how many connections the control socket and the stats
 * endpoint hold open at once, and so the descriptors they may use.  Apart
 * from control.h and http.h so that the stream inputs (in_stream.c), which
 * leave that many descriptors free for them under a connection flood, need
 * neither endpoint.
 */
#ifndef CORRAL_CONNLIMITS_H
#define CORRAL_CONNLIMITS_H

/* Connections the control socket holds open at once; a new one closes the oldest. */
#define CONTROL_MAX_CONNS 8
/* Connections the stats endpoint holds open at once; a new one closes the oldest. */
#define HTTP_MAX_CONNS 16
/* Descriptors the listener may use at most: HTTP_MAX_CONNS, and those closed but not yet reaped. */
#define HTTP_MAX_FDS (3 * HTTP_MAX_CONNS)

#endif
