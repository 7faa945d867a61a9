/*
 * in_file: follows a log file like `tail -F`: reads lines as they are
 * appended, survives rotation and truncation, and remembers where it was
 * across restarts.
 *
 * Change notification is inotify on the file's directory (uv_fs_event: it
 * reports appends to the file as well as its renaming and re-creation), with
 * a stat every second as the fallback for file systems without inotify.
 * Every disk operation runs on libuv's thread pool, one at a time, as a small
 * state machine: open, fstat, read until EOF, then stat the path to learn
 * whether the name now refers to another file (rotation: the old file is read
 * to its end, then the new one from its start), or the file shrank
 * (truncation: read again from the start).  A file renamed away keeps being
 * read until a new one appears, since writers often go on writing to it for
 * a moment; a file deleted outright is let go.
 *
 * The position (device, inode, offset of the first byte not yet delivered)
 * is kept in a small file, the input's position-file (by default in the state
 * file's directory, or beside the followed file without a state file: see
 * conf.c).  At start a file whose device and inode match its record
 * continues from the recorded offset; a file that does not match was rotated
 * while corrald was away and is read from its start; a file never seen
 * before starts at its end, or at its start with from="start".  Files that
 * appear while corrald runs are read from their start.
 *
 * Back-pressure (input_pause): a paused input finishes the read in progress
 * and starts no other until resumed; the file keeps what is not read yet.
 */
#include "agent/net/framer.h"
#include "agent/input/in_common.h"
#include "engine/log.h"
#include "engine/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_BUF_SIZE (64 * 1024)
/* The fallback stat, and the most often the position file is written. */
#define TICK_MS 1000

enum step { STEP_NONE, STEP_OPEN, STEP_FSTAT, STEP_READ, STEP_STAT };

struct file_input {
    struct input base;
    char *dir, *file; /* the path's directory and last component */
    char *pos_path, *pos_tmp;
    uv_fs_event_t watch;
    uv_timer_t tick;
    unsigned handles; /* open libuv handles */
    uv_fs_t req;
    enum step step; /* what req is doing; STEP_NONE: idle */
    bool again;     /* something happened while busy: look again when done */
    bool closing;

    uv_file fd; /* -1: no file open */
    uint64_t dev, ino;
    int64_t offset; /* of the next byte to read */
    bool seen;      /* the path was looked at since the input opened */
    bool draining;  /* rotated: read the old file to its end, then switch */
    char *rbuf;
    struct framer fr;

    /* the position record read at start, and the last one written */
    bool have_pos;
    uint64_t pos_dev, pos_ino;
    int64_t pos_off;
    bool pos_dirty;
    bool pos_warned;
    int last_open_error; /* logged once until it changes */
};

static void run(struct file_input *f);
static void start_read(struct file_input *f);
static void start_open(struct file_input *f);

/* ---- the position file ---- */

/* The position file named by the configuration (conf.c chooses the default),
 * and its temporary twin. */
static void
pos_paths(struct file_input *f, const char *position_file)
{
    size_t n;

    if (position_file) {
        f->pos_path = xstrdup(position_file);
    } else {
        struct buf b = BUF_INIT;
        buf_printf(&b, "%s.corral-pos", f->base.conf.path);
        f->pos_path = xstrdup(buf_str(&b));
        buf_free(&b);
    }
    n = strlen(f->pos_path);
    f->pos_tmp = xmalloc(n + 5);
    memcpy(f->pos_tmp, f->pos_path, n);
    memcpy(f->pos_tmp + n, ".tmp", 5);
}

static void
pos_load(struct file_input *f)
{
    FILE *fp = fopen(f->pos_path, "re");
    unsigned long long dev, ino;
    long long off;

    if (!fp) {
        if (errno != ENOENT)
            log_msg(LOG_WARNING, "%s: cannot read %s: %s", f->base.conf.name, f->pos_path,
                    strerror(errno));
        return;
    }
    if (fscanf(fp, "corral-pos 1 %llu %llu %lld", &dev, &ino, &off) == 3 && off >= 0) {
        f->have_pos = true;
        f->pos_dev = dev;
        f->pos_ino = ino;
        f->pos_off = off;
    } else {
        log_msg(LOG_WARNING, "%s: %s is malformed, ignored", f->base.conf.name, f->pos_path);
    }
    fclose(fp);
}

