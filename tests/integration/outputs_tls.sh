#!/bin/sh
# outputs_tls: corrald's TLS forward output (RFC 5425) against real TLS servers.
#
# A throwaway CA signs syslog-ng's server certificate and corrald's client
# certificate; another CA signs an impostor server's.
#
#   syslog-ng 3.38, a syslog() source with transport "tls" that requires a
#   client certificate of the CA: everything corrald receives arrives there
#   once, octet-counted (a multi-line message whole); corrald verified the
#   server (the CA, and "localhost", the host it was sent to, in its
#   certificate).  The same server sent to as 127.0.0.1, an address its
#   certificate does not carry: refused, counted as name-not-allowed.
#   An impostor server (python, a certificate of the other CA): refused,
#   counted as bad-certificate, nothing sent to it, retried.
#   The good server, with allowed-names that its certificate does not carry:
#   refused, counted as name-not-allowed.
#   Reload (SIGHUP): a client key that does not fit fails it with the
#   element's file:line; a CA file that now holds the impostor's CA is read
#   again, and the next attempt to the impostor gets through.

. "$(dirname "$0")/corrald_lib.sh"
. "$(dirname "$0")/tls_lib.sh"
need python3
SYSLOGNG=${SYSLOGNG:-$(command -v syslog-ng || echo /usr/sbin/syslog-ng)}
[ -x "$SYSLOGNG" ] || { echo "$TEST: no syslog-ng, skipped"; exit 77; }
N=20

make_ca ca
make_ca other-ca
make_cert server ca localhost DNS:localhost
make_cert client ca corral.example.com DNS:corral.example.com
make_cert impostor other-ca localhost DNS:localhost,IP:127.0.0.1

cat > "$WORK/syslog-ng.conf" <<EOC
@version: 3.38
options { keep-hostname(yes); chain-hostnames(no); use-dns(no); dns-cache(no); stats-freq(0); };
source s_tls { syslog(ip("127.0.0.1") port(0) transport("tls")
    tls(key-file("$PKI/server.key") cert-file("$PKI/server.pem") ca-file("$PKI/ca.pem")
        peer-verify(required-trusted))); };
destination d { file("$WORK/received.json"
    template("\$(format-json HOST=\$HOST PROGRAM=\$PROGRAM MESSAGE=\$MSG)\n")); };
log { source(s_tls); destination(d); };
EOC
"$SYSLOGNG" -F -f "$WORK/syslog-ng.conf" --no-caps -R "$WORK/syslog-ng.persist" \
    -p "$WORK/syslog-ng.pid" -c "$WORK/syslog-ng.ctl" >"$WORK/syslog-ng.log" 2>&1 &
sng_pid=$!
track $sng_pid
sng_ready() { [ -n "$(listening_ports $sng_pid tcp)" ]; }
wait_until sng_ready || fail "syslog-ng did not start"
SNG=$(listening_ports $sng_pid tcp)

