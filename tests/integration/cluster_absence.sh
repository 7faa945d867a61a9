#!/bin/sh
# Absence detection in a cluster: three corrald nodes over three clustered
# nats-server processes, <absence> watched by the owner of each host's
# partition (the partition of its HOST), from every message of the host
# whichever node received it, saved in the partition's checkpoint.
#   1. quiet2 sends once (to node 1); the owner of its partition is killed
#      (kill -9) before its window (8 s) ends: the new owner reports it,
#      once, and the exec script runs once.  The killed node comes back and
#      takes its partitions again: quiet2, already reported, is not reported
#      again.
#   2. quiet1 sends to node 1 and goes quiet: exactly one report.
#   3. busy sends to nodes 2 and 3 alternately, each line from another
#      program (so to other partitions): never reported absent while it
#      sends (no report before its last line, no clear), once after.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/tests/integration/session_rules.xml

record_script CORRAL_CORRAL_EVENT CORRAL_HOST CORRAL_CORRAL_CLUSTER_ID
EXTRA='<absence host="quiet2" after="8s"/>
  <absence host="quiet1" after="2s"/>
  <absence host="busy" after="4s"/>
  <executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.absence" to="record"/></routes>'

start_nats
start_node 1 a "$RULES" "$EXTRA"
start_node 2 b "$RULES" "$EXTRA"
start_node 3 c "$RULES" "$EXTRA"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

# line HOST PROGRAM TEXT: a syslog line stamped now
line() {
    printf '%s %s %s: %s\n' "$(date '+%b %e %H:%M:%S')" "$1" "$2" "$3"
}
# send_to K FILE: FILE to node K's TCP input
send_to() {
    as_node "$1" send_tcp_file "$(as_node "$1" input_port tcp)" "$2"
}
# reports STATE HOST: absence reports (down or up) on HOST in every node's output
reports() {
    cat "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null |
        grep '"absence.state":"'"$1"'"' | grep -c '"HOST":"'"$2"'"'
}
reported() {
    [ "$(reports down "$1")" -ge 1 ]
}
delivered() {
    count_matching "$WORK/delivered" "^absence.$1 $2 "
}
has_delivered() {
    [ "$(delivered down "$1")" -ge 1 ]
}
# quiet NODES...: every alert published to the work queue stored, every one pulled ended
quiet() {
    for _k in "$@"; do
        [ "$(node_metric "$_k" corral_cluster_alerts_published_total)" = \
          "$(node_metric "$_k" corral_cluster_alerts_stored_total)" ] || return 1
        [ "$(node_metric "$_k" corral_cluster_alerts_pulled_total)" = \
          "$(node_metric "$_k" corral_cluster_alerts_acked_total)" ] || return 1
    done
}
# watcher NODES...: the node whose partitions watch a source (the only one watched)
watcher() {
    for _k in "$@"; do
        if [ "$(node_metric "$_k" corral_cluster_absence_sources)" = 1 ]; then
            echo "$_k"
            return 0
        fi
    done
    return 1
}

# 1. failover
line quiet2 app "hello" > "$WORK/q2"
send_to 1 "$WORK/q2"
wait_until watcher 1 2 3 || fail "no node watches quiet2"
OWNER=$(watcher 1 2 3)
as_node "$OWNER" wait_metric corral_cluster_checkpoints_total -ge 1 || fail "no checkpoint"
[ "$(reports down quiet2)" -eq 0 ] || echo "note: quiet2 reported before the kill (a slow run)"
as_node "$OWNER" kill_corrald
echo "killed node $OWNER, the owner of quiet2's partition"
case $OWNER in
1) REST="2 3" ;;
2) REST="1 3" ;;
3) REST="1 2" ;;
esac
wait_until reported quiet2 || fail "quiet2 not reported absent after the failover"
wait_balanced $REST || fail "the survivors did not take every partition"
NEW=$(watcher $REST) || fail "no survivor watches quiet2"
wait_until has_delivered quiet2 || fail "quiet2's report did not reach the exec script"
wait_until quiet $REST || fail "alerts still in flight"
[ "$(reports down quiet2)" -eq 1 ] || fail "quiet2 reported $(reports down quiet2) times, not once"
[ "$(delivered down quiet2)" -eq 1 ] || fail "the exec script ran $(delivered down quiet2) times"
echo "ok: quiet2 reported once after the failover (node $NEW watches it)"

# the killed node comes back and takes its partitions again, quiet2's down with them (the
# partitions given back with a last checkpoint)
eval "start_node $OWNER \$NODE_NAME_$OWNER \"\$RULES\" \"\$EXTRA\""
wait_balanced 1 2 3 || fail "the partitions were not shared out again"
wait_until watcher "$OWNER" || fail "node $OWNER did not take quiet2's partition back"
as_node "$OWNER" wait_metric corral_cluster_absence_down -eq 1 || fail "quiet2 not down on node $OWNER"

# 2. a host that sends to node 1 and goes quiet
line quiet1 app "hello" > "$WORK/q1"
send_to 1 "$WORK/q1"
wait_until reported quiet1 || fail "quiet1 not reported absent"

# 3. a host sending to nodes 2 and 3 alternately, from programs of other partitions; its
# last line says so
i=0
while [ $i -lt 24 ]; do
    line busy "prog$i" "line $i" > "$WORK/busy"
    send_to $((2 + i % 2)) "$WORK/busy"
    [ "$(reports down busy)" -eq 0 ] || fail "busy reported absent while it sends (line $i)"
    sleep 0.3
    i=$((i + 1))
done
wait_until reported busy || fail "busy not reported absent once it stopped"
seen=$(($(node_metric 2 corral_cluster_absence_seen_published_total) + \
        $(node_metric 3 corral_cluster_absence_seen_published_total)))
[ "$seen" -ge 1 ] || fail "no copy of busy's lines went to its host's partition"
echo "busy: $seen of 24 lines copied to its host's partition"
wait_until has_delivered quiet1 || fail "quiet1's report did not reach the exec script"
wait_until has_delivered busy || fail "busy's report did not reach the exec script"
wait_until quiet 1 2 3 || fail "alerts still in flight"
for h in quiet1 busy quiet2; do
    [ "$(reports down $h)" -eq 1 ] || fail "$h reported $(reports down $h) times, not once"
    [ "$(reports up $h)" -eq 0 ] || fail "$h reported back $(reports up $h) times"
    [ "$(delivered down $h)" -eq 1 ] || fail "the exec script ran $(delivered down $h) times for $h"
done
grep -q '^absence.down busy corraltest/' "$WORK/delivered" ||
    fail "no cluster id on the report: $(cat "$WORK/delivered")"
for k in 1 2 3; do as_node $k stop_corrald; done
echo "ok: one report per quiet host, none for the busy one while it sends"
