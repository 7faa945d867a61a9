#!/bin/sh
# Same verdict as syslog-ng's pdbtool on every example of the public pattern databases.
exec python3 "${top_srcdir:-.}/tests/compat/pdb_examples.py"
