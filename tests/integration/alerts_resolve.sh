#!/bin/sh
# Alert resolution end to end, with real receivers: an exec script, the SMTP
# test server, snmptrapd (and snmptt when installed).  Routes with
# send-resolved="yes" tell their executors when an alert resolves, once:
#   - by its resolve timeout (resolve-timeout="2s"): the script sees
#     CORRAL_STATUS=resolved, the mail is titled [RESOLVED], the NMS gets a
#     corralClear with the alert's id after its corralAlert;
#   - by a clear that no route sends anywhere itself (the executors that
#     were told it fired are told it resolved);
#   - by hand (`corral alerts resolve ID`), for an alert that never times
#     out (corral.resolve_after="never");
#   - after a kill -9 and a restart between firing and clear (the store
#     remembers who was told).
# An executor whose route does not say send-resolved only ever sees firing.
. "$(dirname "$0")/corrald_lib.sh"
need python3 snmptrapd
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || { echo "skipped: python3-aiosmtpd missing"; exit 77; }

mkdir -p "$WORK/mail" "$WORK/persist" "$WORK/nomibs" "$WORK/spool"
/usr/bin/python3 "$HERE/smtp_server.py" --dir "$WORK/mail" > "$WORK/smtp.port" 2> "$WORK/smtp.log" &
track $!
wait_grep "$WORK/smtp.port" PORT || fail "the SMTP server did not start"
sport=$(sed -n 's/^PORT //p' "$WORK/smtp.port")

# snmptrapd, handing what it gets to snmptt when snmptt is installed
tt_conf=$(snmptt_handler)
cat > "$WORK/snmptrapd.conf" <<EOF
disableAuthorization no
authCommunity log,execute public
format2 BEGIN %P\n%v\nEND\n
$tt_conf
EOF
printf 'public\n' > "$WORK/community"
SNMP_PERSISTENT_DIR=$WORK/persist MIBDIRS=$WORK/nomibs MIBS= \
    python3 "$HERE/held_port.py" udp "$WORK/trapd.port" "$WORK/trapd.go" \
    snmptrapd -f -Lo -C -c "$WORK/snmptrapd.conf" -n -On -Oq -Ot "udp:127.0.0.1:{port}" \
    > "$WORK/trapd.log" 2>&1 &
track $!
wait_until test -s "$WORK/trapd.port" || fail "no port for snmptrapd"
touch "$WORK/trapd.go"
wait_grep "$WORK/trapd.log" "NET-SNMP version" || fail "snmptrapd did not start"
trap_port=$(cat "$WORK/trapd.port")

# the scripts: one line per call, "STATUS ALERT_ID"
for s in runner quiet; do
    cat > "$WORK/$s.sh" <<SH
#!/bin/sh
echo "\$CORRAL_STATUS \$CORRAL_ALERT_ID" >> "$WORK/$s.calls"
SH
    chmod +x "$WORK/$s.sh"
done

CONTROL=$WORK/control.sock
S="-s $CONTROL"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/lifecycle_rules.xml"/>
  <state file="$WORK/state" interval="1s"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <alerts resolve-timeout="2s"/>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/runner.sh"/>
    <exec name="quiet" program="$WORK/quiet.sh"/>
    <smtp name="mail" url="smtp://127.0.0.1:$sport" tls="none" from="corral@example.com"
          to="ops@example.com"/>
    <snmp name="nms" target="udp:127.0.0.1:$trap_port" community-file="$WORK/community"/>
  </executors>
  <routes>
    <route tag="corral.alert" to="runner,mail,nms" send-resolved="yes" continue="yes"/>
    <route tag="corral.alert" to="quiet"/>
  </routes>
</corrald>
XML

send() {
    send_udp "$(input_port udp)" "<38>$(date '+%b %e %H:%M:%S') $1 lc: $2"
}
# calls SCRIPT LINE: how many times SCRIPT saw LINE
calls() {
    grep -c -x "$2" "$WORK/$1.calls" 2>/dev/null || true
}
# settled: nothing queued or being delivered
settled() {
    for e in runner quiet mail nms; do
        [ "$(metric corral_executor_queued executor=$e)" -eq 0 ] &&
            [ "$(metric corral_executor_inflight executor=$e)" -eq 0 ] || return 1
    done
}
# mailed SUBJECT-PREFIX TEXT: a mail whose subject starts with the prefix has TEXT in it
mailed() {
    python3 - "$WORK/mail" "$1" "$2" <<'PY'
import base64, email, glob, json, sys
for f in glob.glob(sys.argv[1] + "/msg-*.json"):
    m = email.message_from_bytes(base64.b64decode(json.load(open(f))["data"]))
    body = m.get_payload(decode=True).decode("utf-8", "replace")
    if m["Subject"].startswith(sys.argv[2]) and sys.argv[3] in m["Subject"] + body:
        sys.exit(0)
sys.exit(1)
PY
}

start_corrald first "$WORK/corrald.conf"

# ---- the resolve timeout: firing, then resolved once, to the send-resolved executors only
send db1 "failure on sda"
wait_grep "$WORK/runner.calls" "^firing lc/db1/sda$" || fail "the alert did not fire"
wait_metric corral_alerts_resolved_total by=timeout -ge 1 || fail "the alert did not time out"
wait_grep "$WORK/runner.calls" "^resolved lc/db1/sda$" || fail "the script was not told it resolved"
wait_until mailed "[RESOLVED]" "sda failed on db1" ||
    fail "no [RESOLVED] mail: $(ls "$WORK/mail")"
