#!/bin/sh
# The alert store and the silences are bounded: a flood of distinct alerts
# keeps at most max-alerts of them; a firing alert is never pushed out, so
# the first max-alerts stay and the rest are sent but not recorded
# (counted, logged); and a silence past max-silences is refused (exit 2,
# nothing added).
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/rules"
cat > "$WORK/rules/flood.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-04">
  <ruleset name="app" id="limits-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="limits.alert" class="violation">
      <patterns><pattern>alert @NUMBER:n@</pattern></patterns>
      <actions><action><message>
        <values>
          <value name="MESSAGE">alert number ${n}@1</value>
          <value name="corral.alert_id">a-${n}@1</value>
        </values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$WORK/control.sock"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <alerts max-alerts="100" max-silences="5"/>
  <executors><exec name="runner" program="/bin/true" rate="1/3600"/></executors>
  <routes><route class="violation" to="runner"/></routes>
</corrald>
XML
CONTROL=$WORK/control.sock
S="-s $CONTROL"
start_corrald corrald "$WORK/corrald.conf"
python3 - "$(input_port udp)" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
for i in range(1, 301):
    s.sendto(b"<13>Dec  4 10:00:00 web1 app: alert %d" % i, ("127.0.0.1", int(sys.argv[1])))
PY
# datagrams may be lost on a loaded machine: wait for what was received
wait_metric corral_messages_received_total -ge 250 || fail "the alerts did not arrive"
received=$(metric corral_messages_received_total)
all_counted() {
    [ "$(($(metric corral_alerts_recorded_total) + $(metric corral_alerts_unrecorded_total)))" -eq "$received" ]
}
wait_until all_counted ||
    fail "not every alert recorded or counted"
[ "$(metric corral_alerts state=firing)" -eq 100 ] ||
    fail "the store holds $(metric corral_alerts state=firing) alerts, not max-alerts (100)"
[ "$(metric corral_alerts_unrecorded_total)" -eq $((received - 100)) ] ||
    fail "$(metric corral_alerts_unrecorded_total) unrecorded of $received"
[ "$(metric corral_alerts_forgotten_total)" -eq 0 ] || fail "a firing alert was forgotten"
wait_log "alerts: 100 alerts firing (max-alerts): new alerts are sent but not recorded" ||
    fail "the refusal was not logged"
# the first are kept, with what the executor did: the first delivered, the next over
# its rate (1 an hour), dropped
[ "$("$CORRAL" alerts $S -o extended | grep -c " runner:delivered")" -eq 1 ] ||
    fail "the delivered alert was pushed out: $("$CORRAL" alerts $S | head -n 3)"
[ "$("$CORRAL" alerts $S -o extended | grep -c " runner:dropped")" -eq 99 ] ||
    fail "the executor states are wrong: $("$CORRAL" alerts $S | head -n 3)"
[ "$("$CORRAL" alerts $S | wc -l)" -eq 101 ] || fail "corral alerts does not list 100 alerts"

for i in 1 2 3 4 5; do
    "$CORRAL" silence $S add "HOST=h$i" --duration 1h > /dev/null || fail "silence $i refused"
done
"$CORRAL" silence $S add HOST=h6 --duration 1h 2> "$WORK/err"
[ $? -eq 2 ] || fail "a sixth silence: not exit 2"
grep -q "max-silences" "$WORK/err" || fail "a sixth silence: $(cat "$WORK/err")"
[ "$("$CORRAL" silence $S list -q | wc -l)" -eq 5 ] || fail "not 5 silences"
stop_corrald
echo "ok: max-alerts and max-silences hold"
