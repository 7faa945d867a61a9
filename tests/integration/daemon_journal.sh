#!/bin/sh
# corrald's own log as journald reads it: when standard error is the stream
# systemd names in $JOURNAL_STREAM, every line starts with a <N> priority
# prefix and carries no time stamp of corrald's own; a reload through the
# control socket is logged as a SIGHUP reload is; to="syslog" without a
# /dev/log socket says so on standard error instead of falling silent.
. "$(dirname "$0")/corrald_lib.sh"

cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <control socket="$WORK/ctl.sock"/>
  <inputs><udp listen="127.0.0.1:0"/></inputs>
</corrald>
XML
: > "$WORK/journal.log"
stream=$(stat -c '%d:%i' "$WORK/journal.log")
JOURNAL_STREAM=$stream "$CORRALD" -F -f "$WORK/corrald.conf" > "$WORK/out" 2>> "$WORK/journal.log" &
pid=$!
track "$pid"
wait_until grep -q "started" "$WORK/journal.log" || fail "corrald did not start"
"$CORRAL" ctl -s "$WORK/ctl.sock" reload > "$WORK/reload.out" 2>&1 || fail "ctl reload failed"
wait_until grep -q "reload: requested by the control socket" "$WORK/journal.log" ||
    fail "a reload through the control socket left no trace in the log"
kill -HUP "$pid"
wait_until grep -q "reload: requested by SIGHUP" "$WORK/journal.log" ||
    fail "a SIGHUP reload left no trace in the log"
stop_corrald "$pid"
# every line: <N>text, N a syslog priority, and no stamp of our own
grep -v '^<[0-7]>' "$WORK/journal.log" && fail "lines without a <N> prefix under the journal"
grep -q '^<6>started' "$WORK/journal.log" || fail "no '<6>started' line"
grep -E '^<[0-7]>[0-9]{4}-[0-9]{2}-' "$WORK/journal.log" && fail "a time stamp under the journal"
# what the control socket reload logged is what SIGHUP logged
sed -n 's/^<[0-7]>reload: //p' "$WORK/journal.log" | grep -v '^requested by' > "$WORK/reload-lines"
half=$(($(wc -l < "$WORK/reload-lines") / 2))
[ "$half" -gt 0 ] || fail "reloads logged nothing beyond the request"
head -n "$half" "$WORK/reload-lines" > "$WORK/by-ctl"
tail -n "$half" "$WORK/reload-lines" > "$WORK/by-hup"
cmp -s "$WORK/by-ctl" "$WORK/by-hup" || fail "reloads logged differently: $(diff "$WORK/by-ctl" "$WORK/by-hup")"

# on a terminal-like stream (no JOURNAL_STREAM): the stamped format
"$CORRALD" -t -f "$WORK/corrald.conf" > /dev/null 2> "$WORK/plain.log" || fail "corrald -t failed"

# to="syslog" without /dev/log: said on stderr
if [ ! -S /dev/log ]; then
    sed 's|<corrald>|<corrald><log to="syslog"/>|' "$WORK/corrald.conf" > "$WORK/syslog.conf"
    "$CORRALD" -F -f "$WORK/syslog.conf" > "$WORK/out2" 2> "$WORK/syslog.log" &
    pid=$!
    track "$pid"
    wait_until grep -q "started" "$WORK/syslog.log" ||
        fail "with to=syslog and no /dev/log, corrald's log fell silent"
    grep -q "/dev/log is not a socket: logging to stderr" "$WORK/syslog.log" ||
        fail "no word that /dev/log is missing"
    stop_corrald "$pid"
fi
echo "ok: journal prefixes, reloads logged alike, syslog fallback said"
