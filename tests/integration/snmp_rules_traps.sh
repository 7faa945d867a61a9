#!/bin/sh
# snmp_rules_traps: the shipped rules/snmp.xml fed by corrald's own
# <snmp-trap> input, with real traps from net-snmp's snmptrap (v2c, and a v1
# linkDown converted as RFC 3584 says), names from the test MIBs
# (tests/data/mibs: IF-MIB, SNMPv2-MIB, BGP4-MIB, UPS-MIB subsets).  The
# rules' 300 s windows are made 5 s; every device sends from its own
# loopback address, named by the input's host map.
#
#   a v1 linkDown that stays down -> net.link.down.alert; a v2c linkUp
#     clears it (the alert resolved); a v1 trap of agent-addr 0.0.0.0 is
#     its UDP source's device; an empty ifDescr names the link ifIndex.N
#   linkDown/linkUp three times -> one net.link.flapping.alert
#   coldStart three times -> snmp.reboot_loop.alert
#   bgpBackwardTransition (RFC 1657: the peer in the index, or in an added
#     bgpPeerRemoteAddr), bgpBackwardTransNotification (RFC 4273) and a v1
#     trap of enterprise bgp -> bgp.peer.down.alert of the right peer; a
#     bgpEstablished resolves that peer's alert only
#   upsTrapOnBattery, then upsTrapAlarmEntryAdded upsAlarmLowBattery ->
#     ups.on_battery.alert, ups.low_battery.alert; ...Removed resolves it
#   ten authenticationFailure traps -> snmp.auth_failure.alert
#   a linkDown trap and the host's kernel "NIC Link is Down" line -> one
#     net.link.down.alert counting both
#   topology: a switch's real linkDown trap inhibits the absence alerts of
#     the hosts behind that port, its linkUp releases them
. "$(dirname "$0")/corrald_lib.sh"
need snmptrap python3
# net-snmp's senders keep engine boots and ids in a persistent file: one of
# the test's own, not the machine's /var/lib/snmp that parallel tests share
SNMP_PERSISTENT_DIR=$WORK/snmp-persist
export SNMP_PERSISTENT_DIR

MIBS=$top_srcdir/tests/data/mibs
W=5
receiver_script
sed "s/context-timeout='300'/context-timeout='$W'/" "$top_srcdir/rules/snmp.xml" > "$WORK/snmp.xml"
grep -q "context-timeout='$W'" "$WORK/snmp.xml" || fail "no 300 s window in rules/snmp.xml"
cat > "$WORK/hosts.map" <<'TXT'
10.1.1.1   edge1
127.0.0.2  core1
127.0.0.3  rtr1
127.0.0.4  ups1
127.0.0.5  sw9
127.0.0.6  srv1
127.0.0.7  sw1
127.0.0.8  ap1
127.0.0.9  edge1
10.1.1.3   rtr2
TXT
cat > "$WORK/topology" <<'TXT'
# host  upstream  port
web1    sw1       ge-0/0/1
web3    sw1       ge-0/0/2
app1    web1
TXT
CONTROL=$WORK/control.sock
S="-s $CONTROL"
OUT=$WORK/out.json
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/snmp.xml"/>
  <control socket="$CONTROL"/>
  <inputs>
    <snmp-trap listen="udp:127.0.0.1:0" name="traps" mibs="$MIBS" community="public"
               host-map="$WORK/hosts.map"/>
    <udp listen="127.0.0.1:0" name="udp"/>
  </inputs>
  <absence host="web1" after="1s"/>
  <absence host="web3" after="1s"/>
  <absence host="app1" after="1s"/>
  <topology path="$WORK/topology"/>
  <inhibit source="corral.event=net.link.down.alert" target="rule_id=corral.absence.down"
           topology="yes" topology-port="net.interface,net.if_index"/>
  <outputs>
    <file path="$OUT" format="json" select="all"/>
  </outputs>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/receiver.sh"/>
  </executors>
  <routes><route tag="corral.alert" to="runner" send-resolved="yes"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
AT=127.0.0.1:$(input_port traps)

