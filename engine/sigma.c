/*
 * sigma: Sigma detection rules and their mapping file, loaded with libyaml
 * into match trees, and their evaluation on messages; correlation rules,
 * linked to the rules they refer to, and their groups' windows (see
 * sigma.h).
 */
#include "engine/sigma.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "engine/base64.h"
#include "engine/buf.h"
#include "engine/hash.h"
#include "engine/relit.h"
#include "engine/rematch.h"
#include "engine/sigma_cond.h"
#include "engine/tags.h"
#include "engine/xalloc.h"

/* Wildcards in a compiled string pattern: bytes a Sigma value may not hold. */
#define W_STAR 0x01
#define W_ONE  0x02

/* A rule file larger than this is refused unread. */
#define MAX_FILE (4u << 20)
/* Most values one field may list, selections one rule may have (bounds for hostile input). */
#define MAX_VALUES 65536
#define MAX_DETS   512

enum shape { S_EXACT, S_PREFIX, S_SUFFIX, S_CONTAINS, S_GLOB };
enum vkind { V_STR, V_RE, V_CIDR, V_NUM, V_EXISTS, V_NULL, V_FIELDREF };
enum cmp { C_LT, C_LTE, C_GT, C_GTE };

struct sval {
    enum vkind kind;
    uint32_t group; /* the value as written this variant comes from (|all: every group) */
    /* V_STR */
    enum shape shape;
    bool cased;
    char *pat; /* lower case unless cased; W_STAR, W_ONE as wildcards */
    size_t plen;
    char *lit; /* S_PREFIX, S_SUFFIX, S_CONTAINS: the literal without its stars */
    size_t llen;
    uint32_t lid;  /* the literal scan's id + 1 (see below) of S_CONTAINS's literal (then the
                      scan alone answers) or of S_GLOB's longest literal run or V_RE's required
                      literal (which must occur) */
    uint32_t scan; /* the scan of the field, with lid */
    /* V_RE (lid: of the literal it cannot match without, relit.h) */
    pcre2_code *re;
    /* V_CIDR */
    int family;
    unsigned char addr[16];
    unsigned bits;
    /* V_NUM */
    enum cmp cmp;
    double num;
    /* V_EXISTS */
    bool exists;
    /* V_FIELDREF: the field whose value in the same message this field's is compared with, in
     * shape (S_EXACT, S_PREFIX: starts with it, S_SUFFIX, S_CONTAINS), cased or not */
    nv_handle ref;
};

struct sfield {
    nv_handle h;
    bool all;
    uint32_t ngroups;
    struct sval *vals;
    size_t nvals;
};

/* One map of a selection: AND over its fields. */
struct salt {
    struct sfield *fields;
    size_t nfields;
};

/* A detection identifier: OR over its maps. */
struct sdet {
    char *name;
    struct salt *alts;
    size_t nalts;
};

/* One logsource of the mapping file and what it requires of a message. */
struct lsmap {
    char *product, *category, *service; /* NULL: absent; "*": any */
    char **programs;
    size_t nprograms;
    uint32_t facilities; /* bit per facility; 0: any */
    char **classes;
    size_t nclasses;
    char **rules;
    size_t nrules;
    struct fmap *fields; /* this logsource's own field names, before the global ones */
    size_t nfields;
    int line;
};

struct fmap {
    char *name;
    nv_handle h;
};

struct sigma_impl {
    uint32_t index; /* in the set */
    /* gated: the rule cannot match unless the scan `gate` found one of its literals */
    bool gated;
    uint32_t gate;
    const struct lsmap *ls;
    size_t ls_index;
    struct sdet *dets;
    size_t ndets;
    char **names;
    struct sigma_cond *cond;
    nv_handle *labels;
    size_t nlabels;
    char *alert_id;     /* sigma/ID/ */
    char *event;        /* sigma.ID */
    char *name;         /* the rule's name: attribute, by which correlations may refer to it */
    struct scorr *corr; /* a correlation rule: no logsource nor detection */
    /* the correlations this rule feeds (corr_link_all()), and whether its own alert is left out:
     * every correlation that refers to it has generate: false */
    struct feed *feeds;
    size_t nfeeds;
    bool quiet;
};

/* ---- correlation rules ---- */

/*
 * Bounds of a correlation's state (doc/corral-sigma.5), per engine shard.
 * The groups of all correlations hold at most the scratch's memory budget
 * (sigma_scratch_set_memory()), split in equal shares, one per correlation
 * rule: a flood of spoofed group-by values under one correlation fills its
 * own share only.  A correlation whose share is full makes room by evicting
 * its own groups furthest from firing (group_evict()), never by refusing a
 * new group while it holds any other.
 */
#define MEMORY_DEFAULT ((size_t)256 << 20)
#define MAX_EVENTS     65536 /* times (value_percentile: events) one group keeps */
#define MAX_DISTINCT   1024  /* distinct values one value_count group keeps */
#define MAX_CHAIN      8     /* correlations chained on one another */
/* Groups one eviction looks at, from the least recently fed, and evictions one event may make. */
#define EVICT_SAMPLE 64
#define EVICT_ROUNDS 64

enum ctype {
    CT_EVENT_COUNT,
    CT_VALUE_COUNT,
    CT_TEMPORAL,
    CT_TEMPORAL_ORDERED,
    CT_VALUE_SUM,
    CT_VALUE_AVG,
    CT_VALUE_PERCENTILE
};
enum cop { CO_GT, CO_GTE, CO_LT, CO_LTE, CO_EQ, CO_NEQ };

struct ccond {
    enum cop op;
    double v;
};

struct calias {
    char *alias, *rule, *field;
};

/* Rule r feeds position pos of correlation corr (an index in sigma.corrs). */
struct feed {
    uint32_t corr, pos;
};

struct scorr {
    enum ctype type;
    char **refs;
    int *ref_lines;
    size_t nrefs;
    char **group;
    size_t ngroup;
    struct calias *aliases;
    size_t naliases;
    uint64_t span; /* ms */
    struct ccond conds[6];
    size_t nconds;
    char *field; /* value_count */
    bool generate;
    /* linked (corr_link_all()) */
    struct sigma_rule **ref_rules;
    nv_handle *group_h; /* [g * nrefs + p]: what group-by g reads in an event of refs[p] */
    nv_handle *field_h; /* [p] */
    nv_handle *label_h; /* [g]: the alert's label */
};

/*
 * The literal scan: every case-insensitive |contains literal of 3 bytes or
 * more (keywords included) is found in one pass over its field, whatever
 * the number of rules: each position's 3 lower-case bytes are looked up in
 * a bit set and, on a hit, in a hash table of the literals that start with
 * them, which are then compared.  A rule whose condition cannot hold unless
 * one of its literals occurs (sigma_cond_eval3) is skipped without being
 * evaluated when none did.
 */
struct lit {
    char *s; /* lower case */
    uint32_t len;
    uint32_t next;   /* the next literal with the same first 3 bytes; UINT32_MAX: none */
    uint32_t *rules; /* gated rules with this literal */
    uint32_t nrules;
};

struct scan {
    nv_handle h;
    uint32_t *keys;  /* 3-byte key + 1; 0: empty slot */
    uint32_t *heads; /* the first literal of a key */
    uint32_t cap, n;
    bool gates;          /* some rule is gated on it: scanned first for every message */
    uint64_t bits[1024]; /* 65,536 bits: a hash of each key */
};

struct sigma {
    struct lit *lits;
    size_t nlits, caplits;
    struct scan *scans;
    size_t nscans;
    struct sigma_rule **rules;
    size_t nrules, caprules;
    uint32_t *ungated; /* the rules evaluated for every message their logsource holds for */
    size_t nungated, capungated;
    size_t nrefused;
    struct lsmap *ls;
    size_t nls;
    struct fmap *fields;
    size_t nfields;
    bool mapped;
    struct sigma_diag *diags;
    size_t ndiags, capdiags, nerrors;
    char **files;
    size_t nfiles;
    struct sigma_rule **corrs; /* the correlation rules, linked to what they refer to */
    size_t ncorrs;
    int loading; /* inside sigma_load(): corr_link_all() when it returns */
};

struct sigma_scratch {
    const struct sigma *s;
    const struct msg *m;
    uint32_t gen;       /* this message's number: the arrays below hold it where set for it */
    uint32_t *lit_gen;  /* literal found */
    uint32_t *scan_gen; /* scan done */
    uint32_t *rule_gen; /* gated rule with a literal found */
    size_t nlit, nscan, nrule;
    uint32_t *cand; /* gated rules a literal of which was found in this message */
    size_t ncand, capcand;
    pcre2_match_data *md;
    signed char *ls; /* per logsource: -1 not known yet for this message, 0, 1 */
    size_t nls;
    /* the correlations' state: groups by correlation and group-by values */
    uint64_t now; /* ms */
    struct cgroup **gtab;
    size_t ngtab, ngroups;
    uint64_t dropped, evicted;
    /* the memory budget, its equal share per correlation, and each correlation's groups, in the
     * order they were last fed (the least recent first) */
    size_t budget, share, bytes;
    struct cshare *shares;
    size_t nshares;
    uint64_t swept; /* when the expired groups at the lists' heads were last dropped */
    /* a group dropped with the arrays a new one starts with, for the next new group: a flood of
     * new group-by values, each evicting an old one, allocates nothing */
    struct cgroup *spare;
    struct buf key;
    const struct cgroup *fired; /* the group of the correlation being reported */
};

/* One group of a correlation: the events of one set of group-by values in its timespan. */
struct cgroup {
    struct cgroup *next;
    struct cgroup *lprev, *lnext; /* in its correlation's list, by the time it was last fed */
    size_t bytes;                 /* the memory it holds, against its correlation's share */
    uint32_t corr;
    uint64_t hash, last;
    char *key; /* the group-by values, each as a 4-byte length and its bytes */
    size_t keylen, keycap;
    uint64_t *ts;  /* event_count, value_sum, value_avg, value_percentile: a ring of event times */
    uint32_t *cn;  /* event_count, value_sum, value_avg: the events at each time of the ring (the
                      events of one millisecond, as of one syslog second, take one slot) */
    size_t events; /* in the ring (of cn) */
    double *nums; /* value_sum, value_avg: the sum of the field's values at each time of the ring */
    uint64_t *hs; /* value_percentile: the hash of the field's value of each event of the ring */
    uint64_t *tk; /* value_percentile: the ring's hashes, open addressing, 2 * cap slots */
    uint32_t *tn; /* the events of the ring with the hash of each slot; 0: free */
    double sum;   /* of nums */
    size_t head, n, cap;
    struct cval *vals; /* value_count */
    size_t nvals;
    uint64_t *seen; /* temporal: per reference, its last time + 1; temporal_ordered: per
                       position, the start + 1 of the chain of events in order up to it */
};

/* The groups of one correlation and their memory. */
struct cshare {
    struct cgroup *head, *tail;
    size_t bytes, groups;
};

struct cval {
    char *v;
    size_t n;
    uint64_t t;
};

/* ---- diagnostics ---- */

static const char *
intern_file(struct sigma *s, const char *file)
{
    size_t i;

    for (i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i], file) == 0) return s->files[i];
    s->files = xrealloc(s->files, (s->nfiles + 1) * sizeof(*s->files));
    return s->files[s->nfiles++] = xstrdup(file);
}

static void __attribute__((format(printf, 5, 6)))
diag(struct sigma *s, enum sigma_diag_level level, const char *file, int line, const char *fmt, ...)
{
    struct sigma_diag *d;
    va_list ap;
    char text[512];

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    s->diags = xgrow(s->diags, &s->capdiags, s->ndiags + 1, sizeof(*s->diags));
    d = &s->diags[s->ndiags++];
    d->level = level;
    d->file = intern_file(s, file);
    d->line = line;
    d->text = xstrdup(text);
    if (level == SIGMA_ERROR) s->nerrors++;
}

size_t
sigma_ndiags(const struct sigma *s)
{
    return s->ndiags;
}

const struct sigma_diag *
sigma_diag_at(const struct sigma *s, size_t i)
{
    return &s->diags[i];
}

size_t
sigma_nerrors(const struct sigma *s)
{
    return s->nerrors;
}

void
sigma_print_diags(const struct sigma *s, FILE *out)
{
    size_t i;

    for (i = 0; i < s->ndiags; i++)
        fprintf(out, "%s:%d: %s: %s\n", s->diags[i].file, s->diags[i].line,
                s->diags[i].level == SIGMA_ERROR ? "error" : "warning", s->diags[i].text);
}

/* ---- YAML helpers ---- */

static int
line_of(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}

static bool
is_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE;
}

static const char *
scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* A plain null, ~ or empty scalar: YAML's null. */
static bool
is_null(const yaml_node_t *n)
{
    const char *v;

    if (!is_scalar(n) || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
    v = scalar(n);
    return !*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
           strcmp(v, "NULL") == 0;
}

static yaml_node_t *
map_get(yaml_document_t *doc, const yaml_node_t *map, const char *key)
{
    yaml_node_pair_t *p;

    if (!map || map->type != YAML_MAPPING_NODE) return NULL;
    for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (is_scalar(k) && strcmp(scalar(k), key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

/* The strings of a scalar or of a list of scalars; false if anything else. */
static bool
str_list(yaml_document_t *doc, const yaml_node_t *n, char ***out, size_t *nout)
{
    yaml_node_item_t *it;

    if (is_scalar(n)) {
        *out = xrealloc(*out, (*nout + 1) * sizeof(**out));
        (*out)[(*nout)++] = xstrdup(scalar(n));
        return true;
    }
    if (!n || n->type != YAML_SEQUENCE_NODE) return false;
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *v = yaml_document_get_node(doc, *it);
        if (!is_scalar(v)) return false;
        *out = xrealloc(*out, (*nout + 1) * sizeof(**out));
        (*out)[(*nout)++] = xstrdup(scalar(v));
    }
    return true;
}

static void
free_strs(char **v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) free(v[i]);
    free(v);
}

static char *
read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    struct buf b = {0};
    char chunk[65536];
    size_t n;

    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return NULL;
    }
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (b.len + n > MAX_FILE) {
            snprintf(err, errlen, "larger than %u bytes", MAX_FILE);
            fclose(f);
            buf_free(&b);
            return NULL;
        }
        buf_append(&b, chunk, n);
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read: %s", strerror(errno));
        fclose(f);
        buf_free(&b);
        return NULL;
    }
    fclose(f);
    *len = b.len;
    if (!b.p) return xstrdup("");
    return b.p;
}

/* ---- the mapping file ---- */

static const char *const facility_names[] = {
    "kern",   "user",   "mail",     "daemon", "auth",   "syslog",   "lpr",     "news",
    "uucp",   "cron",   "authpriv", "ftp",    "ntp",    "security", "console", "solaris-cron",
    "local0", "local1", "local2",   "local3", "local4", "local5",   "local6",  "local7",
};

static bool
field_map_load(struct sigma *s, const char *file, yaml_document_t *doc, const yaml_node_t *n,
               struct fmap **out, size_t *nout)
{
    yaml_node_pair_t *p;

    if (!n) return true;
    if (n->type != YAML_MAPPING_NODE) {
        diag(s, SIGMA_ERROR, file, line_of(n), "fields: a map of Sigma name: corral name expected");
        return false;
    }
    for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        if (!is_scalar(k) || !is_scalar(v) || !*scalar(v)) {
            diag(s, SIGMA_ERROR, file, line_of(k), "fields: each entry must be name: value name");
            return false;
        }
        *out = xrealloc(*out, (*nout + 1) * sizeof(**out));
        (*out)[*nout].name = xstrdup(scalar(k));
        (*out)[*nout].h = nv_intern_str(scalar(v));
        (*nout)++;
    }
    return true;
}

