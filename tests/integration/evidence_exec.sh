#!/bin/sh
# The log lines an alert carries (corral.evidence), end to end to an exec
# executor: eight failed logins on web1 raise an alert; the program,
# given the alert as JSON on its stdin (stdin="json"), finds corral.evidence
# as an array of lines, bounded by <alerts evidence-lines="3">: the first
# two and the last one around "... 5 more lines ...".  The same alert
# without the tag corral.alert carries no evidence.  corrald -t refuses a
# bad evidence-lines or evidence-bytes with the file and line.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ -x "$CORRALD" ] || { echo "skipped: $CORRALD not built"; exit 77; }

# ---- bad settings: file:line ----
for bad in 'evidence-lines="many"' 'evidence-lines="1001"' 'evidence-bytes="10"'; do
    cat > "$WORK/bad.conf" <<XML
<corrald>
  <rules path="$HERE/evidence_rules.xml"/>
  <alerts $bad/>
</corrald>
XML
    "$CORRALD" -t -f "$WORK/bad.conf" > "$WORK/bad.out" 2>&1 && fail "corrald -t took <alerts $bad/>"
    grep -q "bad.conf:3: .*evidence-" "$WORK/bad.out" || fail "no file:line for <alerts $bad/>: $(cat "$WORK/bad.out")"
done
echo "ok: bad evidence settings refused with file:line"

cat > "$WORK/hook.sh" <<SH
#!/bin/sh
cat > "$WORK/in.\$CORRAL_EXECUTOR.tmp" && mv "$WORK/in.\$CORRAL_EXECUTOR.tmp" "$WORK/in.\$CORRAL_EXECUTOR.json"
SH
chmod +x "$WORK/hook.sh"
CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/evidence_rules.xml"/>
  <control socket="$CONTROL"/>
  <alerts evidence-lines="3"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <exec name="hook" program="$WORK/hook.sh" stdin="json"/>
    <exec name="quiet" program="$WORK/hook.sh" stdin="json"/>
  </executors>
  <routes>
    <route tag="corral.alert" to="hook"/>
    <route tag="test.quiet" to="quiet"/>
  </routes>
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
wait_until test -f "$WORK/in.hook.json" || fail "the program never got the alert"
wait_until test -f "$WORK/in.quiet.json" || fail "the program never got the untagged message"

python3 - "$WORK/in.hook.json" "$WORK/in.quiet.json" <<'PY' || fail "the JSON lacks the evidence: $(cat "$WORK/in.hook.json")"
import json, re, sys
raw = open(sys.argv[1]).read()
assert raw.endswith("}\n") and raw.count("\n") == 1, raw
alert = json.loads(raw)
assert alert["MESSAGE"] == "8 failed logins on web1", alert
ev = alert["corral.evidence"]
assert isinstance(ev, list) and len(ev) == 4, ev
line = r"\d{4}-\d\d-\d\dT10:00:0%d[+-]\d\d:\d\d web1 app\[77\]: login failed for user%d from 192\.0\.2\.%d"
for got, i in zip(ev[:2] + ev[3:], (0, 1, 7)):
    assert re.fullmatch(line % (i, i, i), got), (got, i)
assert ev[2] == "... 5 more lines ...", ev
quiet = json.load(open(sys.argv[2]))
assert quiet["MESSAGE"] == "quiet web1" and "corral.evidence" not in quiet, quiet
PY
stop_corrald "$CORRALD_PID"
echo "ok: the exec program reads the alert's log lines as a JSON array"
