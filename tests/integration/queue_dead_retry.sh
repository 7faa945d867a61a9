#!/bin/sh
# Delivery control (corral queue) against the real corrald, with a real exec
# script as the receiver:
#  1. the receiver is down until an alert is dead-lettered; `corral queue
#     list` shows it dead; the receiver comes up; `corral queue retry
#     --all-dead` delivers it exactly once, takes it out of the dead-letter
#     file and the list; a second retry (all, or by its id) finds nothing
#     and delivers nothing; a restart delivers nothing again.
#  2. `corral queue drop` of a queued (retrying) alert and of a dead letter:
#     gone from the list, counted, logged; unknown executors and ids are an
#     error with exit status 2 and change nothing.
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/rules"
cat > "$WORK/rules/alerts.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-04">
  <ruleset name="app" id="queue-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="queue.alert" class="violation">
      <patterns><pattern>alert @NUMBER:n@</pattern></patterns>
      <actions><action route="runner"><message>
        <values>
          <value name="MESSAGE">alert number ${n}@1</value>
          <value name="corral.alert_id">a-${n}@1</value>
        </values>
      </message></action></actions>
    </rule>
    <rule provider="test" id="queue.hold" class="violation">
      <patterns><pattern>hold @NUMBER:n@</pattern></patterns>
      <actions><action route="holder"><message>
        <values>
          <value name="MESSAGE">held number ${n}@1</value>
          <value name="corral.alert_id">h-${n}@1</value>
        </values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
receiver_script
printf '#!/bin/sh\nexit 75\n' > "$WORK/never.sh"
chmod +x "$WORK/never.sh"
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$WORK/control.sock"/>
  <inputs><tcp listen="127.0.0.1:0" name="in"/></inputs>
  <executors spool="$WORK/spool">
    <exec name="runner" program="$WORK/receiver.sh" backoff="100ms" max-backoff="100ms" attempts="2"/>
    <exec name="holder" program="$WORK/never.sh" backoff="1h" max-backoff="1h" attempts="1000"/>
  </executors>
</corrald>
XML
CONTROL=$WORK/control.sock
DEAD=$WORK/spool/runner.dead.jsonl
q() { "$CORRAL" queue -s "$CONTROL" "$@"; }
send() {
    printf '<13>Dec  4 10:00:00 web1 app: %s\n' "$@" > "$WORK/lines"
    send_tcp_file "$(input_port in)" "$WORK/lines"
}
# ids EXECUTOR STATE: the ids `queue list --json` shows in that state
ids() {
    q list "$1" --json | python3 -c 'import json, sys
for x in json.load(sys.stdin)["executors"]:
    for e in x["queued"] + x["dead"]:
        if e["state"] == sys.argv[1]:
            print(e["id"], e["alert_id"])' "$2"
}
# expect_2 WHAT COMMAND...: COMMAND must fail with status 2, saying WHAT on stderr
expect_2() {
    _what=$1
    shift
    "$@" > "$WORK/err.out" 2> "$WORK/err.err"
    _st=$?
    [ $_st -eq 2 ] || fail "$* exited $_st, not 2: $(cat "$WORK/err.out" "$WORK/err.err")"
    grep -q "$_what" "$WORK/err.err" || fail "$*: no '$_what' in: $(cat "$WORK/err.err")"
}

# ---- 1. dead letter, then retry ----
touch "$WORK/down"
start_corrald corrald "$WORK/corrald.conf"
send "alert 1"
wait_metric corral_executor_dead_total executor=runner -eq 1 || fail "alert 1 not dead-lettered"
[ "$(grep -c '"alert_id":"a-1"' "$DEAD")" = 1 ] || fail "dead-letter file: $(cat "$DEAD")"
dead=$(ids runner dead)
[ "$(echo "$dead" | wc -l)" = 1 ] && [ "${dead#* }" = a-1 ] || fail "dead letters listed: $dead"
id=${dead%% *}
q list > "$WORK/list.txt" || fail "queue list failed"
grep -q "^  runner/$id  *dead .*a-1 .*alert number 1" "$WORK/list.txt" ||
    fail "human list: $(cat "$WORK/list.txt")"
