#!/bin/sh
# snmp_trapin_snmptt: the same traps, with the same MIBs (tests/data/mibs),
# received by corrald's <snmp-trap> input and by the real snmptrapd +
# snmptt (standalone, from snmptrapd's traphandle, translating with
# net-snmp's Perl module), give the same names and values; and snmptrapd's
# output in the -F format of corral(1), replayed by `corral match
# --snmptrapd`, gives the same messages as the daemon.  The differences
# that remain are those corrald.conf(5) lists (instance indexes apart,
# OID values and trap names with their module, binary strings as 0x...,
# OIDs no MIB defines numerically): normalised here.
. "$(dirname "$0")/corrald_lib.sh"
need snmptrap snmptrapd snmptt python3
# net-snmp's senders keep engine boots and ids in a persistent file: one of
# the test's own, not the machine's /var/lib/snmp that parallel tests share
SNMP_PERSISTENT_DIR=$WORK/snmp-persist
export SNMP_PERSISTENT_DIR
[ -f /etc/snmp/snmptt.ini ] || { echo "$TEST: no /etc/snmp/snmptt.ini, skipped"; exit 77; }

MIBS=$top_srcdir/tests/data/mibs
RULES=$HERE/inputs_rules.xml
OUT=$WORK/out.json
SENDER_EID=0x8000000001020304
printf 'authpass123\n' > "$WORK/alice.auth"
printf 'privpass123\n' > "$WORK/alice.priv"
chmod 600 "$WORK/alice.auth" "$WORK/alice.priv"
cat > "$WORK/corrald.conf" <<EOF
<corrald>
  <rules path="$RULES"/>
  <stats listen="127.0.0.1:0"/>
  <inputs>
    <snmp-trap listen="udp:127.0.0.1:0" name="traps" mibs="$MIBS" community="public">
      <user name="alice" auth="SHA" auth-password-file="$WORK/alice.auth"
            priv="AES" priv-password-file="$WORK/alice.priv" engine-id="$SENDER_EID"/>
    </snmp-trap>
  </inputs>
  <outputs>
    <file path="$OUT" format="json" select="all"/>
  </outputs>
</corrald>
EOF
start_corrald corrald "$WORK/corrald.conf"
PORT=$(input_port traps)

# snmptt, standalone, fed by snmptrapd's traphandle: one event for every trap,
# its varbinds as "name:value" joined by " ## "
cat > "$WORK/snmptt.conf" <<EOF
EVENT anytrap .1.* "Status Events" Normal
FORMAT \$O \$+*
EOF
awk -v conf="$WORK/snmptt.conf" -v work="$WORK" '
    /^snmptt_conf_files *=/ { print "snmptt_conf_files = <<END"; print conf; print "END"; skip = 1; next }
    skip && /^END/ { skip = 0; next }
    skip { next }
    /^log_file *=/ { print "log_file = " work "/snmptt.log"; next }
    /^#?mibs_environment *=/ { print "mibs_environment = ALL"; next }
    /^wildcard_expansion_separator *=/ { print "wildcard_expansion_separator = \" ## \""; next }
    /^(net_snmp_perl_enable|translate_integers|translate_value_oids) *=/ { sub(/=.*/, "= 1"); print; next }
    /^(syslog_enable|syslog_system_enable|log_system_enable|ipv6_enable|dns_enable) *=/ {
        sub(/=.*/, "= 0"); print; next }
    /^unknown_trap_log_file *=/ { print "unknown_trap_log_file = " work "/snmptt-unknown.log"; next }
    { print }' /etc/snmp/snmptt.ini > "$WORK/snmptt.ini"
mkdir -p "$WORK/persist1" "$WORK/persist2"
cat > "$WORK/trapd1.conf" <<EOF
disableAuthorization yes
createUser -e $SENDER_EID alice SHA authpass123 AES privpass123
traphandle default env MIBDIRS=$MIBS MIBS=ALL snmptt --ini=$WORK/snmptt.ini
EOF
cp "$WORK/trapd1.conf" "$WORK/trapd2.conf"
sed -i '/traphandle/d' "$WORK/trapd2.conf"
SNMP_PERSISTENT_DIR=$WORK/persist1 MIBDIRS=$MIBS MIBS=ALL \
    snmptrapd -f -Lf "$WORK/trapd1.log" -C -c "$WORK/trapd1.conf" -n -On udp:127.0.0.1:0 \
    > "$WORK/trapd1.out" 2>&1 &
TRAPD1=$!
track $TRAPD1
# the second writes the replay format of corral(1)
SNMP_PERSISTENT_DIR=$WORK/persist2 MIBDIRS=$MIBS MIBS=ALL \
    snmptrapd -f -Lf "$WORK/replay.txt" -C -c "$WORK/trapd2.conf" -n -On -Oe -Ox -OU \
    -F '%a\t%b\t%P\t%N\t%w\t%q\t%T\t%v\n' udp:127.0.0.1:0 > "$WORK/trapd2.out" 2>&1 &
TRAPD2=$!
track $TRAPD2
has_port() {
    [ -n "$(listening_ports "$1" udp)" ]
}
wait_until has_port $TRAPD1 || fail "snmptrapd 1 has no port"
wait_until has_port $TRAPD2 || fail "snmptrapd 2 has no port"
P1=$(listening_ports $TRAPD1 udp | head -n 1)
P2=$(listening_ports $TRAPD2 udp | head -n 1)

