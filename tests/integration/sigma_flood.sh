#!/bin/sh
# A flood of spoofed group-by values must not keep a Sigma correlation from
# firing, nor hold unbounded memory.  corrald with an event_count rule (5
# failed SSH passwords for one user on one host within 10 minutes) and
# max-sigma-memory 512k receives over TCP 105,000 failed passwords, each
# for another spoofed user (more groups than the part of the budget holds,
# and more than 100,000), with the real brute force's five lines for root
# interleaved after the first 101,000.  The real group fires exactly once
# (one alert to the exec executor, one message generated), the memory the
# groups hold stays within the budget, and the one-event groups that gave
# way are counted as evicted, none of the real group's events as dropped.
# Before the budget, 100,000 groups were held whatever their memory, and
# the events of a new group beyond them were dropped: no alert.
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/sigma" "$WORK/spool"
cat > "$WORK/sigma/ssh_bruteforce.yml" <<'YML'
title: SSH password guessing for one user
id: 5a0c7e12-9b3d-4f61-a2e8-c4d6f8a0b2e4
level: high
correlation:
    type: event_count
    rules:
        - ssh_failed_password
    group-by:
        - Hostname
        - User
    timespan: 10m
    condition:
        gte: 5
---
title: Failed SSH password
id: 1f3b5d7e-2c4a-4e6f-8a0b-9c1d3e5f7a9b
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
cat > "$WORK/plain.xml" <<'XML'
<patterndb version='4' pub_date='2026-01-01'><ruleset name='s' id='s'>
<pattern>sshd</pattern><rules><rule provider='t' id='t.fail' class='system'>
<patterns><pattern>Failed password for @ESTRING:usracct.username: @from @ESTRING:usracct.device: @</pattern></patterns>
</rule></rules></ruleset></patterndb>
XML
cat > "$WORK/hook.sh" <<SH
#!/bin/sh
cat >> "$WORK/alerts.json"
SH
chmod +x "$WORK/hook.sh"
CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/plain.xml"/>
  <sigma rules="$WORK/sigma" mapping="$top_srcdir/etc/sigma-mapping.yml"/>
  <engine workers="1"/>
  <limits max-sigma-memory="512k"/>
  <control socket="$CONTROL"/>
  <inputs><tcp listen="127.0.0.1:0" framing="newline" name="tcp"/></inputs>
  <executors spool="$WORK/spool">
    <exec name="hook" program="$WORK/hook.sh" stdin="json"/>
  </executors>
  <routes>
    <route tag="corral.alert" to="hook"/>
  </routes>
</corrald>
XML
start_corrald corrald "$WORK/corrald.conf"
wait_log "sigma: 1 correlation rules loaded" || fail "corrald did not load the correlation rule"
port=$(input_port tcp)
now=$(date '+%b %e %H:%M:%S')

N=105000
python3 - "$now" "$N" > "$WORK/flood.txt" <<'PY'
import sys
now, n = sys.argv[1], int(sys.argv[2])
real = 0
for i in range(n):
    print("<38>%s gw1 sshd[%d]: Failed password for spoof%d from 192.0.2.%d port 22 ssh2"
          % (now, 1000 + i % 30000, i, i % 250))
    if i >= 101000 and i % 500 == 0 and real < 5:
        print("<38>%s gw1 sshd[99]: Failed password for root from 198.51.100.7 port 2222 ssh2" % now)
        real += 1
assert real == 5
PY
send_tcp_file "$port" "$WORK/flood.txt"
total=$((N + 5))
wait_metric corral_messages_matched_total -ge $total ||
    fail "corrald classified $(metric corral_messages_matched_total) of $total lines"
wait_lines "$WORK/alerts.json" 1 || fail "the real brute force raised no correlation alert"
# one engine thread: once every line is classified, its correlation is done
[ "$(metric corral_messages_generated_total)" = 1 ] ||
    fail "$(metric corral_messages_generated_total) messages generated, not the one alert"
python3 - "$WORK/alerts.json" <<'PY' || fail "not the alert expected: $(cat "$WORK/alerts.json")"
import json, sys
a = json.loads(open(sys.argv[1]).read().splitlines()[0])
assert a["corral.alert_id"] == "sigma/5a0c7e12-9b3d-4f61-a2e8-c4d6f8a0b2e4/gw1/root", a
assert a["usracct.username"] == "root", a
PY
bytes=$(metric corral_sigma_correlation_bytes)
[ "$bytes" -gt 0 ] && [ "$bytes" -le 524288 ] ||
    fail "Sigma correlation groups hold $bytes bytes, beyond max-sigma-memory 512k"
groups=$(metric corral_sigma_correlation_groups)
[ "$groups" -lt 5000 ] || fail "$groups Sigma correlation groups held within 512k"
evicted=$(metric corral_sigma_correlation_groups_evicted_total)
[ "$evicted" -gt 100000 ] || fail "only $evicted groups evicted"
[ "$(metric corral_sigma_correlation_dropped_total)" = 0 ] ||
    fail "$(metric corral_sigma_correlation_dropped_total) events dropped"
stop_corrald "$CORRALD_PID"
echo "ok: a flood of $N spoofed groups: the real one fired once; $groups groups, $bytes bytes, $evicted evicted"
