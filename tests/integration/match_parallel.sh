#!/bin/sh
# corral match -j N replays a file with exactly the output of one thread
# (engine/par.c, doc/parallel.md): -j 1, 2, 4 and 7 compared byte for byte,
# with no normalisation, on
#   - the shipped rules with the loghub samples and contrib/samples/auth.log
#     (dated in 2025, so every message keeps its own time: timeouts and the
#     rate limits follow message time);
#   - the public pattern databases of tests/data/patterndb with the loghub
#     samples (classification only);
#   - a synthetic log of many interleaved SSH sessions, logins and
#     brute-force attempts on many hosts over three days: contexts of every
#     shard time out mid-stream (60 s and 24 h), rate-limited actions fire,
#     some shards see no message for a long time;
#   - the log lines of the shipped rules' scenarios (rules/*.scenario);
#   - synthetic distributed brute-force campaigns (one user name failing
#     from many addresses, rules/sshd.xml's also-correlate) on many hosts,
#     with the shipped rules (their contexts keyed by host, for the rate
#     limits: spread over the shards by host) and with the shipped rules
#     without rate limits (keyed by address and by user: most failure lines
#     join contexts of two shards, engine/par.c par_process());
#   - rules with create-context (which run correlation in one shard) on the
#     same log.
# The shipped rules, with also-correlate, correlate in N shards (--stats).
. "$(dirname "$0")/corrald_lib.sh"

NOW=2026-12-03T10:00:00Z

# loghub dates have no year: dated in 2025, as tests/compat/shipped_rules.sh does
in_2025() {
    awk 'BEGIN { split("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec", m, " ")
                 for (i = 1; i <= 12; i++) mon[m[i]] = i }
         ($1 in mon) && $3 ~ /^[0-9][0-9]:[0-9][0-9]:[0-9][0-9]$/ {
             d = sprintf("2025-%02d-%02dT%s+00:00", mon[$1], $2, $3)
             sub(/^[A-Z][a-z][a-z] +[0-9]+ [0-9:]+ /, "")
             print d " " $0; next }
         { print }' "$1"
}

# Interleaved sshd traffic: sessions per (host, pid) that close or are left
# open, failed logins from a few attackers per host (brute force contexts per
# address and host, 60 s), root logins (a rate-limited alert); time moves
# 1-40 s a line over three days, with quiet hours for some hosts.
synth() {
    awk -v n="$1" 'BEGIN {
        srand(7); t = 1735689600   # 2025-01-01T00:00:00Z
        for (i = 0; i < n; i++) {
            t += int(rand() * 40) + ((i % 997) == 0 ? 7200 : 0)
            h = "host" int(rand() * 11); pid = 1000 + int(rand() * 300)
            d = strftime("%Y-%m-%dT%H:%M:%S+00:00", t, 1)
            r = rand()
            if (r < 0.25) {
                u = (rand() < 0.1) ? "root" : "user" int(rand() * 9)
                printf "%s %s sshd[%d]: Accepted password for %s from 10.%d.0.%d port %d ssh2\n", d, h, pid, u, int(rand() * 5), int(rand() * 250), 40000 + i % 20000
                open[h " " pid] = u
            } else if (r < 0.45) {
                k = h " " pid
                if (k in open) {
                    printf "%s %s sshd[%d]: pam_unix(sshd:session): session closed for user %s\n", d, h, pid, open[k]
                    delete open[k]
                } else {
                    printf "%s %s sshd[%d]: Connection closed by 10.1.2.3 port 22 [preauth]\n", d, h, pid
                }
            } else if (r < 0.6) {
                # a burst of failures from one attacker: 1-8 lines 0-3 s apart
                a = "203.0.113." int(rand() * 6)
                for (b = int(rand() * 8); b >= 0; b--) {
                    if (rand() < 0.5)
                        printf "%s %s sshd[%d]: Failed password for invalid user admin%d from %s port %d ssh2\n", d, h, pid, int(rand() * 4), a, 30000 + i % 30000
                    else
                        printf "%s %s sshd[%d]: Failed password for root from %s port %d ssh2\n", d, h, pid, a, 30000 + i % 30000
                    t += int(rand() * 4); i++; pid++
                    d = strftime("%Y-%m-%dT%H:%M:%S+00:00", t, 1)
                }
            } else {
                printf "%s %s kernel: [%d.000000] eth0: link up %d\n", d, h, i, i % 7
            }
        }
    }'
}

