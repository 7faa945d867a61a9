#!/bin/sh
# corr_diff.sh: differential test of corral's correlation engine against
# syslog-ng 3.38's pdbtool (see corr_diff.py), run by `make check`.
#
# Environment: top_srcdir, top_builddir (corral is $top_builddir/tools/corral),
# PDBTOOL (the pdbtool to compare with; the test is skipped without one).
# CORR_DIFF_SEED and CORR_DIFF_SCENARIOS override the fixed seed and size.
# With libfaketime installed pdbtool runs under a frozen clock (stamps past
# the clock are then clamped too); without it, under the real clock.

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
corral=$top_builddir/tools/corral

if [ -z "$PDBTOOL" ] || ! command -v "$PDBTOOL" >/dev/null 2>&1; then
    echo "corr_diff: no pdbtool (PDBTOOL='$PDBTOOL'), skipped"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "corr_diff: python3 is needed" >&2
    exit 99
fi
if [ ! -x "$corral" ]; then
    echo "corr_diff: $corral not built" >&2
    exit 99
fi
PDBTOOL=$(command -v "$PDBTOOL")

# 600 scenarios of 2 to 6 rules and 12 to 36 lines: some 26000 output lines,
# 10 to 35 s on 2 busy CPUs.  A mismatch is printed minimised, with its files kept.
exec python3 "$top_srcdir/tests/compat/corr_diff.py" \
    --corral "$corral" --pdbtool "$PDBTOOL" \
    --seed "${CORR_DIFF_SEED:-1}" --scenarios "${CORR_DIFF_SCENARIOS:-600}" \
    --rules 4 --lines 24 --max-report 3 --min-budget 200
