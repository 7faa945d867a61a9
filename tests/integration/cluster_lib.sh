# cluster_lib.sh: three nats-server processes clustered on loopback with
# JetStream, and corrald nodes of a <cluster> over them, for the
# cluster_*.sh tests (sourced after corrald_lib.sh).
#
#   start_nats               nats-server n1, n2, n3 on kernel-picked ports,
#                            stores in $WORK/js<i>, clients log in as user
#                            corral (password in $WORK/nats-password); waits until JetStream
#                            has a metadata leader; sets NATS_URLS
#                            ($NATS_TLS, if set, the body of a tls { } block
#                            for the client ports: the URLs are tls:// then;
#                            $NATS_AUTH, if set, the servers' authentication
#                            lines instead of that user)
#   cluster_conf FILE NODE RULES   a corrald configuration for node NODE
#                            ($PARTITIONS partitions, default 16; $CLUSTER_ATTRS
#                            more attributes of <cluster>; $CLUSTER_LOGIN
#                            instead of user= and password-file=)
#   start_node I NODE RULES  corrald node I (its log $WORK/NODE.log);
#                            sets NODE_PID_<I>, NODE_LOG_<I>
#   node_metric I NAME       a metric of node I
#   wait_balanced I...       until each of the nodes I... sees them as the
#                            members and owns exactly its share
#   record_script VAR...     $WORK/record.sh, an exec script appending a line
#                            of the variables VAR... to $WORK/delivered
#   node_refused NODE WHY    corrald node NODE (rules $RULES) exits 1 at start
#                            and its log says WHY (a grep pattern)
#   five_failures HOST ADDR  5 failed sshd logins on HOST from ADDR (stdout)
#   bruteforce_once I J      5 failed logins sent to node I: one brute-force
#                            alert, delivered once (record_script
#                            CORRAL_CORRAL_EVENT ...) and acknowledged by I or J

need nats-server

# nats_port LOG KIND: the port of "Listening for KIND connections on H:P"
nats_port() {
    sed -n "s/.*Listening for $2 connections on .*:\([0-9]*\)\$/\1/p" "$1" | tail -n 1
}

# free_ports N: N TCP ports free on 127.0.0.1 now (the kernel's picks, released at once: a
# JetStream cluster needs its route addresses in every server's configuration before it starts)
free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

# start_nats_server I: nats-server I (again), its log appended to $WORK/nats<I>.log
start_nats_server() {
    nats-server -c "$WORK/nats$1.conf" >> "$WORK/nats$1.log" 2>&1 &
    eval "NATS_PID_$1=$!"
    track "$!"
}

nats_alive() {
    eval "alive \$NATS_PID_$1"
}

# nats_ready I: server I is ready, or has exited (then nats_alive tells)
nats_ready() {
    ! nats_alive "$1" || grep -q "Server is ready" "$WORK/nats$1.log"
}

start_nats() {
    NATS_ROUTE_PORTS=$(free_ports 3)
    # the nodes log in as NATS users do: user and password (from a file)
    NATS_PASSWORD=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    echo "$NATS_PASSWORD" > "$WORK/nats-password"
    chmod 600 "$WORK/nats-password"
    _routes=
    for _p in $NATS_ROUTE_PORTS; do _routes="$_routes${_routes:+, }\"nats-route://127.0.0.1:$_p\""; done
    _auth=${NATS_AUTH:-}
    [ -n "$_auth" ] || _auth="authorization { user: corral, password: \"$NATS_PASSWORD\" }"
    _i=1
    for _p in $NATS_ROUTE_PORTS; do
        mkdir -p "$WORK/js$_i"
        cat > "$WORK/nats$_i.conf" <<EOF
server_name: n$_i
listen: 127.0.0.1:-1
jetstream { store_dir: "$WORK/js$_i" }
$_auth
cluster { name: corraltest, listen: "127.0.0.1:$_p", routes: [ $_routes ] }
EOF
        [ -z "${NATS_TLS:-}" ] || echo "tls { $NATS_TLS }" >> "$WORK/nats$_i.conf"
        start_nats_server "$_i"
        _i=$((_i + 1))
    done
    for _i in 1 2 3; do
        wait_until nats_ready "$_i" || fail "nats-server $_i did not start"
        nats_alive "$_i" || fail "nats-server $_i exited"
        eval "NATS_PORT_$_i=$(nats_port "$WORK/nats$_i.log" client)"
    done
    _scheme=nats
    [ -z "${NATS_TLS:-}" ] || _scheme=tls
    NATS_URLS="$_scheme://127.0.0.1:$NATS_PORT_1,$_scheme://127.0.0.1:$NATS_PORT_2,$_scheme://127.0.0.1:$NATS_PORT_3"
    wait_until grep -q "JetStream cluster new metadata leader\|Self is new JetStream cluster metadata leader" \
        "$WORK/nats1.log" "$WORK/nats2.log" "$WORK/nats3.log" || fail "JetStream has no leader"
}

