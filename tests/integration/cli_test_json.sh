#!/bin/sh
# corral test --json: one object per example, in the order of the file, with
# its file, line, rule, program, message, result and failures (name,
# expected, got); a value with quotes, a backslash and UTF-8 comes back as
# it was written.  An alert raised without its labels is one object too.
. "$(dirname "$0")/corrald_lib.sh"
need python3

# the first example's account.user expected wrongly, in characters JSON escapes
sed "0,/<test_value name='account.user'>deploy</s//<test_value name='account.user'>wr\"ong\\\\é</" \
    "$top_srcdir/rules/accounts.xml" > "$WORK/accounts.xml"
grep -q 'wr"ong' "$WORK/accounts.xml" || fail "the rule file was not changed"
rc=0
"$CORRAL" test --json "$WORK/accounts.xml" > "$WORK/out.json" 2> "$WORK/err.txt" || rc=$?
[ "$rc" = 1 ] || fail "corral test --json exited $rc with a failing example"
python3 - "$WORK/out.json" "$WORK/accounts.xml" <<'PY' || fail "corral test --json: $(cat "$WORK/out.json")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert len(rows) > 1, rows
for r in rows:
    assert list(r) == ["file", "line", "rule", "program", "message", "result", "failures"], r
    assert r["file"] == sys.argv[2] and isinstance(r["line"], int), r
    assert r["result"] == ("fail" if r["failures"] else "pass"), r
failed = [r for r in rows if r["result"] == "fail"]
assert len(failed) == 1, failed
assert failed[0]["failures"] == [{"name": "account.user", "expected": 'wr"ong\\é', "got": "deploy"}], failed
assert failed[0]["rule"] == "corral.useradd.user.created", failed
assert [r["line"] for r in rows] == sorted(r["line"] for r in rows), rows
PY

# an action that raises an alert without the labels of the alert contract
cat > "$WORK/nolabels.xml" <<'XML'
<?xml version='1.0' encoding='UTF-8'?>
<patterndb version='6' pub_date='2026-12-01'>
  <ruleset name='t' id='t'>
    <pattern>app</pattern>
    <rules>
      <rule provider='test' id='t.alert' class='system'>
        <patterns><pattern>disk full</pattern></patterns>
        <actions>
          <action>
            <message>
              <values><value name='MESSAGE'>disk full</value></values>
              <tags><tag>corral.alert</tag></tags>
            </message>
          </action>
        </actions>
      </rule>
    </rules>
  </ruleset>
</patterndb>
XML
rc=0
"$CORRAL" test --json "$WORK/nolabels.xml" > "$WORK/labels.json" 2> "$WORK/err.txt" || rc=$?
[ "$rc" = 1 ] || fail "corral test --json exited $rc for an alert without labels: $(cat "$WORK/err.txt")"
python3 - "$WORK/labels.json" <<'PY' || fail "alert labels: $(cat "$WORK/labels.json")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert rows and all(list(r) == ["result", "alert_labels"] and r["result"] == "fail" for r in rows), rows
assert any("t.alert" in r["alert_labels"] for r in rows), rows
PY
echo "ok: corral test --json writes its examples and the alert-label failures as JSON objects"
