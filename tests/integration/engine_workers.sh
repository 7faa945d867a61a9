#!/bin/sh
# <engine workers="4"/>: the same input over several TCP connections gives
# the same generated events and the same open contexts as workers="1" (the
# shipped rules, the shipped rules without sshd.xml, and the shipped rules
# without rate limits, whose failure lines join contexts of two shards
# (also-correlate): all correlate in four shards); the contexts of four
# shards are saved at SIGTERM and read back by four workers and by one; a
# reload keeps them, also into rules that correlate in one shard, and the
# counters, the engine's and the rules', only grow across it;
# with a tiny queue between the inputs and the workers, TCP input is paused
# (back-pressure) and nothing is lost, and UDP input waits in its socket
# buffer rather than being dropped.
# ENGINE_WORKERS=2 (say) runs it with 2 workers instead of 4.
. "$(dirname "$0")/corrald_lib.sh"
need python3
N=${ENGINE_WORKERS:-4}

CONTROL=$WORK/control.sock
DATA=$top_srcdir/tests/data/loghub
FILES="$DATA/OpenSSH_2k.log $DATA/Linux_2k.log $top_srcdir/contrib/samples/auth.log"
mkdir "$WORK/rules4" "$WORK/rules1" "$WORK/norate"
for f in "$top_srcdir"/rules/*.xml; do
    [ "$(basename "$f")" = sshd.xml ] || cp "$f" "$WORK/rules4/"
    sed "s/ rate='[^']*'//; s/ rate-key='[^']*'//" "$f" > "$WORK/norate/$(basename "$f")"
done
# rules4 and a create-context rule: one shard
cp "$WORK"/rules4/*.xml "$WORK/rules1/"
cat > "$WORK/rules1/cc.xml" <<'EOF'
<?xml version='1.0' encoding='UTF-8'?>
<patterndb version='6' pub_date='2026-12-04'>
  <ruleset name='ccprog' id='cc-rs'>
    <pattern>ccprog</pattern>
    <rules>
      <rule provider='test' id='cc.go' class='system'>
        <patterns><pattern>go @NUMBER:n@</pattern></patterns>
        <actions><action><create-context context-id='cc-${n}' context-timeout='60'>
          <message><values><value name='MESSAGE'>made</value></values></message>
        </create-context></action></actions>
      </rule>
    </rules>
  </ruleset>
</patterndb>
EOF

# conf FILE RULES WORKERS [QUEUE [SELECT]]
conf() {
    _q=
    [ -z "${4:-}" ] || _q="queue=\"$4\""
    cat > "$1" <<XML
<corrald>
  <rules path="$2"/>
  <engine workers="$3" $_q/>
  <state file="$WORK/state" interval="3600s"/>
  <control socket="$CONTROL"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
  <outputs><file path="$WORK/out.json" format="json" select="${5:-generated}"/></outputs>
</corrald>
XML
}

# send_all: each file over a connection of its own, one after the other (a
# global-scope rule's context sees the connections in one order in every run)
send_all() {
    _n=$(metric corral_messages_received_total)
    for f in $FILES; do
        send_tcp_file "$(input_port tcp)" "$f"
        _n=$((_n + $(grep -c "" "$f")))
        wait_metric corral_messages_received_total -eq "$_n" || fail "not all of $f received"
    done
}

# settled: no open context is due within 10 s.  corrald's time is the wall
# clock (these corpora's stamps are in the future or the past: the clock
# wins), so the rules' 1-second contexts (a closed SSH session) fire a second
# after their message, in any run; what is compared is what is left after.
# (The next shortest timeout is 60 s: each run takes a few seconds.)
settled() {
    "$CORRAL" ctl -s "$CONTROL" contexts | python3 -c '
import json, sys, time
now = time.time() * 1000
sys.exit(any(c["expires_ms"] - now < 10000 for c in json.load(sys.stdin)))'
}

# contexts OUT: the open contexts, one JSON object a line, sorted, without
# their deadlines (wall-clock times)
contexts() {
    "$CORRAL" ctl -s "$CONTROL" contexts | python3 -c '
import json, sys
for c in sorted(json.dumps({k: v for k, v in c.items() if k != "expires_ms"}, sort_keys=True)
                for c in json.load(sys.stdin)):
    print(c)' > "$1"
}

# run NAME RULES WORKERS: a fresh start, the corpus, contexts and events
run() {
    rm -f "$WORK/state" "$WORK/out.json"
    conf "$WORK/$1.conf" "$2" "$3"
    start_corrald "$1" "$WORK/$1.conf"
    send_all
    wait_until settled || fail "$1: contexts due within 10 s do not fire"
    contexts "$WORK/$1.contexts"
    stop_corrald
    sort "$WORK/out.json" > "$WORK/$1.events"
    [ -s "$WORK/$1.events" ] || fail "$1: no events generated"
    [ -s "$WORK/$1.contexts" ] || fail "$1: no contexts open"
}

# --- the shipped rules (also-correlate), without sshd.xml, without rate limits: four shards
run one "$top_srcdir/rules" 1
run four "$top_srcdir/rules" "$N"
grep -q "engine: $N workers, $N correlation shards" "$WORK/four.log" || fail "four: not $N shards"
cmp "$WORK/one.events" "$WORK/four.events" || fail "shipped rules: events differ with $N workers"
cmp "$WORK/one.contexts" "$WORK/four.contexts" || fail "shipped rules: contexts differ"

run one4 "$WORK/rules4" 1
run four4 "$WORK/rules4" "$N"
grep -q "engine: $N workers, $N correlation shards" "$WORK/four4.log" || fail "four4: not $N shards"
cmp "$WORK/one4.events" "$WORK/four4.events" || fail "sharded: events differ with $N workers"
cmp "$WORK/one4.contexts" "$WORK/four4.contexts" || fail "sharded: contexts differ"

run onenr "$WORK/norate" 1
run fournr "$WORK/norate" "$N"
grep -q "engine: $N workers, $N correlation shards" "$WORK/fournr.log" || fail "fournr: not $N shards"
cmp "$WORK/onenr.events" "$WORK/fournr.events" || fail "split: events differ with $N workers"
cmp "$WORK/onenr.contexts" "$WORK/fournr.contexts" || fail "split: contexts differ"
grep -q ssh-user-failures "$WORK/fournr.contexts" || fail "split: no per-user context"

# --- the state of four shards: saved at SIGTERM (run four4 stopped so), read back by 4 and by 1
open=$(wc -l < "$WORK/four4.contexts")
start_corrald again4 "$WORK/four4.conf"
grep -q "$open open contexts restored" "$WORK/again4.log" || fail "4 workers: contexts not restored"
contexts "$WORK/again4.contexts"
cmp "$WORK/four4.contexts" "$WORK/again4.contexts" || fail "4 workers: other contexts restored"

# --- a reload keeps them (every shard takes the new rules)
kill -HUP "$CORRALD_PID"
wait_log "contexts: $open kept, 0 dropped" || fail "reload did not keep the contexts"
contexts "$WORK/reloaded.contexts"
cmp "$WORK/four4.contexts" "$WORK/reloaded.contexts" || fail "contexts changed by the reload"
# rules with a create-context correlate in one shard: the contexts of four move there
sed "s|$WORK/rules4|$WORK/rules1|" "$WORK/four4.conf" > "$WORK/moved.conf"
cp "$WORK/four4.conf" "$WORK/four4.conf.orig"
cp "$WORK/moved.conf" "$WORK/four4.conf"
kill -HUP "$CORRALD_PID"
wait_log "contexts moved to 1 shard" || fail "reload: contexts not moved to one shard"
wait_log "contexts: $open kept, 0 dropped" 2 || fail "second reload did not keep the contexts"
metric_is corral_engine_shards -eq 1 || fail "reload: not one shard"
contexts "$WORK/moved.contexts"
cmp "$WORK/four4.contexts" "$WORK/moved.contexts" || fail "contexts changed by moving to one shard"
cp "$WORK/four4.conf.orig" "$WORK/four4.conf"
stop_corrald
start_corrald again1 "$WORK/one4.conf"
grep -q "$open open contexts restored" "$WORK/again1.log" || fail "1 worker: contexts not restored"
stop_corrald

# --- the counters only grow across a reload that moves the contexts between shards: the
# replaced shards' counts stay, and the moved contexts are not counted created again; the
# per-rule counts too (contexts keep 2 messages: the others are dropped and counted per rule)
rm -f "$WORK/state" "$WORK/out.json"
limit2() { sed 's|<engine |<limits max-context-messages="2"/><engine |' "$1"; }
limit2 "$WORK/four4.conf.orig" > "$WORK/four4.conf"
start_corrald counters "$WORK/four4.conf"
send_all
wait_until settled || fail "counters: contexts due within 10 s do not fire"
matched=$(metric corral_messages_matched_total)
created=$(metric corral_contexts_created_total)
[ "$matched" -gt 0 ] && [ "$created" -gt 0 ] ||
    fail "counters: nothing counted ($matched matched, $created contexts created)"
metrics_text | grep '^corral_rule_context_messages_dropped_total{' | sort > "$WORK/rules.before"
awk '$2 > 0' "$WORK/rules.before" | grep -q . || fail "counters: no message dropped from a context"
limit2 "$WORK/moved.conf" > "$WORK/four4.conf"
kill -HUP "$CORRALD_PID"
wait_log "contexts moved to 1 shard" || fail "counters: contexts not moved to one shard"
metric_is corral_messages_matched_total -eq "$matched" ||
    fail "reload: $(metric corral_messages_matched_total) messages matched, $matched before"
metric_is corral_contexts_created_total -eq "$created" ||
    fail "reload: $(metric corral_contexts_created_total) contexts created, $created before"
metrics_text | grep '^corral_rule_context_messages_dropped_total{' | sort > "$WORK/rules.after"
# (every series of before as it was; the new rules' series come in addition)
! grep -vxFf "$WORK/rules.after" "$WORK/rules.before" > "$WORK/rules.changed" ||
    fail "reload: per-rule counts changed: $(head -3 "$WORK/rules.changed") now $(grep -F "$(head -1 "$WORK/rules.changed" | cut -d' ' -f1)" "$WORK/rules.after")"
cp "$WORK/four4.conf.orig" "$WORK/four4.conf"
stop_corrald

# --- back-pressure: a queue of 2 messages; every line sent is written, none dropped
rm -f "$WORK/state" "$WORK/out.json"
for i in 1 2 3 4 5; do cat "$DATA/OpenSSH_2k.log"; echo; done > "$WORK/big.txt"
sent=$(grep -c "" "$WORK/big.txt")
conf "$WORK/bp.conf" "$WORK/rules4" "$N" 2 all
start_corrald bp "$WORK/bp.conf"
send_tcp_file "$(input_port tcp)" "$WORK/big.txt" &
track $!
# a reload while the workers are busy loses nothing either
wait_metric corral_messages_received_total -ge 1000 || fail "back-pressure: nothing received"
kill -HUP "$CORRALD_PID"
wait_log "contexts: .* kept" || fail "back-pressure: no reload"
wait_metric corral_messages_received_total -eq "$sent" || fail "back-pressure: not all received"
wait_lines "$WORK/out.json" "$sent" || fail "back-pressure: not every message written"
metric_is corral_engine_pauses_total -gt 0 || fail "back-pressure: TCP input never paused"
metric_is corral_engine_dropped_total -eq 0 || fail "back-pressure: messages dropped"
metric_is corral_engine_batches_total -gt 0 || fail "no batches counted"
# every metric served is documented in corrald(8), those of the workers too
for name in $("$CORRAL" ctl -s "$CONTROL" stats | sed -n 's/^# HELP \([a-z_]*\) .*/\1/p'); do
    grep -q "^\.B $name\$" "$top_srcdir/doc/corrald.8" || fail "metric $name is not in doc/corrald.8"
