#!/usr/bin/env python3
"""Small helpers for bench/run.sh (python3 stdlib only).

    helper.py ports N                 N free TCP ports on 127.0.0.1, one per line
    helper.py content SUMMARY KEY     a field of gen_content.py's summary (e.g. app_layer.digest)
    helper.py check LAYOUTS SUMMARY CASE METHOD URL
                                      fetch URL once with curl and verify status, headers and
                                      bytes for CASE; prints problems; exit 1 on a wrong answer
    helper.py parse TOOL CASE TARGET REP EXPECT OUTFILE "SERVER_CPU_S CLIENT_CPU_S"
                                      turn one wrk/oha output into one JSON line (stdout) and
                                      a one-line summary (stderr); exit 3 if the run was
                                      starved of CPU by other processes
    helper.py report RAW.jsonl META.json REPORT.md RESULTS_DIR
                                      medians and spread per target and case, ratios, tables
                                      (stdout and REPORT.md), summary CSV/JSON, gnuplot input
"""

import csv
import hashlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
ACCEPT = MANIFEST_TYPE
TARGETS = ["chartreg", "nginx", "distribution", "actix"]
# How the report names each target.
TITLES = {
    "chartreg": "chartreg",
    "nginx": "nginx",
    "distribution": "distribution",
    "actix": "actix-web, bare (the control)",
}
# A run in which neither the server nor the load generator kept its CPU this busy was starved by
# other processes on the machine: bench/run.sh measures it again (within a budget).
STARVED = 0.75


# ---------------------------------------------------------------------------------------------
# ports, content
# ---------------------------------------------------------------------------------------------


def ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    for s in socks:
        print(s.getsockname()[1])
    for s in socks:
        s.close()


def lookup(summary, key):
    value = json.load(open(summary))
    if key.split(".")[0] in value["objects"]:
        value = value["objects"]
    for part in key.split("."):
        value = value[part]
    return value


# ---------------------------------------------------------------------------------------------
# sanity check: one request with curl, compared with the layouts
# ---------------------------------------------------------------------------------------------


def curl(method, url, http2=False):
    """(status, headers as a lower-cased dict, body bytes) of one request, over HTTP/1.1 or
    (`http2`, HTTPS only) HTTP/2, which must then be what the server answers with."""
    with tempfile.TemporaryDirectory() as tmp:
        hdr, body = os.path.join(tmp, "h"), os.path.join(tmp, "b")
        version = "--http2" if http2 else "--http1.1"
        cmd = ["curl", "-sS", version, "-k", "--max-time", "30", "-H", f"Accept: {ACCEPT}"]
        cmd += ["-I"] if method == "HEAD" else []
        cmd += ["-D", hdr, "-o", body, "-w", "%{http_code}", url]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"curl failed: {out.stderr.strip()}")
        lines = open(hdr, encoding="latin-1").read().splitlines()
        if http2 and not lines[0].startswith("HTTP/2"):
            raise RuntimeError(f"answered with {lines[0]!r}, not HTTP/2")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        data = open(body, "rb").read() if os.path.exists(body) else b""
        return int(out.stdout.strip()), headers, data


def blob_bytes(layouts, name, digest):
    return open(os.path.join(layouts, name, "blobs", "sha256", digest.split(":", 1)[1]), "rb").read()


