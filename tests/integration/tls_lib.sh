# tls_lib.sh: throwaway certificates for the TLS tests (sourced after
# corrald_lib.sh).  Everything lives in $WORK/pki; keys are EC P-256 (quick
# to make), certificates valid for two days.
#
#   make_ca NAME                   NAME.pem, NAME.key: a self-signed CA
#   make_cert NAME CA CN [SAN [SERIAL]]
#                                  NAME.pem, NAME.key signed by CA, subject
#                                  CN, subjectAltName SAN (e.g. DNS:a,IP:b)
#   cert_serial FILE               the serial of a certificate, in hex
#   peer_cert_serial PORT          the serial of the certificate a TLS
#                                  server on 127.0.0.1:PORT presents

PKI=$WORK/pki
mkdir -p "$PKI"
need openssl

make_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$PKI/$1.key" -out "$PKI/$1.pem" -subj "/CN=$1" -days 2 \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign,cRLSign \
        >"$PKI/$1.openssl.log" 2>&1 || fail "cannot make CA $1"
    chmod 600 "$PKI/$1.key"
}

make_cert() {
    _ext=$PKI/$1.ext
    echo "basicConstraints=CA:FALSE" > "$_ext"
    [ -n "${4:-}" ] && echo "subjectAltName=$4" >> "$_ext"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$PKI/$1.key" \
        -out "$PKI/$1.csr" -subj "/CN=$3" >"$PKI/$1.openssl.log" 2>&1 || fail "cannot make key $1"
    openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/$2.pem" -CAkey "$PKI/$2.key" \
        -set_serial "${5:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}" -days 2 \
        -extfile "$_ext" -out "$PKI/$1.pem" >>"$PKI/$1.openssl.log" 2>&1 || fail "cannot sign $1"
    chmod 600 "$PKI/$1.key"
}

cert_serial() {
    openssl x509 -in "$1" -noout -serial | sed 's/^serial=//'
}

peer_cert_serial() {
    echo | openssl s_client -connect "127.0.0.1:$1" -showcerts 2>/dev/null |
        openssl x509 -noout -serial 2>/dev/null | sed 's/^serial=//'
}
