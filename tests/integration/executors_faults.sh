#!/bin/sh
# Alerts are never lost: with the receiver down they wait in the spool and
# are retried; corrald killed with -9 meanwhile delivers them after its
# restart; once the receiver is back every alert arrives exactly once.
# Checked with a real script (exec executor) and a real SMTP server that is
# started only after corrald has been trying for a while.
. "$(dirname "$0")/corrald_lib.sh"
need python3
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || { echo "skipped: python3-aiosmtpd missing"; exit 77; }

mkdir -p "$WORK/rules" "$WORK/mail"
# the SMTP server's port, held (connections refused: the server is down)
# until $WORK/smtp.go exists, then handed to smtp_server.py
/usr/bin/python3 "$HERE/held_port.py" tcp "$WORK/smtp.port" "$WORK/smtp.go" \
    /usr/bin/python3 "$HERE/smtp_server.py" --dir "$WORK/mail" > "$WORK/smtp.out" 2> "$WORK/smtp.log" &
track $!
wait_until test -s "$WORK/smtp.port" || fail "no port for the SMTP server"
sport=$(cat "$WORK/smtp.port")
cat > "$WORK/rules/alerts.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-03">
  <ruleset name="app" id="faults-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="faults.alert" class="violation">
      <patterns><pattern>alert @NUMBER:n@</pattern></patterns>
      <actions><action route="runner,mail"><message>
        <values>
          <value name="MESSAGE">alert number ${n}@1</value>
          <value name="corral.alert_id">a-${n}@1</value>
          <value name="corral.severity">major</value>
        </values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
receiver_script
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <state file="$WORK/state" interval="1s"/>
  <control socket="$WORK/control.sock"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/receiver.sh" backoff="200ms" max-backoff="1s" attempts="1000"/>
    <smtp name="mail" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="ops@example.com" backoff="200ms" max-backoff="1s" attempts="1000" timeout="5s"/>
  </executors>
</corrald>
XML


CONTROL=$WORK/control.sock
touch "$WORK/down"
start_corrald first "$WORK/corrald.conf"
python3 - "$(input_port udp)" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(1, 21):
    s.sendto(b"<13>Dec  3 10:00:00 web1 app: alert %d" % i, ("127.0.0.1", int(sys.argv[1])))
PY
retrying() { "$CORRAL" ctl -s "$WORK/control.sock" stats | grep -q 'corral_executor_retries_total{executor="mail"} [1-9]'; }
wait_until retrying || fail "no retries while the receivers are down"
"$CORRAL" ctl -s "$WORK/control.sock" stats | grep -q 'corral_executor_queued{executor="runner"} 20' ||
    fail "alerts not queued: $("$CORRAL" ctl -s "$WORK/control.sock" stats | grep executor_queued)"
[ ! -e "$WORK/delivered" ] || fail "delivered while the receiver was down"
kill_corrald

start_corrald second "$WORK/corrald.conf"
grep -q "20 alerts from the spool" "$WORK/second.log" || fail "spool not recovered after kill -9"
python3 - "$(input_port udp)" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(21, 31):
    s.sendto(b"<13>Dec  3 10:00:00 web1 app: alert %d" % i, ("127.0.0.1", int(sys.argv[1])))
PY
# the ten new alerts wait with the twenty recovered ones
wait_metric corral_executor_queued executor=runner -eq 30 ||
    fail "alerts not queued: $(metrics_text | grep executor_queued)"
# the receivers come back
rm -f "$WORK/down"
touch "$WORK/smtp.go"
all_in() {
    [ "$(sort -u "$WORK/delivered" 2>/dev/null | wc -l)" -eq 30 ] &&
    [ "$(ls "$WORK/mail" | grep -c '^msg-')" -eq 30 ]
}
wait_until all_in || fail "not everything delivered: $(sort -u "$WORK/delivered" | wc -l) by script, $(ls "$WORK/mail" | grep -c '^msg-') mails"
# nothing waiting, nothing being delivered: no duplicate can come any more
settled() {
    for e in runner mail; do
        [ "$(metric corral_executor_queued executor=$e)" -eq 0 ] &&
            [ "$(metric corral_executor_inflight executor=$e)" -eq 0 ] || return 1
    done
}
wait_until settled || fail "alerts still queued: $(metrics_text | grep 'executor_\(queued\|inflight\)')"
[ "$(wc -l < "$WORK/delivered")" -eq 30 ] || fail "duplicates: $(sort "$WORK/delivered" | uniq -d | tr '\n' ' ')"
[ "$(ls "$WORK/mail" | grep -c '^msg-')" -eq 30 ] || fail "duplicate mails"
i=1
while [ $i -le 30 ]; do grep -qx "a-$i" "$WORK/delivered" || fail "alert a-$i missing"; i=$((i + 1)); done
stop_corrald "$CORRALD_PID"
echo "ok: 30 alerts through a down receiver and a kill -9, each delivered once by script and by mail"
