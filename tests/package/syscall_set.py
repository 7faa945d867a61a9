#!/usr/bin/python3
"""
syscall_set: prints, one per line, the system calls a unit's
SystemCallFilter= lines allow, expanded with systemd's own group table
(`systemd-analyze syscall-filter`), in the unit's order: a line starting
with ~ takes its calls away again, as systemd does.  For unit_sandbox.c.

    syscall_set.py @system-service ~@privileged
"""
import subprocess, sys
groups, cur = {}, None
for line in subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout.splitlines():
    if line.startswith("@"):
        cur = groups.setdefault(line.strip(), [])
    elif line.startswith("    ") and not line.strip().startswith("#") and cur is not None:
        cur.append(line.strip())
    elif not line.strip():
        cur = None
def expand(name, seen=()):
    if not name.startswith("@"):
        return {name}
    out = set()
    for m in groups[name]:
        if m not in seen:
            out |= expand(m, seen + (name,))
    return out
allow = set()
for spec in sys.argv[1:]:
    if spec.startswith("~"):
        allow -= expand(spec[1:])
    else:
        allow |= expand(spec)
print("\n".join(sorted(allow)))
