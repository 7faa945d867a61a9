#!/bin/sh
# The log lines an alert carries (corral.evidence), end to end to a real
# snmptrapd: eight failed logins on web1 raise an alert; the executor with
# evidence="yes" sends corralAlertEvidence.0 (CORRAL-MIB, ...32473.1.10.0)
# right after corralAlertSeverity.0, holding the first three and the last
# two lines around "... 3 more lines ...", separated by line feeds; the
# executor without it sends no such varbind, and the evidence is in neither
# as a corralAlertValue.  Exit 77 without snmptrapd.
. "$(dirname "$0")/corrald_lib.sh"
need python3 snmptrapd
[ -x "$CORRALD" ] || { echo "skipped: $CORRALD not built"; exit 77; }

start_snmptrapd
printf 'public\n' > "$WORK/community"
CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/evidence_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <snmp name="nms" target="udp:127.0.0.1:$TRAPD_PORT" community-file="$WORK/community"
          evidence="yes"/>
    <snmp name="plain" target="udp:127.0.0.1:$TRAPD_PORT" community-file="$WORK/community"/>
  </executors>
  <routes><route tag="corral.alert" to="nms,plain"/></routes>
</corrald>
XML
mkdir -p "$WORK/spool"
start_corrald corrald "$WORK/corrald.conf"

python3 - "$(input_port udp)" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(8):
    line = "<38>Dec  6 10:00:0%d web1 app[77]: login failed for user%d from 192.0.2.%d" % (i, i, i)
    s.sendto(line.encode(), ("127.0.0.1", int(sys.argv[1])))
PY
wait_grep "$WORK/trapd.log" "^END$" 2 || fail "snmptrapd did not receive both traps"

python3 - "$WORK/trapd.log" <<'PY' || fail "the traps are not what they should be: $(cat "$WORK/trapd.log")"
import re, sys
text = open(sys.argv[1]).read()
B = ".1.3.6.1.4.1.32473"
traps = []
for chunk in text.split("BEGIN ")[1:]:
    body = chunk.partition("\n")[2].split("\nEND\n")[0]
    # varbinds are separated by tabs; a value holding line feeds spans lines
    traps.append([vb.partition(" ") for vb in body.split("\t")])
assert len(traps) == 2, traps
with_ev = [t for t in traps if any(o == B + ".1.10.0" for o, _, _ in t)]
without = [t for t in traps if t not in with_ev]
assert len(with_ev) == 1 and len(without) == 1, traps
oids = [o for o, _, _ in with_ev[0]]
assert oids.index(B + ".1.10.0") == oids.index(B + ".1.8.0") + 1, oids
ev = dict((o, v) for o, _, v in with_ev[0])[B + ".1.10.0"].strip('"').split("\n")
line = r"\d{4}-\d\d-\d\dT10:00:0%d[+-]\d\d:\d\d web1 app\[77\]: login failed for user%d from 192\.0\.2\.%d"
assert len(ev) == 6, ev
for got, i in zip(ev[:3] + ev[4:], (0, 1, 2, 6, 7)):
    assert re.fullmatch(line % (i, i, i), got), (got, i)
assert ev[3] == "... 3 more lines ...", ev
for t in traps:
    assert not any("corral.evidence" in v for _, _, v in t), t
PY
stop_corrald "$CORRALD_PID"
echo "ok: snmptrapd received corralAlertEvidence with the alert's log lines"
