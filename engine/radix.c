/*
 * radix: a radix tree whose edges are literal text or field parsers.
 *
 * The tree has the shape syslog-ng's has for the same patterns: a literal
 * '@' (written "@@") is a node of its own, a parser is a node whose key is the
 * parser, and literal children are kept sorted by their first byte so exactly
 * one of them can continue a given input.  That shape, together with the
 * search order in find() below, is what makes corral pick the same rule as
 * syslog-ng when several patterns could match.
 *
 * Once built, a tree is compacted (radix_compact): every node, its key and
 * its child arrays are copied into one block in depth-first order, so that a
 * search walks through memory that is mostly contiguous instead of chasing
 * pointers across the heap, where each hop of a large rule set is a cache
 * miss.  Only the placement changes, never the shape or the search.  An
 * insert into a compacted tree first copies it back into separate
 * allocations (radix_thaw), which insertion needs to grow child arrays.
 */
#include "engine/radix.h"
#include "engine/parsers.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct node {
    int32_t keylen; /* -1 for parser nodes */
    bool has_lf;    /* the key holds a '\n': compare byte by byte, skipping input CRs */
    const struct parser *parser; /* what matching uses: own, or its shadow in the arena */
    struct parser *own;
    void *value;
    struct node **children; /* literal children sorted by first byte */
    unsigned char *first;   /* first[i] == children[i]->key[0] */
    uint32_t nchildren;
    struct node **pchildren; /* parser children in insertion order */
    uint32_t npchildren;
    char key[]; /* literal bytes, in the same allocation: one cache line less */
};

struct radix {
    struct node *root;
    char *arena; /* the compacted tree (radix_compact), or NULL: nodes allocated one by one */
};

/* Patterns longer than this are refused: it bounds the depth of the recursive search. */
#define MAX_PATTERN 32768

static struct node *
node_new(const char *key, size_t len, void *value)
{
    struct node *n = xcalloc(1, sizeof(*n) + len + 1);

    memcpy(n->key, key, len);
    n->key[len] = '\0';
    n->keylen = (int32_t)len;
    n->has_lf = memchr(key, '\n', len) != NULL;
    n->value = value;
    return n;
}

/* Frees n's subtree: its parsers and values (free_value) always, its storage unless in an arena. */
static void
node_free(struct node *n, void (*free_value)(void *), bool arena)
{
    uint32_t i;

    for (i = 0; i < n->nchildren; i++) node_free(n->children[i], free_value, arena);
    for (i = 0; i < n->npchildren; i++) node_free(n->pchildren[i], free_value, arena);
    parser_free(n->own);
    if (n->value && free_value) free_value(n->value);
    if (arena) return;
    free(n->children);
    free(n->first);
    free(n->pchildren);
    free(n);
}

struct radix *
radix_new(void)
{
    struct radix *r = xcalloc(1, sizeof(*r));

    r->root = node_new("", 0, NULL);
    return r;
}

void
radix_free(struct radix *r, void (*free_value)(void *))
{
    if (!r) return;
    node_free(r->root, free_value, r->arena != NULL);
    free(r->arena);
    free(r);
}

/*
 * The literal child whose key starts with c.  First bytes are unique among a
 * node's literal children; most nodes have a few, scanned in order, and a
 * node with many (the program tree's root) is searched by halves.
 */
static struct node *
find_child(const struct node *n, unsigned char c)
{
    uint32_t lo = 0, hi = n->nchildren;

    if (hi <= 8) {
        for (; lo < hi; lo++)
            if (n->first[lo] == c) return n->children[lo];
        return NULL;
    }
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (n->first[mid] < c)
            lo = mid + 1;
        else if (n->first[mid] > c)
            hi = mid;
        else
            return n->children[mid];
    }
    return NULL;
}

static void
add_child(struct node *n, struct node *child)
{
    unsigned char c = (unsigned char)child->key[0];
    uint32_t i;

    n->children = xrealloc(n->children, (n->nchildren + 1) * sizeof(*n->children));
    n->first = xrealloc(n->first, n->nchildren + 1);
    for (i = n->nchildren; i > 0 && n->first[i - 1] > c; i--) {
        n->children[i] = n->children[i - 1];
        n->first[i] = n->first[i - 1];
    }
    n->children[i] = child;
    n->first[i] = c;
    n->nchildren++;
}

/* ---- compaction ---- */

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

