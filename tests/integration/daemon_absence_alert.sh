#!/bin/sh
# Absence reports are alerts: with the shipped configuration's routing
# (<route tag="..."> of etc/corrald.conf, its executors replaced by an exec
# hook), a host that goes quiet and comes back delivers both reports to the
# executor, the second the clear of the first (tag corral.clear, the same
# corral.alert_id), each with the alert labels: HOST, corral.alert_id,
# corral.severity, corral.event, corral.summary (at most 120 bytes); the
# alert store lists the alert resolved.
. "$(dirname "$0")/corrald_lib.sh"
need python3

route=$(grep -o '<route tag="[^"]*"' "$top_srcdir/etc/corrald.conf" | head -n 1)
[ -n "$route" ] || fail "no <route tag=...> in etc/corrald.conf"
cat > "$WORK/hook.sh" <<SH
#!/bin/sh
cat >> "$WORK/delivered.json"
SH
chmod +x "$WORK/hook.sh"
CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence host="web1" after="1s"/>
  <executors spool="$WORK/spool">
    <exec name="hook" program="$WORK/hook.sh" stdin="json"/>
  </executors>
  <routes>$route to="hook"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
port=$(input_port udp)
now() { date '+%b %e %H:%M:%S'; }
send_udp "$port" "$(now) web1 app: one"
wait_grep "$WORK/delivered.json" '"absence.state":"down"' || fail "the absence alert was not delivered"
send_udp "$port" "$(now) web1 app: two"
wait_grep "$WORK/delivered.json" '"absence.state":"up"' || fail "the absence clear was not delivered"
python3 - "$WORK/delivered.json" <<'PY' || fail "labels: $(cat "$WORK/delivered.json")"
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(msgs) == 2, msgs
down, up = msgs
for m, event in ((down, "absence.down"), (up, "absence.up")):
    assert m["HOST"] == "web1", m
    assert m["corral.alert_id"] == "corral.absence/web1", m
    assert m["corral.severity"] == "warning", m
    assert m["corral.event"] == event, m
    assert 0 < len(m["corral.summary"].encode()) <= 120 and "\n" not in m["corral.summary"], m
    assert "corral.alert" in m["TAGS"], m
assert "corral.clear" in up["TAGS"] and "corral.clear" not in down["TAGS"], msgs
PY
"$CORRAL" alerts -s "$CONTROL" > "$WORK/alerts.out" 2>&1 || fail "corral alerts: $(cat "$WORK/alerts.out")"
grep 'corral.absence/web1' "$WORK/alerts.out" | grep -q resolved || fail "not resolved: $(cat "$WORK/alerts.out")"
corrald_alive
stop_corrald "$CORRALD_PID"
echo "ok: the absence alert and its clear reach the shipped route, with the alert labels"
