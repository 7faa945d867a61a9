#!/bin/sh
# Operations: corrald -t and corral check-config report file:line errors;
# the control socket answers stats, contexts, save and reload; the metrics
# endpoint serves Prometheus text; SIGUSR1 dumps the open contexts.
. "$(dirname "$0")/corrald_lib.sh"
need python3 curl

cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/tests/integration/session_rules.xml"/>
  <state file="$WORK/state" interval="1h"/>
  <control socket="$WORK/control.sock"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><udp listen="127.0.0.1:0" name="udp-in"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="all"/></outputs>
</corrald>
XML
"$CORRALD" -t -f "$WORK/corrald.conf" --schema "$SCHEMA" > "$WORK/t.out" 2>&1 || fail "-t rejected a good configuration: $(cat "$WORK/t.out")"
CORRAL_SCHEMA=$SCHEMA "$CORRAL" check-config "$WORK/corrald.conf" > /dev/null || fail "check-config rejected a good configuration"

# configuration errors carry file:line
printf '<corrald>\n  <rules path="/x"/>\n  <inputs>\n    <udp listen="nope"/>\n  </inputs>\n</corrald>\n' > "$WORK/bad.conf"
if "$CORRALD" -t -f "$WORK/bad.conf" --schema "$SCHEMA" > "$WORK/bad.out" 2>&1; then fail "-t accepted a bad configuration"; fi
grep -q "bad.conf:4" "$WORK/bad.out" || fail "-t error without file:line: $(cat "$WORK/bad.out")"
printf '<corrald>\n  <rules path="/x"/>\n  <bogus/>\n</corrald>\n' > "$WORK/bad2.conf"
if CORRAL_SCHEMA=$SCHEMA "$CORRAL" check-config "$WORK/bad2.conf" > "$WORK/bad2.out" 2>&1; then fail "check-config accepted an unknown element"; fi
grep -q "bad2.conf:3" "$WORK/bad2.out" || fail "check-config error without file:line"
# broken rules: -t names the rule file and line
mkdir -p "$WORK/rules" && printf '<patterndb version="5">\n<ruleset name="x" id="x"><rules>\n<rule id="r"><patterns><pattern>@ESTRING:x@</pattern></patterns></rule>\n</rules></ruleset></patterndb>\n' > "$WORK/rules/r.xml"
printf '<corrald><rules path="%s"/></corrald>\n' "$WORK/rules" > "$WORK/bad3.conf"
if "$CORRALD" -t -f "$WORK/bad3.conf" --schema "$SCHEMA" > "$WORK/bad3.out" 2>&1; then fail "-t accepted broken rules"; fi
grep -q "r.xml:3" "$WORK/bad3.out" || fail "-t rule error without file:line"

start_corrald corrald "$WORK/corrald.conf"
port=$(input_port udp-in)
mport=$(stats_port)
now=$(date '+%b %e %H:%M:%S')
send_udp "$port" "$now web1 sshd[7]: Accepted password for alice from 10.0.0.1 port 1 ssh2" "$now web1 app: seq 1" "junk"
wait_grep "$WORK/out.json" 'junk' || fail "messages did not arrive"

"$CORRAL" ctl -s "$WORK/control.sock" stats > "$WORK/stats" || fail "ctl stats failed"
grep -q '^corral_messages_received_total 3$' "$WORK/stats" || fail "received counter wrong: $(grep received "$WORK/stats")"
grep -q '^corral_messages_unknown_total 1$' "$WORK/stats" || fail "unknown counter wrong"
grep -q '^corral_contexts_open 1$' "$WORK/stats" || fail "open contexts wrong"
grep -q 'corral_input_messages_total{input="udp-in"} 3' "$WORK/stats" || fail "per-input counter wrong"
"$CORRAL" stats -s "$WORK/control.sock" | grep -q "messages_received_total *3" || fail "corral stats table wrong"
curl -fsS "http://127.0.0.1:$mport/metrics" > "$WORK/metrics" || fail "metrics endpoint down"
grep -q '^# TYPE corral_messages_received_total counter' "$WORK/metrics" || fail "metrics not Prometheus text"
"$CORRAL" stats -u "127.0.0.1:$mport" | grep -q "contexts_open *1" || fail "corral stats -u wrong"
"$CORRAL" ctl -s "$WORK/control.sock" contexts | python3 -c 'import json,sys; c=json.load(sys.stdin); assert c[0]["id"]=="ssh-session" and c[0]["pid"]=="7", c' || fail "ctl contexts wrong"
"$CORRAL" ctl -s "$WORK/control.sock" save | grep -q OK || fail "ctl save failed"
[ -s "$WORK/state" ] || fail "no state after ctl save"
"$CORRAL" ctl -s "$WORK/control.sock" reload > "$WORK/reload" || fail "ctl reload failed"
grep -q "contexts: 1 kept" "$WORK/reload" || fail "ctl reload report wrong: $(cat "$WORK/reload")"
if "$CORRAL" ctl -s "$WORK/control.sock" frobnicate > /dev/null; then fail "unknown command accepted"; fi
kill -USR1 "$CORRALD_PID"
wait_log "open contexts written to" || fail "SIGUSR1 dump not logged"
dump=$(sed -n 's/.*open contexts written to //p' "$WORK/corrald.log" | tail -n 1)
python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))) == 1' "$dump" || fail "SIGUSR1 dump wrong"
rm -f "$dump"
stop_corrald "$CORRALD_PID"
[ ! -e "$WORK/control.sock" ] || fail "control socket left behind"
echo "ok: -t, check-config, ctl, stats, metrics, SIGUSR1"
