#!/bin/sh
# matcher_diff.sh: differential test of corral's pattern matcher against
# syslog-ng 3.38's pdbtool (see matcher_diff.py), run by `make check`.
#
# Environment: top_srcdir, top_builddir (corral is $top_builddir/tools/corral),
# PDBTOOL (the pdbtool to compare with; the test is skipped without one).
# MATCHER_DIFF_SEED and MATCHER_DIFF_GROUPS override the fixed seed and size.

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
corral=$top_builddir/tools/corral

if [ -z "$PDBTOOL" ] || ! command -v "$PDBTOOL" >/dev/null 2>&1; then
    echo "matcher_diff: no pdbtool (PDBTOOL='$PDBTOOL'), skipped"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "matcher_diff: no python3, skipped"
    exit 77
fi
if [ ! -x "$corral" ]; then
    echo "matcher_diff: $corral not built" >&2
    exit 99
fi
PDBTOOL=$(command -v "$PDBTOOL")

# 300 databases of 8 rules and 40 messages: 12000 cases, some 12 s on 2 idle CPUs.
exec python3 "$top_srcdir/tests/compat/matcher_diff.py" \
    --corral "$corral" --pdbtool "$PDBTOOL" \
    --seed "${MATCHER_DIFF_SEED:-1}" --groups "${MATCHER_DIFF_GROUPS:-300}" \
    --rules 8 --messages 40 --show-rules
