#!/bin/sh
# SIGUSR1's context dump goes only to a directory of corrald's own
# ($RUNTIME_DIRECTORY, else the state file's directory), as a new file of
# mode 0600: a link planted where the dump or its temporary file will be is
# neither followed nor its target overwritten.  Without such a directory the
# dump is refused with a clear message (never /tmp).
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/state" "$WORK/rt"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <state file="$WORK/state/state" interval="1h"/>
  <inputs><udp listen="127.0.0.1:0"/></inputs>
</corrald>
XML
echo "precious" > "$WORK/victim"
start_corrald corrald "$WORK/corrald.conf"
pid=$CORRALD_PID
ln -s "$WORK/victim" "$WORK/state/corrald-contexts.$pid.json.tmp"
ln -s "$WORK/victim" "$WORK/state/corrald-contexts.$pid.json"
kill -USR1 "$pid"
wait_until grep -q "open contexts written to $WORK/state/corrald-contexts.$pid.json" \
    "$WORK/corrald.log" || fail "SIGUSR1 dump not written to the state directory"
[ "$(cat "$WORK/victim")" = precious ] || fail "the dump followed a planted link"
[ -f "$WORK/state/corrald-contexts.$pid.json" ] && [ ! -L "$WORK/state/corrald-contexts.$pid.json" ] ||
    fail "the dump is not a regular file of its own"
[ "$(stat -c %a "$WORK/state/corrald-contexts.$pid.json")" = 600 ] || fail "the dump is not mode 0600"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == []' \
    "$WORK/state/corrald-contexts.$pid.json" || fail "the dump is not the (empty) context list"
stop_corrald "$pid"

# $RUNTIME_DIRECTORY first
RUNTIME_DIRECTORY=$WORK/rt "$CORRALD" -F -f "$WORK/corrald.conf" > "$WORK/rt.out" 2> "$WORK/rt.log" &
pid=$!
track "$pid"
wait_until grep -q started "$WORK/rt.log" || fail "corrald did not start"
kill -USR1 "$pid"
wait_until grep -q "open contexts written to $WORK/rt/corrald-contexts.$pid.json" "$WORK/rt.log" ||
    fail "SIGUSR1 dump not written to \$RUNTIME_DIRECTORY"
stop_corrald "$pid"

# neither: refused, and nothing written to /tmp
sed '/<state /d' "$WORK/corrald.conf" > "$WORK/nostate.conf"
"$CORRALD" -F -f "$WORK/nostate.conf" > "$WORK/ns.out" 2> "$WORK/ns.log" &
pid=$!
track "$pid"
wait_until grep -q started "$WORK/ns.log" || fail "corrald did not start"
kill -USR1 "$pid"
wait_until grep -q "no directory of corrald's own" "$WORK/ns.log" ||
    fail "a dump without a directory of corrald's own was not refused"
[ ! -e "/tmp/corrald-contexts.$pid.json" ] || fail "the dump went to /tmp"
stop_corrald "$pid"
echo "ok: SIGUSR1 dumps only into corrald's own directories, never through a link"
