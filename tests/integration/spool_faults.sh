#!/bin/sh
# The spool under damage and a full disk, against the real corrald with a
# real exec script as the executor:
#  1. 100 alerts pending (the receiver says "try again later", backoff 1h),
#     corrald stopped, one byte of the 10th record flipped: at the next
#     start the other 99 are delivered, once each, and the damage is counted
#     (corral_executor_spool_corrupt_total 1).
#  2. (root, on a small tmpfs) the disk fills while alerts arrive, then has
#     room again; corrald is killed with -9: every alert comes back.
#  3. (same) corrald starts on a full disk, keeps its alerts in memory, and
#     writes them to the spool once there is room.
#  4. (same) 100 alerts of 1 kB spooled, the disk fills, 30 more are kept
#     in memory; then 64 KiB are freed, too little for a second copy of the
#     spool but room for the 30: they are appended to it, and after kill -9
#     all 130 come back.
. "$(dirname "$0")/corrald_lib.sh"
need python3

mkdir -p "$WORK/rules"
cat > "$WORK/rules/alerts.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-03">
  <ruleset name="app" id="spool-app"><patterns><pattern>app</pattern></patterns><rules>
    <rule provider="test" id="spool.alert" class="violation">
      <patterns><pattern>alert @NUMBER:n@</pattern></patterns>
      <actions><action route="runner"><message>
        <values>
          <value name="MESSAGE">alert number ${n}@1</value>
          <value name="corral.alert_id">a-${n}@1</value>
        </values>
      </message></action></actions>
    </rule>
    <rule provider="test" id="spool.big" class="violation">
      <patterns><pattern>big @NUMBER:n@ @ANYSTRING:pad@</pattern></patterns>
      <actions><action route="runner"><message>
        <values>
          <value name="MESSAGE">alert number ${n}@1 ${pad}@1</value>
          <value name="corral.alert_id">a-${n}@1</value>
        </values>
      </message></action></actions>
    </rule>
  </rules></ruleset>
</patterndb>
XML
receiver_script

# config SPOOL_DIR
config() {
    cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$WORK/control.sock"/>
  <inputs><tcp listen="127.0.0.1:0" name="in"/></inputs>
  <executors spool="$1">
    <exec name="runner" program="$WORK/receiver.sh" backoff="1h" max-backoff="1h" attempts="1000"/>
  </executors>
</corrald>
XML
}

# metric NAME: the runner executor's value
metric() {
    "$CORRAL" ctl -s "$WORK/control.sock" stats |
        awk -v n="$1{executor=\"runner\"}" '$1 == n { print $2 }'
}
metric_is() { [ "$(metric "$1")" = "$2" ]; }
metric_ge() { [ "$(metric "$1")" -ge "$2" ]; }

# send FROM TO [PAD]: alerts FROM..TO over one TCP connection (in order, none lost);
# with PAD, each carries PAD bytes more
send() {
    i=$1
    : > "$WORK/lines"
    while [ "$i" -le "$2" ]; do
        if [ -n "${3:-}" ]; then
            printf '<13>Dec  3 10:00:00 web1 app: big %d %0*d\n' "$i" "$3" 0 >> "$WORK/lines"
        else
            echo "<13>Dec  3 10:00:00 web1 app: alert $i" >> "$WORK/lines"
        fi
        i=$((i + 1))
    done
    send_tcp_file "$(input_port in)" "$WORK/lines"
}

# delivered_ok N: exactly a-1..a-N (but for $LOST) delivered, each once
delivered_ok() {
    [ "$(wc -l < "$WORK/delivered")" -eq "$1" ] ||
        fail "$(wc -l < "$WORK/delivered") delivered, not $1; twice: $(sort "$WORK/delivered" | uniq -d | tr '\n' ' ')"
    [ -z "$(sort "$WORK/delivered" | uniq -d)" ] || fail "delivered twice: $(sort "$WORK/delivered" | uniq -d)"
}

# ---- 1. a flipped byte in record 10 of 100 ----
config "$WORK/spool"
touch "$WORK/down"
start_corrald first "$WORK/corrald.conf"
send 1 100
wait_until metric_is corral_executor_retries_total 100 ||
    fail "alerts not all tried: $(metric corral_executor_retries_total) tries, $(metric corral_executor_queued) queued"
