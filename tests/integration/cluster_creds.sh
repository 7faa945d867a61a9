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
record_script CORRAL_CORRAL_EVENT CORRAL_USRACCT_DEVICE
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'

start_nats
grep -q 'Operator: "corraltest"' "$WORK/nats1.log" || fail "nats-server 1 does not trust the operator"

# a user of an account the servers were not given
CLUSTER_LOGIN="creds=\"$WORK/jwt/stranger.creds\""
node_refused stranger 'cluster: cannot connect to NATS.*[Aa]uthorization [Vv]iolation'
# a file that is not a credentials file
echo "not a credentials file" > "$WORK/bad.creds"
CLUSTER_LOGIN="creds=\"$WORK/bad.creds\""
node_refused badcreds 'cluster.*bad.creds'

CLUSTER_LOGIN="creds=\"$WORK/jwt/corral.creds\""
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
wait_balanced 1 2 || fail "the partitions were not shared out with the credentials"
echo "ok: two nodes share the partitions, logged in with a credentials file"

bruteforce_once 1 2
echo "ok: one alert with credentials, delivered once"
