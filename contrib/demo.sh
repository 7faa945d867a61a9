#!/bin/bash
# Starts corrald with its built-in configuration (UDP and TCP on
# 127.0.0.1:5514, the shipped rules, generated messages to stdout), sends it
# the sample log over TCP, shows what it generated, and stops it.
#   bash contrib/demo.sh          (after building in build/, as README.md says)
# It needs bash (for /dev/tcp).
set -eu
cd "$(dirname "$0")/.."
corrald=./build/agent/corrald
[ -x "$corrald" ] || corrald=./agent/corrald
[ -x "$corrald" ] || {
    echo "build first: ./autogen.sh && mkdir -p build && (cd build && ../configure && make)" >&2
    exit 1
}

out=$(mktemp)
trap 'kill "$pid" 2>/dev/null; rm -f "$out"' EXIT
"$corrald" -F > "$out" 2> >(sed 's/^/  [corrald] /' >&2) &
pid=$!
for _ in $(seq 50); do
    (exec 3<>/dev/tcp/127.0.0.1/5514) 2>/dev/null && break
    sleep 0.1
done

echo "== sending contrib/samples/auth.log ($(wc -l < contrib/samples/auth.log) lines) to 127.0.0.1:5514/tcp"
cat contrib/samples/auth.log > /dev/tcp/127.0.0.1/5514
sleep 1
echo "== events corrald generated (JSON, one per line):"
if command -v python3 >/dev/null; then
    python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    print("  %-32s %s" % (m.get("TAGS", "").split(",")[-1], m.get("MESSAGE", "")))' "$out"
else
    cat "$out"
fi
echo "== (open sessions stay in corrald until they close or time out; stopping it now)"
