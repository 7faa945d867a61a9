#!/bin/sh
# A flood must not hide a real attack, nor hold unbounded memory.  corrald
# with the shipped rules and small limits
# (max-contexts 1000, max-context-bytes 256k) receives over TCP:
#   1. 1,500 spoofed "Accepted password" lines, each from another host and
#      pid: 1,500 session contexts of one rule, more than the whole table;
#   2. a real brute force (five failed passwords from one address): its
#      rule still gets a context of its share, and its alert reaches the
#      exec executor; the session contexts that gave way (one-line
#      contexts of a full share are evicted for new ones) are counted for
#      their rule in /metrics, no refusal for the brute-force rule;
#   3. 100 failed passwords with 30 KB user names from another address: one
#      brute-force context, whose memory stays under max-context-bytes (the
#      oldest messages go, counted).
# Before the per-rule shares, the flood filled the table and the brute force
# raised no alert; before max-context-bytes, the context held 3 MB.
. "$(dirname "$0")/corrald_lib.sh"
need python3

src=$(cd "$top_srcdir" && pwd)
receiver_script
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$src/rules"/>
  <stats listen="127.0.0.1:0"/>
  <limits max-contexts="1000" max-context-bytes="256k"/>
  <inputs><tcp listen="127.0.0.1:0" framing="newline" name="tcp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/receiver.sh"/>
  </executors>
  <routes><route tag="ssh.bruteforce" to="runner"/></routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
port=$(input_port tcp)
now=$(date '+%b %e %H:%M:%S')

# 1. the flood
python3 - "$now" > "$WORK/flood.txt" <<'PY'
import sys
for i in range(1500):
    print("<38>%s spoof%d sshd[%d]: Accepted password for alice from 198.51.100.%d port %d ssh2"
          % (sys.argv[1], i, 10000 + i, i % 250 + 1, 20000 + i))
PY
send_tcp_file "$port" "$WORK/flood.txt"
wait_metric corral_messages_received_total -ge 1500 || fail "the flood was not received"
refused=$(metric corral_rule_contexts_evicted_total rule=corral.sshd.login.accepted)
[ "$refused" -ge 900 ] || fail "session contexts evicted for their rule: $refused, wanted 900 or more"

# 2. the real attack, after the flood
for i in 1 2 3 4 5; do
    echo "<38>$now web1 sshd[3000]: Failed password for root from 203.0.113.9 port 4000$i ssh2"
done > "$WORK/attack.txt"
send_tcp_file "$port" "$WORK/attack.txt"
wait_grep "$WORK/out.json" 'ssh.bruteforce.alert' || fail "the flood hid the brute force: no alert"
wait_lines "$WORK/delivered" 1 || fail "the alert did not reach the exec executor"
[ "$(metric corral_rule_contexts_refused_total rule=corral.sshd.auth.failed)" -eq 0 ] ||
    fail "brute-force contexts were refused"
grep -q 'rule corral.sshd.login.accepted: correlation context of 1 message(s) evicted' \
    "$CORRALD_LOG" || fail "no log line naming the flooded rule"
[ "$(count_matching "$CORRALD_LOG" 'correlation context of')" -le 2 ] ||
    fail "evictions not rate-limited in the log"

# 3. big messages: each failure line joins two contexts, its address's
# (brute force) and its user name's (distributed brute force), and neither
# may grow past max-context-bytes
before=$(metric corral_context_bytes)
python3 - "$now" > "$WORK/big.txt" <<'PY'
import sys
for i in range(100):
    print("<38>%s web2 sshd[777]: Failed password for %s from 203.0.113.50 port %d ssh2"
          % (sys.argv[1], "u" * 30000, 30000 + i))
PY
send_tcp_file "$port" "$WORK/big.txt"
wait_metric corral_messages_received_total -ge 1605 || fail "the big messages were not received"
after=$(metric corral_context_bytes)
grown=$((after - before))
[ "$grown" -le $((2 * 256 * 1024)) ] || fail "two contexts grew by $grown bytes, over twice max-context-bytes 256k"
[ "$grown" -ge $((2 * 128 * 1024)) ] || fail "two contexts grew by only $grown bytes"
[ "$(metric corral_dropped_total reason=context_bytes)" -ge 90 ] ||
    fail "messages dropped for max-context-bytes not counted"
corrald_alive
stop_corrald
echo "ok: the flood of one rule left room for the brute force ($refused contexts evicted, counted per rule); the address's and the user's contexts stayed within max-context-bytes (+$grown bytes)"