/*
 * Writes the position of the first byte not delivered yet.  Synchronous, but
 * a few dozen bytes at most once a second: cheaper than a thread pool trip.
 */
static void
pos_save(struct file_input *f)
{
    FILE *fp;
    int64_t off;
    bool ok;

    if (!f->pos_dirty || !f->ino) return;
    f->pos_dirty = false;
    off = f->offset - (int64_t)framer_pending(&f->fr);
    if (off < 0) off = 0;
    fp = fopen(f->pos_tmp, "we");
    ok = fp != NULL;
    if (fp) {
        ok = fprintf(fp, "corral-pos 1 %" PRIu64 " %" PRIu64 " %" PRId64 "\n", f->dev, f->ino,
                     off) > 0;
        ok = (fclose(fp) == 0) && ok;
    }
    if (ok && rename(f->pos_tmp, f->pos_path) < 0) ok = false;
    if (!ok) {
        if (!f->pos_warned)
            log_msg(LOG_WARNING,
                    "%s: cannot write the position to %s: %s (a restart will not resume)",
                    f->base.conf.name, f->pos_path, strerror(errno));
        f->pos_warned = true;
        unlink(f->pos_tmp);
    } else {
        f->pos_warned = false;
    }
}

/* ---- the state machine ---- */

static void
file_message(void *arg, const char *data, size_t len, bool truncated)
{
    struct file_input *f = arg;

    input_deliver(&f->base, data, len, truncated, NULL);
}

static void
maybe_free(struct file_input *f)
{
    if (!f->closing || f->step != STEP_NONE || f->handles > 0) return;
    if (f->fd >= 0) close(f->fd);
    framer_free(&f->fr);
    free(f->rbuf);
    free(f->dir);
    free(f->file);
    free(f->pos_path);
    free(f->pos_tmp);
    input_fini(&f->base);
    free(f);
}

/* The current step is over: look again if something happened meanwhile. */
static void
idle(struct file_input *f)
{
    f->step = STEP_NONE;
    if (f->closing) {
        maybe_free(f);
        return;
    }
    if (f->again) run(f);
}

static void
close_file(struct file_input *f)
{
    if (f->fd >= 0) close(f->fd); /* no I/O on a file opened for reading: not worth a thread */
    f->fd = -1;
}

/* Checks that an fs request was queued; if not, logs it and ends the step as its callback would. */
static bool
started(struct file_input *f, int rc, const char *what)
{
    if (rc >= 0) return true;
    f->base.stats.errors++;
    log_msg(LOG_ERR, "%s: %s: %s", f->base.conf.name, what, uv_strerror(rc));
    idle(f);
    return false;
}

static void
on_stat(uv_fs_t *req)
{
    struct file_input *f = req->data;
    int rc = (int)req->result;
    uv_stat_t st = req->statbuf;
    struct stat old;

    uv_fs_req_cleanup(req);
    if (f->closing) {
        idle(f);
        return;
    }
    if (rc < 0) {
        /* the name is gone: renamed away (keep reading, writers lag) or deleted (let go) */
        if (fstat(f->fd, &old) == 0 && old.st_nlink == 0) {
            log_msg(LOG_INFO, "%s: %s was deleted", f->base.conf.name, f->base.conf.path);
            framer_eof(&f->fr);
            close_file(f);
        }
        idle(f);
        return;
    }
    if (st.st_dev != f->dev || st.st_ino != f->ino) {
        log_msg(LOG_INFO, "%s: %s was rotated: finishing the old file", f->base.conf.name,
                f->base.conf.path);
        f->draining = true;
        start_read(f);
        return;
    }
    if ((int64_t)st.st_size < f->offset) {
        log_msg(LOG_INFO, "%s: %s was truncated: reading from its start", f->base.conf.name,
                f->base.conf.path);
        framer_eof(&f->fr); /* a line cut by the truncation is still a line */
        f->offset = 0;
        f->pos_dirty = true;
        start_read(f);
        return;
    }
    if ((int64_t)st.st_size > f->offset) {
        start_read(f); /* appended since the read that hit EOF */
        return;
    }
    idle(f);
}