# the impostor: a TLS server whose certificate another CA signed
python3 - "$PKI" "$WORK/impostor.port" "$WORK/impostor.got" <<'EOF' &
import os, socket, ssl, sys
pki, portfile, got = sys.argv[1:4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(pki + "/impostor.pem", pki + "/impostor.key")
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
open(portfile + ".tmp", "w").write(str(ls.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
while True:
    c, _ = ls.accept()
    try:
        s = ctx.wrap_socket(c, server_side=True)
        data = s.recv(65536)
        with open(got, "ab") as f:
            f.write(data)
    except (ssl.SSLError, OSError):
        pass
    c.close()
EOF
track $!
wait_until test -s "$WORK/impostor.port" || fail "impostor server did not start"
IMP=$(cat "$WORK/impostor.port")

TLS_OPTS="cert=\"$PKI/client.pem\" key=\"$PKI/client.key\" ca=\"$PKI/ca.pem\""
cat > "$WORK/corrald.conf" <<EOC
<corrald>
  <rules path="$RULES"/>
  <log level="debug"/>
  <control socket="$WORK/control.sock"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <outputs>
    <forward name="good" to="localhost:$SNG" protocol="tls" $TLS_OPTS format="syslog" select="all"/>
    <forward name="impostor" to="127.0.0.1:$IMP" protocol="tls" $TLS_OPTS format="syslog" select="all"/>
    <forward name="by-address" to="127.0.0.1:$SNG" protocol="tls" $TLS_OPTS format="syslog" select="all"/>
    <forward name="wrong-name" to="127.0.0.1:$SNG" protocol="tls" $TLS_OPTS allowed-names="syslog.example.com" format="syslog" select="all"/>
  </outputs>
</corrald>
EOC
CONTROL=$WORK/control.sock
start_corrald corrald "$WORK/corrald.conf"
IN=$(input_port udp)

out_tls_failures() {
    metrics_text | awk -v s="corral_tls_handshake_failures_total{output=\"$1\",reason=\"$2\"}" \
        '$1 == s {v = $2} END {print (v == "" ? -1 : v)}'
}
out_tls_failures_ge() { [ "$(out_tls_failures "$1" "$2")" -ge "$3" ]; }

set --
i=0
while [ $i -lt $N ]; do
    set -- "$@" "<13>Jan  1 00:00:00 testhost inputtest: conn=1 seq=$i over tls"
    i=$((i + 1))
done
send_udp "$IN" "$@" "<13>Jan  1 00:00:00 testhost inputtest: conn=1 seq=$N first line
second line"
wait_lines "$WORK/received.json" $((N + 1)) || fail "syslog-ng received $(wc -l < "$WORK/received.json" 2>/dev/null) of $((N + 1))"
wait_metric corral_output_written_total output=good -eq $((N + 1)) || fail "written not counted"
# each sequence number exactly once
seqs=$(sed -n 's/.*"MESSAGE":"conn=1 seq=\([0-9]*\) .*/\1/p' "$WORK/received.json" | sort -n | uniq | tr '\n' ' ')
[ "$seqs" = "$(seq 0 $N | tr '\n' ' ')" ] || fail "received sequence numbers: $seqs"
grep -q '"MESSAGE":"conn=1 seq=20 first line\\nsecond line"' "$WORK/received.json" ||
    fail "multi-line message not received whole"
grep -q '"HOST":"testhost","PROGRAM":"inputtest"\|"PROGRAM":"inputtest".*"HOST":"testhost"' "$WORK/received.json" ||
    fail "HOST and PROGRAM not kept"
wait_log "output good: connected to localhost:$SNG over TLSv1" || fail "TLS connection not logged"

# the impostor and the wrong name: refused, counted, retried, nothing sent
wait_until out_tls_failures_ge impostor bad-certificate 1 || fail "impostor's certificate not refused"
wait_until out_tls_failures_ge wrong-name name-not-allowed 1 || fail "wrong name not refused"
wait_until out_tls_failures_ge by-address name-not-allowed 1 || fail "address not in the certificate accepted"
wait_log "output impostor: TLS handshake with 127.0.0.1:$IMP failed (bad-certificate)" ||
    fail "impostor refusal not logged"
wait_until out_tls_failures_ge impostor bad-certificate 2 || fail "impostor not tried again"
[ ! -s "$WORK/impostor.got" ] || fail "corrald sent to the impostor: $(cat "$WORK/impostor.got")"
[ "$(metric corral_output_written_total output=impostor)" -eq 0 ] || fail "written to the impostor"
[ "$(metric corral_output_written_total output=wrong-name)" -eq 0 ] || fail "written despite the name"
[ "$(metric corral_output_written_total output=by-address)" -eq 0 ] || fail "written despite the address"
[ "$(grep -c . "$WORK/received.json")" -eq $((N + 1)) ] || fail "the wrong-name output delivered"

# reload: a key that does not belong to the certificate fails it, with file:line
GOOD_LINE=$(grep -n 'name="good"' "$WORK/corrald.conf" | cut -d: -f1)
cp "$PKI/client.key" "$PKI/client.key.good"
cp "$PKI/impostor.key" "$PKI/client.key"
kill -HUP "$CORRALD_PID"
wait_log "corrald.conf:$GOOD_LINE: output good: key .* does not belong to the certificate" ||
    fail "broken client key not reported with file:line"
cp "$PKI/client.key.good" "$PKI/client.key"
# a CA file that now trusts the impostor's CA too: reloaded, the next attempt gets through
cat "$PKI/other-ca.pem" >> "$PKI/ca.pem"
kill -HUP "$CORRALD_PID"
wait_log "output impostor: certificate and key loaded again" || fail "output's CA not reloaded"
wait_until test -s "$WORK/impostor.got" || fail "the reloaded CA was not used"
corrald_alive
stop_corrald
echo "outputs_tls: $((N + 1)) messages over TLS received by syslog-ng; impostor and wrong name refused"
