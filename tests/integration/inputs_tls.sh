#!/bin/sh
# inputs_tls: corrald's TLS input (RFC 5425) with real TLS clients, and bad ones.
#
# A throwaway CA signs corrald's certificate and the clients'; another CA
# signs an impostor's.  Two inputs: "tls" (verify="required",
# allowed-names="*.example.com") and "tls-opt" (verify="optional").
#
#   (a) syslog-ng 3.38 with a client certificate sends 20 messages twice,
#       with syslog() (RFC 5425, octet counting) and network() (lines), both
#       transport "tls": all arrive classified, with the client
#       certificate's name in .tls.peer_name; so do a python client's
#       frames, and its lines (the last one unterminated, delivered at close).
#   (b) refused, counted by reason, their messages never delivered: no
#       client certificate; a certificate of the CA whose name is not
#       allowed; a certificate of another CA.  tls-opt takes a client
#       without a certificate (no .tls.peer_name).
#   (c) plain syslog bytes to the TLS port: a protocol failure, counted;
#       40 connections that send half a ClientHello and wait, beyond
#       max-connections (30): the oldest are closed (evicted), they do not
#       hold up another client, and unfinished handshakes are counted.
#   (d) a new certificate and SIGHUP: new connections get it (serial seen
#       by openssl s_client); a broken one fails the reload with the
#       configuration's file:line and the old one stays.
#   (e) a private key readable by others: corrald -t, corral check-config
#       and start-up all refuse it, naming the file:line of the input.

. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/tls_lib.sh"
need python3
SYSLOGNG=${SYSLOGNG:-$(command -v syslog-ng || echo /usr/sbin/syslog-ng)}
[ -x "$SYSLOGNG" ] || { echo "$TEST: no syslog-ng, skipped"; exit 77; }
CLIENT="python3 $HERE/tls_client.py"

make_ca ca
make_ca other-ca
make_cert server ca localhost DNS:localhost,IP:127.0.0.1 1001
make_cert client ca client1.example.com DNS:client1.example.com
make_cert stranger ca stranger.example.org DNS:stranger.example.org
make_cert impostor other-ca client2.example.com DNS:client2.example.com
# the renewed server certificate, for (d)
make_cert server2 ca localhost DNS:localhost,IP:127.0.0.1 4242

# the control socket answers the many counter reads quicker than HTTP
CONTROL=$WORK/control.sock
inputs_config "$WORK/corrald.conf" 'idle-timeout="1h" max-connections="30"' "
    <tls listen=\"127.0.0.1:0\" name=\"tls\" cert=\"$PKI/server.pem\" key=\"$PKI/server.key\" ca=\"$PKI/ca.pem\" verify=\"required\" allowed-names=\"*.example.com\"/>
    <tls listen=\"127.0.0.1:0\" name=\"tls-opt\" cert=\"$PKI/server.pem\" key=\"$PKI/server.key\"
         ca=\"$PKI/ca.pem\" verify=\"optional\"/>" "  <control socket=\"$CONTROL\"/>"
TLS_LINE=$(grep -n 'name="tls"' "$WORK/corrald.conf" | cut -d: -f1)
start_corrald corrald "$WORK/corrald.conf"
P=$(input_port tls)
PO=$(input_port tls-opt)

# tls_failures INPUT REASON: corral_tls_handshake_failures_total{input,reason}
tls_failures() {
    metrics_text | awk -v s="corral_tls_handshake_failures_total{input=\"$1\",reason=\"$2\"}" \
        '$1 == s {v = $2} END {print (v == "" ? -1 : v)}'
}
tls_failures_ge() { [ "$(tls_failures "$1" "$2")" -ge "$3" ]; }
# delivered CONN: messages of test connection CONN in the output
delivered() { count_matching "$OUT" "\"test.conn\":\"$1\""; }
delivered_ge() { [ "$(delivered "$1")" -ge "$2" ]; }
line() { echo "<13>Jan  1 00:00:00 testhost inputtest: conn=$1 seq=$2 $3"; }

# ---- (a) syslog-ng as the TLS client
i=0
while [ $i -lt 20 ]; do line 1 $i "from syslog-ng"; i=$((i + 1)); done > "$WORK/sng-in.log"
cat > "$WORK/syslog-ng.conf" <<EOC
@version: 3.38
options { keep-hostname(yes); chain-hostnames(no); use-dns(no); dns-cache(no); stats-freq(0); };
source s { file("$WORK/sng-in.log" follow-freq(1)); };
destination d5425 { syslog("127.0.0.1" port($P) transport("tls")
    tls(ca-file("$PKI/ca.pem") cert-file("$PKI/client.pem") key-file("$PKI/client.key")
        peer-verify(required-trusted))); };
