/*
 * silences: the set of silences, its JSON operations and its file (see
 * silences.h).  The set is bounded (max-silences) and changes rarely: an
 * array in creation order, for listing and saving, and for matching an
 * index.  A silence with an equality matcher (HOST=web1, the usual kind) is
 * indexed under its first one's label and value, so matching an alert looks
 * up the alert's value of each such label (a few: HOST, rule_id...) and
 * checks only the silences found there; the others (only regexes or
 * negations) are checked one by one.  So the cost of an alert is constant in
 * the number of equality silences and linear in the number of the others.
 *
 * The file is the whole set, replaced atomically (durable_replace) on every
 * change; a change whose file cannot be written is undone and refused.  It
 * is a header line, then one line per silence: the CRC-32 of the JSON
 * object (8 hex digits), a space, the object:
 *
 *   {"version":2}
 *   1c291ca3 {"id":"...","matchers":"HOST=\"web1\"","start":MS,"end":MS,
 *             "createdBy":"...","comment":"..."}
 *
 * Reading keeps every line that checks out: a damaged or cut line costs
 * that silence only, and is counted (load_errors) and logged; the file as
 * read is copied to PATH.corrupt and the file written again with the rest.  Version 1, the whole
 * set as one JSON document ({"version":1,"silences":[...]}), is still read.
 */
#include "agent/alerting/silences.h"
#include "actions/jsonval.h"
#include "engine/civil.h"
#include "engine/durable.h"
#include "engine/hash.h"
#include "engine/log.h"
#include "engine/units.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define MAX_TEXT    1024                        /* createdBy, comment */
#define MAX_FILE    ((size_t)256 * 1024 * 1024) /* far above 10000 silences */
#define FILE_HEADER "{\"version\":2}\n"
#define CRC_LEN     8 /* hex digits, then a space */

struct entry {
    struct hash_node node; /* in index, when indexed */
    bool indexed;
    char id[SILENCES_ID_LEN + 1];
    struct labelmatch *lm;
    int64_t start, end; /* ms */
    int64_t updated;    /* ms: the last change, which orders concurrent ones (silences_apply) */
    bool dirty;         /* changed since the last save: a store (silences_set_store) gets it */
    char *creator, *comment;
};

/* A label some indexed silence is keyed by, and how many are. */
struct key {
    nv_handle h;
    size_t refs;
};

struct silences {
    struct entry **e;
    size_t n, cap;
    struct hash_table index;
    struct entry **scan; /* the silences without an equality matcher */
    size_t nscan, capscan;
    struct key *keys;
    size_t nkeys, capkeys;
    char *path;
    silences_store_fn store; /* instead of the file, when set */
    void *store_arg;
    double retention; /* seconds */
    size_t max;
    struct silences_stats st;
};

static void
entry_free(struct entry *e)
{
    if (!e) return;
    labelmatch_free(e->lm);
    free(e->creator);
    free(e->comment);
    free(e);
}

/* ---- times ---- */

/* A JSON time: a number of seconds or a string civil_parse_time reads. */
static int
json_time(const json_t *v, int64_t *ms)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *ms = (int64_t)json_integer_value(v) * 1000;
        return 0;
    }
    if (json_is_real(v) && json_real_value(v) >= 0) {
        *ms = (int64_t)(json_real_value(v) * 1000);
        return 0;
    }
    if (json_is_string(v)) return civil_parse_time(json_string_value(v), ms);
    return -1;
}

/* ---- the file ---- */

/*
 * Writes the set to the file (nothing without one).  0, or -1 with the
 * reason in err (when err is not NULL), counted and logged.
 */
/* A silence as the file and a store keep it: compact JSON, on one line; NULL without memory. */
static char *
entry_record(const struct entry *e, struct buf *text)
{
    json_t *j;
    char *line;

    buf_reset(text);
    labelmatch_format(e->lm, text);
    j = json_pack("{s:s, s:s%, s:I, s:I, s:I, s:s, s:s}", "id", e->id, "matchers", buf_str(text),
                  text->len, "start", (json_int_t)e->start, "end", (json_int_t)e->end, "updatedAt",
                  (json_int_t)e->updated, "createdBy", e->creator, "comment", e->comment);
    /* compact JSON escapes every newline: one silence, one line */
    line = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return line;
}