wait_until settled || fail "notifications still on their way"
[ "$(calls runner 'resolved lc/db1/sda')" -eq 1 ] || fail "resolved told more than once: $(cat "$WORK/runner.calls")"
[ "$(calls quiet 'firing lc/db1/sda')" -eq 1 ] || fail "quiet did not get the alert once"
# exactly one resolved mail
nresolved=$(python3 - "$WORK/mail" <<'PY'
import base64, email, glob, json, sys
n = 0
for f in glob.glob(sys.argv[1] + "/msg-*.json"):
    m = email.message_from_bytes(base64.b64decode(json.load(open(f))["data"]))
    n += m["Subject"].startswith("[RESOLVED]") and "sda failed on db1" in m.get_payload(decode=True).decode()
print(n)
PY
)
[ "$nresolved" -eq 1 ] || fail "$nresolved resolved mails, not one"
grep -q resolved "$WORK/quiet.calls" && fail "an executor without send-resolved was told: $(cat "$WORK/quiet.calls")"
"$CORRAL" alerts $S show lc/db1/sda > "$WORK/show.txt" || fail "corral alerts show failed"
grep -q "^state: *resolved" "$WORK/show.txt" || fail "not shown resolved: $(cat "$WORK/show.txt")"
grep -q "(timeout)" "$WORK/show.txt" || fail "the resolution's cause not shown: $(cat "$WORK/show.txt")"
grep -Eq "runner +resolved +delivered" "$WORK/show.txt" ||
    fail "the history lacks the resolved delivery: $(cat "$WORK/show.txt")"

# the NMS: a corralAlert, then a corralClear, with the same alert id
wait_until python3 - "$WORK/trapd.log" <<'PY' || fail "the NMS did not get the alert and then its clear: $(cat "$WORK/trapd.log")"
import sys
text = open(sys.argv[1]).read()
B = ".1.3.6.1.4.1.32473.1"
seen = []
for chunk in text.split("BEGIN ")[1:]:
    body = chunk.partition("\n")[2].split("\nEND\n")[0]
    vbs = dict(vb.partition(" ")[::2] for vb in body.split("\t"))
    kind = vbs.get(".1.3.6.1.6.3.1.1.4.1.0", "")
    ids = [v.strip('"') for o, v in vbs.items() if v.strip('"') == "lc/db1/sda"]
    if ids:
        seen.append(kind.rsplit(".", 1)[-1])
assert seen == ["1", "2"], seen  # one corralAlert (.0.1), then one corralClear (.0.2)
PY
if [ -n "$tt_conf" ]; then
    wait_grep "$WORK/snmptt.log" "corral clear" || fail "snmptt logged no clear: $(cat "$WORK/snmptt.log" 2>/dev/null)"
fi

# ---- a clear that no route sends: the executors told it fired are told it resolved
send db2 "failure on sdc"
wait_grep "$WORK/runner.calls" "^firing lc/db2/sdc$" || fail "db2's alert did not fire"
send db2 "recovered sdc"
wait_grep "$WORK/runner.calls" "^resolved lc/db2/sdc$" || fail "db2's clear was not announced"
wait_metric corral_alerts_resolved_total by=clear -ge 1 || fail "the clear not counted"

# ---- by hand: an alert that never times out
send db3 "stuck sdd"
wait_grep "$WORK/runner.calls" "^firing lc/db3/sdd$" || fail "db3's alert did not fire"
"$CORRAL" alerts $S resolve lc/no/such 2> "$WORK/err"; [ $? -eq 2 ] || fail "resolving an unknown id: not exit 2"
grep -q "no such alert" "$WORK/err" || fail "unknown id: unclear message: $(cat "$WORK/err")"
"$CORRAL" alerts $S show lc/db3/sdd | grep -q "^state: *firing" || fail "db3's alert not firing"
"$CORRAL" alerts $S show lc/db3/sdd | grep -q "resolves at" && fail "a never-resolving alert shows a resolve time"
"$CORRAL" alerts $S resolve lc/db3/sdd || fail "corral alerts resolve failed"
wait_grep "$WORK/runner.calls" "^resolved lc/db3/sdd$" || fail "the resolution by hand was not announced"
"$CORRAL" alerts $S show lc/db3/sdd | grep -q "(hand)" || fail "not shown resolved by hand"
"$CORRAL" alerts $S resolve lc/db3/sdd 2> /dev/null && fail "resolving twice succeeded"

# ---- kill -9 between firing and clear: still told once after the restart
send db4 "stuck sde"
wait_grep "$WORK/runner.calls" "^firing lc/db4/sde$" || fail "db4's alert did not fire"
wait_until settled || fail "db4's notifications still on their way"
saves=$(metric corral_state_saves_total)
wait_metric corral_state_saves_total -gt "$saves" || fail "no save after db4's alert"
kill_corrald
start_corrald second "$WORK/corrald.conf"
"$CORRAL" alerts $S show lc/db4/sde | grep -q "^state: *firing" || fail "db4's alert lost by the restart"
send db4 "recovered sde"
wait_grep "$WORK/runner.calls" "^resolved lc/db4/sde$" || fail "db4's clear was not announced after the restart"
wait_until settled || fail "notifications still on their way after the restart"
[ "$(calls runner 'resolved lc/db4/sde')" -eq 1 ] || fail "db4 resolved told more than once"
[ "$(calls runner 'resolved lc/db1/sda')" -eq 1 ] || fail "db1 told again after the restart"
corrald_alive
stop_corrald
echo "ok"
