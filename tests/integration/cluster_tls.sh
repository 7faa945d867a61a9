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
cat > "$WORK/record.sh" <<SH
#!/bin/sh
printf '%s %s\n' "\$CORRAL_CORRAL_EVENT" "\$CORRAL_USRACCT_DEVICE" >> "$WORK/delivered"
SH
chmod 755 "$WORK/record.sh"
EXEC='<executors><exec name="record" program="'"$WORK/record.sh"'"/></executors>
  <routes><route tag="corral.alert" to="record"/></routes>'

start_nats
case $NATS_URLS in tls://*) ;; *) fail "the servers' URLs are not tls://: $NATS_URLS" ;; esac

# refused NODE WHY: corrald node NODE, with $CLUSTER_ATTRS, exits 1 at start
# and its log says WHY
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

# no client certificate: the servers verify one
CLUSTER_ATTRS="ca=\"$PKI/ca.pem\""
refused nocert 'cluster: cannot connect to NATS.*(TLS: .*alert \(bad certificate\|certificate required\))'
# the servers' certificate is not signed by the CA the node trusts
CLUSTER_ATTRS="ca=\"$PKI/other.pem\" cert=\"$PKI/client.pem\" key=\"$PKI/client.key\""
refused wrongca 'cluster: cannot connect to NATS.*SSL handshake error: .*unable to get local issuer certificate'

CLUSTER_ATTRS="ca=\"$PKI/ca.pem\" cert=\"$PKI/client.pem\" key=\"$PKI/client.key\""
start_node 1 a "$RULES" "$EXEC"
start_node 2 b "$RULES" "$EXEC"
wait_balanced 1 2 || fail "the partitions were not shared out over TLS"
echo "ok: two nodes share the partitions over TLS"

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
echo "ok: one alert over TLS, delivered once"
