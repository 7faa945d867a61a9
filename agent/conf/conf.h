/*
 * conf: corrald's configuration, one XML file (see corrald.conf(5) and the
 * schema etc/corrald.xsd), read into the plain structures below.  Without a
 * file, conf_default() gives the built-in configuration: UDP and TCP on
 * 127.0.0.1:5514, the shipped rules, generated messages to stdout.
 */
#ifndef CORRAL_CONF_H
#define CORRAL_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actions/exconf.h"
#include "engine/buf.h"
#include "engine/corr.h"

/* max-message-size: the default (the inputs', and corral match's), and the most it may be */
#define CONF_MESSAGE_SIZE_DEFAULT ((size_t)65536)
#define CONF_MESSAGE_SIZE_MAX     ((size_t)1 << 30)

struct snmptrap_conf;

enum conf_input_type {
    CONF_IN_UDP,
    CONF_IN_TCP,
    CONF_IN_UNIX_DGRAM,
    CONF_IN_UNIX_STREAM,
    CONF_IN_FILE,
    CONF_IN_STDIN,
    CONF_IN_TLS,       /* TCP with TLS (RFC 5425) */
    CONF_IN_SNMP_TRAP, /* SNMP traps and informs (in_snmptrap.h) */
};

enum conf_framing { CONF_FRAMING_AUTO, CONF_FRAMING_OCTET_COUNTING, CONF_FRAMING_NEWLINE };

enum conf_format { CONF_FORMAT_JSON, CONF_FORMAT_SYSLOG };

/* TLS (RFC 5425): whether and how the peer's certificate is checked. */
enum conf_tls_verify {
    CONF_TLS_VERIFY_DEFAULT, /* input: required with ca=, none without; output: required */
    CONF_TLS_VERIFY_NONE,
    CONF_TLS_VERIFY_OPTIONAL, /* input: a client may send no certificate; one it sends is checked */
    CONF_TLS_VERIFY_REQUIRED,
};

/* The TLS attributes of a <tls> input and a <forward protocol="tls"> output (see tls.h). */
struct conf_tls {
    char *cert, *key, *ca; /* PEM files; ca may be a directory (c_rehash) */
    char *allowed_names;   /* names the peer's certificate must carry (space or comma separated) */
    enum conf_tls_verify verify;
};

/* Which messages an output receives. */
enum conf_select { CONF_SELECT_ALL, CONF_SELECT_CLASSIFIED, CONF_SELECT_GENERATED };

struct conf_input {
    enum conf_input_type type;
    char *name;   /* for counters and logs; defaults to type and address */
    char *listen; /* udp, tcp: host:port */
    char *path;   /* unix sockets, file */
    enum conf_framing framing;
    uint32_t mode;              /* unix socket permissions */
    bool from_start;            /* file: read a new file from its start (else from its end) */
    char *position_file;        /* file: where its read position is kept (never NULL for a file) */
    struct conf_tls tls;        /* tls */
    struct snmptrap_conf *snmp; /* snmp-trap */
    int line;
};

enum conf_output_type { CONF_OUT_STDOUT, CONF_OUT_FILE, CONF_OUT_FORWARD };

struct conf_output {
    enum conf_output_type type;
    char *name;
    char *path; /* file */
    char *to;   /* forward: host:port */
    bool tcp;   /* forward over TCP (else UDP) */
    bool tls;   /* forward over TLS (tcp is set too) */
    struct conf_tls tls_conf;
    enum conf_format format;
    enum conf_select select;
    size_t queue; /* messages held while the receiver is slow or down */
    int line;
};

/* Absence detection (<absence>): tell when a source that has been sending goes quiet. */
struct conf_absence {
    char *host;    /* exact host, or NULL for every host */
    char *program; /* exact program, or NULL: per host only */
    double after;  /* seconds without a message */
    int line;
    double forget;    /* seconds without a message after which the source is forgotten; 0: never */
    bool any_address; /* address="any": any sender may speak for the source (not bound) */
    char *severity;   /* corral.severity of the reports; NULL: warning */
};

