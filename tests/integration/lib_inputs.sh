# lib_inputs.sh: what the input tests (tests/integration/inputs_*.sh) share.
# Sourced, not run.  Each test starts a real corrald (corrald -F -f CONFIG)
# with a JSON file output, talks to it with real clients (logger, loggen,
# python3 sockets) and checks the output with inputs_check.py.
#
# Environment: top_srcdir, top_builddir (set by `make check`), CORRALD (the
# daemon to test, default $top_builddir/agent/corrald), KEEP=1 keeps the
# temporary directory.  Exits 77 (skipped) when a tool is missing.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
CORRALD=${CORRALD:-$top_builddir/agent/corrald}
HERE=$top_srcdir/tests/integration
RULES=$HERE/inputs_rules.xml
TEST=$(basename "$0" .sh)
CORRALD_PID=

# need TOOL...: skip the test (77) if a tool is missing
need() {
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || { echo "$TEST: $t not found, skipped"; exit 77; }
    done
}

need python3
if [ ! -x "$CORRALD" ]; then
    echo "$TEST: $CORRALD not built" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$TEST.XXXXXX") || exit 1
OUT=$tmp/out.json
LOG=$tmp/corrald.log

cleanup() {
    stop_corrald_quietly
    if [ -n "$KEEP" ]; then echo "$TEST: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fail() {
    echo "$TEST: FAIL: $*" >&2
    if [ -f "$LOG" ]; then
        echo "--- corrald log (last 30 lines)" >&2
        tail -n 30 "$LOG" >&2
    fi
    exit 1
}

check() {
    python3 "$HERE/inputs_check.py" "$@"
}

# free_port: a port free for both TCP and UDP on 127.0.0.1 (and ::1 if there
# is IPv6), and not handed out before in this test
free_port() {
    python3 - "$tmp/ports" <<'EOF'
import socket, sys
try:
    used = set(open(sys.argv[1]).read().split())
except FileNotFoundError:
    used = set()
for _ in range(100):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(('127.0.0.1', 0))
    port = t.getsockname()[1]
    try:
        if str(port) in used:
            raise OSError('handed out already')
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(('127.0.0.1', port))
        u.close()
        if socket.has_ipv6:
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                try:
                    s6 = socket.socket(socket.AF_INET6, kind)
                    s6.bind(('::1', port))
                    s6.close()
                except OSError as e:
                    if e.errno == 98:  # in use; other errors: no IPv6 here
                        raise
    except OSError:
        t.close()
        continue
    t.close()
    with open(sys.argv[1], 'a') as f:
        f.write('%d\n' % port)
    print(port)
    break
EOF
}

have_ipv6() {
    python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null
}

STATS_PORT=$(free_port)

# write_config FILE LIMITS INPUTS [ELEMENTS]: a configuration with the test
# rules, the stats endpoint, a JSON file output of every message, and ELEMENTS
write_config() {
    cat > "$1" <<EOF
<corrald>
  <rules path="$RULES"/>
  <log level="debug"/>
  <stats listen="127.0.0.1:$STATS_PORT"/>
${4:-}
  <limits $2/>
  <inputs>
$3
  </inputs>
  <outputs>
    <file path="$OUT" format="json" select="all"/>
  </outputs>
</corrald>
EOF
}

# start_corrald CONFIG [stdin file]: runs corrald in the background and waits until it serves
start_corrald() {
    if [ -n "$2" ]; then
        "$CORRALD" -F -f "$1" --schema "$top_srcdir/etc/corrald.xsd" < "$2" >> "$LOG" 2>&1 &
    else
        "$CORRALD" -F -f "$1" --schema "$top_srcdir/etc/corrald.xsd" < /dev/null >> "$LOG" 2>&1 &
    fi
    CORRALD_PID=$!
    i=0
    # the stats endpoint answers once everything is open
    until python3 -c "import socket; socket.create_connection(('127.0.0.1', $STATS_PORT), 0.2)" 2>/dev/null; do
        i=$((i + 1))
        kill -0 "$CORRALD_PID" 2>/dev/null || { wait "$CORRALD_PID"; CORRALD_PID=; fail "corrald did not start"; }
        [ $i -lt 100 ] || fail "corrald not serving after 10 s"
        sleep 0.1
    done
}

# stop_corrald: SIGTERM, and corrald must exit 0 within 10 s
stop_corrald() {
    [ -n "$CORRALD_PID" ] || return 0
    kill -TERM "$CORRALD_PID" 2>/dev/null
    i=0
    while kill -0 "$CORRALD_PID" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 100 ]; then
            kill -KILL "$CORRALD_PID" 2>/dev/null
            wait "$CORRALD_PID" 2>/dev/null
            CORRALD_PID=
            fail "corrald did not stop within 10 s of SIGTERM"
        fi
        sleep 0.1
    done
    wait "$CORRALD_PID"
    rc=$?
    CORRALD_PID=
    [ $rc -eq 0 ] || fail "corrald exited with $rc"
}

stop_corrald_quietly() {
    if [ -n "$CORRALD_PID" ]; then
        kill -TERM "$CORRALD_PID" 2>/dev/null
        sleep 0.5
        kill -KILL "$CORRALD_PID" 2>/dev/null
        wait "$CORRALD_PID" 2>/dev/null
        CORRALD_PID=
    fi
}

alive() {
    kill -0 "$CORRALD_PID" 2>/dev/null || fail "corrald died"
}

# wait_lines N [SECONDS]: until the output has at least N lines (default 20 s)
wait_lines() {
    i=0
    lim=$(( ${2:-20} * 10 ))
    while [ "$(check lines "$OUT")" -lt "$1" ]; do
        i=$((i + 1))
        [ $i -lt $lim ] || { echo "$TEST: only $(check lines "$OUT") of $1 messages after ${2:-20} s" >&2; return 1; }
        sleep 0.1
    done
    return 0
}

# settle: lets corrald finish what is in flight (the output file stops growing)
# settle: waits until the output has stopped growing for 2 s (a slow build,
# such as the sanitizer one, may pause between batches of a burst)
settle() {
    stable=0
    prev=-1
    while [ "$stable" -lt 4 ]; do
        sleep 0.5
        cur=$(check lines "$OUT")
        if [ "$cur" = "$prev" ]; then stable=$((stable + 1)); else stable=0; fi
        prev=$cur
    done
}

# metric NAME INPUT: a per-input counter from the stats endpoint
metric() {
    python3 - "$STATS_PORT" "$1" "$2" <<'EOF'
import sys, urllib.request
port, name, inp = sys.argv[1:4]
body = urllib.request.urlopen('http://127.0.0.1:%s/metrics' % port, timeout=5).read().decode()
want = '%s{input="%s"}' % (name, inp)
for line in body.splitlines():
    if line.startswith(want + ' '):
        print(int(float(line.split()[-1])))
        break
else:
    print(-1)
EOF
}

rss_kb() {
    awk '/^VmRSS:/ {print $2}' "/proc/$CORRALD_PID/status"
}
