#!/bin/sh
# A burst of generated messages in one loop turn (context timeouts) reaches
# a healthy output whole: 3,000 contexts of a rule with a 1 s timeout, opened
# by one TCP burst, time out together, and each timeout action's message
# goes to a file output whose queue holds 100 messages.  Generated messages
# are not dropped at the queue's message bound (they have a lane of their
# own, bounded in bytes: output.c), so the file gets all 3,000 and
# corral_output_dropped_total stays 0.  The messages are alerts too, routed
# to an SNMP executor whose queue holds 100 and whose NMS never answers its
# informs: alerts fired by the clock go past queue= (within the queue's hard
# bounds), so all 3,000 are queued and none is dropped as queue full.
. "$(dirname "$0")/corrald_lib.sh"
need python3

N=3000
mkdir -p "$WORK/rules"
cat > "$WORK/rules/burst.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-06">
  <ruleset name="burst" id="timer-burst"><patterns><pattern>burst</pattern></patterns><rules>
    <rule provider="test" id="burst.ctx" class="system" context-id="burst-${n}"
          context-scope="global" context-timeout="1">
      <patterns><pattern>open @NUMBER:n@</pattern></patterns>
      <actions><action trigger="timeout"><message>
        <values><value name="MESSAGE">summary ${n}@1</value></values>
        <tags><tag>corral.alert</tag></tags>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
# the NMS: a port that takes datagrams and throws them away
printf 'public\n' > "$WORK/community"
python3 "$HERE/held_port.py" udp "$WORK/nms.port" "$WORK/nms.never" true &
track $!
wait_until test -s "$WORK/nms.port" || fail "no port for the NMS"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <stats listen="127.0.0.1:0"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <outputs>
    <file path="$WORK/out.json" format="json" select="generated" queue="100"/>
  </outputs>
  <executors spool="$WORK/spool">
    <snmp name="nms" target="udp:127.0.0.1:$(cat "$WORK/nms.port")" community-file="$WORK/community"
          inform="yes" timeout="1h" queue="100"/>
  </executors>
  <routes><route tag="corral.alert" to="nms"/></routes>
</corrald>
XML
python3 - "$WORK/burst.txt" "$N" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write("<13>Dec  6 10:00:00 web1 burst: open %d\n" % i)
PY
start_corrald burst "$WORK/corrald.conf"
port=$(input_port tcp)
send_tcp_file "$port" "$WORK/burst.txt"
wait_metric corral_contexts_created_total -ge $N || fail "contexts: $(metric corral_contexts_created_total)"
# every context has timed out and its message has been written or dropped
out="output=file:$WORK/out.json"
settled() {
    [ $(($(metric corral_output_written_total "$out") + $(metric corral_output_dropped_total "$out"))) -ge $N ]
}
wait_until settled || fail "not all timed out: $(metric corral_contexts_open) contexts open," \
    "$(metric corral_output_written_total "$out") written"
written=$(metric corral_output_written_total "$out")
dropped=$(metric corral_output_dropped_total "$out")
echo "generated $N, written $written, dropped $dropped"
[ "$dropped" = 0 ] || fail "the file output dropped $dropped generated messages"
[ "$written" = $N ] || fail "the file output wrote $written of $N"
[ "$(grep -c '"summary ' "$WORK/out.json")" = $N ] || fail "out.json lacks summaries"
# and every alert was taken by the executor, none dropped
taken() {
    [ $(($(metric corral_executor_queued executor=nms) +
        $(metric corral_executor_dropped_full_total executor=nms))) -ge $N ]
}
wait_until taken || fail "not all alerts handled: $(metric corral_executor_queued executor=nms) queued"
[ "$(metric corral_executor_dropped_full_total executor=nms)" = 0 ] ||
    fail "the executor dropped $(metric corral_executor_dropped_full_total executor=nms) alerts as queue full"
stop_corrald
echo "ok: $N timeouts in one turn, all written"
