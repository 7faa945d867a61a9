/*
 * deadletter: writing dead letters, reading them back (jansson; each line on
 * its own, so a damaged line costs only itself) and rewriting the file
 * without some of them.  See deadletter.h for the format.
 */
#include "actions/deadletter.h"
#include "actions/jsonval.h"
#include "engine/hash.h"
#include "engine/macros.h"
#include "engine/nv.h"
#include "engine/tags.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char hexdigits[] = "0123456789abcdef";

void
deadletter_format(struct buf *out, uint64_t now_ms, uint64_t seq, const char *executor,
                  const char *reason, uint32_t attempts, const char *alert_id, const struct msg *m)
{
    struct buf enc = BUF_INIT, hex = BUF_INIT, when = BUF_INIT, id = BUF_INIT;
    struct msg_time t = {(int64_t)(now_ms / 1000), 0, 0};
    size_t i;

    /* ms and seq: unique for the executor, as no two alerts of one spool share a seq at once */
    buf_printf(&id, "d%llu-%llu", (unsigned long long)now_ms, (unsigned long long)seq);
    macro_format_iso(&t, 0, &when);
    msg_encode(m, &enc);
    for (i = 0; i < enc.len; i++) {
        unsigned char c = (unsigned char)enc.p[i];
        buf_putc(&hex, hexdigits[c >> 4]);
        buf_putc(&hex, hexdigits[c & 15]);
    }
    jsonval_put_new(out,
                    json_pack("{s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:s%}", "id",
                              jsonval_text(id.p, id.len), "time", jsonval_text(when.p, when.len),
                              "executor", jsonval_str(executor), "reason",
                              jsonval_str(reason ? reason : ""), "attempts", (json_int_t)attempts,
                              "alert_id", jsonval_str(alert_id), "message", jsonval_msg(m),
                              "encoded", hex.p ? hex.p : "", hex.len));
    buf_putc(out, '\n');
    buf_free(&enc);
    buf_free(&hex);
    buf_free(&when);
    buf_free(&id);
}

int
deadletter_append(const char *path, const char *line, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600), saved;

    if (fd < 0) return -1;
    if (durable_write_all(fd, line, len) < 0 || fdatasync(fd) < 0) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return close(fd);
}

static int
hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* The alert from "encoded"; NULL when it is not hex of an encoded message. */
static struct msg *
from_encoded(const char *hex, size_t len)
{
    struct buf raw = BUF_INIT;
    struct msg *m = NULL;
    size_t i;

    if (len % 2) return NULL;
    for (i = 0; i < len; i += 2) {
        int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
        if (hi < 0 || lo < 0) goto out;
        buf_putc(&raw, (char)(hi << 4 | lo));
    }
    m = msg_new();
    if (!raw.len || msg_decode(m, raw.p, raw.len) == 0) {
        msg_unref(m);
        m = NULL;
    }
out:
    buf_free(&raw);
    return m;
}

/* The alert from "message" (lines written before "encoded"): its string values and TAGS. */
static struct msg *
from_message(json_t *obj)
{
    const char *key;
    json_t *v;
    struct msg *m;

    if (!json_is_object(obj)) return NULL;
    m = msg_new();
    msg_set_flags(m, MSG_F_GENERATED);
    json_object_foreach(obj, key, v)
    {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (!s) continue;
        if (strcmp(key, "TAGS") == 0) {
            const char *p = s, *end = s + len;
            while (p < end) {
                const char *comma = memchr(p, ',', (size_t)(end - p));
                size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);
                if (n) msg_tag_set(m, tag_intern(p, n));
                p += n + 1;
            }
        } else if (strcmp(key, "ISODATE") && strcmp(key, "FACILITY") && strcmp(key, "PRIORITY") &&
                   key[0]) {
            msg_set(m, nv_intern_str(key), s, len);
        }
    }
    return m;
}

static char *
string_member(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));

    return xstrdup(s ? s : "");
}

/* One line (without its newline); false when it is not a dead letter. */
static bool
parse_line(const char *line, size_t len, struct deadletter *d)
{
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL), *enc, *att;
    const char *id, *executor;

    memset(d, 0, sizeof(*d));
    if (!o) return false;
    executor = json_string_value(json_object_get(o, "executor"));
    if (!json_is_object(o) || !executor) {
        json_decref(o);
        return false;
    }
    id = json_string_value(json_object_get(o, "id"));
    if (id && id[0] && !strpbrk(id, " /\n")) {
        d->id = xstrdup(id);
    } else {
        char h[24];
        /* unkeyed: `corral queue` names the entry as corrald does, run after run */
        snprintf(h, sizeof(h), "h%016llx",
                 (unsigned long long)hash_fnv1a(HASH_FNV1A_BASIS, line, len));
        d->id = xstrdup(h);
    }
    d->executor = xstrdup(executor);
    d->time = string_member(o, "time");
    d->reason = string_member(o, "reason");
    d->alert_id = string_member(o, "alert_id");
    att = json_object_get(o, "attempts");
    if (json_is_integer(att) && json_integer_value(att) >= 0 &&
        json_integer_value(att) <= UINT32_MAX)
        d->attempts = (uint32_t)json_integer_value(att);
    enc = json_object_get(o, "encoded");
    if (json_is_string(enc))
        d->msg = from_encoded(json_string_value(enc), json_string_length(enc));
    else
        d->msg = from_message(json_object_get(o, "message"));
    json_decref(o);
    return true;
}

void
deadletter_parse(const char *data, size_t len, struct deadletter_list *out)
{
    size_t pos = 0;

    memset(out, 0, sizeof(*out));
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len, n = end - pos;
        struct deadletter d;

        if (n && parse_line(data + pos, n, &d)) {
            d.off = pos;
            d.len = end - pos + (nl != NULL);
            out->v = xgrow(out->v, &out->cap, out->n + 1, sizeof(*out->v));
            out->v[out->n++] = d;
        } else if (n) {
            out->unreadable++;
        }
        pos = end + 1;
    }
}

int
deadletter_read(const char *path, struct deadletter_list *out, char **data, size_t *len)
{
    memset(out, 0, sizeof(*out));
    *data = durable_read_file(path, DEADLETTER_MAX_FILE, len);
    if (!*data) {
        if (errno != ENOENT) return -1;
        *data = xstrdup("");
        *len = 0;
        return 0;
    }
    deadletter_parse(*data, *len, out);
    return 0;
}

void
deadletter_list_free(struct deadletter_list *l)
{
    size_t i;

    for (i = 0; i < l->n; i++) {
        struct deadletter *d = &l->v[i];
        free(d->id);
        free(d->executor);
        free(d->time);
        free(d->reason);
        free(d->alert_id);
        if (d->msg) msg_unref(d->msg);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int
deadletter_remove_begin(struct durable_file *df, const char *path, const char *data, size_t len,
                        const struct deadletter_list *l, const bool *remove)
{
    size_t pos = 0, i;

    if (durable_begin(df, path) < 0) return -1;
    /* the bytes between removed entries, unreadable lines included, as they were */
    for (i = 0; i <= l->n; i++) {
        size_t upto = i < l->n ? l->v[i].off : len;
        if (i < l->n && !remove[i]) continue;
        if (upto > pos && durable_write_all(df->fd, data + pos, upto - pos) < 0) {
            durable_abort(df);
            return -1;
        }
        if (i < l->n) pos = l->v[i].off + l->v[i].len;
    }
    return 0;
}
