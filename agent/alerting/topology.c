/*
 * topology: the topology file (see topology.h).  The links are kept in one
 * array sorted by host, so that a host's links are found by binary search
 * and nothing is allocated when an inhibition asks what a host sits
 * behind.  Cycles and depth are checked once, at load (a depth-first walk
 * that memoizes each host's depth), so that the walk behind a host at
 * alert time is bounded by TOPOLOGY_MAX_DEPTH hops.
 */
#include "agent/alerting/topology.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct link {
    char *host, *up, *port; /* port NULL: the upstream as a whole */
    int line;
};

struct topology {
    struct link *links; /* sorted by host, then by line */
    size_t n;
};

static int
cmp_link(const void *a, const void *b)
{
    const struct link *x = a, *y = b;
    int c = strcmp(x->host, y->host);

    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Compares the counted string s with the host of link l, as strcmp does. */
static int
cmp_host(const char *s, size_t len, const struct link *l)
{
    size_t hl = strlen(l->host);
    int c = memcmp(s, l->host, len < hl ? len : hl);

    return c ? c : (len > hl) - (len < hl);
}

/* The first of host's links, *count of them; *count 0 when it has none. */
static size_t
links_of(const struct topology *t, const char *host, size_t len, size_t *count)
{
    size_t lo = 0, hi = t->n, first;

    while (lo < hi) { /* the first link whose host is not below host */
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_host(host, len, &t->links[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    first = lo;
    while (lo < t->n && cmp_host(host, len, &t->links[lo]) == 0) lo++;
    *count = lo - first;
    return first;
}

void
topology_free(struct topology *t)
{
    size_t i;

    if (!t) return;
    for (i = 0; i < t->n; i++) {
        free(t->links[i].host);
        free(t->links[i].up);
        free(t->links[i].port);
    }
    free(t->links);
    free(t);
}

size_t
topology_links(const struct topology *t)
{
    return t ? t->n : 0;
}

/* Splits one line (NUL-terminated, comment removed) into at most 4 fields. */
static int
split(char *s, char *f[4])
{
    int n = 0;
    char *save = NULL, *tok;

    for (tok = strtok_r(s, " \t\r", &save); tok && n < 4; tok = strtok_r(NULL, " \t\r", &save))
        f[n++] = tok;
    return n;
}

enum { WHITE, GREY, BLACK };

/*
 * Depth-first from the host of link i (the first of its links): the
 * longest chain of links behind it into depth[i].  A link back to a host
 * being walked (grey) closes a cycle; its line is reported.
 */
static int
walk(const struct topology *t, size_t i, unsigned char *color, int *depth, int level,
     const char *name, struct buf *err)
{
    size_t n, k, first;
    int d = 0;

    first = links_of(t, t->links[i].host, strlen(t->links[i].host), &n);
    color[first] = GREY;
    for (k = first; k < first + n; k++) {
        size_t m, up = links_of(t, t->links[k].up, strlen(t->links[k].up), &m);
        if (!m) {
            if (d < 1) d = 1;
            continue;
        }
        if (color[up] == GREY) {
            buf_printf(err, "%s:%d: %s behind %s closes a cycle: %s is behind itself\n", name,
                       t->links[k].line, t->links[k].host, t->links[k].up, t->links[k].up);
            return -1;
        }
        if (color[up] == WHITE) {
            if (level >= TOPOLOGY_MAX_DEPTH) {
                buf_printf(err, "%s:%d: more than %d hops behind %s\n", name, t->links[k].line,
                           TOPOLOGY_MAX_DEPTH, t->links[i].host);
                return -1;
            }
            if (walk(t, up, color, depth, level + 1, name, err) < 0) return -1;
        }
        if (depth[up] + 1 > d) d = depth[up] + 1;
    }
    if (d > TOPOLOGY_MAX_DEPTH) {
        buf_printf(err, "%s:%d: more than %d hops behind %s\n", name, t->links[first].line,
                   TOPOLOGY_MAX_DEPTH, t->links[first].host);
        return -1;
    }
    depth[first] = d;
    color[first] = BLACK;
    return 0;
}

static int
check_graph(const struct topology *t, const char *name, struct buf *err)
{
    unsigned char *color = xcalloc(t->n + 1, 1);
    int *depth = xcalloc(t->n + 1, sizeof(int));
    size_t i;
    int rc = 0;

    for (i = 0; i < t->n && rc == 0; i++)
        if (color[i] == WHITE && (i == 0 || strcmp(t->links[i - 1].host, t->links[i].host) != 0))
            rc = walk(t, i, color, depth, 0, name, err);
    free(color);
    free(depth);
    return rc;
}

struct topology *
topology_parse(const char *name, const char *text, size_t len, struct buf *err)
{
    struct topology *t = xcalloc(1, sizeof(*t));
    size_t cap = 0, pos = 0;
    int line = 0, bad = 0;
    char buf[TOPOLOGY_MAX_LINE + 2];

    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos, k;
        char *f[4], *hash;
        int nf;
        line++;
        if (ll > TOPOLOGY_MAX_LINE) {
            buf_printf(err, "%s:%d: line longer than %d bytes\n", name, line, TOPOLOGY_MAX_LINE);
            bad++;
            pos += ll + 1;
            continue;
        }
        for (k = 0; k < ll; k++) {
            unsigned char ch = (unsigned char)text[pos + k];
            if ((ch < 0x20 && ch != '\t' && ch != '\r') || ch == 0x7f) break;
        }
        if (k < ll) {
            buf_printf(err, "%s:%d: control character 0x%02x\n", name, line,
                       (unsigned char)text[pos + k]);
            bad++;
            pos += ll + 1;
            continue;
        }
        memcpy(buf, text + pos, ll);
        buf[ll] = '\0';
        pos += ll + 1;
        if ((hash = strchr(buf, '#'))) *hash = '\0';
        nf = split(buf, f);
        if (nf == 0) continue;
        if (nf == 1 || nf > 3) {
            buf_printf(err, "%s:%d: expected HOST UPSTREAM [PORT], got %d field%s\n", name, line,
                       nf, nf == 1 ? "" : "s or more");
            bad++;
            continue;
        }
        if (strcmp(f[0], f[1]) == 0) {
            buf_printf(err, "%s:%d: %s behind itself\n", name, line, f[0]);
            bad++;
            continue;
        }
        if (t->n >= TOPOLOGY_MAX_LINKS) {
            buf_printf(err, "%s:%d: more than %d links\n", name, line, TOPOLOGY_MAX_LINKS);
            bad++;
            break;
        }
        t->links = xgrow(t->links, &cap, t->n + 1, sizeof(*t->links));
        t->links[t->n].host = xstrdup(f[0]);
        t->links[t->n].up = xstrdup(f[1]);
        t->links[t->n].port = nf == 3 ? xstrdup(f[2]) : NULL;
        t->links[t->n].line = line;
        t->n++;
    }
    if (!bad && t->n) {
        qsort(t->links, t->n, sizeof(*t->links), cmp_link);
        if (check_graph(t, name, err) < 0) bad++;
    }
    if (bad) {
        topology_free(t);
        return NULL;
    }
    return t;
}

struct topology *
topology_load(const char *path, struct buf *err)
{
    FILE *f = fopen(path, "r");
    struct buf text = BUF_INIT;
    char chunk[8192];
    size_t n;
    struct topology *t;

    if (!f) {
        buf_printf(err, "%s: %s\n", path, strerror(errno));
        return NULL;
    }
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        /* TOPOLOGY_MAX_LINKS lines of TOPOLOGY_MAX_LINE bytes, comments and blank lines aside */
        if (text.len + n > (size_t)64 << 20) {
            buf_printf(err, "%s: larger than 64 MiB\n", path);
            fclose(f);
            buf_free(&text);
            return NULL;
        }
        buf_append(&text, chunk, n);
    }
    if (ferror(f)) {
        buf_printf(err, "%s: %s\n", path, strerror(errno));
        fclose(f);
        buf_free(&text);
        return NULL;
    }
    fclose(f);
    t = topology_parse(path, buf_str(&text), text.len, err);
    buf_free(&text);
    return t;
}

static bool
port_in(const char *port, const char *const *ports, const size_t *plens, size_t nports)
{
    size_t i, len;

    if (!port) return true;
    len = strlen(port);
    for (i = 0; i < nports; i++)
        if (plens[i] == len && memcmp(ports[i], port, len) == 0) return true;
    return false;
}

static bool
behind(const struct topology *t, const char *host, size_t hlen, const char *up, size_t ulen,
       const char *const *ports, const size_t *plens, size_t nports, int level)
{
    size_t n, k, first;

    if (level > TOPOLOGY_MAX_DEPTH) return false; /* checked at load; a guard all the same */
    first = links_of(t, host, hlen, &n);
    for (k = first; k < first + n; k++) {
        const struct link *l = &t->links[k];
        size_t len = strlen(l->up);
        if (len == ulen && memcmp(l->up, up, ulen) == 0 && port_in(l->port, ports, plens, nports))
            return true;
        if (behind(t, l->up, len, up, ulen, ports, plens, nports, level + 1)) return true;
    }
    return false;
}

bool
topology_behind(const struct topology *t, const char *host, size_t hlen, const char *upstream,
                size_t ulen, const char *const *ports, const size_t *plens, size_t nports)
{
    if (!t || !t->n) return false;
    return behind(t, host, hlen, upstream, ulen, ports, plens, nports, 0);
}
