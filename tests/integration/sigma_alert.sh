#!/bin/sh
# Sigma detection rules in corrald: a rule over what the patterndb rules of
# rules/sshd.xml extract (usracct.username, usracct.device) raises an alert
# with the label contract that an exec executor receives, for a failed root
# login from outside 10.0.0.0/8 and not for one from inside.  corrald -t
# names a refused rule with file:line and the reason and starts with the
# others; a broken mapping file fails with file:line.  corral test replays
# tests/data/sigma/sigma.scenario (SigmaHQ rules and lines that must and
# must not raise alerts) and
# tests/data/sigma-event-count/sigma-event-count.scenario (an
# event_count correlation).  A reload reads the Sigma rules anew.  A
# regular expression's prefilter literal is one every match holds.
. "$(dirname "$0")/corrald_lib.sh"
need python3
[ -x "$CORRALD" ] || { echo "skipped: $CORRALD not built"; exit 77; }

# ---- refusals and errors: file:line ----
mkdir -p "$WORK/sigma"
cp "$top_srcdir/tests/data/sigma/sshd_root_from_outside.yml" "$WORK/sigma/"
cat > "$WORK/sigma/bad.yml" <<'YML'
title: uses a Windows modifier
logsource:
    product: linux
detection:
    selection:
        Message|wide: x
    condition: selection
YML
cat > "$WORK/check.conf" <<XML
<corrald>
  <rules path="$top_srcdir/rules/sshd.xml"/>
  <sigma rules="$WORK/sigma" mapping="$top_srcdir/etc/sigma-mapping.yml"/>
</corrald>
XML
"$CORRALD" -t -f "$WORK/check.conf" > "$WORK/check.out" 2>&1 ||
    fail "corrald -t failed for a refused Sigma rule: $(cat "$WORK/check.out")"
grep -q "sigma/bad.yml:6: sigma rule refused: modifier 'wide' is not supported" "$WORK/check.out" ||
    fail "no file:line for the refused rule: $(cat "$WORK/check.out")"
printf 'logsources:\n  - product: linux\n    facility: [nowhere]\n' > "$WORK/badmap.yml"
sed "s|mapping=\"[^\"]*\"|mapping=\"$WORK/badmap.yml\"|" "$WORK/check.conf" > "$WORK/badmap.conf"
"$CORRALD" -t -f "$WORK/badmap.conf" > "$WORK/badmap.out" 2>&1 && fail "corrald -t took a bad mapping"
grep -q "badmap.yml:2: logsources: unknown facility 'nowhere'" "$WORK/badmap.out" ||
    fail "no file:line for the bad mapping: $(cat "$WORK/badmap.out")"
echo "ok: a refused Sigma rule is named with file:line, a bad mapping fails with file:line"

# ---- corral test: the scenario of positive and negative lines ----
"$CORRAL" test "$top_srcdir/tests/data/sigma/sigma.scenario" > "$WORK/test.out" 2>&1 ||
    fail "corral test failed the Sigma scenario: $(cat "$WORK/test.out")"
grep -q "^1 passed, 0 failed" "$WORK/test.out" || fail "$(cat "$WORK/test.out")"
echo "ok: corral test replays the Sigma scenario"
"$CORRAL" test "$top_srcdir/tests/data/sigma-event-count/sigma-event-count.scenario" > "$WORK/corr.out" 2>&1 ||
    fail "corral test failed the Sigma correlation scenario: $(cat "$WORK/corr.out")"
grep -q "^1 passed, 0 failed" "$WORK/corr.out" || fail "$(cat "$WORK/corr.out")"
echo "ok: corral test replays the Sigma correlation scenario"

