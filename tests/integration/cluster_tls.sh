#!/bin/sh
# The cluster over TLS: three nats-server processes whose client ports
# require TLS and verify client certificates (signed by the test CA), and
# corrald nodes that connect with tls:// URLs, ca=, cert= and key=.  Two
# nodes share the partitions and a brute force sent to one of them gives
# one alert, delivered once to an exec script.  A node without a client
# certificate, and a node that trusts another CA than the one that signed
# the servers' certificate, are refused: corrald says why and exits 1.
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
. "$(dirname "$0")/tls_lib.sh"

make_ca ca
make_ca other
make_cert server ca 127.0.0.1 IP:127.0.0.1
make_cert client ca corrald
NATS_TLS="cert_file: \"$PKI/server.pem\", key_file: \"$PKI/server.key\",
  ca_file: \"$PKI/ca.pem\", verify: true"

RULES=$top_srcdir/rules/sshd.xml
record_script CORRAL_CORRAL_EVENT CORRAL_USRACCT_DEVICE
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'

start_nats
case $NATS_URLS in tls://*) ;; *) fail "the servers' URLs are not tls://: $NATS_URLS" ;; esac

# no client certificate: the servers verify one
CLUSTER_ATTRS="ca=\"$PKI/ca.pem\""
node_refused nocert 'cluster: cannot connect to NATS.*(TLS: .*alert \(bad certificate\|certificate required\))'
# the servers' certificate is not signed by the CA the node trusts
CLUSTER_ATTRS="ca=\"$PKI/other.pem\" cert=\"$PKI/client.pem\" key=\"$PKI/client.key\""
node_refused wrongca 'cluster: cannot connect to NATS.*SSL handshake error: .*unable to get local issuer certificate'

CLUSTER_ATTRS="ca=\"$PKI/ca.pem\" cert=\"$PKI/client.pem\" key=\"$PKI/client.key\""
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
wait_balanced 1 2 || fail "the partitions were not shared out over TLS"
echo "ok: two nodes share the partitions over TLS"

bruteforce_once 1 2
echo "ok: one alert over TLS, delivered once"
