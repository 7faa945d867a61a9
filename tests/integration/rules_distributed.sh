#!/bin/sh
# SSH distributed brute force through the real daemon (rules/sshd.xml, the
# corral extension also-correlate): "root" fails from five addresses on web1,
# one or two lines each, so that the per-address brute force stays quiet;
# corrald with rules/ must raise ssh.distributed_bruteforce.alert naming the
# five real addresses.  Meanwhile one client at 203.0.113.66 sends five user
# names "root from 192.0.2.N port 22 ssh2": each is a name of its own from one
# address, so it must neither count for root nor raise an alert of its own.
# Fails without also-correlate (the failure lines then join only their
# per-address contexts and nothing counts per user name).
. "$(dirname "$0")/corrald_lib.sh"
need python3

src=$(cd "$top_srcdir" && pwd)
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$src/rules"/>
  <inputs><udp listen="127.0.0.1:0" name="in"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="generated"/></outputs>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
port=$(input_port in)

now=$(date '+%b %e %H:%M:%S')
h="<38>$now web1"
send_udp "$port" \
    "$h sshd[3001]: Failed password for root from 192.0.2.9 port 22 ssh2 from 203.0.113.66 port 55501 ssh2" \
    "$h sshd[3002]: Failed password for root from 192.0.2.2 port 22 ssh2 from 203.0.113.66 port 55502 ssh2" \
    "$h sshd[2001]: Failed password for root from 198.51.100.1 port 40001 ssh2" \
    "$h sshd[2002]: Failed password for root from 198.51.100.2 port 40002 ssh2" \
    "$h sshd[3003]: Failed password for invalid user root from 192.0.2.3 port 22 ssh2 from 203.0.113.66 port 55503 ssh2" \
    "$h sshd[2002]: Failed password for root from 198.51.100.2 port 40002 ssh2" \
    "$h sshd[2003]: Failed password for invalid user admin from 198.51.100.3 port 40003 ssh2" \
    "$h sshd[2004]: Failed password for root from 198.51.100.3 port 40004 ssh2" \
    "$h sshd[3004]: Failed password for root from 192.0.2.4 port 22 ssh2 from 203.0.113.66 port 55504 ssh2" \
    "$h sshd[2005]: Failed password for root from 198.51.100.4 port 40005 ssh2" \
    "$h sshd[3005]: Failed password for root from 192.0.2.5 port 22 ssh2 from 203.0.113.66 port 55505 ssh2" \
    "$h sshd[2006]: Failed password for root from 198.51.100.5 port 40006 ssh2"

wait_until grep -q 'ssh.distributed_bruteforce.alert' "$WORK/out.json" ||
    fail "no distributed brute-force alert: $(cat "$WORK/out.json" 2>/dev/null)"
# the .66 client's fifth line came before the alert's: its per-address alert is out too
wait_until grep -q 'ssh.bruteforce.alert' "$WORK/out.json" || fail "no per-address alert for 203.0.113.66"

python3 - "$WORK/out.json" <<'PY' || fail "wrong distributed alert: $(cat "$WORK/out.json")"
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
dist = [m for m in msgs if m.get("corral.event") == "ssh.distributed_bruteforce.alert"]
assert len(dist) == 1, dist
a = dist[0]
assert a["usracct.username"] == "root", a
assert a["ssh.addresses"] == "198.51.100.1,198.51.100.2,198.51.100.3,198.51.100.4,198.51.100.5", a
assert a["corral.count"] == "6", a
assert a["corral.alert_id"] == "ssh.distributed_bruteforce/web1/root", a
assert a["corral.severity"] == "major", a
assert "192.0.2" not in a["MESSAGE"] and "203.0.113.66" not in a["MESSAGE"], a
brute = [m for m in msgs if m.get("corral.event") == "ssh.bruteforce.alert"]
assert [m["usracct.device"] for m in brute] == ["203.0.113.66"], brute
PY
stop_corrald "$CORRALD_PID"
echo "ok: root failing from 5 addresses raises ssh.distributed_bruteforce.alert with the real addresses; user names holding addresses count apart"