/* Gives the store the silences changed since the last save; 0, or -1 with err. */
static int
save_store(struct silences *s, struct buf *err)
{
    struct buf text = BUF_INIT, why = BUF_INIT;
    size_t i;
    int rc = 0;

    for (i = 0; i < s->n; i++) {
        struct entry *e = s->e[i];
        char *line;
        if (!e->dirty) continue;
        e->dirty = false;
        if (rc < 0) continue;
        line = entry_record(e, &text);
        if (!line || s->store(s->store_arg, e->id, line, strlen(line), e->updated, &why) < 0) {
            if (!line) buf_puts(&why, "out of memory");
            rc = -1;
        }
        free(line);
    }
    if (rc < 0) {
        s->st.save_errors++;
        log_msg(LOG_ERR, "silences: cannot save: %s", buf_str(&why));
        if (err) buf_printf(err, "cannot save the silences: %s", buf_str(&why));
    }
    buf_free(&text);
    buf_free(&why);
    return rc;
}

static int
save(struct silences *s, struct buf *err)
{
    struct buf text = BUF_INIT, out = BUF_INIT;
    size_t i;
    int rc = 0, saved_errno;

    if (s->store) return save_store(s, err);
    if (!s->path) return 0;
    buf_puts(&out, FILE_HEADER);
    for (i = 0; i < s->n && rc == 0; i++) {
        struct entry *e = s->e[i];
        char *line;
        e->dirty = false;
        line = entry_record(e, &text);
        if (line)
            buf_printf(&out, "%08x %s\n", durable_crc32(0, line, strlen(line)), line);
        else
            rc = -1, errno = ENOMEM;
        free(line);
    }
    if (rc == 0) rc = durable_replace(s->path, out.p, out.len);
    saved_errno = errno;
    buf_free(&text);
    buf_free(&out);
    if (rc < 0) {
        s->st.save_errors++;
        log_msg(LOG_ERR, "silences: cannot save %s: %s", s->path, strerror(saved_errno));
        if (err)
            buf_printf(err, "cannot save the silences to %s: %s", s->path, strerror(saved_errno));
    }
    return rc;
}

static uint64_t
key_hash(nv_handle h, const char *value, size_t len)
{
    return hash_bytes(hash_bytes(HASH_START, &h, sizeof(h)), value, len);
}

static void
index_add(struct silences *s, struct entry *e)
{
    nv_handle h;
    const char *v;
    size_t len, i;

    if (!labelmatch_first_eq(e->lm, &h, &v, &len)) {
        s->scan = xgrow(s->scan, &s->capscan, s->nscan + 1, sizeof(*s->scan));
        s->scan[s->nscan++] = e;
        return;
    }
    e->indexed = true;
    hash_table_add(&s->index, &e->node, key_hash(h, v, len));
    for (i = 0; i < s->nkeys; i++)
        if (s->keys[i].h == h) break;
    if (i == s->nkeys) {
        s->keys = xgrow(s->keys, &s->capkeys, s->nkeys + 1, sizeof(*s->keys));
        s->keys[s->nkeys].h = h;
        s->keys[s->nkeys++].refs = 0;
    }
    s->keys[i].refs++;
}

static void
index_remove(struct silences *s, struct entry *e)
{
    nv_handle h;
    const char *v;
    size_t len, i;

    if (!e->indexed) {
        for (i = 0; i < s->nscan; i++)
            if (s->scan[i] == e) {
                memmove(&s->scan[i], &s->scan[i + 1], (s->nscan - i - 1) * sizeof(*s->scan));
                s->nscan--;
                break;
            }
        return;
    }
    labelmatch_first_eq(e->lm, &h, &v, &len);
    hash_table_remove(&s->index, &e->node);
    for (i = 0; i < s->nkeys; i++)
        if (s->keys[i].h == h && --s->keys[i].refs == 0) {
            s->keys[i] = s->keys[--s->nkeys];
            break;
        }
}

static void
add_entry(struct silences *s, struct entry *e)
{
    s->e = xgrow(s->e, &s->cap, s->n + 1, sizeof(*s->e));
    s->e[s->n++] = e;
    index_add(s, e);
}

