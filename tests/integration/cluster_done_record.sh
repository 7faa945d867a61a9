#!/bin/sh
# A delivery's record says "done" before its job is acknowledged, so that
# the job, delivered again because the acknowledgement was lost, is not
# delivered twice; a record that could not be written is written again
# until it holds.  Node a (agent/corrald-test, CORRAL_TEST_HOOK=
# lose-done:1) delivers a brute force alert, then loses its first done
# record and that job's acknowledgement, as when the server it talks to
# dies between the two.  It writes the record again, and is killed; node b
# starts.  After the ack wait (30 s) the work queue delivers the alert
# again, to b, which finds its record done: acknowledged unseen and
# counted, the script of the executor run once.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
record_script CORRAL_CORRAL_EVENT CORRAL_USRACCT_DEVICE
EXEC='<executors><exec name="run" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="run"/></routes>'

start_nats
PLAIN=$CORRALD
CORRALD=$top_builddir/agent/corrald-test
export CORRAL_TEST_HOOK=lose-done:1
start_node 1 a "$RULES" "$EXEC"
unset CORRAL_TEST_HOOK
CORRALD=$PLAIN
wait_balanced 1 || fail "node a does not own the partitions"

five_failures web1 198.51.100.7 > "$WORK/failures"
as_node 1 send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/failures"
wait_until bruteforce_some || fail "the alert was not delivered"
as_node 1 wait_log "test hook: a delivery's done record and acknowledgement lost" ||
    fail "node a did not lose the done record (test hook)"
as_node 1 wait_log "cluster: a delivery's done record written [0-9]* ms late" ||
    fail "node a did not write the done record again"
as_node 1 kill_corrald
echo "ok: node a delivered the alert, lost its done record and acknowledgement, wrote the record again"

start_node 2 b "$RULES" "$EXEC"
# the queue gives the job back after the ack wait (30 s), to b
# given back: found done and counted, or (were the record not done) delivered again
given_back() {
    [ "$(node_metric 2 corral_cluster_alerts_duplicates_total)" -ge 1 ] ||
        [ "$(bruteforce_delivered)" -ge 2 ]
}
WAIT_TIMEOUT=90 wait_until given_back || fail "node b was not given the alert again"
[ "$(bruteforce_delivered)" -eq 1 ] ||
    fail "the alert was delivered $(bruteforce_delivered) times: $(cat "$WORK/delivered")"
[ "$(node_metric 2 corral_cluster_alerts_pulled_total)" -eq 0 ] ||
    fail "node b took the copy for an alert to deliver"
echo "ok: given to node b again after the ack wait, the alert was found done: delivered once"
