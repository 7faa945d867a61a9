/*
 * snmp_int: what the SNMP executor's files share: snmp_conf.c reads and
 * checks the configuration into a struct snmp_x, snmp.c opens the session
 * and builds, sends and renders the notifications.  Not for use outside
 * actions/snmp*.c: the executor itself is snmp_executor in executor.h.
 */
#ifndef CORRAL_SNMP_INT_H
#define CORRAL_SNMP_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "actions/executor.h"
#include "engine/buf.h"
#include "engine/nv.h"

/* Longest value sent in one OCTET STRING, the truncation marker included. */
#define VALUE_MAX  1024
#define TRUNC_MARK "...[truncated]"
/*
 * At most this many of the message's other values go into corralAlertValue,
 * and at most this many octets of them; corralAlertEvidence (evidence="yes",
 * the log lines of the alert) at most SNMP_EVIDENCE_MAX: with the fixed
 * objects and every <varbind> at their longest the notification still fits
 * in one UDP datagram (7 + 32 + 16 + 4 KiB and the encoding), so no alert is
 * too big to send.
 */
#define VALUES_MAX        32
#define VALUES_BYTES_MAX  (16 * 1024)
#define SNMP_EVIDENCE_MAX 4096
/* At most this many <varbind> elements. */
#define VARBINDS_MAX 32
/* Deliveries in flight; informs are the ones that stay in flight for long. */
#define INFLIGHT_MAX 64
/* The documentation PEN of RFC 5612, under which CORRAL-MIB is registered. */
#define DEFAULT_PEN 32473
/* SNMPv3 engine boots are counted from here (see trap_engine_time). */
#define BOOTS_EPOCH 1577836800 /* 2020-01-01T00:00:00Z */

/* A <varbind> element: adds a varbind, or replaces the default one with its OID. */
struct vb_conf {
    oid name[MAX_OID_LEN];
    size_t len;
    char type; /* s i u c a o t x, as snmptrap(1) spells them */
    struct template *value;
};

/* One varbind of a notification being built. */
struct vb {
    oid name[MAX_OID_LEN];
    size_t len;
    char type;
    const char *label;     /* MIB name for render(), or NULL */
    unsigned index;        /* instance suffix shown with the label (corralAlertValue.N) */
    struct buf bytes;      /* s, x: the octets */
    long num;              /* i, u, c, t */
    oid oval[MAX_OID_LEN]; /* o */
    size_t olen;
    in_addr_t ip; /* a, network order */
};

struct pending;
struct snmp_usm;

struct snmp_x {
    uv_loop_t *loop;
    char *name;
    char *target;
    long version; /* SNMP_VERSION_2c or SNMP_VERSION_3 */
    bool inform;
    double timeout;
    int retries;
    bool values;   /* send the other values as corralAlertValue */
    bool evidence; /* send the log lines of the alert as corralAlertEvidence */

    /* SNMPv3 */
    char *user;
    int seclevel;
    const char *auth_name, *priv_name;
    u_char engine_id[32];
    size_t engine_id_len; /* 0: discovered from the receiver (informs) */
    const char *engine_id_origin;
    struct snmp_usm *usm; /* our share of the USM entry for (engine id, user) */

    oid base[MAX_OID_LEN]; /* corralMIB */
    size_t base_len;
    struct template *trap_oid, *clear_oid; /* NULL: the MIB's notifications */
    struct vb_conf *vbs;
    size_t nvbs;
    nv_handle h_alert_id, h_severity, h_evidence;

    void *sess;
    int fd;
    uv_poll_t poll;
    uv_timer_t timer;
    bool polling;
    int handles;

    /* informs: sent and unanswered; held for discovery; finished, done() not yet called */
    struct pending *sent, *waiting, *completed, *completed_tail;
    bool engine_known;
    bool probing;      /* the engine id discovery is under way */
    char *probe_error; /* why it failed */

    bool in_after, again, closing;
    void (*closed)(void *);
    void *closed_arg;

    struct vb *vb;
    size_t nvb, capvb;
    struct buf scratch;
};

/*
 * What the session is opened with and nothing keeps afterwards: the
 * secrets (wiped once the keys are derived) and the SNMPv3 protocols.
 */
struct snmp_keys {
    char *community;             /* SNMPv2c */
    char *auth_pass, *priv_pass; /* SNMPv3, per security-level */
    const oid *auth_proto, *priv_proto;
    size_t auth_len, priv_len;
};

/* snmp_conf.c */

/*
 * Reads and checks the configuration into x (set to its defaults first) and
 * k; errors go to r.  Returns whether there were none.
 */
bool snmp_conf_read(struct snmp_x *x, const struct exconf_reader *r, struct snmp_keys *k);
/* Wipes and frees the secrets. */
void snmp_keys_free(struct snmp_keys *k);

/* snmp.c: the value syntax that a <varbind>'s template output and the configuration share */

/* A numeric OID ("1.3.6.1...", a leading dot allowed) of at least two sub-identifiers. */
bool snmp_oid_parse(const char *s, size_t n, oid *out, size_t *len);
/* Hex digits, optionally "0x"-prefixed and separated by spaces, ':' or '-'; at most max octets
 * kept. */
bool snmp_hex_parse(const char *s, size_t n, struct buf *out, size_t max);
/* Converts template output s into v's value for type; returns why it cannot, or NULL. */
const char *snmp_vb_set(char type, const char *s, size_t n, struct vb *v);

#endif
