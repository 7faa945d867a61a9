#!/bin/sh
# webhook.sh: POST a corrald alert as JSON to a URL, for the exec executor.
#
# Usage: webhook.sh [--timeout SECONDS] [--connect-timeout SECONDS]
#                   [--header 'Name: value'] [--header-file FILE] [--raw] [--] URL
#
#   <exec name="hook" program="/usr/share/corral/scripts/webhook.sh" stdin="json">
#     <arg>--header-file</arg><arg>/etc/corral/hook-token.header</arg>
#     <arg>--</arg><arg>https://hooks.example.com/corral</arg>
#   </exec>
#
# The body is one JSON object:
#   {"alert_id":"...","severity":"...","isodate":"...","executor":"...",
#    "attempt":"1","tags":"a,b","message":{...}}
# "message" is the alert's message: with stdin="json" exactly the object
# corrald wrote on stdin (names as in the rules: "HOST", ".classifier.rule_id"),
# otherwise built from the CORRAL_* environment (names without the prefix:
# "HOST", "CLASSIFIER_RULE_ID").  --raw posts what came on stdin unchanged.
# Strings are escaped for JSON; bytes that are not UTF-8 become U+FFFD.
#
# --header-file FILE adds the header lines in FILE (curl -H @FILE): keep
# tokens there, not in the configuration or argv.  --timeout is the whole
# request (default 15 s; keep it below the executor's timeout, 30 s by
# default), --connect-timeout the connection (default 5 s).  Only http and
# https URLs are used, no redirects are followed, ~/.curlrc is not read.
# Proxies: pass https_proxy/http_proxy through env-pass.
#
# Exit status: 0 for a 2xx answer; 75 (temporary failure: the alert is
# retried) for 408, 429, 5xx, and when no answer came (connection refused,
# DNS failure, timeout); 1 for any other answer (4xx, 3xx) and for a URL
# curl refuses; 64 for a usage error; 69 if curl is missing.  On failure the
# status and the start of the answer go to stderr (corrald's log).
set -u

usage() {
    echo "usage: webhook.sh [--timeout S] [--connect-timeout S] [--header H] [--header-file F] [--raw] [--] URL" >&2
    exit 64
}

max_time=15
connect_time=5
raw=no
url=
nheaders=0
while [ $# -gt 0 ]; do
    case $1 in
    --timeout) [ $# -ge 2 ] || usage; max_time=$2; shift 2 ;;
    --connect-timeout) [ $# -ge 2 ] || usage; connect_time=$2; shift 2 ;;
    --header)
        [ $# -ge 2 ] || usage
        nheaders=$((nheaders + 1))
        eval "header_$nheaders=\$2"
        shift 2
        ;;
    --header-file)
        [ $# -ge 2 ] || usage
        [ -r "$2" ] || { echo "webhook.sh: cannot read header file $2" >&2; exit 64; }
        nheaders=$((nheaders + 1))
        eval "header_$nheaders=\"@\$2\""
        shift 2
        ;;
    --raw) raw=yes; shift ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -eq 1 ] || usage