static struct entry *
entry_from_file(const json_t *j, struct buf *err)
{
    struct entry *e;
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *matchers = json_string_value(json_object_get(j, "matchers"));
    const json_t *start = json_object_get(j, "start"), *end = json_object_get(j, "end");
    const char *creator = json_string_value(json_object_get(j, "createdBy"));
    const char *comment = json_string_value(json_object_get(j, "comment"));

    if (!id || strlen(id) != SILENCES_ID_LEN || !matchers || !json_is_integer(start) ||
        !json_is_integer(end)) {
        buf_puts(err, "a silence lacks id, matchers, start or end");
        return NULL;
    }
    e = xcalloc(1, sizeof(*e));
    memcpy(e->id, id, SILENCES_ID_LEN + 1);
    e->lm = labelmatch_parse_names(matchers, LABELMATCH_NAMES_INPUT, err);
    if (!e->lm) {
        entry_free(e);
        return NULL;
    }
    e->start = json_integer_value(start);
    e->end = json_integer_value(end);
    /* records written before updatedAt: as old as their start */
    e->updated = json_is_integer(json_object_get(j, "updatedAt"))
                     ? json_integer_value(json_object_get(j, "updatedAt"))
                     : e->start;
    e->creator = xstrdup(creator ? creator : "");
    e->comment = xstrdup(comment ? comment : "");
    return e;
}

/* Adds an entry read from the file, unless its id is there already (a copy). */
static bool
add_loaded(struct silences *s, struct entry *e, struct buf *err)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->e[i]->id, e->id) == 0) {
            buf_printf(err, "silence %s twice", e->id);
            entry_free(e);
            return false;
        }
    add_entry(s, e);
    return true;
}

/* Version 1: one JSON document. */
static void
load_v1(struct silences *s, const char *data, size_t len, size_t *bad)
{
    json_t *root, *arr;
    json_error_t jerr;
    struct buf err = BUF_INIT;
    size_t i;

    root = json_loadb(data, len, 0, &jerr);
    arr = root ? json_object_get(root, "silences") : NULL;
    if (!json_is_array(arr)) {
        log_msg(LOG_ERR, "silences: %s unusable (%s); no silences", s->path,
                root ? "no silences array" : jerr.text);
        ++*bad;
        json_decref(root);
        return;
    }
    for (i = 0; i < json_array_size(arr); i++) {
        struct entry *e;
        buf_reset(&err);
        e = entry_from_file(json_array_get(arr, i), &err);
        if (!e || !add_loaded(s, e, &err)) {
            log_msg(LOG_ERR, "silences: %s: silence %zu skipped: %s", s->path, i + 1,
                    buf_str(&err));
            ++*bad;
        }
    }
    json_decref(root);
    buf_free(&err);
}

/* One line of version 2 (len bytes, no newline): a silence, or false with why in err. */
static bool
load_line(struct silences *s, const char *p, size_t len, struct buf *err)
{
    char hex[CRC_LEN + 1], *end;
    unsigned long crc;
    json_t *j;
    json_error_t jerr;
    struct entry *e;

    if (len < CRC_LEN + 2 || p[CRC_LEN] != ' ') {
        buf_puts(err, "not a silence line");
        return false;
    }
    memcpy(hex, p, CRC_LEN);
    hex[CRC_LEN] = '\0';
    crc = strtoul(hex, &end, 16);
    if (*end || durable_crc32(0, p + CRC_LEN + 1, len - CRC_LEN - 1) != crc) {
        buf_puts(err, "checksum mismatch (damaged or cut short)");
        return false;
    }
    j = json_loadb(p + CRC_LEN + 1, len - CRC_LEN - 1, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) {
        buf_printf(err, "not JSON: %s", jerr.text);
        return false;
    }
    e = json_is_object(j) ? entry_from_file(j, err) : NULL;
    if (!e && !json_is_object(j)) buf_puts(err, "not a JSON object");
    json_decref(j);
    return e && add_loaded(s, e, err);
}

/*
 * Reads the file: every silence that checks out, past damaged or cut lines
 * (counted and logged; the file as read is kept as PATH.corrupt).
 */