# cluster_conf FILE NODE RULES [EXTRA]: EXTRA goes into <corrald>
cluster_conf() {
    _login=${CLUSTER_LOGIN:-}
    [ -n "$_login" ] || _login="user=\"corral\" password-file=\"$WORK/nats-password\""
    cat > "$1" <<XML
<corrald>
  <rules path="$3"/>
  <cluster nats="$NATS_URLS" name="corraltest" node="$2" partitions="${PARTITIONS:-16}" lease="3s"
           $_login ${CLUSTER_ATTRS:-}/>
  <control socket="$WORK/$2.sock"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <outputs><file path="$WORK/$2.json" format="json" select="generated"/></outputs>
  ${4:-}
</corrald>
XML
}

start_node() {
    cluster_conf "$WORK/$2.conf" "$2" "$3" "${4:-}"
    start_corrald "$2" "$WORK/$2.conf"
    eval "NODE_PID_$1=$CORRALD_PID NODE_LOG_$1=$CORRALD_LOG NODE_NAME_$1=$2"
}

# as_node I CMD...: CMD with corrald_lib.sh's current corrald being node I
as_node() {
    _n=$1
    shift
    eval "CORRALD_PID=\$NODE_PID_$_n CORRALD_LOG=\$NODE_LOG_$_n CONTROL=$WORK/\$NODE_NAME_$_n.sock"
    "$@"
}

node_metric() {
    as_node "$1" metric "$2" "${3:-}"
}

# balanced I...: each of the nodes I... sees them all as members and owns exactly its share,
# and they own every partition between them
balanced() {
    _sum=0
    for _k in "$@"; do
        [ "$(node_metric "$_k" corral_cluster_members)" = "$#" ] || return 1
        [ "$(node_metric "$_k" corral_cluster_balanced)" = 1 ] || return 1
        _sum=$((_sum + $(node_metric "$_k" corral_cluster_partitions_owned)))
    done
    [ "$_sum" = "${PARTITIONS:-16}" ]
}

# wait_balanced I...: until balanced I...
wait_balanced() {
    wait_until balanced "$@"
}

record_script() {
    _fmt=
    _args=
    for _v in "$@"; do
        _fmt="$_fmt${_fmt:+ }%s"
        _args="$_args \"\$$_v\""
    done
    cat > "$WORK/record.sh" <<EOF
#!/bin/sh
printf '$_fmt\n'$_args >> "$WORK/delivered"
EOF
    chmod 755 "$WORK/record.sh"
}

node_refused() {
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

# bruteforce_delivered: brute-force alerts recorded so far
bruteforce_delivered() {
    count_matching "$WORK/delivered" '^ssh.bruteforce.alert '
}

# bruteforce_some / bruteforce_acked I J: one at least delivered / acknowledged by I or J
bruteforce_some() {
    [ "$(bruteforce_delivered)" -ge 1 ]
}

bruteforce_acked() {
    [ "$(($(node_metric "$1" corral_cluster_alerts_acked_total) + \
        $(node_metric "$2" corral_cluster_alerts_acked_total)))" -ge 1 ]
}

# five_failures HOST ADDR: five failed sshd logins for root on HOST from ADDR, now (a brute force)
five_failures() {
    _stamp=$(date '+%b %e %H:%M:%S')
    for _k in 1 2 3 4 5; do
        echo "$_stamp $1 sshd[100$_k]: Failed password for root from $2 port 4000$_k ssh2"
    done
}

bruteforce_once() {
    five_failures web1 198.51.100.7 > "$WORK/failures"
    send_tcp_file "$(as_node "$1" input_port tcp)" "$WORK/failures"
    wait_until bruteforce_some || fail "the alert was not delivered"
    wait_until bruteforce_acked "$1" "$2" || fail "the delivered alert was not acknowledged"
    [ "$(bruteforce_delivered)" -eq 1 ] ||
        fail "the alert was delivered $(bruteforce_delivered) times: $(cat "$WORK/delivered")"
}
