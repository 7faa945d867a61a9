#!/bin/sh
# alert_labels: the alert label contract (corral-rules(5), ALERT LABELS).
#  1. Every alert the shipped rules raise over every shipped scenario log
#     carries HOST, corral.alert_id, corral.severity, corral.event and
#     corral.summary, valid (alert_labels.py replays them with corral match).
#  2. `corral test` fails a rule file whose alert action lacks them, naming
#     the action's file and line; `corrald -t` warns with the same line.

top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
top_builddir=${top_builddir:-$top_srcdir}
export top_srcdir top_builddir
CORRAL=$top_builddir/tools/corral
CORRALD=$top_builddir/agent/corrald
status=0

python3 "$top_srcdir/tests/compat/alert_labels.py" || status=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/alert_labels.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM
# line 6 is the action: no context, so HOST must be set; no id, severity, summary
cat > "$tmp/bad.xml" <<'XML'
<?xml version='1.0'?>
<patterndb version='5' pub_date='2026-12-06'>
<ruleset name='app' id='app'><patterns><pattern>app</pattern></patterns><rules>
<rule provider='me' id='app.down' class='error'>
<patterns><pattern>service @ESTRING:svc: @down</pattern></patterns><actions>
<action>
<message><values><value name='corral.event'>app.down</value><value name='MESSAGE'>${svc}@1 is down</value></values>
<tags><tag>corral.alert</tag></tags></message>
</action></actions></rule>
</rules></ruleset></patterndb>
XML
want="bad.xml:6: rule app.down: alert action: sets no HOST (its rule has no context to give one), corral.alert_id, corral.severity, corral.summary"
if out=$("$CORRAL" test "$tmp/bad.xml" 2>&1); then
    echo "corral test passed a rule file whose alert has no labels:"
    echo "$out"
    status=1
elif ! echo "$out" | grep -qF "FAIL $tmp/$want"; then
    echo "corral test does not name the action and what it lacks:"
    echo "$out"
    status=1
else
    echo "corral test: $(echo "$out" | grep -F "$want")"
fi

printf '<corrald>\n  <rules path="%s"/>\n</corrald>\n' "$tmp/bad.xml" > "$tmp/corrald.conf"
if ! out=$("$CORRALD" -t -f "$tmp/corrald.conf" 2>&1); then
    echo "corrald -t refused the configuration (it warns only):"
    echo "$out"
    status=1
elif ! echo "$out" | grep "warning" | grep -qF "$tmp/$want"; then
    echo "corrald -t does not warn about the alert without labels:"
    echo "$out"
    status=1
else
    echo "corrald -t: $(echo "$out" | grep -F "$want")"
fi
exit $status
