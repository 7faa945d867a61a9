#!/bin/sh
# Fencing: the node that owns a brute force's partition is stopped (SIGSTOP)
# after 4 of the 5 failures, past its lease; the other two take its
# partitions over, and the 5th failure, sent to one of them, gives the one
# alert (count 5).  When the stopped node goes on (SIGCONT), its leases are
# no longer valid: it emits nothing from its stale state (the 5th failure
# reaches it through its old subscription at most to be fenced), finds its
# leases taken, and rejoins: the three share the partitions again.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
ADDR=198.51.100.9

fail_lines() {
    python3 - "$1" "$2" "$ADDR" <<'PY'
import sys, time
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
for k in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
    print("%s victim sshd[%d]: Failed password for root from %s port %d ssh2"
          % (stamp, 700 + k, sys.argv[3], 40000 + k))
PY
}

start_nats
start_node 1 a "$RULES"
start_node 2 b "$RULES"
start_node 3 c "$RULES"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

owner_has() {
    as_node "$2" "$CORRAL" ctl -s "$WORK/$(eval echo \$NODE_NAME_$2).sock" contexts | python3 -c '
import json, sys
sys.exit(not any(c["id"] == "ssh-bruteforce-'"$ADDR"'" and c["messages"] == int(sys.argv[1])
                 for c in json.load(sys.stdin)))' "$1"
}
find_owner() {
    for _k in 1 2 3; do
        if owner_has 4 "$_k"; then
            echo "$_k"
            return 0
        fi
    done
    return 1
}

fail_lines 1 4 > "$WORK/first"
as_node 1 send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/first"
wait_until find_owner || fail "no node holds the brute force's context"
OWNER=$(find_owner)
eval "OWNER_PID=\$NODE_PID_$OWNER OWNER_NAME=\$NODE_NAME_$OWNER"
kill -STOP "$OWNER_PID"
echo "stopped the owner, node $OWNER"
case $OWNER in
1) REST="2 3" ;;
2) REST="1 3" ;;
3) REST="1 2" ;;
esac
OTHER=${REST%% *}
wait_balanced $REST || { kill -CONT "$OWNER_PID"; fail "the others did not take over"; }
fail_lines 5 5 > "$WORK/last"
as_node "$OTHER" send_tcp_file "$(as_node "$OTHER" input_port tcp)" "$WORK/last"

alerts() {
    cat "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null | grep -c '"ssh.bruteforce.alert"'
}
has_alert() {
    [ "$(alerts)" -ge 1 ]
}
wait_until has_alert || { kill -CONT "$OWNER_PID"; fail "no alert from the new owner"; }

kill -CONT "$OWNER_PID"
# it finds its leases lost, and rejoins
as_node "$OWNER" wait_log "cluster: partition .* lost" || fail "the stopped node kept its leases"
wait_balanced 1 2 3 || fail "the stopped node did not rejoin"
[ "$(alerts)" -eq 1 ] || fail "$(alerts) brute force alerts, not 1"
! grep -q '"ssh.bruteforce.alert"' "$WORK/$OWNER_NAME.json" 2>/dev/null ||
    fail "the stopped node emitted the alert from its stale state"
grep -h '"ssh.bruteforce.alert"' "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null |
    grep -q '"corral.count":"5"' || fail "the alert does not count 5"
echo "fenced on node $OWNER: $(node_metric "$OWNER" corral_cluster_fenced_total)"
for k in 3 2 1; do as_node "$k" stop_corrald; done
echo "ok: node $OWNER stopped past its lease emitted nothing stale and rejoined; one alert"
