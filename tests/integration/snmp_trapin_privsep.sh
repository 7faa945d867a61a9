#!/bin/sh
# snmp_trapin_privsep: the <snmp-trap> input under privilege separation,
# started as root with <daemon user="nobody">.  The SNMPv3 password files
# are root's, 0600: the engine process (nobody, seccomp filter on) could not
# read them, and its memory holds neither password (scanned through
# /proc/PID/mem): the executor process derived the keys before the fork.
# With those keys the engine takes an authPriv SHA/AES trap and answers an
# authPriv SHA/AES inform (snmpinform exits 0) and a v2c inform, filtered.
# Needs root; skipped (77) otherwise.
. "$(dirname "$0")/corrald_lib.sh"
need snmptrap snmpinform python3 setpriv
# net-snmp's senders keep engine boots and ids in a persistent file: one of
# the test's own, not the machine's /var/lib/snmp that parallel tests share
SNMP_PERSISTENT_DIR=$WORK/snmp-persist
export SNMP_PERSISTENT_DIR
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to test the privilege drop"; exit 77; }
id nobody > /dev/null 2>&1 || { echo "skipped: no user nobody"; exit 77; }

MIBS=$top_srcdir/tests/data/mibs
SENDER_EID=0x8000000001020304
# the engine, as nobody, reads the configuration and writes the output
chmod 755 "$WORK"
mkdir -p "$WORK/out"
chown nobody "$WORK/out"
umask 077
printf 'authpass-privsep\n' > "$WORK/alice.auth" # the secrets: root's, 0600
printf 'privpass-privsep\n' > "$WORK/alice.priv"
umask 022
OUT=$WORK/out/out.json
cat > "$WORK/corrald.conf" <<EOF
<corrald>
  <rules path="$HERE/inputs_rules.xml"/>
  <daemon user="nobody"/>
  <log level="debug"/>
  <stats listen="127.0.0.1:0"/>
  <inputs>
    <snmp-trap listen="udp:127.0.0.1:0" name="traps" mibs="$MIBS" community="public,canary-c0mmunity-5e1f">
      <user name="alice" auth="SHA" auth-password-file="$WORK/alice.auth"
            priv="AES" priv-password-file="$WORK/alice.priv" engine-id="$SENDER_EID"/>
    </snmp-trap>
  </inputs>
  <outputs>
    <file path="$OUT" format="json" select="all"/>
  </outputs>
</corrald>
EOF
chmod 644 "$WORK/corrald.conf"
start_corrald corrald "$WORK/corrald.conf"
ENGINE=$(sed -n 's/.*privilege separation: engine process \([0-9]*\) .*/\1/p' "$CORRALD_LOG" | tail -n 1)
[ -n "$ENGINE" ] || fail "no engine process logged"
status_field() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
[ "$(status_field "$ENGINE" Uid)" = "$(id -u nobody)" ] || fail "the engine is not nobody"
[ "$(status_field "$ENGINE" Seccomp)" = 2 ] || fail "the engine has no seccomp filter"
setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$WORK/alice.auth" 2>/dev/null &&
    fail "nobody can read the password file"

PORT=$(input_port traps)
AT=127.0.0.1:$PORT
M="-M $MIBS -m ALL"
V3="-v3 -u alice -a SHA -A authpass-privsep -x AES -X privpass-privsep -l authPriv"
snmptrap $M $V3 -e $SENDER_EID "$AT" 5 IF-MIB::linkDown ifIndex.2 i 2 || fail "snmptrap v3"
snmpinform $M $V3 "$AT" 6 IF-MIB::linkUp ifIndex.2 i 2 || fail "snmpinform v3: no answer"
snmpinform $M -v2c -c public "$AT" 7 SNMPv2-MIB::coldStart || fail "snmpinform v2c: no answer"
wait_lines "$OUT" 3 || fail "only $(check lines "$OUT") of 3 traps"
grep -q '"MESSAGE":"IF-MIB::linkDown ifIndex=2"' "$OUT" || fail "no linkDown"
grep -q '"MESSAGE":"IF-MIB::linkUp ifIndex=2"' "$OUT" || fail "no linkUp"

# neither password anywhere in the engine's memory; the community, which the
# engine must hold, is found by the same scan (the scan can see the heap).
# Mappings over 1 GiB are the sanitizers' shadow and reserved ranges: read
# in chunks they would take minutes and hold none of the engine's data.
python3 - "$ENGINE" <<'PY' || fail "a password in the engine's memory"
import re, sys
pid = sys.argv[1]
secrets = (b"authpass-privsep", b"privpass-privsep")
canary = b"canary-c0mmunity-5e1f"
found, seen = [], False
chunk = 16 << 20
with open("/proc/%s/maps" % pid) as maps, open("/proc/%s/mem" % pid, "rb", 0) as mem:
    for l in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", l)
        if not m or "[vvar]" in l or "[vsyscall]" in l:
            continue
        a, b = int(m.group(1), 16), int(m.group(2), 16)
        if b - a > (1 << 30):
            continue
        tail = b""
        while a < b:
            try:
                mem.seek(a)
                data = tail + mem.read(min(chunk, b - a))
            except (OSError, ValueError, OverflowError):
                break
            for secret in secrets:
                if secret in data:
                    found.append((secret, l.strip()))
            seen = seen or canary in data
            tail = data[-32:]
            a += chunk
for s, where in found:
    print("found", s, "in", where)
if not seen:
    print("the scan did not find the community the engine holds")
sys.exit(1 if found or not seen else 0)
PY
stop_corrald