destination dnet { network("127.0.0.1" port($P) transport("tls") persist-name("dnet")
    tls(ca-file("$PKI/ca.pem") cert-file("$PKI/client.pem") key-file("$PKI/client.key")
        peer-verify(required-trusted))); };
log { source(s); destination(d5425); destination(dnet); };
EOC
"$SYSLOGNG" -F -f "$WORK/syslog-ng.conf" --no-caps -R "$WORK/syslog-ng.persist" \
    -p "$WORK/syslog-ng.pid" -c "$WORK/syslog-ng.ctl" >"$WORK/syslog-ng.log" 2>&1 &
track $!
wait_until delivered_ge 1 40 || fail "only $(delivered 1) of 40 messages from syslog-ng"
n=$(grep '"test.conn":"1"' "$OUT" | grep '".classifier.rule_id":"inputtest.seq"' |
    grep -c '"\.tls\.peer_name":"client1\.example\.com"')
[ "$n" -eq 40 ] || fail "$n of 40 syslog-ng messages classified with .tls.peer_name"
# each message once over each connection: RFC 5424 octet-counted (syslog()), and lines (network())
n=$(grep '"test.conn":"1"' "$OUT" | grep -c '"\.SDATA\.meta\.sequenceId"')
[ "$n" -eq 20 ] || fail "$n of 20 messages from syslog-ng's syslog() destination"
seqs=$(sed -n 's/.*"test.conn":"1","test.seq":"\([0-9]*\)".*/\1/p' "$OUT" | sort -n | uniq -c |
    awk '$1 != 2' | wc -l)
[ "$seqs" -eq 0 ] || fail "syslog-ng's messages did not arrive twice each"

r=$($CLIENT "$P" "$PKI/ca.pem" --cert "$PKI/client.pem" --key "$PKI/client.key" \
    "$(line 2 0 python)" "$(line 2 1 python)")
[ "$r" = sent ] || fail "python client with a good certificate: $r"
wait_until delivered_ge 2 2 || fail "python client's messages not delivered"
# lines, the last one unterminated: delivered when the client closes, with its name too
r=$($CLIENT "$P" "$PKI/ca.pem" --cert "$PKI/client.pem" --key "$PKI/client.key" --lines \
    "$(line 10 0 line)" "$(line 10 1 unterminated)")
[ "$r" = sent ] || fail "python client sending lines: $r"
wait_until delivered_ge 10 2 || fail "lines over TLS not delivered"
n=$(grep '"test.conn":"10"' "$OUT" | grep -c '"\.tls\.peer_name":"client1\.example\.com"')
[ "$n" -eq 2 ] || fail "$n of 2 lines with .tls.peer_name"

# ---- (b) refused clients
# (with TLS 1.3 the client may finish its side of the handshake and send
# before it hears it is refused: the counters and the output tell, not it)
$CLIENT "$P" "$PKI/ca.pem" "$(line 3 0 no-cert)" >/dev/null || fail "client without a certificate"
wait_until tls_failures_ge tls no-certificate 1 || fail "missing certificate not counted"
$CLIENT "$P" "$PKI/ca.pem" --cert "$PKI/stranger.pem" --key "$PKI/stranger.key" \
    "$(line 4 0 stranger)" >/dev/null || fail "client whose name is not allowed"
wait_until tls_failures_ge tls name-not-allowed 1 || fail "name not allowed not counted"
$CLIENT "$P" "$PKI/ca.pem" --cert "$PKI/impostor.pem" --key "$PKI/impostor.key" \
    "$(line 5 0 impostor)" >/dev/null || fail "client of another CA"
wait_until tls_failures_ge tls bad-certificate 1 || fail "untrusted certificate not counted"
wait_log "TLS handshake with 127.0.0.1 failed (no-certificate)" || fail "refusal not logged"
# optional: no certificate is fine there
r=$($CLIENT "$PO" "$PKI/ca.pem" "$(line 6 0 optional)")
[ "$r" = sent ] || fail "verify=optional refused a client without a certificate: $r"
wait_until delivered_ge 6 1 || fail "verify=optional: message not delivered"
grep '"test.conn":"6"' "$OUT" | grep -q 'tls\.peer_name' && fail "a peer name without a certificate"

