#!/bin/sh
# An alert stored twice in the work queue is still delivered once.  JetStream
# drops a second publish of an alert id within its duplicate window only
# while it remembers the first: a restarted server remembers the ids of the
# messages it still holds, and an alert delivered and acknowledged has left
# the work queue (a stream whose cluster state is reset forgets the same
# way).  Here: a brute force alert delivered to an exec script, the three
# nats-server processes restarted, then the very message the node published
# (recorded off the wire) published again, as a new owner's replay would:
# JetStream stores the copy, and the node that pulls it finds the alert
# delivered, acknowledges the copy without delivering it, and counts it.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
record_script CORRAL_CORRAL_EVENT CORRAL_USRACCT_DEVICE CORRAL_CORRAL_CLUSTER_ID
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'

start_nats
# the servers come back on the ports the nodes know
for i in 1 2 3; do
    eval "sed -i \"s/^listen: 127.0.0.1:-1\$/listen: 127.0.0.1:\$NATS_PORT_$i/\" \"\$WORK/nats$i.conf\""
done
python3 "$HERE/nats_copy.py" record "127.0.0.1:$NATS_PORT_1" corral "$WORK/nats-password" \
    'corraltest.alerts.>' "$WORK/copied" "$WORK/copy-ready" &
track "$!"
wait_until test -f "$WORK/copy-ready" || fail "the recorder did not subscribe"
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
wait_balanced 1 2 || fail "the partitions were not shared out"

delivered() {
    count_matching "$WORK/delivered" '^ssh.bruteforce.alert '
}
duplicates() {
    echo $(($(node_metric 1 corral_cluster_alerts_duplicates_total) + \
        $(node_metric 2 corral_cluster_alerts_duplicates_total)))
}
acked() {
    [ "$(($(node_metric 1 corral_cluster_alerts_acked_total) + \
        $(node_metric 2 corral_cluster_alerts_acked_total)))" -ge "$1" ]
}

five_failures web1 198.51.100.7 > "$WORK/failures"
send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/failures"
delivered_once() {
    [ "$(delivered)" -ge 1 ]
}
wait_until delivered_once || fail "the alert was not delivered"
wait_until acked 1 || fail "the delivered alert was not acknowledged"
wait_until has_lines "$WORK/copied" 1 || fail "the recorder saw no alert published"
[ "$(wc -l < "$WORK/copied")" -eq 1 ] || fail "more than one publish recorded: $(cat "$WORK/copied")"
# the acknowledgement has taken the alert out of the work queue before the servers stop: a
# server that still holds it when it stops knows its id again when it starts
queue_empty() {
    [ "$(python3 "$HERE/nats_copy.py" messages "127.0.0.1:$NATS_PORT_1" corral \
        "$WORK/nats-password" corraltest_alerts 2> /dev/null)" = 0 ]
}
wait_until queue_empty || fail "the acknowledged alert stayed in the work queue"

for i in 1 2 3; do
    eval "_pid=\$NATS_PID_$i"
    kill -TERM "$_pid"
    wait "$_pid" 2>/dev/null
    untrack "$_pid"
done
for i in 1 2 3; do start_nats_server "$i"; done
# each log says "Server is ready" once more
ready_again() {
    [ "$(grep -c "Server is ready" "$WORK/nats$1.log")" -ge 2 ]
}
for i in 1 2 3; do
    wait_until ready_again "$i" || fail "nats-server $i did not start again"
done
echo "restarted the three nats-server processes"

python3 "$HERE/nats_copy.py" publish "127.0.0.1:$NATS_PORT_2" corral "$WORK/nats-password" \
    "$WORK/copied" > "$WORK/copy-answer" || fail "the copy was not published"
echo "JetStream's answer to the copy: $(cat "$WORK/copy-answer")"
grep -q '"seq"' "$WORK/copy-answer" || fail "JetStream did not store the copy"
! grep -q '"duplicate" *: *true' "$WORK/copy-answer" ||
    fail "JetStream still knew the id: the copy cannot test the nodes"

copy_ended() {
    [ "$(duplicates)" -ge 1 ] || [ "$(delivered)" -ge 2 ]
}
wait_until copy_ended || fail "the copy was neither delivered nor dropped"
[ "$(delivered)" -eq 1 ] || fail "the alert was delivered $(delivered) times: $(cat "$WORK/delivered")"
[ "$(duplicates)" -eq 1 ] || fail "$(duplicates) copies counted, not 1"
echo "ok: the copy was acknowledged without a second delivery"
