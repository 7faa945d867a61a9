/*
 * timerwheel: a hierarchical timing wheel.
 *
 * A timer due at time e sits at the lowest level l at which e and "now"
 * agree on every digit above l (digits are 6 bits wide), in slot e's digit
 * at l.  So a level-0 slot holds timers due at exactly one tick, and a slot
 * at level l covers 64^l ticks.  Advancing jumps straight to the start of the
 * next occupied slot (found with the per-level bitmaps): a slot above level 0
 * is then cascaded into the levels below, a level-0 slot fires.  Time jumps
 * never skip a timer, and a jump never invalidates where other timers sit,
 * because it never passes the start of an occupied slot.
 */
#include "engine/timerwheel.h"
#include "engine/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define BITS      6
#define SLOTS     64
#define LEVELS    8
#define DUE       LEVELS /* pseudo-level for timers already due */
#define SPAN_BITS (BITS * LEVELS)

struct tw {
    uint64_t now;
    uint64_t seq;
    size_t count;
    struct tw_timer *slots[LEVELS][SLOTS];
    uint64_t bitmap[LEVELS];
    struct tw_timer *due;
    struct tw_timer **batch; /* scratch for sorting a slot's timers before firing */
    size_t capbatch;
};

struct tw *
tw_new(uint64_t now)
{
    struct tw *w = xcalloc(1, sizeof(*w));

    w->now = now;
    return w;
}

void
tw_free(struct tw *w)
{
    if (!w) return;
    free(w->batch);
    free(w);
}

void
tw_set_seq(struct tw *w, uint64_t seq)
{
    w->seq = seq;
}

uint64_t
tw_seq(const struct tw *w)
{
    return w->seq;
}

uint64_t
tw_now(const struct tw *w)
{
    return w->now;
}

size_t
tw_count(const struct tw *w)
{
    return w->count;
}

void
tw_timer_init(struct tw_timer *t)
{
    memset(t, 0, sizeof(*t));
    t->level = t->slot = -1;
}

bool
tw_armed(const struct tw_timer *t)
{
    return t->level >= 0;
}

static struct tw_timer **
head_of(struct tw *w, int level, int slot)
{
    return level == DUE ? &w->due : &w->slots[level][slot];
}

static void
link_timer(struct tw *w, struct tw_timer *t, int level, int slot)
{
    struct tw_timer **head = head_of(w, level, slot);

    t->level = (int16_t)level;
    t->slot = (int16_t)slot;
    t->prev = NULL;
    t->next = *head;
    if (*head) (*head)->prev = t;
    *head = t;
    if (level != DUE) w->bitmap[level] |= 1ULL << slot;
}

static void
unlink_timer(struct tw *w, struct tw_timer *t)
{
    struct tw_timer **head = head_of(w, t->level, t->slot);

    if (t->prev)
        t->prev->next = t->next;
    else
        *head = t->next;
    if (t->next) t->next->prev = t->prev;
    if (t->level != DUE && !*head) w->bitmap[t->level] &= ~(1ULL << t->slot);
    t->next = t->prev = NULL;
    t->level = t->slot = -1;
}

/* Places an unlinked timer according to its expiry relative to now. */
static void
place(struct tw *w, struct tw_timer *t)
{
    uint64_t e = t->expires;
    int l;

    if (e <= w->now) {
        link_timer(w, t, DUE, 0);
        return;
    }
    for (l = 0; l < LEVELS; l++)
        if ((e >> (BITS * (l + 1))) == (w->now >> (BITS * (l + 1)))) break;
    link_timer(w, t, l, (int)((e >> (BITS * l)) & (SLOTS - 1)));
}

void
tw_arm(struct tw *w, struct tw_timer *t, uint64_t expires)
{
    tw_arm_ordered(w, t, expires, 0);
}

void
tw_arm_ordered(struct tw *w, struct tw_timer *t, uint64_t expires, uint64_t order)
{
    uint64_t top = ((w->now >> SPAN_BITS) << SPAN_BITS) | ((1ULL << SPAN_BITS) - 1);

    if (tw_armed(t))
        unlink_timer(w, t);
    else
        w->count++;
    t->expires = expires > top ? top : expires; /* ~8900 years ahead is as far as it goes */
    t->order = order;
    t->seq = w->seq++;
    place(w, t);
}