static void
on_read(uv_fs_t *req)
{
    struct file_input *f = req->data;
    ssize_t n = req->result;

    uv_fs_req_cleanup(req);
    if (f->closing) {
        idle(f);
        return;
    }
    if (n > 0) {
        f->offset += n;
        f->pos_dirty = true;
        framer_feed(&f->fr, f->rbuf, (size_t)n); /* newline framing cannot fail */
        if (f->base.paused) {
            /* read on when resumed (file_pause runs the state machine again) */
            f->step = STEP_NONE;
            f->again = true;
            return;
        }
        start_read(f);
        return;
    }
    if (n < 0) {
        f->base.stats.errors++;
        log_msg(LOG_ERR, "%s: read %s: %s", f->base.conf.name, f->base.conf.path,
                uv_strerror((int)n));
        close_file(f);
        idle(f);
        return;
    }
    if (f->draining) {
        /* the old file is done: its last line is complete, whatever its ending */
        f->draining = false;
        framer_eof(&f->fr);
        close_file(f);
        start_open(f);
        return;
    }
    f->step = STEP_STAT;
    started(f, uv_fs_stat(f->base.loop, &f->req, f->base.conf.path, on_stat), "stat");
}

static void
start_read(struct file_input *f)
{
    uv_buf_t b = uv_buf_init(f->rbuf, READ_BUF_SIZE);

    f->again = false;
    f->step = STEP_READ;
    started(f, uv_fs_read(f->base.loop, &f->req, f->fd, &b, 1, f->offset, on_read), "read");
}

static void
on_fstat(uv_fs_t *req)
{
    struct file_input *f = req->data;
    int rc = (int)req->result;
    uv_stat_t st = req->statbuf;
    int64_t size;
    const char *why;

    uv_fs_req_cleanup(req);
    if (f->closing) {
        idle(f);
        return;
    }
    if (rc < 0) {
        f->base.stats.errors++;
        log_msg(LOG_ERR, "%s: fstat %s: %s", f->base.conf.name, f->base.conf.path, uv_strerror(rc));
        close_file(f);
        idle(f);
        return;
    }
    size = (int64_t)st.st_size;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    if (f->seen) {
        f->offset = 0;
        why = "a new file";
    } else if (f->have_pos && f->pos_dev == f->dev && f->pos_ino == f->ino) {
        f->offset = f->pos_off <= size ? f->pos_off : 0;
        why = f->pos_off <= size ? "resuming" : "truncated while stopped";
    } else if (f->have_pos) {
        f->offset = 0;
        why = "rotated while stopped";
    } else {
        f->offset = f->base.conf.from_start ? 0 : size;
        why = f->base.conf.from_start ? "first seen, from its start" : "first seen, from its end";
    }
    f->seen = true;
    f->pos_dirty = true;
    framer_reset(&f->fr);
    log_msg(LOG_INFO, "%s: following %s from offset %" PRId64 " (%s)", f->base.conf.name,
            f->base.conf.path, f->offset, why);
    start_read(f);
}

static void
on_open(uv_fs_t *req)
{
    struct file_input *f = req->data;
    int rc = (int)req->result;

    uv_fs_req_cleanup(req);
    if (rc >= 0) f->fd = rc; /* even when closing: maybe_free closes it */
    if (f->closing) {
        idle(f);
        return;
    }
    if (rc < 0) {
        if (rc != f->last_open_error) {
            if (rc == UV_ENOENT) {
                log_msg(LOG_INFO, "%s: %s does not exist (yet): waiting for it", f->base.conf.name,
                        f->base.conf.path);
            } else {
                f->base.stats.errors++;
                log_msg(LOG_WARNING, "%s: cannot open %s: %s", f->base.conf.name, f->base.conf.path,
                        uv_strerror(rc));
            }
        }
        f->last_open_error = rc;
        /* whatever appears there later was written after we started: read it from its start */
        f->seen = true;
        idle(f);
        return;
    }
    f->last_open_error = 0;
    f->step = STEP_FSTAT;
    started(f, uv_fs_fstat(f->base.loop, &f->req, f->fd, on_fstat), "fstat");
}