static void
load(struct silences *s)
{
    size_t len, bad = 0, line = 0;
    char *data = durable_read_file(s->path, MAX_FILE, &len);
    const char *p, *end, *nl;
    struct buf err = BUF_INIT;

    if (!data) {
        if (errno != ENOENT) {
            log_msg(LOG_ERR, "silences: cannot read %s: %s", s->path, durable_strerror(errno));
            s->st.load_errors++;
        }
        return;
    }
    if (len > 12 && memcmp(data, "{\"version\":1", 12) == 0) {
        load_v1(s, data, len, &bad);
    } else {
        for (p = data, end = data + len; p < end; p = nl + 1) {
            nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl) nl = end; /* a last line cut short: its checksum tells */
            line++;
            if (line == 1 && (size_t)(nl + 1 - p) == strlen(FILE_HEADER) &&
                memcmp(p, FILE_HEADER, strlen(FILE_HEADER)) == 0)
                continue;
            if (nl == p) continue; /* an empty line carries nothing */
            buf_reset(&err);
            if (!load_line(s, p, (size_t)(nl - p), &err)) {
                bad++;
                log_msg(LOG_ERR, "silences: %s:%zu: skipped: %s", s->path, line, buf_str(&err));
            }
        }
    }
    if (bad) {
        struct buf copy = BUF_INIT;
        s->st.load_errors += bad;
        buf_printf(&copy, "%s.corrupt", s->path);
        if (durable_replace(buf_str(&copy), data, len) < 0)
            log_msg(LOG_ERR, "silences: cannot keep a copy as %s: %s", buf_str(&copy),
                    strerror(errno));
        else
            save(s, NULL); /* the intact ones, so that the damage is reported once */
        log_msg(LOG_ERR,
                "silences: %s: %zu damaged record%s skipped, %zu silences kept; "
                "the file as read is in %s",
                s->path, bad, bad == 1 ? "" : "s", s->n, buf_str(&copy));
        buf_free(&copy);
    }
    free(data);
    buf_free(&err);
    log_msg(LOG_INFO, "silences: %zu read from %s", s->n, s->path);
}

struct silences *
silences_new(const char *path, double retention_s, size_t max, uint64_t now_ms)
{
    struct silences *s = xcalloc(1, sizeof(*s));

    s->path = path ? xstrdup(path) : NULL;
    s->retention = retention_s;
    s->max = max;
    hash_table_init(&s->index, 64);
    if (s->path) load(s);
    silences_tick(s, now_ms);
    return s;
}

void
silences_free(struct silences *s)
{
    size_t i;

    if (!s) return;
    for (i = 0; i < s->n; i++) entry_free(s->e[i]);
    free(s->e);
    hash_table_free(&s->index);
    free(s->scan);
    free(s->keys);
    free(s->path);
    free(s);
}

void
silences_set_limits(struct silences *s, double retention_s, size_t max)
{
    s->retention = retention_s;
    s->max = max;
}

void
silences_set_path(struct silences *s, const char *path)
{
    if ((!path && !s->path) || (path && s->path && strcmp(path, s->path) == 0)) return;
    free(s->path);
    s->path = path ? xstrdup(path) : NULL;
    if (s->path) {
        log_msg(LOG_INFO, "silences: %zu now kept in %s", s->n, s->path);
        save(s, NULL);
    }
}

/* ---- operations ---- */

static void
new_id(char *id)
{
    unsigned char r[16];
    size_t i, k = 0;

    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        for (i = 0; i < sizeof(r); i++) r[i] = (unsigned char)rand();
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* version 4 */
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80); /* variant */
    for (i = 0; i < sizeof(r); i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) id[k++] = '-';
        snprintf(id + k, 3, "%02x", r[i]);
        k += 2;
    }
    id[k] = '\0';
}

