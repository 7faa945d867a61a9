#!/bin/sh
# The alert store of a cluster, and its view: three NATS servers, three
# corrald nodes.
#   - An alert raised on the partition that node O owns is listed by
#     GET /api/v2/alerts of the two other nodes; its clear, sent to another
#     node, resolves it on O, and the resolution reaches every node; O's
#     delivery of it is in the others' notification history.  An alert
#     resolved by hand on a node that does not own it is resolved on every
#     node.
#   - An inhibition source firing on one node inhibits a target raised on
#     another node (the target's owner knows the source from the bucket).
#   - GET /api/v1/cluster of node 3 names an owner, a live node, for every
#     partition, and `corral ctl cluster` says the same, node 2's
#     Alertmanager status (GET /api/v2/status) has the cluster ready with its
#     three peers; the status page has
#     its cluster section (in headless Chromium too, when installed).  Node
#     1 killed (-9): the view shows it gone, owning nothing, and its
#     partitions owned by the others.  Started again, node 1 lists the
#     cluster's alerts (the bucket is the store) and is back in the view.
# A host's lines go to one partition (every rule keys its context by host):
# a "hello" line opens a context there, which finds the partition's owner.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
need python3 curl

receiver_script
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$WORK/token"
chmod 600 "$WORK/token"
cat > "$WORK/rules.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-06">
  <ruleset name="svc" id="cl-svc"><patterns><pattern>svc</pattern></patterns><rules>
    <rule provider="test" id="cl.hello" class="system" context-id="host" context-timeout="3600"
          context-scope="host">
      <patterns><pattern>hello</pattern></patterns>
    </rule>
    <rule provider="test" id="cl.down" class="system" context-id="host" context-timeout="3600"
          context-scope="host">
      <patterns><pattern>service @ESTRING:svc: @down</pattern></patterns>
      <actions><action><message>
        <values>
          <value name="svc">${svc}@1</value>
          <value name="corral.alert_id">down/${HOST}@1/${svc}@1</value>
          <value name="corral.event">svc.down</value>
          <value name="corral.severity">critical</value>
          <value name="corral.summary">${svc}@1 down on ${HOST}@1</value>
        </values>
        <tags><tag>corral.alert</tag></tags>
      </message></action></actions>
    </rule>
    <rule provider="test" id="cl.up" class="system" context-id="host" context-timeout="3600"
          context-scope="host">
      <patterns><pattern>service @ESTRING:svc: @up</pattern></patterns>
      <actions><action><message>
        <values>
          <value name="svc">${svc}@1</value>
          <value name="corral.alert_id">down/${HOST}@1/${svc}@1</value>
          <value name="corral.event">svc.up</value>
          <value name="corral.severity">clear</value>
          <value name="corral.summary">${svc}@1 up on ${HOST}@1</value>
        </values>
        <tags><tag>corral.alert</tag><tag>corral.clear</tag></tags>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML

extra() {
    echo "<inhibit source=\"svc=db\" target=\"svc=web\" equal=\"class\"/>
  <executors spool=\"$WORK/$1-spool\"><exec name=\"runner\" program=\"$WORK/receiver.sh\"/></executors>
  <routes><route tag=\"corral.alert\" to=\"runner\"/></routes>
  <stats listen=\"127.0.0.1:0\" api-token-file=\"$WORK/token\"/>"
}

