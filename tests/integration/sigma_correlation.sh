#!/bin/sh
# Sigma correlation rules in corrald and `corral match`: an event_count rule
# (3 failed SSH passwords for one user on one host within 10 minutes) over a
# detection rule on what rules/sshd.xml extracts raises one alert per group,
# with the correlation's title, its level, the group-by values as labels and
# in the alert id, to an exec executor; the detection rule it refers to
# (generate: false) raises none of its own.  `corral match -j 2` gives the
# output of `corral match -j 1` for correlated lines of many groups, both
# when the messages are sharded by the correlations' one group-by and when
# two group-bys make correlation run on one thread.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ -x "$CORRALD" ] || { echo "skipped: $CORRALD not built"; exit 77; }

mkdir -p "$WORK/sigma"
cat > "$WORK/sigma/ssh_bruteforce.yml" <<'YML'
title: SSH password guessing for one user
id: 7c1e0a52-3f4b-4d7e-8a90-1b2c3d4e5f60
level: critical
correlation:
    type: event_count
    rules:
        - ssh_failed_password
    group-by:
        - Hostname
        - User
    timespan: 10m
    condition:
        gte: 3
---
title: Failed SSH password
id: 0b9d3a71-6e2c-4f58-9d14-a7c3e5f20b18
name: ssh_failed_password
logsource:
    product: linux
    service: sshd
detection:
    selection:
        Message|startswith: 'Failed password'
    condition: selection
level: low
YML
MAP=$top_srcdir/etc/sigma-mapping.yml