# ---- an alert to an exec executor ----
cat > "$WORK/hook.sh" <<SH
#!/bin/sh
cat >> "$WORK/alerts.json"
SH
chmod +x "$WORK/hook.sh"
CONTROL=$WORK/control.sock
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$top_srcdir/rules/sshd.xml"/>
  <sigma rules="$WORK/sigma" mapping="$top_srcdir/etc/sigma-mapping.yml"/>
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
wait_log "sigma: 1 rules loaded, 1 refused" || fail "corrald did not say what it loaded"
[ "$(metric corral_sigma_rules)" = 1 ] && [ "$(metric corral_sigma_rules_refused)" = 1 ] ||
    fail "metrics: $(metric corral_sigma_rules) loaded, $(metric corral_sigma_rules_refused) refused"
port=$(input_port udp)
send_udp "$port" "<38>Dec  6 10:00:01 gw1 sshd[77]: Failed password for root from 10.0.0.7 port 2201 ssh2"
send_udp "$port" "<38>Dec  6 10:00:02 gw1 sshd[78]: Failed password for root from 192.0.2.7 port 2202 ssh2"
wait_lines "$WORK/alerts.json" 1 || fail "the exec program never got the alert"
python3 - "$WORK/alerts.json" <<'PY' || fail "not the alert expected: $(cat "$WORK/alerts.json")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
a = json.loads(lines[0])
assert a["corral.summary"] == "Failed root login over SSH from outside the local network", a
assert a["corral.severity"] == "major", a
assert a["corral.alert_id"] == "sigma/6f8a1c2e-5b0d-4c7a-9e3f-0a1b2c3d4e5f/gw1", a
assert a["HOST"] == "gw1", a
assert a["usracct.username"] == "root" and a["usracct.device"] == "192.0.2.7", a
assert a[".classifier.class"] == "sigma", a
PY
echo "ok: a Sigma rule's alert reaches an exec executor with its labels"

# ---- a reload reads the Sigma rules again ----
cp "$top_srcdir/tests/data/sigma/sigmahq/lnx_sshd_susp_ssh.yml" "$WORK/sigma/"
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload" || fail "ctl reload failed: $(cat "$WORK/reload")"
wait_log "sigma: 2 rules loaded, 1 refused" || fail "the reload did not load the new Sigma rule"
send_udp "$port" "<38>Dec  6 10:00:03 gw1 sshd[79]: Corrupted MAC on input. [preauth]"
wait_lines "$WORK/alerts.json" 2 || fail "no alert from the rule added by the reload"
python3 - "$WORK/alerts.json" <<'PY' || fail "not the alert expected: $(cat "$WORK/alerts.json")"
import json, sys
a = json.loads(open(sys.argv[1]).read().splitlines()[1])
assert a["corral.summary"] == "Suspicious OpenSSH Daemon Error", a
assert a["corral.severity"] == "minor" and a["HOST"] == "gw1", a
PY
echo "ok: a reload loads a new Sigma rule, which raises its alert"

# ---- a regular expression's prefilter never hides a match: "[[:[:]" is two class members for
# PCRE2, not a POSIX class, and the literal every match holds is " failed", not ":] failed" ----
cp "$top_srcdir/tests/data/sigma/bracket_regex.yml" "$WORK/sigma/"
"$CORRAL" ctl -s "$CONTROL" reload > "$WORK/reload" || fail "ctl reload failed: $(cat "$WORK/reload")"
wait_log "sigma: 3 rules loaded, 1 refused" || fail "the reload did not load bracket_regex.yml"
send_udp "$port" "<38>Dec  6 10:00:04 db1 backup[400]: job: failed"
wait_lines "$WORK/alerts.json" 3 || fail "no alert for a line the regular expression matches"
python3 - "$WORK/alerts.json" <<'PY' || fail "not the alert expected: $(cat "$WORK/alerts.json")"
import json, sys
a = json.loads(open(sys.argv[1]).read().splitlines()[2])
assert a["corral.summary"] == "A backup job that failed" and a["HOST"] == "db1", a
PY
stop_corrald "$CORRALD_PID"
echo "ok: a line its regular expression matches raises the Sigma rule's alert"
