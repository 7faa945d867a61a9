#!/bin/sh
# Silences in a cluster: they live in the cluster's state bucket and every
# node applies every change.  A brute force's first 4 failures find the node
# that owns its partition; a silence for its host added on another node (A)
# reaches the owner (its corral_silences_active), and the 5th failure's
# alert is silenced there, not delivered.  All three corrald nodes are
# stopped and started again: each lists the silence at once (the bucket is
# the store, no node has a silences file).  Its comment changed through the
# Alertmanager API of node 3 shows on node 1.  A second brute force is silenced
# by it wherever it is owned; the silence expired on a node (C) that does
# not own it releases that alert on its owner: the exec script delivers it.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3

RULES=$top_srcdir/rules/sshd.xml
receiver_script
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$WORK/token"
chmod 600 "$WORK/token"

# fail_lines FROM TO ADDRESS: failed logins FROM..TO on host victim from ADDRESS
fail_lines() {
    python3 - "$1" "$2" "$3" <<'PY'
import sys, time
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
for k in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
    print("%s victim sshd[%d]: Failed password for root from %s port %d ssh2"
          % (stamp, 700 + k, sys.argv[3], 40000 + k))
PY
}
# send I FROM TO ADDRESS: those lines to node I
send() {
    fail_lines "$2" "$3" "$4" > "$WORK/lines"
    as_node "$1" send_tcp_file "$(as_node "$1" input_port tcp)" "$WORK/lines"
}
extra() {
    echo "<executors spool=\"$WORK/$1-spool\"><exec name=\"runner\" program=\"$WORK/receiver.sh\"/></executors>
  <routes><route class=\"violation\" to=\"runner\"/></routes>
  <stats listen=\"127.0.0.1:0\" api-token-file=\"$WORK/token\"/>"
}
start_all() {
    start_node 1 a "$RULES" "$(extra a)"
    start_node 2 b "$RULES" "$(extra b)"
    start_node 3 c "$RULES" "$(extra c)"
}
sil() {
    _k=$1
    shift
    "$CORRAL" silence -s "$WORK/$(eval echo \$NODE_NAME_$_k).sock" "$@"
}
owner_has() {
    "$CORRAL" ctl -s "$WORK/$(eval echo \$NODE_NAME_$3).sock" contexts | python3 -c '
import json, sys
sys.exit(not any(c["id"] == "ssh-bruteforce-" + sys.argv[2] and c["messages"] == int(sys.argv[1])
                 for c in json.load(sys.stdin)))' "$1" "$2"
}
# find_owner ADDRESS: the node holding ADDRESS's brute force context with 4 failures
find_owner() {
    for _k in 1 2 3; do
        if owner_has 4 "$1" "$_k"; then
            echo "$_k"
            return 0
        fi
    done
    return 1
}
others() {
    case $1 in
    1) echo "2 3" ;;
    2) echo "1 3" ;;
    3) echo "1 2" ;;
    esac
}
active_on() {
    [ "$(node_metric "$1" corral_silences_active)" = "$2" ]
}
delivered() {
    [ -f "$WORK/delivered" ] && wc -l < "$WORK/delivered" || echo 0
}
# silenced_on I: node I has silenced an alert (a function: wait_until calls it anew each time)
silenced_on() {
    [ "$(node_metric "$1" corral_alerts_silenced_total)" -ge 1 ]
}
some_delivered() {
    [ "$(delivered)" -ge 1 ]
}

start_nats
start_all
wait_balanced 1 2 3 || fail "the partitions were not shared out"

# ---- added on A, it mutes the alert on B, the owner
send 1 1 4 198.51.100.21
wait_until find_owner 198.51.100.21 || fail "no node holds the first brute force's context"
B=$(find_owner 198.51.100.21)
A=$(others "$B" | cut -d' ' -f1)
id=$(sil "$A" add HOST=victim --duration 1h --comment "maintenance" --author tester) ||
    fail "silence add on node $A failed"
t0=$(date +%s%N)
wait_until active_on "$B" 1 || fail "the silence added on node $A is not active on node $B"
# for the record, not asserted: polled every 0.1 s, each poll a `corral` process
echo "active on node $B $(( ($(date +%s%N) - t0) / 1000000 )) ms after node $A answered"
node_metric "$B" corral_cluster_silences_applied_total | grep -qx '[1-9][0-9]*' ||
    fail "node $B did not count the silence applied"
send "$B" 5 5 198.51.100.21
wait_until silenced_on "$B" ||
    fail "node $B did not silence the alert"
"$CORRAL" alerts -s "$WORK/$(eval echo \$NODE_NAME_$B).sock" | grep victim | grep -q "silenced.*$id" ||
    fail "node $B does not show the alert silenced by $id"
echo "silence $id added on node $A muted the alert on node $B"

# ---- every node restarted: the silence is still there, on each
for k in 3 2 1; do as_node "$k" stop_corrald; done
start_all
for k in 1 2 3; do
    sil "$k" list | grep -q "$id" || fail "node $k lost the silence in the restart"
    active_on "$k" 1 || fail "the silence is not active on node $k after the restart"
done
wait_balanced 1 2 3 || fail "the partitions were not shared out after the restart"

# ---- updated in place through node 3's API: node 1 has the new comment
python3 - "http://127.0.0.1:$(as_node 3 stats_port)" "$(cat "$WORK/token")" "$id" <<'PY' ||
import json, sys, urllib.request
url, token, sid = sys.argv[1:]
auth = {"Authorization": "Bearer " + token}
s = json.load(urllib.request.urlopen(urllib.request.Request(url + "/api/v2/silence/" + sid, headers=auth)))
s = {k: s[k] for k in ("id", "matchers", "startsAt", "endsAt", "createdBy")}
s["comment"] = "maintenance, longer"
req = urllib.request.Request(url + "/api/v2/silences", json.dumps(s).encode(),
                             dict(auth, **{"Content-Type": "application/json"}))
assert json.load(urllib.request.urlopen(req))["silenceID"] == sid
PY
    fail "updating the silence through node 3's API failed"
commented() {
    sil 1 list --json | grep -q "maintenance, longer"
}
wait_until commented || fail "the update made through node 3's API did not reach node 1"

# ---- a second brute force, silenced on its owner; expired on C, it is released there
send 1 1 4 198.51.100.22
wait_until find_owner 198.51.100.22 || fail "no node holds the second brute force's context"
O=$(find_owner 198.51.100.22)
send "$O" 5 5 198.51.100.22
wait_until silenced_on "$O" ||
    fail "node $O did not silence the second alert after the restart"
[ "$(delivered)" -eq 0 ] || fail "a silenced alert was delivered"
C=$(others "$O" | cut -d' ' -f2)
sil "$C" expire "$id" || fail "silence expire on node $C failed"
wait_until active_on "$O" 0 || fail "the expiry on node $C did not reach node $O"
wait_until some_delivered || fail "the alert on node $O was not released by the expiry"
sil "$O" list --expired | grep "$id" | grep -q expired || fail "node $O does not list it expired"
for k in 3 2 1; do as_node "$k" stop_corrald; done
echo "ok: added on node $A, muted on node $B, survived a restart of all nodes, expired on node $C, released on node $O"
