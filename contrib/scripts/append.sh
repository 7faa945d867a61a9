#!/bin/sh
# append.sh: append one line per corrald alert to a file, for the exec executor.
#
# Usage: append.sh [--] FILE [TEXT...]
#
#   <exec name="alerts-file" program="/usr/share/corral/scripts/append.sh">
#     <arg>--</arg><arg>/var/log/corral/alerts.log</arg>
#   </exec>
#
# The line is
#   ISODATE SEVERITY ALERT_ID TEXT
# from CORRAL_ISODATE (the current time when unset), CORRAL_SEVERITY,
# CORRAL_ALERT_ID, and TEXT: the remaining arguments joined by spaces, or
# CORRAL_MESSAGE when there are none.  An empty field is written as "-".
# Control characters are made visible so that one alert stays one line and
# cannot forge others or drive a terminal: newline as \n, CR as \r, tab as
# \t, others as \xNN, and a backslash as \\; in the first three fields a
# space too (\x20), so that they stay one word each.
#
# Concurrent children (max-children) each take an exclusive flock(1) on the
# file before writing, so lines never interleave.  The file is created with
# the umask of corrald.
#
# Exit status: 0 when the line is written; 75 (temporary failure: retried)
# when the file cannot be opened, locked within 10 s, or written (disk
# full, directory not there yet); 64 for a usage error; 69 if flock is
# missing.
set -u

usage() {
    echo "usage: append.sh [--] FILE [TEXT...]" >&2
    exit 64
}

[ "${1:-}" = -- ] && shift
[ $# -ge 1 ] || usage
file=$1
shift
[ -n "$file" ] || usage
command -v flock >/dev/null 2>&1 || { echo "append.sh: flock is not installed" >&2; exit 69; }

if [ $# -gt 0 ]; then
    text="$*"
else
    text=${CORRAL_MESSAGE:-}
fi
when=${CORRAL_ISODATE:-$(date -Iseconds 2>/dev/null || date +%Y-%m-%dT%H:%M:%S%z)}

# The fields go to awk through the environment: no value is ever parsed as
# code or options.  In the C locale awk sees bytes; every byte >= 0x80 is
# left alone (UTF-8 stays readable).
line=$(APPEND_WHEN=$when APPEND_SEVERITY=${CORRAL_SEVERITY:-} APPEND_ID=${CORRAL_ALERT_ID:-} \
    APPEND_TEXT=$text LC_ALL=C awk '
    # field: a space is made visible too (\x20), so the first three fields
    # stay one word each
    function vis(s, field,    out, i, n, c, o, res) {
        if (s == "") return "-"
        out = ""
        res = ""
        n = length(s)
        for (i = 1; i <= n; i++) {
            c = substr(s, i, 1)
            o = ord[c]
            if (c == "\\") out = out "\\\\"
            else if (c == "\n") out = out "\\n"
            else if (c == "\r") out = out "\\r"
            else if (c == "\t") out = out "\\t"
            else if (o < 32 || o == 127 || (field && c == " ")) out = out sprintf("\\x%02x", o)
            else out = out c
            # keep the string being extended short: awk copies it each time
            if (length(out) >= 512) { res = res out; out = "" }
        }
        return res out
    }
    BEGIN {
        for (k = 1; k < 256; k++) ord[sprintf("%c", k)] = k
        printf "%s %s %s %s\n", vis(ENVIRON["APPEND_WHEN"], 1), vis(ENVIRON["APPEND_SEVERITY"], 1),
            vis(ENVIRON["APPEND_ID"], 1), vis(ENVIRON["APPEND_TEXT"], 0)
    }') || exit 75

# fd 9 is the file, opened for appending; the lock is on it.  (A failed
# redirection of a compound command returns non-zero; of `exec` it would
# end the script.)
{
    if ! flock -x -w 10 9; then
        echo "append.sh: could not lock $file within 10 s" >&2
        exit 75
    fi
    if ! printf '%s\n' "$line" >&9; then
        echo "append.sh: writing $file failed" >&2
        exit 75
    fi
} 9>>"$file" || {
    echo "append.sh: cannot open $file" >&2
    exit 75
}
exit 0