stop_corrald "$CORRALD_PID"

# flip a byte in the middle of the 10th record's payload (format: actions/queue.h;
# version 1 too, so that the test can be run against an older corrald)
LOST=$(python3 - "$WORK/spool/runner.spool" <<'PY'
import re, struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
v1 = data[:10] == b"CORRALSP1\n"
assert v1 or data[:10] == b"CORRALSP2\n", data[:10]
pos = 10
for n in range(10):
    if v1:  # u32 length of the rest, u32 CRC, type, u64 seq, payload
        head, length = 17, struct.unpack("<I", data[pos:pos + 4])[0] - 9
    else:
        assert data[pos:pos + 4] == b"\xc0\x52\x4c\x9a"
        head, length = 25, struct.unpack("<I", data[pos + 13:pos + 17])[0]
    start = pos + head
    pos = start + length
payload = bytes(data[start:pos])
data[start + length // 2] ^= 0x01
open(sys.argv[1], "wb").write(data)
print(re.search(rb"a-[0-9]+", payload).group().decode())
PY
) || fail "could not damage the spool"
[ -n "$LOST" ] || fail "no alert id in record 10"

rm -f "$WORK/down"
start_corrald second "$WORK/corrald.conf"
grep -q "99 alerts from the spool" "$WORK/second.log" || fail "not 99 alerts recovered"
wait_until metric_is corral_executor_delivered_total 99 ||
    fail "$(metric corral_executor_delivered_total) delivered, not 99"
metric_is corral_executor_queued 0 || fail "still queued: $(metric corral_executor_queued)"
metric_is corral_executor_spool_corrupt_total 1 ||
    fail "corrupt records counted: $(metric corral_executor_spool_corrupt_total)"
delivered_ok 99
grep -qx "$LOST" "$WORK/delivered" && fail "$LOST, whose record was damaged, delivered"
[ -f "$WORK/spool/runner.spool.corrupt" ] || fail "the damaged spool was not kept"
stop_corrald "$CORRALD_PID"
echo "ok: a flipped byte in record 10 of 100: 99 delivered once, $LOST lost and counted"

# ---- a small tmpfs for a full disk (root only) ----
MNT="$WORK/mnt"
mkdir -p "$MNT"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=256k tmpfs "$MNT" 2>/dev/null; then
    echo "ok (full-disk cases skipped: cannot mount a tmpfs here)"
    exit 0
fi
trap 'umount "$MNT" 2>/dev/null; cleanup' EXIT HUP INT TERM
fill() { dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null; sync; }

# ---- 2. the disk fills while alerts arrive, then has room; kill -9 ----
mkdir -p "$MNT/spool"
config "$MNT/spool"
touch "$WORK/down"
rm -f "$WORK/delivered"
start_corrald third "$WORK/corrald.conf"
send 1 20
wait_until metric_is corral_executor_queued 20 || fail "not queued: $(metric corral_executor_queued)"
fill
send 21 80
# (the spool's last page, up to 4 KiB, may still take a few dozen records)
wait_until metric_is corral_executor_queued 80 || fail "not queued: $(metric corral_executor_queued)"
metric_ge corral_executor_memory_only_total 20 ||
    fail "not in memory: $(metric corral_executor_memory_only_total)"
[ "$(grep -c "writing spool" "$WORK/third.log")" -eq 1 ] ||
    fail "write errors not rate-limited: $(grep -c "writing spool" "$WORK/third.log") lines"
rm -f "$MNT/filler"
send 81 100
wait_until metric_is corral_executor_unspooled 0 ||
    fail "not written again: $(metric corral_executor_unspooled) in memory only"
wait_until metric_is corral_executor_queued 100 || fail "not queued: $(metric corral_executor_queued)"
# every alert tried once (the receiver is down: backoff 1h) and none in flight: a script still
# running at the kill, which outlives corrald, would find the receiver up again and deliver an
# alert that the restarted corrald, never told, delivers again (at least once, not exactly once)
wait_until metric_is corral_executor_retries_total 100 ||
    fail "not all tried: $(metric corral_executor_retries_total)"
wait_until metric_is corral_executor_inflight 0 || fail "still in flight: $(metric corral_executor_inflight)"
kill -9 "$CORRALD_PID"
wait "$CORRALD_PID" 2>/dev/null
untrack "$CORRALD_PID"
CORRALD_PID=
rm -f "$WORK/down"
start_corrald fourth "$WORK/corrald.conf"
grep -q "100 alerts from the spool" "$WORK/fourth.log" || fail "not 100 alerts recovered after kill -9"
wait_until metric_is corral_executor_queued 0 || fail "still queued: $(metric corral_executor_queued)"
delivered_ok 100
stop_corrald "$CORRALD_PID"
echo "ok: disk full while running, then room, then kill -9: 100 of 100 delivered once"

# ---- 3. start on a full disk ----
touch "$WORK/down"
rm -f "$WORK/delivered"
fill
start_corrald fifth "$WORK/corrald.conf"
grep -q "not started" "$WORK/fifth.log" && fail "corrald refused to start on a full disk"
grep -q "kept in memory only" "$WORK/fifth.log" || fail "no warning about the full disk"
send 1 10
wait_until metric_is corral_executor_unspooled 10 ||
    fail "not in memory: $(metric corral_executor_unspooled)"
rm -f "$MNT/filler"
wait_until metric_is corral_executor_unspooled 0 ||
    fail "not written once there was room: $(metric corral_executor_unspooled)"
wait_until metric_is corral_executor_retries_total 10 ||
    fail "not all tried: $(metric corral_executor_retries_total)"
wait_until metric_is corral_executor_inflight 0 || fail "still in flight: $(metric corral_executor_inflight)"
kill -9 "$CORRALD_PID"
wait "$CORRALD_PID" 2>/dev/null
untrack "$CORRALD_PID"
CORRALD_PID=
rm -f "$WORK/down"
start_corrald sixth "$WORK/corrald.conf"
grep -q "10 alerts from the spool" "$WORK/sixth.log" || fail "not 10 alerts recovered"
wait_until metric_is corral_executor_queued 0 || fail "still queued: $(metric corral_executor_queued)"
delivered_ok 10
stop_corrald "$CORRALD_PID"
echo "ok: started on a full disk, alerts kept in memory, spooled once there was room"

# ---- 4. room for the alerts kept in memory, not for a second copy of the spool ----
touch "$WORK/down"
rm -f "$WORK/delivered" "$MNT/spool/"*
start_corrald seventh "$WORK/corrald.conf"
send 1 100 1000
wait_until metric_is corral_executor_queued 100 || fail "not queued: $(metric corral_executor_queued)"
spooled=$(stat -c %s "$MNT/spool/runner.spool")
fill
send 101 130 1000
wait_until metric_is corral_executor_queued 130 || fail "not queued: $(metric corral_executor_queued)"
metric_ge corral_executor_unspooled 20 || fail "not in memory: $(metric corral_executor_unspooled)"
# 64 KiB free: the 30 alerts in memory take about 35 KiB, the spool is 100 KiB or more
truncate -s -64K "$MNT/filler"
[ "$spooled" -gt 65536 ] || fail "the spool ($spooled bytes) would fit twice"
wait_until metric_is corral_executor_unspooled 0 ||
    fail "not appended to the spool with 64 KiB free: $(metric corral_executor_unspooled) in memory only"
wait_until metric_is corral_executor_retries_total 130 ||
    fail "not all tried: $(metric corral_executor_retries_total)"
wait_until metric_is corral_executor_inflight 0 || fail "still in flight: $(metric corral_executor_inflight)"
kill -9 "$CORRALD_PID"
wait "$CORRALD_PID" 2>/dev/null
untrack "$CORRALD_PID"
CORRALD_PID=
rm -f "$WORK/down"
start_corrald after-append "$WORK/corrald.conf"
grep -q "130 alerts from the spool" "$WORK/after-append.log" || fail "not 130 alerts recovered after kill -9"
wait_until metric_is corral_executor_queued 0 || fail "still queued: $(metric corral_executor_queued)"
delivered_ok 130
stop_corrald "$CORRALD_PID"
echo "ok: 64 KiB freed for a spool of $spooled bytes: the 30 alerts in memory appended, 130 of 130 delivered once after kill -9"
