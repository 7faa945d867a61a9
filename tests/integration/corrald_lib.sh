# Shared helpers for the daemon integration tests (sourced, not run).
# Each test starts its own corrald on free loopback ports in a private
# directory, and stops only the processes it started.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
CORRALD=$top_builddir/agent/corrald
CORRAL=$top_builddir/tools/corral
SCHEMA=$top_srcdir/etc/corrald.xsd

WORK=$(mktemp -d "${TMPDIR:-/tmp}/corrald-test.XXXXXX") || exit 1
PIDS=""

cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    sleep 0.2
    for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
    if [ -n "${KEEP_WORK:-}" ]; then echo "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT HUP INT TERM

fail() {
    echo "FAIL: $*" >&2
    for f in "$WORK"/*.log; do
        [ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; } >&2
    done
    exit 1
}

need() {
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || { echo "skipped: $tool not installed"; exit 77; }
    done
}

# A free TCP and UDP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", p))
print(p)'
}

# wait_until SECONDS COMMAND...: retries COMMAND every 0.1 s.
wait_until() {
    limit=$1
    shift
    i=0
    while [ "$i" -lt $((limit * 10)) ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

port_open() {
    python3 -c 'import socket, sys
s = socket.socket(); s.settimeout(0.5); s.connect(("127.0.0.1", int(sys.argv[1])))' "$1"
}

# start_corrald NAME CONFIG: runs corrald in the foreground in the background;
# its log goes to $WORK/NAME.log, its pid to $CORRALD_PID.
start_corrald() {
    "$CORRALD" -F -f "$2" --schema "$SCHEMA" > "$WORK/$1.out" 2> "$WORK/$1.log" &
    CORRALD_PID=$!
    PIDS="$PIDS $CORRALD_PID"
    wait_until 10 grep -q "started" "$WORK/$1.log" || fail "corrald $1 did not start"
}

# forget a pid once it is gone, so that cleanup never signals a reused pid
forget_pid() {
    new=""
    for p in $PIDS; do [ "$p" = "$1" ] || new="$new $p"; done
    PIDS=$new
}

stop_corrald() {
    kill -TERM "$1" 2>/dev/null
    i=0
    while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -0 "$1" 2>/dev/null && fail "corrald $1 did not stop within 10 s"
    wait "$1" 2>/dev/null
    forget_pid "$1"
    return 0
}

# count_lines FILE PATTERN
count_matching() {
    if [ -f "$1" ]; then grep -c -- "$2" "$1"; else echo 0; fi
}

# send_udp PORT LINE... : one datagram per line
send_udp() {
    port=$1
    shift
    python3 - "$port" "$@" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for line in sys.argv[2:]:
    s.sendto(line.encode(), ("127.0.0.1", int(sys.argv[1])))
PY
}

# send_tcp PORT FILE : the file's lines over one TCP connection, newline framed
send_tcp_file() {
    python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
with open(sys.argv[2], "rb") as f:
    s.sendall(f.read())
s.close()
PY
}