/*
 * Bytes of n in an arena: the node with its key, then first[], children[],
 * pchildren[] and a shadow of its parser (parser_shadow: the parser a search
 * reads right after the node, not somewhere else on the heap).
 */
static size_t
node_bytes(const struct node *n)
{
    size_t keylen = n->keylen > 0 ? (size_t)n->keylen : 0;

    return ALIGN8(sizeof(*n) + keylen + 1) + ALIGN8(n->nchildren) +
           ((size_t)n->nchildren + n->npchildren) * sizeof(struct node *) +
           (n->own ? ALIGN8(parser_shadow_size(n->own)) : 0);
}

static size_t
tree_bytes(const struct node *n)
{
    size_t total = node_bytes(n);
    uint32_t i;

    for (i = 0; i < n->nchildren; i++) total += tree_bytes(n->children[i]);
    for (i = 0; i < n->npchildren; i++) total += tree_bytes(n->pchildren[i]);
    return total;
}

/*
 * Copies n's subtree into the arena at *at, depth first: a node is followed by
 * its child arrays and then by its first literal child, the one a search
 * tries first.  Frees the originals' storage (parsers and values move).
 */
static struct node *
compact_node(struct node *n, char **at, bool from_arena)
{
    size_t keylen = n->keylen > 0 ? (size_t)n->keylen : 0;
    size_t head = ALIGN8(sizeof(*n) + keylen + 1);
    struct node *c = (struct node *)*at;
    uint32_t i;

    memcpy(c, n, sizeof(*n) + keylen + 1);
    c->first = (unsigned char *)*at + head;
    c->children = (struct node **)(*at + head + ALIGN8(n->nchildren));
    c->pchildren = c->children + n->nchildren;
    if (n->nchildren) memcpy(c->first, n->first, n->nchildren);
    if (n->own) c->parser = parser_shadow(n->own, c->pchildren + n->npchildren);
    *at += node_bytes(n);
    for (i = 0; i < n->nchildren; i++)
        c->children[i] = compact_node(n->children[i], at, from_arena);
    for (i = 0; i < n->npchildren; i++)
        c->pchildren[i] = compact_node(n->pchildren[i], at, from_arena);
    if (!c->nchildren) c->children = NULL, c->first = NULL;
    if (!c->npchildren) c->pchildren = NULL;
    if (!from_arena) {
        free(n->children);
        free(n->first);
        free(n->pchildren);
        free(n);
    }
    return c;
}

void
radix_compact(struct radix *r)
{
    size_t bytes = tree_bytes(r->root);
    char *arena = xmalloc(bytes), *at = arena;

    r->root = compact_node(r->root, &at, r->arena != NULL);
    free(r->arena);
    r->arena = arena;
}

/* Copies n's subtree out of the arena into separate allocations. */
static struct node *
thaw_node(const struct node *n)
{
    size_t keylen = n->keylen > 0 ? (size_t)n->keylen : 0;
    struct node *c = xmalloc(sizeof(*n) + keylen + 1);
    uint32_t i;

    memcpy(c, n, sizeof(*n) + keylen + 1);
    c->parser = c->own;
    c->children = n->nchildren ? xmalloc(n->nchildren * sizeof(*c->children)) : NULL;
    c->first = n->nchildren ? xmalloc(n->nchildren) : NULL;
    c->pchildren = n->npchildren ? xmalloc(n->npchildren * sizeof(*c->pchildren)) : NULL;
    if (n->nchildren) memcpy(c->first, n->first, n->nchildren);
    for (i = 0; i < n->nchildren; i++) c->children[i] = thaw_node(n->children[i]);
    for (i = 0; i < n->npchildren; i++) c->pchildren[i] = thaw_node(n->pchildren[i]);
    return c;
}

static void
radix_thaw(struct radix *r)
{
    if (!r->arena) return;
    r->root = thaw_node(r->root);
    free(r->arena);
    r->arena = NULL;
}

/* ---- insertion ---- */

struct insert {
    void *value;
    void *existing; /* set when the pattern was already present */
};

static void insert(struct node *n, const char *key, size_t len, struct insert *ins);

static void
set_value(struct node *n, struct insert *ins)
{
    if (n->value)
        ins->existing = n->value;
    else
        n->value = ins->value;
}