def check(layouts, summary_path, case, method, url):
    """Problems with the answer: (fatal, notes). Fatal means: do not benchmark this target."""
    summary = json.load(open(summary_path))
    objs = summary["objects"]
    fatal, notes = [], []
    # The protocol (tls-, h2-, h2m-) does not change what the answer must be.
    http2 = case.startswith(("h2-", "h2m-"))
    case = re.sub(r"^(tls|h2m?)-(seq-)?", "", case)
    try:
        status, headers, body = curl(method, url, http2=http2)
    except RuntimeError as e:
        return [str(e)], notes

    def expect_header(name, want, is_fatal=True):
        got = headers.get(name.lower())
        if got != want:
            (fatal if is_fatal else notes).append(f"{name}: got {got!r}, want {want!r}")

    want_status = 404 if case == "not-found" else 200
    if status != want_status:
        return [f"status {status}, want {want_status}"], notes
    expect_header("Docker-Distribution-API-Version", "registry/2.0", is_fatal=False)

    if case == "base":
        if json.loads(body or b"null") != {}:
            fatal.append(f"body {body[:60]!r}, want {{}}")
    elif case in ("manifest-tag", "manifest-tag-head", "manifest-digest"):
        m = objs["app_manifest"]
        want = blob_bytes(layouts, m["name"], m["digest"])
        expect_header("Docker-Content-Digest", m["digest"])
        expect_header("Content-Type", MANIFEST_TYPE)
        if method == "HEAD":
            # curl -I reads no body (and writes the head where the body would go).
            expect_header("Content-Length", str(len(want)))
        elif body != want:
            fatal.append(f"body differs from the manifest ({len(body)} bytes, want {len(want)})")
    elif case == "blob-small" or "32mib" in case:
        b = objs["app_layer" if case == "blob-small" else "big_layer"]
        if len(body) != b["size"] or "sha256:" + hashlib.sha256(body).hexdigest() != b["digest"]:
            fatal.append(f"body is not blob {b['digest']} ({len(body)} bytes, want {b['size']})")
        expect_header("Content-Length", str(b["size"]))
        expect_header("Docker-Content-Digest", b["digest"], is_fatal=False)
        expect_header("Content-Type", "application/octet-stream", is_fatal=False)
    elif case == "tags-list":
        doc = json.loads(body)
        want = summary["app_tags"]
        if doc.get("name") != objs["app_manifest"]["name"]:
            fatal.append(f"name {doc.get('name')!r}")
        tags = doc.get("tags") or []
        if sorted(tags) != sorted(want):
            fatal.append(f"{len(tags)} tags, want the {len(want)} of the repository")
        elif tags != sorted(tags, key=lambda t: t.encode()):
            notes.append("tags are not in byte order")
        if "link" in headers:
            fatal.append(f"paginated (Link: {headers['link']})")
    elif case == "catalog":
        repos = json.loads(body).get("repositories") or []
        want = summary["repositories"]
        if repos != want[: len(repos)] or len(repos) < 1000:
            fatal.append(f"{len(repos)} repositories, want the first >= 1000 of {len(want)} in order")
        if len(repos) < len(want):
            notes.append(
                f"first page only: {len(repos)} of {len(want)} repositories"
                + (f", Link: {headers['link']}" if "link" in headers else "")
            )
    elif case == "page":
        if not headers.get("content-type", "").startswith("text/html"):
            fatal.append(f"Content-Type {headers.get('content-type')!r}, want text/html")
        if b"</html>" not in body:
            fatal.append(f"not a page: {body[:60]!r}")
    elif case == "not-found":
        try:
            codes = [e.get("code") for e in json.loads(body).get("errors", [])]
        except (ValueError, AttributeError):
            codes = None
        if codes != ["MANIFEST_UNKNOWN"]:
            notes.append(f"404 body is not a MANIFEST_UNKNOWN error: {body[:80]!r}")
    else:
        fatal.append(f"unknown case {case}")
    return fatal, notes


# ---------------------------------------------------------------------------------------------
# one load-generator run -> one JSON record
# ---------------------------------------------------------------------------------------------