static void
start_open(struct file_input *f)
{
    f->again = false;
    f->step = STEP_OPEN;
    started(f,
            uv_fs_open(f->base.loop, &f->req, f->base.conf.path, O_RDONLY | O_CLOEXEC, 0, on_open),
            "open");
}

/* Something may have changed: look, now or as soon as the current step is over. */
static void
run(struct file_input *f)
{
    if (f->closing) return;
    if (f->step != STEP_NONE || f->base.paused) {
        f->again = true;
        return;
    }
    if (f->fd < 0)
        start_open(f);
    else
        start_read(f);
}

static void
file_pause(struct input *in, bool pause)
{
    struct file_input *f = (struct file_input *)in;

    if (!pause) run(f);
}

/* ---- watchers ---- */

static void
on_change(uv_fs_event_t *h, const char *filename, int events, int status)
{
    struct file_input *f = h->data;

    (void)events;
    if (status < 0) {
        log_msg(LOG_WARNING, "%s: watching %s: %s", f->base.conf.name, f->dir, uv_strerror(status));
        return;
    }
    /* the directory reports every file in it: only ours matters */
    if (!filename || strcmp(filename, f->file) == 0) run(f);
}

static void
on_tick(uv_timer_t *t)
{
    struct file_input *f = t->data;

    run(f);
    pos_save(f);
}

static void
handle_closed(uv_handle_t *h)
{
    struct file_input *f = h->data;

    f->handles--;
    maybe_free(f);
}

static void
file_close(struct input *in)
{
    struct file_input *f = (struct file_input *)in;

    /* the partial line is not delivered: the saved position is before it, the next run reads it */
    pos_save(f);
    f->closing = true;
    if (f->step != STEP_NONE) uv_cancel((uv_req_t *)&f->req);
    if (uv_is_active((uv_handle_t *)&f->watch)) uv_fs_event_stop(&f->watch);
    if (!uv_is_closing((uv_handle_t *)&f->watch)) uv_close((uv_handle_t *)&f->watch, handle_closed);
    uv_timer_stop(&f->tick);
    if (!uv_is_closing((uv_handle_t *)&f->tick)) uv_close((uv_handle_t *)&f->tick, handle_closed);
    maybe_free(f);
}

struct input *
in_file_open(const struct input_sink *sink, uv_loop_t *loop, const struct conf_input *ci,
             const struct conf *conf, struct buf *err)
{
    struct file_input *f;
    const char *slash;
    int rc;

    if (!ci->path || !*ci->path) {
        buf_printf(err, "input %s: no path", ci->name ? ci->name : "file");
        return NULL;
    }
    f = xcalloc(1, sizeof(*f));
    input_init(&f->base, sink, loop, ci, conf);
    f->base.close = file_close;
    f->base.pause = file_pause;
    f->fd = -1;
    f->req.data = f;
    slash = strrchr(ci->path, '/');
    if (!slash) {
        f->dir = xstrdup(".");
        f->file = xstrdup(ci->path);
    } else {
        f->dir = slash == ci->path ? xstrdup("/") : xstrndup(ci->path, (size_t)(slash - ci->path));
        f->file = xstrdup(slash + 1);
    }
    if (!*f->file) {
        buf_printf(err, "input %s: %s names a directory, not a file", f->base.conf.name, ci->path);
        free(f->dir);
        free(f->file);
        input_fini(&f->base);
        free(f);
        return NULL;
    }
    f->rbuf = xmalloc(READ_BUF_SIZE);
    framer_init(&f->fr, CONF_FRAMING_NEWLINE, f->base.max_message_size, file_message, f);
    pos_paths(f, ci->position_file);
    pos_load(f);

    uv_fs_event_init(loop, &f->watch); /* cannot fail on Linux */
    f->watch.data = f;
    f->handles++;
    rc = uv_fs_event_start(&f->watch, on_change, f->dir, 0);
    if (rc < 0)
        log_msg(LOG_WARNING, "%s: cannot watch %s (%s): checking every %d ms instead",
                f->base.conf.name, f->dir, uv_strerror(rc), TICK_MS);
    uv_timer_init(loop, &f->tick);
    f->tick.data = f;
    f->handles++;
    uv_timer_start(&f->tick, on_tick, TICK_MS, TICK_MS);
    run(f);
    return &f->base;
}