/* Adds key under n, splitting off its literal part before the first '@'. */
static void
add_child_check(struct node *n, const char *key, size_t len, struct insert *ins)
{
    const char *at = memchr(key, '@', len);

    if (!at) {
        add_child(n, node_new(key, len, ins->value));
    } else if (at > key) {
        struct node *child = node_new(key, (size_t)(at - key), NULL);
        add_child(n, child);
        insert(child, at, len - (size_t)(at - key), ins);
    } else {
        insert(n, key, len, ins);
    }
}

static void
insert_at(struct node *n, const char *key, size_t len, struct insert *ins)
{
    struct node *child;

    if (len >= 2 && key[1] == '@') {
        /* "@@": a literal '@', always a node of its own */
        child = find_child(n, '@');
        if (!child) {
            child = node_new("@", 1, len == 2 ? ins->value : NULL);
            add_child(n, child);
        } else if (len == 2) {
            set_value(child, ins);
        }
        if (len > 2) insert(child, key + 2, len - 2, ins);
        return;
    }

    /* a parser; radix_check_pattern() has already vouched for it */
    const char *end = memchr(key + 1, '@', len - 1);
    struct buf err = BUF_INIT;
    struct parser *p = parser_compile(key + 1, (size_t)(end - key - 1), &err);
    uint32_t i;

    buf_free(&err);
    child = NULL;
    for (i = 0; i < n->npchildren; i++)
        if (parser_equal(n->pchildren[i]->parser, p)) {
            child = n->pchildren[i];
            break;
        }
    if (child) {
        parser_free(p);
    } else {
        child = xcalloc(1, sizeof(*child) + 1); /* an empty key, as every node has */
        child->keylen = -1;
        child->parser = child->own = p;
        n->pchildren = xrealloc(n->pchildren, (n->npchildren + 1) * sizeof(*n->pchildren));
        n->pchildren[n->npchildren++] = child;
    }
    if ((size_t)(end - key) < len - 1)
        insert(child, end + 1, len - (size_t)(end - key) - 1, ins);
    else
        set_value(child, ins);
}

static void
insert(struct node *n, const char *key, size_t len, struct insert *ins)
{
    size_t nodelen = n->keylen > 0 ? (size_t)n->keylen : 0;
    size_t i = 0;
    struct node *child;

    if (key[0] == '@') {
        insert_at(n, key, len, ins);
        return;
    }
    while (i < len && i < nodelen && key[i] == n->key[i] && key[i] != '@') i++;

    if (n->keylen <= 0 || i == 0 || (i < len && i >= nodelen)) {
        /* continue below this node */
        child = find_child(n, (unsigned char)key[i]);
        if (child && key[i] == '@')
            insert(n, key + i, len - i, ins);
        else if (child)
            insert(child, key + i, len - i, ins);
        else
            add_child_check(n, key + i, len - i, ins);
    } else if (i == len && i == nodelen) {
        set_value(n, ins);
    } else {
        /* split this node at i */
        struct node *old = node_new(n->key + i, nodelen - i, n->value);
        old->children = n->children;
        old->first = n->first;
        old->nchildren = n->nchildren;
        old->pchildren = n->pchildren;
        old->npchildren = n->npchildren;
        n->children = NULL;
        n->first = NULL;
        n->nchildren = 0;
        n->pchildren = NULL;
        n->npchildren = 0;
        n->value = NULL;
        n->key[i] = '\0';
        n->keylen = (int32_t)i;
        n->has_lf = memchr(n->key, '\n', i) != NULL;
        add_child(n, old);
        if (i < len)
            add_child_check(n, key + i, len - i, ins);
        else
            n->value = ins->value;
    }
}

/*
 * Checks a pattern; on error *valid is set to the length of its prefix that
 * syslog-ng would still have inserted (everything before the offending '@'),
 * or 0 when it inserts nothing at all.
 */
static bool
check_pattern(const char *pattern, size_t len, struct buf *err, size_t *valid)
{
    size_t i = 0;

    *valid = 0;
    if (len == 0) {
        buf_printf(err, "empty pattern");
        return false;
    }
    if (len > MAX_PATTERN) {
        buf_printf(err, "pattern longer than %d bytes", MAX_PATTERN);
        return false;
    }
    while (i < len) {
        const char *end;
        struct parser *p;

        if (pattern[i] != '@') {
            i++;
            continue;
        }
        if (i + 1 < len && pattern[i + 1] == '@') {
            i += 2;
            continue;
        }
        *valid = i;
        end = i + 1 < len ? memchr(pattern + i + 1, '@', len - i - 1) : NULL;
        if (!end) {
            buf_printf(err, "unterminated '@' at offset %zu (write a literal '@' as '@@')", i);
            return false;
        }
        p = parser_compile(pattern + i + 1, (size_t)(end - pattern - i - 1), err);
        if (!p) return false;
        parser_free(p);
        i = (size_t)(end - pattern) + 1;
    }
    return true;
}

