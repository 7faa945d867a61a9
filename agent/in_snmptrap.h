/*
 * in_snmptrap: the <snmp-trap> input: SNMP traps and informs (v1, v2c, v3
 * USM) received with net-snmp's library on the server's libuv loop, each
 * turned into a message by snmptrap_fmt.c.  Also its configuration: the
 * element's reading, copy and comparison (for conf.c), and the SNMPv3 keys,
 * which the process that holds secrets derives from the password files
 * (snmptrap_localize) before the engine process exists: the engine gets
 * keys localized to engine IDs, never a password.
 */
#ifndef CORRAL_IN_SNMPTRAP_H
#define CORRAL_IN_SNMPTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libxml/tree.h>

#include "engine/buf.h"

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

/* One SNMPv3 key, localized to one engine ID. */
struct snmptrap_key {
    unsigned char eid[32];
    size_t eidlen;
    unsigned char auth[64], priv[64];
    size_t authlen, privlen;
};

/* <user name= auth= auth-password-file= priv= priv-password-file= engine-id=/> */
struct snmptrap_user {
    char *name;
    char *auth, *priv;           /* protocols as snmptrapd names them (SHA, MD5, AES, DES...) */
    char *auth_file, *priv_file; /* the passwords, read by snmptrap_localize() only */
    char *engine_ids;            /* the senders' engine IDs (hex, space separated), for traps */
    int line;
    struct snmptrap_key *keys; /* set by snmptrap_localize() */
    size_t nkeys;
};

struct snmptrap_conf {
    char **communities; /* v1/v2c: accepted communities; none: v1/v2c refused */
    size_t ncommunities;
    char *engine_id; /* hex; NULL: derived from the host name (snmptrap_engine_id) */
    char *mibs;      /* MIB directories, colon separated; NULL: the system's */
    char *host_map;  /* "ADDRESS NAME" lines; NULL: none */
    int pri;         /* syslog PRI of the messages */
    double rate;     /* per source, datagrams a second; 0: no limit */
    double burst;
    struct snmptrap_user *users;
    size_t nusers;
};

/*
 * Reads an <snmp-trap> element's attributes and <user> children.  Problems
 * are appended to err, one message a line (conf.c reports each at the
 * element's file:line).
 */
struct snmptrap_conf *snmptrap_conf_read(const xmlNode *n, struct buf *err);
struct snmptrap_conf *snmptrap_conf_copy(const struct snmptrap_conf *c);
/* Alike but for the derived keys (a reload keeps an input whose users did not change). */
bool snmptrap_conf_equal(const struct snmptrap_conf *a, const struct snmptrap_conf *b);
void snmptrap_conf_free(struct snmptrap_conf *c);

/*
 * The engine ID of an input (binary, at most 32 bytes): configured, or
 * 0x80001f8804 ("net-snmp enterprise, text") followed by "corrald@" and the
 * host name, cut to 32 bytes.  Returns its length, 0 if the configured hex
 * is bad.
 */
size_t snmptrap_engine_id(const struct snmptrap_conf *c, unsigned char *out);

struct conf;
/*
 * For every SNMPv3 user of every <snmp-trap> input: reads its password
 * files and derives its keys localized to the input's engine ID (informs)
 * and to each sender engine ID of the user (traps), wiping the passwords.
 * Called where secrets may be read: before the engine process is forked.
 * Returns 0, or -1 with "file:line: message" lines in err.
 */
int snmptrap_localize(struct conf *c, struct buf *err);

#endif
