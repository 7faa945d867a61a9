#!/bin/sh
# hostile_values: input and settings that do not fit are refused or cut,
# never wrapped, saturated or taken without bound; with the real `corral`
# and `corrald -t`.
#
#   (a) corral match -f on 200 MB without a newline (/dev/zero), -j 1 and
#       -j 2: each line is cut at max-message-size (corrald's default, 64 KiB,
#       or -c's), the cut lines are counted on stderr, the peak RSS stays
#       under 64 MB (it grew with the line before); a line after an overlong
#       one is classified.
#   (b) corral match --now out of range (epoch seconds whose milliseconds
#       overflow, wrapping to a small positive time before) is refused.
#   (c) an empty rules directory: corral match, corrald -t and corral
#       check-config refuse it, naming the directory (and the <rules> line).
#   (d) max-message-size="18014398509481984064k" (wrapped to 64 KiB before),
#       counts beyond 64 bits, a duration beyond 100 years or a double:
#       corrald -t refuses each with its file:line.

. "$(dirname "$0")/corrald_lib.sh"
need python3
R=$HERE/inputs_rules.xml

# peak_rss_kb CMD...: runs CMD (a shell command line), prints its children's peak RSS in KiB
peak_rss_kb() {
    python3 -c 'import resource, subprocess, sys
r = subprocess.run(["sh", "-c", sys.argv[1]])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(r.returncode)' "$1"
}

# ---- (a) lines without bound
for j in 1 2; do
    rss=$(peak_rss_kb "head -c 200000000 /dev/zero | '$CORRAL' match -j $j -r '$R' -f - > '$WORK/zero.out' 2> '$WORK/zero.err'") ||
        fail "-j $j: corral match on /dev/zero failed: $(cat "$WORK/zero.err")"
    [ "$rss" -lt 65536 ] || fail "-j $j: corral match on 200 MB without a newline: peak RSS $rss KiB"
    grep -q "^corral match: -: 1 line longer than 65536 bytes (max-message-size) cut to it" "$WORK/zero.err" ||
        fail "-j $j: cut line not reported: $(cat "$WORK/zero.err")"
done
good="<13>Jan  1 00:00:00 testhost inputtest: conn=7 seq=1 after"
{ head -c 70000 /dev/zero | tr '\0' a; echo; head -c 70000 /dev/zero | tr '\0' b; echo; echo "$good"; } > "$WORK/long.txt"
"$CORRAL" match -j 1 -r "$R" -f "$WORK/long.txt" --json > "$WORK/long.out" 2> "$WORK/long.err" ||
    fail "corral match on long lines: $(cat "$WORK/long.err")"
grep -q "long.txt: 2 lines longer than 65536 bytes" "$WORK/long.err" || fail "$(cat "$WORK/long.err")"
grep -q '"test.conn":"7"' "$WORK/long.out" || fail "the line after two long ones was not classified"
# -c: the configuration's max-message-size
cat > "$WORK/small.conf" <<EOF
<corrald>
  <rules path="$R"/>
  <limits max-message-size="1k"/>
</corrald>
EOF
{ head -c 1024 /dev/zero | tr '\0' a; echo; head -c 1025 /dev/zero | tr '\0' a; echo; } > "$WORK/k.txt"
"$CORRAL" match -j 1 -c "$WORK/small.conf" -f "$WORK/k.txt" > /dev/null 2> "$WORK/k.err" ||
    fail "corral match -c: $(cat "$WORK/k.err")"
grep -q "k.txt: 1 line longer than 1024 bytes" "$WORK/k.err" || fail "-c max-message-size: $(cat "$WORK/k.err")"

# ---- (b) --now
for now in 99999999999999999999 18446744073709552 253402300800 0 -5 12x 10000-01-01T00:00:00Z; do
    "$CORRAL" match -r "$R" --now "$now" -f /dev/null > /dev/null 2> "$WORK/now.err" &&
        fail "--now $now accepted"
    grep -q "bad --now '$now' (epoch seconds from 1 to 253402300799" "$WORK/now.err" ||
        fail "--now $now: $(cat "$WORK/now.err")"
done
for now in 1 253402300799 2026-12-03T10:00:00Z; do
    "$CORRAL" match -r "$R" --now "$now" -f /dev/null > /dev/null 2> "$WORK/now.err" ||
        fail "--now $now refused: $(cat "$WORK/now.err")"
done

# ---- (c) an empty rules directory
mkdir -p "$WORK/empty"
"$CORRAL" match -r "$WORK/empty" -f /dev/null > /dev/null 2> "$WORK/empty.err" &&
    fail "corral match took an empty rules directory"
grep -q "no rules in $WORK/empty" "$WORK/empty.err" || fail "corral match: $(cat "$WORK/empty.err")"
cat > "$WORK/empty.conf" <<EOF
<corrald>
  <rules path="$WORK/empty"/>
</corrald>
EOF
for check in "$CORRALD -t -f" "$CORRAL check-config"; do
    $check "$WORK/empty.conf" > "$WORK/check.txt" 2>&1 && fail "$check took an empty rules directory"
    grep -q "empty.conf:2: rules path $WORK/empty: no rules in it" "$WORK/check.txt" ||
        fail "$check: $(cat "$WORK/check.txt")"
done
# beside a path with rules it is a warning, with its line
cat > "$WORK/some.conf" <<EOF
<corrald>
  <rules path="$WORK/empty"/>
  <rules path="$R"/>
</corrald>
EOF
$CORRALD -t -f "$WORK/some.conf" > "$WORK/check.txt" 2>&1 || fail "-t: $(cat "$WORK/check.txt")"
grep -q "some.conf:2: rules path $WORK/empty: no rules in it" "$WORK/check.txt" ||
    fail "no warning for the empty path: $(cat "$WORK/check.txt")"

# ---- (d) sizes, counts and durations that do not fit
# bad ATTRS EXPECTED: a <limits ATTRS/> that corrald -t refuses with line 3 and EXPECTED
bad() {
    cat > "$WORK/bad.conf" <<EOF
<corrald>
  <rules path="$R"/>
  <limits $1/>
</corrald>
EOF
    "$CORRALD" -t -f "$WORK/bad.conf" > "$WORK/check.txt" 2>&1 && fail "-t accepted <limits $1/>"
    grep -qF "bad.conf:3: $2" "$WORK/check.txt" || fail "<limits $1/>: $(cat "$WORK/check.txt")"
}
bad 'max-message-size="18014398509481984064k"' 'bad size max-message-size="18014398509481984064k": too large'
bad 'max-message-size="99999999999999999999999"' 'bad size max-message-size="99999999999999999999999": too large'
bad 'max-message-size="2G"' 'bad size max-message-size: at most 1G'
bad 'max-contexts="99999999999999999999999"' 'bad value max-contexts="99999999999999999999999": too large'
bad 'idle-timeout="36501d"' 'bad duration idle-timeout="36501d"'
bad 'idle-timeout="99999999999999999999999999999999999999999999h"' 'bad duration idle-timeout="99999999999999999999999999999999999999999999h"'
echo "hostile_values: long lines cut and counted, --now bounded, empty rules refused, sizes that do not fit refused"
