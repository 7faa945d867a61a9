#!/bin/sh
# The value-name registry against structured data with made-up names:
# 7,000 RFC 5424 messages over TCP with 10 distinct parameter names each
# (70,000 names, more than the 65,536 the registry holds) register at most
# 16,384 names; the parameters beyond are counted
# (corral_value_names_refused_total) and kept in .corral.sdata_unregistered,
# not dropped; and a reload with a rule that adds a value name still works,
# the new value set on the next match.
. "$(dirname "$0")/corrald_lib.sh"
need python3

CONTROL=$WORK/control.sock
# rules [EXTRA]: the test rules, with EXTRA rules in the generic ruleset
rules() {
    cat > "$WORK/rules.xml.tmp" <<XML
<?xml version="1.0"?>
<patterndb version="5" pub_date="2026-12-06">
  <ruleset name="generic" id="test-generic">
    <rules>
      <rule provider="test" id="test.seq" class="system">
        <patterns><pattern>seq @NUMBER:seq@</pattern></patterns>
      </rule>
      ${1:-}
    </rules>
  </ruleset>
</patterndb>
XML
    mv "$WORK/rules.xml.tmp" "$WORK/rules.xml"
}
rules
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json"/></outputs>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
python3 - "$WORK/flood.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for j in range(7000):
        sd = " ".join('p%d_%d="v%d"' % (i, j, j) for i in range(10))
        f.write('<14>1 2026-12-06T01:00:00Z web1 app 1 - [x@1 %s] seq %d\n' % (sd, j))
PY
send_tcp_file "$(input_port tcp)" "$WORK/flood.txt"
wait_metric corral_messages_parsed_total -ge 7000 || fail "parsed: $(metric corral_messages_parsed_total)"
[ "$(metric corral_value_names_input)" -le 16384 ] || fail "input names: $(metric corral_value_names_input)"
[ "$(metric corral_value_names_refused_total)" -ge 53616 ] ||
    fail "refused: $(metric corral_value_names_refused_total)"
wait_grep "$WORK/out.json" '"seq":"6999"' || fail "the last message not written"
python3 - "$WORK/out.json" <<'PY' || fail "structured data lost"
import json, sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m.get("seq") == "6999":
        kept = m.get(".corral.sdata_unregistered", "")
        for i in range(10):
            assert ('x@1.p%d_6999="v6999"' % i) in kept, m
        break
else:
    raise SystemExit("no seq 6999")
PY

# a reload adding a value name works
rules '<rule provider="test" id="test.fresh" class="system">
        <patterns><pattern>fresh @NUMBER:n@</pattern></patterns>
        <values><value name="test.fresh_name">yes</value></values>
      </rule>'
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload.out" 2>&1 || fail "reload failed: $(cat "$WORK/reload.out")"
printf '<14>Dec  6 01:00:00 web1 app: fresh 1\n' > "$WORK/fresh.txt"
send_tcp_file "$(input_port tcp)" "$WORK/fresh.txt"
wait_grep "$WORK/out.json" '"test.fresh_name":"yes"' || fail "the reloaded rule's value not set"
corrald_alive
stop_corrald "$CORRALD_PID"
echo "ok: input registered at most 16384 value names, kept the rest's data, a reload added a name"