def parse(tool, case, target, rep, expect, outfile, cpu_seconds):
    """cpu_seconds: "SERVER CLIENT", the CPU time each used during the run."""
    server_cpu, client_cpu = (float(x) for x in cpu_seconds.split())
    text = open(outfile, encoding="utf-8", errors="replace").read()
    rec = {"case": case, "target": target, "rep": int(rep), "tool": tool}
    if tool == "wrk":
        line = [l for l in text.splitlines() if l.startswith("WRKJSON ")]
        if not line:
            raise SystemExit(f"no WRKJSON line in {outfile}:\n{text}")
        w = json.loads(line[-1][len("WRKJSON "):])
        secs = w["duration_us"] / 1e6
        requests = w["requests"]
        socket_errors = w["connect"] + w["read"] + w["write"] + w["timeout"]
        non_2xx = w["status"]
        rec.update(
            requests=requests,
            seconds=secs,
            rps=requests / secs if secs else 0.0,
            mib_s=w["bytes"] / secs / 2**20 if secs else 0.0,
            p50_ms=w["p50_us"] / 1000,
            p99_ms=w["p99_us"] / 1000,
            socket_errors=socket_errors,
            non_2xx_3xx=non_2xx,
        )
        # wrk counts every non-2xx/3xx answer as an error: for the 404 case they are expected.
        wrong_status = (requests - non_2xx) if int(expect) == 404 else non_2xx
    elif tool == "oha":
        o = json.loads(text[text.index("{"):])
        s = o["summary"]
        codes = {int(k): v for k, v in (o.get("statusCodeDistribution") or {}).items()}
        requests = sum(codes.values())
        socket_errors = sum((o.get("errorDistribution") or {}).values())
        lp = o.get("latencyPercentiles") or {}
        secs = s.get("total") or 0.0
        rec.update(
            requests=requests,
            seconds=secs,
            rps=requests / secs if secs else 0.0,
            mib_s=(s.get("sizePerSec") or 0.0) / 2**20,
            p50_ms=(lp.get("p50") or 0.0) * 1000,
            p99_ms=(lp.get("p99") or 0.0) * 1000,
            socket_errors=socket_errors,
            non_2xx_3xx=sum(v for k, v in codes.items() if not 200 <= k < 400),
        )
        wrong_status = sum(v for k, v in codes.items() if k != int(expect))
    elif tool == "h2load":
        # h2load (nghttp2) over HTTP/2: "finished in 4.00s, 35.25 req/s, 1.10GB/s",
        # "requests: 141 total, 145 started, 141 done, 141 succeeded, 0 failed, 0 errored,
        # 0 timeout", "status codes: 141 2xx, 0 3xx, 0 4xx, 0 5xx", "traffic: 4.41GB
        # (4734566421) total, ..., 4.41GB (4731174912) data", and a latency table.
        def field(pattern):
            m = re.search(pattern, text)
            if not m:
                raise SystemExit(f"h2load: no {pattern!r} in {outfile}:\n{text}")
            return m.groups()
        (secs,) = (float(x) for x in field(r"finished in ([0-9.]+)s"))
        _total, done, _ok, _failed, errored, timeout = (
            int(x) for x in field(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) "
                                  r"succeeded, (\d+) failed, (\d+) errored, (\d+) timeout")
        )
        s2, s3, s4, s5 = (int(x) for x in field(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx"))
        (data,) = (int(x) for x in field(r"traffic: .*?\((\d+)\) total"))
        latency = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text)
        def ms(v):
            for unit, scale in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
                if v.endswith(unit):
                    return float(v[: -len(unit)]) * scale
            return 0.0
        mean = ms(latency.group(3)) if latency else 0.0
        socket_errors = errored + timeout
        requests = done
        rec.update(
            requests=done,
            seconds=secs,
            rps=done / secs if secs else 0.0,
            mib_s=data / secs / 2**20 if secs else 0.0,
            # h2load gives min, max and mean per request: the mean stands in for p50, the
            # max for p99.
            p50_ms=mean,
            p99_ms=ms(latency.group(2)) if latency else 0.0,
            socket_errors=socket_errors,
            non_2xx_3xx=s4 + s5,
        )
        # Statuses are counted as heads arrive (a request cut off by the end of the run has
        # one too): count the wrong kinds rather than subtract.
        wrong_status = s3 + s4 + s5 if int(expect) == 200 else s2 + s3 + s5
    else:
        raise SystemExit(f"unknown tool {tool}")
    rec["errors"] = socket_errors + wrong_status
    # Server CPU seconds per GiB sent: what a large download costs the server.
    sent_gib = rec["mib_s"] * rec["seconds"] / 1024
    rec["cpu_s_per_gib"] = server_cpu / sent_gib if sent_gib else 0.0
    rec["server_cpu_s"] = server_cpu
    rec["client_cpu_s"] = client_cpu
    rec["cpu_us_per_req"] = server_cpu * 1e6 / requests if requests else 0.0
    # Share of the run each side kept its CPU busy: when neither is near 100 %, something else
    # on the machine had the CPU (or the latency, not the CPU, bounds the rate). A `*-half`
    # case's server may use half a CPU: its busy is of that half.
    share = 0.5 if case.endswith("-half") else 1.0
    rec["server_busy"] = server_cpu / secs / share if secs else 0.0
    rec["client_busy"] = client_cpu / secs if secs else 0.0
    print(json.dumps(rec, sort_keys=True))
    starved = max(rec["server_busy"], rec["client_busy"]) < STARVED
    print(
        ("STARVED (neither side kept its CPU busy): " if starved else "")
        + f"{rec['rps']:,.0f} req/s, {rec['mib_s']:,.1f} MiB/s, p50 {rec['p50_ms']:.2f} ms, "
        f"p99 {rec['p99_ms']:.2f} ms, {rec['errors']} errors, "
        f"server CPU {rec['cpu_us_per_req']:.1f} us/request, "
        f"busy: server {rec['server_busy']:.0%}, client {rec['client_busy']:.0%}",
        file=sys.stderr,
    )
    return 3 if starved else 0


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------


def fmt_rps(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def fmt_num(x, digits=2):
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def summarise(records):
    """{(case, target): stats} with medians and min/max over the repetitions."""
    groups = {}
    for r in records:
        groups.setdefault((r["case"], r["target"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        rps = [r["rps"] for r in rs]
        out[key] = {
            "case": key[0],
            "target": key[1],
            "reps": len(rs),
            "tool": rs[0]["tool"],
            "rps_median": statistics.median(rps),
            "rps_min": min(rps),
            "rps_max": max(rps),
            "mib_s_median": statistics.median(r["mib_s"] for r in rs),
            "p50_ms_median": statistics.median(r["p50_ms"] for r in rs),
            "p99_ms_median": statistics.median(r["p99_ms"] for r in rs),
            "p99_ms_max": max(r["p99_ms"] for r in rs),
            "cpu_us_per_req_median": statistics.median(r["cpu_us_per_req"] for r in rs),
            "cpu_s_per_gib_median": statistics.median(r.get("cpu_s_per_gib", 0.0) for r in rs),
            "server_busy_median": statistics.median(r["server_busy"] for r in rs),
            "client_busy_median": statistics.median(r["client_busy"] for r in rs),
            "requests": sum(r["requests"] for r in rs),
            "errors": sum(r["errors"] for r in rs),
        }
    return out


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report(raw_path, meta_path, report_path, results_dir):
    records = [json.loads(l) for l in open(raw_path) if l.strip()]
    meta = json.load(open(meta_path))
    cases = meta["cases"]  # [{name, title, ...}] in run order
    stats = summarise(records)
    os.makedirs(results_dir, exist_ok=True)

    # Machine-readable summary.
    rows = [stats[k] for k in sorted(stats, key=lambda k: ([c["name"] for c in cases].index(k[0]), TARGETS.index(k[1])))]
    with open(os.path.join(results_dir, "summary.json"), "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(results_dir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["case"])
        w.writeheader()
        w.writerows(rows)

    # Tables.
    skipped = meta.get("skipped", {})
    per_target = {}
    for t in TARGETS:
        trows = []
        for c in cases:
            s = stats.get((c["name"], t))
            if s is None:
                why = skipped.get(f"{c['name']}/{t}", "not run")
                trows.append([c["title"], "—", "—", "—", "—", "—", "—", f"not benchmarked: {why}"])
                continue
            trows.append(
                [
                    c["title"] + {"oha": " ¹", "h2load": " ²"}.get(s["tool"], ""),
                    f"{fmt_rps(s['rps_median'])} ({fmt_rps(s['rps_min'])}–{fmt_rps(s['rps_max'])})",
                    fmt_num(s["mib_s_median"], 1),
                    fmt_num(s["p50_ms_median"]),
                    fmt_num(s["p99_ms_median"]),
                    fmt_num(s["cpu_us_per_req_median"], 1),
                    f"{s['server_busy_median']:.0%} / {s['client_busy_median']:.0%}",
                    f"{s['errors']:,} / {s['requests']:,}",
                ]
            )
        per_target[t] = md_table(
            [
                "case",
                "req/s median (min–max)",
                "MiB/s",
                "p50 ms",
                "p99 ms",
                "server CPU µs/req",
                "busy server / client",
                "errors / requests",
            ],
            trows,
        )
    ratio_rows = []
    for c in cases:
        ch = stats.get((c["name"], "chartreg"))
        row = [c["title"]]
        # req/s: chartreg over the other; CPU/req and p99: the other over chartreg (above 1
        # always means chartreg is better).
        for key, chartreg_on_top in (
            ("rps_median", True),
            ("cpu_us_per_req_median", False),
            ("p99_ms_median", False),
        ):
            for other in ("nginx", "distribution"):
                o = stats.get((c["name"], other))
                top, bottom = (ch, o) if chartreg_on_top else (o, ch)
                if ch and o and bottom[key] > 0:
                    row.append(f"{top[key] / bottom[key]:.2f}×")
                else:
                    row.append("—")
        # The control: how chartreg compares with bare actix-web, and what actix-web alone
        # reaches against nginx on this machine.
        for top, bottom in (("chartreg", "actix"), ("actix", "nginx")):
            a, b = stats.get((c["name"], top)), stats.get((c["name"], bottom))
            row.append(f"{a['rps_median'] / b['rps_median']:.2f}×" if a and b and b["rps_median"] > 0 else "—")
        ratio_rows.append(row)
    ratios = md_table(
        [
            "case",
            "req/s chartreg / nginx",
            "req/s chartreg / distribution",
            "CPU/req nginx / chartreg",
            "CPU/req distribution / chartreg",
            "p99 nginx / chartreg",
            "p99 distribution / chartreg",
            "req/s chartreg / bare actix-web",
            "req/s bare actix-web / nginx",
        ],
        ratio_rows,
    )

    # Large blobs: rate and server CPU per GiB, each target against nginx and the control.
    big_rows = []
    for c in cases:
        if "32mib" not in c["name"]:
            continue
        n, a = stats.get((c["name"], "nginx")), stats.get((c["name"], "actix"))
        for t in TARGETS:
            st = stats.get((c["name"], t))
            if st is None:
                continue
            def vs(other, key, on_top):
                if not other or other is st or not other[key] or not st[key]:
                    return "—"
                return f"{(st[key] / other[key]) if on_top else (other[key] / st[key]):.2f}×"
            big_rows.append(
                [
                    c["title"],
                    TITLES[t].split(" (")[0],
                    f"{fmt_num(st['mib_s_median'], 1)}",
                    f"{st['cpu_s_per_gib_median']:.3f}",
                    f"{st['server_busy_median']:.0%} / {st['client_busy_median']:.0%}",
                    vs(n, "mib_s_median", True),
                    vs(n, "cpu_s_per_gib_median", False),
                    vs(a, "mib_s_median", True),
                ]
            )
    big_table = md_table(
        [
            "case",
            "target",
            "MiB/s",
            "server CPU s/GiB",
            "busy server / client",
            "rate / nginx's",
            "CPU/GiB nginx's / this",
            "rate / control's",
        ],
        big_rows,
    ) if big_rows else "No large-blob case was run."

    # Chart input for gnuplot: one row per case, one column per target (req/s medians).
    with open(os.path.join(results_dir, "req-per-s.dat"), "w") as f:
        f.write("# case " + " ".join(TARGETS) + "\n")
        for c in cases:
            vals = []
            for t in TARGETS:
                s = stats.get((c["name"], t))
                vals.append(f"{s['rps_median']:.3f}" if s else "NaN")
            f.write(f"\"{c['short']}\" " + " ".join(vals) + "\n")

    tables = "".join(f"\n### {TITLES[t]}\n\n{per_target[t]}\n" for t in TARGETS)
    print(tables)
    print("### Ratios (above 1: chartreg is better)\n")
    print(ratios)

    png_rel = os.path.relpath(
        os.path.join(results_dir, "req-per-s.png"), os.path.dirname(os.path.abspath(report_path))
    )
    checks = meta.get("check_notes", [])
    check_text = (
        "Notes from that check (answers that were benchmarked all the same):\n\n"
        + "\n".join(f"- {n}" for n in checks)
        if checks
        else "Every target answered every case correctly."
    )
    if meta.get("skipped"):
        check_text += "\n\nNot benchmarked (a wrong answer, or no such listener):\n\n" + "\n".join(
            f"- {k}: {v}" for k, v in sorted(meta["skipped"].items())
        )
    res = os.path.relpath(results_dir)
    if res.startswith(".."):
        res = os.path.abspath(results_dir)
    redone = meta.get("redone", 0)
    redo_text = (
        f"{redone} run(s) were starved (neither the server nor the load generator kept its CPU "
        f"{STARVED:.0%} busy: other processes had it) and were measured again; the starved "
        f"runs are in `{res}/discarded.jsonl`, not in the results."
        + (
            " That used up the budget for it: any later starved run is in the results (see "
            "the busy column)."
            if redone >= meta.get("redo_budget", 0)
            else ""
        )
        if redone
        else f"No run was starved of CPU (a run in which neither the server nor the load "
        f"generator keeps its CPU {STARVED:.0%} busy is measured again, up to "
        f"{meta.get('redo_budget', '?')} times in all)."
    )
    if meta.get("after_load"):
        check_text += "\n\nAfter the load, a manifest was answered wrongly by:\n\n" + "\n".join(
            f"- {n}" for n in meta["after_load"]
        )
    else:
        check_text += "\n\nAfter the load, every target still answered a manifest correctly."
    commands = "\n".join(meta["commands"])
    oha = f", {meta['oha_version']}" if meta.get("oha_version") else ""
    oha += f", {meta['h2load_version']}" if meta.get("h2load_version") else ""
    noise = (
        f"up to {meta['rustc_seen']} `rustc` processes of other builds were running at some "
        "point during the load"
        if meta.get("rustc_seen")
        else "no `rustc` process was seen during the load"
    )
    doc = f"""# chartreg benchmarks

Generated by `make bench` (`bench/run.sh`) on {meta['date']}: chartreg, nginx serving static
files, and CNCF distribution with filesystem storage serve the same content in the same run and
are measured one after the other, case by case, with the targets in rotation. A fourth target,
bare actix-web (`examples/bare_actix.rs`), is the control: what actix-web itself reaches here,
so that what chartreg costs can be told from what its framework costs.

## Machine

- CPU: {meta['cpu']}, {meta['cores']} cores; memory {meta['memory']}.
- Kernel {meta['kernel']}; {meta['os']}.
- CPU sharing: {meta['cpu_sharing']}
- Load average (1, 5, 15 min) before the run: {meta['load_before']}; after: {meta['load_after']}.
  This machine is shared with other engineers' builds: {noise}. Expect noise of several per
  cent, more where the min–max spread is wide.
- chartreg {meta['chartreg_version']} (git {meta['git']}), release build with
  `CHARTREG_ASSETS=target/bench-content/layouts` in `target/bench`; {meta['nginx_version']};
  distribution {meta['distribution_version']} (Debian `docker-registry`); {meta['wrk_version']}{oha}.
- Time: {meta['elapsed']} for the whole run, of which {meta['bench_elapsed']} of load.

## Content

Written by `bench/gen_content.py` (deterministic) as OCI image layouts, 1,002 repositories:

- `bench/app`: 1,000 tags `1.0.0` … `1.0.999`, each a Helm-like OCI manifest (about 575
  bytes) with a config (`application/vnd.cncf.helm.config.v1+json`) and one 4 KiB chart layer;
- `bench/r0000` … `bench/r0999`: one tag each;
- `bench/big`: one tag whose layer is a 32 MiB blob.

chartreg embeds the layouts; nginx serves the static `/v2/` tree of `bench/nginx_site.py`;
distribution reads the filesystem storage written by `bench/dist_storage.py` (both hard links
to the same files, in the page cache).

## How each server runs

- **chartreg**: `chartreg serve --listen 127.0.0.1:0 --shutdown-delay 0s` with
  `RUST_LOG={os.environ.get('CHARTREG_RUST_LOG', 'info')}`: with `info`, chartreg writes its
  default access line for every request (to a file here), which neither nginx (`access_log off`)
  nor distribution (access log disabled, level `error`) does. A second chartreg with
  `--tls-cert-file`/`--tls-private-key-file` serves HTTPS. Everything else is the default.
- **nginx**: the configuration written by `bench/nginx_site.py --conf`: `daemon off`,
  `worker_processes` (see CPU sharing above), `sendfile on`, `tcp_nopush on`, `open_file_cache`,
  `keepalive_requests 1000000`, `access_log off`; Content-Type, Docker-Content-Digest (by tag
  through a generated `map $uri $dcd`, by digest from the URI) and
  `Docker-Distribution-API-Version` set by location rules. One HTTP and one HTTPS listener.
- **distribution**: `scripts/run-distribution.sh` (filesystem storage, in-memory blob
  descriptor cache, log level `error`, no access log), plus a second process on the same
  storage with a TLS listener added to that configuration.
- **actix-web, bare (the control)**: `examples/bare_actix.rs` on the nginx site's files, read
  into static slices at start-up: one hash-map lookup by path and header values made at
  start-up (Content-Type, Docker-Content-Digest, Docker-Distribution-API-Version), bodies over
  1 MiB as 1 MiB slices like chartreg's, one worker per usable CPU like chartreg; no
  validation, caching headers, access log, metrics or HTTPS.
- HTTPS: the same self-signed EC P-256 certificate for the three HTTPS servers; wrk speaks HTTP/1.1 over
  TLS 1.3 on keep-alive connections, so the handshakes happen only when connections open;
  h2load (nghttp2) speaks HTTP/2 over TLS 1.3 (ALPN `h2`, which all three offer: nginx with
  `listen ... ssl http2`).
- Cases whose title says *server on half a CPU*: while its load runs, the server (nginx with
  its workers) is held to half a CPU by a CFS quota (a cgroup of 50 ms per 100 ms). Over HTTPS
  the load generator decrypts every byte on its one CPU, and against an efficient server it is
  the slower side (busy near 100 % while the server idles): held to half a CPU, every server is
  the bound, so those rates compare the servers. Busy is then of the half CPU.

## Method

For each case, {meta['reps']} rounds; in each round every target gets {meta['duration']} of load
with the same command (one wrk thread, {meta['connections']} keep-alive connections;
{meta['big_connections']} for the 32 MiB blob), the order rotating from round to round. Every
request carries `Accept: {ACCEPT}` (distribution refuses OCI manifests to clients that do not
accept them). wrk's Lua script (`{res}/get.lua`) sets that header, and its `done()`
prints the exact totals, which `bench/helper.py` reads. TARGET below is the server's
`127.0.0.1:PORT`.

```
{commands}
```

Before any load, each target answers each case once through curl, and the status,
Content-Type, Docker-Content-Digest, Content-Length and bytes (or the JSON contents) are
compared with the generated layouts: a target that answers a case wrongly is not benchmarked on
it, and a wrong answer from chartreg makes `make bench` fail.

{check_text}

{redo_text}

## Results

Medians over the {meta['reps']} rounds, with the min–max spread of req/s. MiB/s counts all bytes
received, headers included. p50 and p99 are the load generator's per-request latencies (medians
of the rounds' percentiles). Server CPU µs/req is the user + system CPU time the server
process (and its children: nginx's workers) used during the run, from `/proc/PID/stat`, over
the requests answered: unlike req/s, it hardly depends on what else the machine runs at the
time, so it is the steadier figure on a shared machine. Busy is the CPU time over the run's
duration of the server and of the load generator (each has one CPU when pinned): near 100 %
says which side bounded the rate (for the 32 MiB blob often the client, which copies every
byte); when neither is, other processes had the CPU and req/s is low for that reason. Errors
are socket errors and timeouts plus answers with an unexpected status (in the 404 case the
404s are the expected answer).
{tables}
¹ HEAD is measured with oha instead of wrk: Debian's wrk 4.1.0 waits for a body after a HEAD
answer that carries a Content-Length, so it never completes a HEAD request. oha is a
different client (tokio, one thread here): compare the targets with each other on that row,
not with the rows measured by wrk.

² HTTP/2 is measured with h2load (one thread; one stream at a time per connection, or ten on
the rows that say so, as browsers and Go's HTTP/2 clients send them): it reports each request's
mean and maximum time, not percentiles, so those rows show the mean under p50 and the maximum
under p99. The sequential row is one connection sending one request after another: its mean is
what one client waits for an answer.

### Ratios (above 1: chartreg is better)

req/s: chartreg's median over the other's. CPU/req and p99: the other's median over
chartreg's, so that above 1 also means chartreg spends less CPU or waits less.

{ratios}

### Large blobs

The 32 MiB blob over HTTP, over HTTPS with HTTP/1.1 (wrk), over HTTPS with HTTP/2 (h2load,
one stream per connection, its default 1 GiB windows, 16 KiB frames), and over HTTPS with the
server held to half a CPU: what a cluster pulling image layers asks. Server CPU s/GiB is the server's CPU time over the bytes it sent (medians of the
rounds): the cost of a download, whatever the client's speed. Above 1 in the last three
columns: this target is faster, or spends less CPU per GiB, than nginx (or the control).

{big_table}

![requests per second per case and target]({png_rel})

Raw numbers: `{res}/raw.jsonl` (one line per load run), `{res}/summary.csv`,
`{res}/summary.json` (with this run's settings), `{res}/req-per-s.dat`.

## Caveats

- **Catalog pagination differs.** distribution pages `/v2/_catalog` at 100 entries without `n`
  and caps `n` at 1000, so every target is asked for `?n=1000`: chartreg and distribution
  answer the first 1,000 of the 1,002 repositories with a `Link` to the rest, nginx ignores the
  query string and sends all 1,002 (the same size within 0.2 %). distribution walks its
  repositories folder on every catalog request.
- **Tags list.** distribution lists the tags folder on every request and does not sort the
  tags; chartreg and the static file answer in byte order.
- **404.** nginx answers from one static JSON file; chartreg and distribution build a
  `MANIFEST_UNKNOWN` error, and distribution also logs each one (level `error`).
- **One machine, loopback.** Client and servers share one host. Where the load generator is
  busy near 100 % (the smallest answers from chartreg and nginx), it, not the server, set the
  rate, and the req/s ratio between those two understates the difference: compare CPU/req
  there. The same holds for the large blob over HTTPS with HTTP/1.1: wrk decrypts on one CPU
  and is the busier side against chartreg (see "busy server / client"), so that rate is the
  client's ceiling; the case with the server held to half a CPU puts the limit on the server,
  and CPU per GiB compares the servers whatever the client does.
- **chartreg's access log is as configured above.** `BENCH_CHARTREG_ACCESS_LOG=off make bench`
  measures it without.
- **distribution 2.8 rebuilds its URL router on every request.** A CPU profile of this
  distribution (Debian 2.8.2) under load spends about 60 % of its time in `regexp.Compile`,
  called from `NewURLBuilderFromRequest` → `v2.Router()`: each request compiles every route's
  regular expression anew, which explains most of the gap. distribution's pull request #3683
  ("Do not recreate mux router for each incoming request", 2022) removed that on its main
  branch (3.x); the Debian package predates it.
- **nginx** ran {meta.get('nginx_workers', '?')} worker process(es).
- **The control** answers like nginx (the whole catalog whatever the query, nginx's static
  404 body), without anything chartreg checks or records per request: where chartreg and the
  control are close, what remains against nginx is actix-web's, not chartreg's (for bodies,
  actix-web copies each one into its write buffer where nginx hands the file to `sendfile`).
"""
    # Keep the scaling study's section, which bench/scale.sh writes at the end.
    marker = "<!-- scaling study: written by bench/scale.sh -->"
    old = open(report_path).read() if os.path.exists(report_path) else ""
    if marker in old:
        doc = doc.rstrip("\n") + "\n\n" + old[old.index(marker):]
    with open(report_path, "w") as f:
        f.write(doc)


def main():
    args = sys.argv[1:]
    cmd = args[0] if args else ""
    if cmd == "ports" and len(args) == 2:
        ports(int(args[1]))
    elif cmd == "content" and len(args) == 3:
        print(lookup(args[1], args[2]))
    elif cmd == "check" and len(args) == 6:
        fatal, notes = check(*args[1:])
        for n in fatal:
            print(f"WRONG: {n}")
        for n in notes:
            print(f"note: {n}")
        sys.exit(1 if fatal else 0)
    elif cmd == "parse" and len(args) == 8:
        sys.exit(parse(*args[1:]))
    elif cmd == "report" and len(args) == 5:
        report(*args[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
