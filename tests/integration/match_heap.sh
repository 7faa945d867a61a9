#!/bin/sh
# corral match -j 2 grows its worker threads' heaps without a system call
# per page.  glibc makes a thread's heap writable one page at a time, an
# mprotect() each, unless a top pad asks for more when the heap is made
# (tools/cmd_match.c, pad_thread_heaps): about 27,000 calls on the
# bench/parallel.py corpus without it, a few dozen with it.  The pad must be
# set before the rules load, as the threads that build the rule trees (of
# 201 programs here, on two threads) leave their heaps to the workers
# started after them: without it, 2,200 to 2,800 calls here.  30,000
# contexts keep a 1 kB line each (about 40 MB in the two shards), counted
# with strace.
. "$(dirname "$0")/corrald_lib.sh"
need strace python3
# a sanitizer's allocator is not glibc's: it has no per-thread heaps
need_glibc_malloc "$CORRAL"
if ! strace -f -o /dev/null true 2>/dev/null; then
    echo "$TEST: strace cannot trace here (ptrace not allowed), skipped"
    exit 77
fi
mkdir -p "$WORK/rules"
cat > "$WORK/rules/keep.xml" <<'XML'
<patterndb version="5" pub_date="2026-12-07">
  <ruleset name="keep" id="heap-keep"><patterns><pattern>keep</pattern></patterns><rules>
    <rule provider="test" id="heap.keep" class="system" context-id="keep-${n}"
          context-scope="global" context-timeout="3600">
      <patterns><pattern>open @NUMBER:n@ @ANYSTRING:pad@</pattern></patterns>
    </rule>
  </rules></ruleset>
</patterndb>
XML
# 200 more programs, so that both threads build trees (and so make heaps)
python3 - "$WORK/rules/other.xml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write('<patterndb version="5" pub_date="2026-12-07">\n')
    for p in range(200):
        f.write('<ruleset name="p%d" id="heap-p%d"><patterns><pattern>prog%d</pattern></patterns><rules>\n' % (p, p, p))
        for r in range(20):
            f.write('<rule provider="test" id="heap.p%d.r%d" class="system"><patterns>'
                    '<pattern>event %d of @NUMBER:n@ in @ESTRING:unit: @done</pattern></patterns></rule>\n' % (p, r, r))
        f.write('</rules></ruleset>\n')
    f.write('</patterndb>\n')
PY
python3 - "$WORK/keep.input" <<'PY'
import sys
pad = "x" * 1000
with open(sys.argv[1], "w") as f:
    for i in range(30000):
        f.write("<13>Dec  7 10:00:00 web1 keep: open %d %s\n" % (i, pad))
PY
strace -f -c -e trace=mprotect -o "$WORK/strace.out" \
    "$CORRAL" match -j 2 --stats --keep-open -r "$WORK/rules" -f "$WORK/keep.input" \
    -T '${.classifier.rule_id}
' > "$WORK/out" 2> "$WORK/stats" ||
    fail "corral match failed: $(cat "$WORK/stats")"
# the contexts were kept (else the heaps would not grow)
[ "$(grep -c '^heap.keep$' "$WORK/out")" -eq 30000 ] || fail "not every line matched: $(sort "$WORK/out" | uniq -c)"
grep -q '30000 contexts created, 30000 open' "$WORK/stats" ||
    fail "the contexts are not open: $(cat "$WORK/stats")"
grep -q 'correlation in 2 shards' "$WORK/stats" || fail "not 2 shards: $(cat "$WORK/stats")"
# strace -c: "% time, seconds, usecs/call, calls, errors, syscall" (no line if no call)
calls=$(awk '$NF == "mprotect" { print $4 + 0; exit }' "$WORK/strace.out")
[ -n "$calls" ] || calls=0
echo "$TEST: $calls mprotect calls while 30000 contexts kept about 40 MB"
[ "$calls" -lt 1000 ] || fail "$calls mprotect calls: the worker heaps grow a page at a time"
echo "ok: corral match -j 2 grows its worker heaps without a system call per page"
