#!/bin/sh
# corral alerts, silence update and alert add against the real corrald:
#   - an empty list of alerts or silences prints the header;
#   - a long alert id (and host) is cut with '~' in the table, whose columns
#     stay aligned, and is whole with --json and -o extended;
#   - --active, --silenced, --inhibited and --resolved each select their
#     state, and add up;
#   - silence update keeps the id when only the end or the comment changes,
#     and gives a new one (the old one expired) when the matchers change;
#   - alert add reaches an exec executor through the routes;
#   - exit status 2 for a usage error and an unknown silence id, 1 when
#     corrald cannot be reached.
. "$(dirname "$0")/corrald_lib.sh"
need python3

cat > "$WORK/runner.sh" <<SH
#!/bin/sh
echo "\$CORRAL_STATUS \$CORRAL_ALERT_ID \$CORRAL_HOST" >> "$WORK/runner.calls"
SH
chmod +x "$WORK/runner.sh"
CONTROL=$WORK/control.sock
S="-s $CONTROL"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$HERE/lifecycle_rules.xml"/>
  <control socket="$CONTROL"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <alerts resolve-timeout="1h"/>
  <inhibit source="alertname=HostDown" target="alertname=Child" equal="HOST"/>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/runner.sh"/>
  </executors>
  <routes><route tag="corral.alert" to="runner"/></routes>
</corrald>
XML
mkdir -p "$WORK/spool"

# send HOST TEXT: an RFC 5424 line from HOST over TCP
send() {
    python3 - "$(input_port tcp)" "$1" "$2" <<'PY'
import datetime, socket, sys
port, host, text = int(sys.argv[1]), sys.argv[2], sys.argv[3]
stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
with socket.create_connection(("127.0.0.1", port)) as c:
    c.sendall(("<38>1 %s %s lc - - - %s\n" % (stamp, host, text)).encode())
PY
}
# run ARGS...: corral ARGS, its output in $WORK/out and $WORK/err, its status in $rc
run() {
    "$CORRAL" "$@" > "$WORK/out" 2> "$WORK/err"
    rc=$?
}
ok() {
    run "$@"
    [ "$rc" -eq 0 ] || fail "corral $*: exit $rc: $(cat "$WORK/err")"
}
# ids [STATE-OPTIONS]: the alert ids corral alerts --json lists, sorted, one line
ids() {
    ok alerts $S --json "$@"
    python3 -c 'import json,sys; print(" ".join(sorted(a["id"] for a in json.load(open(sys.argv[1])))))' "$WORK/out"
}
# has_ids FLAG: alerts listed with FLAG (a function: wait_until calls it anew each time)
has_ids() {
    [ "$(ids "$1")" != "" ]
}
state_of() {
    ok alerts $S show "$1"
    sed -n 's/^state: *//p' "$WORK/out"
}
silences() {
    ok silence $S list --json "$@"
    cp "$WORK/out" "$WORK/silences.json"
}

# ---- unreachable: exit 1
run alerts -s "$WORK/nothing.sock"
[ "$rc" -eq 1 ] || fail "an unreachable socket: exit $rc, not 1"
grep -q "nothing.sock" "$WORK/err" || fail "an unreachable socket not named: $(cat "$WORK/err")"

start_corrald corrald "$WORK/corrald.conf"

# ---- the empty list has its header
ok alerts $S
[ "$(wc -l < "$WORK/out")" -eq 1 ] || fail "the empty list: $(cat "$WORK/out")"
grep -q '^SEVERITY  *HOST  *ALERT ID  *SUMMARY  *SINCE  *STATE  *MUTED BY$' "$WORK/out" ||
    fail "no header on the empty list: $(cat "$WORK/out")"
ok alerts $S -o extended
grep -q '^SEVERITY .*ALERT ID .*EXECUTORS$' "$WORK/out" || fail "no extended header: $(cat "$WORK/out")"
[ "$(ids)" = "" ] || fail "alerts listed"
ok silence $S list
grep -q '^ID  *STATE  *ENDS  *CREATED BY  *MATCHERS / COMMENT$' "$WORK/out" && [ "$(wc -l < "$WORK/out")" -eq 1 ] ||
    fail "no header on the empty list of silences: $(cat "$WORK/out")"

# ---- usage errors: exit 2
run alerts $S --no-such-option
[ "$rc" -eq 2 ] || fail "an unknown option: exit $rc, not 2"
run alerts $S -o wide
[ "$rc" -eq 2 ] || fail "-o wide: exit $rc, not 2"
run silence $S update
[ "$rc" -eq 2 ] || fail "silence update without an id: exit $rc, not 2"
run alert $S add
[ "$rc" -eq 2 ] || fail "alert add without labels: exit $rc, not 2"
run alert $S add HOST=web1 bad
[ "$rc" -eq 2 ] || fail "alert add with a word that is no label: exit $rc, not 2"
run alert $S add corral.severity=critical
[ "$rc" -eq 2 ] || fail "alert add with a bad label name: exit $rc, not 2"
grep -q "not a label name" "$WORK/err" || fail "bad label name: $(cat "$WORK/err")"