/*
 * A route: generated messages that match go to executors.  Matchers are
 * all optional and all must hold; nested routes refine their parent.
 */
/* <inhibit source="MATCHERS" target="MATCHERS" equal="HOST,..."/> (see agent/alerting/alerts.h) */
struct conf_inhibit {
    char *source, *target; /* label matchers (engine/labelmatch.h), checked at load */
    char **equal;          /* label names whose values source and target share */
    size_t nequal;
    bool topology; /* topology="yes": the target's HOST must sit behind the source's */
    char **ports;  /* topology-port=: the source's labels that name its port */
    size_t nports;
    int line;
};

struct conf_route {
    char **to; /* executor names */
    size_t nto;
    char *class, *rule, *tag, *filter;
    enum conf_select messages; /* which messages the route considers; default generated */
    bool cont;                 /* continue="yes": later sibling routes are tried too */
    int send_resolved; /* send-resolved="yes"/"no"; -1: as the parent route (no at the top) */
    struct conf_route *children;
    size_t nchildren;
    int line;
};

/*
 * <cluster>: this node's part in a cluster of corralds over NATS JetStream
 * (agent/cluster/cluster_node.h): inputs publish to a partitioned stream, each
 * partition is correlated by the one node that holds its lease.
 */
struct conf_cluster {
    char *nats;           /* comma-separated server URLs */
    char *name;           /* prefix of the streams and buckets; default "corral" */
    char *node;           /* this node's name; default the host name */
    size_t partitions;    /* default 64 */
    size_t replicas;      /* of the stream and the buckets; default 3 */
    double lease;         /* seconds; the failure detector */
    double retention;     /* seconds the stream keeps a message */
    size_t max_in_flight; /* publishes not yet acknowledged before inputs wait */
    char *creds;          /* NATS credentials file (JWT and seed) */
    char *user;           /* user name, with its password in password_file */
    char *password_file;
    char *ca, *cert, *key; /* TLS to the servers (PEM files) */
    int line;
};

struct conf {
    char *file; /* NULL for the built-in configuration */
    char **rules;
    int *rules_line; /* where each <rules> is in the file; 0: built in or -r */
    /* <sigma rules= mapping=>: Sigma rule paths, each with its mapping file (NULL: the shipped) */
    struct conf_sigma {
        char *rules, *mapping;
        int line;
    } * sigma;
    size_t nsigma;
    size_t nrules;
    char *state_file; /* NULL: no state kept */
    int state_line, stats_line,
        executors_line;    /* where <state>, <stats>, <executors> are; 0: not given */
    double state_interval; /* seconds between periodic saves; 0: only at shutdown */
    char *pidfile;
    char *user, *group;
    /* <daemon privsep>: split into engine and executor processes (doc/privsep.md) */
    enum conf_privsep { CONF_PRIVSEP_AUTO, CONF_PRIVSEP_YES, CONF_PRIVSEP_NO } privsep;
    int privsep_line; /* where <daemon> is; 0: not given */
    char *control_socket;
    /* <control group mode>: whom the socket is open to besides its owner (read at start) */
    char *control_group;   /* NULL: the group corrald creates it with */
    uint32_t control_mode; /* 0600, or 0660 (the default with a group) */
    int control_line;
    /* <stats external-url>: the status page as users reach it, for links; NULL: none */
    char *stats_external_url;
    char *stats_listen;         /* host:port of the Prometheus endpoint, NULL: none */
    char *stats_api_token_file; /* <stats api-token-file>: NULL, none (API writes refused) */
    char *stats_api_token; /* its contents, read with the configuration, the final newline cut */
    char *log_level;       /* error, warning, info, debug */
    char *log_to;          /* corrald's own log: stderr, journal, syslog; NULL: journal or stderr */
    /* <engine>: threads that parse, classify and correlate (0: one per core; 1: the loop
     * thread alone) and the messages queued between the inputs and them (0: the default) */
    size_t engine_workers;
    size_t engine_queue;
    size_t max_message_size;
    size_t max_connections;
    size_t max_connections_per_peer; /* per client address, per TCP input */
    double idle_timeout;
    double control_timeout; /* seconds a control connection may take to send its request */
    size_t max_contexts;
    size_t max_context_messages;
    /* correlation limits against floods (0: the engine's defaults, see corr.h) */
    size_t context_share;       /* contexts guaranteed to each rule that opens contexts */
    size_t max_context_bytes;   /* memory of one context */
    size_t max_context_memory;  /* memory of all contexts */
    size_t max_rate_buckets;    /* rate= buckets */
    size_t max_sigma_memory;    /* Sigma correlation groups' memory; 0: 256M */
    size_t max_absence_sources; /* sources <absence> tracks at most */
    struct conf_input *inputs;
    size_t ninputs;
    struct conf_output *outputs;
    size_t noutputs;
    struct conf_absence *absences;
    size_t nabsences;
    struct exconf *executors;
    size_t nexecutors;
    struct conf_route *routes;
    size_t nroutes;
    char *spool_dir; /* <executors spool="..."> : where executor queues live */
    /* <alerts>: the active alert store and silences (agent/alerting/alerts.h,
     * agent/alerting/silences.h) */
    size_t max_alerts;
    size_t max_silences;
    double silence_retention; /* seconds an ended silence is kept */
    double resolve_timeout;   /* seconds an alert not raised again stays firing; 0: forever */
    char *alert_id;           /* template of the store's alert id; NULL: the executors' default */
    size_t evidence_lines;    /* log lines an alert carries (engine/evidence.h); 0: none */
    size_t evidence_bytes;
    struct conf_inhibit *inhibits;
    size_t ninhibits;
    char *topology_file; /* <topology path=...> (agent/alerting/topology.h); NULL: none */
    int topology_line;
    struct conf_cluster *cluster; /* NULL: a node of its own */
    /* "file:line: warning: ..." lines (deprecated spellings), NULL: none; the caller logs them */
    char *warnings;
};

