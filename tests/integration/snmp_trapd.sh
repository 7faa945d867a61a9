#!/bin/sh
# corrald end to end with a real SNMP receiver: absence detection raises an
# alert and then its clear; routes send the alert as an SNMPv2c inform and
# the clear as an SNMPv3 authPriv trap to snmptrapd, both with the same
# corralAlertId.  The receiver is down when the alert is first tried: the
# inform times out, the queue retries it, and it arrives once snmptrapd is
# up.  If snmptt is installed, snmptrapd hands the notifications to it
# with contrib/mibs/corral.snmptt, and its log must show the right events.
# Only processes this test started are stopped.
. "$(dirname "$0")/corrald_lib.sh"
need python3 snmptrapd
[ -x "$CORRALD" ] || { echo "skipped: $CORRALD not built"; exit 77; }

engine=0x80007ed904636f7272616c2d65326500
printf 'public\n' > "$WORK/community"
printf 'authpass-e2e\n' > "$WORK/auth"
SNMP_E2E_PRIV=privpass-e2e
export SNMP_E2E_PRIV

mkdir -p "$WORK/persist" "$WORK/nomibs"
# snmptrapd's port, held (what arrives is dropped: the receiver is down)
# until $WORK/trapd.go exists, then handed to snmptrapd
SNMP_PERSISTENT_DIR=$WORK/persist MIBDIRS=$WORK/nomibs MIBS= \
    python3 "$HERE/held_port.py" udp "$WORK/trapd.port" "$WORK/trapd.go" \
    snmptrapd -f -Lo -C -c "$WORK/snmptrapd.conf" -n -On -Oq -Ot "udp:127.0.0.1:{port}" \
    > "$WORK/trapd.log" 2>&1 &
track $!
wait_until test -s "$WORK/trapd.port" || fail "no port for snmptrapd"
trap_port=$(cat "$WORK/trapd.port")

CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence host="web1" after="1s"/>
  <executors spool="$WORK/spool">
    <snmp name="nms" target="udp:127.0.0.1:$trap_port" inform="yes" timeout="15s" retries="0"
          community-file="$WORK/community" backoff="500ms" max-backoff="1s" attempts="50"
          alert-id="absence/\${HOST}" severity="major"/>
    <snmp name="nms-v3" target="127.0.0.1:$trap_port" version="3" user="corral"
          auth-protocol="SHA-256" auth-password-file="$WORK/auth" priv-password-env="SNMP_E2E_PRIV"
          engine-id="$engine" alert-id="absence/\${HOST}" severity="clear"/>
    <snmp name="nms-rules" target="udp:127.0.0.1:$trap_port" community-file="$WORK/community"
          severity="major"/>
  </executors>
  <routes>
    <route tag="corral.clear" to="nms-v3"/>
    <route tag="corral.alert" to="nms"/>
    <route tag="test.session" to="nms-rules"/>
  </routes>
</corrald>
XML
mkdir -p "$WORK/spool"

# snmptrapd, once the first try of the alert has failed
tt_conf=$(snmptt_handler)
cat > "$WORK/snmptrapd.conf" <<EOF
disableAuthorization no
authCommunity log,execute public
createUser -e $engine corral SHA-256 authpass-e2e AES privpass-e2e
authUser log,execute corral priv
format2 BEGIN %P\n%v\nEND\n
$tt_conf
EOF
start_corrald corrald "$WORK/corrald.conf"

now() { date '+%b %e %H:%M:%S'; }
send_udp "$(input_port udp)" "$(now) web1 app: hello"
# the absence report comes after 1 s; its inform times out after 15 s (snmptrapd
# answers an inform only once snmptt has run, which a loaded machine makes slow)
wait_log 'alert absence/web1 attempt 1 failed' || fail "the first inform did not fail while nobody listened"

touch "$WORK/trapd.go"
wait_grep "$WORK/trapd.log" "NET-SNMP version" || fail "snmptrapd did not start"

wait_grep "$WORK/trapd.log" "BEGIN INFORM" || fail "the alert never arrived"
send_udp "$(input_port udp)" "$(now) web1 app: back"
wait_grep "$WORK/trapd.log" "BEGIN TRAP2, SNMP v3, user corral" || fail "the clear never arrived"
# corrald has nothing left to send, and snmptrapd has written out what it got
settled() {
    for e in nms nms-v3; do
        [ "$(metric corral_executor_queued executor=$e)" -eq 0 ] &&
            [ "$(metric corral_executor_inflight executor=$e)" -eq 0 ] || return 1
    done
    [ "$(grep -c '^END$' "$WORK/trapd.log")" -ge "$(grep -c '^BEGIN ' "$WORK/trapd.log")" ]
}
wait_until settled || fail "notifications still on their way"

python3 - "$WORK/trapd.log" <<'PY' || fail "the notifications are not what corrald should send"
import sys
text = open(sys.argv[1]).read()
B = ".1.3.6.1.4.1.32473"
recs = []
for chunk in text.split("BEGIN ")[1:]:
    head, _, rest = chunk.partition("\n")
    body = rest.split("\nEND\n")[0]
    vbs = {}
    for vb in body.split("\t"):
        oid, _, val = vb.partition(" ")
        vbs[oid] = val.strip('"')
    recs.append((head, vbs))
