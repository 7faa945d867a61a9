#!/bin/sh
# inputs_stdin: `corrald -F -f CONFIG < FILE` and `... | corrald`, with the
# stdin input: every line is a message, garbage lines (NULs, invalid UTF-8)
# included, CRLF line ends are dropped, and a last line without a newline is
# delivered at end of input.  Whether corrald then exits or keeps running is
# not tested here; if it keeps running it must stop on SIGTERM.

. "$(dirname "$0")/corrald_lib.sh"
need python3

python3 - "$WORK/input.log" <<'EOF' || fail "input file"
import sys
with open(sys.argv[1], 'wb') as f:
    for s in range(2000):
        eol = b'\r\n' if s % 3 == 0 else b'\n'
        f.write(b'Jan  1 00:00:00 stdinhost inputtest: conn=1 seq=%d from stdin' % s + eol)
        if s % 100 == 0:
            f.write(b'garbage \0\xff\xfe\x01 line\n\n')
    f.write(b'Jan  1 00:00:00 stdinhost inputtest: conn=1 seq=2000 no newline at the end')
EOF

inputs_config "$WORK/corrald.conf" 'max-message-size="1k"' "
    <stdin name=\"stdin\"/>"

# run_stdin HOW: feeds the file as a redirection ("file") or through a pipe ("pipe")
run_stdin() {
    rm -f "$OUT"
    if [ "$1" = file ]; then
        start_corrald "corrald-$1" "$WORK/corrald.conf" "$WORK/input.log"
    else
        start_corrald -p "corrald-$1" "$WORK/corrald.conf" "$WORK/input.log"
    fi
    # all of the input has been read and handed on when the stdin input says
    # so; then corrald, stopped or exited by itself (with 0), has written it
    wait_log 'stdin: end of input' || fail "end of input not reached ($1)"
    stop_corrald
    check seq "$OUT" --conns 1-1 --per 2001 --host stdinhost || fail "messages from stdin ($1)"
    [ "$(check field "$OUT" '^conn=1 seq=0 ' MESSAGE)" = "conn=1 seq=0 from stdin" ] || fail "CRLF kept ($1)"
    [ "$(check lines "$OUT")" -eq 2021 ] || fail "$(check lines "$OUT") messages, want 2021 ($1)"
}

run_stdin file
run_stdin pipe
echo "$TEST: ok"