static bool
ls_load(struct sigma *s, const char *file, yaml_document_t *doc, const yaml_node_t *n,
        struct lsmap *l)
{
    static const char *const known[] = {"product",  "category", "service", "program",
                                        "facility", "class",    "rule",    "fields"};
    yaml_node_pair_t *p;
    char **fac = NULL;
    size_t nfac = 0, i, j;

    memset(l, 0, sizeof(*l));
    l->line = line_of(n);
    if (n->type != YAML_MAPPING_NODE) {
        diag(s, SIGMA_ERROR, file, line_of(n), "logsources: each entry must be a map");
        return false;
    }
    for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        for (i = 0; i < sizeof(known) / sizeof(*known); i++)
            if (is_scalar(k) && strcmp(scalar(k), known[i]) == 0) break;
        if (i == sizeof(known) / sizeof(*known)) {
            diag(s, SIGMA_ERROR, file, line_of(k), "logsources: unknown key '%s'",
                 is_scalar(k) ? scalar(k) : "?");
            return false;
        }
    }
#define STR(key, dst)                                                                              \
    do {                                                                                           \
        yaml_node_t *v_ = map_get(doc, n, key);                                                    \
        if (v_ && !is_scalar(v_)) {                                                                \
            diag(s, SIGMA_ERROR, file, line_of(v_), "logsources: %s must be a string", key);       \
            return false;                                                                          \
        }                                                                                          \
        if (v_) dst = xstrdup(scalar(v_));                                                         \
    } while (0)
#define LIST(key, dst, ndst)                                                                       \
    do {                                                                                           \
        yaml_node_t *v_ = map_get(doc, n, key);                                                    \
        if (v_ && !str_list(doc, v_, &dst, &ndst)) {                                               \
            diag(s, SIGMA_ERROR, file, line_of(v_), "logsources: %s must be a string or a list",   \
                 key);                                                                             \
            return false;                                                                          \
        }                                                                                          \
    } while (0)
    STR("product", l->product);
    STR("category", l->category);
    STR("service", l->service);
    LIST("program", l->programs, l->nprograms);
    LIST("class", l->classes, l->nclasses);
    LIST("rule", l->rules, l->nrules);
    LIST("facility", fac, nfac);
#undef STR
#undef LIST
    for (i = 0; i < nfac; i++) {
        for (j = 0; j < sizeof(facility_names) / sizeof(*facility_names); j++)
            if (strcmp(fac[i], facility_names[j]) == 0) break;
        if (j == sizeof(facility_names) / sizeof(*facility_names)) {
            diag(s, SIGMA_ERROR, file, l->line, "logsources: unknown facility '%s'", fac[i]);
            free_strs(fac, nfac);
            return false;
        }
        l->facilities |= 1u << j;
    }
    free_strs(fac, nfac);
    if (!l->product && !l->category && !l->service) {
        diag(s, SIGMA_ERROR, file, l->line,
             "logsources: an entry needs product, category or service");
        return false;
    }
    return field_map_load(s, file, doc, map_get(doc, n, "fields"), &l->fields, &l->nfields);
}

static void
ls_free(struct lsmap *l)
{
    size_t i;

    free(l->product);
    free(l->category);
    free(l->service);
    free_strs(l->programs, l->nprograms);
    free_strs(l->classes, l->nclasses);
    free_strs(l->rules, l->nrules);
    for (i = 0; i < l->nfields; i++) free(l->fields[i].name);
    free(l->fields);
}

int
sigma_load_mapping_memory(struct sigma *s, const char *name, const char *text, size_t len)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_node_t *root, *n;
    int rc = -1;
    size_t before = s->nerrors;

    name = intern_file(s, name);
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        diag(s, SIGMA_ERROR, name, (int)parser.problem_mark.line + 1, "YAML: %s",
             parser.problem ? parser.problem : "syntax error");
        yaml_parser_delete(&parser);
        return -1;
    }
    root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        diag(s, SIGMA_ERROR, name, root ? line_of(root) : 1,
             "the mapping file must be a map with logsources and fields");
        goto out;
    }
    if ((n = map_get(&doc, root, "logsources"))) {
        yaml_node_item_t *it;
        if (n->type != YAML_SEQUENCE_NODE) {
            diag(s, SIGMA_ERROR, name, line_of(n), "logsources: a list expected");
            goto out;
        }
        for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            struct lsmap l;
            if (!ls_load(s, name, &doc, yaml_document_get_node(&doc, *it), &l)) {
                ls_free(&l);
                goto out;
            }
            s->ls = xrealloc(s->ls, (s->nls + 1) * sizeof(*s->ls));
            s->ls[s->nls++] = l;
        }
    }
    if (!field_map_load(s, name, &doc, map_get(&doc, root, "fields"), &s->fields, &s->nfields))
        goto out;
    s->mapped = true;
    rc = s->nerrors > before ? -1 : 0;
out:
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

int
sigma_load_mapping(struct sigma *s, const char *file)
{
    char err[256];
    size_t len;
    char *text = read_file(file, &len, err, sizeof(err));
    int rc;

    if (!text) {
        diag(s, SIGMA_ERROR, file, 0, "mapping file: %s", err);
        return -1;
    }
    rc = sigma_load_mapping_memory(s, file, text, len);
    free(text);
    return rc;
}

/* ---- compiling values ---- */

/* Why a rule is refused; the first reason wins. */
struct refusal {
    char text[400];
    int line;
    bool set;
    size_t work; /* values and fields compiled: YAML aliases can repeat a large node many times */
};

static void __attribute__((format(printf, 3, 4)))
refuse(struct refusal *r, int line, const char *fmt, ...)
{
    va_list ap;

    if (r->set) return;
    r->set = true;
    r->line = line;
    va_start(ap, fmt);
    vsnprintf(r->text, sizeof(r->text), fmt, ap);
    va_end(ap);
}

/* Most values and fields one rule may compile (aliases included), a bound for hostile input. */
#define MAX_WORK 200000

static bool
over_budget(struct refusal *r, int line)
{
    if (++r->work <= MAX_WORK) return false;
    refuse(r, line, "rule too large: more than %d values and fields", MAX_WORK);
    return true;
}

static unsigned char
lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

enum mod {
    M_CONTAINS = 1 << 0,
    M_STARTS = 1 << 1,
    M_ENDS = 1 << 2,
    M_ALL = 1 << 3,
    M_RE = 1 << 4,
    M_CIDR = 1 << 5,
    M_B64 = 1 << 6,
    M_B64OFF = 1 << 7,
    M_WINDASH = 1 << 8,
    M_EXISTS = 1 << 9,
    M_LT = 1 << 10,
    M_LTE = 1 << 11,
    M_GT = 1 << 12,
    M_GTE = 1 << 13,
    M_CASED = 1 << 14,
    M_RE_I = 1 << 15,
    M_RE_M = 1 << 16,
    M_RE_S = 1 << 17,
    M_FIELDREF = 1 << 18,
};

static const struct {
    const char *name;
    unsigned bit;
} mods[] = {
    {"contains", M_CONTAINS},
    {"startswith", M_STARTS},
    {"endswith", M_ENDS},
    {"all", M_ALL},
    {"re", M_RE},
    {"cidr", M_CIDR},
    {"base64", M_B64},
    {"base64offset", M_B64OFF},
    {"fieldref", M_FIELDREF},
    {"windash", M_WINDASH},
    {"exists", M_EXISTS},
    {"lt", M_LT},
    {"lte", M_LTE},
    {"gt", M_GT},
    {"gte", M_GTE},
    {"cased", M_CASED},
    {"i", M_RE_I},
    {"m", M_RE_M},
    {"s", M_RE_S},
};

/* The Sigma string v (escapes and wildcards) into a pattern: literal bytes, W_STAR, W_ONE. */
static bool
sigma_string(const char *v, bool cased, struct buf *out, struct refusal *r, int line)
{
    const unsigned char *p = (const unsigned char *)v;

    for (; *p; p++) {
        unsigned char c = *p;
        if (c == W_STAR || c == W_ONE) {
            refuse(r, line, "value holds control character 0x%02x", c);
            return false;
        }
        if (c == '\\' && (p[1] == '*' || p[1] == '?' || p[1] == '\\')) {
            c = *++p;
        } else if (c == '*') {
            c = W_STAR;
        } else if (c == '?') {
            c = W_ONE;
        }
        if (!cased) c = lower(c);
        buf_append(out, &c, 1);
    }
    return true;
}

static void
shape_value(struct sval *v)
{
    const char *p = v->pat;
    size_t n = v->plen, i, lead = 0, trail = 0, inner = 0;

    for (i = 0; i < n; i++)
        if (p[i] == W_ONE) break;
    while (lead < n && p[lead] == W_STAR) lead++;
    while (trail < n - lead && p[n - 1 - trail] == W_STAR) trail++;
    for (i = lead; i < n - trail; i++)
        if (p[i] == W_STAR || p[i] == W_ONE) inner++;
    if (inner) {
        v->shape = S_GLOB;
        return;
    }
    v->lit = xmemdup(p + lead, n - lead - trail + 1);
    v->llen = n - lead - trail;
    v->lit[v->llen] = '\0';
    v->shape = !lead && !trail ? S_EXACT : lead && trail ? S_CONTAINS : lead ? S_SUFFIX : S_PREFIX;
}

static void
add_val(struct sfield *f, struct sval *v)
{
    f->vals = xrealloc(f->vals, (f->nvals + 1) * sizeof(*f->vals));
    f->vals[f->nvals++] = *v;
}

static uint32_t
key3(const char *p)
{
    return (uint32_t)(unsigned char)p[0] << 16 | (uint32_t)(unsigned char)p[1] << 8 |
           (unsigned char)p[2];
}

static uint32_t
key_hash(uint32_t k)
{
    return (k * 0x9e3779b1u) >> 16;
}

/* The slot of key k in the scan's table (its own, or the empty one it would take). */
static uint32_t
slot_of(const struct scan *sc, uint32_t k)
{
    uint32_t i = key_hash(k) & (sc->cap - 1);

    while (sc->keys[i] && sc->keys[i] != k + 1) i = (i + 1) & (sc->cap - 1);
    return i;
}

static void
scan_grow(struct scan *sc)
{
    uint32_t *keys = sc->keys, *heads = sc->heads, cap = sc->cap, i;

    sc->cap = cap ? cap * 2 : 64;
    sc->keys = xcalloc(sc->cap, sizeof(*sc->keys));
    sc->heads = xcalloc(sc->cap, sizeof(*sc->heads));
    for (i = 0; i < cap; i++) {
        uint32_t j;
        if (!keys[i]) continue;
        j = slot_of(sc, keys[i] - 1);
        sc->keys[j] = keys[i];
        sc->heads[j] = heads[i];
    }
    free(keys);
    free(heads);
}

/* The id of literal p (lower case, 3 bytes or more) in the scan of field h, added if new. */
static uint32_t
lit_register(struct sigma *s, nv_handle h, const char *p, size_t len, uint32_t *scan)
{
    struct scan *sc;
    uint32_t i, k = key3(p), slot, id;

    for (i = 0; i < s->nscans; i++)
        if (s->scans[i].h == h) break;
    if (i == s->nscans) {
        s->scans = xrealloc(s->scans, (s->nscans + 1) * sizeof(*s->scans));
        memset(&s->scans[s->nscans], 0, sizeof(*s->scans));
        s->scans[s->nscans++].h = h;
    }
    *scan = i;
    sc = &s->scans[i];
    if (!sc->cap || (sc->n + 1) * 2 > sc->cap) scan_grow(sc);
    slot = slot_of(sc, k);
    if (sc->keys[slot])
        for (id = sc->heads[slot]; id != UINT32_MAX; id = s->lits[id].next)
            if (s->lits[id].len == len && memcmp(s->lits[id].s, p, len) == 0) return id;
    s->lits = xgrow(s->lits, &s->caplits, s->nlits + 1, sizeof(*s->lits));
    id = (uint32_t)s->nlits++;
    s->lits[id].s = xmemdup(p, len);
    s->lits[id].len = (uint32_t)len;
    s->lits[id].rules = NULL;
    s->lits[id].nrules = 0;
    if (sc->keys[slot]) {
        s->lits[id].next = sc->heads[slot];
    } else {
        s->lits[id].next = UINT32_MAX;
        sc->keys[slot] = k + 1;
        sc->n++;
    }
    sc->heads[slot] = id;
    sc->bits[key_hash(k) >> 6 & 1023] |= 1ull << (key_hash(k) & 63);
    return id;
}

/* One string variant (Sigma syntax, or a literal when literal is set) as a value of f. */
static bool
add_string(struct sigma *s, struct sfield *f, const char *v, size_t vlen, bool literal, unsigned m,
           uint32_t group, struct refusal *r, int line)
{
    struct sval sv = {0};
    struct buf b = {0};
    size_t i;

    sv.kind = V_STR;
    sv.group = group;
    sv.cased = (m & M_CASED) != 0;
    if (m & (M_CONTAINS | M_ENDS)) buf_append(&b, "\x01", 1);
    if (literal) {
        for (i = 0; i < vlen; i++) {
            unsigned char c = (unsigned char)v[i];
            if (!sv.cased) c = lower(c);
            buf_append(&b, &c, 1);
        }
    } else if (!sigma_string(v, sv.cased, &b, r, line)) {
        buf_free(&b);
        return false;
    }
    if (m & (M_CONTAINS | M_STARTS)) buf_append(&b, "\x01", 1);
    sv.plen = b.len;
    sv.pat = b.p ? b.p : xstrdup("");
    shape_value(&sv);
    if (sv.shape == S_CONTAINS && !sv.cased && sv.llen >= 3) {
        sv.lid = lit_register(s, f->h, sv.lit, sv.llen, &sv.scan) + 1;
    } else if (sv.shape == S_GLOB && !sv.cased) {
        /* its longest literal run must occur for the pattern to match: the scan looks for it */
        size_t best = 0, at = 0, run = 0;
        for (i = 0; i <= sv.plen; i++) {
            if (i < sv.plen && sv.pat[i] != W_STAR && sv.pat[i] != W_ONE) {
                run++;
                continue;
            }
            if (run > best) {
                best = run;
                at = i - run;
            }
            run = 0;
        }
        if (best >= 3) sv.lid = lit_register(s, f->h, sv.pat + at, best, &sv.scan) + 1;
    }
    add_val(f, &sv);
    return true;
}

/* Sigma's unescaped form of v, refused when it holds a wildcard (base64 of a wildcard means
 * nothing). */
static bool
unescape_plain(const char *v, struct buf *out, struct refusal *r, int line)
{
    for (; *v; v++) {
        if (*v == '\\' && (v[1] == '*' || v[1] == '?' || v[1] == '\\')) {
            v++;
        } else if (*v == '*' || *v == '?') {
            refuse(r, line, "base64 of a value with wildcards");
            return false;
        }
        buf_append(out, v, 1);
    }
    return true;
}

static bool
add_base64(struct sigma *s, struct sfield *f, const char *v, unsigned m, uint32_t group,
           struct refusal *r, int line)
{
    struct buf plain = {0}, enc = {0};
    bool ok = unescape_plain(v, &plain, r, line);
    unsigned mm = m & ~(unsigned)M_CASED;
    int i;

