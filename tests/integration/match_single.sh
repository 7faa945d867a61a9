#!/bin/sh
# corral match -P/-M dates the single message now, as pdbtool does, so a
# context timeout it starts (the README's example) is dated now, not 1970;
# with --now it is dated exactly then.
. "$(dirname "$0")/corrald_lib.sh"
need python3

msg='Accepted password for root from 10.0.0.1 port 22 ssh2'
"$CORRAL" match -r "$top_srcdir/rules" -P sshd -M "$msg" --json --now 2026-12-03T10:00:00Z \
    > "$WORK/fixed.json" || fail "corral match --now failed"
"$CORRAL" match -r "$top_srcdir/rules" -P sshd -M "$msg" --json > "$WORK/now.json" ||
    fail "corral match failed"
before=$(date -u +%s)
python3 - "$WORK/fixed.json" "$WORK/now.json" "$before" <<'PY' || fail "generated messages misdated"
import json, sys, datetime
fixed = [json.loads(l) for l in open(sys.argv[1])]
now = [json.loads(l) for l in open(sys.argv[2])]
def timeout(msgs):
    t = [m for m in msgs if "corral.timeout" in m.get("TAGS", "")]
    assert len(t) == 1, msgs
    return t[0]
t = timeout(fixed)
assert t["ISODATE"] == "2026-12-03T10:00:00+00:00", t["ISODATE"]
assert "Dec  3 10:00:00" in t["MESSAGE"], t["MESSAGE"]
stamp = datetime.datetime.fromisoformat(timeout(now)["ISODATE"]).timestamp()
# dated by the clock of this run: after the build of this test, not 1970
assert stamp > 1700000000 and stamp <= int(sys.argv[3]) + 86400, timeout(now)["ISODATE"]
PY
echo "ok: a single message and its timeout are dated now (or --now)"
