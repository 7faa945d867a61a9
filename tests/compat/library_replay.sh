#!/bin/sh
# library_replay: the whole shipped rule library is quiet on normal logs.  The
# loghub samples (tests/data/loghub, real OpenSSH and Linux syslog with their
# LICENSE) are replayed through rules/ and the Sigma rules of rules/sigma
# (as the shipped corrald.conf loads them) with `corral match` (by message time;
# open contexts expire at the end), and the set of generated events (event,
# host, address or user, count) must be exactly the one in
# tests/data/replay/loghub.expected.  rules/README.md ("Quiet on normal
# logs") says why each of them is right.  A new scenario that fires here
# fired on lines it was not written for.

top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
top_builddir=${top_builddir:-$top_srcdir}
CORRAL=$top_builddir/tools/corral
expected=$top_srcdir/tests/data/replay/loghub.expected

tmp=$(mktemp -d "${TMPDIR:-/tmp}/library_replay.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# generated messages only (no .classifier.class) and Sigma alerts (class sigma), one line each
tpl='$(if ("${.classifier.class}" eq "" or "${.classifier.class}" eq "sigma") "${corral.event}|${HOST}|${usracct.device}|${usracct.username}|${corral.count}\n" "")'
status=0
for log in OpenSSH_2k.log Linux_2k.log; do
    # --now: the samples carry no year, and a message dated after the clock is
    # taken at the clock's time; a fixed "now" after them (the end of 2026)
    # makes the year and every message time the same on every run, any day
    "$CORRAL" match --now 2026-12-31T00:00:00Z -r "$top_srcdir/rules" \
        --sigma "$top_srcdir/rules/sigma" -f "$top_srcdir/tests/data/loghub/$log" -T "$tpl" > "$tmp/out" || status=1
    sed "s/^/$log|/" "$tmp/out"
done | LC_ALL=C sort | uniq -c | sed 's/^ *//' > "$tmp/got"

if cmp -s "$expected" "$tmp/got"; then
    echo "library_replay: $(awk '{ n += $1 } END { print n }' "$tmp/got") generated events on the loghub samples, as expected"
else
    echo "library_replay: generated events differ from $expected:"
    diff "$expected" "$tmp/got" | head -40
    status=1
fi
exit $status
