#!/usr/bin/env python3
"""Runs every example of the public pattern databases through syslog-ng's
`pdbtool test` and through `corral test`, and checks that both give the same
verdict for every example.

pdbtool prints examples of a file in reverse order; corral in file order."""
import json
import os
import re
import subprocess
import sys

top_srcdir = os.environ.get("top_srcdir", ".")
top_builddir = os.environ.get("top_builddir", ".")
pdbtool = os.environ.get("PDBTOOL", "")
corral = os.path.join(top_builddir, "tools", "corral")
data = os.path.join(top_srcdir, "tests", "data", "patterndb")

if not pdbtool or not os.access(pdbtool, os.X_OK):
    print("pdbtool not found: install syslog-ng-core to run this test")
    sys.exit(77)

TESTING = re.compile(r"^Testing message: program='(.*?)' message='", re.M)


def pdbtool_verdicts(path):
    out = subprocess.run([pdbtool, "test", "-v", path], capture_output=True, text=True,
                         errors="replace").stdout
    starts = [m.start() for m in TESTING.finditer(out)] + [len(out)]
    result = []
    for a, b in zip(starts, starts[1:]):
        block = out[a:b]
        m = TESTING.match(block)
        # the message runs up to the last "'\n" before the first result line
        body = block[m.end():]
        cut = re.search(r"'\n( Match name=| Wrong match| No value to match| Rule conflict|$)", body)
        message = body[:cut.start()] if cut else body.rstrip("'\n")
        failed = bool(re.search(r"^ (Wrong match|No value to match)", block, re.M))
        result.append((m.group(1), message, "fail" if failed else "pass"))
    result.reverse()
    return result


def corral_verdicts(path):
    proc = subprocess.run([corral, "test", "--json", path], capture_output=True, text=True,
                          errors="replace")
    return [(e["program"], e["message"], e["result"])
            for e in map(json.loads, proc.stdout.splitlines())]


files = sorted(os.path.join(d, f) for d, _, fs in os.walk(data) for f in fs
               if f.endswith((".xml", ".pdb")))
total = passed = 0
bad = 0
for path in files:
    p, c = pdbtool_verdicts(path), corral_verdicts(path)
    if len(p) != len(c):
        print(f"{path}: pdbtool tested {len(p)} examples, corral {len(c)}")
        bad += 1
        continue
    for (pp, pm, pv), (cp, cm, cv) in zip(p, c):
        total += 1
        passed += pv == "pass"
        if (pp, pm.strip(), pv) != (cp, cm.strip(), cv):
            bad += 1
            print(f"{path}: program={pp!r} message={pm[:80]!r}: pdbtool {pv}, corral {cv}"
                  + ("" if (pp, pm.strip()) == (cp, cm.strip()) else f" (corral saw {cp!r} {cm[:80]!r})"))

print(f"{total} examples in {len(files)} files; pdbtool passes {passed}; {bad} differences")
sys.exit(1 if bad or total == 0 else 0)
