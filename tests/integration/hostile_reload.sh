#!/bin/sh
# Reloads that must not lose anything: a reload that moves the TCP input to
# a port another process holds fails, is counted, and the old input still
# receives; a truncated and a missing configuration are counted as failed
# reloads; changing an exec executor (its timeout) with 100 alerts queued
# and no spool hands them all to the new executor: all 100 are delivered.
. "$(dirname "$0")/corrald_lib.sh"
need python3

CONTROL=$WORK/control.sock
mkdir -p "$WORK/rules"
cat > "$WORK/rules/alerts.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-04">
  <ruleset name="app" id="reload-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="reload.alert" class="violation">
      <patterns><pattern>alert @NUMBER:n@</pattern></patterns>
      <actions><action route="slow"><message>
        <values><value name="MESSAGE">alert ${n}@1</value></values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
# the script waits until the test releases it: alerts pile up meanwhile
cat > "$WORK/slow.sh" <<SH
#!/bin/sh
while [ ! -e "$WORK/release" ]; do sleep 0.05; done
echo "\$CORRAL_MESSAGE" >> "$WORK/slow.out"
SH
chmod +x "$WORK/slow.sh"

# conf LISTEN TIMEOUT: the configuration, TCP input on LISTEN, exec timeout TIMEOUT
conf() {
    cat > "$WORK/corrald.conf.tmp" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$CONTROL"/>
  <inputs><tcp listen="$1" name="tcp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="all"/></outputs>
  <executors><exec name="slow" program="$WORK/slow.sh" timeout="$2"/></executors>
</corrald>
XML
    mv "$WORK/corrald.conf.tmp" "$WORK/corrald.conf"
}
reload() { "$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload.out" 2>&1; }
counted() { # reloads failures
    [ "$(metric corral_reloads_total)" = "$1" ] && [ "$(metric corral_reload_failures_total)" = "$2" ]
}

/usr/bin/python3 "$HERE/held_port.py" tcp "$WORK/held.port" "$WORK/held.go" sleep 100000 &
track $!
wait_until test -s "$WORK/held.port" || fail "held_port.py did not start"
held=$(cat "$WORK/held.port")

conf 127.0.0.1:0 60s
start_corrald corrald "$WORK/corrald.conf"
port=$(input_port tcp)
now() { date '+%b %e %H:%M:%S'; }
printf '%s web1 other: before\n' "$(now)" > "$WORK/m1.log"
send_tcp_file "$port" "$WORK/m1.log"
wait_grep "$WORK/out.json" 'before' || fail "first message not received"

# 1. the TCP input to a port another process holds: the reload fails, old input stays
conf "127.0.0.1:$held" 60s
if reload; then fail "reload to a held port succeeded: $(cat "$WORK/reload.out")"; fi
grep -q "input tcp: cannot listen on 127.0.0.1:$held" "$WORK/reload.out" || fail "no reason given: $(cat "$WORK/reload.out")"
counted 1 1 || fail "held port reload: reloads $(metric corral_reloads_total), failures $(metric corral_reload_failures_total)"
printf '%s web1 other: after held\n' "$(now)" > "$WORK/m2.log"
send_tcp_file "$port" "$WORK/m2.log" || fail "old TCP input gone after the failed reload"
wait_grep "$WORK/out.json" 'after held' || fail "old TCP input does not receive"

# 2. a truncated configuration, then a missing one: both counted
conf 127.0.0.1:0 60s
head -c 200 "$WORK/corrald.conf" > "$WORK/half" && mv "$WORK/half" "$WORK/corrald.conf"
if reload; then fail "truncated configuration reloaded"; fi
counted 2 2 || fail "truncated reload: reloads $(metric corral_reloads_total), failures $(metric corral_reload_failures_total)"
rm "$WORK/corrald.conf"
if reload; then fail "missing configuration reloaded"; fi
counted 3 3 || fail "missing reload: reloads $(metric corral_reloads_total), failures $(metric corral_reload_failures_total)"
conf 127.0.0.1:0 60s
reload || fail "reload of the same configuration failed: $(cat "$WORK/reload.out")"
counted 4 3 || fail "good reload: reloads $(metric corral_reloads_total), failures $(metric corral_reload_failures_total)"

# 3. 100 alerts queued (4 running, held by the script), then the executor changes
i=1
: > "$WORK/alerts.log"
while [ $i -le 100 ]; do
    printf '%s web1 app: alert %d\n' "$(now)" $i >> "$WORK/alerts.log"
    i=$((i + 1))
done
send_tcp_file "$port" "$WORK/alerts.log"
wait_metric corral_executor_submitted_total executor=slow -eq 100 || fail "alerts not routed"
wait_metric corral_executor_inflight executor=slow -ge 1 || fail "no delivery started"
conf 127.0.0.1:0 61s
reload || fail "executor change not reloaded: $(cat "$WORK/reload.out")"
touch "$WORK/release"
wait_lines "$WORK/slow.out" 100 ||
    fail "$(wc -l < "$WORK/slow.out" 2>/dev/null || echo 0) of 100 alerts delivered after the executor changed"
seq 1 100 | sed 's/^/alert /' > "$WORK/expected"
sort -V "$WORK/slow.out" | uniq > "$WORK/got"
cmp -s "$WORK/expected" "$WORK/got" || fail "wrong alerts delivered: $(diff "$WORK/expected" "$WORK/got" | head -5)"
wait_metric corral_executor_queued executor=slow -eq 0 || fail "alerts still queued"
[ "$(wc -l < "$WORK/slow.out")" -eq 100 ] || fail "$(wc -l < "$WORK/slow.out") deliveries for 100 alerts"
corrald_alive
stop_corrald "$CORRALD_PID"
echo "ok: held port reload refused and counted, truncated/missing counted, 100 of 100 alerts handed over"
