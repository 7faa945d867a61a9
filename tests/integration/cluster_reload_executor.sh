#!/bin/sh
# An executor added by a reload gets the cluster's alerts: two nodes with
# the exec executor "record", both reloaded with a second executor, "second",
# routed the same alerts; a brute force sent to one node then reaches both
# executors, once each, through the work queue (each executor's consumer is
# pulled by every node that has it).  Then node a is reloaded without
# "second": it no longer pulls that executor's alerts (which it would only
# give back to the queue), and node b delivers every one of them.
# Last, both nodes are reloaded with a third executor while the three
# nats-server processes are stopped: its consumer cannot be made, the
# nodes say so and try again; once the servers run, they pull for it.
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

# node a without "second"; b keeps it: the alerts b's partitions raise go to both executors,
# a's to "record" only (a has no route to "second" any more)
EXEC3='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'
cluster_conf "$WORK/a.conf" a "$RULES" "$EXEC3"
kill -HUP "$NODE_PID_1"
wait_grep "$NODE_LOG_1" 'reload: executor removed: second' || fail "node a did not remove the executor"
# once its last fetch is over (an alert that fetch brings goes back to the queue at once)
wait_grep "$NODE_LOG_1" 'cluster: corraltest.alerts.second no longer pulled' ||
    fail "node a still pulls for the executor it removed"
# which node raised each alert is in its file output, written apart from the executors'
# deliveries: read once the files hold them all (here the first one)
raised() {
    count_matching "$WORK/$1.json" '"ssh.bruteforce.alert"'
}
written() {
    [ $(($(raised a) + $(raised b))) -ge "$1" ]
}
wait_until written 1 || fail "the first alert is in neither node's file output"
raised_b=$(raised b)
# twelve more brute forces, on twelve hosts (the partition is the host's), sent to node b
for a in 1 2 3 4 5 6 7 8 9 10 11 12; do five_failures "db$a" "203.0.113.$a"; done > "$WORK/more"
send_tcp_file "$(as_node 2 input_port tcp)" "$WORK/more"
thirteen() {
    [ "$(bruteforce_delivered)" -ge 13 ]
}
wait_until thirteen || fail "the twelve alerts did not all reach record: $(bruteforce_delivered)"
wait_until written 13 || fail "the file outputs hold $(($(raised a) + $(raised b))) of the 13 alerts"
by_b=$(($(raised b) - raised_b))
[ "$by_b" -ge 1 ] || fail "node b raised none of the twelve alerts"
to_second() {
    [ "$(count_matching "$WORK/second" '^ssh.bruteforce.alert$')" -ge $((1 + by_b)) ]
}
wait_until to_second || fail "second got $(count_matching "$WORK/second" .) alerts, not $((1 + by_b))"
[ "$(node_metric 1 corral_cluster_alerts_returned_total)" -eq 0 ] ||
    fail "node a pulled alerts of the executor it no longer has ($(node_metric 1 corral_cluster_alerts_returned_total) given back)"
[ "$(count_matching "$WORK/second" '^ssh.bruteforce.alert$')" -eq $((1 + by_b)) ] ||
    fail "second got $(count_matching "$WORK/second" .) alerts, not $((1 + by_b))"
[ "$(bruteforce_delivered)" -eq 13 ] || fail "record got $(bruteforce_delivered) alerts, not 13"
echo "ok: the executor a reload removed is no longer pulled from; node b delivered its $by_b alerts to it"

# a third executor while the servers are stopped: not pulled for yet, said; tried until made
cat > "$WORK/third.sh" <<SH
#!/bin/sh
printf '%s\n' "\$CORRAL_CORRAL_EVENT" >> "$WORK/third"
SH
chmod 755 "$WORK/third.sh"
EXEC4='<executors><exec name="record" program="'"$WORK/record.sh"'"/>
    <exec name="third" program="'"$WORK/third.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record,third"/></routes>'
for i in 1 2 3; do eval "kill -STOP \$NATS_PID_$i"; done
for i in 1 2; do
    eval "_name=\$NODE_NAME_$i _log=\$NODE_LOG_$i"
    cluster_conf "$WORK/$_name.conf" "$_name" "$RULES" "$EXEC4"
    eval "kill -HUP \$NODE_PID_$i"
    wait_grep "$_log" 'reload: executor added: third' || fail "node $_name did not add the executor"
    wait_grep "$_log" 'cluster: pulling corraltest.alerts.third: its consumer cannot be made yet' ||
        fail "node $_name did not say the executor's consumer cannot be made"
done
for i in 1 2 3; do eval "kill -CONT \$NATS_PID_$i"; done
echo "ok: reloaded while the servers were stopped, both nodes say the third executor's consumer cannot be made yet"
for i in 1 2; do
    eval "_log=\$NODE_LOG_$i"
    wait_grep "$_log" 'cluster: pulling corraltest.alerts.third (an executor a reload added)' ||
        fail "node $i does not pull for the third executor once the servers run"
done
wait_balanced 1 2 || fail "the partitions were not shared out again"
five_failures mail1 192.0.2.9 > "$WORK/third-failures"
send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/third-failures"
third_some() {
    has_matching "$WORK/third" '^ssh.bruteforce.alert$'
}
wait_until third_some || fail "the third executor got no alert"
echo "ok: once the servers run, both nodes pull for the third executor by themselves, and it gets its alert"
