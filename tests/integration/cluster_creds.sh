#!/bin/sh
# The cluster with NATS decentralized authentication: three nats-server
# processes that trust an operator (its JWT, and a resolver preloaded with
# the accounts it signed), and corrald nodes that log in with a user's
# credentials file (creds=: the user's JWT and nkey seed, as nsc writes
# it; tests/integration/nats_jwt.py makes them).  Two nodes share the
# partitions and a brute force sent to one of them gives one alert,
# delivered once to an exec script.  A node with the credentials of an
# account the servers do not know, and a node whose credentials file does
# not read, are refused: corrald says why and exits 1.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"

python3 -c 'import cryptography.hazmat.primitives.asymmetric.ed25519' 2> /dev/null ||
    skip "python3-cryptography is not installed"
python3 "$(dirname "$0")/nats_jwt.py" "$WORK/jwt" > "$WORK/nats-auth.conf" ||
    fail "nats_jwt.py did not make the operator, accounts and users"
NATS_AUTH=$(cat "$WORK/nats-auth.conf")

RULES=$top_srcdir/rules/sshd.xml
cat > "$WORK/record.sh" <<SH
#!/bin/sh
printf '%s %s\n' "\$CORRAL_CORRAL_EVENT" "\$CORRAL_USRACCT_DEVICE" >> "$WORK/delivered"
SH
chmod 755 "$WORK/record.sh"
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'

start_nats
grep -q 'Operator: "corraltest"' "$WORK/nats1.log" || fail "nats-server 1 does not trust the operator"

# refused NODE WHY: corrald node NODE, with $CLUSTER_LOGIN, exits 1 at start and its log says WHY
refused() {
    cluster_conf "$WORK/$1.conf" "$1" "$RULES"
    "$CORRALD" -F -f "$WORK/$1.conf" --schema "$SCHEMA" < /dev/null > "$WORK/$1.out" \
        2>> "$WORK/$1.log" &
    _pid=$!
    track "$_pid"
    wait_exit "$_pid"
    _st=$?
    [ "$_st" -ne 255 ] || fail "node $1 did not exit"
    [ "$_st" -eq 1 ] || fail "node $1 exited with $_st, not 1"
    grep -q "$2" "$WORK/$1.log" || fail "node $1 did not say why it was refused ($2)"
    ! grep -q ']: started$' "$WORK/$1.log" || fail "node $1 started"
    echo "ok: node $1 refused: $(grep -m 1 "$2" "$WORK/$1.log")"
}

# a user of an account the servers were not given
CLUSTER_LOGIN="creds=\"$WORK/jwt/stranger.creds\""
refused stranger 'cluster: cannot connect to NATS.*[Aa]uthorization [Vv]iolation'
# a credentials file with no JWT in it
echo "not a credentials file" > "$WORK/bad.creds"
CLUSTER_LOGIN="creds=\"$WORK/bad.creds\""
refused badcreds 'cluster.*bad.creds'

CLUSTER_LOGIN="creds=\"$WORK/jwt/corral.creds\""
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
wait_balanced 1 2 || fail "the partitions were not shared out with the credentials"
echo "ok: two nodes share the partitions, logged in with a credentials file"

delivered() {
    count_matching "$WORK/delivered" '^ssh.bruteforce.alert '
}
acked() {
    [ "$(($(node_metric 1 corral_cluster_alerts_acked_total) + \
        $(node_metric 2 corral_cluster_alerts_acked_total)))" -ge 1 ]
}
stamp=$(date '+%b %e %H:%M:%S')
for i in 1 2 3 4 5; do
    echo "$stamp web1 sshd[100$i]: Failed password for root from 198.51.100.7 port 4000$i ssh2"
done > "$WORK/failures"
send_tcp_file "$(as_node 1 input_port tcp)" "$WORK/failures"
delivered_once() {
    [ "$(delivered)" -ge 1 ]
}
wait_until delivered_once || fail "the alert was not delivered"
wait_until acked || fail "the delivered alert was not acknowledged"
[ "$(delivered)" -eq 1 ] || fail "the alert was delivered $(delivered) times: $(cat "$WORK/delivered")"
echo "ok: one alert with credentials, delivered once"