# ---- (c) plain bytes, a half handshake
python3 - "$P" <<'EOF' || fail "plain client"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"<13>Jan  1 00:00:00 testhost inputtest: conn=7 seq=0 plain\n")
s.settimeout(60)
while s.recv(4096):  # corrald answers with an alert, then closes
    pass
EOF
wait_until tls_failures_ge tls protocol 1 || fail "plain bytes not counted as a protocol failure"
closed0=$(tls_failures tls closed)
# 40 connections that begin a handshake and wait, against max-connections 30:
# the limit holds (the idle longest are closed), and a real client gets in
evicted0=$(metric corral_input_evicted_total input=tls)
python3 - "$P" "$WORK/half.done" <<'EOF' &
import os, socket, sys
socks = []
for i in range(40):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01]))  # a ClientHello begins
    socks.append(s)
open(sys.argv[2] + ".tmp", "w").close()
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
socks[-1].recv(1)  # waits until killed
EOF
half=$!
track $half
wait_until test -e "$WORK/half.done" || fail "half handshake client did not start"
wait_metric corral_input_evicted_total input=tls -ge $((evicted0 + 10)) ||
    fail "max-connections did not hold against unfinished handshakes"
[ "$(metric corral_input_connections_active input=tls)" -le 30 ] || fail "more than max-connections open"
r=$($CLIENT "$P" "$PKI/ca.pem" --cert "$PKI/client.pem" --key "$PKI/client.key" "$(line 8 0 beside)")
[ "$r" = sent ] || fail "a half handshake held up another client: $r"
wait_until delivered_ge 8 1 || fail "message beside a half handshake not delivered"
kill "$half"; wait "$half" 2>/dev/null; untrack "$half"
wait_until tls_failures_ge tls closed $((closed0 + 1)) || fail "unfinished handshake not counted"
for c in 3 4 5 7; do
    [ "$(delivered $c)" -eq 0 ] || fail "a refused client's message (conn=$c) was delivered"
done
corrald_alive

# ---- (d) a renewed certificate, then a broken one
[ "$(peer_cert_serial "$P")" = "$(cert_serial "$PKI/server.pem")" ] || fail "serial before reload"
cp "$PKI/server2.pem" "$PKI/server.pem"
cp "$PKI/server2.key" "$PKI/server.key"
kill -HUP "$CORRALD_PID"
wait_log "input tls: certificate and key loaded again" || fail "certificate not reloaded"
[ "$(peer_cert_serial "$P")" = "$(cert_serial "$PKI/server2.pem")" ] || fail "old certificate after reload"
r=$($CLIENT "$P" "$PKI/ca.pem" --cert "$PKI/client.pem" --key "$PKI/client.key" "$(line 9 0 renewed)")
[ "$r" = sent ] || fail "client after the reload: $r"
# a key that does not belong to the certificate: the reload fails, the running one stays
cp "$PKI/client.key" "$PKI/server.key"
kill -HUP "$CORRALD_PID"
wait_log "corrald.conf:$TLS_LINE: input tls: key .* does not belong to the certificate" ||
    fail "broken key not reported with file:line"
[ "$(peer_cert_serial "$P")" = "$(cert_serial "$PKI/server2.pem")" ] || fail "certificate lost by a failed reload"
cp "$PKI/server2.key" "$PKI/server.key"
stop_corrald

# ---- (e) a private key others may read
chmod 644 "$PKI/server.key"
for check in "$CORRALD -t -f" "$CORRAL check-config"; do
    if $check "$WORK/corrald.conf" > "$WORK/check.txt" 2>&1; then
        fail "$check accepted a world-readable key"
    fi
    grep -q "corrald.conf:$TLS_LINE: input tls: key $PKI/server.key: a private key must not be open to others (mode 0644)" "$WORK/check.txt" ||
        fail "$check: $(cat "$WORK/check.txt")"
done
"$CORRALD" -F -f "$WORK/corrald.conf" --schema "$SCHEMA" > /dev/null 2> "$WORK/start.txt" &&
    fail "corrald started with a world-readable key"
grep -q "corrald.conf:$TLS_LINE: input tls: key .*: a private key must not be open to others" "$WORK/start.txt" ||
    fail "start-up: $(cat "$WORK/start.txt")"
chmod 600 "$PKI/server.key"
$CORRALD -t -f "$WORK/corrald.conf" > "$WORK/check.txt" 2>&1 || fail "-t refused a good key: $(cat "$WORK/check.txt")"
echo "inputs_tls: syslog-ng and python over TLS, refusals counted by reason, reload, key mode"