alerts = [v for h, v in recs if h.startswith("INFORM, SNMP v2c, community public")]
clears = [v for h, v in recs if h.startswith("TRAP2, SNMP v3, user corral")]
# retried until acknowledged; a late acknowledgement (snmptrapd runs snmptt
# before it answers) may bring a second copy: at least once, all the same.
# web1 falls silent again a second after it came back: that alert, of a
# later absence (another last_seen), may be there too and is not this one.
assert len(alerts) >= 1 and len(clears) == 1, recs
first_seen = [v for v in alerts[0].values() if v.startswith("absence.last_seen=")]
alerts = [x for x in alerts if first_seen[0] in x.values()]
for x in alerts[1:]:
    assert {k: v for k, v in x.items() if k != ".1.3.6.1.2.1.1.3.0"} == \
        {k: v for k, v in alerts[0].items() if k != ".1.3.6.1.2.1.1.3.0"}, alerts
a, c = alerts[0], clears[0]
assert a[".1.3.6.1.6.3.1.1.4.1.0"] == B + ".0.1", a
assert c[".1.3.6.1.6.3.1.1.4.1.0"] == B + ".0.2", c
for v, sev in ((a, "5"), (c, "1")):
    assert v[B + ".1.2.0"] == "web1", v
    assert v[B + ".1.7.0"] == "absence/web1", v
    assert v[B + ".1.8.0"] == sev, v
    assert v[B + ".1.4.0"] == "absence", v
assert "web1 has been silent for" in a[B + ".1.1.0"], a
assert "web1 is sending again" in c[B + ".1.1.0"], c
assert a[B + ".1.5.0"] == "corral.absence.down" and c[B + ".1.5.0"] == "corral.absence.up"
assert "absence.state=down" in a.values() and "absence.state=up" in c.values(), (a, c)
PY
echo "ok: alert (v2c inform, after a retry) and clear (v3 trap) arrived with the same alert id"

# An alert a rule generates (the session's close, its message built from the
# context, as syslog-ng builds it: no rule id of its own) reaches the NMS
# with the rule id, class and program of the rule whose action made it.
send_udp "$(input_port udp)" "$(now) db2 sshd[42]: Accepted password for alice from 192.0.2.5 port 5000 ssh2" \
    "$(now) db2 sshd[42]: pam_unix(sshd:session): session closed for user alice"
wait_grep "$WORK/trapd.log" "session of alice from 192.0.2.5 closed" || fail "the rule's alert never arrived"
wait_until settled || fail "notifications still on their way"
python3 - "$WORK/trapd.log" <<'PY' || fail "the rule's alert lacks its rule's fields"
import sys
B = ".1.3.6.1.4.1.32473"
for chunk in open(sys.argv[1]).read().split("BEGIN ")[1:]:
    body = chunk.partition("\n")[2].split("\nEND\n")[0]
    v = dict((vb.partition(" ")[0], vb.partition(" ")[2].strip('"')) for vb in body.split("\t"))
    if v.get(B + ".1.1.0") == "session of alice from 192.0.2.5 closed":
        break
else:
    sys.exit("no trap for the session")
want = {".1.2.0": "db2", ".1.3.0": "sshd", ".1.4.0": "system", ".1.5.0": "test.ssh.close",
        ".1.6.0": "ssh-session", ".1.7.0": "test.ssh.close/db2/ssh-session", ".1.8.0": "5"}
for k, w in want.items():
    assert v[B + k] == w, (k, v[B + k], w, v)
PY
echo "ok: a rule's alert carries its rule id, class and program"

if [ -n "$tt_conf" ]; then
    wait_grep "$WORK/snmptt.log" "corral clear" || fail "snmptt logged no clear: $(cat "$WORK/snmptt.log" 2>/dev/null)"
    grep -q 'Major "Status Events" .* corral alert absence/web1 (major) on web1: web1 has been silent' \
        "$WORK/snmptt.log" || fail "snmptt: $(cat "$WORK/snmptt.log")"
    grep -q 'Normal "Status Events" .* corral clear absence/web1 on web1: web1 is sending again' \
        "$WORK/snmptt.log" || fail "snmptt: $(cat "$WORK/snmptt.log")"
    wait_grep "$WORK/snmptt.log" "corral alert test.ssh.close" || fail "snmptt logged no rule alert"
    grep -qF 'corral alert test.ssh.close/db2/ssh-session (major) on db2: session of alice from 192.0.2.5 closed [rule test.ssh.close, class system, program sshd, context ssh-session]' \
        "$WORK/snmptt.log" || fail "snmptt: the rule alert's fields: $(cat "$WORK/snmptt.log")"
    grep -E -q '\((critical|minor|warning|info)\)' "$WORK/snmptt.log" &&
        fail "snmptt matched the events of other severities: $(cat "$WORK/snmptt.log")"
    echo "ok: snmptt formats both with contrib/mibs/corral.snmptt"
else
    echo "note: snmptt not installed: its definitions were not exercised"
fi
stop_corrald "$CORRALD_PID"
