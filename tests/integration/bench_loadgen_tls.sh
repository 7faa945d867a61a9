#!/bin/sh
# bench/loadgen -T, the TLS sender of bench/daemon.sh -t, sends exactly what
# it reports to corrald's <tls> input: 1000 messages over 2 connections with
# RFC 5425 octet counting, the server's certificate verified (--ca) and a
# client certificate (--cert/--key) that the input requires; then 500 with
# newline framing and no verification (loadgen's default) to an input that
# asks for no client certificate.  corrald's input counters must reach
# exactly those figures, every message parsed, the first 1000 carrying the
# client certificate's name (.tls.peer_name).  And loadgen, told to verify
# against another CA, must refuse corrald's certificate (exit 1, nothing
# delivered).  Plain bytes to a <tls> input are never counted as messages,
# so a loadgen whose TLS is broken cannot pass.  A smoke test only: the
# benchmark itself is run by hand (bench/README.md).
. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/tls_lib.sh"
LOADGEN=$top_builddir/bench/loadgen
[ -x "$LOADGEN" ] || fail "$LOADGEN not built"

make_ca ca
make_ca other-ca
make_cert server ca localhost DNS:localhost,IP:127.0.0.1
make_cert client ca loadgen.example.com DNS:loadgen.example.com

corpus=$WORK/corpus.log
awk '{ sub(/\r$/, ""); print "<38>" $0 }' "$top_srcdir/tests/data/loghub/OpenSSH_2k.log" > "$corpus"
inputs_config "$WORK/corrald.conf" "" "
    <tls listen=\"127.0.0.1:0\" name=\"tls\" cert=\"$PKI/server.pem\" key=\"$PKI/server.key\"
         ca=\"$PKI/ca.pem\" verify=\"required\" allowed-names=\"loadgen.example.com\"/>
    <tls listen=\"127.0.0.1:0\" name=\"tls-any\" cert=\"$PKI/server.pem\" key=\"$PKI/server.key\"/>"
start_corrald lg "$WORK/corrald.conf"
P=$(input_port tls)
PA=$(input_port tls-any)

# sent MESSAGES-EXPECTED JSON-FILE: loadgen's own report says it sent them all
sent() {
    grep -q "\"proto\":\"tls\",.*\"messages\":$1,.*\"failed\":0" "$2" ||
        fail "loadgen reported: $(cat "$2")"
}

"$LOADGEN" -T --ca "$PKI/ca.pem" --cert "$PKI/client.pem" --key "$PKI/client.key" \
    -c 2 -n 1000 -p "$P" -f "$corpus" > "$WORK/tls.json" 2> "$WORK/tls.log" ||
    fail "loadgen over TLS failed: $(cat "$WORK/tls.log")"
sent 1000 "$WORK/tls.json"
grep -q '"connections":2,' "$WORK/tls.json" || fail "not 2 connections: $(cat "$WORK/tls.json")"
grep -q '"verify":true' "$WORK/tls.json" || fail "--ca did not verify: $(cat "$WORK/tls.json")"
grep -q '"framing":"octet-counting"' "$WORK/tls.json" || fail "not octet counting by default"
wait_metric corral_input_messages_total input=tls -ge 1000 ||
    fail "corrald counted $(metric corral_input_messages_total input=tls) TLS messages of 1000"

"$LOADGEN" -T -N -n 500 -p "$PA" -f "$corpus" > "$WORK/nl.json" 2> "$WORK/nl.log" ||
    fail "loadgen over TLS, newline framing, failed: $(cat "$WORK/nl.log")"
sent 500 "$WORK/nl.json"
grep -q '"verify":false' "$WORK/nl.json" || fail "verified without --ca: $(cat "$WORK/nl.json")"
grep -q 'NOT verified' "$WORK/nl.log" || fail "loadgen did not say it verified nothing"
wait_metric corral_input_messages_total input=tls-any -ge 500 ||
    fail "corrald counted $(metric corral_input_messages_total input=tls-any) of 500 (lines)"

# the wrong CA: loadgen refuses corrald's certificate, and says why
if "$LOADGEN" -T --ca "$PKI/other-ca.pem" --cert "$PKI/client.pem" --key "$PKI/client.key" \
    -n 10 -p "$P" -f "$corpus" > "$WORK/bad.json" 2> "$WORK/bad.log"; then
    fail "loadgen accepted a certificate of another CA: $(cat "$WORK/bad.log")"
fi
grep -q 'certificate verify failed' "$WORK/bad.log" || fail "no reason given: $(cat "$WORK/bad.log")"
grep -q '"messages":0,' "$WORK/bad.json" || fail "sent despite a bad certificate"

# not one more either, every message whole and parsed, the first 1000 with
# the client certificate's name
[ "$(metric corral_input_messages_total input=tls)" -eq 1000 ] ||
    fail "tls: $(metric corral_input_messages_total input=tls) messages counted, 1000 sent"
[ "$(metric corral_input_messages_total input=tls-any)" -eq 500 ] ||
    fail "tls-any: $(metric corral_input_messages_total input=tls-any) messages counted, 500 sent"
wait_metric corral_messages_parsed_total -ge 1500 || fail "not every message parsed"
[ "$(metric corral_input_truncated_total input=tls)" -le 0 ] || fail "truncated TLS messages"
[ "$(metric corral_input_truncated_total input=tls-any)" -le 0 ] || fail "truncated TLS lines"
wait_lines "$OUT" 1500 || fail "$(wc -l < "$OUT") of 1500 messages in the output"
n=$(grep -c '"\.tls\.peer_name":"loadgen\.example\.com"' "$OUT")
[ "$n" -eq 1000 ] || fail "$n of 1000 messages with the client certificate's name"
stop_corrald
echo "ok: loadgen -T: 1000 messages (octet counting, 2 connections, verified, client certificate) and 500 lines, all counted by corrald's <tls> inputs; a wrong CA refused"
