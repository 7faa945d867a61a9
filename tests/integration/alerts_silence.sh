#!/bin/sh
# Silences and the active alert store, with real executors (an exec script
# and an SMTP server): an SSH brute force from web1 and one from web2 while
# a silence mutes HOST=web1: only web2's alert is delivered, and `corral
# alerts` shows web1's as silenced; once the silence is expired, web1's
# alert, still firing, is sent, and web1's next brute force is delivered.  Silences and alerts survive a restart and a
# kill -9.  Bad requests (a malformed matcher, an unknown id, an end before
# the start) exit 2 and change nothing.  A reload naming another state
# file takes the silences along.
. "$(dirname "$0")/corrald_lib.sh"
need python3
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || { echo "skipped: python3-aiosmtpd missing"; exit 77; }

mkdir -p "$WORK/mail"
/usr/bin/python3 "$HERE/smtp_server.py" --dir "$WORK/mail" > "$WORK/smtp.port" 2> "$WORK/smtp.log" &
track $!
wait_grep "$WORK/smtp.port" PORT || fail "the SMTP server did not start"
sport=$(sed -n 's/^PORT //p' "$WORK/smtp.port")
receiver_script
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/rules/sshd.xml"/>
  <state file="$WORK/state" interval="1h"/>
  <control socket="$WORK/control.sock"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/receiver.sh"/>
    <smtp name="mail" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="ops@example.com"/>
  </executors>
  <routes><route class="violation" to="runner,mail"/></routes>
</corrald>
XML
CONTROL=$WORK/control.sock
S="-s $CONTROL"

# brute HOST ADDRESS: five failed logins, the fifth raises the alert
brute() {
    python3 - "$(input_port udp)" "$1" "$2" <<'PY'
import socket, sys
port, host, addr = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(5):
    line = "<38>Dec  4 10:00:0%d %s sshd[42]: Failed password for root from %s port %d ssh2" % (
        i, host, addr, 40000 + i)
    s.sendto(line.encode(), ("127.0.0.1", port))
PY
}
# mailed TEXT: some mail the SMTP server received has TEXT
mailed() {
    python3 - "$WORK/mail" "$1" <<'PY'
import base64, glob, json, sys
sys.exit(not any(sys.argv[2] in base64.b64decode(json.load(open(f))["data"]).decode("utf-8", "replace")
                 for f in glob.glob(sys.argv[1] + "/msg-*.json")))
PY
}

start_corrald first "$WORK/corrald.conf"

# ---- bad requests: exit 2, nothing changed
"$CORRAL" silence $S add 'HOST=~"web["' --duration 1h 2> "$WORK/err" && fail "a bad regex was accepted"
[ $? -eq 2 ] || fail "a bad regex: not exit 2"
grep -q "bad regular expression" "$WORK/err" || fail "bad regex: no clear message: $(cat "$WORK/err")"
"$CORRAL" silence $S add 'HOST' --duration 1h 2> "$WORK/err"; [ $? -eq 2 ] || fail "no operator: not exit 2"
grep -q "operator" "$WORK/err" || fail "no operator: unclear message: $(cat "$WORK/err")"
"$CORRAL" silence $S add HOST=web1 --start 2030-01-02T00:00:00Z --end 2030-01-01T00:00:00Z \
    2> "$WORK/err"; [ $? -eq 2 ] || fail "end before start: not exit 2"
grep -q "not after the start" "$WORK/err" || fail "end before start: $(cat "$WORK/err")"
"$CORRAL" silence $S expire 00000000-0000-4000-8000-000000000000 2> "$WORK/err"
[ $? -eq 2 ] || fail "unknown id: not exit 2"
grep -q "no silence" "$WORK/err" || fail "unknown id: $(cat "$WORK/err")"
[ "$("$CORRAL" silence $S list --expired --json)" = "[]" ] || fail "a refused request left a silence"

# ---- a silence for web1: only web2's brute force is delivered
id=$("$CORRAL" silence $S add HOST=web1 --duration 1h --comment "maintenance" --author tester) ||
    fail "silence add failed"
echo "$id" | grep -Eq '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' ||
    fail "silence add printed '$id', not an id"