# send I HOST TEXT: one line of program svc on HOST to node I
send() {
    python3 - "$2" "$3" > "$WORK/lines" <<'PY'
import sys, time
stamp = time.strftime("%b %d %H:%M:%S").replace(" 0", "  ", 1)
print("%s %s svc[1]: %s" % (stamp, sys.argv[1], sys.argv[2]))
PY
    as_node "$1" send_tcp_file "$(as_node "$1" input_port tcp)" "$WORK/lines"
}
url() {
    echo "http://127.0.0.1:$(as_node "$1" stats_port)$2"
}
get() {
    curl -sf -H "Authorization: Bearer $(cat "$WORK/token")" "$(url "$1" "$2")"
}
# has_context I HOST: node I holds HOST's context (it owns HOST's partition)
has_context() {
    "$CORRAL" ctl -s "$WORK/$(eval echo \$NODE_NAME_$1).sock" contexts | python3 -c '
import json, sys
sys.exit(not any(c["host"] == sys.argv[1] for c in json.load(sys.stdin)))' "$2"
}
owner_of() {
    for _k in 1 2 3; do
        if has_context "$_k" "$1"; then
            echo "$_k"
            return 0
        fi
    done
    return 1
}
# owner HOST: says hello from HOST, and the node that owns its partition
owner() {
    send 1 "$1" hello
    wait_until owner_of "$1" > /dev/null || fail "no node holds $1's context"
    owner_of "$1"
}
# api_state I HOST SVC: the state of HOST's SVC alert in node I's /api/v2/alerts ("": none)
api_state() {
    get "$1" /api/v2/alerts | python3 -c '
import json, sys
for a in json.load(sys.stdin):
    l = a["labels"]
    if l.get("HOST") == sys.argv[1] and l.get("svc") == sys.argv[2]:
        st = a["status"]
        print(st["state"] + ("/inhibited" if st["inhibitedBy"] else ""))' "$2" "$3"
}
state_is() {
    [ "$(api_state "$1" "$2" "$3")" = "$4" ]
}
# resolved_on I HOST SVC: node I's store has HOST's SVC alert, resolved
resolved_on() {
    "$CORRAL" alerts -s "$WORK/$(eval echo \$NODE_NAME_$1).sock" --json 2> /dev/null |
        python3 -c '
import json, sys
sys.exit(not any(a["id"] == sys.argv[1] and a["state"] == "resolved" for a in json.load(sys.stdin)))' \
            "down/$2/$3"
}
# delivered_on I HOST SVC: node I's store has a delivered notification of HOST's SVC alert
delivered_on() {
    "$CORRAL" alerts -s "$WORK/$(eval echo \$NODE_NAME_$1).sock" --json 2> /dev/null |
        python3 -c '
import json, sys
sys.exit(not any(a["id"] == sys.argv[1] and
                 any(n["outcome"] == "delivered" for n in a.get("notifications", []))
                 for a in json.load(sys.stdin)))' "down/$2/$3"
}
others() {
    case $1 in
    1) echo "2 3" ;;
    2) echo "1 3" ;;
    3) echo "1 2" ;;
    esac
}

start_nats
start_node 1 a "$WORK/rules.xml" "$(extra a)"
start_node 2 b "$WORK/rules.xml" "$(extra b)"
start_node 3 c "$WORK/rules.xml" "$(extra c)"
wait_balanced 1 2 3 || fail "the partitions were not shared out"

# ---- raised on its owner, listed by the others; resolved there, resolved everywhere
O=$(owner web1)
send "$O" web1 "service web down"
wait_until state_is "$O" web1 web active || fail "node $O (the owner) does not list web1's alert"
t0=$(date +%s%N)
for k in $(others "$O"); do
    wait_until state_is "$k" web1 web active ||
        fail "node $k does not list the alert raised on node $O (it lists: $(get "$k" /api/v2/alerts))"
done
node_metric "$(others "$O" | cut -d' ' -f1)" corral_cluster_store_applied_total |
    grep -qx '[1-9][0-9]*' || fail "the alert merged is not counted"
# for the record, not asserted: polled every 0.1 s, each poll a curl and a python3
echo "web1's alert raised on node $O is listed by nodes $(others "$O")" \
    "$(( ($(date +%s%N) - t0) / 1000000 )) ms after node $O listed it"
for k in $(others "$O"); do
    wait_until delivered_on "$k" web1 web ||
        fail "node $k does not have the delivery of web1's alert on node $O in its history"
done
echo "its delivery by node $O is in the notification history of nodes $(others "$O")"
C=$(others "$O" | cut -d' ' -f2)
send "$C" web1 "service web up"
wait_until resolved_on "$O" web1 web || fail "the clear did not resolve the alert on node $O"
for k in $(others "$O"); do
    wait_until resolved_on "$k" web1 web || fail "the resolution on node $O did not reach node $k"
    [ -z "$(api_state "$k" web1 web)" ] || fail "node $k's API still lists the resolved alert"
done
echo "its resolution on node $O reached nodes $(others "$O")"
# resolved by hand on another node: resolved on its owner too, and everywhere
send "$O" web1 "service mail down"
for k in 1 2 3; do
    wait_until state_is "$k" web1 mail active || fail "node $k does not list web1's mail alert"
done
"$CORRAL" alerts -s "$WORK/$(eval echo \$NODE_NAME_$C).sock" resolve down/web1/mail ||
    fail "corral alerts resolve on node $C"