/* One element of "matchers": "HOST=web1" or Alertmanager's {"name","value","isRegex","isEqual"}. */
static int
add_matcher(struct labelmatch *lm, const json_t *m, struct buf *err)
{
    if (json_is_string(m))
        return labelmatch_add(lm, json_string_value(m), json_string_length(m), err);
    if (json_is_object(m)) {
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *value = json_string_value(json_object_get(m, "value"));
        json_t *re = json_object_get(m, "isRegex"), *eq = json_object_get(m, "isEqual");
        struct buf text = BUF_INIT;
        const char *p;
        int rc;
        if (!name || !value) {
            buf_puts(err, "a matcher object needs a name and a value");
            return -1;
        }
        buf_puts(&text, name);
        /* isEqual false: != or !~ (a lone ! is no operator) */
        buf_putc(&text, eq && json_is_false(eq) ? '!' : '=');
        buf_puts(&text, json_is_true(re) ? "~" : eq && json_is_false(eq) ? "=" : "");
        buf_putc(&text, '"');
        for (p = value; *p; p++) {
            if (*p == '"' || (*p == '\\' && (p[1] == '"' || p[1] == '\\' || !p[1])))
                buf_putc(&text, '\\');
            buf_putc(&text, *p);
        }
        buf_putc(&text, '"');
        if (text.len == 0 || !name[0]) {
            buf_free(&text);
            buf_puts(err, "a matcher object needs a name");
            return -1;
        }
        rc = labelmatch_add(lm, text.p, text.len, err);
        buf_free(&text);
        return rc;
    }
    buf_puts(err, "a matcher is a string (\"HOST=web1\") or an object with name and value");
    return -1;
}

static const char *
opt_string(const json_t *req, const char *key, struct buf *err, bool *bad)
{
    const json_t *v = json_object_get(req, key);

    if (!v || json_is_null(v)) return "";
    if (!json_is_string(v) || json_string_length(v) > MAX_TEXT) {
        buf_printf(err, "%s: a string of at most %d bytes expected", key, MAX_TEXT);
        *bad = true;
        return "";
    }
    return json_string_value(v);
}

/*
 * A silence from a JSON request, not added yet; NULL with a message in err.
 * A member the request lacks is old's (an update names what changes), or
 * the default without old: start now, no creator, no comment.
 */
static struct entry *
entry_of_request(const json_t *req, uint64_t now_ms, const struct entry *old, struct buf *err)
{
    const json_t *ms = json_object_get(req, "matchers"), *v;
    struct labelmatch *lm;
    int64_t start = old ? old->start : (int64_t)now_ms, end = old ? old->end : 0;
    const char *creator, *comment;
    struct entry *e;
    bool bad = false;
    size_t i;

    if (!json_is_object(req)) {
        buf_puts(err, "a JSON object expected");
        return NULL;
    }
    if (old && (!ms || json_is_null(ms))) {
        ms = NULL;
    } else if (!json_is_array(ms) || json_array_size(ms) == 0) {
        buf_puts(err, "matchers: a non-empty array expected (a silence without matchers would "
                      "silence everything)");
        return NULL;
    }
    if ((v = json_object_get(req, "startsAt")) && !json_is_null(v) && json_time(v, &start) < 0) {
        buf_puts(err, "startsAt: seconds since the epoch or an ISO 8601 time expected");
        return NULL;
    }
    if ((v = json_object_get(req, "endsAt")) && !json_is_null(v)) {
        if (json_time(v, &end) < 0) {
            buf_puts(err, "endsAt: seconds since the epoch or an ISO 8601 time expected");
            return NULL;
        }
    } else if ((v = json_object_get(req, "duration")) && !json_is_null(v)) {
        double d = json_is_number(v)   ? json_number_value(v)
                   : json_is_string(v) ? units_duration(json_string_value(v))
                                       : -1;
        if (d <= 0 || d > 100.0 * 365 * 86400) {
            buf_puts(err, "duration: a positive duration expected (\"2h\", \"30m\", seconds)");
            return NULL;
        }
        end = start + (int64_t)(d * 1000);
    } else if (!old) {
        buf_puts(err, "endsAt or duration expected");
        return NULL;
    }
    if (end <= start) {
        buf_puts(err, "the end is not after the start");
        return NULL;
    }
    if (end <= (int64_t)now_ms) {
        buf_puts(err, "the end is in the past");
        return NULL;
    }
    creator = json_object_get(req, "createdBy") || !old ? opt_string(req, "createdBy", err, &bad)
                                                        : old->creator;
    if (!bad)
        comment = json_object_get(req, "comment") || !old ? opt_string(req, "comment", err, &bad)
                                                          : old->comment;
    if (bad) return NULL;
    if (ms) {
        lm = labelmatch_new_names(LABELMATCH_NAMES_INPUT);
        for (i = 0; i < json_array_size(ms); i++) {
            if (add_matcher(lm, json_array_get(ms, i), err) < 0) {
                labelmatch_free(lm);
                return NULL;
            }
        }
    } else { /* old's, written back and read again */
        struct buf text = BUF_INIT;
        labelmatch_format(old->lm, &text);
        lm = labelmatch_parse_names(buf_str(&text), LABELMATCH_NAMES_INPUT, err);
        buf_free(&text);
        if (!lm) return NULL;
    }
    if (labelmatch_matches_empty(lm)) {
        /* Alertmanager's rule: it would silence every alert that lacks those labels */
        buf_puts(err, "at least one matcher must not match the empty string (this silence "
                      "would match every alert)");
        labelmatch_free(lm);
        return NULL;
    }
    e = xcalloc(1, sizeof(*e));
    e->lm = lm;
    e->start = start;
    e->updated = (int64_t)now_ms;
    e->end = end;
    e->creator = xstrdup(creator);
    e->comment = xstrdup(comment);
    return e;
}

