/*
 * rematch: PCRE2 matching with bounds.  Every regular expression written
 * outside the program (rules' @PCRE@ parsers, filters and $(list-search),
 * silences, inhibit rules, `corral alerts` and API filters) runs through
 * rematch() against values senders choose, so that a pattern that
 * backtracks without end, such as (?:(?:.|\s)+)+[0-9]{30}, costs a bounded
 * amount of work per value instead of seconds:
 *
 *   match limit  REMATCH_MATCH_LIMIT backtracking steps (the interpreter
 *                and the JIT both count them)
 *   depth limit  REMATCH_DEPTH_LIMIT nested backtracking points (the
 *                interpreter; the JIT's own stack is PCRE2's default 32 KiB)
 *   heap limit   REMATCH_HEAP_LIMIT KiB for the interpreter's frames
 *
 * A match that hits a limit is counted (rematch_limit_hits, for
 * corral_regex_limit_hits_total) and is no match: rematch() returns
 * REMATCH_LIMIT, a negative value, so callers that take rc >= 0 as a
 * match need no change.  Callers that negate a match (!~) must tell it
 * apart: a negation of "do not know" is not a match either.
 *
 * With a limit of 100,000 steps the pattern above stops after 0.7 ms (JIT)
 * or 7 ms (interpreter) on an idle machine; a step may scan the value for
 * the next literal, so .*admin.*test.* on 60 KiB of "admintes" stops after
 * 2 ms.  Ordinary patterns (.*error.*, web[0-9]+, corral\.sshd\..*) match
 * values of 64 KiB well within the limit (tests/unit/test_rematch.c).
 */
#ifndef CORRAL_REMATCH_H
#define CORRAL_REMATCH_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#define REMATCH_MATCH_LIMIT 100000
#define REMATCH_DEPTH_LIMIT 10000
#define REMATCH_HEAP_LIMIT  16384 /* KiB */
/* What rematch() returns for a match stopped by a limit. */
#define REMATCH_LIMIT PCRE2_ERROR_MATCHLIMIT

/*
 * pcre2_match(re, s, len, from offset 0, no options, md) within the limits
 * above.  Returns what pcre2_match returns, but REMATCH_LIMIT (counted) for
 * any limit: match, depth, heap or JIT stack.  Safe on any thread.
 */
int rematch(const pcre2_code *re, const char *s, size_t len, pcre2_match_data *md);
/* Matches stopped by a limit since the start, on all threads. */
uint64_t rematch_limit_hits(void);

#endif
