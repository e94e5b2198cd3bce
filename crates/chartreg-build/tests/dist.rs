//! The release archive as a build machine without internet uses it: `make dist` writes
//! `target/dist/chartreg-build-VERSION-ARCH-linux.tar.xz` (`make test` does, before the tests;
//! `CHARTREG_DIST` names another), which is unpacked outside the source tree; then, with the
//! network off (`unshare -n`) and an empty `CARGO_HOME`, `init` writes a content repository and
//! what the tool cannot build (a platform the server is not built for, a tool without its kit)
//! is refused with what to do, before anything compiles. What the archive holds beside the tool:
//! the sums, the deploy chart (installed with Helm 3 and 4), the licences, a kit filtered to
//! Linux, and the source release it was made from.
//!
//! The archive's cold compile (every dependency from the kit's vendored source, offline, with an
//! empty `CARGO_HOME`) is the builder image's warm-up (scripts/make-builder-image.sh, which
//! `make test` runs before the tests, from this archive): builder_image.rs checks what it
//! compiled, and a team's builds, the image and the static binary from that cache. It is not
//! compiled a second time here.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use common::{chart_folder, ci, compiled, describe, root};
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The release archive `make dist` wrote, if there is one (under `CI=true` there must be).
fn archive() -> Option<PathBuf> {
    let arch = std::env::consts::ARCH;
    let path = std::env::var_os("CHARTREG_DIST").map_or_else(
        || {
            root().join(format!(
                "target/dist/chartreg-build-{}-{arch}-linux.tar.xz",
                env!("CARGO_PKG_VERSION")
            ))
        },
        PathBuf::from,
    );
    if path.is_file() {
        return Some(path);
    }
    assert!(
        !ci(),
        "{} is missing: `make dist` (make test does) writes it before the tests",
        path.display()
    );
    eprintln!("skipping: no release archive ({})", path.display());
    None
}

/// A tool on the PATH, required under `CI=true`.
fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    assert!(found.is_some() || !ci(), "{name} is not installed");
    found
}

/// The real cargo and rustc (not rustup's proxies, which need a home of their own), so that the
/// build machine below has nothing from this one's cargo folders.
fn toolchain() -> (PathBuf, PathBuf) {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc runs");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (sysroot.join("bin/cargo"), sysroot.join("bin/rustc"))
}

/// A build machine: commands run with no network, an empty cargo home, and a home of their own.
struct Machine {
    dir: tempfile::TempDir,
    tool: PathBuf,
    unshare: PathBuf,
}

impl Machine {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `chartreg-build ARGS`, offline.
    fn run(&self, args: &[&str]) -> Output {
        let (cargo, rustc) = toolchain();
        let mut cmd = Command::new(&self.unshare);
        cmd.arg("-n")
            .arg(&self.tool)
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.path("home"))
            .env("CARGO_HOME", self.path("cargo-home"))
            .env("CARGO", cargo)
            .env("RUSTC", rustc);
        cmd.output().expect("unshare runs")
    }
}

