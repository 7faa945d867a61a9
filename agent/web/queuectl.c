/*
 * queuectl: parses a `queue` command of the control socket and runs it on
 * the executor it names (see queuectl.h).  An id is EXECUTOR/ENTRY, split at
 * the last '/': executor names are the configuration's, entry ids never hold
 * a '/'.
 */
#include "agent/web/queuectl.h"
#include "actions/queue.h"
#include "agent/core/server.h"
#include "engine/xalloc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The queues a command works on: the server's, or the executor process's (privsep). */
struct qset {
    struct queue **q;
    size_t n;
};

static struct queue *
find(const struct qset *s, const char *name)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (strcmp(queue_name(s->q[i]), name) == 0) return s->q[i];
    return NULL;
}

/* The server's queues as a qset (the array is the caller's to free). */
static struct qset
server_set(struct server *srv)
{
    struct qset s = {xcalloc(server_nqueues(srv) + 1, sizeof(struct queue *)), server_nqueues(srv)};
    size_t i;

    for (i = 0; i < s.n; i++) s.q[i] = server_queue_at(srv, i);
    return s;
}

static json_t *
list_json(const struct qset *s, const char *name)
{
    json_t *all = json_array(), *o = json_object();
    size_t i;

    for (i = 0; i < s->n; i++) {
        struct queue *q = s->q[i];
        if (!name || strcmp(queue_name(q), name) == 0)
            json_array_append_new(all, queue_list_json(q, QUEUECTL_LIST_MAX));
    }
    json_object_set_new(o, "executors", all);
    return o;
}

struct json_t *
queuectl_list_json(struct server *srv, const char *name)
{
    struct qset s;
    json_t *o;

    if (server_proxy(srv)) return NULL; /* privsep: the executor process has them */
    s = server_set(srv);
    o = list_json(&s, name);

    free(s.q);
    return o;
}

static void
list(const struct qset *s, const char *name, struct buf *out)
{
    json_t *o = list_json(s, name);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

    buf_puts(out, text ? text : "{}");
    buf_putc(out, '\n');
    free(text);
    json_decref(o);
}

static const char *const word[] = {"OK", "ERROR", "FAILED"};

/* "OK"/"ERROR"/"FAILED" then what the queue said. */
static void
result(struct buf *out, int rc, const struct buf *said)
{
    buf_printf(out, "%s %s", word[rc], said->len ? buf_str(said) : "\n");
}

/* Splits EXECUTOR/ID; the queue, or NULL with an ERROR line in out. */
static struct queue *
by_id(const struct qset *s, char *arg, char **id, struct buf *out)
{
    char *slash = arg ? strrchr(arg, '/') : NULL;
    struct queue *q;

    if (!slash || slash == arg || !slash[1]) {
        buf_printf(out, "ERROR bad id '%s': EXECUTOR/ID, as `corral queue list` shows\n",
                   arg ? arg : "");
        return NULL;
    }
    *slash = '\0';
    *id = slash + 1;
    if (!(q = find(s, arg))) buf_printf(out, "ERROR unknown executor '%s'\n", arg);
    return q;
}

static void
command(const struct qset *s, const char *args, struct buf *out)
{
    char *copy = xstrdup(args), *save = NULL, *verb, *arg, *more, *id;
    struct buf said = BUF_INIT;
    struct queue *q;

    verb = strtok_r(copy, " ", &save);
    arg = strtok_r(NULL, " ", &save);
    more = strtok_r(NULL, " ", &save);
    if (verb && strcmp(verb, "list") == 0 && !more) {
        if (arg && !find(s, arg))
            buf_printf(out, "ERROR unknown executor '%s'\n", arg);
        else
            list(s, arg, out);
    } else if (verb && strcmp(verb, "retry") == 0 && arg && strcmp(arg, "--all-dead") == 0 &&
               !(more && strtok_r(NULL, " ", &save))) {
        size_t i, n = s->n;
        int worst = QUEUE_CTL_OK;
        if (more && !find(s, more)) {
            buf_printf(out, "ERROR unknown executor '%s'\n", more);
        } else {
            for (i = 0; i < n; i++) {
                int rc;
                q = s->q[i];
                if (more && strcmp(queue_name(q), more) != 0) continue;
                rc = queue_retry_dead(q, NULL, &said);
                if (rc == QUEUE_CTL_FAILED) worst = rc;
            }
            result(out, worst, &said);
        }
    } else if (verb && (strcmp(verb, "retry") == 0 || strcmp(verb, "drop") == 0) && arg && !more) {
        if ((q = by_id(s, arg, &id, out))) {
            int rc = verb[0] == 'r' ? queue_retry_dead(q, id, &said) : queue_drop(q, id, &said);
            result(out, rc, &said);
        }
    } else {
        buf_puts(out, "ERROR usage: queue list [EXECUTOR] | queue retry EXECUTOR/ID | queue retry "
                      "--all-dead [EXECUTOR] | queue drop EXECUTOR/ID\n");
    }
    buf_free(&said);
    free(copy);
}

void
queuectl_command(struct server *srv, const char *args, struct buf *out)
{
    struct qset s = server_set(srv);

    command(&s, args, out);
    free(s.q);
}

void
queuectl_command_queues(struct queue **queues, size_t n, const char *args, struct buf *out)
{
    struct qset s = {queues, n};

    command(&s, args, out);
}