M="-M $MIBS -m ALL"
V3A="-v3 -u alice -a SHA -A authpass123 -x AES -X privpass123 -l authPriv -e $SENDER_EID"
for p in $PORT $P1 $P2; do
    AT=127.0.0.1:$p
    snmptrap $M -v1 -c public "$AT" IF-MIB::ifMIB 10.1.2.3 2 0 1234 \
        ifIndex.3 i 3 ifDescr.3 s ge-0/0/1 || fail "snmptrap v1 to $p"
    snmptrap $M -v2c -c public "$AT" 4321 IF-MIB::linkDown ifIndex.3 i 3 ifAdminStatus.3 i 1 \
        ifOperStatus.3 i 2 ifDescr.3 s "ge 0/0/1" || fail "snmptrap v2c to $p"
    snmptrap $M $V3A "$AT" 55 CORRAL-TEST-MIB::ctEvent ctAddress.0 a 10.0.0.1 \
        ctCount.0 c 77 ctLevel.0 u 5 ctText.0 s 'say "hi" = \ok' ctBytes.0 x 00FF \
        ctWhat.0 o IF-MIB::linkUp ctSeverity.0 i 3 || fail "snmptrap v3 to $p"
    snmptrap $M -v1 -c public "$AT" CORRAL-TEST-MIB::corralTest 10.9.9.9 6 1 66 \
        ctSeverity.0 i 2 || fail "snmptrap v1 enterprise to $p"
    snmptrap $M -v2c -c public "$AT" 77 SNMPv2-MIB::coldStart sysName.0 s core-sw1 \
        .1.3.6.1.4.1.99999.7.7 i 1 || fail "snmptrap v2c coldStart to $p"
done
N=5
wait_lines "$OUT" $N || fail "corrald: only $(check lines "$OUT") of $N traps"
wait_grep "$WORK/snmptt.log" 'Status Events' $N || fail "snmptt: not all $N traps"
wait_grep "$WORK/replay.txt" 'SNMP v' $N || fail "snmptrapd: not all $N traps"

python3 - "$OUT" "$WORK/snmptt.log" <<'PY' || fail "corrald and snmptt differ"
import json, re, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
theirs = [l.rstrip("\n") for l in open(sys.argv[2]) if "Status Events" in l]
def norm_value(v):
    # snmptt writes binary strings as hex bytes with spaces ("00 FF "), corrald as 0x00ff
    if re.fullmatch(r"(?:[0-9A-F]{2} )+", v):
        return "0x" + v.replace(" ", "").lower()
    return v
def norm_ours(v):
    # OID values: corrald writes MODULE::name (as trap names), snmptt the name alone
    return re.sub(r"^[A-Za-z][A-Za-z0-9-]*::", "", v)
bad = 0
for m, line in zip(ours, theirs):
    # "... Normal "Status Events" HOST - TRAP name.idx:value ## name.idx:value"
    rest = line.split('"Status Events" ', 1)[1].split(" - ", 1)[1]
    trap, _, vbs = rest.partition(" ")
    tt = []
    for vb in vbs.split(" ## ") if vbs else []:
        name, _, value = vb.partition(":")
        tt.append((name, norm_value(value)))
    our_trap = m[".SDATA.snmp.trap"].split("::")[-1]
    names = [k for k in m if k.startswith(".SDATA.snmp.var.")]
    mine = []
    for k in names:
        n = k[len(".SDATA.snmp.var."):]
        idx = m.get(".SDATA.snmp.index." + n)
        # snmptt names a varbind with its instance (ifIndex.3), a numeric OID without the dot
        full = n + "." + idx if idx is not None else n
        mine.append((full, norm_ours(m[k])))
    # an OID no MIB defines: corrald numeric (.1.3.6.1.4.1.99999.7.7), snmptt its nearest
    # known parent and the rest (corralTest.7.7): the same OID, named differently
    for i, ((a, _), (b, v)) in enumerate(zip(mine, tt)):
        if a.startswith(".") and "." in b and a.endswith(b[b.index("."):]):
            tt[i] = (a, v)
    if our_trap != trap or mine != tt:
        print("corrald:", our_trap, mine, "\nsnmptt: ", trap, tt)
        bad += 1
sys.exit(1 if bad or len(ours) != len(theirs) else 0)
PY

# snmptrapd's records replayed: the same messages as the daemon's
"$CORRAL" match --snmptrapd --mibs "$MIBS" -r "$RULES" -j 1 --json -f "$WORK/replay.txt" \
    > "$WORK/replayed.json" 2> "$WORK/replay.err" || fail "corral match --snmptrapd: $(cat "$WORK/replay.err")"
python3 - "$OUT" "$WORK/replayed.json" <<'PY' || fail "replayed messages differ"
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
replayed = [json.loads(l) for l in open(sys.argv[2])]
keys = lambda m: {k: v for k, v in m.items() if k.startswith(".SDATA.snmp.") or k in ("HOST", "PROGRAM", "MESSAGE")}
bad = 0
for a, b in zip(ours, replayed):
    if keys(a) != keys(b):
        print("daemon:  ", keys(a), "\nreplayed:", keys(b)); bad += 1
sys.exit(1 if bad or len(ours) != len(replayed) else 0)
PY
kill $TRAPD1 $TRAPD2
wait_exit $TRAPD1 >/dev/null; untrack $TRAPD1
wait_exit $TRAPD2 >/dev/null; untrack $TRAPD2
stop_corrald
