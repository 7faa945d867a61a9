#!/bin/sh
# <engine workers="2"/> writes what workers="1" (one engine on the loop
# thread) writes: every message, input and generated, with the same values
# (classification, parsed values, context ids, what the rules generate),
# and leaves the same contexts open, under every shipped rule (rules/*.xml)
# for the log lines of every shipped scenario (rules/*.scenario), the
# loghub samples (tests/data/loghub) and contrib/samples/auth.log; and so
# under the same rules without rate limits, where a message joins contexts
# of two shards (also-correlate, split between them).  The output is
# compared sorted: the 1-second contexts of these rules fire by the wall
# clock, so where their timeout messages fall among the input messages
# differs from run to run (corrald.conf(5), <engine>: output order).
# ENGINE_WORKERS=4 (say) runs it with 4 workers instead of 2.
. "$(dirname "$0")/corrald_lib.sh"
need python3
N=${ENGINE_WORKERS:-2}

CONTROL=$WORK/control.sock
DATA=$top_srcdir/tests/data/loghub
# the scenarios' log lines, as one corpus
python3 - "$top_srcdir"/rules/*.scenario > "$WORK/scenarios.txt" <<'PY' || fail "no scenario corpus"
import sys, xml.etree.ElementTree as ET
for path in sys.argv[1:]:
    for log in ET.parse(path).getroot().iter("log"):
        for line in (log.text or "").splitlines():
            if line.strip():
                print(line.strip())
PY
[ "$(grep -c "" "$WORK/scenarios.txt")" -gt 100 ] || fail "scenario corpus too small"
FILES="$WORK/scenarios.txt $DATA/OpenSSH_2k.log $DATA/Linux_2k.log $top_srcdir/contrib/samples/auth.log"

# the shipped rules without rate limits: no scope routes without the context id, so a failed
# login's also-correlate joins contexts of two shards (split between them)
mkdir "$WORK/norate"
for f in "$top_srcdir"/rules/*.xml; do
    sed "s/ rate='[^']*'//; s/ rate-key='[^']*'//" "$f" > "$WORK/norate/$(basename "$f")"
done

# conf FILE RULES WORKERS
conf() {
    cat > "$1" <<XML
<corrald>
  <rules path="$2"/>
  <engine workers="$3"/>
  <control socket="$CONTROL"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="all"/></outputs>
</corrald>
XML
}

# send_all: each file over a connection of its own, one after the other
send_all() {
    _n=$(metric corral_messages_received_total)
    for f in $FILES; do
        send_tcp_file "$(input_port tcp)" "$f"
        _n=$((_n + $(grep -c "" "$f")))
        wait_metric corral_messages_received_total -eq "$_n" || fail "not all of $f received"
    done
    echo "$_n"
}

# settled: no open context is due within 10 s (the next shortest timeout of the shipped rules
# after their 1-second ones is 60 s; a run takes a few seconds)
settled() {
    "$CORRAL" ctl -s "$CONTROL" contexts | python3 -c '
import json, sys, time
now = time.time() * 1000
sys.exit(any(c["expires_ms"] - now < 10000 for c in json.load(sys.stdin)))'
}

# contexts OUT: the open contexts, one JSON object a line, sorted, without their deadlines
contexts() {
    "$CORRAL" ctl -s "$CONTROL" contexts | python3 -c '
import json, sys
for c in sorted(json.dumps({k: v for k, v in c.items() if k != "expires_ms"}, sort_keys=True)
                for c in json.load(sys.stdin)):
    print(c)' > "$1"
}

# run NAME RULES WORKERS: a fresh start, the corpora, then the output and the contexts
run() {
    rm -f "$WORK/out.json"
    conf "$WORK/$1.conf" "$2" "$3"
    start_corrald "$1" "$WORK/$1.conf"
    sent=$(send_all)
    wait_until settled || fail "$1: contexts due within 10 s do not fire"
    contexts "$WORK/$1.contexts"
    stop_corrald
    sort "$WORK/out.json" > "$WORK/$1.out"
    [ "$(grep -c '"SOURCEIP"' "$WORK/$1.out")" -eq "$sent" ] || fail "$1: not every message written"
    [ -s "$WORK/$1.contexts" ] || fail "$1: no contexts open"
}

# same ONE MANY RULES: workers="1" and workers="$N" write the same and keep the same contexts
same() {
    run "$1" "$3" 1
    run "$2" "$3" "$N"
    grep -q "engine: $N workers, $N correlation shards" "$WORK/$2.log" || fail "$2: not $N shards"
    cmp "$WORK/$1.out" "$WORK/$2.out" || {
        diff "$WORK/$1.out" "$WORK/$2.out" | head -20
        fail "$3: output differs with $N workers"
    }
    cmp "$WORK/$1.contexts" "$WORK/$2.contexts" || {
        diff "$WORK/$1.contexts" "$WORK/$2.contexts" | head -20
        fail "$3: contexts differ with $N workers"
    }
    echo "ok: $3: $(grep -c "" "$WORK/$1.out") messages, $(grep -c "" "$WORK/$1.contexts") contexts alike"
}

same one many "$top_srcdir/rules"
# what is compared: classified input, generated messages, each rule file's
grep -q '"\.classifier\.rule_id"' "$WORK/one.out" || fail "nothing classified"
[ "$(grep -vc '"SOURCEIP"' "$WORK/one.out")" -gt 0 ] || fail "nothing generated"
# every rule file that has scenarios classified some of its lines
python3 - "$WORK/one.out" "$top_srcdir"/rules/*.scenario <<'PY' || fail "a rule file went unused"
import json, os, sys, xml.etree.ElementTree as ET
seen = {json.loads(l).get(".classifier.rule_id") for l in open(sys.argv[1])}
bad = 0
for sc in sys.argv[2:]:
    for name in ET.parse(sc).getroot().get("rules").split():
        rules = os.path.join(os.path.dirname(sc), name)
        if os.path.isdir(rules):  # the whole library (rules/sigma.scenario): its files are above
            continue
        if not {r.get("id") for r in ET.parse(rules).getroot().iter("rule")} & seen:
            print("no message of %s classified" % rules)
            bad = 1
sys.exit(bad)
PY
same onenr manynr "$WORK/norate"
grep -q ssh-user-failures "$WORK/manynr.contexts" || fail "split: no per-user context"
