#!/bin/sh
# Topology-aware inhibition: a switch port's link-down alert (the shipped
# rules/snmp.xml, its 300 s window made 1 s) inhibits the absence alerts of
# the hosts the topology file puts behind that port, directly (web1, web2)
# or through a host they depend on (app1 behind web1), and not those of a
# host behind another port (web3): theirs are recorded and counted, sent to
# no executor.  The port's linkUp clears the link-down alert and releases
# them: they are delivered then.  A reload reads the topology file again
# (web2 is added to it by one), and a bad topology file is refused with its
# file and line, by corrald -t and by a reload, which keeps what runs.  The
# trap arrives as the syslog line corrald's trap input writes (program
# snmptrap), sent over UDP.
. "$(dirname "$0")/corrald_lib.sh"
need python3

receiver_script
sed "s/context-timeout='300'/context-timeout='1'/" "$top_srcdir/rules/snmp.xml" > "$WORK/snmp.xml"
grep -q "context-timeout='1'" "$WORK/snmp.xml" || fail "no 300 s window in rules/snmp.xml"
cat > "$WORK/topology" <<'TXT'
# host  upstream  port
web1    sw1       ge-0/0/1
web3    sw1       ge-0/0/2
app1    web1
TXT
CONTROL=$WORK/control.sock
S="-s $CONTROL"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/snmp.xml"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <absence host="web1" after="1s"/>
  <absence host="web2" after="1s"/>
  <absence host="web3" after="1s"/>
  <absence host="app1" after="1s"/>
  <topology path="$WORK/topology"/>
  <inhibit source="corral.event=net.link.down.alert" target="rule_id=corral.absence.down"
           topology="yes" topology-port="net.interface,net.if_index"/>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/receiver.sh"/>
  </executors>
  <routes><route tag="corral.alert" to="runner" send-resolved="yes"/></routes>
</corrald>
XML

# a bad topology file: refused with its file and line
printf 'web1 sw1 ge-0/0/1\nweb2\n' > "$WORK/bad.topology"
sed "s|$WORK/topology\"|$WORK/bad.topology\"|" "$WORK/corrald.conf" > "$WORK/bad.conf"
"$CORRALD" -t -f "$WORK/bad.conf" --schema "$SCHEMA" > "$WORK/bad.out" 2>&1 &&
    fail "a bad topology file was accepted"
grep -q "bad.topology:2: expected HOST UPSTREAM \[PORT\], got 1 field" "$WORK/bad.out" ||
    fail "bad topology: $(cat "$WORK/bad.out")"
# topology="yes" without a topology file
sed "/<topology /d" "$WORK/corrald.conf" > "$WORK/none.conf"
"$CORRALD" -t -f "$WORK/none.conf" --schema "$SCHEMA" > "$WORK/none.out" 2>&1 &&
    fail "topology=\"yes\" without <topology> was accepted"
grep -q 'none.conf:[0-9]*: inhibit topology="yes" needs a <topology path=...>' "$WORK/none.out" ||
    fail "no topology file: $(cat "$WORK/none.out")"

now() { date '+%b %e %H:%M:%S'; }
send() { send_udp "$(input_port udp)" "<133>$(now) $1"; }
# alert_state STATE MATCHER...: every alert the matchers select is in STATE, and there is one
alert_state() {
    _want=$1
    shift
    [ "$("$CORRAL" alerts $S --json "$@" |
        python3 -c 'import json, sys; print(" ".join(sorted(set(a["state"] for a in json.load(sys.stdin)))))')" = "$_want" ]
}
delivered() { [ -f "$WORK/delivered" ] && grep -qx "$1" "$WORK/delivered"; }

start_corrald corrald "$WORK/corrald.conf"

# web2 is added behind the same port by a reload
echo "web2    sw1       ge-0/0/1" >> "$WORK/topology"
"$CORRAL" ctl $S reload > "$WORK/reload.out" || fail "reload failed: $(cat "$WORK/reload.out")"

# the port goes down and stays down: its alert fires
send "sw1 snmptrap: IF-MIB::linkDown ifIndex=3 ifAdminStatus=up ifOperStatus=down ifDescr=ge-0/0/1"
wait_until alert_state firing corral.event=net.link.down.alert HOST=sw1 ||
    fail "the link-down alert does not fire: $("$CORRAL" alerts $S)"
wait_until delivered "net.link.down/sw1/ge-0_0_1" || fail "the link-down alert not delivered"

# the hosts log once, then stop (their absence alerts fire 1 s later)
for h in web1 web2 web3 app1; do send "$h app: hello"; done
wait_until delivered "corral.absence/web3" || fail "web3 (behind ge-0/0/2) not reported absent"
for h in web1 web2 app1; do
    wait_until alert_state inhibited rule_id=corral.absence.down HOST=$h ||
        fail "$h's absence alert not inhibited: $("$CORRAL" alerts $S)"
done
wait_metric corral_alerts_inhibited_total -ge 3 || fail "the inhibited alerts not counted"
alert_state firing rule_id=corral.absence.down HOST=web3 || fail "web3's absence alert not firing"
"$CORRAL" alerts $S HOST=web1 | grep 'corral.absence/web1' | grep -q 'net.link.down/sw1/ge-0_0_1' ||
    fail "what inhibits web1's alert is not shown: $("$CORRAL" alerts $S)"
for h in web1 web2 app1; do
    delivered "corral.absence/$h" && fail "$h's absence alert delivered while its port is down"
done

# a bad topology file on reload: refused with file and line, what runs stays
cp "$WORK/topology" "$WORK/topology.good"
printf 'web9 web9\n' >> "$WORK/topology"
"$CORRAL" ctl $S reload > "$WORK/reload2.out" 2>&1 && fail "a reload with a bad topology succeeded"
grep -q "topology:6: web9 behind itself" "$WORK/reload2.out" ||
    fail "bad topology on reload: $(cat "$WORK/reload2.out")"
alert_state inhibited rule_id=corral.absence.down HOST=web1 || fail "a failed reload released web1"
cp "$WORK/topology.good" "$WORK/topology"

# the port comes back: the link-down alert resolves, the absence alerts go out
send "sw1 snmptrap: IF-MIB::linkUp ifIndex=3 ifAdminStatus=up ifOperStatus=up ifDescr=ge-0/0/1"
wait_until alert_state resolved corral.alert_id=net.link.down/sw1/ge-0_0_1 ||
    fail "the link-down alert not resolved: $("$CORRAL" alerts $S)"
for h in web1 web2 app1; do
    wait_until delivered "corral.absence/$h" || fail "$h's absence alert not released"
    alert_state firing rule_id=corral.absence.down HOST=$h || fail "$h's absence alert not firing"
done
corrald_alive
stop_corrald
echo "ok: a port's link-down alert inhibits the absence alerts of the hosts behind it, its linkUp releases them"
