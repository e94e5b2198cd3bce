#!/usr/bin/env python3
"""Run a command and report the memory its process tree held at its peak (python3 stdlib only).

    bench/peak_memory.py OUT.json COMMAND [ARG...]

Every 20 ms it walks the command's process tree (/proc/PID/task/*/children) and sums each
process's anonymous resident memory (RssAnon: what the machine must keep in RAM, the heap of
cargo, rustc, the build script and the linker) and, apart, its file-backed resident memory
(RssFile: pages of files mapped in, such as the objects and the output LLD maps; the kernel
drops or writes them back when memory is short). Writes to OUT.json the peak of each sum, who
held the most anonymous memory at that peak, and the command's exit code; exits with the
command's code.

GNU time's `%M` is the largest single process's whole resident set, file-backed pages
included: for a linker that maps GiBs of objects it says GiBs that are page cache, not memory
the build needs. This script tells the two apart.
"""

import json
import os
import subprocess
import sys
import time


def children(pid):
    found = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def status(pid):
    """(name, RssAnon KiB, RssFile KiB) of one process, or None when it is gone."""
    name, anon, file_backed = "?", 0, 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == "Name":
                    name = value.strip()
                elif key == "RssAnon":
                    anon = int(value.split()[0])
                elif key == "RssFile":
                    file_backed = int(value.split()[0])
    except OSError:
        return None
    return name, anon, file_backed


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, command = sys.argv[1], sys.argv[2:]
    proc = subprocess.Popen(command)
    peak_anon = peak_file = 0
    holders = []
    while proc.poll() is None:
        pending, anon, file_backed, seen = [proc.pid], 0, 0, []
        while pending:
            pid = pending.pop()
            s = status(pid)
            if s:
                anon += s[1]
                file_backed += s[2]
                seen.append((s[1], s[0]))
            pending += children(pid)
        if anon > peak_anon:
            peak_anon = anon
            holders = [f"{name} {kib // 1024} MiB" for kib, name in sorted(seen, reverse=True)[:3]]
        peak_file = max(peak_file, file_backed)
        time.sleep(0.02)
    with open(out, "w") as f:
        json.dump(
            {
                "peak_anon_kib": peak_anon,
                "peak_anon_holders": holders,
                "peak_file_kib": peak_file,
                "exit": proc.returncode,
            },
            f,
        )
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