void
tw_cancel(struct tw *w, struct tw_timer *t)
{
    if (!tw_armed(t)) return;
    unlink_timer(w, t);
    w->count--;
}

/*
 * Start of the next occupied slot after now, or UINT64_MAX.  A level's slots
 * after now all start before the next slot of the level above, so the
 * lowest level with one holds the answer.
 */
static uint64_t
next_slot_start(const struct tw *w)
{
    int l;

    for (l = 0; l < LEVELS; l++) {
        int d = (int)((w->now >> (BITS * l)) & (SLOTS - 1));
        uint64_t mask = d == SLOTS - 1 ? 0 : w->bitmap[l] & (~0ULL << (d + 1));
        if (mask)
            return ((w->now >> (BITS * (l + 1))) << (BITS * (l + 1))) |
                   ((uint64_t)__builtin_ctzll(mask) << (BITS * l));
    }
    return UINT64_MAX;
}

uint64_t
tw_quiet_until(const struct tw *w)
{
    /* tw_advance() fires the due timers whatever the time, then works slot by slot */
    if (w->due) return w->now;
    return w->count ? next_slot_start(w) : UINT64_MAX;
}

uint64_t
tw_next_expiry(const struct tw *w)
{
    uint64_t best = UINT64_MAX;
    const struct tw_timer *t;
    int l, s;

    if (w->due) return w->now;
    /* the lowest occupied level holds the earliest timers; scan its first slot exactly */
    for (l = 0; l < LEVELS; l++) {
        int d = (int)((w->now >> (BITS * l)) & (SLOTS - 1));
        for (s = d + 1; s < SLOTS; s++)
            for (t = w->slots[l][s]; t; t = t->next)
                if (t->expires < best) best = t->expires;
        if (best != UINT64_MAX) return best;
    }
    return best;
}

static int
by_expiry(const void *a, const void *b)
{
    const struct tw_timer *x = *(struct tw_timer *const *)a, *y = *(struct tw_timer *const *)b;

    if (x->expires != y->expires) return x->expires < y->expires ? -1 : 1;
    if (x->order != y->order) return x->order < y->order ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Fires everything in the due list, in order; callbacks may add more. */
static void
fire_due(struct tw *w, tw_fire_fn fn, void *arg)
{
    while (w->due) {
        size_t n = 0, i;
        struct tw_timer *t;

        for (t = w->due; t; t = t->next) n++;
        w->batch = xgrow(w->batch, &w->capbatch, n, sizeof(*w->batch));
        for (i = 0, t = w->due; t; t = t->next) w->batch[i++] = t;
        qsort(w->batch, n, sizeof(*w->batch), by_expiry);
        for (i = 0; i < n; i++) {
            t = w->batch[i];
            /* an earlier callback may have cancelled or re-armed it */
            if (t->level != DUE) continue;
            unlink_timer(w, t);
            w->count--;
            fn(t, arg);
        }
    }
}

void
tw_advance(struct tw *w, uint64_t to, tw_fire_fn fn, void *arg)
{
    for (;;) {
        uint64_t next;
        int l;

        fire_due(w, fn, arg);
        next = next_slot_start(w);
        if (next > to) break;
        w->now = next;
        /* cascade every slot that starts exactly now, highest level first */
        for (l = LEVELS - 1; l >= 0; l--) {
            int s = (int)((next >> (BITS * l)) & (SLOTS - 1));
            struct tw_timer *t;
            if (l > 0 && (next & ((1ULL << (BITS * l)) - 1))) continue;
            while ((t = w->slots[l][s])) {
                unlink_timer(w, t);
                place(w, t);
            }
        }
    }
    if (to > w->now) w->now = to;
}

void
tw_expire_all(struct tw *w, tw_fire_fn fn, void *arg)
{
    int rounds;

    /* a callback may arm new timers; give up after many rounds rather than loop forever */
    for (rounds = 0; w->count && rounds < 1000; rounds++) {
        int l, s;
        for (l = 0; l < LEVELS; l++)
            for (s = 0; s < SLOTS; s++) {
                struct tw_timer *t;
                while ((t = w->slots[l][s])) {
                    unlink_timer(w, t);
                    link_timer(w, t, DUE, 0);
                }
            }
        fire_due(w, fn, arg);
    }
}
