/*
 * labelmatch: Prometheus Alertmanager's label matchers, over the name-value
 * pairs of a message (the labels of an alert).  Silences, inhibitions and
 * `corral alerts` select alerts with them:
 *
 *   HOST=web1   HOST!=web1   HOST=~"web[0-9]+"   PROGRAM!~"cron|anacron"
 *   comment="two words, with a comma"   {HOST="a", rule_id=~"corral\\.sshd\\..*"}
 *
 * A set is the AND of its matchers.  Text holds one matcher or several
 * separated by commas, optionally inside braces, as amtool accepts them.  A
 * value is quoted ("..." with \" \\ \n escapes) or runs to the next comma.
 * Regular expressions are PCRE2, anchored as Alertmanager anchors them: the
 * whole value must match (^(?:RE)$).  A label the message lacks has the
 * empty value, so HOST="" matches messages without HOST.  The names rule_id,
 * class and context_id stand for .classifier.rule_id and its siblings.
 */
#ifndef CORRAL_LABELMATCH_H
#define CORRAL_LABELMATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/buf.h"
#include "engine/msg.h"

/* The most matchers in one set, and the longest value: user input stays small. */
#define LABELMATCH_MAX      64
#define LABELMATCH_MAX_TEXT 4096

enum labelmatch_op { LABELMATCH_EQ, LABELMATCH_NE, LABELMATCH_RE, LABELMATCH_NRE };

struct labelmatch;

/*
 * What a set does with a name no message carries yet.  Queries come from
 * anyone who can reach the API: they register nothing, or a stream of
 * made-up names would fill the registry that rules and reloads need.
 */
enum labelmatch_names {
    LABELMATCH_NAMES_LOOKUP, /* a query: the name is absent from every message */
    LABELMATCH_NAMES_INPUT,  /* a silence: registered within the input budget (nv_intern_input) */
    LABELMATCH_NAMES_CONFIG  /* the configuration: registered (nv_intern) */
};

/* An empty set for a query (LABELMATCH_NAMES_LOOKUP). */
struct labelmatch *labelmatch_new(void);
struct labelmatch *labelmatch_new_names(enum labelmatch_names names);
void labelmatch_free(struct labelmatch *lm);
/*
 * Adds the matchers of text (len bytes) to lm.  Returns 0, or -1 with one
 * line saying what is wrong in err, and lm as it was.
 */
int labelmatch_add(struct labelmatch *lm, const char *text, size_t len, struct buf *err);
/* A new set parsed from text; NULL with a message in err.  For a query (LOOKUP). */
struct labelmatch *labelmatch_parse(const char *text, struct buf *err);
struct labelmatch *labelmatch_parse_names(const char *text, enum labelmatch_names names,
                                          struct buf *err);
/*
 * True when every matcher holds for m (an empty set matches everything).  A
 * regular expression stopped by rematch's limits holds neither for =~ nor
 * for !~.
 */
bool labelmatch_match(const struct labelmatch *lm, const struct msg *m);
/*
 * The same for labels that are no message (an API's JSON): get returns the
 * value of the label a matcher names, as written, or NULL when absent.
 */
typedef const char *(*labelmatch_get_fn)(void *arg, const char *name, size_t *len);
bool labelmatch_match_labels(const struct labelmatch *lm, labelmatch_get_fn get, void *arg);
/*
 * True when every matcher holds for the empty value: the set matches any
 * message that lacks its labels (HOST=~".*", HOST!=web1, an empty set).
 */
bool labelmatch_matches_empty(const struct labelmatch *lm);
size_t labelmatch_count(const struct labelmatch *lm);
/* Matcher i: its label name, operator and value (as written, unescaped). */
void labelmatch_at(const struct labelmatch *lm, size_t i, const char **name, enum labelmatch_op *op,
                   const char **value);
/*
 * The label handle and value of the set's first equality matcher, for an
 * index (a set with one matches only messages with that value); false when
 * it has none.
 */
bool labelmatch_first_eq(const struct labelmatch *lm, uint32_t *handle, const char **value,
                         size_t *len);
/* "=", "!=", "=~", "!~". */
const char *labelmatch_op_name(enum labelmatch_op op);
/* The set written back as text that labelmatch_parse reads: name="value", comma-separated. */
void labelmatch_format(const struct labelmatch *lm, struct buf *out);
/*
 * Sets m's value of every matcher's label to the matcher's value: the labels
 * a silence's matchers describe, which `silence query` matches against.
 */
void labelmatch_to_msg(const struct labelmatch *lm, struct msg *m);
/* The value of label name in m, with its aliases (see above); "" when absent. */
const char *labelmatch_label(const struct msg *m, const char *name, size_t *len);

#endif