# trap FROM ARGS...: a v2c trap from the loopback address FROM
send_trap() {
    _from=$1
    shift
    snmptrap -M "$MIBS" -m ALL --clientaddr="$_from" -v2c -c public "$AT" '' "$@" ||
        fail "snmptrap $*"
}
now() { date '+%b %e %H:%M:%S'; }
send() { send_udp "$(input_port udp)" "<133>$(now) $1"; }
delivered() { [ -f "$WORK/delivered" ] && grep -qx "$1" "$WORK/delivered"; }
# alert_state STATE MATCHER...: every alert the matchers select is in STATE, and there is one
alert_state() {
    _want=$1
    shift
    [ "$("$CORRAL" alerts $S --json "$@" |
        python3 -c 'import json, sys; print(" ".join(sorted(set(a["state"] for a in json.load(sys.stdin)))))')" = "$_want" ]
}
# nevents EVENT KEY=VALUE...: the messages of corral.event EVENT with these values
nevents() {
    python3 - "$OUT" "$@" <<'PY'
import json, sys
want = dict(a.split("=", 1) for a in sys.argv[3:])
print(sum(1 for line in open(sys.argv[1])
          if (m := json.loads(line)).get("corral.event") == sys.argv[2]
          and all(m.get(k) == v for k, v in want.items())))
PY
}
event_has() { [ "$(nevents "$@")" -ge 1 ]; }
why() { grep "$1" "$OUT" | tail -5; }

# ---- a v1 linkDown (agent 10.1.1.1, RFC 3584) that stays down, then a v2c linkUp clears it
snmptrap -M "$MIBS" -m ALL -v1 -c public "$AT" IF-MIB::ifMIB 10.1.1.1 2 0 '' \
    ifIndex.3 i 3 ifAdminStatus.3 i 1 ifOperStatus.3 i 2 ifDescr.3 s ge-0/0/3 || fail "snmptrap v1"
# an SNMPv1 agent that leaves agent-addr 0.0.0.0: the device is its UDP source (core1)
snmptrap -M "$MIBS" -m ALL --clientaddr=127.0.0.2 -v1 -c public "$AT" IF-MIB::ifMIB 0.0.0.0 2 0 '' \
    ifIndex.9 i 9 ifAdminStatus.9 i 1 ifOperStatus.9 i 2 ifDescr.9 s ge-0/0/9 || fail "snmptrap v1 0.0.0.0"
# ---- flapping: three downs, each followed by an up
for i in 1 2 3; do
    send_trap 127.0.0.2 IF-MIB::linkDown ifIndex.12 i 12 ifAdminStatus.12 i 1 ifOperStatus.12 i 2 \
        ifDescr.12 s xe-1/0/0
    send_trap 127.0.0.2 IF-MIB::linkUp ifIndex.12 i 12 ifAdminStatus.12 i 1 ifOperStatus.12 i 1 \
        ifDescr.12 s xe-1/0/0
done
# an empty ifDescr: the link is named by its index
send_trap 127.0.0.2 IF-MIB::linkDown ifIndex.7 i 7 ifAdminStatus.7 i 1 ifOperStatus.7 i 2 ifDescr.7 s ''
# ---- a reboot loop
for i in 1 2 3; do send_trap 127.0.0.8 SNMPv2-MIB::coldStart; done
# ---- BGP: both forms
send_trap 127.0.0.3 BGP4-MIB::bgpBackwardTransition bgpPeerLastError.192.0.2.9 x 0400 \
    bgpPeerState.192.0.2.9 i 1
send_trap 127.0.0.3 BGP4-MIB::bgpBackwardTransNotification bgpPeerRemoteAddr.198.51.100.7 a 198.51.100.7 \
    bgpPeerLastError.198.51.100.7 x 0604 bgpPeerState.198.51.100.7 i 3
# bgpBackwardTransition with bgpPeerRemoteAddr added to its varbinds (some agents do)
send_trap 127.0.0.3 BGP4-MIB::bgpBackwardTransition bgpPeerRemoteAddr.192.0.2.12 a 192.0.2.12 \
    bgpPeerLastError.192.0.2.12 x 0400 bgpPeerState.192.0.2.12 i 1