# A session opener that creates a second context on another key (global
# scope, keyed by user): parallel classification, correlation in one shard.
cat > "$WORK/cc.xml" <<'EOF'
<?xml version='1.0' encoding='UTF-8'?>
<patterndb version='6' pub_date='2026-12-04'>
  <ruleset name='sshd' id='cc-sshd'>
    <pattern>sshd</pattern>
    <rules>
      <rule provider='test' id='cc.accepted' class='system' context-id='s-${usracct.username}' context-timeout='300' context-scope='host'>
        <patterns><pattern>Accepted password for @ESTRING:usracct.username: @from @IPv4:usracct.device:@ port @NUMBER:usracct.port:@ ssh2</pattern></patterns>
        <actions>
          <action>
            <create-context context-id='user-${usracct.username}' context-timeout='600' context-scope='global'>
              <message inherit-properties='context'><values><value name='MESSAGE'>user ${usracct.username} seen</value></values></message>
            </create-context>
          </action>
          <action trigger='timeout'>
            <message><values><value name='MESSAGE'>quiet ${usracct.username} on ${HOST} after $(context-length)</value></values></message>
          </action>
        </actions>
      </rule>
      <rule provider='test' id='cc.failed' class='violation' context-id='f-${usracct.device}' context-timeout='60' context-scope='global'>
        <patterns><pattern>Failed password for @ANYSTRING:rest@</pattern></patterns>
        <actions>
          <action trigger='timeout' rate='3/600'>
            <message><values><value name='MESSAGE'>failures: $(context-length)</value></values></message>
          </action>
        </actions>
      </rule>
    </rules>
  </ruleset>
</patterndb>
EOF

# Distributed brute force: on 23 hosts, campaigns against a user name from
# 3-12 addresses (5 or more raise ssh.distributed_bruteforce.alert), lines
# 1-30 s apart, some addresses retrying (per-address brute force), quiet
# spells past the campaigns' 600 s so that they end mid-stream.
campaigns() {
    awk -v n="$1" 'BEGIN {
        srand(11); t = 1735689600
        for (i = 0; i < n; ) {
            h = "srv" int(rand() * 23); u = (rand() < 0.3) ? "root" : "user" int(rand() * 7)
            na = 3 + int(rand() * 10); net = int(rand() * 200)
            for (a = 0; a < na && i < n; a++)
                for (k = (rand() < 0.2) ? 6 : 1; k > 0 && i < n; k--) {
                    t += 1 + int(rand() * 30) + ((i % 701) == 0 ? 900 : 0)
                    d = strftime("%Y-%m-%dT%H:%M:%S+00:00", t, 1)
                    if (u == "root")
                        printf "%s %s sshd[%d]: Failed password for root from 198.%d.%d.%d port %d ssh2\n", d, h, 4000 + i, net, a, int(rand() * 3), 30000 + i % 30000
                    else
                        printf "%s %s sshd[%d]: Failed password for invalid user %s from 198.%d.%d.%d port %d ssh2\n", d, h, 4000 + i, u, net, a, int(rand() * 3), 30000 + i % 30000
                    i++
                }
        }
    }'
}