[ ! -e "$WORK/delivered" ] || fail "delivered while down: $(cat "$WORK/delivered")"

rm "$WORK/down"
q retry --all-dead > "$WORK/retry.out" || fail "retry --all-dead failed: $(cat "$WORK/retry.out")"
grep -q "runner: 1 dead letter queued again" "$WORK/retry.out" || fail "retry said: $(cat "$WORK/retry.out")"
wait_metric corral_executor_delivered_total executor=runner -eq 1 || fail "retried alert not delivered"
[ "$(cat "$WORK/delivered")" = a-1 ] || fail "delivered: $(cat "$WORK/delivered")"
[ "$(metric corral_executor_dead_retried_total executor=runner)" = 1 ] || fail "retried not counted"
grep -q '"alert_id":"a-1"' "$DEAD" && fail "a-1 still in the dead-letter file"
[ -z "$(ids runner dead)" ] || fail "still listed dead: $(ids runner dead)"

# retried once: a second retry finds nothing and queues nothing
q retry --all-dead runner > "$WORK/retry2.out" || fail "second retry --all-dead failed"
grep -q "no dead letters to retry" "$WORK/retry2.out" || fail "second retry said: $(cat "$WORK/retry2.out")"
expect_2 "no dead letter runner/$id" q retry "runner/$id"
[ "$(metric corral_executor_queued executor=runner)" = 0 ] || fail "something queued again"
[ "$(metric corral_executor_dead_retried_total executor=runner)" = 1 ] || fail "retried twice"
stop_corrald
start_corrald corrald "$WORK/corrald.conf"
[ "$(metric corral_executor_queued executor=runner)" = 0 ] || fail "queued after a restart"
[ "$(cat "$WORK/delivered")" = a-1 ] || fail "delivered after the restart: $(cat "$WORK/delivered")"
echo "ok: a dead letter retried is delivered once and leaves the dead-letter file"

# ---- 2. drop ----
expect_2 "unknown executor 'nosuch'" q drop nosuch/q1
expect_2 "no queued alert runner/q999" q drop runner/q999
expect_2 "no dead letter runner/d1-1" q drop runner/d1-1
expect_2 "bad id" q retry a-1
expect_2 "unknown executor 'nosuch'" q list nosuch
expect_2 usage q frobnicate
send "hold 1"
wait_metric corral_executor_retries_total executor=holder -eq 1 || fail "hold 1 not tried"
held=$(ids holder retrying)
[ "${held#* }" = h-1 ] || fail "retrying: $held"
q drop "holder/${held%% *}" > "$WORK/drop.out" || fail "drop failed: $(cat "$WORK/drop.out")"
[ -z "$(ids holder retrying)" ] || fail "still queued after drop: $(ids holder retrying)"
[ "$(metric corral_executor_queued executor=holder)" = 0 ] || fail "holder still holds it"
[ "$(metric corral_executor_operator_dropped_total executor=holder)" = 1 ] || fail "drop not counted"
wait_log "executor holder: queued alert ${held%% *} (h-1) dropped" || fail "drop not logged"

touch "$WORK/down"
send "alert 2"
wait_metric corral_executor_dead_total executor=runner -eq 1 || fail "alert 2 not dead-lettered"
dead=$(ids runner dead)
[ "${dead#* }" = a-2 ] || fail "dead: $dead"
q drop "runner/${dead%% *}" > "$WORK/drop.out" || fail "dead drop failed: $(cat "$WORK/drop.out")"
[ -z "$(ids runner dead)" ] || fail "dead letter still listed"
[ ! -s "$DEAD" ] || fail "dead-letter file: $(cat "$DEAD")"
[ "$(metric corral_executor_operator_dropped_total executor=runner)" = 1 ] || fail "dead drop not counted"
wait_log "executor runner: dead letter ${dead%% *} (a-2) dropped" || fail "dead drop not logged"
stop_corrald
[ "$(cat "$WORK/delivered")" = a-1 ] || fail "delivered: $(cat "$WORK/delivered")"
echo "ok: queued alerts and dead letters dropped, counted and logged; unknown ids refused"