# an SNMPv1 agent (RFC 1269: enterprise bgp, specific 2) becomes bgpBackwardTransNotification
snmptrap -M "$MIBS" -m ALL -v1 -c public "$AT" BGP4-MIB::bgp 10.1.1.3 6 2 '' \
    bgpPeerRemoteAddr.203.0.113.5 a 203.0.113.5 bgpPeerLastError.203.0.113.5 x 0403 \
    bgpPeerState.203.0.113.5 i 2 || fail "snmptrap v1 BGP"
# ---- a UPS on battery, then low battery
send_trap 127.0.0.4 UPS-MIB::upsTrapOnBattery upsEstimatedMinutesRemaining.0 i 42 \
    upsSecondsOnBattery.0 i 3 upsConfigLowBattTime.0 i 5
send_trap 127.0.0.4 UPS-MIB::upsTrapAlarmEntryAdded upsAlarmId.3 i 3 upsAlarmDescr.3 o UPS-MIB::upsAlarmLowBattery
# ---- an authenticationFailure storm
i=0
while [ $i -lt 10 ]; do
    send_trap 127.0.0.5 SNMPv2-MIB::authenticationFailure
    i=$((i + 1))
done
# ---- srv1's linkDown trap and its kernel line: one incident
send_trap 127.0.0.6 IF-MIB::linkDown ifIndex.2 i 2 ifAdminStatus.2 i 1 ifOperStatus.2 i 2 ifDescr.2 s eno1
send "srv1 kernel: e1000e 0000:00:1f.6 eno1: NIC Link is Down"

wait_until delivered "net.link.flapping/core1/xe-1_0_0" || fail "no flapping alert: $(why xe-1/0/0)"
wait_until delivered "snmp.reboot_loop/ap1" || fail "no reboot-loop alert: $(why ap1)"
wait_until delivered "ups.on_battery/ups1" || fail "no on-battery alert: $(why ups1)"
wait_until delivered "ups.low_battery/ups1" || fail "no low-battery alert: $(why ups1)"
wait_until event_has ups.low_battery.alert HOST=ups1 ups.minutes_remaining=42 ||
    fail "the low-battery alert does not read the on-battery trap: $(why ups1)"
wait_until delivered "snmp.auth_failure/sw9" || fail "no authenticationFailure alert: $(why sw9)"
wait_until delivered "net.link.down/edge1/ge-0_0_3" || fail "no link-down alert for the v1 trap: $(why edge1)"
wait_until delivered "bgp.peer.down/rtr1/192.0.2.9" || fail "no BGP alert for 192.0.2.9: $(why rtr1)"
wait_until delivered "bgp.peer.down/rtr1/198.51.100.7" || fail "no BGP alert for 198.51.100.7: $(why rtr1)"
wait_until delivered "bgp.peer.down/rtr1/192.0.2.12" || fail "no BGP alert for 192.0.2.12: $(why rtr1)"
wait_until delivered "bgp.peer.down/rtr2/203.0.113.5" || fail "no BGP alert for the v1 trap: $(why rtr2)"
wait_until delivered "net.link.down/core1/ifIndex.7" || fail "no link-down alert for ifIndex.7: $(why 'ifIndex=7')"
wait_until delivered "net.link.down/core1/ge-0_0_9" ||
    fail "no link-down alert for core1's v1 trap of agent-addr 0.0.0.0: $(why ge-0/0/9)"
wait_until delivered "net.link.down/srv1/eno1" || fail "no link-down alert for srv1: $(why srv1)"
wait_until event_has net.link.down.alert HOST=srv1 net.interface=eno1 net.if_index=2 corral.count=2 ||
    fail "srv1's alert: $(why srv1)"
wait_grep "$OUT" 'Link eno1 on srv1 went down .*linkDown traps: 1, linkUp traps: 0, kernel link-down lines: 1' ||
    fail "srv1's trap and kernel line not one incident: $(why srv1)"
[ "$(nevents net.link.down.alert HOST=srv1)" = 1 ] || fail "two link-down alerts for srv1"
wait_until event_has net.link.flapping.alert HOST=core1 net.interface=xe-1/0/0 net.if_index=12 ||
    fail "the flapping alert: $(why xe-1/0/0)"
