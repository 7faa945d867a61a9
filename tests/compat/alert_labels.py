#!/usr/bin/env python3
"""alert_labels: every alert the shipped rules raise over every shipped
scenario log carries the labels of the alert contract (corral-rules(5)):

  HOST             not empty
  corral.alert_id  characters A-Z a-z 0-9 . _ : / @ - only, no empty part
                   between slashes (so no space, no "//")
  corral.severity  critical, major, minor, warning or info (a clear: or clear)
  corral.event     not empty
  corral.summary   one line of 1 to 120 characters, no blanks around it

Each <scenario> of rules/*.scenario is replayed with `corral match --json`
as the scenario runner replays it (its rules, Sigma rules and mapping,
now= and keep-open=), and every generated message tagged corral.alert or
corral.clear is checked, and every Sigma alert.
This does not use corral's own checker (engine/alertlabels.c): it reads
what the engine generates.

With --dump it prints the labels of each generated alert instead (one JSON
object a line, with file, scenario and index), to write <expect>s from.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

TOP = os.environ.get("top_srcdir", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("top_builddir", TOP)
CORRAL = os.path.join(BUILD, "tools", "corral")
LABELS = ("HOST", "corral.alert_id", "corral.severity", "corral.event", "corral.summary")
SEVERITIES = {"critical", "major", "minor", "warning", "info"}
ID_RE = re.compile(r"^[A-Za-z0-9._:/@-]+$")


def scenarios():
    rules_dir = os.path.join(TOP, "rules")
    for name in sorted(os.listdir(rules_dir)):
        if not name.endswith(".scenario"):
            continue
        path = os.path.join(rules_dir, name)
        root = ET.parse(path).getroot()
        for sc in root.iter("scenario"):
            yield path, root, sc


def replay(path, root, sc, tmp):
    rules = (sc.get("rules") or root.get("rules") or ".").split()
    base = os.path.dirname(path)
    lines = []
    for log in sc.iter("log"):
        for line in (log.text or "").split("\n"):
            line = line.lstrip(" \t")
            if line:
                lines.append(line)
    logfile = os.path.join(tmp, "log")
    with open(logfile, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    cmd = [CORRAL, "match", "-j", "1", "--json", "-f", logfile]
    for r in rules:
        cmd += ["-r", r if r.startswith("/") else os.path.join(base, r)]
    for attr, opt in (("sigma", "--sigma"), ("sigma-mapping", "--sigma-mapping")):
        if root.get(attr):
            cmd += [opt, os.path.join(base, root.get(attr))]
    if sc.get("now"):
        cmd += ["--now", sc.get("now")]
    if sc.get("keep-open") == "yes":
        cmd.append("--keep-open")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    generated = []
    for line in out.splitlines():
        m = json.loads(line)
        # generated messages have no class; Sigma alerts have class sigma
        if m.get(".classifier.class", "sigma") == "sigma" and (".classifier.class" not in m or "corral.alert_id" in m):
            generated.append(m)
    return generated


def problems(m, clear):
    why = []
    for name in LABELS:
        if not m.get(name):
            why.append(f"{name} missing")
    aid = m.get("corral.alert_id", "")
    if aid and (not ID_RE.match(aid) or "//" in aid or aid.startswith("/") or aid.endswith("/")):
        why.append(f"corral.alert_id {aid!r} is not an alert id")
    sev = m.get("corral.severity", "")
    if sev and sev not in SEVERITIES and not (clear and sev == "clear"):
        why.append(f"corral.severity {sev!r} is not valid")
    summ = m.get("corral.summary", "")
    if summ and (len(summ) > 120 or "\n" in summ or summ != summ.strip()):
        why.append(f"corral.summary {summ!r} is not one line of at most 120 characters")
    return why


def main():
    dump = "--dump" in sys.argv
    checked, failed = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for path, root, sc in scenarios():
            where = f"{os.path.basename(path)}: scenario '{sc.get('name')}'"
            for i, m in enumerate(replay(path, root, sc, tmp)):
                tags = m.get("TAGS", "").split(",")
                clear = "corral.clear" in tags
                if "corral.alert" not in tags and not clear:
                    continue
                if dump:
                    d = {k: m.get(k) for k in LABELS}
                    print(json.dumps({"file": os.path.basename(path), "scenario": sc.get("name"),
                                      "index": i, **d}))
                    continue
                checked += 1
                why = problems(m, clear)
                if why:
                    failed += 1
                    print(f"{where}: alert {m.get('corral.event', '?')} ({m.get('MESSAGE', '')[:80]}...): "
                          + "; ".join(why))
    if dump:
        return 0
    print(f"alert_labels: {checked} alerts checked over the shipped scenarios, {failed} without their labels")
    if checked == 0:
        print("alert_labels: no alert at all: the replay is broken")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