# ---- a rule's alert with a long id and a long host, and a short one
LONGHOST=host-with-a-rather-long-name-in-the-rack-42.example.com
LONGDEV=sda-attached-to-the-second-controller-in-bay-7
LONGID=lc/$LONGHOST/$LONGDEV
send "$LONGHOST" "failure on $LONGDEV"
send web1 "failure on sda"
wait_grep "$WORK/runner.calls" "^firing lc/web1/sda " || fail "web1's alert did not fire"
wait_grep "$WORK/runner.calls" "^firing $LONGID " || fail "the long alert did not fire"

ok alerts $S
cp "$WORK/out" "$WORK/table"
[ "$(wc -l < "$WORK/table")" -eq 3 ] || fail "not 3 lines: $(cat "$WORK/table")"
grep -q -- "$LONGID" "$WORK/table" && fail "the long id is whole in the table: $(cat "$WORK/table")"
python3 - "$WORK/table" "$LONGID" "$LONGHOST" <<'PY' || fail "the table: $(cat "$WORK/table")"
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
longid, longhost = sys.argv[2], sys.argv[3]
head = lines[0]
cols = ["SEVERITY", "HOST", "ALERT ID", "SUMMARY", "SINCE", "STATE", "MUTED BY"]
starts = [head.index(c) for c in cols]
assert starts == sorted(starts), head
for line in lines[1:]:
    # every column starts where its heading does, and after two spaces
    for s in starts[1:]:
        assert line[s - 2:s] == "  " and line[s] != " ", (s, line)
row = next(l for l in lines if "lc/" + longhost[:10] in l)
idcell = row[starts[2]:starts[3]].rstrip()
assert idcell.endswith("~") and longid.startswith(idcell[:-1]), idcell
hostcell = row[starts[1]:starts[2]].rstrip()
assert hostcell.endswith("~") and longhost.startswith(hostcell[:-1]), hostcell
sumcell = row[starts[3]:starts[4]].rstrip()
assert sumcell.endswith("~"), sumcell
assert row[:starts[1]].rstrip() == "major", row
assert row[starts[5]:starts[6]].rstrip() == "active", row
since = row[starts[4]:starts[5]].rstrip()
assert since[:-1].isdigit() and since[-1] in "smhd", since
short = next(l for l in lines if "lc/web1/sda" in l)
assert "sda failed on web1" in short and "~" not in short, short
PY
ok alerts $S --json
grep -q "\"id\": \"$LONGID\"" "$WORK/out" || fail "the long id not whole in --json"
ok alerts $S -o json
grep -q "\"id\": \"$LONGID\"" "$WORK/out" || fail "the long id not whole in -o json"
ok alerts $S -o extended
grep -q "  $LONGID  " "$WORK/out" || fail "the long id not whole in -o extended: $(cat "$WORK/out")"
grep -q "$LONGHOST  " "$WORK/out" || fail "the long host not whole in -o extended"
grep -q "$LONGDEV failed on $LONGHOST" "$WORK/out" || fail "the summary not whole in -o extended"
python3 - "$WORK/out" <<'PY' || fail "-o extended not aligned: $(cat "$WORK/out")"
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
head = lines[0]
for c in ["HOST", "ALERT ID", "SUMMARY", "SINCE", "STATE", "MUTED BY", "FIRST SEEN", "LAST SEEN",
          "COUNT", "EXECUTORS"]:
    s = head.index(c)
    for line in lines[1:]:
        assert line[s - 2:s] == "  " and line[s] != " ", (c, line)
PY

# ---- alert add: through the routes to the exec script, an alert of each state
ok alert $S add HostDown HOST=web3 severity=critical --annotation summary="web3 is down"
wait_grep "$WORK/runner.calls" "^firing am/[0-9a-f]* web3$" || fail "alert add did not reach the script"
ok alert $S add Child HOST=web3 severity=warning
wait_until has_ids --inhibited || fail "no inhibited alert"
INHIBITED=$(ids --inhibited)
ok silence $S add HOST=web2 --duration 1h --comment first
SID=$(cat "$WORK/out")
ok alert $S add Muted HOST=web2 --annotation summary="muted one"
wait_until has_ids --silenced || fail "no silenced alert"
SILENCED=$(ids --silenced)
ok alert $S add Gone instance=web4:9100
wait_grep "$WORK/runner.calls" "^firing am/[0-9a-f]* web4$" || fail "Gone did not reach the script"
ok alert $S add Gone instance=web4:9100 --end 2000-01-01T00:00:00Z
wait_until has_ids --resolved || fail "no resolved alert"
RESOLVED=$(ids --resolved)
ACTIVE=$(ids --active)
set -- $ACTIVE
[ $# -eq 3 ] || fail "not 3 active alerts: $ACTIVE"
for i in $INHIBITED $SILENCED $RESOLVED; do
    case " $ACTIVE " in *" $i "*) fail "$i listed as active" ;; esac
