/* jsonval: jansson values of cold data; see jsonval.h. */
#include "actions/jsonval.h"
#include "engine/json.h"
#include "engine/utf8.h"

#include <string.h>

json_t *
jsonval_text(const char *s, size_t len)
{
    struct buf b = BUF_INIT;
    json_t *j;

    utf8_scrub(&b, s, len);
    j = json_stringn(b.p ? b.p : "", b.len);
    buf_free(&b);
    return j;
}

json_t *
jsonval_str(const char *s)
{
    return s ? jsonval_text(s, strlen(s)) : json_null();
}

/*
 * Read back from json_format_msg rather than built member by member: the
 * message's JSON form (which members, their order, U+FFFD for what is not
 * UTF-8) stays defined in one place.  NUL in a value is written as \u0000.
 */
json_t *
jsonval_msg(const struct msg *m)
{
    struct buf b = BUF_INIT;
    json_t *j;

    json_format_msg(m, &b);
    j = json_loadb(b.p, b.len, JSON_ALLOW_NUL, NULL);
    buf_free(&b);
    return j;
}

static int
put(const char *s, size_t len, void *arg)
{
    buf_append(arg, s, len);
    return 0;
}

void
jsonval_put_new(struct buf *out, json_t *j)
{
    size_t at = out->len;

    if (!j || json_dump_callback(j, put, out, JSON_COMPACT | JSON_ENCODE_ANY) < 0) {
        buf_truncate(out, at);
        buf_puts(out, "null");
    }
    json_decref(j);
}
