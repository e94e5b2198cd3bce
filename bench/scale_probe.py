#!/usr/bin/env python3
"""Start-up and memory of one chartreg binary (python3 stdlib only).

    bench/scale_probe.py BIN PATH [--runs N]

Starts `BIN serve` on a free loopback port N times (default 5). Each time it measures the time
from just before exec to the first `200 OK` answer to `GET PATH` (connection attempts every
0.2 ms), then, after 1 s idle, the process's resident memory (VmRSS, and the part of it that is
file-backed: pages of the binary itself). Prints one JSON object: the median and every run.
"""

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_200(port, path, started, proc):
    request = f"GET {path} HTTP/1.1\r\nHost: scale\r\nConnection: close\r\n\r\n".encode()
    while True:
        if proc.poll() is not None:
            sys.exit(f"chartreg exited with {proc.returncode} before answering")
        if time.monotonic() - started > 60:
            sys.exit("no answer within 60 s")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(request)
                status = s.recv(64).split(b"\r\n", 1)[0]
        except (ConnectionRefusedError, ConnectionResetError):
            time.sleep(0.0002)
            continue
        if status != b"HTTP/1.1 200 OK":
            sys.exit(f"GET {path}: {status!r}")
        return time.monotonic() - started


def rss_kib(pid):
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssFile", "RssAnon"):
            fields[key] = int(value.split()[0])
    return fields


def main():
    args = sys.argv[1:]
    runs = 5
    if len(args) == 4 and args[2] == "--runs":
        runs = int(args[3])
        args = args[:2]
    if len(args) != 2:
        sys.exit(__doc__)
    binary, path = args
    startups, memory = [], []
    for _ in range(runs):
        port = free_port()
        started = time.monotonic()
        proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{port}", "--shutdown-delay", "0s"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            startups.append(first_200(port, path, started, proc))
            time.sleep(1)
            memory.append(rss_kib(proc.pid))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    print(
        json.dumps(
            {
                "startup_ms": round(statistics.median(startups) * 1000, 2),
                "startup_ms_runs": [round(s * 1000, 2) for s in startups],
                "rss_kib": statistics.median(m["VmRSS"] for m in memory),
                "rss_file_kib": statistics.median(m["RssFile"] for m in memory),
                "rss_anon_kib": statistics.median(m["RssAnon"] for m in memory),
            }
        )
    )


if __name__ == "__main__":
    main()