# ---- corral match: -j 2 gives what -j 1 gives ----
python3 - "$WORK/auth.log" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(3000):
        s = i // 10
        f.write("Dec  6 10:%02d:%02d gw%d sshd[%d]: Failed password for u%d from 192.0.2.%d port 22 ssh2\n"
                % (s // 60 % 60, s % 60, i % 7, 100 + i, (i * 7) % 11, i % 200))
PY
# a rule with no context: on its own, its messages may go to any shard
cat > "$WORK/plain.xml" <<'XML'
<patterndb version='4' pub_date='2026-01-01'><ruleset name='s' id='s'>
<pattern>sshd</pattern><rules><rule provider='t' id='t.fail' class='system'>
<patterns><pattern>Failed password for @ESTRING:usracct.username: @from @ESTRING:usracct.device: @</pattern></patterns>
</rule></rules></ruleset></patterndb>
XML
for j in 1 2; do
    "$CORRAL" match -r "$WORK/plain.xml" --sigma "$WORK/sigma" --sigma-mapping "$MAP" \
        -f "$WORK/auth.log" -j $j --json --now 2026-12-06T12:00:00Z > "$WORK/match$j.json" \
        2> "$WORK/match$j.err" || fail "corral match -j $j failed: $(cat "$WORK/match$j.err")"
done
n=$(grep -c '"corral.alert_id":"sigma/7c1e0a52' "$WORK/match1.json")
[ "$n" -gt 50 ] || fail "corral match -j 1 raised $n correlation alerts"
cmp -s "$WORK/match1.json" "$WORK/match2.json" ||
    fail "corral match -j 2 differs from -j 1: $(diff "$WORK/match1.json" "$WORK/match2.json" | head -5)"
echo "ok: corral match -j 2 gives what -j 1 gives ($n correlation alerts)"

# a second correlation that groups by another field: correlation on one thread, same output
mkdir -p "$WORK/sigma2"
cp "$WORK/sigma/ssh_bruteforce.yml" "$WORK/sigma2/"
cat > "$WORK/sigma2/spray.yml" <<'YML'
title: SSH password spraying from one address
id: 3d5f7a90-1c2e-4b6d-8f01-23456789abcd
correlation:
    type: value_count
    rules: [ssh_failed_password]
    group-by: [SourceIp]
    timespan: 5m
    condition:
        field: User
        gte: 3
YML
for j in 1 2; do
    "$CORRAL" match -r "$WORK/plain.xml" --sigma "$WORK/sigma2" --sigma-mapping "$MAP" \
        -f "$WORK/auth.log" -j $j --json --now 2026-12-06T12:00:00Z > "$WORK/spray$j.json" \
        2> "$WORK/spray$j.err" || fail "corral match -j $j failed: $(cat "$WORK/spray$j.err")"
done
n=$(grep -c '"corral.alert_id":"sigma/3d5f7a90' "$WORK/spray1.json")
[ "$n" -gt 5 ] || fail "corral match -j 1 raised $n value_count alerts"
cmp -s "$WORK/spray1.json" "$WORK/spray2.json" ||
    fail "corral match -j 2 differs from -j 1 with two group-bys: $(diff "$WORK/spray1.json" "$WORK/spray2.json" | head -5)"
echo "ok: with two different group-bys, -j 2 still gives what -j 1 gives ($n value_count alerts)"

# ---- corrald: the alert to an exec executor ----
cat > "$WORK/hook.sh" <<SH
#!/bin/sh
cat >> "$WORK/alerts.json"
SH
chmod +x "$WORK/hook.sh"
CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/rules/sshd.xml"/>
  <sigma rules="$WORK/sigma" mapping="$MAP"/>
  <control socket="$CONTROL"/>
  <inputs><udp listen="127.0.0.1:0" name="udp"/></inputs>
  <executors spool="$WORK/spool">
    <exec name="hook" program="$WORK/hook.sh" stdin="json"/>
  </executors>
  <routes>
    <route tag="corral.alert" to="hook"/>
  </routes>
</corrald>
XML
mkdir -p "$WORK/spool"
start_corrald corrald "$WORK/corrald.conf"
wait_log "sigma: 1 correlation rules loaded" || fail "corrald did not load the correlation rule"
[ "$(metric corral_sigma_correlation_rules)" = 1 ] ||
    fail "corral_sigma_correlation_rules is $(metric corral_sigma_correlation_rules)"
port=$(input_port udp)
# two for root on gw1, three for admin on gw2: the third for admin fires
send_udp "$port" "<38>Dec  6 10:00:01 gw1 sshd[71]: Failed password for root from 192.0.2.7 port 2201 ssh2"
send_udp "$port" "<38>Dec  6 10:00:02 gw1 sshd[72]: Failed password for root from 192.0.2.7 port 2202 ssh2"
send_udp "$port" "<38>Dec  6 10:00:03 gw2 sshd[73]: Failed password for admin from 192.0.2.8 port 2203 ssh2"
send_udp "$port" "<38>Dec  6 10:00:04 gw2 sshd[74]: Failed password for admin from 192.0.2.8 port 2204 ssh2"
send_udp "$port" "<38>Dec  6 10:00:05 gw2 sshd[75]: Failed password for admin from 192.0.2.8 port 2205 ssh2"
wait_lines "$WORK/alerts.json" 1 || fail "the exec program never got the correlation alert"
# then the third for root on gw1: the second alert
send_udp "$port" "<38>Dec  6 10:00:06 gw1 sshd[76]: Failed password for root from 192.0.2.7 port 2206 ssh2"
wait_lines "$WORK/alerts.json" 2 || fail "no second correlation alert"
python3 - "$WORK/alerts.json" <<'PY' || fail "not the alerts expected: $(cat "$WORK/alerts.json")"
import json, sys
a, b = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()[:2]]
ident = "sigma/7c1e0a52-3f4b-4d7e-8a90-1b2c3d4e5f60/"
assert a["corral.summary"] == "SSH password guessing for one user", a
assert a["corral.severity"] == "critical" and a["sigma.level"] == "critical", a
assert a["corral.alert_id"] == ident + "gw2/admin", a
assert a["HOST"] == "gw2" and a["usracct.username"] == "admin", a
assert a[".classifier.class"] == "sigma", a
assert b["corral.alert_id"] == ident + "gw1/root" and b["HOST"] == "gw1", b
PY
stop_corrald "$CORRALD_PID"
echo "ok: an event_count correlation's alerts reach an exec executor with their labels"