    mm |= M_CASED; /* base64 is case-sensitive by nature */
    if (ok && !(m & M_B64OFF)) {
        base64_encode(&enc, plain.p ? plain.p : "", plain.len);
        ok = add_string(s, f, enc.p ? enc.p : "", enc.len, true, mm, group, r, line);
    }
    for (i = 0; ok && (m & M_B64OFF) && i < 3; i++) {
        static const size_t start[3] = {0, 2, 3};
        static const size_t cut[3] = {0, 3, 2};
        struct buf in = {0};
        size_t e, s0 = start[i], c = cut[(plain.len + (size_t)i) % 3];
        buf_append(&in, "  ", (size_t)i);
        buf_append(&in, plain.p ? plain.p : "", plain.len);
        buf_reset(&enc);
        base64_encode(&enc, in.p, in.len);
        buf_free(&in);
        e = enc.len > c ? enc.len - c : 0;
        if (e > s0) ok = add_string(s, f, enc.p + s0, e - s0, true, mm, group, r, line);
    }
    buf_free(&plain);
    buf_free(&enc);
    return ok;
}

/* The variants |windash stands for: a '-' or '/' starting a word as any of the dashes and '/'. */
static bool
add_windash(struct sigma *s, struct sfield *f, const char *v, unsigned m, uint32_t group,
            struct refusal *r, int line)
{
    static const char *const dash[] = {"-", "/", "\xe2\x80\x93", "\xe2\x80\x94", "\xe2\x80\x95"};
    size_t k, i;

    for (k = 0; k < sizeof(dash) / sizeof(*dash); k++) {
        struct buf b = {0};
        bool ok;
        for (i = 0; v[i]; i++) {
            if ((v[i] == '-' || v[i] == '/') && (i == 0 || v[i - 1] == ' '))
                buf_puts(&b, dash[k]);
            else
                buf_append(&b, &v[i], 1);
        }
        ok = add_string(s, f, buf_str(&b), b.len, false, m, group, r, line);
        buf_free(&b);
        if (!ok) return false;
    }
    return true;
}

static bool map_field(const struct sigma *s, const struct lsmap *ls, const char *name,
                      nv_handle *h);

static bool
add_value(struct sigma *s, const struct lsmap *ls, struct sfield *f, const yaml_node_t *n,
          unsigned m, struct refusal *r)
{
    struct sval sv = {0};
    int line = line_of(n);
    uint32_t group = f->ngroups++;
    const char *v;

    sv.group = group;
    if (over_budget(r, line)) return false;
    if (!is_scalar(n)) {
        refuse(r, line, "a value must be a string, a number or null");
        return false;
    }
    v = scalar(n);
    if (m & M_EXISTS) {
        if (strcmp(v, "true") && strcmp(v, "false") && strcmp(v, "yes") && strcmp(v, "no")) {
            refuse(r, line, "|exists takes true or false");
            return false;
        }
        sv.kind = V_EXISTS;
        sv.exists = !strcmp(v, "true") || !strcmp(v, "yes");
        add_val(f, &sv);
        return true;
    }
    if (m & M_FIELDREF) {
        if (is_null(n) || !*v) {
            refuse(r, line, "|fieldref takes the name of a field");
            return false;
        }
        if (!map_field(s, ls, v, &sv.ref)) {
            refuse(r, line, "field '%s' (|fieldref) has no mapping for this logsource", v);
            return false;
        }
        sv.kind = V_FIELDREF;
        sv.cased = (m & M_CASED) != 0;
        sv.shape = m & M_CONTAINS ? S_CONTAINS
                   : m & M_STARTS ? S_PREFIX
                   : m & M_ENDS   ? S_SUFFIX
                                  : S_EXACT;
        add_val(f, &sv);
        return true;
    }
    if (is_null(n)) {
        if (m & ~(unsigned)M_ALL) {
            refuse(r, line, "null with a modifier");
            return false;
        }
        sv.kind = V_NULL;
        add_val(f, &sv);
        return true;
    }
    if (m & (M_LT | M_LTE | M_GT | M_GTE)) {
        char *end;
        sv.kind = V_NUM;
        sv.num = strtod(v, &end);
        if (!*v || *end) {
            refuse(r, line, "'%s' is not a number", v);
            return false;
        }
        sv.cmp = m & M_LT ? C_LT : m & M_LTE ? C_LTE : m & M_GT ? C_GT : C_GTE;
        add_val(f, &sv);
        return true;
    }
    if (m & M_RE) {
        int code;
        PCRE2_SIZE off;
        uint32_t opts = (m & M_RE_I ? PCRE2_CASELESS : 0) | (m & M_RE_M ? PCRE2_MULTILINE : 0) |
                        (m & M_RE_S ? PCRE2_DOTALL : 0);
        sv.kind = V_RE;
        sv.re = pcre2_compile((PCRE2_SPTR)v, PCRE2_ZERO_TERMINATED, opts, &code, &off, NULL);
        if (!sv.re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(code, msg, sizeof(msg));
            refuse(r, line, "regular expression at offset %zu: %s", (size_t)off, (char *)msg);
            return false;
        }
        pcre2_jit_compile(sv.re, PCRE2_JIT_COMPLETE); /* optional: falls back if absent */
        {
            /* the literal it cannot match without, found by the literal scan (one pass over
             * the field for every rule): the expression runs only where it occurs, and a rule
             * that needs it is gated on it as on a |contains literal */
            char lit[64];
            size_t len = relit_required(v, strlen(v), lit, sizeof(lit));
            if (len >= 3) sv.lid = lit_register(s, f->h, lit, len, &sv.scan) + 1;
        }
        add_val(f, &sv);
        return true;
    }
    if (m & M_CIDR) {
        char addr[64];
        const char *slash = strchr(v, '/');
        size_t alen = slash ? (size_t)(slash - v) : strlen(v);
        char *end;
        unsigned long bits;
        sv.kind = V_CIDR;
        if (alen >= sizeof(addr)) goto bad_cidr;
        memcpy(addr, v, alen);
        addr[alen] = '\0';
        sv.family = strchr(addr, ':') ? AF_INET6 : AF_INET;
        if (inet_pton(sv.family, addr, sv.addr) != 1) goto bad_cidr;
        bits = slash ? strtoul(slash + 1, &end, 10) : (sv.family == AF_INET ? 32 : 128);
        if ((slash && (!slash[1] || *end)) || bits > (sv.family == AF_INET ? 32u : 128u))
            goto bad_cidr;
        sv.bits = (unsigned)bits;
        add_val(f, &sv);
        return true;
    bad_cidr:
        refuse(r, line, "'%s' is not a network in CIDR notation", v);
        return false;
    }
    if (m & (M_B64 | M_B64OFF)) return add_base64(s, f, v, m, group, r, line);
    if (m & M_WINDASH) return add_windash(s, f, v, m, group, r, line);
    return add_string(s, f, v, strlen(v), false, m, group, r, line);
}

static void
field_free(struct sfield *f)
{
    size_t i;

    for (i = 0; i < f->nvals; i++) {
        free(f->vals[i].pat);
        free(f->vals[i].lit);
        if (f->vals[i].re) pcre2_code_free(f->vals[i].re);
    }
    free(f->vals);
}

/* What a Sigma field name reads in corral: the logsource's mapping, then the global one. */
static bool
map_field(const struct sigma *s, const struct lsmap *ls, const char *name, nv_handle *h)
{
    size_t i;

    for (i = 0; ls && i < ls->nfields; i++)
        if (strcmp(ls->fields[i].name, name) == 0) return (*h = ls->fields[i].h), true;
    for (i = 0; i < s->nfields; i++)
        if (strcmp(s->fields[i].name, name) == 0) return (*h = s->fields[i].h), true;
    return false;
}

/* One "Field|mod|mod: values" entry of a map. */
static bool
field_load(struct sigma *s, const struct lsmap *ls, yaml_document_t *doc, const yaml_node_t *k,
           const yaml_node_t *v, struct sfield *f, struct refusal *r)
{
    char *key = xstrdup(scalar(k)), *bar = strchr(key, '|'), *tok, *save = NULL;
    unsigned m = 0;
    bool ok = true, keyword = bar == key;
    size_t i;
    int line = line_of(k);

    memset(f, 0, sizeof(*f));
    if (over_budget(r, line)) {
        free(key);
        return false;
    }
    if (bar) *bar = '\0';
    for (tok = bar ? strtok_r(bar + 1, "|", &save) : NULL; tok && ok;
         tok = strtok_r(NULL, "|", &save)) {
        for (i = 0; i < sizeof(mods) / sizeof(*mods); i++)
            if (strcmp(tok, mods[i].name) == 0) break;
        if (i == sizeof(mods) / sizeof(*mods)) {
            refuse(r, line, "modifier '%s' is not supported", tok);
            ok = false;
        } else if ((mods[i].bit & (M_RE_I | M_RE_M | M_RE_S)) && !(m & M_RE)) {
            refuse(r, line, "modifier '%s' only follows re", tok);
            ok = false;
        } else {
            m |= mods[i].bit;
        }
    }
    if (ok && __builtin_popcount(m & (M_CONTAINS | M_STARTS | M_ENDS | M_RE | M_CIDR | M_EXISTS |
                                      M_LT | M_LTE | M_GT | M_GTE)) > 1) {
        refuse(r, line, "modifiers of '%s' exclude each other", scalar(k));
        ok = false;
    }
    /* a field reference compares as a string: whole, or with contains, startswith, endswith */
    if (ok && (m & M_FIELDREF) &&
        (m &
         (M_RE | M_CIDR | M_B64 | M_B64OFF | M_WINDASH | M_EXISTS | M_LT | M_LTE | M_GT | M_GTE))) {
        refuse(r, line,
               "fieldref of '%s' only combines with contains, startswith, endswith, cased "
               "and all",
               scalar(k));
        ok = false;
    }
    if (ok && keyword) {
        f->h = NV_MESSAGE;
        if (!(m & (M_RE | M_STARTS | M_ENDS))) m |= M_CONTAINS;
    } else if (ok && !map_field(s, ls, key, &f->h)) {
        refuse(r, line, "field '%s' has no mapping for this logsource", key);
        ok = false;
    }
    f->all = (m & M_ALL) != 0;
    if (ok && v->type == YAML_SEQUENCE_NODE) {
        yaml_node_item_t *it;
        if (v->data.sequence.items.top == v->data.sequence.items.start) {
            refuse(r, line, "'%s' has an empty list of values", scalar(k));
            ok = false;
        }
        if (v->data.sequence.items.top - v->data.sequence.items.start > MAX_VALUES) {
            refuse(r, line, "more than %d values", MAX_VALUES);
            ok = false;
        }
        for (it = v->data.sequence.items.start; ok && it < v->data.sequence.items.top; it++)
            ok = add_value(s, ls, f, yaml_document_get_node(doc, *it), m, r);
    } else if (ok) {
        ok = add_value(s, ls, f, v, m, r);
    }
    free(key);
    return ok;
}

static void
alt_free(struct salt *a)
{
    size_t i;

    for (i = 0; i < a->nfields; i++) field_free(&a->fields[i]);
    free(a->fields);
}

static bool
alt_load(struct sigma *s, const struct lsmap *ls, yaml_document_t *doc, const yaml_node_t *map,
         struct salt *a, struct refusal *r)
{
    yaml_node_pair_t *p;

    memset(a, 0, sizeof(*a));
    for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        if (!is_scalar(k)) {
            refuse(r, line_of(k), "a field name must be a string");
            return false;
        }
        a->fields = xrealloc(a->fields, (a->nfields + 1) * sizeof(*a->fields));
        if (!field_load(s, ls, doc, k, v, &a->fields[a->nfields], r)) {
            field_free(&a->fields[a->nfields]);
            return false;
        }
        a->nfields++;
    }
    if (!a->nfields) {
        refuse(r, line_of(map), "an empty map in a selection");
        return false;
    }
    return true;
}

static bool
det_load(struct sigma *s, const struct lsmap *ls, yaml_document_t *doc, const yaml_node_t *n,
         struct sdet *d, struct refusal *r)
{
    if (n->type == YAML_MAPPING_NODE) {
        d->alts = xcalloc(1, sizeof(*d->alts));
        if (!alt_load(s, ls, doc, n, d->alts, r)) {
            alt_free(d->alts);
            return false;
        }
        d->nalts = 1;
        return true;
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        yaml_node_item_t *it;
        size_t kw = SIZE_MAX; /* keywords: one map reading MESSAGE, its values ORed */
        if (n->data.sequence.items.top == n->data.sequence.items.start) {
            refuse(r, line_of(n), "selection '%s' is an empty list", d->name);
            return false;
        }
        for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            yaml_node_t *v = yaml_document_get_node(doc, *it);
            if (v->type == YAML_MAPPING_NODE) {
                d->alts = xrealloc(d->alts, (d->nalts + 1) * sizeof(*d->alts));
                if (!alt_load(s, ls, doc, v, &d->alts[d->nalts], r)) {
                    alt_free(&d->alts[d->nalts]);
                    return false;
                }
                d->nalts++;
            } else if (is_scalar(v)) {
                if (kw == SIZE_MAX) {
                    d->alts = xrealloc(d->alts, (d->nalts + 1) * sizeof(*d->alts));
                    kw = d->nalts++;
                    memset(&d->alts[kw], 0, sizeof(d->alts[kw]));
                    d->alts[kw].fields = xcalloc(1, sizeof(*d->alts[kw].fields));
                    d->alts[kw].nfields = 1;
                    d->alts[kw].fields->h = NV_MESSAGE;
                }
                if (d->alts[kw].fields->nvals >= MAX_VALUES) {
                    refuse(r, line_of(v), "more than %d keywords", MAX_VALUES);
                    return false;
                }
                if (!add_value(s, ls, d->alts[kw].fields, v, is_null(v) ? 0 : M_CONTAINS, r))
                    return false;
            } else {
                refuse(r, line_of(v), "a selection list may hold maps or keywords only");
                return false;
            }
        }
        return true;
    }
    if (is_scalar(n)) {
        refuse(r, line_of(n), "selection '%s': a single keyword must be in a list", d->name);
        return false;
    }
    refuse(r, line_of(n), "selection '%s' must be a map or a list", d->name);
    return false;
}

/* ---- rules ---- */

static void corr_free(struct scorr *c);

static void
impl_free(struct sigma_impl *im)
{
    size_t i, j;

    if (!im) return;
    for (i = 0; i < im->ndets; i++) {
        for (j = 0; j < im->dets[i].nalts; j++) alt_free(&im->dets[i].alts[j]);
        free(im->dets[i].alts);
    }
    free(im->dets);
    free(im->names); /* the names are the dets' */
    sigma_cond_free(im->cond);
    free(im->labels);
    free(im->alert_id);
    free(im->event);
    free(im->name);
    free(im->feeds);
    corr_free(im->corr);
    free(im);
}

static void
rule_free(struct sigma_rule *r)
{
    if (!r) return;
    free(r->id);
    free(r->title);
    free(r->level);
    free(r->author);
    if (r->impl) {
        size_t i;
        for (i = 0; i < r->impl->ndets; i++) free(r->impl->dets[i].name);
    }
    impl_free(r->impl);
    free(r);
}

static const char *
severity_of(const char *level)
{
    if (!level) return "warning";
    if (!strcmp(level, "critical")) return "critical";
    if (!strcmp(level, "high")) return "major";
    if (!strcmp(level, "medium")) return "minor";
    if (!strcmp(level, "low")) return "warning";
    if (!strcmp(level, "informational")) return "info";
    return NULL;
}