done
stop_corrald
[ "$(grep -c '"MESSAGE"' "$WORK/out.json")" -eq "$sent" ] || fail "back-pressure: messages lost"

# --- SIGTERM while the workers are busy: every message read is processed and written, and
#     the contexts open at the stop are all in the state file (a restart restores as many)
rm -f "$WORK/state" "$WORK/out.json"
# auth.log first: its sudo lines open first-use contexts that live 30 days (the Linux lines'
# su sessions close a second after their message: a slow run may see them all gone)
{
    cat "$top_srcdir/contrib/samples/auth.log"
    for i in $(seq 25); do cat "$DATA/Linux_2k.log" "$DATA/OpenSSH_2k.log"; done
} > "$WORK/term.txt"
start_corrald term "$WORK/bp.conf"
send_tcp_file "$(input_port tcp)" "$WORK/term.txt" 2>/dev/null &
track $!
wait_metric corral_messages_received_total -ge 1000 || fail "sigterm: nothing received"
stop_corrald
line=$(grep "stopping: [0-9]* messages received" "$WORK/term.log") || fail "sigterm: no stop summary"
got=$(echo "$line" | sed 's/.*stopping: \([0-9]*\) messages received, \([0-9]*\) processed, \([0-9]*\) open.*/\1 \2 \3/')
set -- $got
[ "$1" -ge 1000 ] && [ "$1" -eq "$2" ] || fail "sigterm: $1 received, $2 processed"
# the messages read (they carry their sender's address; generated ones do not)
[ "$(grep -c '"SOURCEIP"' "$WORK/out.json")" -eq "$1" ] || fail "sigterm: $1 received, $(grep -c '"SOURCEIP"' "$WORK/out.json") written"
[ "$3" -gt 0 ] || fail "sigterm: no open context to save"
start_corrald term2 "$WORK/bp.conf"
grep -q "$3 open contexts restored" "$WORK/term2.log" || fail "sigterm: $3 contexts open at the stop, not all restored"
stop_corrald
echo "sigterm while busy: $1 of $(grep -c "" "$WORK/term.txt") received, all processed and written, $3 contexts saved and restored"

