#!/bin/sh
# snmp_trapin: corrald's <snmp-trap> input with net-snmp's own senders.
#
#   snmptrap v1, v2c and v3 (authPriv SHA/AES, authNoPriv MD5), snmpinform
#   v2c and v3 (authPriv SHA/AES, authPriv MD5/DES): every notification
#   becomes one message with the text and name-value pairs of the SNMP
#   message format (corrald.conf(5)), names from the test MIBs
#   (tests/data/mibs), and every inform is answered (snmpinform exits 0).
#   A host map names one sender.  Then the hostile cases, each counted per
#   reason in /metrics with the daemon still receiving: a wrong community,
#   an unknown v3 user, a wrong auth password, malformed BER, a GET sent to
#   the trap port, and a flood from one address over its rate (other
#   sources still pass); a trap of 130 varbinds, cut at 128 and counted.
#   corrald -t refuses a password file it cannot read.
. "$(dirname "$0")/corrald_lib.sh"
need snmptrap snmpinform python3
# net-snmp's senders keep engine boots and ids in a persistent file: one of
# the test's own, not the machine's /var/lib/snmp that parallel tests share
SNMP_PERSISTENT_DIR=$WORK/snmp-persist
export SNMP_PERSISTENT_DIR

MIBS=$top_srcdir/tests/data/mibs
RULES=$HERE/inputs_rules.xml
OUT=$WORK/out.json
printf 'authpass123\n' > "$WORK/alice.auth"
printf 'privpass123\n' > "$WORK/alice.priv"
printf 'md5pass1234\n' > "$WORK/bob.auth"
printf 'despass1234\n' > "$WORK/bob.priv"
chmod 600 "$WORK"/*.auth "$WORK"/*.priv
printf '# address name\n10.9.9.9 ups-basement\n' > "$WORK/hosts.map"
SENDER_EID=0x8000000001020304
cat > "$WORK/corrald.conf" <<EOF
<corrald>
  <rules path="$RULES"/>
  <log level="debug"/>
  <stats listen="127.0.0.1:0"/>
  <inputs>
    <snmp-trap listen="udp:127.0.0.1:0" name="traps" mibs="$MIBS" community="public,ops"
               host-map="$WORK/hosts.map" engine-id="0x80001f88046373742d74726170" rate="100" burst="100">
      <user name="alice" auth="SHA" auth-password-file="$WORK/alice.auth"
            priv="AES" priv-password-file="$WORK/alice.priv" engine-id="$SENDER_EID"/>
      <user name="bob" auth="MD5" auth-password-file="$WORK/bob.auth"
            priv="DES" priv-password-file="$WORK/bob.priv" engine-id="$SENDER_EID"/>
    </snmp-trap>
  </inputs>
  <outputs>
    <file path="$OUT" format="json" select="all"/>
  </outputs>
</corrald>
EOF
start_corrald corrald "$WORK/corrald.conf"
PORT=$(input_port traps)
AT=127.0.0.1:$PORT
M="-M $MIBS -m ALL"
V3A="-v3 -u alice -a SHA -A authpass123 -x AES -X privpass123 -l authPriv"
V3B="-v3 -u bob -a MD5 -A md5pass1234 -x DES -X despass1234 -l authPriv"

# no password reached the engine's configuration: the keys are derived before it exists
grep -q authpass123 "$CORRALD_LOG" && fail "a password in the log"

snmptrap $M -v1 -c public "$AT" IF-MIB::ifMIB 10.1.2.3 2 0 1234 \
    ifIndex.3 i 3 ifDescr.3 s ge-0/0/1 || fail "snmptrap v1"
snmptrap $M -v2c -c ops "$AT" 4321 IF-MIB::linkDown ifIndex.3 i 3 ifAdminStatus.3 i 1 \
    ifOperStatus.3 i 2 ifDescr.3 s "ge 0/0/1" || fail "snmptrap v2c"
snmptrap $M $V3A -e $SENDER_EID "$AT" 55 CORRAL-TEST-MIB::ctEvent ctAddress.0 a 10.0.0.1 \
    ctCount.0 c 77 ctLevel.0 u 5 ctText.0 s 'say "hi" = \ok' ctBytes.0 x 00FF \
    ctWhat.0 o IF-MIB::linkUp ctSeverity.0 i 3 ctText.0 s '' .1.3.6.1.4.1.99999.7.7 i 1 ||
    fail "snmptrap v3 SHA/AES"
snmptrap $M -v1 -c public "$AT" CORRAL-TEST-MIB::corralTest 10.9.9.9 6 1 66 ctSeverity.0 i 2 ||
    fail "snmptrap v1 enterprise specific"
snmptrap $M -v3 -u bob -a MD5 -A md5pass1234 -l authNoPriv -e $SENDER_EID "$AT" 77 \
    SNMPv2-MIB::coldStart || fail "snmptrap v3 MD5 authNoPriv"
snmpinform $M -v2c -c public "$AT" 88 SNMPv2-MIB::warmStart sysName.0 s core-sw1 ||
    fail "snmpinform v2c: no answer"
snmpinform $M $V3A "$AT" 99 IF-MIB::linkUp ifIndex.7 i 7 ifOperStatus.7 i 1 ||
    fail "snmpinform v3 SHA/AES: no answer"
snmpinform $M $V3B "$AT" 100 IF-MIB::linkUp ifIndex.8 i 8 || fail "snmpinform v3 MD5/DES: no answer"
wait_lines "$OUT" 8 || fail "only $(check lines "$OUT") of 8 traps"
wait_metric corral_snmp_informs_answered_total input=traps -eq 3 || fail "informs not counted"

python3 - "$OUT" <<'PY' || fail "messages"
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
want = [
    ("10.1.2.3", "IF-MIB::linkDown ifIndex=3 ifDescr=ge-0/0/1",
     {"trap_oid": ".1.3.6.1.6.3.1.1.5.3", "version": "1", "type": "trap", "uptime": "1234",
      "enterprise": ".1.3.6.1.2.1.31", "generic": "2", "specific": "0", "var.ifDescr": "ge-0/0/1",
      "index.ifDescr": "3", "source": "127.0.0.1"}),
    ("127.0.0.1", 'IF-MIB::linkDown ifIndex=3 ifAdminStatus=up ifOperStatus=down ifDescr="ge 0/0/1"',
     {"trap": "IF-MIB::linkDown", "version": "2c", "uptime": "4321", "var.ifOperStatus": "down",
      "var.ifDescr": "ge 0/0/1", "index.ifOperStatus": "3"}),
    ("127.0.0.1", 'CORRAL-TEST-MIB::ctEvent ctAddress=10.0.0.1 ctCount=77 ctLevel=5 '
     'ctText="say \\"hi\\" = \\\\ok" ctBytes=0x00ff ctWhat=IF-MIB::linkUp ctSeverity=critical '
     'ctText#2="" .1.3.6.1.4.1.99999.7.7=1',
     {"trap_oid": ".1.3.6.1.4.1.99999.0.1", "version": "3", "uptime": "55",
      "var.ctText": 'say "hi" = \\ok', "var.ctText#2": "", "var.ctWhat": "IF-MIB::linkUp",
      "var..1.3.6.1.4.1.99999.7.7": "1", "index.ctAddress": "0"}),
    ("ups-basement", "CORRAL-TEST-MIB::ctEvent ctSeverity=major",
     {"trap_oid": ".1.3.6.1.4.1.99999.0.1", "enterprise": ".1.3.6.1.4.1.99999", "generic": "6",
      "specific": "1", "var.ctSeverity": "major"}),
    ("127.0.0.1", "SNMPv2-MIB::coldStart", {"version": "3", "uptime": "77"}),
    ("127.0.0.1", "SNMPv2-MIB::warmStart sysName=core-sw1", {"type": "inform", "version": "2c"}),
    ("127.0.0.1", "IF-MIB::linkUp ifIndex=7 ifOperStatus=up", {"type": "inform", "version": "3"}),
    ("127.0.0.1", "IF-MIB::linkUp ifIndex=8", {"type": "inform", "version": "3"}),
]
bad = 0
for m, (host, text, pairs) in zip(msgs, want):
    got = (m.get("HOST"), m.get("PROGRAM"), m.get("MESSAGE"))
    if got != (host, "snmptrap", text):
        print("want", (host, "snmptrap", text), "\ngot ", got); bad += 1
    for k, v in pairs.items():
        if m.get(".SDATA.snmp." + k) != v:
            print(text, k, "want", repr(v), "got", repr(m.get(".SDATA.snmp." + k))); bad += 1
sys.exit(1 if bad or len(msgs) != len(want) else 0)
PY

# ---- hostile
dropped() {
    metric corral_snmp_trap_dropped_total "input=traps\",reason=\"$1"
}
dropped_ge() {
    [ "$(dropped "$1")" -ge "$2" ]
}
snmptrap $M -v2c -c wrong "$AT" '' SNMPv2-MIB::coldStart
wait_until dropped_ge bad_community 1 || fail "wrong community not counted"
snmptrap $M -v3 -u mallory -a SHA -A whatever123 -l authNoPriv -e $SENDER_EID "$AT" '' SNMPv2-MIB::coldStart
wait_until dropped_ge unknown_user 1 || fail "unknown user not counted"
snmptrap $M -v3 -u alice -a SHA -A wrongpass123 -x AES -X privpass123 -l authPriv -e $SENDER_EID \
    "$AT" '' SNMPv2-MIB::coldStart
wait_until dropped_ge wrong_digest 1 || fail "wrong auth not counted"
# a GET to the trap port: no answer, counted
snmpget -v2c -c public -t 1 -r 0 "$AT" .1.3.6.1.2.1.1.5.0 >/dev/null 2>&1
wait_until dropped_ge not_notification 1 || fail "GET not counted"
# malformed BER from 127.0.0.2 (under its rate), then a flood from there: over its rate, counted
python3 - "$PORT" <<'PY' || fail "BER sender"
import os, socket, sys
port = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.2", 0))
bad = [b"\x30", b"\x30\x82\xff\xff\x02\x01\x01", b"\x30\x03\x02\x01", b"\x04\x00" * 100,
       b"\x30\x84\x7f\xff\xff\xff" + b"\x00" * 20, b"GET / HTTP/1.0\r\n\r\n"]
for b in bad:
    s.sendto(b, ("127.0.0.1", port))
for i in range(44):
    s.sendto(b"\x30" + os.urandom(1 + i * 7), ("127.0.0.1", port))
PY
wait_until dropped_ge bad_ber 50 || fail "malformed BER not counted: $(dropped bad_ber)"
python3 - "$PORT" <<'PY' || fail "flood sender"
import socket, sys
port = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.2", 0))
for i in range(3000):
    s.sendto(b"\x30\x03\x02\x01\x01", ("127.0.0.1", port))
PY
wait_until dropped_ge rate_limit 1 || fail "flood not rate limited"
# other sources still pass, and informs are still answered
snmpinform $M -v2c -c public "$AT" 1 SNMPv2-MIB::warmStart sysName.0 s after-flood ||
    fail "no answer after the flood"
wait_grep "$OUT" 'after-flood' || fail "no message after the flood"
# a trap of 130 varbinds: the first 128 written, the message counted as cut
args=""
i=1
while [ $i -le 130 ]; do
    args="$args .1.3.6.1.4.1.99999.9.$i i $i"
    i=$((i + 1))
done
# shellcheck disable=SC2086
snmptrap -v2c -c public "$AT" 1 .1.3.6.1.4.1.99999.0.9 $args || fail "snmptrap of 130 varbinds"
wait_metric corral_input_truncated_total input=traps -eq 1 || fail "130 varbinds not counted as cut"
wait_grep "$OUT" '99999\.9\.128=128"' || fail "the 128th varbind missing"
grep -q '99999\.9\.129=' "$OUT" && fail "more than 128 varbinds written"
corrald_alive
stop_corrald

# a password file that cannot be read: corrald -t refuses, with the user's file:line
sed "s|$WORK/alice.auth|$WORK/missing.auth|" "$WORK/corrald.conf" > "$WORK/bad.conf"
"$CORRALD" -t -f "$WORK/bad.conf" > "$WORK/t.out" 2>&1 && fail "corrald -t took a missing password file"
grep -q "bad.conf:[0-9]*: user alice: cannot read $WORK/missing.auth" "$WORK/t.out" ||
    fail "no file:line for the missing password file: $(cat "$WORK/t.out")"