bool
radix_check_pattern(const char *pattern, size_t len, struct buf *err)
{
    size_t valid;

    return check_pattern(pattern, len, err, &valid);
}

void
radix_set_root_value(struct radix *r, void *value)
{
    r->root->value = value;
}

enum radix_insert_result
radix_insert(struct radix *r, const char *pattern, size_t len, void *value, void **existing,
             struct buf *err)
{
    struct insert ins = {value, NULL};
    size_t valid;

    radix_thaw(r);
    if (!check_pattern(pattern, len, err, &valid)) {
        /*
         * syslog-ng builds the tree while it parses the pattern, so the nodes
         * before the error stay, without a value.  They cannot match anything,
         * but a parser node among them takes its place in its parent's parser
         * order, ahead of the same parser inserted later by a good pattern
         * ("x @NUMBER:n@ @" before "x @STRING:s@" and "x @NUMBER:n@" makes
         * NUMBER win on "x 12").  So the prefix is inserted here too.
         */
        if (valid > 0) {
            struct insert none = {NULL, NULL};
            insert(r->root, pattern, valid, &none);
        }
        return RADIX_BAD_PATTERN;
    }
    insert(r->root, pattern, len, &ins);
    if (ins.existing) {
        if (existing) *existing = ins.existing;
        return RADIX_DUPLICATE;
    }
    return RADIX_INSERTED;
}

/* ---- search ---- */

struct find {
    const char *text;
    bool require_complete;
    bool partial_found;
    struct radix_caps *caps;
    void (*all_fn)(void *value, void *arg); /* set by radix_find_all */
    void *all_arg;
    size_t nall;
};

static struct node *find(struct find *f, const struct node *n, size_t pos, size_t len);

/*
 * Records a capture, clipped to the message (a parser that ran past the end
 * leaves an empty one).  syslog-ng 3.38 stores capture offsets and lengths in
 * 16 bits, so in messages over 64 KiB its captures wrap around and come out
 * wrong; corral deliberately keeps them whole (see corral-rules(5)).
 */
static void
set_cap(struct radix_cap *c, nv_handle name, size_t off, size_t caplen, size_t len)
{
    if (off > len) off = len;
    if (caplen > len - off) caplen = len - off;
    c->name = name;
    c->off = (uint32_t)off;
    c->len = (uint32_t)caplen;
}

static struct node *
find_by_parser(struct find *f, const struct node *n, size_t pos, size_t len)
{
    struct radix_caps *caps = f->caps;
    size_t slot = 0;
    uint32_t i;

    if (caps) {
        slot = caps->n;
        caps->v = xgrow(caps->v, &caps->cap, slot + 1, sizeof(*caps->v));
        caps->n = slot + 1;
    }
    for (i = 0; i < n->npchildren; i++) {
        const struct node *child = n->pchildren[i];
        struct parser_match m;
        struct node *ret;

        if (!parser_match(child->parser, f->text, len, pos, &m)) continue;
        ret = find(f, child, pos + m.len, len);
        if (ret) {
            if (caps)
                set_cap(&caps->v[slot], parser_name(child->parser), pos + m.cap_off, m.cap_len,
                        len);
            return ret;
        }
        if (caps) caps->n = slot + 1;
    }
    if (caps) caps->n = slot;
    return NULL;
}