[ "$(nevents net.link.flapping.alert HOST=core1)" = 1 ] || fail "more than one flapping alert"
wait_until event_has bgp.peer.down.alert HOST=rtr1 bgp.peer=192.0.2.9 || fail "BGP peer 192.0.2.9: $(why rtr1)"

# the peer and the battery come back: their alerts resolved
send_trap 127.0.0.3 BGP4-MIB::bgpEstablished bgpPeerLastError.192.0.2.9 x 0000 bgpPeerState.192.0.2.9 i 6
wait_until alert_state resolved corral.alert_id=bgp.peer.down/rtr1/192.0.2.9 ||
    fail "the BGP alert of 192.0.2.9 not resolved: $("$CORRAL" alerts $S)"
alert_state firing corral.alert_id=bgp.peer.down/rtr1/198.51.100.7 || fail "another peer's alert resolved"
send_trap 127.0.0.4 UPS-MIB::upsTrapAlarmEntryRemoved upsAlarmId.3 i 3 upsAlarmDescr.3 o UPS-MIB::upsAlarmLowBattery
wait_until alert_state resolved corral.alert_id=ups.low_battery/ups1 ||
    fail "the low-battery alert not resolved: $("$CORRAL" alerts $S)"
# the link comes back: the alert resolved
send_trap 127.0.0.9 IF-MIB::linkUp ifIndex.3 i 3 ifAdminStatus.3 i 1 ifOperStatus.3 i 1 ifDescr.3 s ge-0/0/3
wait_until alert_state resolved corral.alert_id=net.link.down/edge1/ge-0_0_3 ||
    fail "the link-down alert not resolved: $("$CORRAL" alerts $S)"
wait_until event_has net.link.down.clear HOST=edge1 net.interface=ge-0/0/3 || fail "no clear for edge1: $(why edge1)"

# ---- topology: sw1's port ge-0/0/1 goes down (a real trap) and stays down
send_trap 127.0.0.7 IF-MIB::linkDown ifIndex.1 i 1 ifAdminStatus.1 i 1 ifOperStatus.1 i 2 \
    ifDescr.1 s ge-0/0/1
wait_until alert_state firing corral.event=net.link.down.alert HOST=sw1 ||
    fail "sw1's link-down alert does not fire: $("$CORRAL" alerts $S)"
wait_until delivered "net.link.down/sw1/ge-0_0_1" || fail "sw1's link-down alert not delivered"
# the hosts log once, then stop (their absence alerts fire 1 s later)
for h in web1 web3 app1; do send "$h app: hello"; done
wait_until delivered "corral.absence/web3" || fail "web3 (behind ge-0/0/2) not reported absent"
for h in web1 app1; do
    wait_until alert_state inhibited rule_id=corral.absence.down HOST=$h ||
        fail "$h's absence alert not inhibited: $("$CORRAL" alerts $S)"
    delivered "corral.absence/$h" && fail "$h's absence alert delivered while its port is down"
done
alert_state firing rule_id=corral.absence.down HOST=web3 || fail "web3's absence alert not firing"
# the port comes back (a real linkUp): the link-down alert resolves, the absence alerts go out
send_trap 127.0.0.7 IF-MIB::linkUp ifIndex.1 i 1 ifAdminStatus.1 i 1 ifOperStatus.1 i 1 \
    ifDescr.1 s ge-0/0/1
wait_until alert_state resolved corral.alert_id=net.link.down/sw1/ge-0_0_1 ||
    fail "sw1's link-down alert not resolved: $("$CORRAL" alerts $S)"
for h in web1 app1; do
    wait_until delivered "corral.absence/$h" || fail "$h's absence alert not released"
    alert_state firing rule_id=corral.absence.down HOST=$h || fail "$h's absence alert not firing"
done
corrald_alive
stop_corrald
echo "ok: real traps through rules/snmp.xml: link down/up, flapping, reboot loop, BGP, UPS, auth failures, trap + kernel line, topology inhibition"
