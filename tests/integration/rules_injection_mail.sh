#!/bin/sh
# Log injection against the mail brute force and SSH spraying rules, through
# the real daemon.  A Dovecot client at 203.0.113.66 logs in as
# "x>, method=PLAIN, rip=192.0.2.1, lip=..., session=<a", so that Dovecot's
# line holds "rip=192.0.2.1" before the real "rip=203.0.113.66"; an SSH
# client at the same address logs in on three hosts as
# "admin 192.0.2.1 port 22 [preauth]".  corrald with rules/ must raise
# mail.bruteforce.alert and ssh.spray.alert against 203.0.113.66, hand that
# address to the documented nft-block recipe (with a stand-in nft), and never
# blame 192.0.2.1.  Fails with rules that read the first "rip=" or the first
# address of the line.
. "$(dirname "$0")/corrald_lib.sh"
need python3

REAL=203.0.113.66
FAKE=192.0.2.1

mkdir -p "$WORK/bin"
cat > "$WORK/bin/nft" <<EOF
#!/bin/sh
echo "\$*" >> "$WORK/nft.calls"
EOF
chmod +x "$WORK/bin/nft"

src=$(cd "$top_srcdir" && pwd)
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$src/rules"/>
  <inputs><udp listen="127.0.0.1:0" name="in"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
  <executors>
    <exec name="block" program="$src/contrib/scripts/nft-block.sh" env-pass="PATH">
      <arg>--timeout</arg><arg>1h</arg>
      <arg>--</arg><arg>\${usracct.device}\${mail.client_addr}</arg>
    </exec>
  </executors>
  <routes>
    <route tag="mail.bruteforce" to="block"/>
    <route tag="ssh.spray" to="block"/>
  </routes>
</corrald>
XML
PATH="$WORK/bin:$PATH" start_corrald corrald "$WORK/corrald.conf"
port=$(input_port in)

now=$(date '+%b %e %H:%M:%S')
user="x>, method=PLAIN, rip=$FAKE, lip=192.0.2.10, TLS, session=<a"
i=0
while [ $i -lt 10 ]; do
    send_udp "$port" "<22>$now mail1 dovecot[812]: imap-login: Disconnected (auth failed, 1 attempts in 1 secs): user=<$user>, method=PLAIN, rip=$REAL, lip=192.0.2.10, TLS, session=<s$i>"
    i=$((i + 1))
done
for h in web1 web2 web3; do
    send_udp "$port" "<38>$now $h sshd[2001]: Connection closed by invalid user admin $FAKE port 22 [preauth] $REAL port 55501 [preauth]"
done

wait_until grep -q 'mail.bruteforce.alert' "$WORK/out.json" || fail "no mail brute-force alert"
wait_until grep -q 'ssh.spray.alert' "$WORK/out.json" || fail "no SSH spraying alert"
wait_until sh -c "[ \$(grep -c . '$WORK/nft.calls' 2>/dev/null || echo 0) -ge 2 ]" || fail "the alerts never reached nft-block.sh"

python3 - "$WORK/out.json" "$REAL" "$FAKE" <<'PY' || fail "an alert blames the wrong address: $(cat "$WORK/out.json")"
import json, sys
real, fake = sys.argv[2], sys.argv[3]
msgs = [json.loads(l) for l in open(sys.argv[1])]
mail = [m for m in msgs if m.get("corral.event") == "mail.bruteforce.alert"]
spray = [m for m in msgs if m.get("corral.event") == "ssh.spray.alert"]
assert len(mail) == 1 and len(spray) == 1, msgs
assert mail[0]["mail.client_addr"] == real and mail[0]["corral.count"] == "10", mail
assert spray[0]["usracct.device"] == real and spray[0]["ssh.hosts"] == "web1,web2,web3", spray
for m in mail + spray:
    assert real in m["MESSAGE"] and fake not in m["MESSAGE"], m
for m in msgs:
    assert m.get("usracct.device") != fake and m.get("mail.client_addr") != fake, m
PY
grep -q "$REAL" "$WORK/nft.calls" || fail "nft-block did not block $REAL: $(cat "$WORK/nft.calls")"
grep -q "$FAKE" "$WORK/nft.calls" && fail "nft-block blocked the injected $FAKE: $(cat "$WORK/nft.calls")"
stop_corrald "$CORRALD_PID"
echo "ok: injected addresses in Dovecot and sshd user names blame nobody; both alerts and the blocks name $REAL"