static bool
ls_value_ok(const char *want, const char *have)
{
    if (!want) return !have;
    if (strcmp(want, "*") == 0) return true;
    return have && strcmp(want, have) == 0;
}

static bool
rule_logsource(const struct sigma *s, yaml_document_t *doc, const yaml_node_t *n,
               struct sigma_impl *im, struct refusal *r)
{
    const char *prod = NULL, *cat = NULL, *svc = NULL;
    yaml_node_t *v;
    size_t i;

    if (!n || n->type != YAML_MAPPING_NODE) {
        refuse(r, n ? line_of(n) : 1, "logsource missing or not a map");
        return false;
    }
    if ((v = map_get(doc, n, "product")) && is_scalar(v)) prod = scalar(v);
    if ((v = map_get(doc, n, "category")) && is_scalar(v)) cat = scalar(v);
    if ((v = map_get(doc, n, "service")) && is_scalar(v)) svc = scalar(v);
    for (i = 0; i < s->nls; i++) {
        const struct lsmap *l = &s->ls[i];
        if (ls_value_ok(l->product, prod) && ls_value_ok(l->category, cat) &&
            ls_value_ok(l->service, svc)) {
            im->ls = l;
            im->ls_index = i;
            return true;
        }
    }
    refuse(r, line_of(n), "logsource (product %s, category %s, service %s) has no mapping",
           prod ? prod : "-", cat ? cat : "-", svc ? svc : "-");
    return false;
}

static void
add_label(struct sigma_impl *im, nv_handle h)
{
    size_t l;

    for (l = 0; l < im->nlabels; l++)
        if (im->labels[l] == h) return;
    if (h == NV_MESSAGE || h == NV_HOST) return;
    im->labels = xrealloc(im->labels, (im->nlabels + 1) * sizeof(*im->labels));
    im->labels[im->nlabels++] = h;
}

static bool
rule_detection(struct sigma *s, yaml_document_t *doc, const yaml_node_t *n, struct sigma_impl *im,
               struct refusal *r)
{
    yaml_node_pair_t *p;
    yaml_node_t *cond = NULL;
    struct buf src = {0};
    char err[256];
    size_t i;

    if (!n || n->type != YAML_MAPPING_NODE) {
        refuse(r, n ? line_of(n) : 1, "detection missing or not a map");
        return false;
    }
    for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        struct sdet *d;
        if (!is_scalar(k)) {
            refuse(r, line_of(k), "a detection identifier must be a string");
            return false;
        }
        if (strcmp(scalar(k), "condition") == 0) {
            cond = v;
            continue;
        }
        if (strcmp(scalar(k), "timeframe") == 0) {
            refuse(r, line_of(k), "timeframe (an aggregation of Sigma v1) is not supported");
            return false;
        }
        if (im->ndets >= MAX_DETS) {
            refuse(r, line_of(k), "more than %d detection identifiers", MAX_DETS);
            return false;
        }
        im->dets = xrealloc(im->dets, (im->ndets + 1) * sizeof(*im->dets));
        d = &im->dets[im->ndets++];
        memset(d, 0, sizeof(*d));
        d->name = xstrdup(scalar(k));
        if (!det_load(s, im->ls, doc, v, d, r)) return false;
    }
    if (!cond) {
        refuse(r, line_of(n), "detection has no condition");
        return false;
    }
    im->names = xcalloc(im->ndets + 1, sizeof(*im->names));
    for (i = 0; i < im->ndets; i++) im->names[i] = im->dets[i].name;
    /* a list of conditions holds when any does */
    if (is_scalar(cond)) {
        buf_puts(&src, scalar(cond));
    } else if (cond->type == YAML_SEQUENCE_NODE) {
        yaml_node_item_t *it;
        for (it = cond->data.sequence.items.start; it < cond->data.sequence.items.top; it++) {
            yaml_node_t *c = yaml_document_get_node(doc, *it);
            if (!is_scalar(c)) break;
            buf_printf(&src, "%s(%s)", src.len ? " or " : "", scalar(c));
        }
        if (it < cond->data.sequence.items.top || !src.len) {
            refuse(r, line_of(cond), "condition must be a string or a list of strings");
            buf_free(&src);
            return false;
        }
    } else {
        refuse(r, line_of(cond), "condition must be a string or a list of strings");
        return false;
    }
    im->cond = sigma_cond_parse(buf_str(&src), (const char *const *)im->names, im->ndets, err,
                                sizeof(err));
    buf_free(&src);
    if (!im->cond) {
        refuse(r, line_of(cond), "condition: %s", err);
        return false;
    }
    /* the fields of the selections the condition uses (and those they refer to with |fieldref)
     * become the alert's labels */
    for (i = 0; i < im->ndets; i++) {
        size_t j, k, l;
        if (!sigma_cond_uses(im->cond, i)) continue;
        for (j = 0; j < im->dets[i].nalts; j++)
            for (k = 0; k < im->dets[i].alts[j].nfields; k++) {
                const struct sfield *f = &im->dets[i].alts[j].fields[k];
                add_label(im, f->h);
                for (l = 0; l < f->nvals; l++)
                    if (f->vals[l].kind == V_FIELDREF) add_label(im, f->vals[l].ref);
            }
    }
    return true;
}

/* ---- correlation rules: loading ---- */

static void
corr_free(struct scorr *c)
{
    size_t i;

    if (!c) return;
    free_strs(c->refs, c->nrefs);
    free(c->ref_lines);
    free_strs(c->group, c->ngroup);
    for (i = 0; i < c->naliases; i++) {
        free(c->aliases[i].alias);
        free(c->aliases[i].rule);
        free(c->aliases[i].field);
    }
    free(c->aliases);
    free(c->field);
    free(c->ref_rules);
    free(c->group_h);
    free(c->field_h);
    free(c->label_h);
    free(c);
}

/* "number + s, m, h or d" in ms; 0 when malformed. */
static uint64_t
timespan_ms(const char *v)
{
    char *end;
    unsigned long long n;
    uint64_t unit;

    if (*v < '0' || *v > '9') return 0;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (errno || end[0] == 0 || end[1] != 0) return 0;
    switch (*end) {
    case 's': unit = 1000; break;
    case 'm': unit = 60000; break;
    case 'h': unit = 3600000; break;
    case 'd': unit = 86400000; break;
    default: return 0;
    }
    if (n == 0 || n > UINT64_MAX / unit / 2) return 0;
    return (uint64_t)n * unit;
}

static bool
bool_value(const yaml_node_t *v, bool *out)
{
    if (!is_scalar(v)) return false;
    if (!strcmp(scalar(v), "true")) return (*out = true), true;
    if (!strcmp(scalar(v), "false")) return (*out = false), true;
    return false;
}

/* The correlation: section n of a rule into im->corr. */
static bool
corr_load(yaml_document_t *doc, const yaml_node_t *n, struct sigma_impl *im, struct refusal *r)
{
    static const char *const types[] = {"event_count",      "value_count", "temporal",
                                        "temporal_ordered", "value_sum",   "value_avg",
                                        "value_percentile"};
    static const char *const ops[] = {"gt", "gte", "lt", "lte", "eq", "neq"};
    struct scorr *c = xcalloc(1, sizeof(*c));
    yaml_node_pair_t *p;
    yaml_node_t *v;
    size_t i;

    im->corr = c;
    if (!n || n->type != YAML_MAPPING_NODE) {
        refuse(r, n ? line_of(n) : 1, "correlation must be a map");
        return false;
    }
    v = map_get(doc, n, "type");
    if (!is_scalar(v)) {
        refuse(r, line_of(n), "correlation has no type");
        return false;
    }
    for (i = 0; i < sizeof(types) / sizeof(*types); i++)
        if (!strcmp(scalar(v), types[i])) break;
    if (i == sizeof(types) / sizeof(*types)) {
        refuse(r, line_of(v), "unknown correlation type %s", scalar(v));
        return false;
    }
    c->type = (enum ctype)i;
    for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        const char *kk = is_scalar(k) ? scalar(k) : "";
        v = yaml_document_get_node(doc, p->value);
        if (!strcmp(kk, "type")) continue;
        if (!strcmp(kk, "rules")) {
            yaml_node_item_t *it;
            if (c->refs) {
                refuse(r, line_of(k), "rules given twice");
                return false;
            }
            if (!str_list(doc, v, &c->refs, &c->nrefs) || !c->nrefs) {
                refuse(r, line_of(k), "rules must be a rule name or id, or a list of them");
                return false;
            }
            c->ref_lines = xcalloc(c->nrefs, sizeof(*c->ref_lines));
            for (i = 0; i < c->nrefs; i++) c->ref_lines[i] = line_of(v);
            if (v->type == YAML_SEQUENCE_NODE)
                for (i = 0, it = v->data.sequence.items.start; it < v->data.sequence.items.top;
                     it++, i++)
                    c->ref_lines[i] = line_of(yaml_document_get_node(doc, *it));
        } else if (!strcmp(kk, "group-by")) {
            if (c->group) {
                refuse(r, line_of(k), "group-by given twice");
                return false;
            }
            if (!str_list(doc, v, &c->group, &c->ngroup)) {
                refuse(r, line_of(k), "group-by must be a field name or a list of them");
                return false;
            }
        } else if (!strcmp(kk, "timespan")) {
            if (!is_scalar(v) || !(c->span = timespan_ms(scalar(v)))) {
                refuse(r, line_of(k), "timespan must be a number and s, m, h or d (as 90m)");
                return false;
            }
        } else if (!strcmp(kk, "generate")) {
            if (!bool_value(v, &c->generate)) {
                refuse(r, line_of(k), "generate must be true or false");
                return false;
            }
        } else if (!strcmp(kk, "aliases")) {
            yaml_node_pair_t *a, *b;
            if (!v || v->type != YAML_MAPPING_NODE) {
                refuse(r, line_of(k), "aliases must be a map of maps");
                return false;
            }
            for (a = v->data.mapping.pairs.start; a < v->data.mapping.pairs.top; a++) {
                yaml_node_t *an = yaml_document_get_node(doc, a->key);
                yaml_node_t *av = yaml_document_get_node(doc, a->value);
                if (!is_scalar(an) || !av || av->type != YAML_MAPPING_NODE) {
                    refuse(r, line_of(an), "an alias must map rule names to field names");
                    return false;
                }
                for (b = av->data.mapping.pairs.start; b < av->data.mapping.pairs.top; b++) {
                    yaml_node_t *rn = yaml_document_get_node(doc, b->key);
                    yaml_node_t *fn = yaml_document_get_node(doc, b->value);
                    struct calias *ca;
                    if (!is_scalar(rn) || !is_scalar(fn)) {
                        refuse(r, line_of(rn), "an alias must map rule names to field names");
                        return false;
                    }
                    c->aliases = xrealloc(c->aliases, (c->naliases + 1) * sizeof(*c->aliases));
                    ca = &c->aliases[c->naliases++];
                    ca->alias = xstrdup(scalar(an));
                    ca->rule = xstrdup(scalar(rn));
                    ca->field = xstrdup(scalar(fn));
                }
            }
        } else if (!strcmp(kk, "condition")) {
            yaml_node_pair_t *q;
            if (!v || v->type != YAML_MAPPING_NODE) {
                refuse(r, line_of(k), "condition must be a map (as gte: 100)");
                return false;
            }
            for (q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
                yaml_node_t *qk = yaml_document_get_node(doc, q->key);
                yaml_node_t *qv = yaml_document_get_node(doc, q->value);
                char *end;
                if (is_scalar(qk) && !strcmp(scalar(qk), "field")) {
                    if (!is_scalar(qv) || c->field) {
                        refuse(r, line_of(qk), "condition field must be one field name");
                        return false;
                    }
                    c->field = xstrdup(scalar(qv));
                    continue;
                }
                for (i = 0; is_scalar(qk) && i < sizeof(ops) / sizeof(*ops); i++)
                    if (!strcmp(scalar(qk), ops[i])) break;
                if (!is_scalar(qk) || i == sizeof(ops) / sizeof(*ops) || c->nconds == 6) {
                    refuse(r, line_of(qk),
                           "condition: expected gt, gte, lt, lte, eq, neq or field");
                    return false;
                }
                if (!is_scalar(qv) || !*scalar(qv) ||
                    (c->conds[c->nconds].v = strtod(scalar(qv), &end), *end)) {
                    refuse(r, line_of(qv), "condition %s must be a number", ops[i]);
                    return false;
                }
                c->conds[c->nconds++].op = (enum cop)i;
            }
        } else {
            refuse(r, line_of(k), "unknown correlation attribute %s", kk);
            return false;
        }
    }
    if (!c->refs) {
        refuse(r, line_of(n), "correlation has no rules");
        return false;
    }
    if (!c->span) {
        refuse(r, line_of(n), "correlation has no timespan");
        return false;
    }
    if (c->type != CT_TEMPORAL && c->type != CT_TEMPORAL_ORDERED && !c->nconds) {
        refuse(r, line_of(n), "%s needs a condition", types[c->type]);
        return false;
    }
    if ((c->type == CT_VALUE_COUNT || c->type == CT_VALUE_SUM || c->type == CT_VALUE_AVG ||
         c->type == CT_VALUE_PERCENTILE) != (c->field != NULL)) {
        refuse(r, line_of(n),
               c->field ? "condition field is only for value_count, value_sum, value_avg and "
                          "value_percentile"
                        : "%s needs a condition field",
               types[c->type]);
        return false;
    }
    if (c->type == CT_TEMPORAL_ORDERED && c->nconds) {
        refuse(r, line_of(n), "temporal_ordered takes no condition: all its rules, in order");
        return false;
    }
    if (c->nrefs > 64) {
        refuse(r, line_of(n), "more than 64 rules in one correlation");
        return false;
    }
    if (c->ngroup > 16) {
        refuse(r, line_of(n), "more than 16 group-by fields");
        return false;
    }
    return true;
}

static const char *const rule_keys[] = {
    "title",          "id",         "name",
    "related",        "taxonomy",   "status",
    "description",    "license",    "author",
    "references",     "date",       "modified",
    "logsource",      "detection",  "fields",
    "falsepositives", "level",      "tags",
    "scope",          "simulation", "regression_tests_path",
    "correlation",    "generate",
};

static struct sigma_rule *
rule_load(struct sigma *s, const char *file, yaml_document_t *doc, yaml_node_t *root,
          struct refusal *r)
{
    struct sigma_rule *rule = xcalloc(1, sizeof(*rule));
    struct sigma_impl *im = xcalloc(1, sizeof(*im));
    yaml_node_pair_t *p;
    yaml_node_t *v;
    struct buf b = {0};
    yaml_node_t *corr_node = NULL;
    size_t i;