# --- datagrams meet the same tiny queue: the UDP input stops reading while it is full (they
#     wait in the socket buffer, as while one engine is busy; what the kernel drops is
#     counted), so none is dropped by corrald and every one received is written
# (no state: a context restored from the run before could time out and write a line of its own)
rm -f "$WORK/state" "$WORK/out.json"
sed 's|<tcp listen="127.0.0.1:0" name="tcp"/>|<udp listen="127.0.0.1:0" name="udp"/>|' "$WORK/bp.conf" \
    > "$WORK/udp.conf"
start_corrald udp "$WORK/udp.conf"
python3 - "$(input_port udp)" "$WORK/big.txt" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for line in open(sys.argv[2], "rb").read().splitlines()[:3000]:
    s.sendto(line, ("127.0.0.1", int(sys.argv[1])))
PY
# the 3,000 datagrams are received or counted as dropped by the kernel (a full socket buffer);
# of those received, each is written or counted as dropped for want of room in the queue
arrived() {
    [ $(($(metric corral_input_messages_total input=udp) + \
         $(metric corral_input_kernel_drops_total input=udp))) -eq 3000 ]
}
wait_until arrived || fail "udp: of 3000 datagrams, $(metric corral_input_messages_total input=udp) received, $(metric corral_input_kernel_drops_total input=udp) dropped by the kernel"
# (the messages read carry their sender's address; generated ones do not)
written_read() { count_matching "$WORK/out.json" '"SOURCEIP"'; }
accounted() {
    [ "$(metric corral_messages_received_total)" -eq \
      $(($(written_read) + $(metric corral_engine_dropped_total))) ]
}
wait_until accounted || fail "udp: received $(metric corral_messages_received_total), written $(written_read), dropped $(metric corral_engine_dropped_total)"
metric_is corral_engine_dropped_total -eq 0 || fail "udp: $(metric corral_engine_dropped_total) datagrams dropped by corrald"
echo "udp: $(metric corral_messages_received_total) received, $(metric corral_input_kernel_drops_total input=udp) dropped by the kernel, held $(metric corral_engine_pauses_total) times"
stop_corrald
echo "ok: $N workers give 1 worker's events and contexts; state, reload and back-pressure hold"
