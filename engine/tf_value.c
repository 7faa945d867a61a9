/*
 * tf_value: $(values) and $(names), the name-value pairs of a message
 * selected by scopes, globs and rekeying options as syslog-ng 3.38's
 * value-pairs do, as a list.
 */
#include "engine/tfunc_int.h"
#include "engine/glob.h"
#include "engine/macros.h"
#include "engine/tfargs.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

enum {
    VPS_NV = 1 << 0,
    VPS_DOT = 1 << 1,
    VPS_SDATA = 1 << 2,
    VPS_RFC3164 = 1 << 3,
    VPS_RFC5424 = 1 << 4,
    VPS_SELECTED = 1 << 5,
    VPS_ALL_MACROS = 1 << 6,
};

enum xform_kind { X_ADD_PREFIX, X_REPLACE_PREFIX, X_SHIFT };

struct vp_xform {
    enum xform_kind kind;
    char *a, *b;
    int n;
};

/* A --rekey/--key glob with the transformations that follow it. */
struct vp_set {
    char *glob;
    struct vp_xform *x;
    size_t nx, capx;
};

struct vp_glob {
    char *pat;
    bool include;
};

struct vp_pair {
    char *name;
    struct template *t;
};

struct vp_state {
    bool values;
    unsigned scopes;
    struct vp_glob *globs;
    size_t nglobs, capglobs;
    struct vp_set *sets;
    size_t nsets, capsets;
    struct vp_pair *pairs;
    size_t npairs, cappairs;
    /* while parsing: the key of a pending --rekey, and whether sets[nsets-1] is still open */
    char *key;
    bool set_open;
};

enum {
    VP_SCOPE,
    VP_EXCLUDE,
    VP_KEY,
    VP_REKEY,
    VP_PAIR,
    VP_SHIFT,
    VP_ADD_PREFIX,
    VP_REPLACE_PREFIX,
    VP_SUBKEYS
};

static const struct tfargs_opt vp_opts[] = {
    {"scope", 's', TFARGS_STRING, VP_SCOPE},
    {"exclude", 'x', TFARGS_STRING, VP_EXCLUDE},
    {"key", 'k', TFARGS_STRING, VP_KEY},
    {"rekey", 'r', TFARGS_STRING, VP_REKEY},
    {"pair", 'p', TFARGS_STRING, VP_PAIR},
    {"shift", 'S', TFARGS_STRING, VP_SHIFT},
    {"add-prefix", 'A', TFARGS_STRING, VP_ADD_PREFIX},
    {"replace-prefix", 'R', TFARGS_STRING, VP_REPLACE_PREFIX},
    {"replace", 0, TFARGS_STRING, VP_REPLACE_PREFIX},
    {"subkeys", 0, TFARGS_STRING, VP_SUBKEYS},
    {NULL, 0, TFARGS_FLAG, 0},
};

static void
vp_finish_key(struct vp_state *st)
{
    st->set_open = false;
    free(st->key);
    st->key = NULL;
}

static void
vp_start_key(struct vp_state *st, const char *key)
{
    vp_finish_key(st);
    st->key = xstrdup(key);
}

/* Adds comma separated globs. */
static void
vp_add_globs(struct vp_state *st, const char *list, bool include)
{
    const char *p = list;

    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        st->globs = xgrow(st->globs, &st->capglobs, st->nglobs + 1, sizeof(*st->globs));
        st->globs[st->nglobs].pat = xstrndup(p, n);
        st->globs[st->nglobs++].include = include;
        if (!comma) break;
        p = comma + 1;
    }
}

/* The open transformation set, made from the pending key if there is none. */
static struct vp_set *
vp_open_set(struct vp_state *st, const char *opt, struct buf *err)
{
    struct vp_set *set;

    if (st->set_open) return &st->sets[st->nsets - 1];
    if (!st->key) {
        buf_printf(err, "Error parsing value-pairs: --%s used without --key or --rekey", opt);
        return NULL;
    }
    st->sets = xgrow(st->sets, &st->capsets, st->nsets + 1, sizeof(*st->sets));
    set = &st->sets[st->nsets++];
    memset(set, 0, sizeof(*set));
    set->glob = st->key;
    st->key = NULL;
    st->set_open = true;
    return set;
}

