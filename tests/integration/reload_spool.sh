#!/bin/sh
# A reload that fails after opening a changed executor must not cost the
# running one its spool: opening the new one rewrites the executor's spool
# file, and the running queue went on appending to the file it replaced,
# which neither a start nor the next reload's successor reads.  Here: a
# reload changing the script's argument and adding an executor whose secret
# file is missing fails; the script is down while an alert is queued; a
# reload changing the argument again must deliver that alert (and a restart
# finds nothing left to deliver twice).
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/state" "$WORK/spool"
cat > "$WORK/script.sh" <<SH
#!/bin/sh
[ -e "$WORK/down" ] && exit 75
echo "\$1 \$CORRAL_ALERT_ID" >> "$WORK/delivered"
SH
chmod 755 "$WORK/script.sh"
: > "$WORK/delivered"
CONTROL=$WORK/control.sock
# conf ARG [MORE]: the script with argument ARG, and executors MORE
conf() {
    cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <state file="$WORK/state/state"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence after="1s"/>
  <executors spool="$WORK/spool">
    <exec name="script" program="$WORK/script.sh" backoff="200ms" max-backoff="200ms"
          attempts="1000"><arg>$1</arg></exec>
${2:-}
  </executors>
  <routes><route tag="corral.alert" to="script"/></routes>
</corrald>
XML
}
now() { date '+%b %e %H:%M:%S'; }
alert() { send_udp "$(input_port udp)" "$(now) $1 app: hello"; }

conf one
start_corrald corrald "$WORK/corrald.conf"
conf two "    <snmp name=\"nms\" target=\"udp:127.0.0.1:9\" community-file=\"$WORK/missing\"/>"
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/failed.out" 2>&1 && fail "the reload did not fail: $(cat "$WORK/failed.out")"
grep -q "executor nms: cannot read community-file" "$WORK/failed.out" || fail "reload: $(cat "$WORK/failed.out")"
touch "$WORK/down"
alert h1
wait_log 'executor script: alert corral.absence/h1 attempt 2 failed' || fail "the script was not tried while down"
conf three
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/changed.out" 2>&1 || fail "reload: $(cat "$WORK/changed.out")"
rm -f "$WORK/down"
wait_grep "$WORK/delivered" '^three corral.absence/h1$' || fail "the queued alert was lost in the reload"
stop_corrald
start_corrald corrald "$WORK/corrald.conf"
alert h2
wait_grep "$WORK/delivered" '^three corral.absence/h2$' || fail "no delivery after the restart"
[ "$(grep -c 'h1$' "$WORK/delivered")" = 1 ] || fail "h1 delivered again after the restart: $(cat "$WORK/delivered")"
stop_corrald
echo "$TEST: OK"