"$CORRAL" silence $S list | grep "$id" | grep -q 'HOST="web1"' || fail "silence not listed"
brute web1 192.0.2.1
brute web2 192.0.2.2
wait_metric corral_alerts_silenced_total -ge 1 || fail "web1's alert not counted as silenced"
wait_grep "$WORK/delivered" web2 || fail "web2's alert not delivered by the script"
wait_until mailed "against web2" || fail "web2's alert not mailed"
# web1's alert came first: had it gone to the executors, it would be there by now
grep -q web1 "$WORK/delivered" && fail "web1's silenced alert was delivered"
mailed "against web1" && fail "web1's silenced alert was mailed"
"$CORRAL" alerts $S > "$WORK/alerts.txt" || fail "corral alerts failed"
grep 'web1' "$WORK/alerts.txt" | grep -q "silenced.*$id" || fail "web1 not shown silenced: $(cat "$WORK/alerts.txt")"
"$CORRAL" alerts $S --json HOST=web2 > "$WORK/alerts.json" || fail "corral alerts --json failed"
python3 - "$WORK/alerts.json" <<'PY' || fail "web2's alert not firing and delivered"
import json, sys
a = json.load(open(sys.argv[1]))
assert len(a) == 1, a
a = a[0]
assert a["state"] == "firing" and a["labels"]["HOST"] == "web2", a
assert a["labels"][".classifier.rule_id"].startswith("corral.sshd."), a
assert a["executors"]["runner"]["state"] == "delivered", a
PY
# executor_state EXECUTOR STATE MATCHER: the alert MATCHER selects has STATE for EXECUTOR
executor_state() {
    "$CORRAL" alerts $S -o extended "$3" | grep -q "[ ,]$1:$2"
}
wait_until executor_state mail delivered HOST=web2 ||
    fail "the mail executor's delivery not recorded: $("$CORRAL" alerts $S --json HOST=web2)"
"$CORRAL" silence $S query HOST=web1 | grep -q "$id" || fail "silence query HOST=web1 misses it"
"$CORRAL" silence $S query HOST=web2 | grep -q "$id" && fail "silence query HOST=web2 lists it"

# ---- expired: web1's alert, still firing, is sent now; its next brute force is delivered
"$CORRAL" silence $S expire "$id" || fail "silence expire failed"
"$CORRAL" silence $S list | grep -q "$id" && fail "an expired silence is listed as active"
"$CORRAL" silence $S list --expired | grep "$id" | grep -q expired || fail "expired silence not kept"
wait_grep "$WORK/delivered" 'web1/.*192.0.2.1' || fail "web1's alert not sent when its silence ended"
brute web1 192.0.2.3
wait_grep "$WORK/delivered" 'web1/.*192.0.2.3' || fail "web1's alert not delivered after the expiry"
wait_until mailed "from 192.0.2.3" || fail "web1's alert not mailed after the expiry"

# ---- a restart keeps silences and alerts
id2=$("$CORRAL" silence $S add 'HOST=~"db[0-9]+"' --duration 2h) || fail "second silence"
stop_corrald
start_corrald second "$WORK/corrald.conf"
"$CORRAL" silence $S list | grep -q "$id2" || fail "active silence lost in a restart"
"$CORRAL" silence $S list --expired | grep -q "$id" || fail "expired silence lost in a restart"
"$CORRAL" alerts $S --json > "$WORK/alerts.json"
python3 - "$WORK/alerts.json" <<'PY' || fail "alerts lost in a restart: $(cat "$WORK/alerts.json")"
import json, sys
a = {(x["labels"]["HOST"], x["labels"].get("usracct.device")): x for x in json.load(open(sys.argv[1]))}
assert a[("web1", "192.0.2.1")]["state"] == "firing", a  # its silence ended
assert a[("web2", "192.0.2.2")]["state"] == "firing", a
assert a[("web1", "192.0.2.3")]["state"] == "firing", a
PY

# ---- and a kill -9: the silence added just before, and the alerts of the last save
brute web2 192.0.2.4
wait_grep "$WORK/delivered" 'web2/.*192.0.2.4' || fail "web2's second alert not delivered"
"$CORRAL" ctl $S save | grep -q OK || fail "save failed"
id3=$("$CORRAL" silence $S add HOST=web9 --duration 1h) || fail "third silence"
kill_corrald
start_corrald third "$WORK/corrald.conf"
"$CORRAL" silence $S list | grep -q "$id3" || fail "a silence added just before kill -9 was lost"
"$CORRAL" alerts $S | grep -q "192.0.2.4" || fail "alerts lost in a kill -9"
[ "$("$CORRAL" alerts $S --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" -eq 4 ] ||
    fail "not 4 alerts after kill -9: $("$CORRAL" alerts $S)"

# ---- a reload that names another state file: the silences go with it
sed "s|$WORK/state\"|$WORK/state2\"|" "$WORK/corrald.conf" > "$WORK/corrald2.conf"
grep -q "state2" "$WORK/corrald2.conf" || fail "test bug: no state2 in the copy"
cp "$WORK/corrald2.conf" "$WORK/corrald.conf"
"$CORRAL" ctl $S reload | grep -q OK || fail "reload to another state file failed"
grep -q "$id3" "$WORK/state2.silences" 2>/dev/null ||
    fail "the silences did not follow the state file: $(cat "$WORK/state2.silences" 2>&1)"
stop_corrald
start_corrald fourth "$WORK/corrald.conf"
"$CORRAL" silence $S list | grep -q "$id3" || fail "a silence lost after the state file moved"
"$CORRAL" alerts $S | grep -q "192.0.2.4" || fail "alerts lost after the state file moved"
stop_corrald
echo "ok: silenced alerts recorded and not delivered; silences and alerts survive restarts"
