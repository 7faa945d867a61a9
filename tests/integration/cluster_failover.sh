#!/bin/sh
# Failover of a partition: three corrald nodes over three clustered
# nats-server processes; 3 failed SSH logins from one address reach the
# node that owns the host's partition (sent to node a), the owner writes a
# checkpoint, is killed (kill -9) and the last 2 failures are sent to
# another node.  The partition's lease expires, a surviving node takes it,
# loads the checkpoint, replays the stream after it, and the brute force
# alert (on the 5th failure) is generated exactly once, with count 5, and
# delivered once to an exec script (through the cluster's work queue).
# Then the same with the owner stopped (SIGTERM) instead: it gives its
# partitions back with a last checkpoint.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
ADDR=198.51.100.7

# fail_lines FROM TO [HOST]: failures FROM..TO from $ADDR on HOST (victim), stamped now
fail_lines() {
    python3 - "$1" "$2" "$ADDR" "${3:-victim}" <<'PY'
import sys, time
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
for k in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
    print("%s %s sshd[%d]: Failed password for root from %s port %d ssh2"
          % (stamp, sys.argv[4], 700 + k, sys.argv[3], 40000 + k))
PY
}

record_script CORRAL_CORRAL_EVENT CORRAL_HOST CORRAL_CORRAL_COUNT CORRAL_CORRAL_CLUSTER_ID
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'

start_nats
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
start_node 3 c "$RULES" "$EXEC"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

# owner_has N K [HOST]: node K holds the brute force's context on HOST with N messages
owner_has() {
    as_node "$2" "$CORRAL" ctl -s "$WORK/$(eval echo \$NODE_NAME_$2).sock" contexts | python3 -c '
import json, sys
sys.exit(not any(c["id"] == "ssh-bruteforce-'"$ADDR"'" and c["host"] == sys.argv[2]
                 and c["messages"] == int(sys.argv[1]) for c in json.load(sys.stdin)))' \
        "$1" "${3:-victim}"
}
# find_owner [HOST [NODES]]
find_owner() {
    for _k in ${2:-1 2 3}; do
        if owner_has 3 "$_k" "${1:-victim}"; then
            echo "$_k"
            return 0
        fi
    done
    return 1
}

fail_lines 1 3 > "$WORK/first"
as_node 1 send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/first"
wait_until find_owner || fail "no node holds the brute force's context"
OWNER=$(find_owner)
# a checkpoint of the partition (the only one with traffic) is written: it covers some or all
# of the 3, the new owner replays the rest of them from the stream
as_node "$OWNER" wait_metric corral_cluster_checkpoints_total -ge 1 || fail "no checkpoint"
as_node "$OWNER" kill_corrald
echo "killed the owner, node $OWNER"

case $OWNER in
1) REST="2 3" ;;
2) REST="1 3" ;;
3) REST="1 2" ;;
esac
OTHER=${REST%% *}
fail_lines 4 5 > "$WORK/rest"
as_node "$OTHER" send_tcp_file "$(as_node "$OTHER" input_port tcp)" "$WORK/rest"

alerts() {
    cat "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null | grep -c '"ssh.bruteforce.alert"'
}
has_alert() {
    [ "$(alerts)" -ge 1 ]
}
wait_until has_alert || fail "no brute force alert after the failover"
# $REST split: the survivors own every partition between them
wait_balanced $REST || fail "the survivors did not take every partition"
[ "$(alerts)" -eq 1 ] || fail "$(alerts) brute force alerts, not 1"
cat "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null | python3 -c '
import json, sys
a = [json.loads(l) for l in sys.stdin if "ssh.bruteforce.alert" in l][0]
assert a["corral.count"] == "5", a
assert a["usracct.device"] == "'"$ADDR"'", a
assert a.get("corral.cluster_id"), a
print("alert:", a["MESSAGE"], a["corral.cluster_id"])' || fail "the alert is not the one expected"
# delivered_to HOST: brute force alerts on HOST the exec script ran for
delivered_to() {
    count_matching "$WORK/delivered" "^ssh.bruteforce.alert $1 "
}
has_delivered() {
    [ "$(delivered_to "$1")" -ge 1 ]
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
wait_until has_delivered victim || fail "the alert did not reach the exec script"
wait_until quiet $REST || fail "alerts still in flight"
[ "$(delivered_to victim)" -eq 1 ] || fail "the exec script ran $(delivered_to victim) times"
grep -q "^ssh.bruteforce.alert victim 5 corraltest/" "$WORK/delivered" ||
    fail "the exec script did not get count 5 and the cluster id: $(cat "$WORK/delivered")"
echo "ok: failover of node $OWNER, one alert with count 5, delivered once"

# Handoff at a stop: the owner of host victim2's partition (one of the two left) stops
# (SIGTERM) after 3 failures, having checkpointed its contexts; the last 2 go to the other.
fail_lines 1 3 victim2 > "$WORK/first2"
as_node "$OTHER" send_tcp_file "$(as_node "$OTHER" input_port tcp)" "$WORK/first2"
wait_until find_owner victim2 "$REST" || fail "no node holds victim2's brute force context"
OWNER2=$(find_owner victim2 "$REST")
as_node "$OWNER2" stop_corrald
LAST=${REST#* }
[ "$LAST" = "$OWNER2" ] && LAST=${REST%% *}
fail_lines 4 5 victim2 > "$WORK/rest2"
as_node "$LAST" send_tcp_file "$(as_node "$LAST" input_port tcp)" "$WORK/rest2"
alerts2() {
    cat "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null | grep '"ssh.bruteforce.alert"' |
        grep -c '"HOST":"victim2"'
}
has_alert2() {
    [ "$(alerts2)" -ge 1 ]
}
wait_until has_alert2 || fail "no brute force alert on victim2 after the stop"
wait_balanced "$LAST" || fail "node $LAST did not take every partition"
[ "$(alerts2)" -eq 1 ] || fail "$(alerts2) brute force alerts on victim2, not 1"
grep '"HOST":"victim2"' "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null |
    grep -q '"corral.count":"5"' || fail "victim2's alert does not count 5"
wait_until has_delivered victim2 || fail "victim2's alert did not reach the exec script"
wait_until quiet "$LAST" || fail "alerts still in flight"
[ "$(delivered_to victim2)" -eq 1 ] || fail "the exec script ran $(delivered_to victim2) times"
as_node "$LAST" stop_corrald
echo "ok: handoff at the stop of node $OWNER2, one alert with count 5"