static void
vp_add_xform(struct vp_set *set, enum xform_kind kind, const char *a, const char *b, int n)
{
    struct vp_xform *x;

    set->x = xgrow(set->x, &set->capx, set->nx + 1, sizeof(*set->x));
    x = &set->x[set->nx++];
    x->kind = kind;
    x->a = a ? xstrdup(a) : NULL;
    x->b = b ? xstrdup(b) : NULL;
    x->n = n;
}

static bool
vp_add_scopes(struct vp_state *st, const char *list, struct buf *err)
{
    static const struct {
        const char *name;
        unsigned bits;
    } scopes[] = {
        {"none", 0},
        {"nv-pairs", VPS_NV},
        {"dot-nv-pairs", VPS_DOT},
        {"all-nv-pairs", VPS_NV | VPS_DOT},
        {"rfc3164", VPS_RFC3164},
        {"core", VPS_RFC3164},
        {"base", VPS_RFC3164},
        {"rfc5424", VPS_RFC5424},
        {"syslog-proto", VPS_RFC5424},
        {"selected-macros", VPS_SELECTED},
        {"all-macros", VPS_ALL_MACROS},
        {"sdata", VPS_SDATA},
        {"everything", VPS_ALL_MACROS | VPS_NV | VPS_DOT},
    };
    const char *p = list;
    size_t i;

    if (!*p) return true; /* GLib splits "" into nothing */
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        for (i = 0; i < ARRAY_LEN(scopes); i++)
            if (strlen(scopes[i].name) == n && !memcmp(scopes[i].name, p, n)) break;
        if (i == ARRAY_LEN(scopes)) {
            buf_printf(err, "Error parsing value-pairs: unknown scope %.*s", (int)n, p);
            return false;
        }
        st->scopes |= scopes[i].bits;
        if (!comma) return true;
        p = comma + 1;
    }
}

/* NAME=TEMPLATE; a type hint written as TYPE(TEMPLATE) is dropped, corral has no typed values. */
static bool
vp_add_pair(struct vp_state *st, const char *spec, struct buf *err)
{
    const char *eq = strchr(spec, '='), *v, *sp;
    char *tsrc;
    struct vp_pair *p;
    size_t vlen;

    if (!eq) {
        buf_printf(err, "Error parsing value-pairs: expected an equal sign in key=value pair");
        return false;
    }
    v = eq + 1;
    vlen = strlen(v);
    sp = v;
    while (*sp == '_' || (*sp >= 'a' && *sp <= 'z') || (*sp >= 'A' && *sp <= 'Z') ||
           (*sp >= '0' && *sp <= '9'))
        sp++;
    while (*sp == ' ' || *sp == '\t') sp++;
    if (*sp == '(' && (v[0] == '_' || ((v[0] | 0x20) >= 'a' && (v[0] | 0x20) <= 'z')) &&
        strchr(sp, ')') == v + vlen - 1) {
        tsrc = xstrndup(sp + 1, (size_t)(v + vlen - 1 - (sp + 1)));
    } else {
        tsrc = xstrdup(v);
    }
    st->pairs = xgrow(st->pairs, &st->cappairs, st->npairs + 1, sizeof(*st->pairs));
    p = &st->pairs[st->npairs++];
    p->name = xstrndup(spec, (size_t)(eq - spec));
    p->t = tfargs_template(tsrc, err);
    free(tsrc);
    return p->t != NULL;
}

