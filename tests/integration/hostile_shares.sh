#!/bin/sh
# Floods of spoofed keys must not use what a real attack needs: rate-limit
# buckets (shared per rule), a rule's own context share (one-off contexts
# give way to new keys), the per-host alert quota (a bucket per attacking
# address).  corrald with the shipped rules, 2 workers and small limits
# (max-contexts 2000, max-rate-buckets 400) receives over TCP:
#   1. 10 spoofed addresses with 5 failures each against web2 (10 alerts),
#      then a real attacker on web2: the shipped rate='10/60' is per address,
#      so the 11th address still raises its alert;
#   2. 2,000 spoofed "Accepted password for root" lines, each from another
#      host and pid: every one a root-login alert with a rate bucket of its
#      own, more than all the buckets; then a real brute force on web1: its
#      alert needs a bucket of the brute-force rule, which the flood cannot
#      take (the flood's rule evicts its own buckets, counted);
#   3. 3,000 one-off spoofed "Failed password" lines from distinct addresses
#      against web3, more than corral.sshd.auth.failed's context share; then
#      a real brute force on web3: the oldest one-line contexts make room
#      (evictions counted for the rule) and it raises its alert.
# With a bucket per host, 1 raised no alert for the real attacker; before the
# bucket shares, 2 raised none; before eviction, 3 raised none.
. "$(dirname "$0")/corrald_lib.sh"
need python3

src=$(cd "$top_srcdir" && pwd)
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$src/rules"/>
  <stats listen="127.0.0.1:0"/>
  <engine workers="2"/>
  <limits max-contexts="2000" max-rate-buckets="400"/>
  <inputs><tcp listen="127.0.0.1:0" framing="newline" name="tcp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
port=$(input_port tcp)
now=$(date '+%b %e %H:%M:%S')

# alerted ADDRESS: out.json has the brute-force alert of ADDRESS
alerted() {
    grep '"ssh.bruteforce.alert"' "$WORK/out.json" 2>/dev/null | grep -q "\"$1\""
}

# attack HOST ADDRESS: five failed passwords
attack() {
    for i in 1 2 3 4 5; do
        echo "<38>$now $1 sshd[3000]: Failed password for root from $2 port 4000$i ssh2"
    done > "$WORK/attack.txt"
    send_tcp_file "$port" "$WORK/attack.txt"
}

# 1. the per-host quota
python3 - "$now" > "$WORK/fake.txt" <<'PY'
import sys
for a in range(10):
    for i in range(5):
        print("<38>%s web2 sshd[%d]: Failed password for root from 192.0.2.%d port %d ssh2"
              % (sys.argv[1], 6000 + a, a + 1, 40000 + i))
PY
send_tcp_file "$port" "$WORK/fake.txt"
wait_until alerted 192.0.2.10 || fail "the spoofed addresses raised no alerts"
attack web2 203.0.113.11
wait_until alerted 203.0.113.11 || fail "10 spoofed addresses used up web2's alerts"
# 2. rate buckets
python3 - "$now" > "$WORK/flood1.txt" <<'PY'
import sys
for i in range(2000):
    print("<38>%s spoof%d sshd[%d]: Accepted password for root from 198.51.100.%d port %d ssh2"
          % (sys.argv[1], i, 10000 + i, i % 250 + 1, 20000 + i))
PY
send_tcp_file "$port" "$WORK/flood1.txt"
wait_metric corral_messages_received_total -ge 2055 || fail "flood 1 was not received"
attack web1 203.0.113.9
wait_until alerted 203.0.113.9 || fail "the flood of root logins took the buckets: no brute-force alert"
evicted=$(metric corral_rule_rate_buckets_evicted_total rule=corral.sshd.login.accepted)
[ "$evicted" -ge 1000 ] || fail "root-login buckets evicted: $evicted, wanted 1000 or more"
[ "$(metric corral_rule_rate_refused_total rule=corral.sshd.auth.failed)" -eq 0 ] ||
    fail "brute-force alerts suppressed for want of a bucket"
grep -q 'rule corral.sshd.login.accepted: rate limit bucket evicted' "$CORRALD_LOG" ||
    fail "no log line naming the rule whose buckets were evicted"

# 3. a rule's own context share
python3 - "$now" > "$WORK/flood2.txt" <<'PY'
import sys
for i in range(3000):
    print("<38>%s web3 sshd[%d]: Failed password for root from 10.%d.%d.%d port %d ssh2"
          % (sys.argv[1], 5000 + i, i // 65536, i // 256 % 256, i % 256, 30000 + i % 30000))
PY
send_tcp_file "$port" "$WORK/flood2.txt"
wait_metric corral_messages_received_total -ge 5060 || fail "flood 2 was not received"
attack web3 203.0.113.10
wait_until alerted 203.0.113.10 || fail "one-off contexts filled the rule's share: no brute-force alert"
evicted=$(metric corral_rule_contexts_evicted_total rule=corral.sshd.auth.failed)
[ "$evicted" -ge 2000 ] || fail "one-off contexts evicted: $evicted, wanted 2000 or more"
[ "$(metric corral_rule_contexts_refused_total rule=corral.sshd.auth.failed)" -eq 0 ] ||
    fail "brute-force contexts were refused"

corrald_alive
stop_corrald
echo "ok: 2,000 spoofed root logins, 3,000 one-off failures and 10 spoofed attackers left every real brute force its alert"