for k in 1 2 3; do
    wait_until resolved_on "$k" web1 mail || fail "the resolution by hand on node $C did not reach node $k"
done
echo "resolved by hand on node $C, resolved on nodes 1, 2 and 3"

# ---- a source on one node inhibits a target on another
S=$(owner gw)
T=
i=0
while [ $i -lt 30 ]; do
    i=$((i + 1))
    T=$(owner "app$i")
    [ "$T" != "$S" ] && break
done
[ "$T" != "$S" ] || fail "no host of 30 went to another node than node $S"
send "$S" gw "service db down"
wait_until state_is "$T" gw db active || fail "node $T does not know the source firing on node $S"
send "$T" "app$i" "service web down"
wait_until state_is "$T" "app$i" web suppressed/inhibited ||
    fail "the target on node $T is not inhibited by the source on node $S: $(api_state "$T" "app$i" web)"
wait_until state_is "$S" "app$i" web suppressed/inhibited ||
    fail "node $S does not list the target inhibited"
echo "db down on node $S inhibits app$i's web alert on node $T"

# ---- the view: every partition's owner, from node 3; node 1 killed, the view changes
# view_ok DEAD: node 3's view has every partition owned by a live node, DEAD (if any) gone
view_ok() {
    get 3 /api/v1/cluster > "$WORK/view.json" || return 1
    python3 - "$WORK/view.json" "${1:-}" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["data"]
dead = sys.argv[2]
alive = {n["name"] for n in v["nodes"] if n["alive"]}
owned = {n["name"]: n["partitions"] for n in v["nodes"]}
assert v["node"] == "c" and v["partitions"] == 16 and len(v["owners"]) == 16
assert all(o in alive for o in v["owners"]), v["owners"]
assert alive == {"a", "b", "c"} - {dead}, alive
for p, o in enumerate(v["owners"]):
    assert p in owned[o]
if dead:
    assert owned.get(dead, []) == [], owned
PY
}
wait_until view_ok || fail "node 3's view does not name a live owner for every partition: $(cat "$WORK/view.json")"
get 2 /api/v2/status | python3 -c '
import json, sys
c = json.load(sys.stdin)["cluster"]
assert c["name"] == "b" and c["status"] == "ready", c
assert sorted(p["name"] for p in c["peers"]) == ["a", "b", "c"], c' ||
    fail "node 2's Alertmanager status does not show the cluster ready with its three peers"
"$CORRAL" ctl -s "$WORK/c.sock" cluster | python3 -c '
import json, sys
v = json.load(sys.stdin)
assert len(v["owners"]) == 16 and None not in v["owners"]' || fail "corral ctl cluster"
get 3 / > "$WORK/page.html" || fail "no status page"
grep -q '<section id="cluster"><h2>Cluster</h2>' "$WORK/page.html" || fail "the page has no cluster section"
for n in a b c; do
    grep -q "<td class=\"name\">$n" "$WORK/page.html" || fail "the page's cluster section lacks node $n"
done
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then
    HOME=$WORK timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$WORK/chromium.XXXXXX")" --dump-dom "$(url 3 /)" \
        > "$WORK/dom.html" 2>> "$WORK/chromium.err" || fail "chromium --dump-dom"
    grep -q 'tr class="node alive"' "$WORK/dom.html" || fail "the rendered page has no cluster rows"
fi
echo "node 3's view names a live owner for each of the 16 partitions"
as_node 1 kill_corrald
wait_until view_ok a || fail "node 3's view after node a was killed: $(cat "$WORK/view.json")"
echo "after node a was killed, node 3's view shows it gone and its partitions owned by b and c"
# started again, node 1 lists the cluster's alerts (read from the bucket) and rejoins the view
start_node 1 a "$WORK/rules.xml" "$(extra a)"
wait_until state_is 1 gw db active || fail "node 1, started again, does not list gw's db alert"
wait_until state_is 1 "app$i" web suppressed/inhibited ||
    fail "node 1, started again, does not list app$i's alert inhibited"
wait_until view_ok || fail "node 3's view after node a came back: $(cat "$WORK/view.json")"
echo "node a started again lists the cluster's alerts and is back in node 3's view"
as_node 1 stop_corrald
as_node 2 stop_corrald
as_node 3 stop_corrald
echo "ok"