#[test]
fn the_release_archive_starts_a_content_repository_offline_and_refuses_what_it_cannot_build() {
    let Some(archive) = archive() else { return };
    let (Some(unshare), Some(tar)) = (tool("unshare"), tool("tar")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    assert!(!dir.path().starts_with(root().canonicalize().unwrap()));
    let out = Command::new(tar)
        .arg("xf")
        .arg(&archive)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let name = format!(
        "chartreg-build-{}-{}-linux",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    );
    let build_tool = dir.path().join(&name).join("bin/chartreg-build");
    assert!(build_tool.is_file(), "the archive holds bin/chartreg-build");
    fs::create_dir_all(dir.path().join("cargo-home")).unwrap();
    fs::create_dir_all(dir.path().join("home")).unwrap();
    let machine = Machine {
        dir,
        tool: build_tool,
        unshare,
    };

    // Offline indeed: nothing answers outside this machine.
    let probe = Command::new(&machine.unshare)
        .args(["-n", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/1"])
        .output()
        .unwrap();
    assert!(!probe.status.success(), "no network in the namespace");

    // 1. A new content repository, with a package and a folder whose version starts with `v`.
    let init = machine.run(&["init", "team"]);
    assert!(init.status.success(), "{}", describe(&init));
    let said = String::from_utf8_lossy(&init.stdout);
    assert!(
        said.contains("next:") && said.contains("chartreg-build build"),
        "{said}"
    );
    let team = machine.path("team");
    fs::copy(
        root().join("charts/hello-1.0.0.tgz"),
        team.join("charts/hello-1.0.0.tgz"),
    )
    .unwrap();
    chart_folder(&team.join("charts"), "tiller-free", "v2.0.0");

    // 2. Refused with what to do, compiling nothing: a platform the server is not built for; a
    //    tool without its kit.
    let refused = machine.run(&[
        "build",
        "--config",
        "team/content.yaml",
        "--cache",
        "cache",
        "--platform",
        "linux/s390x",
    ]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("linux/s390x") && said.contains("linux/amd64"),
        "{said}"
    );
    assert_eq!(compiled(&refused), Vec::<String>::new(), "{said}");
    assert!(!team.join("chartreg").exists(), "no binary written");
    let lone = machine.path("lone/bin");
    fs::create_dir_all(&lone).unwrap();
    fs::copy(&machine.tool, lone.join("chartreg-build")).unwrap();
    let kitless = Machine {
        dir: tempfile::tempdir().unwrap(),
        tool: lone.join("chartreg-build"),
        unshare: machine.unshare.clone(),
    };
    fs::create_dir_all(kitless.path("cargo-home")).unwrap();
    let out = kitless.run(&[
        "build",
        "--config",
        team.join("content.yaml").to_str().unwrap(),
        "--assets",
        kitless.path("assets").to_str().unwrap(),
        "--out",
        kitless.path("chartreg").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no server kit") && said.contains("share/chartreg/kit"),
        "{said}"
    );
    assert!(!kitless.path("chartreg").exists(), "no binary written");
}

/// The values file `init` writes with every commented key uncommented (a key line is `#`, its
/// indentation, then `name:`).
fn uncommented(values: &str) -> String {
    values
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest)
                if rest.trim_start().split_once(':').is_some_and(|(key, _)| {
                    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric())
                }) =>
            {
                rest.to_owned()
            }
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the archive holds beside the tool and the kit, as a team receives it: a SHA256SUMS
/// every file checks against; the deploy chart, which Helm 3 and 4 install (client-side: there
/// is no cluster here) with the values file `init` writes, as written and with every key it
/// shows uncommented (the chart's schema refuses a key it does not know); the licences of every
/// crate the tool links and the kit compiles; a kit holding only what a Linux build compiles
/// (the crates for other systems are stubs); under 25 MiB. The source release beside it holds
/// no `.git` and no build output, and the kit made from it unpacked (a tree without git) is
/// the archive's, file for file.
#[test]
fn the_archive_holds_the_chart_the_licences_and_its_sums() {
    let Some(archive) = archive() else { return };
    let (Some(tar), Some(sha256sum)) = (tool("tar"), tool("sha256sum")) else {
        return;
    };
    let size = fs::metadata(&archive).unwrap().len();
    assert!(
        size < 25 << 20,
        "{} is {size} bytes: 25 MiB at most",
        archive.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let unpack = |archive: &std::path::Path| {
        let out = Command::new(&tar)
            .arg("xf")
            .arg(archive)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
    };
    unpack(&archive);
    let version = env!("CARGO_PKG_VERSION");
    let top = dir.path().join(format!(
        "chartreg-build-{version}-{}-linux",
        std::env::consts::ARCH
    ));

    // Every file is in SHA256SUMS, and checks.
    let sums = fs::read_to_string(top.join("SHA256SUMS")).unwrap();
    let listed: std::collections::BTreeSet<String> = sums
        .lines()
        .map(|l| l.split_once("  ").expect("sha256sum's format").1.to_owned())
        .collect();
    let mut files = std::collections::BTreeSet::new();
    let mut todo = vec![top.clone()];
    while let Some(folder) = todo.pop() {
        for entry in fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.insert(path.strip_prefix(&top).unwrap().display().to_string());
            }
        }
    }
    files.remove("SHA256SUMS");
    assert_eq!(listed, files, "SHA256SUMS lists every file");
    let check = Command::new(&sha256sum)
        .args(["--check", "--quiet", "--strict", "SHA256SUMS"])
        .current_dir(&top)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", describe(&check));

    // The licences: the tool's crates and the kit's, each with its expression.
    let third = fs::read_to_string(top.join("share/chartreg/licenses/THIRD-PARTY.md")).unwrap();
    for (from, krate) in [("bin/chartreg-build", "clap"), ("kit", "actix-web")] {
        assert!(
            third
                .lines()
                .any(|l| l.starts_with(&format!("| {from} | {krate} | ")) && l.contains("MIT")),
            "{krate} of {from}: {third}"
        );
    }
    assert!(
        fs::read_dir(top.join("share/chartreg/licenses"))
            .unwrap()
            .any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("clap-")),
        "the tool's crates' licence texts are copied"
    );

    // The kit: crates for other systems are stubs (a manifest and an empty lib.rs).
    let vendor = top.join("share/chartreg/kit/vendor");
    let mut stubs = Vec::new();
    for entry in fs::read_dir(&vendor).unwrap() {
        let krate = entry.unwrap().path();
        let name = krate.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("windows") || name.starts_with("winapi") {
            let lib = fs::read(krate.join("src/lib.rs")).unwrap_or_default();
            assert!(
                lib.is_empty(),
                "{name} is vendored whole: {} bytes of lib.rs",
                lib.len()
            );
            stubs.push(name);
        }
    }
    assert!(
        !stubs.is_empty(),
        "the lock holds Windows crates, left as stubs"
    );

    // The deploy chart with init's values, under Helm 3 (`template`: its client-side install)
    // and Helm 4 (`install --dry-run=client`).
    let chart = top.join("share/chartreg/chart");
    let team = dir.path().join("team");
    let out = Command::new(top.join("bin/chartreg-build"))
        .arg("init")
        .arg(&team)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let values = fs::read_to_string(team.join("chartreg-values.yaml")).unwrap();
    let all = uncommented(&values);
    assert!(
        all.contains("\nreplicas: 2") && all.contains("\n  enabled: true"),
        "{all}"
    );
    fs::write(dir.path().join("all-values.yaml"), &all).unwrap();
    for helm in ["helm3", "helm4"] {
        let Some(bin) = common::tool(helm) else {
            return;
        };
        for file in [
            team.join("chartreg-values.yaml"),
            dir.path().join("all-values.yaml"),
        ] {
            let home = tempfile::tempdir().unwrap();
            let mut cmd = Command::new(&bin);
            common::isolate_helm(&mut cmd, home.path());
            if helm == "helm3" {
                cmd.arg("template");
            } else {
                cmd.args(["install", "--dry-run=client"]);
            }
            let out = cmd
                .arg("chartreg")
                .arg(&chart)
                .args(["--namespace", "registry", "--values"])
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{helm} with {}: {}",
                file.display(),
                describe(&out)
            );
            let manifest = String::from_utf8_lossy(&out.stdout);
            assert!(
                manifest.contains(&format!("image: \"chartreg:{version}\"")),
                "{helm}: the image and the chart's appVersion: {manifest}"
            );
        }
    }

    // The source release: no .git, no build output; the kit made in it, unpacked, is the
    // archive's (the digest of every file but vendor/, which Cargo.lock decides).
    let source = archive.with_file_name(format!("chartreg-{version}-src.tar.gz"));
    unpack(&source);
    let tree = dir.path().join(format!("chartreg-{version}"));
    for absent in [".git", "target", ".tools"] {
        assert!(
            !tree.join(absent).exists(),
            "the source release holds {absent}"
        );
    }
    let kit = dir.path().join("kit");
    let out = Command::new(tree.join("scripts/make-kit.sh"))
        .arg(&kit)
        .env("VENDOR_FILTERER", filterer())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        fs::read_to_string(kit.join(".digest")).unwrap(),
        fs::read_to_string(top.join("share/chartreg/kit/.digest")).unwrap(),
        "the kit from the source release is the archive's"
    );
}

/// The cargo-vendor-filterer this tree's scripts installed (make dist ran them).
fn filterer() -> PathBuf {
    let out = Command::new(root().join("scripts/cargo-vendor-filterer.sh"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}
