#!/bin/sh
# After a flood of contexts expires, corrald gives the freed memory back:
# 60,000 contexts of 1 kB each (an attacker's, say) open and expire, while a
# few long-lived contexts opened after them keep the top of the heap in use
# (so that glibc cannot give the memory back by itself, from the top, as it
# would if nothing else lived there).  The resident size must fall back to
# well below the flood's peak: every 10 s corrald trims the heap when it
# holds 32 MiB or more freed (heap.c), counts it and logs it.
. "$(dirname "$0")/corrald_lib.sh"
need python3
# a sanitizer's allocator is not glibc's: nothing for malloc_trim to give back
need_glibc_malloc "$CORRALD"

mkdir -p "$WORK/rules"
cat > "$WORK/rules/flood.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-05">
  <ruleset name="flood" id="heap-flood"><patterns><pattern>flood</pattern></patterns><rules>
    <rule provider="test" id="heap.flood" class="system" context-id="flood-${n}"
          context-scope="global" context-timeout="2">
      <patterns><pattern>open @NUMBER:n@ @ANYSTRING:pad@</pattern></patterns>
      <!-- never fires; makes each context keep its line's pad (1 kB) -->
      <actions><action trigger="timeout" condition='"${n}" eq "never"'><message>
        <values><value name="MESSAGE">${pad}@1</value></values>
      </message></action></actions>
    </rule>
    <rule provider="test" id="heap.keep" class="system" context-id="keep-${n}"
          context-scope="global" context-timeout="3600">
      <patterns><pattern>keep @NUMBER:n@</pattern></patterns>
    </rule>
  </rules></ruleset>
</patterndb>
XML
cat > "$WORK/corrald.conf" <<XML
<corrald>
  <rules path="$WORK/rules"/>
  <control socket="$WORK/control.sock"/>
  <inputs><tcp listen="127.0.0.1:0" name="tcp"/></inputs>
</corrald>
XML
CONTROL=$WORK/control.sock
python3 - "$WORK/flood.log" "$WORK/keep.log" <<'PY'
import sys
pad = "x" * 1000
with open(sys.argv[1], "w") as f:
    for i in range(60000):
        f.write("<13>Dec  5 10:00:00 web1 flood: open %d %s\n" % (i, pad))
with open(sys.argv[2], "w") as f:
    for i in range(200):
        f.write("<13>Dec  5 10:00:00 web1 flood: keep %d\n" % i)
PY
start_corrald heap "$WORK/corrald.conf"
port=$(input_port tcp)
rss0=$(rss_kb)
send_tcp_file "$port" "$WORK/flood.log"
wait_metric corral_contexts_open -ge 60000 || fail "the flood's contexts not open: $(metric corral_contexts_open)"
peak=$(rss_kb)
send_tcp_file "$port" "$WORK/keep.log"
# the flood's contexts expire (2 s), the long-lived ones stay
wait_metric corral_contexts_open -eq 200 || fail "contexts open: $(metric corral_contexts_open)"
echo "$TEST: RSS ${rss0} kB before the flood, ${peak} kB at its peak"
[ $((peak - rss0)) -gt 65536 ] || fail "test bug: the flood took only $((peak - rss0)) kB"
# rss_fell: the resident size is back below half-way between the start and the peak
rss_fell() {
    [ "$(rss_kb)" -lt $(((rss0 + peak) / 2)) ]
}
wait_until rss_fell || fail "RSS still $(rss_kb) kB after the flood expired (peak $peak kB)"
wait_metric corral_heap_trims_total -ge 1 || fail "trim not counted"
wait_metric corral_heap_returned_bytes_total -gt 0 || fail "returned bytes not counted"
wait_log 'heap: gave .* MiB of freed memory back' || fail "trim not logged"
echo "$TEST: RSS $(rss_kb) kB after the trim"
stop_corrald
echo "ok: memory freed after a flood goes back to the system"
