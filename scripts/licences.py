#!/usr/bin/env python3
"""The licences of what the release archive carries, from cargo's own metadata.

    scripts/licences.py OUT_DIR [--workspace DIR] [--package NAME] [--kit KIT_DIR]

Writes OUT_DIR/THIRD-PARTY.md, a table of every crate the build tool links on Linux (the
package's normal dependencies, as `cargo metadata --filter-platform` resolves them) and every
crate the kit vendors and compiles (the stubs left by filtering are not listed: nothing compiles
them), each with its version, its licence expression and where its licence texts are: the
kit's crates carry theirs in vendor/NAME/; the build tool's are copied into
OUT_DIR/NAME-VERSION/ (the crate's LICENSE*, LICENCE*, COPYING*, NOTICE* and UNLICENSE files).
A crate with neither a licence expression nor a licence file fails the run, naming it.
"""
import argparse, json, os, shutil, subprocess, sys

PLATFORM = "x86_64-unknown-linux-gnu"
LICENCE_PREFIXES = ("LICENSE", "LICENCE", "COPYING", "NOTICE", "UNLICENSE", "COPYRIGHT")


def metadata(folder):
    """cargo's metadata of the workspace in `folder` (run there: a kit's .cargo/config.toml
    points cargo at its vendor/, offline). `cargo metadata` reads every package's manifest,
    dev-dependencies' too, which a build downloads none of: offline first (what cargo's cache
    holds), else letting cargo fetch what is missing (a fresh clone with an empty cache)."""
    command = [os.environ.get("CARGO", "cargo"), "metadata", "--format-version", "1", "--locked",
               "--filter-platform", PLATFORM]
    out = subprocess.run(command + ["--offline"], cwd=folder, capture_output=True, timeout=300)
    if out.returncode != 0:
        out = subprocess.run(command, cwd=folder, check=True, capture_output=True, timeout=1800)
    return json.loads(out.stdout)


def reachable(meta, roots, kinds):
    """The registry packages `roots` depend on through dependencies of `kinds` (None: normal,
    "build"), transitively."""
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    seen, todo = set(), list(roots)
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            if any(k["kind"] in kinds for k in dep["dep_kinds"]) and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
    return [packages[i] for i in seen if packages[i]["source"] is not None]


def linked(meta, root_name):
    """The packages `root_name` links: its normal dependencies, transitively."""
    roots = [p["id"] for p in meta["packages"] if p["name"] == root_name and p["source"] is None]
    if not roots:
        sys.exit(f"licences: no package {root_name} in the workspace")
    return reachable(meta, roots, (None,))


def compiled(meta):
    """Every registry package a workspace build compiles (normal and build dependencies)."""
    return reachable(meta, meta["workspace_members"], (None, "build"))


def licence_files(package):
    folder = os.path.dirname(package["manifest_path"])
    return sorted(f for f in os.listdir(folder)
                  if f.upper().startswith(LICENCE_PREFIXES) and os.path.isfile(os.path.join(folder, f)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--workspace", default=".", help="the build tool's workspace folder")
    parser.add_argument("--package", default="chartreg-build")
    parser.add_argument("--kit")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows, missing = [], []

    for p in sorted(linked(metadata(args.workspace), args.package), key=lambda p: (p["name"], p["version"])):
        files = licence_files(p)
        if not files and not p.get("license"):
            missing.append(f"{p['name']} {p['version']}")
            continue
        dest = os.path.join(args.out, f"{p['name']}-{p['version']}")
        os.makedirs(dest, exist_ok=True)
        for f in files:
            shutil.copyfile(os.path.join(os.path.dirname(p["manifest_path"]), f), os.path.join(dest, f))
        where = ", ".join(f"{p['name']}-{p['version']}/{f}" for f in files) or "(the expression only)"
        rows.append(("bin/chartreg-build", p["name"], p["version"], p.get("license") or p.get("license_file"), where))

    if args.kit:
        for p in sorted(compiled(metadata(args.kit)), key=lambda p: (p["name"], p["version"])):
            files = licence_files(p)
            if not files and not p.get("license"):
                missing.append(f"{p['name']} {p['version']} (kit)")
                continue
            rel = os.path.relpath(os.path.dirname(p["manifest_path"]), args.kit)
            where = ", ".join(f"kit/{rel}/{f}" for f in files) or "(the expression only)"
            rows.append(("kit", p["name"], p["version"], p.get("license") or p.get("license_file"), where))

    if missing:
        sys.exit("licences: no licence expression or file for " + ", ".join(missing))
    with open(os.path.join(args.out, "THIRD-PARTY.md"), "w") as f:
        f.write("# Third-party crates in this archive\n\n"
                "Every crate the build tool links (its licence files copied beside this file) and every\n"
                "crate the server kit compiles (its licence files in kit/vendor/). chartreg itself is\n"
                "Apache-2.0 (LICENSE at the top of the archive). Written by scripts/licences.py from\n"
                "`cargo metadata`.\n\n"
                "| in | crate | version | licence | texts |\n|---|---|---|---|---|\n")
        for row in rows:
            f.write("| " + " | ".join(str(c) for c in row) + " |\n")
    print(f"[licences] {len(rows)} crates in {args.out}/THIRD-PARTY.md", file=sys.stderr)


if __name__ == "__main__":
    main()
