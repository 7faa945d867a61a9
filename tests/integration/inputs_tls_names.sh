#!/bin/sh
# inputs_tls_names: allowed-names on a <tls> input, checked as RFC 6125 says,
# against the real daemon with certificates made here by openssl.
#
#   (a) allowed-names="web1.example.com": a certificate whose CN is
#       web1.example.com but whose DNS subjectAltName is evil.attacker.net
#       is refused (with a DNS name present the CN is not a name of the
#       certificate); the one with SAN web1.example.com is taken.
#   (b) allowed-names="*.example.com": a certificate for the literal
#       "*.example.com" is refused (it names no host); one for
#       a.example.com is taken; one for a.b.example.com is refused.
#   (c) the refused clients are counted (name-not-allowed) and none of
#       their messages is delivered.
#   (d) corrald -t: allowed-names with verify="optional" is refused (a
#       client without a certificate would come in unchecked), with the
#       input's file:line; verify="optional" alone passes with a warning
#       naming the input's file:line; a pattern "a*.example.com" is refused.

. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/tls_lib.sh"
need python3
CLIENT="python3 $HERE/tls_client.py"

make_ca ca
make_cert server ca localhost DNS:localhost,IP:127.0.0.1
make_cert web1 ca web1.example.com DNS:web1.example.com
make_cert evil ca web1.example.com DNS:evil.attacker.net
make_cert wild ca '*.example.com' 'DNS:*.example.com'
make_cert a ca a.example.com DNS:a.example.com
make_cert deep ca a.b.example.com DNS:a.b.example.com

CONTROL=$WORK/control.sock
TLS="cert=\"$PKI/server.pem\" key=\"$PKI/server.key\" ca=\"$PKI/ca.pem\" verify=\"required\""
inputs_config "$WORK/corrald.conf" '' "
    <tls listen=\"127.0.0.1:0\" name=\"one\" $TLS allowed-names=\"web1.example.com\"/>
    <tls listen=\"127.0.0.1:0\" name=\"wild\" $TLS allowed-names=\"*.example.com\"/>" \
    "  <control socket=\"$CONTROL\"/>"
$CORRALD -t -f "$WORK/corrald.conf" > "$WORK/check.txt" 2>&1 || fail "-t: $(cat "$WORK/check.txt")"
start_corrald corrald "$WORK/corrald.conf"
P1=$(input_port one)
PW=$(input_port wild)

tls_failures() {
    metrics_text | awk -v s="corral_tls_handshake_failures_total{input=\"$1\",reason=\"$2\"}" \
        '$1 == s {v = $2} END {print (v == "" ? 0 : v)}'
}
tls_failures_ge() { [ "$(tls_failures "$1" "$2")" -ge "$3" ]; }
delivered() { count_matching "$OUT" "\"test.conn\":\"$1\""; }
delivered_ge() { [ "$(delivered "$1")" -ge "$2" ]; }
line() { echo "<13>Jan  1 00:00:00 testhost inputtest: conn=$1 seq=0 $2"; }
# send PORT CERT CONN: a client with certificate CERT sends one message
send() {
    $CLIENT "$1" "$PKI/ca.pem" --cert "$PKI/$2.pem" --key "$PKI/$2.key" "$(line "$3" "$2")" \
        > "$WORK/client.out" || fail "client $2: $(cat "$WORK/client.out")"
}

# ---- (a) SAN evil.attacker.net with CN web1.example.com
send "$P1" evil 1
wait_until tls_failures_ge one name-not-allowed 1 || fail "SAN evil.attacker.net, CN web1: not refused"
send "$P1" web1 2
wait_until delivered_ge 2 1 || fail "web1.example.com refused by allowed-names=web1.example.com"
grep '"test.conn":"2"' "$OUT" | grep -q '"\.tls\.peer_name":"web1\.example\.com"' ||
    fail "no .tls.peer_name web1.example.com"

# ---- (b) the literal wildcard, one label, two labels
send "$PW" wild 3
wait_until tls_failures_ge wild name-not-allowed 1 || fail "a certificate for *.example.com: not refused"
send "$PW" deep 4
wait_until tls_failures_ge wild name-not-allowed 2 || fail "a.b.example.com: not refused by *.example.com"
send "$PW" a 5
wait_until delivered_ge 5 1 || fail "a.example.com refused by *.example.com"
wait_log "TLS handshake with 127.0.0.1 failed (name-not-allowed)" || fail "refusal not logged"

# ---- (c) nothing of the refused clients went through (conn 5 came after them all)
for c in 1 3 4; do
    [ "$(delivered $c)" -eq 0 ] || fail "a refused client's message (conn=$c) was delivered"
done
stop_corrald

# ---- (d) what corrald -t says
inputs_config "$WORK/optional.conf" '' "
    <tls listen=\"127.0.0.1:0\" name=\"opt\" cert=\"$PKI/server.pem\" key=\"$PKI/server.key\" ca=\"$PKI/ca.pem\" verify=\"optional\" allowed-names=\"web1.example.com\"/>"
L=$(grep -n 'name="opt"' "$WORK/optional.conf" | cut -d: -f1)
$CORRALD -t -f "$WORK/optional.conf" > "$WORK/check.txt" 2>&1 &&
    fail "-t accepted allowed-names with verify=optional"
grep -q "optional.conf:$L: input opt: allowed-names needs verify=\"required\"" "$WORK/check.txt" ||
    fail "-t: $(cat "$WORK/check.txt")"
sed 's/ allowed-names="web1.example.com"//' "$WORK/optional.conf" > "$WORK/optional2.conf"
$CORRALD -t -f "$WORK/optional2.conf" > "$WORK/check.txt" 2>&1 ||
    fail "-t refused verify=optional: $(cat "$WORK/check.txt")"
grep -q "optional2.conf:$L: warning: input opt: verify=\"optional\" lets clients in without a certificate" "$WORK/check.txt" ||
    fail "-t gave no warning for verify=optional: $(cat "$WORK/check.txt")"
sed 's/allowed-names="web1.example.com"/allowed-names="a*.example.com"/' "$WORK/optional.conf" |
    sed 's/verify="optional"/verify="required"/' > "$WORK/partial.conf"
$CORRALD -t -f "$WORK/partial.conf" > "$WORK/check.txt" 2>&1 &&
    fail "-t accepted allowed-names=a*.example.com"
grep -q "partial.conf:$L: input opt: allowed-names: \"a\*.example.com\": a wildcard only as the whole first label" "$WORK/check.txt" ||
    fail "-t: $(cat "$WORK/check.txt")"
echo "inputs_tls_names: CN ignored beside DNS names, wildcard certificates refused, -t on verify=optional"
