"""benchlib: what bench/bench.py (classification) and bench/daemon.py (the
daemon) share: facts about the machine and small helpers for the reports."""

import platform
import statistics


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def mem_gb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024.0 / 1024.0
    return 0.0


def count_lines(path):
    """Lines of a file, a last one without a newline included."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return n + (last != b"\n")
            n += b.count(b"\n")
            last = b[-1:]


def med(xs):
    return statistics.median(xs) if xs else 0


def yes(b):
    return "yes" if b else "**no**"
