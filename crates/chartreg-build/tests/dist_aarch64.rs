//! The release archive for aarch64 build machines (`make dist-aarch64`:
//! `target/dist/chartreg-build-VERSION-aarch64-linux.tar.xz`, the build tool cross-compiled
//! here), unpacked outside the tree and checked by its sums; its tool, an aarch64 program run
//! under qemu-user (`qemu-aarch64-static`, with Debian's libc6:arm64 installed beside the
//! host's: it links glibc dynamically, as the x86_64 one does; the cross packages' copy, given
//! with `qemu -L /usr/aarch64-linux-gnu`, hangs in pthread_create), starts a content
//! repository (`init`), packs it, and fetches a chart that Helm pushed to CNCF distribution,
//! byte for byte.
//!
//! Run by `make test-dist-aarch64`, not by `make test` (every test here is `#[ignore]`d): the
//! tool's cross compile is a cold compile of its own.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Distribution, Helm, describe, root};

fn archive() -> PathBuf {
    let path = root().join(format!(
        "target/dist/chartreg-build-{}-aarch64-linux.tar.xz",
        env!("CARGO_PKG_VERSION")
    ));
    assert!(
        path.is_file(),
        "{}: `make dist-aarch64` writes it",
        path.display()
    );
    path
}

/// The unpacked tool, run under qemu-user in `dir`.
fn tool(bin: &Path, dir: &Path, args: &[&str]) -> Output {
    let qemu = common::tool("qemu-aarch64-static")
        .expect("qemu-aarch64-static (qemu-user-static; make tools-cross installs it)");
    let out = Command::new(qemu)
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chartreg-build {} (aarch64, under qemu): {}",
        args.join(" "),
        describe(&out)
    );
    out
}

#[test]
#[ignore = "make test-dist-aarch64 writes the aarch64 archive and runs it"]
fn the_aarch64_archive_inits_packs_and_fetches_under_qemu() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("tar")
        .arg("xf")
        .arg(archive())
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let top = dir.path().join(format!(
        "chartreg-build-{}-aarch64-linux",
        env!("CARGO_PKG_VERSION")
    ));
    let sums = Command::new("sha256sum")
        .args(["--check", "--quiet", "SHA256SUMS"])
        .current_dir(&top)
        .output()
        .unwrap();
    assert!(sums.status.success(), "{}", describe(&sums));
    for part in [
        "share/chartreg/kit/KIT_ID",
        "share/chartreg/chart/Chart.yaml",
        "share/chartreg/licenses/THIRD-PARTY.md",
        "LICENSE",
    ] {
        assert!(top.join(part).is_file(), "the archive holds {part}");
    }
    let bin = top.join("bin/chartreg-build");
    let bytes = fs::read(&bin).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    assert_eq!(
        u16::from_le_bytes([bytes[18], bytes[19]]),
        183,
        "EM_AARCH64: the tool is built for aarch64"
    );

    // init, then pack a chart package put into charts/.
    tool(&bin, dir.path(), &["init", "team"]);
    let team = dir.path().join("team");
    assert!(team.join("content.yaml").is_file());
    let hello = common::read(&root().join("charts/hello-1.0.0.tgz"));
    fs::write(team.join("charts/hello-1.0.0.tgz"), &hello).unwrap();
    let packed = tool(
        &bin,
        &team,
        &["pack", "--config", "content.yaml", "--out", "assets"],
    );
    assert!(
        team.join("assets/charts/hello/index.json").is_file(),
        "pack wrote the chart's layout: {}",
        describe(&packed)
    );

    // fetch: a chart Helm pushed to CNCF distribution.
    let registry = Distribution::start().expect("docker-registry: make tools installs it");
    let helm = Helm::new("helm4").expect("helm4: make tools installs it");
    let host = registry.host();
    let package = dir.path().join("hello-1.0.0.tgz");
    fs::write(&package, &hello).unwrap();
    helm.ok(&[
        "push",
        package.to_str().unwrap(),
        &format!("oci://{host}/charts"),
        "--plain-http",
    ]);
    fs::write(
        team.join("charts-list.yaml"),
        format!("chartURLs:\n  - oci://{host}/charts/hello:1.0.0\n"),
    )
    .unwrap();
    let fetched = tool(
        &bin,
        &team,
        &["fetch", "--helm-charts-file", "charts-list.yaml"],
    );
    assert!(
        String::from_utf8_lossy(&fetched.stdout).contains("fetched 1 charts"),
        "{}",
        describe(&fetched)
    );
    assert_eq!(
        common::read(&team.join("fetched/charts/hello-1.0.0.tgz")),
        hello,
        "the chart fetched byte for byte"
    );
    assert!(
        String::from_utf8_lossy(&common::read(&team.join("fetched/chartreg.lock")))
            .contains("manifest: sha256:"),
        "the lock pins it"
    );
}
