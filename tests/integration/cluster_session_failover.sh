#!/bin/sh
# Failover of an open SSH session: three corrald nodes over three clustered
# nats-server processes, the shipped rules/sshd.xml.  A password login and
# its "session opened" line (sent to node a) open the session's context on
# the node that owns the host's partition; the owner writes a checkpoint and
# is killed (kill -9); the session's close, 600 s after the login by the
# lines' stamps, is sent to another node.  The partition's lease expires, a
# surviving node takes it, loads the checkpoint, replays the stream after
# it, and the session report (corral.sshd.session.closed's action) is
# generated exactly once, with session.duration 600, and delivered once to
# an exec script (routed by its tag ssh.session, through the cluster's work
# queue).
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
ADDR=192.0.2.44
HOST=shell1

# the session's login, 15 minutes before the test began: its close is stamped 10 minutes later
START=$(($(date +%s) - 900))

# session_lines WHAT: the login and session opened lines (open), stamped $START, or the close,
# stamped $START + 600 (close); one sshd process, [4242]
session_lines() {
    python3 - "$1" "$ADDR" "$HOST" "$START" <<'PY'
import sys, time
def stamp(t):
    return time.strftime("%b %d %H:%M:%S", time.localtime(t)).replace(" 0", "  ", 1)
what, addr, host = sys.argv[1:4]
start = int(sys.argv[4])
if what == "open":
    print("%s %s sshd[4242]: Accepted password for alice from %s port 50522 ssh2"
          % (stamp(start), host, addr))
    print("%s %s sshd[4242]: pam_unix(sshd:session): session opened for user alice(uid=1000) by (uid=0)"
          % (stamp(start), host))
else:
    print("%s %s sshd[4242]: Received disconnect from %s port 50522:11: disconnected by user"
          % (stamp(start + 600), host, addr))
    print("%s %s sshd[4242]: pam_unix(sshd:session): session closed for user alice"
          % (stamp(start + 600), host))
PY
}

record_script CORRAL_CORRAL_EVENT CORRAL_HOST CORRAL_USRACCT_USERNAME CORRAL_SESSION_DURATION CORRAL_CORRAL_CLUSTER_ID
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="ssh.session" to="record"/></routes>'

start_nats
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
start_node 3 c "$RULES" "$EXEC"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

# owner_has K: node K holds the session's context (its login)
owner_has() {
    as_node "$1" "$CORRAL" ctl -s "$WORK/$(eval echo \$NODE_NAME_$1).sock" contexts | python3 -c '
import json, sys
sys.exit(not any(c["id"] == "ssh-session" and c["host"] == sys.argv[1] and c["pid"] == "4242"
                 and c["messages"] >= 1 for c in json.load(sys.stdin)))' "$HOST"
}
find_owner() {
    for _k in 1 2 3; do
        if owner_has "$_k"; then
            echo "$_k"
            return 0
        fi
    done
    return 1
}

session_lines open > "$WORK/open"
as_node 1 send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/open"
wait_until find_owner || fail "no node holds the session's context"
OWNER=$(find_owner)
# a checkpoint of the partition (the only one with traffic) is written: it covers the login,
# the new owner replays from the stream what it does not cover
as_node "$OWNER" wait_metric corral_cluster_checkpoints_total -ge 1 || fail "no checkpoint"
as_node "$OWNER" kill_corrald
echo "killed the owner, node $OWNER"

case $OWNER in
1) REST="2 3" ;;
2) REST="1 3" ;;
3) REST="1 2" ;;
esac
OTHER=${REST%% *}
session_lines close > "$WORK/close"
as_node "$OTHER" send_tcp_file "$(as_node "$OTHER" input_port tcp)" "$WORK/close"

reports() {
    cat "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null | grep -c '"ssh.session.closed"'
}
has_report() {
    [ "$(reports)" -ge 1 ]
}
wait_until has_report || fail "no session report after the failover"
wait_balanced $REST || fail "the survivors did not take every partition"
# closed_everywhere: no survivor holds the session's context any longer (the close's 1 s
# timeout ran out: whatever its end would report is reported)
closed_everywhere() {
    for _k in $REST; do
        ! owner_has "$_k" || return 1
    done
}
wait_until closed_everywhere || fail "the session's context did not end"
cat "$WORK"/a.json "$WORK"/b.json "$WORK"/c.json 2>/dev/null | python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin if "ssh.session.closed" in l or "ssh.session.timeout" in l]
assert len(r) == 1, r
r = r[0]
assert r["corral.event"] == "ssh.session.closed", r
assert r["session.duration"] == "600", r
assert r["usracct.username"] == "alice", r
assert r["usracct.device"] == "'"$ADDR"'", r
assert r["usracct.sessionid"] == "4242", r
assert r["HOST"] == "'"$HOST"'", r
assert r.get("corral.cluster_id"), r
print("report:", r["MESSAGE"], r["session.duration"], r["corral.cluster_id"])' ||
    fail "not exactly one session report, with duration 600"

delivered() {
    count_matching "$WORK/delivered" "^ssh.session"
}
has_delivered() {
    [ "$(delivered)" -ge 1 ]
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
wait_until has_delivered || fail "the session report did not reach the exec script"
wait_until quiet $REST || fail "reports still in flight"
[ "$(delivered)" -eq 1 ] || fail "the exec script ran $(delivered) times: $(cat "$WORK/delivered")"
grep -q "^ssh.session.closed $HOST alice 600 corraltest/" "$WORK/delivered" ||
    fail "the exec script did not get the report with duration 600: $(cat "$WORK/delivered")"
for _k in $REST; do as_node "$_k" stop_corrald; done
echo "ok: failover of node $OWNER, one session report of 600 s, delivered once"
