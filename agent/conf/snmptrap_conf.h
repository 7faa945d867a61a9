/*
 * snmptrap_conf: the configuration of an <snmp-trap> input: the element's
 * reading, copy and comparison (for conf.c), and the SNMPv3 keys, which the
 * process that holds secrets derives from the password files
 * (snmptrap_localize) before the engine process exists: the engine gets
 * keys localized to engine IDs, never a password.
 */
#ifndef CORRAL_SNMPTRAP_CONF_H
#define CORRAL_SNMPTRAP_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include <libxml/tree.h>

#include "engine/buf.h"

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
