#!/bin/sh
# Checking a configuration does not depend on the working directory: the
# schema is built into corrald and corral, so `corral check-config`,
# `corrald -t` and `corral match -c` give the same answers from / as from the
# source tree, and a bad configuration is refused with its file and line.
. "$(dirname "$0")/corrald_lib.sh"
# the programs by absolute path: the checks run from other directories
CORRAL=$(cd "$(dirname "$CORRAL")" && pwd)/corral
CORRALD=$(cd "$(dirname "$CORRALD")" && pwd)/corrald

mkdir -p "$WORK/rules"
cp "$top_srcdir/tests/integration/session_rules.xml" "$WORK/rules/"
cat > "$WORK/good.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <inputs><udp listen="127.0.0.1:5514"/></inputs>
</corrald>
XML
cat > "$WORK/bad.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <inputs><udp listen="127.0.0.1:5514" colour="blue"/></inputs>
</corrald>
XML
printf '<13>Dec  3 10:00:00 web1 app: hello\n' > "$WORK/one.log"

for dir in / "$WORK"; do
    (cd "$dir" && "$CORRAL" check-config "$WORK/good.conf") > "$WORK/out.txt" 2>&1 ||
        fail "corral check-config from $dir refused a good configuration: $(cat "$WORK/out.txt")"
    (cd "$dir" && "$CORRALD" -t -f "$WORK/good.conf") > "$WORK/out.txt" 2>&1 ||
        fail "corrald -t from $dir refused a good configuration: $(cat "$WORK/out.txt")"
    (cd "$dir" && "$CORRAL" match -c "$WORK/good.conf" --dry-run -f "$WORK/one.log") \
        > "$WORK/out.txt" 2>&1 ||
        fail "corral match -c from $dir failed: $(cat "$WORK/out.txt")"
    if (cd "$dir" && "$CORRAL" check-config "$WORK/bad.conf") > "$WORK/out.txt" 2>&1; then
        fail "corral check-config from $dir accepted an unknown attribute"
    fi
    grep -q "bad.conf:3:" "$WORK/out.txt" || fail "no file:line for the bad attribute: $(cat "$WORK/out.txt")"
    if (cd "$dir" && "$CORRALD" -t -f "$WORK/bad.conf") > "$WORK/out.txt" 2>&1; then
        fail "corrald -t from $dir accepted an unknown attribute"
    fi
    grep -q "bad.conf:3:" "$WORK/out.txt" || fail "corrald -t: no file:line: $(cat "$WORK/out.txt")"
done
# a rules path that cannot be read is named with the configuration's file:line
printf '<corrald>\n  <rules path="%s/none"/>\n</corrald>\n' "$WORK" > "$WORK/norules.conf"
for check in "$CORRAL check-config" "$CORRALD -t -f"; do
    if $check "$WORK/norules.conf" > "$WORK/out.txt" 2>&1; then fail "$check accepted a missing rules path"; fi
    grep -q "norules.conf:2: rules path $WORK/none: No such file or directory" "$WORK/out.txt" ||
        fail "$check: the missing rules path without file:line: $(cat "$WORK/out.txt")"
done
# the built-in configuration of a build that is not installed (README.md's
# demo: built in build/) finds the source tree's rules, from anywhere
(cd / && "$CORRALD" -t) > "$WORK/out.txt" 2>&1 ||
    fail "corrald -t with the built-in configuration: $(cat "$WORK/out.txt")"
grep -Eq '^\(built-in\): configuration OK, [0-9]{3,} rules$' "$WORK/out.txt" ||
    fail "the built-in configuration did not load the shipped rules: $(cat "$WORK/out.txt")"
echo "ok: configurations checked alike from / and from a scratch directory"
