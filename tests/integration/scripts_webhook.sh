#!/bin/sh
# contrib/scripts/webhook.sh against a small python3 HTTP server on a free
# loopback port: the POSTed JSON (from stdin, and built from the CORRAL_*
# environment with hostile values), and the exit status for each kind of
# answer (2xx -> 0; 500, 503, 429, no answer, timeout -> 75; 400, 404 -> 1).
# Exit 77 if curl or python3 is missing.
. "$(dirname "$0")/corrald_lib.sh"
need curl python3

HOOK=$top_srcdir/contrib/scripts/webhook.sh
[ -x "$HOOK" ] || fail "no $HOOK"

# The server: /status/N answers N; /slow answers after 3 s; every request's
# body and headers are kept in $WORK/req.N.body and $WORK/req.N.headers.
# It listens on a port the kernel picks, and holds another one bound but
# not listening, where connections are refused; it writes both to
# $WORK/ports once it serves.
cat > "$WORK/server.py" <<'PY'
import http.server, os, socket, sys, time
work = sys.argv[1]
count = [0]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        count[0] += 1
        with open(os.path.join(work, "req.%d.body" % count[0]), "wb") as f:
            f.write(body)
        with open(os.path.join(work, "req.%d.headers" % count[0]), "w") as f:
            f.write(str(self.headers))
        if self.path == "/slow":
            time.sleep(3)
            code = 200
        elif self.path.startswith("/status/"):
            code = int(self.path.split("/")[2])
        else:
            code = 200
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"answer for %d\n" % code)
    def log_message(self, *a):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), H)
closed = socket.socket()
closed.bind(("127.0.0.1", 0))
with open(os.path.join(work, "ports.tmp"), "w") as f:
    f.write("%d %d\n" % (server.server_address[1], closed.getsockname()[1]))
os.rename(os.path.join(work, "ports.tmp"), os.path.join(work, "ports"))
server.serve_forever()
PY
python3 "$WORK/server.py" "$WORK" 2> "$WORK/server.log" &
track $!
wait_until test -s "$WORK/ports" || fail "the test server did not start"
read PORT closed < "$WORK/ports"
URL=http://127.0.0.1:$PORT

# runs webhook.sh with only the given environment (as the exec executor would)
hook() {
    env -i PATH="$PATH" "$@"
}

# the body of the latest request: the highest N (WORK's own name has a dot in it, so a sort by
# field would compare its name, then req.10 before req.9)
last_body() {
    echo "$WORK/req.$(ls "$WORK" | sed -n 's/^req\.\([0-9]*\)\.body$/\1/p' | sort -n | tail -n 1).body"
}

# ---- stdin="json": the envelope around corrald's own object ----
printf '%s\n' '{"HOST":"web1","MESSAGE":"a \"quoted\" line\nand more","TAGS":"t1"}' |
    hook CORRAL_ALERT_ID=rule/web1 CORRAL_SEVERITY=major CORRAL_EXECUTOR=hook CORRAL_ATTEMPT=1 \
        CORRAL_ISODATE=2024-01-05T10:00:00+01:00 CORRAL_TAGS=t1 sh "$HOOK" -- "$URL/ok" ||
    fail "stdin JSON: exit $?"
python3 - "$(last_body)" <<'PY' || fail "stdin JSON: wrong body"
import json, sys
b = json.load(open(sys.argv[1], "rb"))
assert b["alert_id"] == "rule/web1" and b["severity"] == "major", b
assert b["executor"] == "hook" and b["attempt"] == "1" and b["tags"] == "t1", b
assert b["isodate"] == "2024-01-05T10:00:00+01:00", b
assert b["message"] == {"HOST": "web1", "MESSAGE": 'a "quoted" line\nand more', "TAGS": "t1"}, b
PY
grep -qi '^Content-Type: application/json' "$WORK/req.1.headers" || fail "no JSON content type"

# ---- stdin="none": the message from the environment, hostile bytes escaped ----
nasty=$(printf 'q"uote\\back\nnew\rcr\ttab\001ctl \303\274ml bad\377 $(id) `id`;|&')
hook CORRAL_ALERT_ID='id"1' CORRAL_SEVERITY=minor CORRAL_MESSAGE="$nasty" CORRAL_HOST=web1 \
    CORRAL_CLASSIFIER_RULE_ID=ssh-brute NOT_CORRAL=x sh "$HOOK" "$URL/ok" < /dev/null ||
    fail "environment JSON: exit $?"
python3 - "$(last_body)" <<'PY' || fail "environment JSON: wrong body"
import json, sys
raw = open(sys.argv[1], "rb").read()
raw.decode("utf-8")  # strictly UTF-8
b = json.loads(raw)
assert b["alert_id"] == 'id"1' and b["severity"] == "minor", b
m = b["message"]
want = 'q"uote\\back\nnew\rcr\ttab\x01ctl \u00fcml bad\ufffd $(id) `id`;|&'
assert m["MESSAGE"] == want, (m["MESSAGE"], want)
assert m["HOST"] == "web1" and m["CLASSIFIER_RULE_ID"] == "ssh-brute", m
assert "NOT_CORRAL" not in m and "ALERT_ID" not in m, m
PY

# ---- a big value, from the environment ----
big=$(python3 -c 'print("x\"y\n" * 20000, end="")')
hook CORRAL_MESSAGE="$big" sh "$HOOK" "$URL/ok" < /dev/null || fail "big value: exit $?"
python3 - "$(last_body)" <<'PY' || fail "big value: wrong body"
import json, sys
b = json.load(open(sys.argv[1], "rb"))
# the shell's $(...) dropped the last newline
assert b["message"]["MESSAGE"] == ('x"y\n' * 20000)[:-1]
PY

# ---- --raw and --header-file ----
printf 'Authorization: Bearer s3cret\n' > "$WORK/auth.header"
printf '{"raw":true}\n' | hook sh "$HOOK" --raw --header-file "$WORK/auth.header" "$URL/ok" ||
    fail "--raw: exit $?"
[ "$(cat "$(last_body)")" = '{"raw":true}' ] || fail "--raw: body $(cat "$(last_body)")"
n=$(last_body)
grep -q '^Authorization: Bearer s3cret' "${n%.body}.headers" || fail "--header-file not sent"

# ---- exit statuses ----
expect() {
    want=$1
    shift
    hook CORRAL_MESSAGE=m sh "$HOOK" "$@" < /dev/null > "$WORK/out.txt" 2> "$WORK/err.txt"
    got=$?
    [ "$got" -eq "$want" ] || fail "webhook.sh $*: exit $got, wanted $want ($(cat "$WORK/err.txt"))"
}
expect 0 "$URL/status/204"
expect 75 "$URL/status/500"
grep -q 'answered HTTP 500: answer for 500' "$WORK/err.txt" || fail "500: no reason on stderr"
expect 75 "$URL/status/503"
expect 75 "$URL/status/429"
expect 75 "$URL/status/408"
expect 1 "$URL/status/400"
expect 1 "$URL/status/404"
expect 1 "$URL/status/301"
expect 75 --timeout 1 "$URL/slow"
expect 75 "http://127.0.0.1:$closed/"
expect 64 "ftp://127.0.0.1/"
expect 64 -- "-K/etc/passwd"
expect 64
expect 64 --timeout soon "$URL/ok"

echo "webhook.sh: all checks passed"
