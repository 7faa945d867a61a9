#!/bin/sh
# A rate limit across a failover: a rule whose action may run once an hour
# (rate="1/3600") runs it for the first message; the partition's owner
# writes a checkpoint and is killed (kill -9); the second message, sent to
# another node, reaches the node that takes the partition over, which loads
# the rate limit's bucket with the checkpoint: no second alert.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$WORK/rate.xml
cat > "$RULES" <<'XML'
<patterndb version="5" pub_date="2026-12-06">
  <ruleset name="rt" id="test.rt">
    <patterns><pattern>rt</pattern></patterns>
    <rules>
      <rule provider="test" id="test.rt.once" class="system">
        <patterns><pattern>disk @NUMBER:n@ failing</pattern></patterns>
        <actions>
          <action rate="1/3600">
            <message><values>
              <value name="PROGRAM">corral</value>
              <value name="MESSAGE">rate-alert ${n}</value>
            </values></message>
          </action>
        </actions>
      </rule>
    </rules>
  </ruleset>
</patterndb>
XML

line() {
    python3 -c '
import sys, time
print("%s store1 rt[42]: disk %s failing" % (time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1), sys.argv[1]))' "$1"
}

start_nats
start_node 1 a "$RULES"
start_node 2 b "$RULES"
start_node 3 c "$RULES"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

alerts() {
    cat "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null | grep -c 'rate-alert'
}
has_alerts() {
    [ "$(alerts)" -ge "$1" ]
}
line 1 > "$WORK/first"
as_node 1 send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/first"
wait_until has_alerts 1 || fail "no alert for the first message"
owner() {
    for _k in 1 2 3; do
        if [ "$(node_metric "$_k" corral_cluster_consumed_total)" -ge 1 ]; then
            echo "$_k"
            return 0
        fi
    done
    return 1
}
OWNER=$(owner) || fail "no node correlated the message"
as_node "$OWNER" wait_metric corral_cluster_checkpoints_total -ge 1 || fail "no checkpoint"
eval "OWNER_PID=\$NODE_PID_$OWNER"
kill -KILL "$OWNER_PID"
wait "$OWNER_PID" 2>/dev/null
untrack "$OWNER_PID"
echo "killed the owner, node $OWNER"
case $OWNER in
1) REST="2 3" ;;
2) REST="1 3" ;;
3) REST="1 2" ;;
esac
OTHER=${REST%% *}
line 2 > "$WORK/second"
as_node "$OTHER" send_tcp_file "$(as_node "$OTHER" input_port tcp)" "$WORK/second"
consumed_by_rest() {
    _c=0
    for _k in $REST; do _c=$((_c + $(node_metric "$_k" corral_cluster_consumed_total))); done
    [ "$_c" -ge 1 ]
}
wait_until consumed_by_rest || fail "the second message was not correlated after the failover"
# the new owner loaded the bucket: rate limited, not emitted
limited() {
    for _k in $REST; do
        [ "$(node_metric "$_k" corral_dropped_total reason=rate_limit)" -ge 1 ] && return 0
    done
    return 1
}
limited || fail "the second message's action was not rate limited ($(alerts) alerts)"
[ "$(alerts)" -eq 1 ] || fail "$(alerts) alerts, not 1: the rate limit restarted with the new owner"
for k in $REST; do as_node "$k" stop_corrald; done
echo "ok: one alert across the failover, the rate limit's bucket handed over"