/* Adds e (with a new id) and saves; 0, or -1 with e freed and nothing added. */
static int
add_new(struct silences *s, struct entry *e, struct buf *err)
{
    if (s->n >= s->max) {
        buf_printf(err, "%zu silences already (max-silences): expire some first", s->n);
        entry_free(e);
        return -1;
    }
    new_id(e->id);
    add_entry(s, e);
    e->dirty = true;
    if (save(s, err) < 0) {
        /* not on disk: not added (a kill -9 would lose what was acknowledged) */
        index_remove(s, e);
        s->n--;
        entry_free(e);
        buf_puts(err, "; the silence was not added");
        return -1;
    }
    s->st.added++;
    return 0;
}

int
silences_add_json(struct silences *s, const json_t *req, uint64_t now_ms, struct buf *id,
                  struct buf *err)
{
    struct entry *e = entry_of_request(req, now_ms, NULL, err);

    if (!e || add_new(s, e, err) < 0) return -1;
    buf_puts(id, e->id);
    log_msg(LOG_INFO, "silence %s added by %s", e->id, e->creator[0] ? e->creator : "(unknown)");
    return 0;
}

static struct entry *find(struct silences *s, const char *id);

static bool
same_matchers(const struct entry *a, const struct entry *b)
{
    struct buf ta = BUF_INIT, tb = BUF_INIT;
    bool same;

    labelmatch_format(a->lm, &ta);
    labelmatch_format(b->lm, &tb);
    same = ta.len == tb.len && memcmp(buf_str(&ta), buf_str(&tb), ta.len) == 0;
    buf_free(&ta);
    buf_free(&tb);
    return same;
}

/*
 * Alertmanager's canUpdate: a change that leaves the history of what was
 * silenced as it was.  Same matchers; an active silence keeps its start
 * (to the second: the times shown and sent back are whole seconds), a
 * pending one may move its start but not into the past; an expired one
 * cannot change.  (The end is in the future: entry_of_request checked it.)
 */
static bool
can_update(const struct entry *old, const struct entry *e, int64_t now)
{
    if (!same_matchers(old, e) || old->end <= now) return false;
    if (old->start <= now) return e->start / 1000 == old->start / 1000;
    return e->start >= now;
}

int
silences_update_json(struct silences *s, const char *id, const json_t *req, uint64_t now_ms,
                     struct buf *new_id_out, struct buf *err)
{
    struct entry *old = find(s, id), *e, was;
    int64_t now = (int64_t)now_ms;

    if (!old) {
        buf_printf(err, "no silence %s", id);
        return -1;
    }
    if (!(e = entry_of_request(req, now_ms, old, err))) return -1;
    was = *old;
    if (can_update(old, e, now)) {
        /* in place: same id, same matchers (and index); the old texts kept until saved */
        if (old->start > now) old->start = e->start;
        old->end = e->end;
        old->updated = now;
        old->dirty = true;
        old->creator = e->creator;
        old->comment = e->comment;
        if (save(s, err) < 0) {
            *old = was;
            old->dirty = false;
            entry_free(e);
            buf_puts(err, "; the silence was not updated");
            return -1;
        }
        e->creator = was.creator;
        e->comment = was.comment;
        entry_free(e);
        buf_puts(new_id_out, old->id);
        log_msg(LOG_INFO, "silence %s updated", old->id);
        return 0;
    }
    /* a new silence replaces it: the old one ends now (unless it has ended) */
    if (e->start < now) e->start = now;
    if (old->end > now) {
        old->end = now;
        if (old->start > now) old->start = now;
        old->updated = now;
        old->dirty = true;
    }
    if (add_new(s, e, err) < 0) {
        old->start = was.start;
        old->end = was.end;
        old->updated = was.updated;
        return -1;
    }
    if (was.end > now) s->st.expired++;
    buf_puts(new_id_out, e->id);
    log_msg(LOG_INFO, "silence %s replaced by %s", old->id, e->id);
    return 0;
}