static bool
vp_opt(void *ctx, int id, const char *v, int ival, struct buf *err)
{
    struct vp_state *st = ctx;
    struct vp_set *set;
    char *glob;
    const char *eq;

    (void)ival;
    switch (id) {
    case VP_SCOPE: vp_finish_key(st); return vp_add_scopes(st, v, err);
    case VP_EXCLUDE:
        vp_finish_key(st);
        vp_add_globs(st, v, false);
        return true;
    case VP_KEY:
        vp_start_key(st, v);
        vp_add_globs(st, v, true);
        return true;
    case VP_REKEY: vp_start_key(st, v); return true;
    case VP_PAIR: vp_finish_key(st); return vp_add_pair(st, v, err);
    case TFARGS_REST:
        if (strchr(v, '=')) return vp_add_pair(st, v, err);
        vp_start_key(st, v);
        vp_add_globs(st, v, true);
        return true;
    case VP_SHIFT:
        if (!(set = vp_open_set(st, "shift", err))) return false;
        vp_add_xform(set, X_SHIFT, NULL, NULL, atoi(v));
        return true;
    case VP_ADD_PREFIX:
        if (!(set = vp_open_set(st, "add-prefix", err))) return false;
        vp_add_xform(set, X_ADD_PREFIX, v, NULL, 0);
        return true;
    case VP_REPLACE_PREFIX:
        if (!(set = vp_open_set(st, "replace-prefix", err))) return false;
        if (!(eq = strchr(v, '='))) {
            buf_printf(err, "Error parsing value-pairs: rekey replace-prefix construct should be "
                            "in the format string=replacement");
            return false;
        }
        glob = xstrndup(v, (size_t)(eq - v));
        vp_add_xform(set, X_REPLACE_PREFIX, glob, eq + 1, 0);
        free(glob);
        return true;
    case VP_SUBKEYS:
        glob = xmalloc(strlen(v) + 2);
        strcpy(glob, v);
        strcat(glob, "*");
        vp_add_globs(st, glob, true);
        vp_start_key(st, glob);
        free(glob);
        set = vp_open_set(st, "subkeys", err);
        vp_add_xform(set, X_REPLACE_PREFIX, v, "", 0);
        return true;
    default: return true;
    }
}

static void
vp_free(void *p)
{
    struct vp_state *st = p;
    size_t i, k;

    for (i = 0; i < st->nglobs; i++) free(st->globs[i].pat);
    for (i = 0; i < st->nsets; i++) {
        for (k = 0; k < st->sets[i].nx; k++) {
            free(st->sets[i].x[k].a);
            free(st->sets[i].x[k].b);
        }
        free(st->sets[i].x);
        free(st->sets[i].glob);
    }
    for (i = 0; i < st->npairs; i++) {
        free(st->pairs[i].name);
        template_free(st->pairs[i].t);
    }
    free(st->globs);
    free(st->sets);
    free(st->pairs);
    free(st->key);
    free(st);
}

static bool
vp_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err, bool values)
{
    struct vp_state *st = xcalloc(1, sizeof(*st));
    char **args = tfargs_unquote(argc, rawq);
    int npos;

    (void)raw;
    st->values = values;
    call->state = st;
    npos = tfargs_parse(args, argc, vp_opts, vp_opt, st, true, NULL, err);
    vp_finish_key(st);
    tfargs_free(argc, args);
    return npos >= 0;
}

static bool
values_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    return vp_prepare(call, argc, raw, rawq, err, true);
}

static bool
names_prepare(struct tfunc_call *call, int argc, char **raw, char **rawq, struct buf *err)
{
    return vp_prepare(call, argc, raw, rawq, err, false);
}

/* One collected name-value pair: offsets into the arena, seq orders duplicates. */
struct vp_entry {
    size_t name, nlen, val, vlen, seq;
};

static const char *vp_sort_arena;