    rule->impl = im;
    rule->file = file;
    rule->line = line_of(root);
    for (p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (!is_scalar(k)) continue;
        if (!strcmp(scalar(k), "correlation")) {
            corr_node = yaml_document_get_node(doc, p->value);
            continue;
        }
        if (!strcmp(scalar(k), "filter")) {
            refuse(r, line_of(k), "filter rules are not supported");
            goto fail;
        }
        if (!strcmp(scalar(k), "action")) {
            refuse(r, line_of(k), "multi-document rule collections (action:) are not supported");
            goto fail;
        }
        for (i = 0; i < sizeof(rule_keys) / sizeof(*rule_keys); i++)
            if (!strcmp(scalar(k), rule_keys[i])) break;
        (void)i; /* other keys are custom attributes, allowed by the specification */
    }
    if (!is_scalar(v = map_get(doc, root, "title")) || !*scalar(v)) {
        refuse(r, rule->line, "title missing");
        goto fail;
    }
    rule->title = xstrdup(scalar(v));
    if ((v = map_get(doc, root, "id")) && is_scalar(v) && *scalar(v)) {
        rule->id = xstrdup(scalar(v));
    } else {
        const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        const char *dot = strrchr(base, '.');
        rule->id = xstrndup(base, dot && dot > base ? (size_t)(dot - base) : strlen(base));
    }
    if ((v = map_get(doc, root, "level"))) {
        if (!is_scalar(v) || !severity_of(scalar(v))) {
            refuse(r, line_of(v), "level must be informational, low, medium, high or critical");
            goto fail;
        }
        rule->level = xstrdup(scalar(v));
    }
    rule->severity = severity_of(rule->level);
    /* SigmaHQ's rules are under the Detection Rule License 1.1: alerts based on a rule's
       matches must name its authors, so the alert carries them (sigma.author) */
    if ((v = map_get(doc, root, "author")) && is_scalar(v) && *scalar(v))
        rule->author = xstrdup(scalar(v));
    if ((v = map_get(doc, root, "name"))) {
        if (!is_scalar(v) || !*scalar(v)) {
            refuse(r, line_of(v), "name must be a string");
            goto fail;
        }
        im->name = xstrdup(scalar(v));
    }
    if (corr_node) {
        if (map_get(doc, root, "detection") || map_get(doc, root, "logsource")) {
            refuse(r, line_of(corr_node), "a correlation rule has no logsource nor detection");
            goto fail;
        }
        if (!corr_load(doc, corr_node, im, r)) goto fail;
        if ((v = map_get(doc, root, "generate")) && !bool_value(v, &im->corr->generate)) {
            refuse(r, line_of(v), "generate must be true or false");
            goto fail;
        }
    } else {
        if (!rule_logsource(s, doc, map_get(doc, root, "logsource"), im, r)) goto fail;
        if (!rule_detection(s, doc, map_get(doc, root, "detection"), im, r)) goto fail;
    }
    buf_printf(&b, "sigma/%s/", rule->id);
    im->alert_id = xstrdup(buf_str(&b));
    buf_reset(&b);
    buf_printf(&b, "sigma.%s", rule->id);
    im->event = xstrdup(buf_str(&b));
    buf_free(&b);
    rule->prule.id = rule->id;
    rule->prule.class = (char *)"sigma";
    rule->prule.description = rule->title;
    rule->prule.file = file;
    rule->prule.line = rule->line;
    rule->action.kind = PDB_ACTION_MESSAGE;
    rule->action.trigger = PDB_TRIGGER_MATCH;
    rule->action.line = rule->line;
    rule->action.rule = &rule->prule;
    return rule;
fail:
    rule_free(rule);
    return NULL;
}

/* A field that matches only through literals of the scan: an OR of them (or |all of them). */
static bool
lits_only(const struct sfield *f)
{
    size_t i;

    for (i = 0; i < f->nvals; i++)
        if (!f->vals[i].lid) return false;
    return f->nvals > 0;
}

/* The field of alternative a that gates it through scan sc, or NULL. */
static const struct sfield *
gate_field(const struct salt *a, uint32_t sc)
{
    size_t i;

    for (i = 0; i < a->nfields; i++)
        if (lits_only(&a->fields[i]) && a->fields[i].vals[0].scan == sc) return &a->fields[i];
    return NULL;
}

/* Whether every alternative of selection d needs a literal of scan sc. */
static bool
sel_gated(const struct sdet *d, uint32_t sc)
{
    size_t a;

    for (a = 0; a < d->nalts; a++)
        if (!gate_field(&d->alts[a], sc)) return false;
    return d->nalts > 0;
}

struct gate {
    const struct sigma_impl *im;
    uint32_t scan;
};

static enum sigma_tv
gate_sel(void *arg, size_t i)
{
    struct gate *g = arg;

    return sel_gated(&g->im->dets[i], g->scan) ? SIGMA_FALSE : SIGMA_UNKNOWN;
}

/*
 * Gates rule r (index idx) on the literal scan when its condition is false
 * with every selection that needs a literal of one scan false: then only a
 * message in which one of those literals was found can match.
 */
static void
gate_rule(struct sigma *s, struct sigma_rule *r, uint32_t idx)
{
    struct sigma_impl *im = r->impl;
    struct gate g = {im, 0};
    size_t i, a, k;
    bool any = false;

    im->index = idx;
    /* the scan of the first literal of the rule's first gated-looking field */
    for (i = 0; i < im->ndets && !any; i++)
        for (a = 0; a < im->dets[i].nalts && !any; a++)
            for (k = 0; k < im->dets[i].alts[a].nfields && !any; k++)
                if (lits_only(&im->dets[i].alts[a].fields[k])) {
                    g.scan = im->dets[i].alts[a].fields[k].vals[0].scan;
                    any = true;
                }
    if (!any || sigma_cond_eval3(im->cond, gate_sel, &g) != SIGMA_FALSE) return;
    im->gated = true;
    im->gate = g.scan;
    s->scans[g.scan].gates = true;
    for (i = 0; i < im->ndets; i++) {
        if (!sel_gated(&im->dets[i], g.scan)) continue;
        for (a = 0; a < im->dets[i].nalts; a++) {
            const struct sfield *f = gate_field(&im->dets[i].alts[a], g.scan);
            for (k = 0; k < f->nvals; k++) {
                struct lit *l = &s->lits[f->vals[k].lid - 1];
                if (l->nrules && l->rules[l->nrules - 1] == idx) continue;
                l->rules = xrealloc(l->rules, (l->nrules + 1) * sizeof(*l->rules));
                l->rules[l->nrules++] = idx;
            }
        }
    }
}

/* ---- correlation rules: linking ---- */

/* The rule (detection or correlation, not self) that ref names by its name or id, or NULL. */
static struct sigma_rule *
find_ref(const struct sigma *s, const struct sigma_rule *self, const char *ref)
{
    size_t i;

    for (i = 0; i < s->nrules; i++)
        if ((s->rules[i]->impl->name && !strcmp(s->rules[i]->impl->name, ref)) ||
            !strcmp(s->rules[i]->id, ref))
            return s->rules[i];
    for (i = 0; i < s->ncorrs; i++)
        if (s->corrs[i] != self &&
            ((s->corrs[i]->impl->name && !strcmp(s->corrs[i]->impl->name, ref)) ||
             !strcmp(s->corrs[i]->id, ref)))
            return s->corrs[i];
    return NULL;
}

/* How deep correlation r chains on others; MAX_CHAIN + 1 when deeper, or circular. */
static int
chain_depth(const struct sigma_rule *r, int depth)
{
    const struct scorr *c = r->impl->corr;
    int most = depth;
    size_t p;

    if (!c) return depth;
    if (depth > MAX_CHAIN) return depth;
    for (p = 0; p < c->nrefs; p++) {
        int d = chain_depth(c->ref_rules[p], depth + 1);
        if (d > most) most = d;
    }
    return most;
}

/* The field that group-by name reads in events of rule ref (refs[p]), through the aliases. */
static const char *
alias_field(const struct scorr *c, const char *name, const struct sigma_rule *ref, size_t p)
{
    size_t i;

    for (i = 0; i < c->naliases; i++)
        if (!strcmp(c->aliases[i].alias, name) &&
            (!strcmp(c->aliases[i].rule, c->refs[p]) || !strcmp(c->aliases[i].rule, ref->id) ||
             (ref->impl->name && !strcmp(c->aliases[i].rule, ref->impl->name))))
            return c->aliases[i].field;
    return NULL;
}

static bool
is_alias(const struct scorr *c, const char *name)
{
    size_t i;

    for (i = 0; i < c->naliases; i++)
        if (!strcmp(c->aliases[i].alias, name)) return true;
    return false;
}

/* Resolves correlation r's references and fields; false with the reason in rf. */
static bool
corr_link(const struct sigma *s, struct sigma_rule *r, struct refusal *rf)
{
    struct scorr *c = r->impl->corr;
    size_t p, g;

    free(c->ref_rules);
    free(c->group_h);
    free(c->field_h);
    free(c->label_h);
    c->ref_rules = xcalloc(c->nrefs, sizeof(*c->ref_rules));
    c->group_h = xcalloc(c->ngroup * c->nrefs + 1, sizeof(*c->group_h));
    c->field_h = xcalloc(c->nrefs, sizeof(*c->field_h));
    c->label_h = xcalloc(c->ngroup + 1, sizeof(*c->label_h));
    for (p = 0; p < c->nrefs; p++) {
        const struct sigma_rule *ref = c->ref_rules[p] = find_ref(s, r, c->refs[p]);
        /* a detection rule's fields are named in its logsource's mapping; a correlation's
         * events are its rules' */
        const struct lsmap *ls = ref && !ref->impl->corr ? ref->impl->ls : NULL;
        if (!ref) {
            refuse(rf, c->ref_lines[p], "correlation refers to %s, which is not a loaded rule",
                   c->refs[p]);
            return false;
        }
        for (g = 0; g < c->ngroup; g++) {
            const char *f = alias_field(c, c->group[g], ref, p);
            if (!f && is_alias(c, c->group[g])) {
                refuse(rf, r->line, "alias %s names no field for rule %s", c->group[g], c->refs[p]);
                return false;
            }
            if (!map_field(s, ls, f ? f : c->group[g], &c->group_h[g * c->nrefs + p])) {
                refuse(rf, r->line, "group-by field %s has no mapping (rule %s)",
                       f ? f : c->group[g], c->refs[p]);
                return false;
            }
        }
        if (c->field && !map_field(s, ls, c->field, &c->field_h[p])) {
            refuse(rf, r->line, "condition field %s has no mapping (rule %s)", c->field,
                   c->refs[p]);
            return false;
        }
    }
    for (g = 0; g < c->ngroup; g++)
        c->label_h[g] =
            is_alias(c, c->group[g]) ? nv_intern_str(c->group[g]) : c->group_h[g * c->nrefs];
    return true;
}

/*
 * Links the correlation rules to the rules they refer to (by name or id),
 * refusing those that refer to no loaded rule, chain deeper than MAX_CHAIN
 * (or in a circle) or read a field without a mapping, and those that refer
 * to a refused one; then lists what each rule feeds.
 */
static void
corr_link_all(struct sigma *s)
{
    size_t i, p;
    bool again = true;

    while (again) {
        struct refusal rf = {0};
        again = false;
        /* all linked before the chains are followed: a chain reads its links' links */
        for (i = 0; i < s->ncorrs; i++)
            if (!corr_link(s, s->corrs[i], &rf)) break;
        if (i == s->ncorrs)
            for (i = 0; i < s->ncorrs; i++)
                if (chain_depth(s->corrs[i], 0) > MAX_CHAIN) {
                    refuse(&rf, s->corrs[i]->line, "correlation chain deeper than %d, or circular",
                           MAX_CHAIN);
                    break;
                }
        if (i < s->ncorrs) {
            /* refusing one can orphan others: start over */
            struct sigma_rule *r = s->corrs[i];
            diag(s, SIGMA_WARNING, r->file, rf.line, "sigma rule refused: %s", rf.text);
            s->nrefused++;
            rule_free(r);
            memmove(&s->corrs[i], &s->corrs[i + 1], (s->ncorrs - i - 1) * sizeof(*s->corrs));
            s->ncorrs--;
            again = true;
        }
    }
    for (i = 0; i < s->nrules; i++) {
        free(s->rules[i]->impl->feeds);
        s->rules[i]->impl->feeds = NULL;
        s->rules[i]->impl->nfeeds = 0;
        s->rules[i]->impl->quiet = false;
    }
    for (i = 0; i < s->ncorrs; i++) {
        free(s->corrs[i]->impl->feeds);
        s->corrs[i]->impl->feeds = NULL;
        s->corrs[i]->impl->nfeeds = 0;
        s->corrs[i]->impl->quiet = false;
    }
    /* quiet: referred to, by correlations that all have generate: false */
    for (i = 0; i < s->ncorrs; i++) {
        const struct scorr *c = s->corrs[i]->impl->corr;
        for (p = 0; p < c->nrefs; p++) c->ref_rules[p]->impl->quiet = true;
    }
    for (i = 0; i < s->ncorrs; i++) {
        const struct scorr *c = s->corrs[i]->impl->corr;
        for (p = 0; p < c->nrefs; p++) {
            struct sigma_impl *ri = c->ref_rules[p]->impl;
            if (c->generate) ri->quiet = false;
            ri->feeds = xrealloc(ri->feeds, (ri->nfeeds + 1) * sizeof(*ri->feeds));
            ri->feeds[ri->nfeeds].corr = (uint32_t)i;
            ri->feeds[ri->nfeeds++].pos = (uint32_t)p;
        }
    }
}

