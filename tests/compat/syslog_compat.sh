#!/bin/sh
# syslog_compat: corral's syslog parser against syslog-ng's, line by line.
#
# Feeds the same files to `pdbtool match -f` (syslog-ng 3.38) and to
# `corral match -f` and compares, for every line, HOST PROGRAM PID MSGID MSG
# LEGACY_MSGHDR ISODATE FACILITY PRIORITY.  Files: the loghub OpenSSH and
# Linux samples and tests/data/syslog_edge.log, the parser's edge cases.
#
# Run by `make check` with top_srcdir, top_builddir and PDBTOOL set and
# TZ=UTC.  Exits 77 (skipped) when there is no pdbtool, 1 on a mismatch.

top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
top_builddir=${top_builddir:-$top_srcdir}
CORRAL=$top_builddir/tools/corral

if [ -z "$PDBTOOL" ] || [ ! -x "$PDBTOOL" ]; then
    echo "syslog_compat: no pdbtool (PDBTOOL='$PDBTOOL'), skipped"
    exit 77
fi
if [ ! -x "$CORRAL" ]; then
    echo "syslog_compat: $CORRAL not built" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/syslog_compat.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# A rule that matches nothing: only the parsed fields matter here.
cat > "$tmp/none.pdb" <<'EOF'
<patterndb version='4' pub_date='2010-01-01'>
  <ruleset name='none' id='none'>
    <rules>
      <rule id='none' provider='syslog_compat'>
        <patterns><pattern>syslog_compat matches nothing</pattern></patterns>
      </rule>
    </rules>
  </ruleset>
</patterndb>
EOF

# Fields are separated by the ASCII unit separator, which the data never
# holds, so that a '|' in a message cannot shift the columns.
US=$(printf '\037')
TEMPLATE="\$HOST$US\$PROGRAM$US\$PID$US\$MSGID$US\$MSG$US\$LEGACY_MSGHDR$US\$ISODATE$US\$FACILITY$US\$PRIORITY$US\$R_ISODATE\\n"

# Evens out what legitimately differs between two runs, then drops the
# helper column:
#  - a line without a stamp of its own is stamped with the time it was read,
#    which is not the same second in both runs: such an ISODATE (equal to
#    $R_ISODATE) becomes "received";
#  - the message syslog-ng makes of a line it cannot parse ("Error processing
#    log message: ...") carries the parser's own process id as PID, which
#    corral copies, so it cannot be equal across two processes.
normalize() {
    awk -F "$US" -v OFS="$US" '{
        if ($7 == $10) $7 = "received"
        if ($2 == "syslog-ng" && index($5, "Error processing log message: ") == 1) $3 = "own-pid"
        print $1, $2, $3, $4, $5, $6, $7, $8, $9
    }'
}

status=0
total=0
for f in "$top_srcdir/tests/data/loghub/OpenSSH_2k.log" \
         "$top_srcdir/tests/data/loghub/Linux_2k.log" \
         "$top_srcdir/tests/data/syslog_edge.log"; do
    name=$(basename "$f")
    if [ ! -r "$f" ]; then
        echo "syslog_compat: $f missing" >&2
        status=1
        continue
    fi
    # pdbtool complains about its scratch buffers on stderr; its exit status
    # says nothing useful with -T.
    "$PDBTOOL" match -p "$tmp/none.pdb" -f "$f" -T "$TEMPLATE" 2>/dev/null | normalize > "$tmp/$name.syslog-ng"
    if ! "$CORRAL" match -r "$tmp/none.pdb" -f "$f" -T "$TEMPLATE" > "$tmp/$name.raw"; then
        echo "syslog_compat: corral match failed on $f" >&2
        status=1
        continue
    fi
    normalize < "$tmp/$name.raw" > "$tmp/$name.corral"
    lines=$(wc -l < "$tmp/$name.syslog-ng")
    if [ "$lines" -eq 0 ]; then
        echo "syslog_compat: pdbtool printed nothing for $f" >&2
        status=1
        continue
    fi
    total=$((total + lines))
    if ! diff -u "$tmp/$name.syslog-ng" "$tmp/$name.corral" > "$tmp/$name.diff"; then
        echo "syslog_compat: $name differs from syslog-ng (fields separated by ^_):" >&2
        head -n 60 "$tmp/$name.diff" | cat -v >&2
        status=1
    else
        echo "syslog_compat: $name: $lines lines as syslog-ng parses them"
    fi
done
[ "$status" -eq 0 ] && echo "syslog_compat: $total lines compared, no differences"
exit "$status"
