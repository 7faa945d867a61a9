#!/bin/sh
# hostile_backpressure: a full queue stops stream inputs instead of losing
# their messages.
#
#   100,000 lines over one TCP connection into a file output whose queue
#   holds 100 messages: all 100,000 are in the file, none dropped, and the
#   pauses are counted.  The same for 20,000 lines of a followed file read
#   from its start, and on standard input (a regular file, a pipe).  40
#   alerts over TCP to an exec executor whose queue holds 5: all 40 are
#   delivered, none refused.  A forward output whose peer is down does not
#   pause the inputs: its overflow is dropped and counted.
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/rules"
cat > "$WORK/rules/bp.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-04">
  <ruleset name="app" id="bp-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="bp.alert" class="violation">
      <patterns><pattern>bp alert @NUMBER:n@</pattern></patterns>
      <actions><action route="slow"><message>
        <values><value name="MESSAGE">alert ${n}@1</value></values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
cat > "$WORK/slow.sh" <<SH
#!/bin/sh
echo "\$CORRAL_MESSAGE" >> "$WORK/delivered"
SH
chmod +x "$WORK/slow.sh"

awk 'BEGIN { for (i = 0; i < 20000; i++) printf "Dec  3 10:00:00 web1 app: file line %d\n", i }' \
    > "$WORK/app.log"

cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <stats listen="127.0.0.1:0"/>
  <inputs>
    <tcp listen="127.0.0.1:0" name="tcp"/>
  </inputs>
  <outputs>
    <file path="$WORK/out.log" format="syslog" select="all" queue="100" name="file"/>
  </outputs>
  <executors>
    <exec name="slow" program="$WORK/slow.sh" queue="5"/>
  </executors>
</corrald>
XML
# lossless WHAT OUT N PATTERN: once OUT has N lines, all N match PATTERN
# (none lost, none doubled), the output dropped none, and the inputs were
# paused (one look at the counters: each costs a python start)
lossless() {
    wait_lines "$2" "$3" || fail "$1: $(wc -l < "$2") of $3 lines written"
    metrics_text > "$WORK/metrics.txt" || fail "$1: no metrics"
    val() { awk -v s="$1" '$1 == s {print $2}' "$WORK/metrics.txt"; }
    [ "$(val 'corral_output_dropped_total{output="file"}')" = 0 ] ||
        fail "$1: $(val 'corral_output_dropped_total{output="file"}') lines dropped"
    # paused by the output's queue, or by the workers' queue when the engine is the slower
    # stage (a sanitizer build): either way the input waited instead of losing lines
    _bp=$(val corral_backpressure_pauses_total)
    _ep=$(val corral_engine_pauses_total) # only with workers
    [ $((${_bp:-0} + ${_ep:-0})) -gt 0 ] || fail "$1: the input was never paused"
    [ "$(grep -c "$4" "$2")" -eq "$3" ] || fail "$1: lines missing or doubled"
}

start_corrald corrald "$WORK/corrald.conf"
PORT=$(input_port tcp)

# ---- 100,000 lines over TCP, as fast as the socket takes them
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "<13>Dec  3 10:00:00 web1 app: tcp line %d\n", i }' \
    > "$WORK/tcp.txt"
send_tcp_file "$PORT" "$WORK/tcp.txt"
lossless TCP "$WORK/out.log" 100000 ' app: tcp line '
grep -q 'file: queue full, stream inputs paused until it drains' "$CORRALD_LOG" ||
    fail "the pause was not logged"

# ---- 40 alerts to an executor whose queue holds 5
awk 'BEGIN { for (i = 0; i < 40; i++) printf "<13>Dec  3 10:00:00 web1 app: bp alert %d\n", i }' \
    > "$WORK/alerts.txt"
send_tcp_file "$PORT" "$WORK/alerts.txt"
delivered() { [ "$(sort -u "$WORK/delivered" 2>/dev/null | wc -l)" -eq 40 ]; }
wait_until delivered ||
    fail "executor: $(metric corral_executor_delivered_total executor=slow) of 40 alerts delivered, $(metric corral_executor_dropped_full_total executor=slow) refused"
[ "$(metric corral_executor_dropped_full_total executor=slow)" -eq 0 ] ||
    fail "executor: alerts refused with the queue full"
corrald_alive
stop_corrald

# ---- 20,000 lines of a followed file, read from its start
sed -i -e "s|<tcp listen=\"127.0.0.1:0\" name=\"tcp\"/>|<file path=\"$WORK/app.log\" from=\"start\" name=\"app\" position-file=\"$WORK/app.pos\"/>|" \
    -e "s|$WORK/out.log|$WORK/out2.log|" "$WORK/corrald.conf"
start_corrald corrald2 "$WORK/corrald.conf"
lossless file "$WORK/out2.log" 20000 ' app: file line '
corrald_alive
stop_corrald

# ---- the same 20,000 lines on standard input, a regular file and a pipe
sed -i -e "s|<file path=\"$WORK/app.log\"[^>]*/>|<stdin name=\"stdin\"/>|" "$WORK/corrald.conf"
for how in file pipe; do
    sed -i -e "s|$WORK/out[-0-9a-z]*\.log|$WORK/out-$how.log|" "$WORK/corrald.conf"
    if [ $how = pipe ]; then
        start_corrald -p corrald-$how "$WORK/corrald.conf" "$WORK/app.log"
    else
        start_corrald corrald-$how "$WORK/corrald.conf" "$WORK/app.log"
    fi
    lossless "stdin ($how)" "$WORK/out-$how.log" 20000 ' app: file line '
    corrald_alive
    stop_corrald
done
# ---- a forward peer that is down never stops the inputs: its overflow is
# dropped and counted, while the file output gets every line
python3 "$HERE/held_port.py" tcp "$WORK/down.port" "$WORK/down.go" sleep 100000 &
track $!
wait_until test -s "$WORK/down.port" || fail "no port for the dead peer"
cat > "$WORK/fwd.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <outputs>
    <file path="$WORK/out-fwd.log" format="syslog" select="all" name="file"/>
    <forward to="127.0.0.1:$(cat "$WORK/down.port")" protocol="tcp" queue="100" name="relay"/>
  </outputs>
  <executors><exec name="slow" program="$WORK/slow.sh"/></executors>
</corrald>
XML
start_corrald corrald-fwd "$WORK/fwd.conf"
awk 'BEGIN { for (i = 0; i < 5000; i++) printf "<13>Dec  3 10:00:00 web1 app: fwd line %d\n", i }' \
    > "$WORK/fwd.txt"
send_tcp_file "$(input_port tcp)" "$WORK/fwd.txt"
wait_lines "$WORK/out-fwd.log" 5000 || fail "forward down: $(wc -l < "$WORK/out-fwd.log") of 5000 lines reached the file"
[ "$(metric corral_output_dropped_total output=relay)" -ge 4900 ] ||
    fail "forward down: $(metric corral_output_dropped_total output=relay) dropped, want at least 4900"
[ "$(metric corral_backpressure_pauses_total)" -eq 0 ] || fail "forward down: the inputs were paused"
grep -q 'output relay: queue full (100 messages), dropping' "$CORRALD_LOG" || fail "forward down: the drops were not logged"
stop_corrald
echo "$TEST: ok"