static struct entry *
find(struct silences *s, const char *id)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->e[i]->id, id) == 0) return s->e[i];
    return NULL;
}

int
silences_expire(struct silences *s, const char *const *ids, size_t n, uint64_t now_ms,
                struct buf *err)
{
    size_t i;
    struct entry *e;
    struct {
        int64_t start, end, updated;
    } * was;

    if (!n) {
        buf_puts(err, "no silence id given");
        return -1;
    }
    for (i = 0; i < n; i++) {
        e = find(s, ids[i]);
        if (!e) {
            buf_printf(err, "no silence %s", ids[i]);
            return -1;
        }
        if (e->end <= (int64_t)now_ms) {
            buf_printf(err, "silence %s has already ended", ids[i]);
            return -1;
        }
    }
    was = xcalloc(n, sizeof(*was));
    for (i = 0; i < n; i++) {
        e = find(s, ids[i]);
        was[i].start = e->start;
        was[i].end = e->end;
        was[i].updated = e->updated;
        if (e->end <= (int64_t)now_ms) continue; /* named twice */
        e->end = (int64_t)now_ms;
        if (e->start > e->end) e->start = e->end;
        e->updated = (int64_t)now_ms;
        e->dirty = true;
    }
    if (save(s, err) < 0) {
        /* undone, last first: an id named twice gets its first value back */
        for (i = n; i-- > 0;) {
            e = find(s, ids[i]);
            e->start = was[i].start;
            e->end = was[i].end;
            e->updated = was[i].updated;
        }
        free(was);
        buf_puts(err, n == 1 ? "; the silence was not expired" : "; no silence was expired");
        return -1;
    }
    for (i = 0; i < n; i++)
        if (was[i].end > (int64_t)now_ms) {
            s->st.expired++;
            log_msg(LOG_INFO, "silence %s expired", ids[i]);
        }
    free(was);
    return 0;
}

static const char *
state_of(const struct entry *e, uint64_t now_ms)
{
    if (e->end <= (int64_t)now_ms) return "expired";
    if (e->start > (int64_t)now_ms) return "pending";
    return "active";
}

json_t *
silences_to_json(struct silences *s, const struct labelmatch *query, bool expired, uint64_t now_ms)
{
    struct msg *labels = query ? msg_new() : NULL;
    struct buf t = BUF_INIT, start = BUF_INIT, end = BUF_INIT;
    json_t *arr = json_array();
    size_t i, k;

    for (i = 0; i < s->n; i++) {
        struct entry *e = s->e[i];
        const char *state = state_of(e, now_ms);
        json_t *ms;
        if (!expired && strcmp(state, "expired") == 0) continue;
        if (query) {
            msg_reset(labels);
            labelmatch_to_msg(e->lm, labels);
            if (!labelmatch_match(query, labels)) continue;
        }
        ms = json_array();
        for (k = 0; k < labelmatch_count(e->lm); k++) {
            const char *name, *value;
            enum labelmatch_op op;
            labelmatch_at(e->lm, k, &name, &op, &value);
            json_array_append_new(ms,
                                  json_pack("{s:s, s:s, s:b, s:b}", "name", name, "value", value,
                                            "isRegex", op == LABELMATCH_RE || op == LABELMATCH_NRE,
                                            "isEqual", op == LABELMATCH_EQ || op == LABELMATCH_RE));
        }
        buf_reset(&t);
        buf_reset(&start);
        buf_reset(&end);
        labelmatch_format(e->lm, &t);
        civil_format_time(e->start, &start);
        civil_format_time(e->end, &end);
        json_array_append_new(arr, json_pack("{s:s, s:o, s:s, s:s, s:s, s:s, s:s, s:{s:s}}", "id",
                                             e->id, "matchers", ms, "matchersText", buf_str(&t),
                                             "startsAt", buf_str(&start), "endsAt", buf_str(&end),
                                             "createdBy", e->creator, "comment", e->comment,
                                             "status", "state", state));
    }
    buf_free(&t);
    buf_free(&start);
    buf_free(&end);
    if (labels) msg_unref(labels);
    return arr;
}

