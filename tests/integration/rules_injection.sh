#!/bin/sh
# Log injection against the shipped rules, through the real daemon: an SSH
# client at 203.0.113.66 picks user names such as "admin from 192.0.2.1 port
# 22 ssh2", so that sshd's lines also hold "from 192.0.2.1 port 22".  corrald
# with rules/ must raise the brute-force alert against 203.0.113.66, hand
# that address to the documented nft-block recipe (with a stand-in nft), and
# never blame 192.0.2.1.  Fails with rules that read the first address of
# the line (as rules/sshd.xml did before its user names were read up to the
# last " from ").
. "$(dirname "$0")/corrald_lib.sh"
need python3

REAL=203.0.113.66
FAKE=192.0.2.1

# the stand-in nft records each call's arguments, one call per line
mkdir -p "$WORK/bin"
cat > "$WORK/bin/nft" <<EOF
#!/bin/sh
echo "\$*" >> "$WORK/nft.calls"
EOF
chmod +x "$WORK/bin/nft"

# executors want absolute paths
src=$(cd "$top_srcdir" && pwd)
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$src/rules"/>
  <inputs><udp listen="127.0.0.1:0" name="in"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
  <executors>
    <exec name="block" program="$src/contrib/scripts/nft-block.sh" env-pass="PATH">
      <arg>--timeout</arg><arg>1h</arg>
      <arg>--</arg><arg>\${usracct.device}</arg>
    </exec>
  </executors>
  <routes><route tag="ssh.bruteforce" to="block"/></routes>
</corrald>
XML
PATH="$WORK/bin:$PATH" start_corrald corrald "$WORK/corrald.conf"
port=$(input_port in)

# One attacker, five counted failures (Invalid user, then Failed password for
# invalid user), a "message repeated" line, and the end of the connection;
# every line holds the injected address before the real one.
now=$(date '+%b %e %H:%M:%S')
h="<38>$now web1"
send_udp "$port" \
    "$h sshd[2001]: Invalid user admin from $FAKE port 22 from $REAL port 55501" \
    "$h sshd[2001]: Failed password for invalid user admin from $FAKE port 22 ssh2 from $REAL port 55501 ssh2" \
    "$h sshd[2001]: Failed password for invalid user admin from $FAKE port 22 ssh2 from $REAL port 55501 ssh2" \
    "$h sshd[2003]: message repeated 2 times: [ Failed password for invalid user admin from $FAKE port 22 ssh2 from $REAL port 55502 ssh2]" \
    "$h sshd[2003]: Failed password for invalid user oracle from $FAKE port 22 ssh2 from $REAL port 55503 ssh2" \
    "$h sshd[2003]: Failed password for invalid user oracle from $FAKE port 22 ssh2 from $REAL port 55503 ssh2" \
    "$h sshd[2003]: error: maximum authentication attempts exceeded for invalid user oracle from $FAKE port 22 ssh2 [preauth] from $REAL port 55503 ssh2 [preauth]" \
    "$h sshd[2003]: Disconnecting invalid user oracle $FAKE port 22: Too many authentication failures [preauth] $REAL port 55503: Too many authentication failures [preauth]"

wait_until grep -q 'ssh.bruteforce.alert' "$WORK/out.json" || fail "no brute-force alert"
wait_until test -s "$WORK/nft.calls" || fail "the alert never reached nft-block.sh"

python3 - "$WORK/out.json" "$REAL" "$FAKE" <<'PY' || fail "the alert blames the wrong address: $(cat "$WORK/out.json")"
import json, sys
real, fake = sys.argv[2], sys.argv[3]
msgs = [json.loads(l) for l in open(sys.argv[1])]
alerts = [m for m in msgs if m.get("corral.event") == "ssh.bruteforce.alert"]
assert len(alerts) == 1, alerts
a = alerts[0]
assert a["usracct.device"] == real, a
assert a["corral.count"] == "5", a
assert real in a["MESSAGE"] and fake not in a["MESSAGE"], a
# the injected text stays in the user names, whole
assert '"admin from 192.0.2.1 port 22 ssh2"' in a["sshd.users_tried"], a
for m in msgs:
    assert m.get("usracct.device") != fake, m
PY
grep -q "$REAL" "$WORK/nft.calls" || fail "nft-block did not block $REAL: $(cat "$WORK/nft.calls")"
grep -q "$FAKE" "$WORK/nft.calls" && fail "nft-block blocked the injected $FAKE: $(cat "$WORK/nft.calls")"
stop_corrald "$CORRALD_PID"
echo "ok: injected addresses in sshd user names blame nobody; the alert and the block name $REAL"
