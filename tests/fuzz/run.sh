#!/bin/sh
# Builds the libFuzzer harnesses with clang (ASan + UBSan) and runs each for
# FUZZ_SECONDS (default 30), seeded with the test data, as many at once as
# there are CPUs (FUZZ_JOBS).  engine/ is compiled once for all of them.
# Crashes are left in the output directory (crash-*) and make the script fail.
#   FUZZ_SECONDS=600 sh tests/fuzz/run.sh        # a longer run
#   FUZZ_ONLY="state conf" sh tests/fuzz/run.sh  # some harnesses only
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$src/tests/fuzz/out}
seconds=${FUZZ_SECONDS:-30}
CC=${FUZZ_CC:-clang}
mkdir -p "$out"

jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -I$src"
libs="$(pkg-config --cflags --libs libxml-2.0 libpcre2-8 yaml-0.1) -lm"

# engine/ once, instrumented for the fuzzer without its main, on every CPU; every object is
# linked into every harness, as when each compiled engine/ itself
mkdir -p "$out/engine"
rm -f "$out/engine"/*.o
echo "== engine/: building"
# shellcheck disable=SC2016
ls "$src"/engine/*.c | xargs -P "$jobs" -I{} sh -c '$0 -c -g -O1 \
    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
    -I"$1" $2 -o "$3/engine/$(basename {} .c).o" {}' \
    "$CC" "$src" "$(pkg-config --cflags libxml-2.0 libpcre2-8 yaml-0.1)" "$out"
engine=$(ls "$out"/engine/*.o)

# seed corpora from the test data
mkdir -p "$out/corpus-loader" "$out/corpus-syslog" "$out/corpus-matcher" "$out/corpus-framing" \
    "$out/corpus-template" "$out/corpus-decode" "$out/corpus-mail" "$out/corpus-spool" \
    "$out/corpus-state" "$out/corpus-conf" "$out/corpus-labelmatch" "$out/corpus-deadletter" \
    "$out/corpus-ipc" "$out/corpus-alerts_store" "$out/corpus-silences" "$out/corpus-snmptrap" \
    "$out/corpus-sigma" "$out/corpus-sigma_cond" "$out/corpus-alerts_merge" "$out/corpus-relit"
printf 'Alert: \342\200\256 evil\r\nBcc: x@y\0Ops Team <ops@example.com>\0line one\n.dot line\r\nFrom here\001' > "$out/corpus-mail/seed1"
printf 'SSH session for ${a}@1 from ${b:-none}: $(context-length) $(if ("${a}" == "x") y n) $(substr "$MESSAGE" 1 3) $(format-json --scope all) $ISODATE $(list-slice 1:2 $(context-values ${a}))\0"${a}" eq "x" and tags("t1") or not ("$(context-length)" >= "2")\0\001\002\003\004\0\0\0\0root\0alice\0bob\0ssh\0Accepted password' > "$out/corpus-template/seed1"
printf 'x' > "$out/corpus-decode/seed1"
# engine-executor frames (actions/ipc.h): a submit, a sync, a half frame; then a bad length
printf '\003\010\000\000\000S\000\000\000\000abc\001\000\000\000Y\005\000\000' > "$out/corpus-ipc/seed1"
printf '\377\002\000\000\000Yx\000\000\000\000' > "$out/corpus-ipc/seed2"
# a hello (H, version 2), a reload (L, generation 1), a reload answer (R: ok, report "ok", one name "a")
printf '\005\000\000\000H\002\000\000\000\011\000\000\000L\001\000\000\000\000\000\000\000' > "$out/corpus-ipc/seed3"
printf '\000\034\000\000\000R\001\000\000\000\000\000\000\000\001\000\000\000\002\000\000\000ok\001\000\000\000\001\000\000\000a' > "$out/corpus-ipc/seed4"
# spools: version 2 (two alerts, a done record, a torn tail) and version 1 (actions/queue.h)
python3 - "$out/corpus-spool" <<'PY' || true
import struct, sys, zlib
def v2(t, seq, p):
    h = b"\xc0\x52\x4c\x9a" + t + struct.pack("<QII", seq, len(p), zlib.crc32(p))
    return h + struct.pack("<I", zlib.crc32(h)) + p
def v1(t, seq, p):
    rest = t + struct.pack("<Q", seq) + p
    return struct.pack("<II", len(rest), zlib.crc32(rest)) + rest
d = sys.argv[1]
open(d + "/v2", "wb").write(b"CORRALSP2\n" + v2(b"A", 1, b"one") + v2(b"A", 2, b"two") + v2(b"D", 1, b"") + v2(b"A", 3, b"torn")[:-2])
open(d + "/v1", "wb").write(b"CORRALSP1\n" + v1(b"A", 1, b"one") + v1(b"D", 1, b""))
open(d + "/retried", "wb").write(b"CORRALSP2\n" + v2(b"R", 5, struct.pack("<I", 6) + b"d1-234" + b"alert"))
PY
# dead-letter files (actions/deadletter.h): a current line, an older one, something else
cat > "$out/corpus-deadletter/seed1" <<'JSONL'
{"id":"d1796400000123-42","time":"2026-12-04T16:00:00+00:00","executor":"mail","reason":"550","attempts":1,"alert_id":"a-1","message":{"MESSAGE":"x","TAGS":"corral.alert"},"encoded":"0d00000004000000208f126b000000000000000000000000208f126b0000000000000000000000000100000007000000"}
{"time":"2026-12-01T10:00:00+00:00","executor":"mail","reason":"x","attempts":10,"alert_id":"r/web1","message":{"HOST":"web1","MESSAGE":"disk full","TAGS":"corral.alert,t2"}}
not json
JSONL
# state files (engine/corr.c): version 3 (records) and 2 with a context of rule r1 and a
# detached one of r2, and version 1; the rule ids are those of fuzz_state.c
python3 - "$out/corpus-state" <<'PY' || true
import struct, sys, zlib
def b(s): return struct.pack("<I", len(s)) + s
def msg(kv):
    t = struct.pack("<qii", 1795168800, 0, 0)
    return (struct.pack("<II", 13, 0) + t + t + struct.pack("<I", len(kv)) +
            b"".join(b(k) + b(v) for k, v in kv) + struct.pack("<I", 1) + b(b".classifier.system"))
def ctx(v, scope, key, rule, exp, flags, msgs):
    c = struct.pack("<I", scope) + b(b"h1") + b(b"prog") + b(b"1") + b(key) + b(rule) + struct.pack("<Q", exp)
    if v >= 2: c += struct.pack("<QQI", exp - 1000, 1, flags)
    return c + struct.pack("<I", len(msgs)) + b"".join(msgs)
def state(v, ctxs):
    d = b"CORRALST" + struct.pack("<IQQ", v, 1795168800000, len(ctxs))
    if v >= 3:
        d += struct.pack("<I", zlib.crc32(d))
        for c in ctxs:
            r = struct.pack("<I", len(c)) + c
            d += struct.pack("<I", 0x7843d1e5) + r + struct.pack("<I", zlib.crc32(r))
        return d
    d += b"".join(ctxs)
    return d + struct.pack("<I", zlib.crc32(d))
m1 = msg([(b"MESSAGE", b"a 1 x"), (b"k", b"1"), (b"s", b"x")])
m2 = msg([(b"MESSAGE", b"b 2"), (b"k", b"2")])
d = sys.argv[1]
open(d + "/v2", "wb").write(state(2, [ctx(2, 1, b"1", b"r1", 1795168805000, 0, [m1, m1]),
                                      ctx(2, 3, b"2", b"r2", 1795168803000, 1, [m2])]))
open(d + "/v3", "wb").write(state(3, [ctx(3, 1, b"1", b"r1", 1795168805000, 0, [m1, m1]),
                                      ctx(3, 3, b"2", b"r2", 1795168803000, 1, [m2])]))
open(d + "/v1", "wb").write(state(1, [ctx(1, 1, b"1", b"r1", 1795168805000, 0, [m1])]))
PY
# alert stores (agent/alerting/alerts.c): two alerts, one resolved with an executor's state, and the
# same with a damaged byte in the first; silences files (agent/alerting/silences.c): version 2, one line
# cut short, and version 1
python3 - "$out/corpus-alerts_store" "$out/corpus-silences" <<'PY' || true
import struct, sys, zlib
def b(s): return struct.pack("<I", len(s)) + s
def msg(kv):
    t = struct.pack("<qii", 1795168800, 0, 0)
    return (struct.pack("<II", 13, 0) + t + t + struct.pack("<I", len(kv)) +
            b"".join(b(k) + b(v) for k, v in kv) + struct.pack("<I", 1) + b(b".classifier.system"))
def alert(id, state, by, ex, kv):
    p = b(id) + struct.pack("<QQQI", 1795168800000, 1795168900000, 3, state) + b(by)
    p += struct.pack("<I", len(ex)) + b"".join(b(n) + struct.pack("<IQ", d, at) for n, d, at in ex)
    p += msg(kv)
    return struct.pack("<II", len(p), zlib.crc32(p)) + p
a = b"CORRALAL1\n" + alert(b"a-1", 0, b"", [(b"mail", 1, 1795168900000)], [(b"HOST", b"web1"), (b"MESSAGE", b"x")])
a += alert(b"a-2", 1, b"", [], [(b"HOST", b"web2")])
open(sys.argv[1] + "/two", "wb").write(a)
# a cluster's record (alerts_export): the time of its last change, then an entry of version 2
def alert2(id, kv):
    p = b(id) + struct.pack("<QQQI", 1795168800000, 1795168900000, 3, 0) + b(b"")
    p += struct.pack("<I", 1) + b(b"mail") + struct.pack("<IQII", 1, 1795168900000, 5, 1)
    p += struct.pack("<IQQQ", 0, 0, 300000, 1) + struct.pack("<Q", 1795168900000) + b(b"mail")
    p += struct.pack("<II", 2, 1) + msg(kv)
    return struct.pack("<Q", 1795168900001) + p
open(sys.argv[1] + "/../corpus-alerts_merge/one", "wb").write(alert2(b"a-1", [(b"HOST", b"web1")]))
d = bytearray(a); d[30] ^= 1
open(sys.argv[1] + "/damaged", "wb").write(bytes(d))
def line(j):
    return b"%08x " % zlib.crc32(j) + j + b"\n"
s1 = b'{"id":"bfe64e42-964c-4c47-a4d1-d19c6cbc6f2f","matchers":"HOST=\\"web1\\"","start":1796400000000,"end":1796407200000,"createdBy":"me","comment":"c"}'
s2 = b'{"id":"8e173d57-1c8e-4875-a21f-a700392965b3","matchers":"HOST=~\\"db[0-9]+\\",rule_id!=\\"x\\"","start":1796400000000,"end":1796500000000,"createdBy":"","comment":""}'
open(sys.argv[2] + "/v2", "wb").write(b'{"version":2}\n' + line(s1) + line(s2))
open(sys.argv[2] + "/cut", "wb").write(b'{"version":2}\n' + line(s1) + line(s2)[:40])
open(sys.argv[2] + "/v1", "wb").write(b'{"version":1,"silences":[' + s1 + b',' + s2 + b']}')
PY
cp "$src/etc/corrald.conf" "$out/corpus-conf/shipped.conf"
for f in "$src"/tests/integration/*.sh; do
    # the configurations the integration tests write (heredocs from <corrald> to </corrald>)
    sed -n '/^<corrald>/,/^<\/corrald>/p' "$f" > "$out/corpus-conf/$(basename "$f" .sh).conf"
    [ -s "$out/corpus-conf/$(basename "$f" .sh).conf" ] || rm -f "$out/corpus-conf/$(basename "$f" .sh).conf"
done
# the configuration schema, built into conf.c's reader as make builds it
{
    echo '#include <stddef.h>'
    echo 'extern const char conf_schema_xsd[]; extern const size_t conf_schema_xsd_len;'
    echo 'const char conf_schema_xsd[] ='
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$src/etc/corrald.xsd"
    echo '    ;'
    echo 'const size_t conf_schema_xsd_len = sizeof(conf_schema_xsd) - 1;'
} > "$out/conf_xsd.c"
printf '12 <13>hello\n5 abcde\nplain line\r\n' > "$out/corpus-framing/seed1"
for f in $(find "$src/tests/data/patterndb" "$src/rules" -name '*.xml' -o -name '*.pdb'); do
    cp "$f" "$out/corpus-loader/$(basename "$f")"
done
head -n 300 "$src/tests/data/loghub/OpenSSH_2k.log" | split -l 1 - "$out/corpus-syslog/ssh-"
split -l 1 "$src/tests/data/syslog_edge.log" "$out/corpus-syslog/edge-"
printf 'Accepted @ESTRING:m: @for @ESTRING:u: @from @IPvANY:ip@ port @NUMBER:p@\0@STRING:a@ @QSTRING:q:"@ @ANYSTRING:r@\0\0Accepted password for root from ::1 port 22' > "$out/corpus-matcher/seed1"
printf '@IPv6:a@:@NUMBER:p@\0@MACADDR:m@ @LLADDR:l:3@ @EMAIL:e:<>@ @HOSTNAME:h@\0\0fe80::1:443' > "$out/corpus-matcher/seed2"

printf '{HOST="web1", rule_id=~"corral\\\\.sshd\\\\..*", MESSAGE!~"a|b"}' > "$out/corpus-labelmatch/seed1"
printf 'MESSAGE="a, \\"b\\" c\\\\",HOST!=web2' > "$out/corpus-labelmatch/seed2"

# SNMP datagrams (BER): a v1 trap, a v2c trap and a v2c inform with varbinds of every type
python3 - "$out/corpus-snmptrap" <<'PY' || true
import sys
def tlv(t, b):
    n = len(b)
    l = bytes([n]) if n < 128 else (b"\x81" + bytes([n]) if n < 256 else b"\x82" + n.to_bytes(2, "big"))
    return bytes([t]) + l + b
def num(t, v): return tlv(t, v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True))
def oid(s):
    p = [int(x) for x in s.strip(".").split(".")]
    out = bytes([p[0] * 40 + p[1]])
    for x in p[2:]:
        e = [x & 0x7f]; x >>= 7
        while x: e.insert(0, 0x80 | (x & 0x7f)); x >>= 7
        out += bytes(e)
    return tlv(6, out)
def vb(o, v): return tlv(0x30, oid(o) + v)
vbs = tlv(0x30, vb(".1.3.6.1.2.1.1.3.0", num(0x43, 42)) + vb(".1.3.6.1.6.3.1.1.4.1.0", oid(".1.3.6.1.6.3.1.1.5.3")) +
          vb(".1.3.6.1.2.1.2.2.1.1.3", num(2, 3)) + vb(".1.3.6.1.2.1.2.2.1.8.3", num(2, 2)) +
          vb(".1.3.6.1.2.1.2.2.1.2.3", tlv(4, b"ge 0/0/1 \"x\"=\\]")) + vb(".1.3.6.1.4.1.99999.1.5.0", tlv(4, b"\x00\x1a\xff")) +
          vb(".1.3.6.1.4.1.99999.1.1.0", tlv(0x40, b"\x0a\x00\x00\x01")) + vb(".1.3.6.1.4.1.99999.1.2.0", num(0x41, 77)) +
          vb(".1.3.6.1.4.1.99999.1.6.0", oid(".1.3.6.1.6.3.1.1.5.4")) + vb(".1.3.6.1.4.1.99999.1.8.0", num(0x46, 2**40)))
def msg(ver, pdu): return tlv(0x30, num(2, ver) + tlv(4, b"public") + pdu)
d = sys.argv[1]
open(d + "/v2c-trap", "wb").write(msg(1, tlv(0xa7, num(2, 1) + num(2, 0) + num(2, 0) + vbs)))
open(d + "/v2c-inform", "wb").write(msg(1, tlv(0xa6, num(2, 2) + num(2, 0) + num(2, 0) + vbs)))
v1 = tlv(0xa4, oid(".1.3.6.1.4.1.99999") + tlv(0x40, b"\x0a\x09\x09\x09") + num(2, 6) + num(2, 1) + num(0x43, 66) +
         tlv(0x30, vb(".1.3.6.1.4.1.99999.1.7.0", num(2, 2))))
open(d + "/v1-trap", "wb").write(msg(0, v1))
PY
export FUZZ_MIBS="$src/tests/data/mibs"

status=0
# Sigma rules (engine/sigma) and conditions (engine/sigma_cond)
cp "$src"/tests/data/sigma/*.yml "$out/corpus-sigma/" 2>/dev/null || true
cp "$src"/tests/data/sigma-correlation/*.yml "$out/corpus-sigma/" 2>/dev/null || true
printf '1 of sel_* and not (filter or all of them)' > "$out/corpus-sigma_cond/seed1"
printf 'selection and not 1 of filter*' > "$out/corpus-sigma_cond/seed2"
# regular expressions and subjects (engine/relit), a NUL between them
printf 'foo.*bar\0xxfoo-bar' > "$out/corpus-relit/seed1"
printf 'colou?r=(red|blue)+\0color=blue' > "$out/corpus-relit/seed2"
printf '(?i)a{2,}b[c-d]?\\bwget\\s+\0AAB WGET ' > "$out/corpus-relit/seed3"
# "[:[:]" is no POSIX class for PCRE2 (a "[:" before its ":]"): the class ends at that ']'
printf '[[:[:]?[]:]\0:' > "$out/corpus-relit/seed4"
# fuzz_one H: builds and runs harness H; its log fuzz_H.log, and fuzz_H.failed if it failed
fuzz_one() {
    h=$1
    rm -f "$out/fuzz_$h.failed"
    extra=""
    [ "$h" = framing ] && extra="$src/agent/net/framer.c"
    [ "$h" = mail ] && extra="$(pkg-config --cflags libuv) $src/actions/smtp_mime.c"
    [ "$h" = spool ] && extra="$src/actions/jsonval.c $src/actions/queue.c $src/actions/deadletter.c $src/actions/exconf.c $(pkg-config --cflags --libs libuv jansson)"
    [ "$h" = ipc ] && extra="$src/actions/jsonval.c $src/actions/ipc.c $src/actions/ipcserve.c $src/actions/ipcproxy.c $src/actions/queue.c $src/actions/deadletter.c $src/actions/exconf.c $(pkg-config --cflags --libs libuv jansson)"
    [ "$h" = deadletter ] && extra="$src/actions/jsonval.c $src/actions/deadletter.c $(pkg-config --cflags --libs jansson)"
    [ "$h" = alerts_store ] && extra="$src/actions/jsonval.c $src/agent/alerting/topology.c $src/agent/alerting/alerts.c $src/agent/alerting/silences.c $(pkg-config --cflags --libs jansson)"
    [ "$h" = alerts_merge ] && extra="$src/actions/jsonval.c $src/agent/alerting/topology.c $src/agent/alerting/alerts.c $src/agent/alerting/silences.c $(pkg-config --cflags --libs jansson)"
    [ "$h" = silences ] && extra="$src/actions/jsonval.c $src/agent/alerting/silences.c $(pkg-config --cflags --libs jansson)"
    [ "$h" = conf ] && extra="$src/agent/conf/conf.c $src/agent/conf/snmptrap_conf.c $out/conf_xsd.c $src/actions/exconf.c $(pkg-config --cflags libuv) $(net-snmp-config --libs)"
    [ "$h" = snmptrap ] && extra="$src/agent/input/snmptrap_fmt.c $(net-snmp-config --libs)"
    # shellcheck disable=SC2086
    if ! $CC $flags -o "$out/fuzz_$h" "$src/tests/fuzz/fuzz_$h.c" $extra $engine $libs \
            > "$out/fuzz_$h.log" 2>&1; then
        touch "$out/fuzz_$h.failed"
        return
    fi
    (cd "$out" && "./fuzz_$h" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
        -print_final_stats=1 "corpus-$h" > "fuzz_$h.log" 2>&1) || touch "$out/fuzz_$h.failed"
}

harnesses=${FUZZ_ONLY:-matcher loader syslog framing template decode mail spool state conf labelmatch deadletter ipc alerts_store alerts_merge silences snmptrap sigma sigma_cond relit}
running=0
for h in $harnesses; do
    echo "== fuzz_$h: building and running ${seconds}s"
    fuzz_one "$h" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait
        running=0
    fi
done
wait
for h in $harnesses; do
    if [ -e "$out/fuzz_$h.failed" ]; then
        echo "fuzz_$h FAILED:"
        tail -n 40 "$out/fuzz_$h.log"
        status=1
    else
        echo "fuzz_$h: $(grep -E "stat::number_of_executed_units|cov:" "$out/fuzz_$h.log" | tail -n 2 | tr '\n' ' ')"
    fi
done
exit $status