int
sigma_load_memory(struct sigma *s, const char *name, const char *text, size_t len)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    int ndoc = 0;

    name = intern_file(s, name);
    if (!s->mapped) {
        diag(s, SIGMA_ERROR, name, 0, "no mapping file loaded before the rules");
        return -1;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    for (;;) {
        yaml_node_t *root;
        struct refusal r = {0};
        struct sigma_rule *rule;

        if (!yaml_parser_load(&parser, &doc)) {
            diag(s, SIGMA_WARNING, name, (int)parser.problem_mark.line + 1,
                 "sigma rule refused: YAML: %s", parser.problem ? parser.problem : "syntax error");
            s->nrefused++;
            break;
        }
        root = yaml_document_get_root_node(&doc);
        if (!root) {
            yaml_document_delete(&doc);
            break;
        }
        ndoc++;
        if (root->type != YAML_MAPPING_NODE) {
            refuse(&r, line_of(root), "a rule must be a map");
            rule = NULL;
        } else {
            rule = rule_load(s, name, &doc, root, &r);
        }
        if (rule && rule->impl->corr) {
            s->corrs = xrealloc(s->corrs, (s->ncorrs + 1) * sizeof(*s->corrs));
            s->corrs[s->ncorrs++] = rule;
        } else if (rule) {
            s->rules = xgrow(s->rules, &s->caprules, s->nrules + 1, sizeof(*s->rules));
            gate_rule(s, rule, (uint32_t)s->nrules);
            if (!rule->impl->gated) {
                s->ungated =
                    xgrow(s->ungated, &s->capungated, s->nungated + 1, sizeof(*s->ungated));
                s->ungated[s->nungated++] = (uint32_t)s->nrules;
            }
            s->rules[s->nrules++] = rule;
        } else {
            diag(s, SIGMA_WARNING, name, r.line, "sigma rule refused: %s", r.text);
            s->nrefused++;
        }
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    if (!s->loading) corr_link_all(s);
    return 0;
}

static int
path_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool
is_rule_file(const char *name)
{
    size_t n = strlen(name);

    return name[0] != '.' &&
           ((n > 4 && !strcmp(name + n - 4, ".yml")) || (n > 5 && !strcmp(name + n - 5, ".yaml")));
}

static int
load_path(struct sigma *s, const char *path, int depth)
{
    struct stat st;
    char err[256];

    if (stat(path, &st) != 0) {
        diag(s, SIGMA_ERROR, path, 0, "cannot read: %s", strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        char **names = NULL;
        size_t n = 0, i;
        int rc = 0;
        if (!d || depth > 16) {
            diag(s, SIGMA_ERROR, path, 0, "cannot read directory: %s",
                 d ? "nested too deep" : strerror(errno));
            if (d) closedir(d);
            return -1;
        }
        while ((e = readdir(d))) {
            struct buf b = {0};
            struct stat es;
            if (e->d_name[0] == '.') continue;
            buf_printf(&b, "%s/%s", path, e->d_name);
            if (stat(buf_str(&b), &es) == 0 && (S_ISDIR(es.st_mode) || is_rule_file(e->d_name))) {
                names = xrealloc(names, (n + 1) * sizeof(*names));
                names[n++] = xstrdup(buf_str(&b));
            }
            buf_free(&b);
        }
        closedir(d);
        qsort(names, n, sizeof(*names), path_cmp);
        for (i = 0; i < n; i++)
            if (load_path(s, names[i], depth + 1) < 0) rc = -1;
        free_strs(names, n);
        return rc;
    }
    {
        size_t len;
        char *text = read_file(path, &len, err, sizeof(err));
        int rc;
        if (!text) {
            diag(s, SIGMA_ERROR, path, 0, "%s", err);
            return -1;
        }
        rc = sigma_load_memory(s, path, text, len);
        free(text);
        return rc;
    }
}

int
sigma_load(struct sigma *s, const char *path)
{
    int rc;

    /* a correlation may refer to rules of any file of the directory */
    s->loading++;
    rc = load_path(s, path, 0);
    if (!--s->loading) corr_link_all(s);
    return rc;
}

/* The names an alert sets, interned once (sigma_new): alerts are made on several threads. */
static tag_id tag_alert;
static nv_handle h_summary, h_severity, h_id, h_event, h_level, h_author;
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void
intern_names(void)
{
    tag_alert = tag_intern("corral.alert", 12);
    h_summary = nv_intern_str("corral.summary");
    h_severity = nv_intern_str("corral.severity");
    h_id = nv_intern_str("corral.alert_id");
    h_event = nv_intern_str("corral.event");
    h_level = nv_intern_str("sigma.level");
    h_author = nv_intern_str("sigma.author");
}

struct sigma *
sigma_new(void)
{
    pthread_once(&names_once, intern_names);
    return xcalloc(1, sizeof(struct sigma));
}

void
sigma_free(struct sigma *s)
{
    size_t i;

    if (!s) return;
    for (i = 0; i < s->nlits; i++) {
        free(s->lits[i].s);
        free(s->lits[i].rules);
    }
    free(s->lits);
    for (i = 0; i < s->nscans; i++) {
        free(s->scans[i].keys);
        free(s->scans[i].heads);
    }
    free(s->scans);
    free(s->ungated);
    for (i = 0; i < s->nrules; i++) rule_free(s->rules[i]);
    free(s->rules);
    for (i = 0; i < s->ncorrs; i++) rule_free(s->corrs[i]);
    free(s->corrs);
    for (i = 0; i < s->nls; i++) ls_free(&s->ls[i]);
    free(s->ls);
    for (i = 0; i < s->nfields; i++) free(s->fields[i].name);
    free(s->fields);
    for (i = 0; i < s->ndiags; i++) free(s->diags[i].text);
    free(s->diags);
    free_strs(s->files, s->nfiles);
    free(s);
}

size_t
sigma_nrules(const struct sigma *s)
{
    return s->nrules;
}

const struct sigma_rule *
sigma_rule_at(const struct sigma *s, size_t i)
{
    return s->rules[i];
}

size_t
sigma_ncorrelations(const struct sigma *s)
{
    return s->ncorrs;
}

const struct sigma_rule *
sigma_correlation_at(const struct sigma *s, size_t i)
{
    return s->corrs[i];
}

int
sigma_correlation_key(const struct sigma *s, nv_handle *key)
{
    size_t i, g, p, n = 0;

    for (i = 0; i < s->ncorrs; i++) {
        const struct scorr *c = s->corrs[i]->impl->corr;
        if (i == 0) {
            n = c->ngroup; /* at most 16: corr_load() */
            for (g = 0; g < n; g++) key[g] = c->group_h[g * c->nrefs];
        }
        if (c->ngroup != n) return -1;
        for (g = 0; g < n; g++)
            for (p = 0; p < c->nrefs; p++)
                if (c->group_h[g * c->nrefs + p] != key[g]) return -1;
    }
    return (int)n;
}

size_t
sigma_nrefused(const struct sigma *s)
{
    return s->nrefused;
}

/* ---- matching ---- */

static void group_free(struct cgroup *g);

struct sigma_scratch *
sigma_scratch_new(void)
{
    struct sigma_scratch *sc = xcalloc(1, sizeof(*sc));

    sc->md = pcre2_match_data_create(1, NULL);
    sc->budget = MEMORY_DEFAULT;
    return sc;
}

void
sigma_scratch_free(struct sigma_scratch *sc)
{
    size_t i;

    if (!sc) return;
    pcre2_match_data_free(sc->md);
    free(sc->ls);
    free(sc->lit_gen);
    free(sc->scan_gen);
    free(sc->rule_gen);
    free(sc->cand);
    for (i = 0; i < sc->ngtab; i++)
        while (sc->gtab[i]) {
            struct cgroup *g = sc->gtab[i];
            sc->gtab[i] = g->next;
            group_free(g);
        }
    free(sc->gtab);
    if (sc->spare) group_free(sc->spare);
    free(sc->shares);
    buf_free(&sc->key);
    free(sc);
}

static bool
eq(const char *s, const char *p, size_t n, bool cased)
{
    size_t i;

    if (cased) return memcmp(s, p, n) == 0;
    for (i = 0; i < n; i++)
        if (lower((unsigned char)s[i]) != (unsigned char)p[i]) return false;
    return true;
}

/* Whether the n bytes at a and b are the same, without regard to ASCII case unless cased. */
static bool
same(const char *a, const char *b, size_t n, bool cased)
{
    size_t i;

    if (cased) return memcmp(a, b, n) == 0;
    for (i = 0; i < n; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i])) return false;
    return true;
}

static bool
find(const char *s, size_t n, const char *p, size_t m, bool cased)
{
    size_t i;
    unsigned char first, up;

    if (!m) return true;
    if (m > n) return false;
    first = (unsigned char)p[0];
    up = cased || first < 'a' || first > 'z' ? first : (unsigned char)(first - 32);
    for (i = 0; i + m <= n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c == first || c == up) && eq(s + i + 1, p + 1, m - 1, cased)) return true;
    }
    return false;
}

/* Length of the UTF-8 character at s (1 for a stray byte). */
static size_t
char_len(const char *s, size_t n)
{
    unsigned char c = (unsigned char)s[0];
    size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;

    return k <= n ? k : 1;
}

/* The wildcard pattern against s: backtracking to the last star only, so linear in most cases. */
static bool
glob(const char *p, size_t pn, const char *s, size_t sn, bool cased)
{
    size_t pi = 0, si = 0, star = (size_t)-1, mark = 0;

    while (si < sn) {
        if (pi < pn && p[pi] == W_STAR) {
            star = pi++;
            mark = si;
        } else if (pi < pn && p[pi] == W_ONE) {
            pi++;
            si += char_len(s + si, sn - si);
        } else if (pi < pn &&
                   (cased ? s[si] == p[pi] : lower((unsigned char)s[si]) == (unsigned char)p[pi])) {
            pi++;
            si++;
        } else if (star != (size_t)-1) {
            pi = star + 1;
            mark += char_len(s + mark, sn - mark);
            si = mark;
        } else {
            return false;
        }
    }
    while (pi < pn && p[pi] == W_STAR) pi++;
    return pi == pn;
}

/* Finds every literal of scan i in its field of the message: one pass, see struct scan. */
static void
do_scan(struct sigma_scratch *sc, uint32_t i)
{
    const struct sigma *s = sc->s;
    const struct scan *t = &s->scans[i];
    const char *v;
    size_t n = 0, p;
    uint32_t gen = sc->gen;

    sc->scan_gen[i] = gen;
    v = msg_get(sc->m, t->h, &n);
    if (!v || n < 3) return;
    for (p = 0; p + 3 <= n; p++) {
        uint32_t k = (uint32_t)lower((unsigned char)v[p]) << 16 |
                     (uint32_t)lower((unsigned char)v[p + 1]) << 8 | lower((unsigned char)v[p + 2]);
        uint32_t hb = key_hash(k), slot, id;
        if (!(t->bits[hb >> 6 & 1023] >> (hb & 63) & 1)) continue;
        slot = slot_of(t, k);
        if (!t->keys[slot]) continue;
        for (id = t->heads[slot]; id != UINT32_MAX; id = s->lits[id].next) {
            const struct lit *l = &s->lits[id];
            uint32_t r;
            if (sc->lit_gen[id] == gen || p + l->len > n || !eq(v + p, l->s, l->len, false))
                continue;
            sc->lit_gen[id] = gen;
            for (r = 0; r < l->nrules; r++) {
                if (sc->rule_gen[l->rules[r]] == gen) continue;
                sc->rule_gen[l->rules[r]] = gen;
                sc->cand = xgrow(sc->cand, &sc->capcand, sc->ncand + 1, sizeof(*sc->cand));
                sc->cand[sc->ncand++] = l->rules[r];
            }
        }
    }
}

static bool
val_match(const struct sval *v, const char *s, size_t n, struct sigma_scratch *sc)
{
    switch (v->kind) {
    case V_NULL: return !s || !n;
    case V_EXISTS: return (s != NULL) == v->exists;
    default: break;
    }
    if (!s) return false;
    switch (v->kind) {
    case V_STR:
        switch (v->shape) {
        case S_EXACT: return n == v->llen && eq(s, v->lit, n, v->cased);
        case S_PREFIX: return n >= v->llen && eq(s, v->lit, v->llen, v->cased);
        case S_SUFFIX: return n >= v->llen && eq(s + n - v->llen, v->lit, v->llen, v->cased);
        case S_CONTAINS:
            if (v->lid) {
                if (sc->scan_gen[v->scan] != sc->gen) do_scan(sc, v->scan);
                return sc->lit_gen[v->lid - 1] == sc->gen;
            }
            return find(s, n, v->lit, v->llen, v->cased);
        case S_GLOB:
            if (v->lid) { /* not without its longest literal run */
                if (sc->scan_gen[v->scan] != sc->gen) do_scan(sc, v->scan);
                if (sc->lit_gen[v->lid - 1] != sc->gen) return false;
            }
            return glob(v->pat, v->plen, s, n, v->cased);
        }
        return false;
    case V_RE:
        if (v->lid) { /* not without its literal */
            if (sc->scan_gen[v->scan] != sc->gen) do_scan(sc, v->scan);
            if (sc->lit_gen[v->lid - 1] != sc->gen) return false;
        }
        return rematch(v->re, s, n, sc->md) >= 0;
    case V_FIELDREF: {
        size_t rn = 0;
        const char *rv = msg_get(sc->m, v->ref, &rn);
        if (!rv) return false; /* an absent field has no value to compare with */
        switch (v->shape) {
        case S_PREFIX: return n >= rn && same(s, rv, rn, v->cased);
        case S_SUFFIX: return n >= rn && same(s + n - rn, rv, rn, v->cased);
        case S_CONTAINS: {
            size_t i;
            for (i = 0; i + rn <= n; i++)
                if (same(s + i, rv, rn, v->cased)) return true;
            return false;
        }
        default: return n == rn && same(s, rv, n, v->cased);
        }
    }
    case V_CIDR: {
        char tmp[64];
        unsigned char a[16];
        unsigned full, rest;
        if (n >= sizeof(tmp)) return false;
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        if (inet_pton(v->family, tmp, a) != 1) return false;
        full = v->bits / 8;
        rest = v->bits % 8;
        if (memcmp(a, v->addr, full) != 0) return false;
        return !rest || ((a[full] ^ v->addr[full]) & (0xffu << (8 - rest)) & 0xff) == 0;
    }
    case V_NUM: {
        char tmp[64], *end;
        double d;
        if (!n || n >= sizeof(tmp)) return false;
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        d = strtod(tmp, &end);
        if (*end) return false;
        switch (v->cmp) {
        case C_LT: return d < v->num;
        case C_LTE: return d <= v->num;
        case C_GT: return d > v->num;
        case C_GTE: return d >= v->num;
        }
        return false;
    }
    default: return false;
    }
}

static bool
field_match(const struct sfield *f, const struct msg *m, struct sigma_scratch *sc)
{
    size_t n = 0, i;
    const char *s = msg_get(m, f->h, &n);

    if (!f->all) {
        for (i = 0; i < f->nvals; i++)
            if (val_match(&f->vals[i], s, n, sc)) return true;
        return false;
    }
    /* |all: every value as written (a group of variants) must match */
    for (i = 0; i < f->nvals;) {
        uint32_t g = f->vals[i].group;
        bool hit = false;
        for (; i < f->nvals && f->vals[i].group == g; i++)
            if (!hit && val_match(&f->vals[i], s, n, sc)) hit = true;
        if (!hit) return false;
    }
    return true;
}

struct eval {
    const struct sigma_impl *im;
    const struct msg *m;
    struct sigma_scratch *sc;
};

static bool
sel_match(void *arg, size_t i)
{
    struct eval *e = arg;
    const struct sdet *d = &e->im->dets[i];
    size_t a, f;

    for (a = 0; a < d->nalts; a++) {
        for (f = 0; f < d->alts[a].nfields; f++)
            if (!field_match(&d->alts[a].fields[f], e->m, e->sc)) break;
        if (f == d->alts[a].nfields) return true;
    }
    return false;
}

static bool
ls_match(const struct lsmap *l, const struct msg *m)
{
    size_t n, i;
    const char *v;

    if (l->facilities && !(l->facilities & (1u << ((unsigned)msg_pri(m) >> 3 & 31)))) return false;
    if (l->nprograms) {
        v = msg_get(m, NV_PROGRAM, &n);
        for (i = 0; v && i < l->nprograms; i++)
            if (strlen(l->programs[i]) == n && memcmp(l->programs[i], v, n) == 0) break;
        if (!v || i == l->nprograms) return false;
    }
    if (l->nclasses) {
        v = msg_get(m, NV_CLASS, &n);
        for (i = 0; v && i < l->nclasses; i++)
            if (strlen(l->classes[i]) == n && memcmp(l->classes[i], v, n) == 0) break;
        if (!v || i == l->nclasses) return false;
    }
    if (l->nrules) {
        v = msg_get(m, NV_RULE_ID, &n);
        for (i = 0; v && i < l->nrules; i++)
            if (strlen(l->rules[i]) == n && memcmp(l->rules[i], v, n) == 0) break;
        if (!v || i == l->nrules) return false;
    }
    return true;
}

static int
idx_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

static void
grow_gens(uint32_t **a, size_t *n, size_t want)
{
    if (*n >= want) return;
    *a = xrealloc(*a, want * sizeof(**a));
    memset(*a + *n, 0, (want - *n) * sizeof(**a));
    *n = want;
}

/* ---- correlation rules: state ---- */

static void
group_free(struct cgroup *g)
{
    size_t i;

    for (i = 0; i < g->nvals; i++) free(g->vals[i].v);
    free(g->vals);
    free(g->ts);
    free(g->cn);
    free(g->nums);
    free(g->hs);
    free(g->tk);
    free(g->tn);
    free(g->seen);
    free(g->key);
    free(g);
}

/* Whether time t is in the window of a correlation of span ending now (out of order: it is). */
static bool
in_window(uint64_t t, uint64_t now, uint64_t span)
{
    return t >= now || now - t <= span;
}

/* Slots a new group's ring or value_count's value array starts with. */
#define GROUP_CAP0 4

