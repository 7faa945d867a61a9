/*
 * snmptrap_fmt: what an SNMP trap or inform becomes in corral: one syslog
 * line (RFC 5424) that the daemon and `corral match` parse like any other,
 * so that traps go through classification, correlation and routes as syslog
 * messages do.  The line is
 *
 *   <PRI>1 - HOST snmptrap - - [snmp trap=".." trap_oid=".." ...] TRAP name=value ...
 *
 * MESSAGE is the trap's readable rendering (trap name, then every varbind
 * but sysUpTime.0 and snmpTrapOID.0, as name=value); the structured data
 * element "snmp" carries the same as name-value pairs (.SDATA.snmp.trap,
 * .SDATA.snmp.var.NAME, ...).  Names come from the loaded MIBs
 * (snmptrap_fmt_load_mibs), numeric OIDs where none knows them.
 *
 * Also the reading of snmptrapd's output in the format corral(1) documents
 * back into a PDU, for `corral match --snmptrapd`.
 */
#ifndef CORRAL_SNMPTRAP_FMT_H
#define CORRAL_SNMPTRAP_FMT_H

#include <stdbool.h>
#include <stddef.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "engine/buf.h"

/* Varbinds rendered per trap; those past it are cut (the caller counts the message truncated). */
#define SNMPTRAP_MAX_VARBINDS 128

struct snmptrap_origin {
    const char *host;   /* HOST: the mapped name or the agent address (never NULL) */
    const char *source; /* the UDP source address, or NULL */
    int pri;            /* syslog PRI (facility * 8 + severity) */
};

/*
 * Sets up net-snmp's library for receiving (no configuration files read,
 * nothing persisted) and loads every MIB in the directories of `dirs`
 * (colon separated; NULL: the system's, /usr/share/snmp/mibs and what
 * snmp-mibs-downloader installs, where present).  Once per process; later
 * calls return what the first did.  Returns 0, or -1 with a message in err.
 */
int snmptrap_fmt_init(const char *dirs, struct buf *err);

/*
 * Appends pdu's line to out (a trap, v1 or v2, or an inform).  False when
 * it had more varbinds than SNMPTRAP_MAX_VARBINDS (the rest cut).  A v2
 * PDU without snmpTrapOID.0 gets an empty trap name.
 */
bool snmptrap_fmt_line(struct buf *out, const netsnmp_pdu *pdu, const struct snmptrap_origin *o);

/*
 * Reads one record of snmptrapd's output written with the format of
 * corral(1) (snmptrapd -On -Oe? ... -F '%B\t%a\t%P\t%v\n' with %V set to a
 * tab) into a new PDU.  *host and *source point into line (NUL-terminated
 * there: line is changed).  NULL with a message in err if it is not one.
 */
netsnmp_pdu *snmptrap_fmt_parse_record(char *line, const char **host, const char **source,
                                       struct buf *err);

#endif
