#!/bin/sh
# hostile_backpressure: a full queue stops stream inputs instead of losing
# their messages.
#
#   100,000 lines over one TCP connection into a file output whose queue
#   holds 100 messages: all 100,000 are in the file, none dropped, and the
#   pauses are counted.  The same for 50,000 lines of a followed file read
#   from its start.  40 alerts over TCP to an exec executor whose queue holds
#   5: all 40 are delivered, none refused.
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

i=0
while [ $i -lt 50000 ]; do
    echo "Dec  3 10:00:00 web1 app: file line $i"
    i=$((i + 1))
done > "$WORK/app.log"

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
start_corrald corrald "$WORK/corrald.conf"
PORT=$(input_port tcp)

# ---- 100,000 lines over TCP, as fast as the socket takes them
i=0
while [ $i -lt 100000 ]; do
    echo "<13>Dec  3 10:00:00 web1 app: tcp line $i"
    i=$((i + 1))
done > "$WORK/tcp.txt"
send_tcp_file "$PORT" "$WORK/tcp.txt"
wait_lines "$WORK/out.log" 100000 ||
    fail "TCP: $(wc -l < "$WORK/out.log") of 100000 lines written, $(metric corral_output_dropped_total output=file) dropped"
[ "$(metric corral_output_dropped_total output=file)" -eq 0 ] ||
    fail "TCP: $(metric corral_output_dropped_total output=file) lines dropped"
[ "$(grep -c ' app: tcp line ' "$WORK/out.log")" -eq 100000 ] || fail "TCP: lines missing or doubled"
[ "$(metric corral_backpressure_pauses_total)" -gt 0 ] || fail "TCP: the input was never paused"
grep -q 'file: queue full, stream inputs paused until it drains' "$CORRALD_LOG" ||
    fail "the pause was not logged"

# ---- 40 alerts to an executor whose queue holds 5
i=0
while [ $i -lt 40 ]; do
    echo "<13>Dec  3 10:00:00 web1 app: bp alert $i"
    i=$((i + 1))
done > "$WORK/alerts.txt"
send_tcp_file "$PORT" "$WORK/alerts.txt"
wait_metric corral_executor_delivered_total executor=slow -eq 40 ||
    fail "executor: $(metric corral_executor_delivered_total executor=slow) of 40 alerts delivered, $(metric corral_executor_dropped_full_total executor=slow) refused"
[ "$(metric corral_executor_dropped_full_total executor=slow)" -eq 0 ] ||
    fail "executor: alerts refused with the queue full"
[ "$(sort -u "$WORK/delivered" | wc -l)" -eq 40 ] || fail "executor: $(sort -u "$WORK/delivered" | wc -l) distinct alerts"

corrald_alive
stop_corrald

# ---- 50,000 lines of a followed file, read from its start
sed -i -e "s|<tcp listen=\"127.0.0.1:0\" name=\"tcp\"/>|<file path=\"$WORK/app.log\" from=\"start\" name=\"app\" position-file=\"$WORK/app.pos\"/>|" \
    -e "s|$WORK/out.log|$WORK/out2.log|" "$WORK/corrald.conf"
start_corrald corrald2 "$WORK/corrald.conf"
wait_lines "$WORK/out2.log" 50000 ||
    fail "file: $(wc -l < "$WORK/out2.log") of 50000 lines written, $(metric corral_output_dropped_total output=file) dropped"
[ "$(metric corral_output_dropped_total output=file)" -eq 0 ] ||
    fail "file: $(metric corral_output_dropped_total output=file) lines dropped"
[ "$(grep -c ' app: file line ' "$WORK/out2.log")" -eq 50000 ] || fail "file: lines missing or doubled"
[ "$(metric corral_backpressure_pauses_total)" -gt 0 ] || fail "file: the input was never paused"

corrald_alive
stop_corrald
echo "$TEST: ok"
