//! Binaries built with other content through the build-time switch `CHARTREG_ASSETS=DIR`:
//! files added to or removed from the folder are picked up by the next build, and the content is
//! served from what the build found it to be (build-time facts); a binary whose embedded content
//! is corrupt refuses to start, naming the file (and `chartreg verify` names it). Here: the
//! builders the other modules share, and those tests. `refused`: content the build cannot
//! serve. `linked`: files of 1 MiB and more linked in as objects (in `.lrodata`) and served
//! byte for byte. `downloads`: large downloads, many at once, and through a graceful shutdown.
//! `addons`: `addons-config` names the versions Helm 3 and 4 pull without `--version`.
//! `chart_images`: the images each chart version needs, listed by `ls` and checked at start-up.
//!
//! Builds run one at a time, with the profile this test was compiled with, and write their
//! binary into a target folder of their own (`target/embed-test`), from which each is copied
//! out before use, so that they never disturb the binary the other tests run or each other.
//! Their intermediate artifacts are the checkout's (cargo's build folder, where this test was
//! compiled): the server's dependencies are compiled already, and only the crate that embeds
//! the content compiles, as a team's build does. (The checkout's own `chartreg` keeps its file:
//! the linker writes a new one; the next build in the checkout recompiles that crate alone.)
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;

mod addons;
mod chart_images;
mod downloads;
mod linked;
mod refused;
mod verification;

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::oci::media_type;
use chartreg_core::tree::{Files, LayoutBuilder};

fn layout(name: &str, payload: &[u8]) -> Files {
    let mut layout = LayoutBuilder::new(name);
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/octet-stream", payload.to_vec());
    let manifest = ImageManifest::new(config, vec![layer]);
    let d = layout.manifest(media_type::OCI_MANIFEST, &manifest);
    layout.list(d, Some("v1"));
    layout.into_files().unwrap()
}

fn write(dir: &Path, files: &Files) {
    for (path, data) in files {
        let file = dir.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, data).unwrap();
    }
}

static BUILDS: Mutex<()> = Mutex::new(());

/// Builds the binary embedding `assets`; returns the path of a copy of it beside `assets`.
fn build_with(assets: &Path) -> PathBuf {
    build_with_env(assets, &[])
}

fn build_with_env(assets: &Path, env: &[(&str, &str)]) -> PathBuf {
    let _one_at_a_time = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    build_now(assets, env)
}

/// Builds now: the caller holds `BUILDS`.
fn build_now(assets: &Path, env: &[(&str, &str)]) -> PathBuf {
    build_logged(assets, env).0
}

/// Builds now (the caller holds `BUILDS`); returns the copy of the binary and what cargo
/// printed (the build script's warnings among it).
fn build_logged(assets: &Path, env: &[(&str, &str)]) -> (PathBuf, String) {
    let target = common::root().join("target/embed-test");
    let (build_dir, profile) = build_folder();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    common::without_cargos_test_variables(&mut cmd)
        .args(["build", "--locked", "--bin", "chartreg"]);
    if profile == "release" {
        cmd.arg("--release");
    }
    let out = cmd
        .arg("--target-dir")
        .arg(&target)
        .env("CARGO_BUILD_BUILD_DIR", build_dir)
        .env("CHARTREG_ASSETS", assets)
        .env_remove("CHARTREG_LINK_THRESHOLD")
        .envs(env.iter().copied())
        .current_dir(common::root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let name = assets.file_name().unwrap().to_string_lossy();
    let copy = assets.with_file_name(format!("chartreg-{name}"));
    fs::copy(target.join(profile).join("chartreg"), &copy).unwrap();
    (copy, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Cargo's build folder this test was compiled in, and the profile's folder name in it
/// (`release` or `debug`): the test runs from `BUILD_DIR/PROFILE/deps/`.
fn build_folder() -> (PathBuf, String) {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test runs from BUILD_DIR/PROFILE/deps");
    let profile = profile_dir
        .file_name()
        .expect("a profile folder")
        .to_string_lossy()
        .into_owned();
    assert!(
        profile == "release" || profile == "debug",
        "{}: not in cargo's build folder",
        exe.display()
    );
    let build_dir = profile_dir.parent().expect("a build folder").to_owned();
    (build_dir, profile)
}

fn listed(bin: &Path) -> Vec<String> {
    let out = Command::new(bin).args(["ls", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["repository"].as_str().unwrap(),
                r["tag"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn other_content_is_embedded_at_build_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("assets");
    let dir = dir.as_path();
    let one = layout("demo/one", b"first payload");
    write(dir, &one);

    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1"]);
    let first = common::content_digest_of(&bin);
    assert_eq!(first, common::folder_content_digest(dir));

    // Served from the binary, byte for byte, from what the build found the content to be.
    let server = common::Process::start_with(&bin, &[]);
    assert_checked_at_build(&server);
    let (blob_path, blob) = one
        .iter()
        .find(|(_, b)| b.as_slice() == b"first payload")
        .unwrap();
    let digest = format!("sha256:{}", blob_path.rsplit('/').next().unwrap());
    let out = Command::new("curl")
        .args([
            "-sS",
            "--fail",
            &format!("{}/v2/demo/one/blobs/{digest}", server.url()),
        ])
        .output()
        .unwrap();
    assert_eq!(&out.stdout, blob);
    drop(server);

    // A folder added: the next build embeds it.
    write(dir, &layout("demo/two", b"second payload"));
    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1", "demo/two:v1"]);
    let second = common::content_digest_of(&bin);
    assert_ne!(second, first, "other content, another content digest");
    assert_eq!(second, common::folder_content_digest(dir));

    // A folder removed: the next build drops it.
    fs::remove_dir_all(dir.join("demo/two")).unwrap();
    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1"]);
    assert_eq!(
        common::content_digest_of(&bin),
        first,
        "the same content, the same digest"
    );

    // A blob whose bytes no longer match its name: the binary refuses to start.
    let tampered = dir.join(blob_path);
    fs::write(&tampered, b"first pay1oad").unwrap();
    refuses_to_start(&build_with(dir), blob_path);
}

/// The server built its registry from the build's facts (none were stale).
fn assert_checked_at_build(server: &common::Process) {
    let log = server.log();
    assert!(log.contains("content checked at build time"), "{log}");
    assert!(!log.contains("build-time facts"), "{log}");
}

/// `bin` will not serve: it exits 1 naming `path`, whose content does not match its name.
fn refuses_to_start(bin: &Path, path: &str) {
    refuses_to_start_with(
        bin,
        path,
        "content has digest",
        "not the digest it is stored under",
    );
}

/// `bin` will not serve: it exits 1 naming `path` and saying `why`; `chartreg verify` names it
/// too, saying `verify_says`.
fn refuses_to_start_with(bin: &Path, path: &str, why: &str, verify_says: &str) {
    let out = Command::new(bin)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(path) && stderr.contains(why), "{stderr}");
    // `chartreg verify` names the file too.
    let out = Command::new(bin).arg("verify").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "verify: {stderr}");
    assert!(
        stderr.contains(path) && stderr.contains(verify_says),
        "verify: {stderr}"
    );
}
