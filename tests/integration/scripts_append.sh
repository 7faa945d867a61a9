#!/bin/sh
# contrib/scripts/append.sh: the line it writes (fields, control characters
# made visible, the date when CORRAL_ISODATE is unset), lines that stay
# whole when many run at once with long messages, and its exit statuses.
# Exit 77 if flock or python3 is missing.
. "$(dirname "$0")/corrald_lib.sh"
need flock python3

APPEND=$top_srcdir/contrib/scripts/append.sh
[ -x "$APPEND" ] || fail "no $APPEND"
OUT=$WORK/alerts.txt # not *.log: fail() prints those

app() {
    env -i PATH="$PATH" "$@"
}

# ---- one line, fields and escaping ----
msg=$(printf 'two\nlines\ttab\033[31mred\\back \303\274 $(id)')
app CORRAL_ISODATE=2024-01-05T10:00:00+01:00 CORRAL_SEVERITY=major CORRAL_ALERT_ID='ssh brute/web1' \
    CORRAL_MESSAGE="$msg" sh "$APPEND" -- "$OUT" || fail "exit $?"
want='2024-01-05T10:00:00+01:00 major ssh\x20brute/web1 two\nlines\ttab\x1b[31mred\\back ü $(id)'
[ "$(cat "$OUT")" = "$want" ] || fail "line: $(cat "$OUT"), wanted $want"

# text from the arguments; empty fields as "-"; the date of now
app sh "$APPEND" "$OUT" hello there || fail "exit $?"
tail -n 1 "$OUT" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9:]+ - - hello there$' ||
    fail "line: $(tail -n 1 "$OUT")"
[ "$(wc -l < "$OUT")" -eq 2 ] || fail "not two lines"

# ---- concurrency: 40 writers of 100 KB lines, none interleaved ----
LETTERS=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn
: > "$OUT"
pids=
for i in $(seq 1 40); do
    c=$(printf '%s' "$LETTERS" | cut -c "$i")
    long=$(head -c 100000 /dev/zero | tr '\0' "$c")
    app CORRAL_ISODATE=now CORRAL_SEVERITY=info CORRAL_ALERT_ID="id$i" CORRAL_MESSAGE="$long" \
        sh "$APPEND" "$OUT" &
    pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "a concurrent append.sh failed"; done
python3 - "$OUT" "$LETTERS" <<'PY' || fail "lines interleaved"
import sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
assert lines[-1] == b"", "no newline at the end"
lines = lines[:-1]
assert len(lines) == 40, len(lines)
seen = set()
for l in lines:
    when, sev, ident, text = l.split(b" ", 3)
    assert when == b"now" and sev == b"info", l[:40]
    n = int(ident[2:])
    c = sys.argv[2][n - 1].encode()
    assert text == c * 100000, (ident, text[:20])
    seen.add(n)
assert seen == set(range(1, 41))
PY

# ---- exit statuses ----
app sh "$APPEND" > /dev/null 2>&1
[ $? -eq 64 ] || fail "no file: not 64"
app sh "$APPEND" "$WORK/no/such/dir/file" x 2> /dev/null
[ $? -eq 75 ] || fail "missing directory: not 75"
# The lock: taken by someone else, append.sh waits for it; it is let go once
# the kernel lists append.sh's flock as blocked on it (/proc/locks).
# (Linux makes each append of one write() atomic anyway, so the test above
# would pass without a lock; this one would not.)
flock -x "$OUT" sh -c '
    touch "$1.held"
    i=0
    while [ ! -e "$1.release" ] && [ $i -lt $(($2 * 20)) ]; do sleep 0.05; i=$((i + 1)); done
    echo holder-done >> "$1"' sh "$OUT" "$WAIT_TIMEOUT" &
holder=$!
track $holder
wait_until test -e "$OUT.held" || fail "the lock holder did not start"
app CORRAL_MESSAGE=after-lock sh "$APPEND" "$OUT" &
appender=$!
track $appender
inode=$(stat -c %i "$OUT")
blocked() { grep -q -- "-> FLOCK .*:$inode " /proc/locks; }
wait_until blocked || fail "append.sh did not wait for the lock"
touch "$OUT.release"
wait "$appender" || fail "waiting for the lock: exit $?"
untrack "$appender"
wait "$holder"
untrack "$holder"
[ "$(tail -n 2 "$OUT" | head -n 1)" = holder-done ] || fail "did not wait for the lock"
tail -n 1 "$OUT" | grep -q ' after-lock$' || fail "line after the lock is missing"

echo "append.sh: all checks passed"