/*
 * Memory accounting.  A group costs its struct, its key, its place in the
 * table, and the arrays of its kind (ring_bytes(), value_count's values
 * and their bytes, temporal's times per reference); its correlation's share
 * pays for it.
 */
/* The buffer of a key: its bytes and a NUL, rounded up, so that a spare group fits keys of like
 * length. */
static size_t
key_cap(size_t keylen)
{
    return (keylen + 1 + 31) & ~(size_t)31;
}

static size_t
group_base(const struct scorr *c, size_t keylen)
{
    size_t n = sizeof(struct cgroup) + key_cap(keylen) + 2 * sizeof(struct cgroup *);

    if (c->type == CT_TEMPORAL || c->type == CT_TEMPORAL_ORDERED) n += c->nrefs * sizeof(uint64_t);
    return n;
}

/* The ring of cap events: times, and values (value_sum, value_avg) or hashes and their table. */
static size_t
ring_bytes(const struct scorr *c, size_t cap)
{
    size_t slot = sizeof(uint64_t);

    if (c->type == CT_VALUE_SUM || c->type == CT_VALUE_AVG) slot += sizeof(double);
    if (c->type != CT_VALUE_PERCENTILE) slot += sizeof(uint32_t);
    if (c->type == CT_VALUE_PERCENTILE)
        slot += sizeof(uint64_t) + 2 * (sizeof(uint64_t) + sizeof(uint32_t));
    return cap * slot;
}

static bool
has_ring(const struct scorr *c)
{
    return c->type == CT_EVENT_COUNT || c->type == CT_VALUE_SUM || c->type == CT_VALUE_AVG ||
           c->type == CT_VALUE_PERCENTILE;
}

static void
charge(struct sigma_scratch *sc, struct cgroup *g, size_t add, size_t sub)
{
    struct cshare *sh = &sc->shares[g->corr];

    g->bytes = g->bytes + add - sub;
    sh->bytes = sh->bytes + add - sub;
    sc->bytes = sc->bytes + add - sub;
}

/* The shares for the correlations of s (a set grows while it loads, never shrinks). */
static void
shares_fit(struct sigma_scratch *sc, const struct sigma *s)
{
    if (sc->nshares < s->ncorrs) {
        sc->shares = xrealloc(sc->shares, s->ncorrs * sizeof(*sc->shares));
        memset(sc->shares + sc->nshares, 0, (s->ncorrs - sc->nshares) * sizeof(*sc->shares));
        sc->nshares = s->ncorrs;
    }
    sc->share = sc->budget / (s->ncorrs ? s->ncorrs : 1);
}

static void
lru_unlink(struct sigma_scratch *sc, struct cgroup *g)
{
    struct cshare *sh = &sc->shares[g->corr];

    if (g->lprev)
        g->lprev->lnext = g->lnext;
    else
        sh->head = g->lnext;
    if (g->lnext)
        g->lnext->lprev = g->lprev;
    else
        sh->tail = g->lprev;
    g->lprev = g->lnext = NULL;
}

static void
lru_append(struct sigma_scratch *sc, struct cgroup *g)
{
    struct cshare *sh = &sc->shares[g->corr];

    g->lnext = NULL;
    g->lprev = sh->tail;
    if (sh->tail)
        sh->tail->lnext = g;
    else
        sh->head = g;
    sh->tail = g;
}

/* Drops group g: out of the table, its list and its share (kept as the spare if it can be). */
static void
group_drop(struct sigma_scratch *sc, const struct sigma *s, struct cgroup *g)
{
    const struct scorr *c = s->corrs[g->corr]->impl->corr;
    size_t i;

    struct cgroup **pp = &sc->gtab[g->hash & (sc->ngtab - 1)];

    while (*pp != g) pp = &(*pp)->next;
    *pp = g->next;
    lru_unlink(sc, g);
    charge(sc, g, 0, g->bytes);
    sc->shares[g->corr].groups--;
    sc->ngroups--;
    if (sc->spare || ((has_ring(c) || c->type == CT_VALUE_COUNT) && g->cap != GROUP_CAP0)) {
        group_free(g);
        return;
    }
    for (i = 0; i < g->nvals; i++) free(g->vals[i].v);
    g->nvals = 0;
    sc->spare = g;
}

/* The events g holds: how far it is from firing, for group_evict(). */
static size_t
events_of(const struct cgroup *g, const struct scorr *c)
{
    size_t i, n = 0;

    if (c->type == CT_VALUE_COUNT) return g->nvals;
    if (!has_ring(c)) {
        for (i = 0; i < c->nrefs; i++) n += g->seen[i] != 0;
        return n;
    }
    return c->type == CT_VALUE_PERCENTILE ? g->n : g->events;
}

/*
 * Evicts a group of correlation k, never self: of the EVICT_SAMPLE fed
 * longest ago, the first with no event in its timespan (as good as none),
 * else the one that holds the fewest events, the least recently fed of
 * those.  A group that has grown shows that its group-by values repeat (the
 * real brute force); what a flood of spoofed values leaves is one-event
 * groups, and a new group deserves the chance the oldest of them has had.
 * False when there is none.
 */
static bool
group_evict(struct sigma_scratch *sc, const struct sigma *s, uint32_t k, const struct cgroup *self)
{
    const struct scorr *c = s->corrs[k]->impl->corr;
    struct cgroup *g, *best = NULL;
    size_t n, e, fewest = SIZE_MAX;

    for (g = sc->shares[k].head, n = 0; g && n < EVICT_SAMPLE; g = g->lnext, n++) {
        if (g == self) continue;
        if (!in_window(g->last, sc->now, c->span)) {
            group_drop(sc, s, g);
            return true;
        }
        if ((e = events_of(g, c)) < fewest) {
            best = g;
            fewest = e;
        }
    }
    if (!best) return false;
    sc->evicted++;
    group_drop(sc, s, best);
    return true;
}

/* Whether correlation k's share has room for need more bytes, after evicting its groups. */
static bool
make_room(struct sigma_scratch *sc, const struct sigma *s, uint32_t k, size_t need,
          const struct cgroup *self)
{
    int rounds = 0;

    while (sc->shares[k].bytes + need > sc->share)
        if (rounds++ == EVICT_ROUNDS || !group_evict(sc, s, k, self)) return false;
    return true;
}

/* Drops the groups with no event in their timespan at the heads of the lists. */
static void
groups_expire(struct sigma_scratch *sc, const struct sigma *s)
{
    size_t k;

    for (k = 0; k < sc->nshares && k < s->ncorrs; k++) {
        uint64_t span = s->corrs[k]->impl->corr->span;
        while (sc->shares[k].head && !in_window(sc->shares[k].head->last, sc->now, span))
            group_drop(sc, s, sc->shares[k].head);
    }
    sc->swept = sc->now;
}

static uint32_t tab_inc(struct cgroup *g, uint64_t h);

/* Gives the ring of g cap slots, keeping its events (in order, from 0). */
static void
ring_resize(struct cgroup *g, const struct scorr *c, size_t cap)
{
    bool nums = c->type == CT_VALUE_SUM || c->type == CT_VALUE_AVG;
    bool hs = c->type == CT_VALUE_PERCENTILE;
    uint64_t *ts = xmalloc(cap * sizeof(*ts));
    double *ns = nums ? xmalloc(cap * sizeof(*ns)) : NULL;
    uint64_t *hh = hs ? xmalloc(cap * sizeof(*hh)) : NULL;
    uint32_t *cn = hs ? NULL : xmalloc(cap * sizeof(*cn));
    size_t i;

    for (i = 0; i < g->n; i++) {
        ts[i] = g->ts[(g->head + i) % g->cap];
        if (cn) cn[i] = g->cn[(g->head + i) % g->cap];
        if (nums) ns[i] = g->nums[(g->head + i) % g->cap];
        if (hs) hh[i] = g->hs[(g->head + i) % g->cap];
    }
    free(g->ts);
    free(g->cn);
    free(g->nums);
    free(g->hs);
    g->ts = ts;
    g->cn = cn;
    g->nums = ns;
    g->hs = hh;
    g->cap = cap;
    g->head = 0;
    if (hs) { /* the table grows with the ring, at most half full */
        free(g->tk);
        free(g->tn);
        g->tk = xmalloc(2 * cap * sizeof(*g->tk));
        g->tn = xcalloc(2 * cap, sizeof(*g->tn));
        for (i = 0; i < g->n; i++) tab_inc(g, g->hs[i]);
    }
}

/* Forgets the events of g: after it fired, the next alert needs events of its own. */
static void
group_reset(struct sigma_scratch *sc, struct cgroup *g, const struct scorr *c)
{
    size_t i;

    for (i = 0; i < g->nvals; i++) {
        charge(sc, g, 0, g->vals[i].n + 1);
        free(g->vals[i].v);
    }
    g->nvals = 0;
    if (g->tn && g->n) memset(g->tn, 0, 2 * g->cap * sizeof(*g->tn));
    g->head = g->n = g->events = 0;
    g->sum = 0;
    if (g->seen) memset(g->seen, 0, c->nrefs * sizeof(*g->seen));
}

static void
groups_grow(struct sigma_scratch *sc)
{
    size_t n = sc->ngtab ? sc->ngtab * 2 : 1024, b;
    struct cgroup **t = xcalloc(n, sizeof(*t));

    for (b = 0; b < sc->ngtab; b++)
        while (sc->gtab[b]) {
            struct cgroup *g = sc->gtab[b];
            sc->gtab[b] = g->next;
            g->next = t[g->hash & (n - 1)];
            t[g->hash & (n - 1)] = g;
        }
    free(sc->gtab);
    sc->gtab = t;
    sc->ngtab = n;
}

/*
 * The group of correlation k with the key in sc->key, made if new; NULL
 * when its correlation's share has no room even after evictions.
 */
static struct cgroup *
group_get(struct sigma_scratch *sc, const struct sigma *s, uint32_t k)
{
    uint64_t h = hash_bytes(hash_string(sc->key.p, sc->key.len), &k, sizeof(k));
    const struct scorr *c = s->corrs[k]->impl->corr;
    struct cgroup *g;
    size_t need;

    if (sc->ngtab)
        for (g = sc->gtab[h & (sc->ngtab - 1)]; g; g = g->next)
            if (g->hash == h && g->corr == k && g->keylen == sc->key.len &&
                (!g->keylen || !memcmp(g->key, sc->key.p, g->keylen)))
                return g;
    need = group_base(c, sc->key.len);
    if (has_ring(c)) need += ring_bytes(c, GROUP_CAP0);
    if (c->type == CT_VALUE_COUNT) need += GROUP_CAP0 * sizeof(struct cval);
    if (!make_room(sc, s, k, need, NULL)) return NULL;
    if (sc->ngroups >= sc->ngtab * 2) groups_grow(sc);
    if (sc->spare && (sc->spare->corr != k || sc->spare->keycap != key_cap(sc->key.len))) {
        group_free(sc->spare);
        sc->spare = NULL;
    }
    if ((g = sc->spare)) { /* its arrays are those a new group of k starts with */
        sc->spare = NULL;
        g->lprev = g->lnext = NULL;
        g->bytes = 0;
        g->last = 0;
        g->sum = 0;
        g->head = g->n = g->events = 0;
        if (g->tn) memset(g->tn, 0, 2 * g->cap * sizeof(*g->tn));
        if (g->seen) memset(g->seen, 0, c->nrefs * sizeof(*g->seen));
    } else {
        g = xcalloc(1, sizeof(*g));
        g->corr = k;
        g->keycap = key_cap(sc->key.len);
        g->key = xmalloc(g->keycap);
        if (c->type == CT_TEMPORAL || c->type == CT_TEMPORAL_ORDERED)
            g->seen = xcalloc(c->nrefs, sizeof(*g->seen));
        if (has_ring(c)) ring_resize(g, c, GROUP_CAP0);
        if (c->type == CT_VALUE_COUNT) {
            g->vals = xmalloc(GROUP_CAP0 * sizeof(*g->vals));
            g->cap = GROUP_CAP0;
        }
    }
    g->hash = h;
    g->keylen = sc->key.len;
    if (g->keylen) memcpy(g->key, sc->key.p, g->keylen); /* no group-by: an empty key */
    g->next = sc->gtab[h & (sc->ngtab - 1)];
    sc->gtab[h & (sc->ngtab - 1)] = g;
    lru_append(sc, g);
    charge(sc, g, need, 0);
    sc->shares[k].groups++;
    sc->ngroups++;
    return g;
}

static bool
cond_holds(const struct scorr *c, double v)
{
    size_t i;

    for (i = 0; i < c->nconds; i++) {
        double t = c->conds[i].v;
        bool ok = false;
        switch (c->conds[i].op) {
        case CO_GT: ok = v > t; break;
        case CO_GTE: ok = v >= t; break;
        case CO_LT: ok = v < t; break;
        case CO_LTE: ok = v <= t; break;
        case CO_EQ: ok = v == t; break;
        case CO_NEQ: ok = v != t; break;
        }
        if (!ok) return false;
    }
    return true;
}

/* Value i of value_count group g leaves. */
static void
distinct_drop(struct sigma_scratch *sc, struct cgroup *g, size_t i)
{
    charge(sc, g, 0, g->vals[i].n + 1);
    free(g->vals[i].v);
    g->vals[i] = g->vals[--g->nvals];
}

static void
distinct_drop_oldest(struct sigma_scratch *sc, struct cgroup *g)
{
    size_t i, oldest = 0;

    for (i = 1; i < g->nvals; i++)
        if (g->vals[i].t < g->vals[oldest].t) oldest = i;
    distinct_drop(sc, g, oldest);
}

/*
 * An event of value_count's field: its value joins the group's distinct
 * set; returns the number of distinct values, or -1 when the value could
 * not be kept (its correlation's share has no room for it).
 */
static long
distinct_add(struct sigma_scratch *sc, const struct sigma *s, struct cgroup *g,
             const struct scorr *c, const char *v, size_t n)
{
    uint64_t now = sc->now;
    size_t i, need;

    for (i = 0; i < g->nvals;)
        if (!in_window(g->vals[i].t, now, c->span))
            distinct_drop(sc, g, i);
        else
            i++;
    for (i = 0; i < g->nvals; i++)
        if (g->vals[i].n == n && !memcmp(g->vals[i].v, v, n)) {
            g->vals[i].t = now;
            return (long)g->nvals;
        }
    /* the bound: the value seen longest ago makes room */
    if (g->nvals == MAX_DISTINCT) distinct_drop_oldest(sc, g);
    need = n + 1 + (g->nvals == g->cap ? g->cap * sizeof(*g->vals) : 0);
    if (!make_room(sc, s, g->corr, need, g)) {
        /* no other group to evict: this group's oldest value makes room, as at the bound */
        if (!g->nvals) return -1;
        distinct_drop_oldest(sc, g);
        need = n + 1;
        if (!make_room(sc, s, g->corr, need, g)) return -1;
    }
    if (g->nvals == g->cap) {
        g->vals = xrealloc(g->vals, 2 * g->cap * sizeof(*g->vals));
        g->cap *= 2;
    }
    charge(sc, g, need, 0);
    g->vals[g->nvals].v = xmalloc(n + 1);
    memcpy(g->vals[g->nvals].v, v, n);
    g->vals[g->nvals].n = n;
    g->vals[g->nvals++].t = now;
    return (long)g->nvals;
}

/* value_percentile's count of the events with hash h: the slot of h, or the free one for it. */
static size_t
tab_slot(const struct cgroup *g, uint64_t h)
{
    size_t mask = 2 * g->cap - 1, i = (size_t)h & mask;

    while (g->tn[i] && g->tk[i] != h) i = (i + 1) & mask;
    return i;
}

