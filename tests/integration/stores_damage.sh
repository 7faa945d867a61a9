#!/bin/sh
# The silences file and the alert store keep every intact record when one
# is damaged or the file is cut short, against the real corrald:
#  1. 20 silences; corrald stopped; one byte in the middle of the 10th
#     flipped: the restarted corrald has the other 19, counts the damage
#     (corral_silences_load_errors_total 1) and keeps the file as read in
#     STATE.silences.corrupt.  Then the file cut in the middle of its last
#     silence: the 19 before it come back.
#  2. 30 alerts in the store; corrald stopped; one byte in the middle of
#     the 10th record flipped: the other 29 come back, the damage counted
#     (corral_alerts_load_errors_total 1).
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/rules"
cat > "$WORK/rules/alerts.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-06">
  <ruleset name="app" id="stores-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="stores.alert" class="violation">
      <patterns><pattern>alert @NUMBER:n@</pattern></patterns>
      <actions><action route="runner"><message>
        <values>
          <value name="MESSAGE">alert number ${n}@1</value>
          <value name="corral.alert_id">a-${n}@1</value>
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
  <state file="$WORK/state" interval="1h"/>
  <control socket="$WORK/control.sock"/>
  <inputs><tcp listen="127.0.0.1:0" name="in"/></inputs>
  <executors><exec name="runner" program="$WORK/receiver.sh"/></executors>
</corrald>
XML
CONTROL=$WORK/control.sock
S="-s $CONTROL"
# ids: the sorted ids of the silences corrald lists
ids() {
    "$CORRAL" silence $S list --json |
        python3 -c 'import json, sys; print("\n".join(sorted(s["id"] for s in json.load(sys.stdin))))'
}

# ---- 1. the silences file
start_corrald first "$WORK/corrald.conf"
i=1
: > "$WORK/ids"
while [ $i -le 20 ]; do
    "$CORRAL" silence $S add "HOST=web$i" --duration 2h --comment "silence number $i" >> "$WORK/ids" ||
        fail "silence $i refused"
    i=$((i + 1))
done
stop_corrald
# flip a byte in the middle of the 10th silence's record (or of the file, if it is
# not one silence a line): prints the id of the silence damaged
LOST=$(python3 - "$WORK/state.silences" "$(sed -n 10p "$WORK/ids")" <<'PY'
import sys
path, lost = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
at = data.find(lost.encode())
if data.count(b"\n") >= 20:
    start = data.rfind(b"\n", 0, at) + 1
    end = data.find(b"\n", at)
else:
    start, end = 0, len(data)
pos = (start + end) // 2
data[pos] ^= 0x01
open(path, "wb").write(data)
print(lost)
PY
) || fail "could not damage the silences file"
start_corrald second "$WORK/corrald.conf"
grep -v "^$LOST\$" "$WORK/ids" | sort > "$WORK/want"
ids > "$WORK/got"
cmp -s "$WORK/want" "$WORK/got" ||
    fail "$(wc -l < "$WORK/got") silences after one damaged byte, want the 19 others: $(diff "$WORK/want" "$WORK/got")"
[ "$(metric corral_silences_load_errors_total)" -eq 1 ] ||
    fail "$(metric corral_silences_load_errors_total) silence load errors counted, want 1"
[ -f "$WORK/state.silences.corrupt" ] || fail "the damaged silences file was not kept"
grep -q "state.silences:.*skipped" "$WORK/second.log" || fail "the damaged silence not logged"
# one more silence (the file is written again, 20 lines), then cut in its middle
"$CORRAL" silence $S add HOST=web21 --duration 2h > "$WORK/last" || fail "silence 21 refused"
stop_corrald
python3 - "$WORK/state.silences" "$(cat "$WORK/last")" <<'PY' || fail "could not cut the silences file"
import sys
path, last = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
at = data.find(last.encode())
assert at > 0, "no silence " + last
open(path, "wb").write(data[:at + 10])
PY
start_corrald third "$WORK/corrald.conf"
ids > "$WORK/got"
cmp -s "$WORK/want" "$WORK/got" ||
    fail "$(wc -l < "$WORK/got") silences after a cut, want the 19 before it: $(diff "$WORK/want" "$WORK/got")"
stop_corrald
echo "ok: a damaged silence costs that silence only; a cut file keeps what is before the cut"

# ---- 2. the alert store
start_corrald fourth "$WORK/corrald.conf"
i=1
: > "$WORK/lines"
while [ $i -le 30 ]; do
    echo "<13>Dec  6 10:00:00 web1 app: alert $i" >> "$WORK/lines"
    i=$((i + 1))
done
send_tcp_file "$(input_port in)" "$WORK/lines"
wait_metric corral_alerts_recorded_total -eq 30 || fail "$(metric corral_alerts_recorded_total) alerts recorded"
stop_corrald
# flip a byte in the middle of record 10's payload (format: agent/alerting/alerts.c); print its id
LOST=$(python3 - "$WORK/state.alerts" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
assert data[:10] == b"CORRALAL2\n", data[:10]
pos = 10
for n in range(10):
    length = struct.unpack("<I", data[pos:pos + 4])[0]
    start = pos + 8
    pos = start + length
idl = struct.unpack("<I", data[start:start + 4])[0]
data[start + length // 2] ^= 0x01
open(sys.argv[1], "wb").write(data)
print(data[start + 4:start + 4 + idl].decode())
PY
) || fail "could not damage the alert store"
start_corrald fifth "$WORK/corrald.conf"
"$CORRAL" alerts $S --json > "$WORK/alerts.json"
python3 - "$WORK/alerts.json" "$LOST" <<'PY' || fail "alerts after one damaged byte: $(cat "$WORK/alerts.json")"
import json, sys
got = {a["id"] for a in json.load(open(sys.argv[1]))}
want = {"a-%d" % i for i in range(1, 31)} - {sys.argv[2]}
assert got == want, (len(got), sorted(want - got), sorted(got - want))
PY
[ "$(metric corral_alerts_load_errors_total)" -eq 1 ] ||
    fail "$(metric corral_alerts_load_errors_total) alert store load errors counted, want 1"
grep -q "damaged bytes at offset" "$WORK/fifth.log" || fail "the damage was not logged"
stop_corrald
echo "ok: a damaged alert record costs that alert only ($LOST)"