url=$1
case $max_time in '' | *[!0-9]*) usage ;; esac
case $connect_time in '' | *[!0-9]*) usage ;; esac
case $url in
http://?* | https://?*) ;;
*) echo "webhook.sh: not an http(s) URL: $url" >&2; exit 64 ;;
esac
command -v curl >/dev/null 2>&1 || { echo "webhook.sh: curl is not installed" >&2; exit 69; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/webhook.XXXXXX") || exit 75
trap 'rm -rf "$tmp"' EXIT
trap 'exit 75' HUP INT TERM

# The message on stdin, if corrald wrote one (stdin="json"); /dev/null otherwise.
if [ -t 0 ]; then : > "$tmp/in"; else cat > "$tmp/in"; fi

# JSON from the environment.  awk reads the values from ENVIRON (newlines
# and all); in the C locale it sees bytes, so it can check UTF-8 itself.
# mode "envelope": the alert's own fields; mode "message": every other
# CORRAL_* variable, as an object.
json_env() {
    LC_ALL=C awk -v mode="$1" '
    # Prints s as a JSON string.  Output goes out in small pieces: building
    # one long string in awk would copy it over and over.
    function put(s,    out, i, n, c, o, b, need, j, ok) {
        out = "\""
        n = length(s)
        for (i = 1; i <= n; i++) {
            c = substr(s, i, 1)
            o = ord[c]
            if (c == "\"") out = out "\\\""
            else if (c == "\\") out = out "\\\\"
            else if (o < 32 || o == 127) {
                if (c == "\n") out = out "\\n"
                else if (c == "\r") out = out "\\r"
                else if (c == "\t") out = out "\\t"
                else out = out sprintf("\\u%04x", o)
            } else if (o < 128) out = out c
            else {
                # a UTF-8 sequence: lead byte, then continuation bytes 0x80-0xbf
                if (o >= 194 && o <= 223) need = 1
                else if (o >= 224 && o <= 239) need = 2
                else if (o >= 240 && o <= 244) need = 3
                else need = -1
                ok = need > 0 && i + need <= n
                for (j = 1; ok && j <= need; j++) {
                    b = ord[substr(s, i + j, 1)]
                    if (b < 128 || b > 191) ok = 0
                }
                # overlong, surrogate and beyond-U+10FFFF forms
                if (ok) {
                    b = ord[substr(s, i + 1, 1)]
                    if ((o == 224 && b < 160) || (o == 237 && b > 159) ||
                        (o == 240 && b < 144) || (o == 244 && b > 143)) ok = 0
                }
                if (ok) { out = out substr(s, i, need + 1); i += need }
                else out = out "\\ufffd"
            }
            if (length(out) >= 512) { printf "%s", out; out = "" }
        }
        printf "%s\"", out
    }
    BEGIN {
        for (k = 1; k < 256; k++) ord[sprintf("%c", k)] = k
        if (mode == "envelope") {
            split("alert_id severity isodate executor attempt tags", f, " ")
            for (k = 1; k <= 6; k++) {
                v = "CORRAL_" toupper(f[k])
                if (k > 1) printf ","
                put(f[k]); printf ":"; put(v in ENVIRON ? ENVIRON[v] : "")
            }
            exit
        }
        own["CORRAL_ALERT_ID"] = own["CORRAL_SEVERITY"] = own["CORRAL_ISODATE"] = 1
        own["CORRAL_EXECUTOR"] = own["CORRAL_ATTEMPT"] = own["CORRAL_TAGS"] = 1
        printf "{"
        first = 1
        for (v in ENVIRON) {
            if (v !~ /^CORRAL_[A-Z0-9_]+$/ || v in own) continue
            if (!first) printf ","
            put(substr(v, 8)); printf ":"; put(ENVIRON[v])
            first = 0
        }
        printf "}"
    }'
}

if [ "$raw" = yes ]; then
    cp "$tmp/in" "$tmp/body"
else
    # every part must succeed: a body cut short is not sent (75: corrald tries again)
    {
        printf '{' &&
            json_env envelope &&
            printf ',"message":' &&
            if [ -s "$tmp/in" ]; then
                # corrald's own JSON object; drop the newline that ends it
                tr -d '\n' < "$tmp/in"
            else
                json_env message
            fi &&
            printf '}\n'
    } > "$tmp/body" || { echo "webhook.sh: could not build the request body" >&2; exit 75; }
fi

# curl's arguments, the headers among them, without eval of any value
set -- -q -sS --proto =http,https --connect-timeout "$connect_time" --max-time "$max_time" \
    -o "$tmp/answer" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H 'User-Agent: corral-webhook' --data-binary "@$tmp/body"
k=1
h=
while [ "$k" -le "$nheaders" ]; do
    eval "h=\$header_$k"
    set -- "$@" -H "$h"
    k=$((k + 1))
done
code=$(curl "$@" --url "$url" 2> "$tmp/err")
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "webhook.sh: $url: $(head -c 300 "$tmp/err" | tr '\n' ' ')(curl exit $rc)" >&2
    case $rc in
    1 | 2 | 3) exit 1 ;; # unsupported protocol, bad option, malformed URL: retrying cannot help
    *) exit 75 ;;
    esac
fi
case $code in
2??) exit 0 ;;
408 | 429 | 5??) status=75 ;;
*) status=1 ;;
esac
echo "webhook.sh: $url answered HTTP $code: $(head -c 300 "$tmp/answer" | tr '\n\r' '  ')" >&2
exit $status
