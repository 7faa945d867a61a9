#!/bin/sh
# An executor added by a reload gets the cluster's alerts: two nodes with
# the exec executor "record", both reloaded with a second executor, "second",
# routed the same alerts; a brute force sent to one node then reaches both
# executors, once each, through the work queue (each executor's consumer is
# pulled by every node that has it).
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"

RULES=$top_srcdir/rules/sshd.xml
record_script CORRAL_CORRAL_EVENT CORRAL_USRACCT_DEVICE
cat > "$WORK/second.sh" <<SH
#!/bin/sh
printf '%s\n' "\$CORRAL_CORRAL_EVENT" >> "$WORK/second"
SH
chmod 755 "$WORK/second.sh"
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'
EXEC2='<executors><exec name="record" program="'"$WORK/record.sh"'"/>
    <exec name="second" program="'"$WORK/second.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record,second"/></routes>'

start_nats
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
wait_balanced 1 2 || fail "the partitions were not shared out"

for i in 1 2; do
    eval "_name=\$NODE_NAME_$i _log=\$NODE_LOG_$i"
    cluster_conf "$WORK/$_name.conf" "$_name" "$RULES" "$EXEC2"
    eval "kill -HUP \$NODE_PID_$i"
    wait_grep "$_log" 'reload: executor added: second' || fail "node $_name did not add the executor"
done
grep -q 'its alerts wait in the work queue' "$WORK/a.log" "$WORK/b.log" &&
    fail "a node did not pull for the new executor"
echo "ok: both nodes reloaded with a second executor"

bruteforce_once 1 2
second_some() {
    has_matching "$WORK/second" '^ssh.bruteforce.alert$'
}
wait_until second_some || fail "the executor added by the reload got no alert"
# both deliveries acknowledged: nothing of either is left to come
acked_both() {
    [ "$(($(node_metric 1 corral_cluster_alerts_acked_total) + \
        $(node_metric 2 corral_cluster_alerts_acked_total)))" -ge 2 ]
}
wait_until acked_both || fail "the two deliveries were not both acknowledged"
[ "$(count_matching "$WORK/second" '^ssh.bruteforce.alert$')" -eq 1 ] ||
    fail "the executor added by the reload got the alert $(count_matching "$WORK/second" .) times"
[ "$(bruteforce_delivered)" -eq 1 ] || fail "record got the alert $(bruteforce_delivered) times"
echo "ok: the alert reached the executor added by the reload once, and the first executor once"