static int
vp_cmp(const void *x, const void *y)
{
    const struct vp_entry *a = x, *b = y;
    size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
    int c = memcmp(vp_sort_arena + a->name, vp_sort_arena + b->name, n);

    if (c) return c;
    if (a->nlen != b->nlen) return a->nlen < b->nlen ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Whether a name is in the set: the last glob it matches decides, else the scope does. */
static bool
vp_selected(const struct vp_state *st, const char *name, size_t len, bool in_scope)
{
    size_t i;

    for (i = 0; i < st->nglobs; i++)
        if (glob_match(st->globs[i].pat, name, len)) in_scope = st->globs[i].include;
    return in_scope;
}

/* Appends name (rekeyed) and value to the arena and an entry for them. */
static void
vp_collect(const struct vp_state *st, struct buf *arena, struct buf *ents, const char *name,
           size_t nlen, const char *val, size_t vlen)
{
    struct vp_entry e;
    struct buf *key = template_scratch_get(), *tmp;
    size_t i, k;

    buf_append(key, name, nlen);
    for (i = 0; i < st->nsets; i++) {
        const struct vp_set *set = &st->sets[i];
        if (!glob_match(set->glob, key->p, key->len)) continue;
        for (k = 0; k < set->nx; k++) {
            const struct vp_xform *x = &set->x[k];
            size_t alen = x->a ? strlen(x->a) : 0;
            tmp = template_scratch_get();
            if (x->kind == X_ADD_PREFIX) {
                buf_puts(tmp, x->a);
                buf_append(tmp, key->p, key->len);
            } else if (x->kind == X_REPLACE_PREFIX && key->len >= alen &&
                       !memcmp(key->p, x->a, alen)) {
                buf_puts(tmp, x->b);
                buf_append(tmp, key->p + alen, key->len - alen);
            } else if (x->kind == X_SHIFT && x->n >= 0 && (size_t)x->n <= key->len) {
                buf_append(tmp, key->p + x->n, key->len - (size_t)x->n);
            } else {
                /* no change; 3.38 also ignores a shift beyond the end */
                buf_append(tmp, key->p, key->len);
            }
            buf_reset(key);
            buf_append(key, tmp->p, tmp->len);
            template_scratch_put(tmp);
        }
    }
    e.name = arena->len;
    e.nlen = key->len;
    buf_append(arena, key->p, key->len);
    e.val = arena->len;
    e.vlen = vlen;
    buf_append(arena, val, vlen);
    e.seq = ents->len / sizeof(e);
    buf_append(ents, &e, sizeof(e));
    template_scratch_put(key);
}

/* Macros of the rfc3164/rfc5424/selected-macros/all-macros scopes. */
static const char *const vp_macros_rfc3164[] = {"FACILITY", "PRIORITY", "DATE",    "HOST",
                                                "PROGRAM",  "PID",      "MESSAGE", NULL};
static const char *const vp_macros_rfc5424[] = {"MSGID", NULL};
static const char *const vp_macros_selected[] = {"TAGS", "SOURCEIP", "SEQNUM", NULL};
static const char *const vp_macros_all[] = {"FACILITY",
                                            "FACILITY_NUM",
                                            "PRIORITY",
                                            "LEVEL",
                                            "SEVERITY",
                                            "LEVEL_NUM",
                                            "SEVERITY_NUM",
                                            "PRI",
                                            "TAG",
                                            "TAGS",
                                            "MSGHDR",
                                            "SDATA",
                                            "LOGHOST",
                                            "DATE",
                                            "FULLDATE",
                                            "ISODATE",
                                            "STAMP",
                                            "YEAR",
                                            "MONTH",
                                            "MONTH_ABBREV",
                                            "MONTH_NAME",
                                            "DAY",
                                            "HOUR",
                                            "HOUR12",
                                            "AMPM",
                                            "MIN",
                                            "SEC",
                                            "MSEC",
                                            "USEC",
                                            "WEEKDAY",
                                            "WEEK_DAY_ABBREV",
                                            "WEEK_DAY_NAME",
                                            "WEEK_DAY",
                                            "WEEK",
                                            "DAY_OF_YEAR",
                                            "TZOFFSET",
                                            "TZ",
                                            "UNIXTIME",
                                            "HOST",
                                            "HOST_FROM",
                                            "PROGRAM",
                                            "PID",
                                            "MSGID",
                                            "MESSAGE",
                                            "SOURCEIP",
                                            NULL};

static void
vp_collect_macros(const struct vp_state *st, const struct template_env *env, const struct msg *m,
                  const char *const *names, struct buf *arena, struct buf *ents)
{
    struct buf *v = template_scratch_get();

    for (; *names; names++) {
        size_t nlen = strlen(*names);
        int id = macro_lookup(*names, nlen);
        if (!vp_selected(st, *names, nlen, true)) continue;
        buf_reset(v);
        if (id >= 0) {
            macro_eval(id, env, m, v);
        } else {
            nv_handle h = nv_lookup(*names, nlen);
            size_t len;
            const char *s = h ? msg_get(m, h, &len) : NULL;
            if (s) buf_append(v, s, len);
        }
        /* unset macros are left out (3.38's output could not be observed: pdbtool crashes) */
        if (v->len) vp_collect(st, arena, ents, *names, nlen, v->p, v->len);
    }
    template_scratch_put(v);
}

/*
 * $(names [value-pairs options]) and $(values ...): the selected name-value
 * pairs of the current message sorted by name, as a list.  Without --scope
 * nothing is selected, as in 3.38.
 */
static void
vp_eval(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    const struct vp_state *st = call->state;
    struct buf *arena, *ents, *v;
    struct template_env one;
    const struct msg *m;
    struct vp_entry *e;
    size_t i, n, start = out->len;

    if (!env->nmsgs) return;
    m = env->msgs[env->nmsgs - 1];
    arena = template_scratch_get();
    ents = template_scratch_get();
    if (st->scopes & (VPS_RFC3164 | VPS_RFC5424 | VPS_SELECTED))
        vp_collect_macros(st, env, m, vp_macros_rfc3164, arena, ents);
    if (st->scopes & VPS_RFC5424) vp_collect_macros(st, env, m, vp_macros_rfc5424, arena, ents);
    if (st->scopes & VPS_SELECTED) vp_collect_macros(st, env, m, vp_macros_selected, arena, ents);
    if (st->scopes & VPS_ALL_MACROS) vp_collect_macros(st, env, m, vp_macros_all, arena, ents);
    for (i = 0; i < msg_nvalues(m); i++) {
        const char *val, *name;
        size_t vlen, nlen;
        nv_handle h = msg_value_at(m, i, &val, &vlen);
        bool in;
        name = nv_name(h, &nlen);
        if (!name) continue;
        in = (name[0] == '.' && (st->scopes & VPS_DOT)) ||
             (name[0] != '.' && (st->scopes & VPS_NV)) ||
             (nlen > 7 && !memcmp(name, ".SDATA.", 7) && (st->scopes & (VPS_SDATA | VPS_RFC5424)));
        if (vp_selected(st, name, nlen, in)) vp_collect(st, arena, ents, name, nlen, val, vlen);
    }
    /* explicit pairs are always included and override a value of the same name */
    tfunc_env_one(&one, env, env->nmsgs - 1);
    v = template_scratch_get();
    for (i = 0; i < st->npairs; i++) {
        buf_reset(v);
        template_eval(st->pairs[i].t, &one, v);
        vp_collect(st, arena, ents, st->pairs[i].name, strlen(st->pairs[i].name), v->p, v->len);
    }
    template_scratch_put(v);
    e = (struct vp_entry *)ents->p;
    n = ents->len / sizeof(*e);
    vp_sort_arena = arena->p;
    if (n > 1) qsort(e, n, sizeof(*e), vp_cmp);
    for (i = 0; i < n; i++) {
        /* of equal names the one collected last wins */
        if (i + 1 < n && e[i].nlen == e[i + 1].nlen &&
            !memcmp(arena->p + e[i].name, arena->p + e[i + 1].name, e[i].nlen))
            continue;
        tf_list_comma(out, start);
        if (st->values)
            tf_list_encode(out, arena->p + e[i].val, e[i].vlen);
        else
            tf_list_encode(out, arena->p + e[i].name, e[i].nlen);
        if (tfunc_over_cap(out, start)) break;
    }
    template_scratch_put(arena);
    template_scratch_put(ents);
}

/* $(values) and $(names) list names chosen at run time: every value may be read. */
static bool
vp_refs(const struct tfunc_call *call, unsigned char *keep)
{
    (void)call;
    (void)keep;
    return false;
}

const struct tfunc tf_value_funcs[] = {
    {"values", 0, -1, values_prepare, vp_eval, vp_free, vp_refs},
    {"names", 0, -1, names_prepare, vp_eval, vp_free, vp_refs},
    {NULL, 0, 0, NULL, NULL, NULL, NULL},
};
