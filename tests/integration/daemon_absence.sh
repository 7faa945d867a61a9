#!/bin/sh
# Absence detection: a host that has been sending and stops for the
# configured time produces a generated message, whose HOST is the quiet host
# (what inhibition keys on); sending again produces another.  A host that
# keeps sending is reported only for a real gap (the test does not rely on
# its sender never stalling for 2 s).  The old spelling <silence> still
# works, with a warning naming file:line and <absence>, from corrald -t and
# at start.
. "$(dirname "$0")/corrald_lib.sh"
need python3

cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
  <absence after="2s"/>
  <silence host="db1" program="postgres" after="1s"/>
</corrald>
XML
deprecated="$WORK/corrald.conf:6: warning: <silence> is deprecated: write <absence>"
"$CORRALD" -t -f "$WORK/corrald.conf" --schema "$SCHEMA" > "$WORK/check.out" 2> "$WORK/check.err" ||
    fail "corrald -t refused <silence>: $(cat "$WORK/check.err")"
grep -qF "$deprecated" "$WORK/check.err" || fail "corrald -t gave no deprecation warning: $(cat "$WORK/check.err")"
[ "$(grep -c warning "$WORK/check.err")" = 1 ] || fail "warnings from -t: $(cat "$WORK/check.err")"
start_corrald corrald "$WORK/corrald.conf"
grep -qF "$deprecated" "$CORRALD_LOG" || fail "no deprecation warning logged at start"
port=$(input_port udp)
now() { date '+%b %e %H:%M:%S'; }
send_udp "$port" "$(now) web1 app: seq 1" "$(now) db1 postgres[3]: checkpoint"
# web2 keeps sending, every half second, until web1 and db1 are reported
# silent (2 s and 1 s), or for $WAIT_TIMEOUT s
both_silent() {
    grep -q 'web1 has been silent for' "$WORK/out.json" 2>/dev/null &&
        grep -q 'db1 postgres has been silent for' "$WORK/out.json"
}
i=1
until both_silent || [ $i -gt $((WAIT_TIMEOUT * 2)) ]; do
    sleep 0.5
    send_udp "$port" "$(now) web2 app: seq $i"
    i=$((i + 1))
done
grep -q 'web1 has been silent for' "$WORK/out.json" || fail "web1 absence not reported"
grep -q 'db1 postgres has been silent for' "$WORK/out.json" || fail "db1 postgres absence not reported"
# web2 kept sending: a report for it is right only if a gap between two of
# its datagrams really lasted 2 s (a stalled sender on a loaded machine);
# what is checked is that no report claims less quiet than it had
python3 - "$WORK/out.json" <<'PY' || fail "web2 reported silent while sending"
import json, sys, datetime
def t(s):
    return datetime.datetime.fromisoformat(s).timestamp()
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m.get("HOST") == "web2" and m.get("absence.state") == "down":
        quiet = t(m["ISODATE"]) - t(m["absence.last_seen"])
        assert quiet >= 2 - 1, ("a report without 2 s of quiet", m)  # stamps are whole seconds
PY
send_udp "$port" "$(now) web1 app: seq 2"
wait_grep "$WORK/out.json" 'web1 is sending again' || fail "web1 return not reported"
python3 - "$WORK/out.json" <<'PY' || fail "absence messages lack their values"
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
down = [m for m in msgs if m.get("absence.state") == "down" and m.get("HOST") == "web1"]
up = [m for m in msgs if m.get("absence.state") == "up" and m.get("HOST") == "web1"]
assert down and up, msgs
assert "corral.absence" in down[0]["TAGS"] and "corral.alert" in down[0]["TAGS"]
assert "corral.clear" in up[0]["TAGS"]
assert down[0][".classifier.rule_id"] == "corral.absence.down", down[0]
assert down[0][".classifier.class"] == "absence", down[0]
assert up[0][".classifier.rule_id"] == "corral.absence.up", up[0]
# the HOST label is the host that went quiet, for either spelling
db = [m for m in msgs if m.get("absence.state") == "down" and "db1 postgres" in m["MESSAGE"]]
assert db and db[0]["HOST"] == "db1" and db[0]["PROGRAM"] == "postgres", db
PY
stop_corrald "$CORRALD_PID"
echo "ok: absence and return reported, <silence> still read with a warning"