void
silences_json(struct silences *s, const struct labelmatch *query, bool expired, uint64_t now_ms,
              struct buf *out)
{
    jsonval_put_new(out, silences_to_json(s, query, expired, now_ms));
}

static bool
holds(const struct entry *e, const struct msg *m, int64_t now)
{
    return e->start <= now && e->end > now && labelmatch_match(e->lm, m);
}

const char *
silences_match(struct silences *s, const struct msg *m, uint64_t now_ms)
{
    int64_t now = (int64_t)now_ms;
    struct hash_node *n;
    size_t i, len;
    const char *v;

    for (i = 0; i < s->nkeys; i++) {
        v = msg_get(m, s->keys[i].h, &len);
        if (!v) {
            v = ""; /* a label the alert lacks is empty */
            len = 0;
        }
        for (n = hash_table_find(&s->index, key_hash(s->keys[i].h, v, len)); n;
             n = hash_table_find_next(n)) {
            const struct entry *e = hash_entry(n, struct entry, node);
            if (holds(e, m, now)) return e->id;
        }
    }
    for (i = 0; i < s->nscan; i++)
        if (holds(s->scan[i], m, now)) return s->scan[i]->id;
    return NULL;
}

void
silences_tick(struct silences *s, uint64_t now_ms)
{
    int64_t before = (int64_t)now_ms - (int64_t)(s->retention * 1000);
    size_t i, k = 0, dropped = 0;

    for (i = 0; i < s->n; i++) {
        if (s->e[i]->end < before) {
            /* every node drops it from the store too: a delete is idempotent */
            if (s->store) s->store(s->store_arg, s->e[i]->id, NULL, 0, s->e[i]->updated, NULL);
            index_remove(s, s->e[i]);
            entry_free(s->e[i]);
            dropped++;
            continue;
        }
        s->e[k++] = s->e[i];
    }
    s->n = k;
    if (dropped) {
        s->st.dropped += dropped;
        log_msg(LOG_INFO, "silences: %zu ended more than %g s ago, dropped", dropped, s->retention);
        save(s, NULL); /* on failure, the file keeps them until a later save */
    }
}

void
silences_set_store(struct silences *s, silences_store_fn fn, void *arg)
{
    s->store = fn;
    s->store_arg = arg;
}

int
silences_apply(struct silences *s, const char *rec, size_t len, struct buf *err)
{
    json_error_t je;
    json_t *j = json_loadb(rec, len, 0, &je);
    struct entry *e, *old;
    size_t i;

    if (!j) {
        buf_printf(err, "a silence that is not JSON: %s", je.text);
        s->st.load_errors++;
        return -1;
    }
    e = entry_from_file(j, err);
    json_decref(j);
    if (!e) {
        s->st.load_errors++;
        return -1;
    }
    if ((old = find(s, e->id))) {
        /* Alertmanager's merge: the newer change wins; on a tie, what is here stays */
        if (old->updated >= e->updated) {
            entry_free(e);
            return 0;
        }
        for (i = 0; i < s->n && s->e[i] != old; i++)
            ;
        index_remove(s, old);
        entry_free(old);
        s->e[i] = e;
        index_add(s, e);
        return 1;
    }
    /* another node's: taken beyond max-silences, as the cluster has it */
    add_entry(s, e);
    s->st.added++;
    return 1;
}

bool
silences_forget(struct silences *s, const char *id)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->e[i]->id, id) == 0) {
            index_remove(s, s->e[i]);
            entry_free(s->e[i]);
            s->e[i] = s->e[--s->n];
            return true;
        }
    return false;
}

size_t
silences_count(const struct silences *s)
{
    return s->n;
}

size_t
silences_active(const struct silences *s, uint64_t now_ms)
{
    size_t i, n = 0;

    for (i = 0; i < s->n; i++)
        if (s->e[i]->start <= (int64_t)now_ms && s->e[i]->end > (int64_t)now_ms) n++;
    return n;
}

const struct silences_stats *
silences_get_stats(const struct silences *s)
{
    return &s->st;
}