/* etc/corrald.xsd, built into the program (conf_xsd.c is generated from it by make). */
extern const char conf_schema_xsd[];
extern const size_t conf_schema_xsd_len;

/* The built-in configuration; rules_dir is where the shipped rules are. */
struct conf *conf_default(const char *rules_dir);
/*
 * Reads and validates a configuration file against schema (a file name, or
 * NULL for the schema built into the program, so that validation does not
 * depend on where the program runs or is installed).  On error returns NULL
 * and writes "file:line: message" lines to err.
 */
struct conf *conf_load(const char *path, const char *schema, struct buf *err);
void conf_free(struct conf *c);
/* The correlation limits of <limits> into o (corrald's one engine, and corral match -c). */
void conf_corr_limits(const struct conf *c, struct corr_opts *o);

/* Adds a rules path; line is the <rules> element's (0: built in or from -r). */
void conf_add_rules(struct conf *c, const char *path, int line);
/*
 * Whether rules path i can be read (a readable file or directory); if not,
 * writes "FILE:LINE: rules path P: why" (the <rules> element's line) to err.
 */
bool conf_rules_readable(const struct conf *c, size_t i, struct buf *err);

/* Splits "host:port", "[v6]:port" or ":port"; returns false if malformed. */
bool conf_split_address(const char *addr, char *host, size_t hostlen, int *port);

const char *conf_input_type_name(enum conf_input_type t);

/*
 * Whether a reload keeps a running input or output: true when the two are
 * configured alike.  Where they were written (line) does not count, nor does
 * a file input's position-file: a kept input goes on with the one it has.
 */
bool conf_input_equal(const struct conf_input *a, const struct conf_input *b);
bool conf_output_equal(const struct conf_output *a, const struct conf_output *b);
/*
 * A deep copy of an input's configuration, for an input that outlives its
 * struct conf; an input without a name is named after its type and address.
 * conf_input_clear() frees the copy's strings (not ci itself).
 */
void conf_input_copy(struct conf_input *dst, const struct conf_input *src);
void conf_input_clear(struct conf_input *ci);
/* The same for the TLS attributes. */
void conf_tls_copy(struct conf_tls *dst, const struct conf_tls *src);
void conf_tls_clear(struct conf_tls *t);

#endif
