/*
 * in_snmptrap: the <snmp-trap> input: SNMP traps and informs (v1, v2c, v3
 * USM) received with net-snmp's library on the server's libuv loop, each
 * turned into a message by snmptrap_fmt.c (its configuration and keys:
 * snmptrap_conf.h).  Opened by input_open(); here, the reasons it counts.
 */
#ifndef CORRAL_IN_SNMPTRAP_H
#define CORRAL_IN_SNMPTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a datagram did not become a message (corral_snmp_trap_dropped_total's reason label). */
enum snmptrap_drop {
    SNMPTRAP_DROP_BAD_BER,           /* not BER, or not an SNMP message */
    SNMPTRAP_DROP_BAD_VERSION,       /* an SNMP version it does not speak */
    SNMPTRAP_DROP_BAD_COMMUNITY,     /* v1/v2c with a community not in the list */
    SNMPTRAP_DROP_UNKNOWN_USER,      /* v3: a user it does not know */
    SNMPTRAP_DROP_UNKNOWN_ENGINE_ID, /* v3: no key for that engine ID (and inform discovery) */
    SNMPTRAP_DROP_WRONG_DIGEST,      /* v3: authentication failed */
    SNMPTRAP_DROP_DECRYPTION,        /* v3: cannot decrypt */
    SNMPTRAP_DROP_TIME_WINDOW,       /* v3: outside the time window */
    SNMPTRAP_DROP_SEC_LEVEL,         /* v3: a security level the user does not have */
    SNMPTRAP_DROP_INVALID,           /* v3: an invalid message or security model */
    SNMPTRAP_DROP_NOT_NOTIFICATION,  /* a PDU that is neither a trap nor an inform */
    SNMPTRAP_DROP_RATE,              /* over the per-source rate */
    SNMPTRAP_DROP_N
};
const char *snmptrap_drop_name(int reason);

#endif