done
[ "$(state_of "$INHIBITED")" = inhibited ] || fail "$INHIBITED is not inhibited"
[ "$(state_of "$SILENCED")" = silenced ] || fail "$SILENCED is not silenced"
[ "$(state_of "$RESOLVED")" = resolved ] || fail "$RESOLVED is not resolved"
want=$(printf '%s\n' $INHIBITED $SILENCED | sort | tr '\n' ' ' | sed 's/ $//')
[ "$(ids --silenced --inhibited)" = "$want" ] || fail "--silenced --inhibited: $(ids --silenced --inhibited)"
[ "$(ids)" = "$(printf '%s\n' $ACTIVE $INHIBITED $SILENCED $RESOLVED | sort | tr '\n' ' ' | sed 's/ $//')" ] ||
    fail "without a state option, not every alert: $(ids)"
# the table says the same, with the severity, host and summary of posted alerts
ok alerts $S --silenced
grep -q "^[a-z]*  *web2  *$SILENCED  *muted one  *[0-9]*[smhd]  *silenced  *$SID$" "$WORK/out" ||
    fail "the silenced alert's row: $(cat "$WORK/out")"
ok alerts $S --inhibited HOST=web3
grep -q "^warning  *web3  *$INHIBITED .* inhibited  *am/" "$WORK/out" ||
    fail "the inhibited alert's row: $(cat "$WORK/out")"
ok alerts $S --resolved
grep -q "^[a-z]*  *web4  *$RESOLVED .* resolved  *-$" "$WORK/out" || fail "the resolved alert's row: $(cat "$WORK/out")"
ok alerts $S --active alertname=HostDown
grep -q "^critical  *web3  *am/[0-9a-f]*  *web3 is down .* active  *-$" "$WORK/out" ||
    fail "the active alert's row: $(cat "$WORK/out")"

# ---- silence update: the end and the comment in place, the matchers anew
ok silence $S update "$SID" --duration 3h --comment second
[ "$(cat "$WORK/out")" = "$SID" ] || fail "update of the end and comment: a new id $(cat "$WORK/out")"
silences
python3 - "$WORK/silences.json" "$SID" <<'PY' || fail "the updated silence: $(cat "$WORK/silences.json")"
import datetime, json, sys
s = json.load(open(sys.argv[1]))
assert len(s) == 1 and s[0]["id"] == sys.argv[2] and s[0]["comment"] == "second", s
t = lambda v: datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ")
assert (t(s[0]["endsAt"]) - t(s[0]["startsAt"])).total_seconds() == 3 * 3600, s
PY
ok silence $S update "$SID" --end 2099-01-01T00:00:00Z
[ "$(cat "$WORK/out")" = "$SID" ] || fail "update of the end: a new id"
[ "$(state_of "$SILENCED")" = silenced ] || fail "not silenced after the update in place"
ok silence $S update "$SID" HOST=web2 alertname=Muted
NEW=$(cat "$WORK/out")
[ -n "$NEW" ] && [ "$NEW" != "$SID" ] || fail "update of the matchers kept the id"
silences
python3 - "$WORK/silences.json" "$NEW" <<'PY' || fail "the new silence: $(cat "$WORK/silences.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert len(s) == 1 and s[0]["id"] == sys.argv[2], s
assert s[0]["comment"] == "second" and s[0]["endsAt"] == "2099-01-01T00:00:00Z", s
assert s[0]["matchersText"] == 'HOST="web2",alertname="Muted"', s
PY
silences --expired
python3 - "$WORK/silences.json" "$SID" <<'PY' || fail "the old silence not expired: $(cat "$WORK/silences.json")"
import json, sys
s = [x for x in json.load(open(sys.argv[1])) if x["id"] == sys.argv[2]]
assert len(s) == 1 and s[0]["status"]["state"] == "expired", s
PY
[ "$(state_of "$SILENCED")" = silenced ] || fail "not silenced by the new silence"
ok alerts $S --silenced
grep -q "silenced  *$NEW$" "$WORK/out" || fail "not muted by the new silence: $(cat "$WORK/out")"

# ---- refused: an unknown or expired silence, a bad matcher: exit 2, nothing changed
run silence $S update 00000000-0000-4000-8000-000000000000 --comment x
[ "$rc" -eq 2 ] || fail "update of an unknown silence: exit $rc, not 2"
grep -q "no silence 00000000-0000-4000-8000-000000000000" "$WORK/err" || fail "unknown id: $(cat "$WORK/err")"
run silence $S update "$SID" --comment x
[ "$rc" -eq 2 ] || fail "update of an expired silence without a new end: exit $rc, not 2"
run silence $S update "$NEW" 'HOST=~"("'
[ "$rc" -eq 2 ] || fail "update with a bad matcher: exit $rc, not 2"
run silence $S expire 00000000-0000-4000-8000-000000000000
[ "$rc" -eq 2 ] || fail "expire of an unknown silence: exit $rc, not 2"
silences
[ "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$WORK/silences.json")" -eq 1 ] ||
    fail "a refused update changed the silences: $(cat "$WORK/silences.json")"

corrald_alive
stop_corrald
echo "ok"