static struct node *
find(struct find *f, const struct node *n, size_t pos, size_t len)
{
    const char *text = f->text;

    /*
     * A loop rather than recursion down a chain of literal nodes: when a node
     * has no parser to fall back on and no value of its own, its result is
     * its literal child's, so nothing is left to do here after descending
     * (most of a pattern's literal head is such a chain).
     */
    for (;;) {
        size_t in = pos, rad = 0;
        size_t nodelen = n->keylen > 0 ? (size_t)n->keylen : 0;

        /*
         * Match this node's literal key; an input CR is skipped where the pattern has
         * LF.  pos may lie past the end after a parser that consumed the message's
         * terminating NUL (see parsers.h): then no literal matches below, only
         * parsers that accept anything do, and only a prefix match remains.
         */
        if (!n->has_lf) {
            /* the common case: no CR to skip, a plain common-prefix scan */
            size_t m = len > in ? len - in : 0;
            if (m > nodelen) m = nodelen;
            /* eight bytes at a time while both have them, then byte by byte to the first difference
             */
            while (rad + 8 <= m) {
                uint64_t a, b;
                memcpy(&a, text + in + rad, 8);
                memcpy(&b, n->key + rad, 8);
                if (a != b) break;
                rad += 8;
            }
            while (rad < m && text[in + rad] == n->key[rad]) rad++;
            in += rad;
        } else {
            while (in < len && rad < nodelen) {
                if (text[in] == '\r' && n->key[rad] == '\n') in++;
                if (in >= len || text[in] != n->key[rad]) break;
                in++;
                rad++;
            }
        }

        if (in == len && (rad == nodelen || n->keylen == -1)) {
            if (f->all_fn) {
                if (n->value) {
                    f->all_fn(n->value, f->all_arg);
                    f->nall++;
                }
                return NULL;
            }
            return n->value ? (struct node *)n : NULL;
        }
        if (n->keylen < 1 || (in < len && rad >= nodelen)) {
            struct node *ret = NULL, *child = NULL;
            size_t rest = in;

            /* a literal continuation is preferred over parsers */
            if (rest + 2 <= len && text[rest] == '\r' && text[rest + 1] == '\n') rest++;
            if (rest < len) child = find_child(n, (unsigned char)text[rest]);
            if (child && !n->npchildren && !n->value) {
                n = child; /* the tail call of the recursive form */
                pos = rest;
                continue;
            }
            if (child) ret = find(f, child, rest, len);
            if (!ret && in != len && n->npchildren) ret = find_by_parser(f, n, in, len);
            if (!ret && n->value) {
                if (!f->require_complete) return (struct node *)n;
                f->partial_found = true;
            }
            return ret;
        }
        return NULL;
    }
}

void *
radix_find(const struct radix *r, const char *text, size_t len, struct radix_caps *caps)
{
    struct find f = {.text = text, .require_complete = true, .caps = caps};
    struct node *ret;

    if (caps) caps->n = 0;
    ret = find(&f, r->root, 0, len);
    if (!ret && f.partial_found) {
        f.require_complete = false;
        if (caps) caps->n = 0;
        ret = find(&f, r->root, 0, len);
    }
    if (!ret && caps) caps->n = 0;
    return ret ? ret->value : NULL;
}

size_t
radix_find_all(const struct radix *r, const char *text, size_t len,
               void (*fn)(void *value, void *arg), void *arg)
{
    struct find f = {.text = text, .require_complete = true, .all_fn = fn, .all_arg = arg};

    find(&f, r->root, 0, len);
    return f.nall;
}

void
radix_caps_free(struct radix_caps *caps)
{
    free(caps->v);
    caps->v = NULL;
    caps->n = caps->cap = 0;
}

/* ---- dump ---- */

static void
dump(const struct node *n, int depth, FILE *out, const char *(*value_name)(const void *))
{
    uint32_t i;

    fprintf(out, "%*s", depth, "");
    if (n->parser) {
        struct buf b = BUF_INIT;
        parser_format(n->parser, &b);
        fprintf(out, "%s ", buf_str(&b));
        buf_free(&b);
    } else {
        fputc('\'', out);
        for (i = 0; i < (uint32_t)n->keylen; i++) {
            unsigned char c = (unsigned char)n->key[i];
            if (c == '\n')
                fputs("\\n", out);
            else if (c == '\r')
                fputs("\\r", out);
            else if (c == '\t')
                fputs("\\t", out);
            else if (c < 0x20 || c == 0x7f)
                fprintf(out, "\\x%02x", c);
            else
                fputc(c, out);
        }
        fputs("' ", out);
    }
    if (n->value && value_name) fprintf(out, "=> %s", value_name(n->value));
    fputc('\n', out);
    for (i = 0; i < n->nchildren; i++) dump(n->children[i], depth + 1, out, value_name);
    for (i = 0; i < n->npchildren; i++) dump(n->pchildren[i], depth + 1, out, value_name);
}

void
radix_dump(const struct radix *r, FILE *out, const char *(*value_name)(const void *))
{
    dump(r->root, 0, out, value_name);
}