static uint32_t
tab_inc(struct cgroup *g, uint64_t h)
{
    size_t i = tab_slot(g, h);

    g->tk[i] = h;
    return ++g->tn[i];
}

/* One event of hash h leaves; a slot that empties moves its followers back (no tombstones). */
static void
tab_dec(struct cgroup *g, uint64_t h)
{
    size_t mask = 2 * g->cap - 1, i = tab_slot(g, h), j, home;

    if (--g->tn[i]) return;
    for (j = (i + 1) & mask; g->tn[j]; j = (j + 1) & mask) {
        home = (size_t)g->tk[j] & mask;
        /* j's entry may move to i unless its home lies cyclically in (i, j] */
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j)) continue;
        g->tk[i] = g->tk[j];
        g->tn[i] = g->tn[j];
        g->tn[j] = 0;
        i = j;
    }
}

/* The oldest time of g's ring leaves, with its events. */
static void
ring_pop(struct cgroup *g, const struct scorr *c)
{
    if (c->type == CT_VALUE_SUM || c->type == CT_VALUE_AVG) g->sum -= g->nums[g->head];
    if (c->type == CT_VALUE_PERCENTILE)
        tab_dec(g, g->hs[g->head]);
    else
        g->events -= g->cn[g->head];
    g->head = (g->head + 1) % g->cap;
    g->n--;
}

/*
 * An event of event_count, value_sum, value_avg or value_percentile: its time
 * (and value x for value_sum and value_avg, the hash h of its value for
 * value_percentile) joins the group's ring; returns the events in the window.
 * Events of event_count, value_sum and value_avg at the time of the ring's
 * newest slot join that slot (a count and a sum): a burst costs no memory.
 * The ring doubles up to MAX_EVENTS slots while its correlation's share has
 * room (after evicting other groups of it); when full, the oldest slot makes
 * room.
 */
static size_t
count_add(struct sigma_scratch *sc, const struct sigma *s, struct cgroup *g, const struct scorr *c,
          double x, uint64_t h)
{
    bool nums = c->type == CT_VALUE_SUM || c->type == CT_VALUE_AVG;
    bool hs = c->type == CT_VALUE_PERCENTILE;
    uint64_t now = sc->now;
    size_t at;

    while (g->n && !in_window(g->ts[g->head], now, c->span)) ring_pop(g, c);
    if (!g->n) g->sum = 0; /* no drift carried over an empty window */
    if (!hs && g->n) {
        at = (g->head + g->n - 1) % g->cap;
        if (g->ts[at] == now && g->cn[at] < UINT32_MAX) {
            g->cn[at]++;
            if (nums) {
                g->nums[at] += x;
                g->sum += x;
            }
            return ++g->events;
        }
    }
    if (g->n == g->cap) {
        size_t more = ring_bytes(c, 2 * g->cap) - ring_bytes(c, g->cap);
        if (g->cap < MAX_EVENTS && make_room(sc, s, g->corr, more, g)) {
            ring_resize(g, c, 2 * g->cap);
            charge(sc, g, more, 0);
        } else { /* the bound: the oldest slot makes room */
            ring_pop(g, c);
        }
    }
    at = (g->head + g->n) % g->cap;
    g->ts[at] = now;
    if (nums) {
        g->nums[at] = x;
        g->sum += x;
    }
    g->n++;
    if (hs) {
        g->hs[at] = h;
        return g->n;
    }
    g->cn[at] = 1;
    return ++g->events;
}

/*
 * An event of value_percentile with the value of hash h: it joins the
 * group's ring, and the result is the share, in percent, of the events in
 * the window (this one included) whose value is this one's. Exact over the
 * ring, which holds the window's latest MAX_EVENTS events (fewer when the
 * correlation's memory share is full); the count of each hash in the ring
 * is kept in a table, so that an event costs no pass.
 */
static double
percent_add(struct sigma_scratch *sc, const struct sigma *s, struct cgroup *g,
            const struct scorr *c, uint64_t h)
{
    size_t n = count_add(sc, s, g, c, 0, h);

    return 100.0 * (double)tab_inc(g, h) / (double)n;
}

/* The number field value v (n bytes) holds, as a whole; false if none. */
static bool
number_of(const char *v, size_t n, double *x)
{
    char tmp[64], *end;

    if (!n || n >= sizeof(tmp)) return false;
    memcpy(tmp, v, n);
    tmp[n] = 0;
    *x = strtod(tmp, &end);
    return *end == 0 && *x == *x && *x - *x == 0; /* not NaN nor infinite */
}

typedef void (*fire_fn)(void *arg, const struct sigma_rule *r);

/*
 * Message m is an event of position pos of correlation k (it matched
 * refs[pos], or that correlation fired on it): updates the group of its
 * group-by values, and reports the correlation when it fires, then feeds
 * the correlations chained on it.
 */
static void
corr_feed(struct sigma_scratch *sc, const struct sigma *s, uint32_t k, uint32_t pos,
          const struct msg *m, fire_fn fn, void *arg)
{
    const struct sigma_rule *cr = s->corrs[k];
    const struct scorr *c = cr->impl->corr;
    struct cgroup *g;
    const char *v = NULL;
    size_t n, i, got = 0;
    double x = 0;
    bool fire = false;

    buf_reset(&sc->key);
    for (i = 0; i < c->ngroup; i++) {
        uint32_t len;
        v = msg_get(m, c->group_h[i * c->nrefs + pos], &n);
        if (!v) v = "", n = 0; /* an absent field groups as the empty value */
        len = (uint32_t)n;
        buf_append(&sc->key, (const char *)&len, sizeof(len));
        buf_append(&sc->key, v, n);
    }
    if (c->field && !(v = msg_get(m, c->field_h[pos], &n)))
        return; /* an event without the field has no value to count */
    if ((c->type == CT_VALUE_SUM || c->type == CT_VALUE_AVG) && !number_of(v, n, &x))
        return; /* nor one whose value is not a number */
    if (!(g = group_get(sc, s, k))) {
        sc->dropped++;
        return;
    }
    g->last = sc->now;
    if (sc->shares[k].tail != g) { /* the least recently fed go first (group_evict()) */
        lru_unlink(sc, g);
        lru_append(sc, g);
    }
    switch (c->type) {
    case CT_EVENT_COUNT: fire = cond_holds(c, (double)count_add(sc, s, g, c, 0, 0)); break;
    case CT_VALUE_SUM:
        count_add(sc, s, g, c, x, 0);
        fire = cond_holds(c, g->sum);
        break;
    case CT_VALUE_AVG:
        n = count_add(sc, s, g, c, x, 0);
        fire = cond_holds(c, g->sum / (double)n);
        break;
    case CT_VALUE_COUNT: {
        long d;
        v = msg_get(m, c->field_h[pos], &n);
        if ((d = distinct_add(sc, s, g, c, v, n)) < 0) {
            sc->dropped++;
            return;
        }
        fire = cond_holds(c, (double)d);
        break;
    }
    case CT_VALUE_PERCENTILE:
        v = msg_get(m, c->field_h[pos], &n);
        fire = cond_holds(c, percent_add(sc, s, g, c, hash_string(v, n)));
        break;
    case CT_TEMPORAL:
        g->seen[pos] = sc->now + 1;
        /* each referenced rule counts once, the same rule at two positions once */
        for (i = 0; i < c->nrefs; i++) {
            size_t j;
            if (!g->seen[i] || !in_window(g->seen[i] - 1, sc->now, c->span)) continue;
            for (j = 0; j < i; j++)
                if (c->ref_rules[j] == c->ref_rules[i] && g->seen[j]) break;
            if (j == i) got++;
        }
        if (c->nconds)
            fire = cond_holds(c, (double)got);
        else {
            size_t distinct = 0;
            for (i = 0; i < c->nrefs; i++) {
                size_t j;
                for (j = 0; j < i; j++)
                    if (c->ref_rules[j] == c->ref_rules[i]) break;
                if (j == i) distinct++;
            }
            fire = got == distinct;
        }
        break;
    case CT_TEMPORAL_ORDERED:
        /* seen[p]: the start of the latest chain in order up to p, which is the one most
         * likely to complete within the timespan */
        if (pos == 0)
            g->seen[0] = sc->now + 1;
        else if (g->seen[pos - 1] && in_window(g->seen[pos - 1] - 1, sc->now, c->span))
            g->seen[pos] = g->seen[pos - 1];
        fire = pos == c->nrefs - 1 && g->seen[pos] && in_window(g->seen[pos] - 1, sc->now, c->span);
        break;
    }
    if (!fire) return;
    /* the alert reads the group-by values from the group: report before the reset */
    if (fn && !cr->impl->quiet) {
        sc->fired = g;
        fn(arg, cr);
        sc->fired = NULL;
    }
    group_reset(sc, g, c);
    for (i = cr->impl->nfeeds; i-- > 0;)
        corr_feed(sc, s, cr->impl->feeds[i].corr, cr->impl->feeds[i].pos, m, fn, arg);
}

void
sigma_scratch_set_time(struct sigma_scratch *sc, uint64_t now_ms)
{
    sc->now = now_ms;
}

void
sigma_scratch_set_memory(struct sigma_scratch *sc, size_t bytes)
{
    sc->budget = bytes ? bytes : MEMORY_DEFAULT;
    if (sc->s) shares_fit(sc, sc->s);
}

uint64_t
sigma_scratch_dropped(const struct sigma_scratch *sc)
{
    return sc->dropped;
}

uint64_t
sigma_scratch_evicted(const struct sigma_scratch *sc)
{
    return sc->evicted;
}

size_t
sigma_scratch_bytes(const struct sigma_scratch *sc)
{
    return sc->bytes;
}

size_t
sigma_scratch_groups(const struct sigma_scratch *sc)
{
    return sc->ngroups;
}

size_t
sigma_match(const struct sigma *s, const struct msg *m, struct sigma_scratch *sc,
            void (*fn)(void *arg, const struct sigma_rule *r), void *arg)
{
    struct eval e = {NULL, m, sc};
    size_t i, u, g, u2, hits = 0;

    if (!s->nrules) return 0;
    if (sc->nls < s->nls) {
        sc->ls = xrealloc(sc->ls, s->nls);
        sc->nls = s->nls;
    }
    memset(sc->ls, -1, s->nls);
    grow_gens(&sc->lit_gen, &sc->nlit, s->nlits);
    grow_gens(&sc->scan_gen, &sc->nscan, s->nscans);
    grow_gens(&sc->rule_gen, &sc->nrule, s->nrules);
    if (sc->s != s || sc->nshares < s->ncorrs) shares_fit(sc, s);
    sc->s = s;
    sc->m = m;
    /* groups whose timespan has passed go, once a second: their memory is for new ones */
    if (sc->nshares && (sc->now >= sc->swept + 1000 || sc->now < sc->swept)) groups_expire(sc, s);
    if (++sc->gen == 0) { /* wrapped: what held an old number must not look current */
        memset(sc->lit_gen, 0, sc->nlit * sizeof(*sc->lit_gen));
        memset(sc->scan_gen, 0, sc->nscan * sizeof(*sc->scan_gen));
        memset(sc->rule_gen, 0, sc->nrule * sizeof(*sc->rule_gen));
        sc->gen = 1;
    }
    /* the gating scans first: they list the gated rules worth evaluating */
    sc->ncand = 0;
    for (i = 0; i < s->nscans; i++)
        if (s->scans[i].gates) do_scan(sc, (uint32_t)i);
    if (sc->ncand > 1) qsort(sc->cand, sc->ncand, sizeof(*sc->cand), idx_cmp);
    /* those and the ungated rules, merged in load order */
    for (u = 0, g = 0; u < s->nungated || g < sc->ncand;) {
        const struct sigma_rule *r;
        signed char *ls;
        if (g == sc->ncand || (u < s->nungated && s->ungated[u] < sc->cand[g]))
            i = s->ungated[u++];
        else
            i = sc->cand[g++];
        r = s->rules[i];
        ls = &sc->ls[r->impl->ls_index];
        if (*ls < 0) *ls = ls_match(r->impl->ls, m);
        if (!*ls) continue;
        e.im = r->impl;
        if (!sigma_cond_eval(r->impl->cond, sel_match, &e)) continue;
        hits++;
        if (fn && !r->impl->quiet) fn(arg, r);
        /* in reverse: a rule at two positions of a temporal_ordered takes the later first */
        for (u2 = r->impl->nfeeds; u2-- > 0;)
            corr_feed(sc, s, r->impl->feeds[u2].corr, r->impl->feeds[u2].pos, m, fn, arg);
    }
    return hits;
}

struct msg *
sigma_alert(const struct sigma_rule *r, const struct msg *m)
{
    struct msg *g = msg_new();
    struct buf b = {0};
    const char *v;
    size_t n, i;

    msg_set_stamp(g, msg_stamp(m));
    msg_set_recvd(g, msg_recvd(m));
    msg_set_pri(g, msg_pri(m));
    msg_set_flags(g, MSG_F_GENERATED);
    for (i = 0; i < r->impl->nlabels; i++)
        if ((v = msg_get(m, r->impl->labels[i], &n))) msg_set(g, r->impl->labels[i], v, n);
    v = msg_get(m, NV_HOST, &n);
    msg_set(g, NV_HOST, v ? v : "", v ? n : 0);
    if ((v = msg_get(m, NV_PROGRAM, &n))) msg_set(g, NV_PROGRAM, v, n);
    if ((v = msg_get(m, NV_PID, &n))) msg_set(g, NV_PID, v, n);
    if ((v = msg_get(m, NV_MESSAGE, &n))) msg_set(g, NV_MESSAGE, v, n);
    msg_set(g, NV_RULE_ID, r->id, strlen(r->id));
    msg_set(g, NV_CLASS, "sigma", 5);
    msg_set(g, h_summary, r->title, strlen(r->title));
    msg_set(g, h_severity, r->severity, strlen(r->severity));
    if (r->level) msg_set(g, h_level, r->level, strlen(r->level));
    if (r->author) msg_set(g, h_author, r->author, strlen(r->author));
    msg_set(g, h_event, r->impl->event, strlen(r->impl->event));
    buf_puts(&b, r->impl->alert_id);
    if ((v = msg_get(m, NV_HOST, &n))) buf_append(&b, v, n);
    msg_set(g, h_id, b.p, b.len);
    buf_free(&b);
    msg_tag_set(g, tag_alert);
    return g;
}

struct msg *
sigma_alert_fired(const struct sigma_rule *r, const struct msg *m, const struct sigma_scratch *sc)
{
    const struct scorr *c = r->impl->corr;
    struct msg *g = sigma_alert(r, m);
    struct buf b = {0};
    const char *k, *end;
    size_t i;

    if (!c || !sc || !sc->fired) return g;
    /* the group-by values as labels, and in the alert id: one alert per group */
    buf_puts(&b, r->impl->alert_id);
    k = sc->fired->key;
    end = k + sc->fired->keylen;
    for (i = 0; i < c->ngroup && k + sizeof(uint32_t) <= end; i++) {
        uint32_t len;
        memcpy(&len, k, sizeof(len));
        k += sizeof(len);
        msg_set(g, c->label_h[i], k, len);
        if (i) buf_putc(&b, '/');
        buf_append(&b, k, len);
        k += len;
    }
    msg_set(g, h_id, b.p ? b.p : "", b.len);
    buf_free(&b);
    return g;
}
