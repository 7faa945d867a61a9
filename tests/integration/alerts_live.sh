#!/bin/sh
# Silences and inhibition act on what already fires, with an exec script as
# the receiver:
#   - a silence added while an alert fires marks it silenced at once (the
#     answer to `corral silence add` comes after); expiring it makes it
#     firing again, and it is sent then;
#   - an inhibition source that fires (a host stopped logging) marks that
#     host's alerts already firing as inhibited, and its resolution releases
#     them (sent then);
#   - the documented absence inhibition acts on the lines a host queued
#     while it could not send: they arrive after its absence has resolved,
#     stamped within it, and their alerts are inhibited; a line of after
#     its return raises an alert that fires;
#   - spoofed alerts beyond max-alerts never push a firing alert out of the
#     store: they are sent, counted as unrecorded, and the real one stays.
. "$(dirname "$0")/corrald_lib.sh"
need python3

cat > "$WORK/runner.sh" <<SH
#!/bin/sh
echo "\$CORRAL_STATUS \$CORRAL_ALERT_ID" >> "$WORK/runner.calls"
SH
chmod +x "$WORK/runner.sh"
CONTROL=$WORK/control.sock
S="-s $CONTROL"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/lifecycle_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <alerts max-alerts="20" resolve-timeout="1h"/>
  <absence host="web9" after="1s"/>
  <inhibit source="rule_id=corral.absence.down" target="class!=absence" equal="HOST"/>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/runner.sh"/>
  </executors>
  <routes><route tag="corral.alert" to="runner"/></routes>
</corrald>
XML
mkdir -p "$WORK/spool"

# send HOST TEXT [EPOCH]: an RFC 5424 line from HOST, stamped EPOCH (default now), over TCP
send() {
    python3 - "$(input_port tcp)" "$1" "$2" "${3:-}" <<'PY'
import datetime, socket, sys, time
port, host, text, t = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
t = float(t) if t else time.time()
stamp = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
line = "<38>1 %s %s lc - - - %s\n" % (stamp, host, text)
with socket.create_connection(("127.0.0.1", port)) as c:
    c.sendall(line.encode())
PY
}
calls() {
    grep -c -x "$1" "$WORK/runner.calls" 2>/dev/null || true
}
# called LINE N: the script saw LINE N times
called() {
    [ "$(calls "$1")" -eq "$2" ]
}
state() {
    "$CORRAL" alerts $S show "$1" | sed -n 's/^state: *//p'
}
# in_state ID STATE
in_state() {
    [ "$(state "$1")" = "$2" ]
}
spoofs_sent() {
    [ "$(grep -c 'lc/spoof' "$WORK/runner.calls")" -eq 30 ]
}

start_corrald corrald "$WORK/corrald.conf"

# ---- a silence added while web1's alert fires
send web1 "failure on sda"
wait_grep "$WORK/runner.calls" "^firing lc/web1/sda$" || fail "web1's alert did not fire"
id=$("$CORRAL" silence $S add HOST=web1 --duration 1h) || fail "silence add failed"
[ "$(state lc/web1/sda)" = silenced ] || fail "not silenced when silence add returned: $(state lc/web1/sda)"
"$CORRAL" alerts $S | grep lc/web1/sda | grep -q "$id" || fail "corral alerts does not name the silence"
"$CORRAL" silence $S expire "$id" || fail "silence expire failed"
[ "$(state lc/web1/sda)" = firing ] || fail "not firing when silence expire returned: $(state lc/web1/sda)"
# still firing when its silence ended: it is sent
wait_until called 'firing lc/web1/sda' 2 || fail "not sent again when its silence ended"
wait_metric corral_alerts_unmuted_total -ge 1 || fail "the unmuted alert not counted"

# ---- the absence of web9 inhibits its alert already firing, and releases it
send web9 "failure on sdb"
wait_grep "$WORK/runner.calls" "^firing lc/web9/sdb$" || fail "web9's alert did not fire"
wait_metric corral_alerts state=inhibited -ge 1 || fail "web9's firing alert not inhibited by its absence"
[ "$(state lc/web9/sdb)" = inhibited ] || fail "web9's alert: $(state lc/web9/sdb)"
# after= becomes an hour (a reload keeps what the detector knows), so that web9
# is not reported absent again before the test is done
sed -i 's/after="1s"/after="1h"/' "$WORK/corrald.conf"
"$CORRAL" ctl $S reload > "$WORK/reload.out" || fail "reload failed: $(cat "$WORK/reload.out")"
down_ms=$("$CORRAL" alerts $S --json rule_id=corral.absence.down | python3 -c '
import datetime, json, sys
a = json.load(sys.stdin)[0]
print(int(datetime.datetime.fromisoformat(a["firstSeen"].replace("Z", "+00:00")).timestamp() * 1000))')
# a line stamped while web9 was away, arriving now: it resolves the absence first
wait_until python3 -c "import time, sys; sys.exit(time.time() * 1000 < $down_ms + 1000)"
queued=$(python3 -c "import time; print(time.time() - 0.1)")
send web9 "failure on sdc" "$queued"
wait_metric corral_alerts_resolved_total by=clear -ge 1 || fail "web9's absence did not resolve"
wait_until in_state lc/web9/sdc inhibited ||
    fail "the queued line's alert was not inhibited: $("$CORRAL" alerts $S show lc/web9/sdc)"
# the release of the alert that was firing: sent again
wait_until called 'firing lc/web9/sdb' 2 || fail "web9's alert not sent when released"
[ "$(state lc/web9/sdb)" = firing ] || fail "web9's alert not firing after the absence"
# a line of after its return fires
wait_until python3 -c "import time, sys; sys.exit(time.time() < $queued + 2)"
send web9 "failure on sdd"
wait_grep "$WORK/runner.calls" "^firing lc/web9/sdd$" || fail "a line of after the return did not fire"
grep -q "lc/web9/sdc" "$WORK/runner.calls" && fail "the inhibited queued alert was sent"

# ---- spoofed alerts never push a firing one out
i=0
while [ $i -lt 30 ]; do
    send "spoof$i" "failure on x"
    i=$((i + 1))
done
wait_until spoofs_sent || fail "spoofed alerts not all sent"
wait_metric corral_alerts_unrecorded_total -ge 1 || fail "the alerts beyond max-alerts not counted"
[ "$(state lc/web1/sda)" = firing ] || fail "web1's firing alert was pushed out of the store"
[ "$(state lc/web9/sdd)" = firing ] || fail "web9's firing alert was pushed out of the store"
corrald_alive
stop_corrald
echo "ok"