synth 3000 > "$WORK/synth.log"
campaigns 4000 > "$WORK/campaigns.log"
# the scenarios' log lines, all scenarios one after the other
for f in "$top_srcdir"/rules/*.scenario; do
    awk '/<log>/ { on = 1; next } /<\/log>/ { on = 0 } on { sub(/^[ \t]+/, ""); print }' "$f"
done > "$WORK/scenarios.log"
[ "$(grep -c "" "$WORK/scenarios.log")" -gt 400 ] || fail "too few scenario lines"
# the shipped rules without rate limits: their contexts are keyed by id, not by host alone
mkdir "$WORK/norate"
for f in "$top_srcdir"/rules/*.xml; do
    sed "s/ rate='[^']*'//; s/ rate-key='[^']*'//" "$f" > "$WORK/norate/$(basename "$f")"
done
grep -q "rate=" "$WORK/norate/sshd.xml" && fail "rate limits left in the copy"
for log in OpenSSH_2k.log Linux_2k.log; do in_2025 "$top_srcdir/tests/data/loghub/$log" > "$WORK/$log"; done
in_2025 "$top_srcdir/contrib/samples/auth.log" > "$WORK/auth.log"

tpl='${ISODATE} ${HOST} ${.classifier.rule_id} ${.classifier.context_id} ${MESSAGE}\n'
runs=0
# one NAME RULES LOG [options]: -j 1 against -j 2, 4 and 7
one() {
    name=$1 rules=$2 log=$3
    shift 3
    "$CORRAL" match -j 1 -r "$rules" --now "$NOW" -f "$log" "$@" > "$WORK/out.1" 2> "$WORK/err.1" ||
        fail "$name: corral match -j 1 failed: $(cat "$WORK/err.1")"
    [ -s "$WORK/out.1" ] || fail "$name: no output"
    for j in 2 4 7; do
        "$CORRAL" match -j "$j" -r "$rules" --now "$NOW" -f "$log" "$@" > "$WORK/out.$j" \
            2> "$WORK/err.$j" || fail "$name: corral match -j $j failed: $(cat "$WORK/err.$j")"
        if ! cmp -s "$WORK/out.1" "$WORK/out.$j"; then
            diff "$WORK/out.1" "$WORK/out.$j" | head -20
            fail "$name: -j $j differs from -j 1"
        fi
        runs=$((runs + 1))
    done
}
# compare NAME RULES LOG [options]: in the three output forms
compare() {
    n=$1
    shift
    one "$n (pairs)" "$@"
    one "$n (json)" "$@" --json
    one "$n (template)" "$@" -T "$tpl"
}

compare "shipped rules, OpenSSH_2k" "$top_srcdir/rules" "$WORK/OpenSSH_2k.log"
compare "shipped rules, synthetic sessions" "$top_srcdir/rules" "$WORK/synth.log"
one "shipped rules, Linux_2k" "$top_srcdir/rules" "$WORK/Linux_2k.log" -T "$tpl"
one "shipped rules, auth.log" "$top_srcdir/rules" "$WORK/auth.log" --json
one "shipped rules, synthetic sessions, --keep-open" "$top_srcdir/rules" "$WORK/synth.log" --keep-open -T "$tpl"
one "public patterndb, OpenSSH_2k" "$top_srcdir/tests/data/patterndb" "$WORK/OpenSSH_2k.log" -T "$tpl"
one "shipped rules, scenarios" "$top_srcdir/rules" "$WORK/scenarios.log" -T "$tpl"
one "shipped rules, scenarios (json)" "$top_srcdir/rules" "$WORK/scenarios.log" --json
compare "shipped rules, brute-force campaigns" "$top_srcdir/rules" "$WORK/campaigns.log"
compare "shipped rules without rates, brute-force campaigns" "$WORK/norate" "$WORK/campaigns.log"
one "shipped rules without rates, synthetic sessions" "$WORK/norate" "$WORK/synth.log" -T "$tpl"
one "shipped rules without rates, OpenSSH_2k" "$WORK/norate" "$WORK/OpenSSH_2k.log" --json
one "shipped rules without rates, scenarios" "$WORK/norate" "$WORK/scenarios.log" -T "$tpl"
one "create-context rules, synthetic sessions" "$WORK/cc.xml" "$WORK/synth.log" -T "$tpl"

# the comparisons must have had something to compare: sessions, contexts
# that timed out mid-stream, rate-limited alerts
"$CORRAL" match -j 4 -r "$top_srcdir/rules" --now "$NOW" -f "$WORK/synth.log" -T "$tpl" \
    > "$WORK/synth.out" || fail "corral match failed"
closed=$(grep -c 'corral.sshd.session.closed' "$WORK/synth.out" || true)
expired=$(grep -c 'was never seen to close' "$WORK/synth.out" || true)
brute=$(grep -c 'brute force' "$WORK/synth.out" || true)
[ "$closed" -gt 10 ] || fail "synthetic log: only $closed sessions closed"
[ "$expired" -gt 100 ] || fail "synthetic log: only $expired sessions timed out"
[ "$brute" -gt 100 ] || fail "synthetic log: only $brute brute-force alerts"
"$CORRAL" match -j 3 -r "$WORK/cc.xml" --now "$NOW" -f "$WORK/synth.log" -T "$tpl" \
    > "$WORK/cc.out" || fail "corral match failed"
grep -q 'quiet ' "$WORK/cc.out" || fail "create-context rules: no timeout fired"
grep -q 'failures: ' "$WORK/cc.out" || fail "create-context rules: no rate-limited timeout"
# also-correlate correlates in every shard (create-context in one), and the
# campaigns raised distributed brute-force alerts and summaries
for r in "$top_srcdir/rules" "$WORK/norate"; do
    "$CORRAL" match -j 4 -r "$r" --now "$NOW" -f "$WORK/campaigns.log" --stats --json \
        > "$WORK/camp.out" 2> "$WORK/camp.err" || fail "corral match failed"
    grep -q "correlation in 4 shards" "$WORK/camp.err" || fail "$r: $(cat "$WORK/camp.err")"
    dist=$(grep -c '"corral.event":"ssh.distributed_bruteforce.alert"' "$WORK/camp.out" || true)
    [ "$dist" -gt 100 ] || fail "$r: only $dist distributed brute-force alerts"
    grep -q '"corral.event":"ssh.distributed_bruteforce.summary"' "$WORK/camp.out" ||
        fail "$r: no distributed brute-force summary"
done
"$CORRAL" match -j 4 -r "$WORK/cc.xml" --now "$NOW" -f "$WORK/synth.log" --stats \
    > /dev/null 2> "$WORK/cc.err" || fail "corral match failed"
grep -q "correlation in 1 shards" "$WORK/cc.err" || fail "create-context: $(cat "$WORK/cc.err")"

# the output through a pipe (writev() of each batch from the threads' buffers) is the same
"$CORRAL" match -j 2 -r "$top_srcdir/rules" --now "$NOW" -f "$WORK/synth.log" -T "$tpl" |
    cat > "$WORK/piped.out" || fail "corral match -j 2 into a pipe failed"
"$CORRAL" match -j 1 -r "$top_srcdir/rules" --now "$NOW" -f "$WORK/synth.log" -T "$tpl" \
    > "$WORK/synth.1" || fail "corral match failed"
cmp -s "$WORK/piped.out" "$WORK/synth.1" || fail "-j 2 into a pipe differs from -j 1 into a file"
# output that cannot be written: an error that says so, and a failure
if [ -w /dev/full ]; then
    for j in 1 2; do
        "$CORRAL" match -j "$j" -r "$top_srcdir/rules" --now "$NOW" -f "$WORK/synth.log" \
            > /dev/full 2> "$WORK/err" && fail "-j $j: writing to /dev/full succeeded"
        grep -q "writing output: No space left on device" "$WORK/err" ||
            fail "-j $j, /dev/full: $(cat "$WORK/err")"
    done
fi

# -j is checked
"$CORRAL" match -j 0 -r "$top_srcdir/rules" -f "$WORK/auth.log" > /dev/null 2> "$WORK/err" &&
    fail "-j 0 accepted"
grep -q "bad -j" "$WORK/err" || fail "-j 0: no clear error"
# the default is the CPUs the process may run on, not the machine's count
if command -v taskset > /dev/null; then
    taskset -c 0 "$CORRAL" match --stats -r "$top_srcdir/rules" -f "$WORK/auth.log" \
        > /dev/null 2> "$WORK/err" || fail "taskset: corral match failed"
    # one thread: the one-thread engine, which names no threads
    ! grep -q "threads, correlation" "$WORK/err" || fail "taskset -c 0: $(cat "$WORK/err")"
    if [ "$(nproc --all)" -ge 2 ]; then
        taskset -c 0,1 "$CORRAL" match --stats -r "$top_srcdir/rules" -f "$WORK/auth.log" \
            > /dev/null 2> "$WORK/err" || fail "taskset: corral match failed"
        grep -q "^corral match: 2 threads," "$WORK/err" || fail "taskset -c 0,1: $(cat "$WORK/err")"
    fi
fi
echo "ok: corral match -j 2/4/7 gave the output of -j 1 in $runs comparisons (synthetic log: $closed sessions closed, $expired timed out, $brute brute-force alerts)"
