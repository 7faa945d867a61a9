#!/bin/sh
# corral match --dry-run: a rule author sees, per executor, exactly what a
# log would send (script argv and environment, mail headers and body, trap
# varbinds), routed by rule actions and by the configuration's route tree,
# and nothing is sent.  -c alone replays with the configuration's rules and
# correlation limits.
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/rules"
cat > "$WORK/rules/r.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-03">
  <ruleset name="app" id="dry-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="dry.alert" class="violation">
      <patterns><pattern>alert @ANYSTRING:what@</pattern></patterns>
      <tags><tag>app.alert</tag></tags>
      <actions><action route="script"><message inherit-mode="last-message">
        <values><value name="MESSAGE">ALERT ${what}</value></values>
        <tags><tag>corral.alert</tag></tags>
      </message></action></actions>
    </rule>
    <rule provider="test" id="dry.info" class="system">
      <patterns><pattern>info @ANYSTRING:what@</pattern></patterns>
    </rule>
  </rules></ruleset>
</patterndb>
XML
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <executors>
    <exec name="script" program="/bin/echo"><arg>\${what}</arg><arg>--</arg></exec>
    <smtp name="mail" url="smtp://127.0.0.1:1" tls="none" from="corral@example.com" to="ops@example.com"/>
    <snmp name="nms" target="udp:127.0.0.1:1" community-env="DRY_COMMUNITY"/>
  </executors>
  <routes>
    <route class="violation" to="mail">
      <route tag="nomatch" to="nms"/>
    </route>
    <route messages="classified" filter="message('^info')" to="nms"/>
  </routes>
</corrald>
XML
printf '<13>Dec  3 10:00:00 web1 app: alert disk full; rm -rf / $(id)\n<13>Dec  3 10:00:01 web1 app: info hello\n' > "$WORK/log"
DRY_COMMUNITY=secret-community CORRAL_SCHEMA=$SCHEMA "$CORRAL" match -c "$WORK/corrald.conf" --dry-run \
    -f "$WORK/log" --json > "$WORK/out" 2> "$WORK/err" || fail "dry run failed: $(cat "$WORK/err")"
grep -q -- '--- would send through executor script (exec)' "$WORK/out" || fail "rule route to script not rendered"
grep -q 'disk full; rm -rf / $(id)' "$WORK/out" || fail "script argv not shown"
grep -q 'CORRAL_CLASSIFIER_RULE_ID=dry.alert' "$WORK/out" || fail "script environment not shown"
grep -q -- '--- would send through executor mail (smtp)' "$WORK/out" || fail "class route to mail not rendered"
grep -q 'RCPT TO:<ops@example.com>' "$WORK/out" || fail "mail envelope not shown"
grep -q -- '--- would send through executor nms (snmp)' "$WORK/out" || fail "filter route to nms not rendered"
grep -q 'hello' "$WORK/out" || fail "routed input message missing"
grep -q 'secret-community' "$WORK/out" && fail "a secret appears in the dry run"
# only the generated alert takes the class route (routes see generated messages by default),
# and the nested route does not match (tag nomatch), so it goes to mail, not nms
python3 - "$WORK/out" <<'PY' || fail "routing tree wrong"
import sys
blocks = open(sys.argv[1]).read().split("--- would send through executor ")
names = [b.split(" ")[0] for b in blocks[1:]]
assert names.count("script") == 1 and names.count("mail") == 1 and names.count("nms") == 1, names
PY
# ---- -c without --dry-run: a replay with the configuration's rules and correlation limits
cat > "$WORK/rules/ctx.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-05">
  <ruleset name="job" id="dry-job"><patterns><pattern>job</pattern></patterns><rules>
    <rule provider="test" id="dry.job" class="system" context-id="job" context-scope="host"
          context-timeout="60">
      <patterns><pattern>started @ANYSTRING:what@</pattern></patterns>
      <actions><action trigger="timeout"><message>
        <values><value name="MESSAGE">job on ${HOST} ended</value></values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
sed 's|<rules path=|<limits max-contexts="2" context-share="2"/><rules path=|' "$WORK/corrald.conf" \
    > "$WORK/limited.conf"
grep -q 'max-contexts="2"' "$WORK/limited.conf" || fail "test bug: no limits in the copy"
printf '<13>Dec  3 10:00:0%d web%d job: started x\n' 1 1 2 2 3 3 > "$WORK/jobs"
CORRAL_SCHEMA=$SCHEMA "$CORRAL" match -j 1 -r "$WORK/rules" -T '${MESSAGE}\n' -f "$WORK/jobs" \
    > "$WORK/free.out" 2>&1 || fail "replay without -c failed: $(cat "$WORK/free.out")"
[ "$(grep -c 'ended' "$WORK/free.out")" -eq 3 ] || fail "without limits: $(cat "$WORK/free.out")"
CORRAL_SCHEMA=$SCHEMA "$CORRAL" match -j 1 -c "$WORK/limited.conf" -T '${MESSAGE}\n' -f "$WORK/jobs" \
    > "$WORK/limited.out" 2> "$WORK/limited.err" || fail "replay with -c failed: $(cat "$WORK/limited.err")"
[ "$(grep -c 'ended' "$WORK/limited.out")" -eq 2 ] ||
    fail "the configuration's max-contexts not applied: $(cat "$WORK/limited.out")"
# the rule at its share of 2 makes room for the third context by evicting one of its own
grep -q 'evicted for a new one: the rule is at its share (2 contexts' "$WORK/limited.err" ||
    fail "the evicted context not logged: $(cat "$WORK/limited.err")"
grep -q 'would send' "$WORK/limited.out" && fail "-c without --dry-run rendered executors"
"$CORRAL" match --dry-run -f "$WORK/jobs" -r "$WORK/rules" 2> "$WORK/err" && fail "--dry-run without -c accepted"
grep -q -- "--dry-run needs --config" "$WORK/err" || fail "no reason for refusing --dry-run: $(cat "$WORK/err")"

echo "ok: dry run renders script, mail and trap, routes by rule and by tree, shows no secrets; -c applies the configuration's limits"
