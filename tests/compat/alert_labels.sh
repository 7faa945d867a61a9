#!/bin/sh
# Every alert of the shipped rules over every shipped scenario log carries its labels
# (HOST, corral.alert_id, .severity, .event, .summary): see alert_labels.py.
exec python3 "${top_srcdir:-.}/tests/compat/alert_labels.py"
