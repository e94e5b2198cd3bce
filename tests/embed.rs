//! The build-time content switch: `CHARTREG_ASSETS=DIR cargo build` embeds another folder, files
//! added to or removed from it are picked up by the next build, and a binary whose embedded
//! content is corrupt refuses to start, naming the file.
//!
//! Builds go to their own target folder (`target/embed-test`) so that they never disturb the
//! binary the other tests run.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use chartreg::oci::layout::{Files, ImageManifest, LayoutBuilder};
use chartreg::oci::media_type;

fn layout(name: &str, payload: &[u8]) -> Files {
    let mut layout = LayoutBuilder::new(name);
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/octet-stream", payload.to_vec());
    let manifest = ImageManifest::new(config, vec![layer]);
    let d = layout.manifest(media_type::OCI_MANIFEST, &manifest);
    layout.list(d, Some("v1"));
    layout.finish()
}

fn write(dir: &Path, files: &Files) {
    for (path, data) in files {
        let file = dir.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, data).unwrap();
    }
}

/// Builds the binary embedding `assets`; returns its path.
fn build_with(assets: &Path) -> PathBuf {
    let target = common::root().join("target/embed-test");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "build",
            "--locked",
            "--quiet",
            "--bin",
            "chartreg",
            "--target-dir",
        ])
        .arg(&target)
        .env("CHARTREG_ASSETS", assets)
        .current_dir(common::root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("debug/chartreg")
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
    let dir = tempfile::tempdir().unwrap();
    let one = layout("demo/one", b"first payload");
    write(dir.path(), &one);

    let bin = build_with(dir.path());
    assert_eq!(listed(&bin), ["demo/one:v1"]);

    // Served from the binary, byte for byte.
    let server = common::Process::start_with(&bin, &[]);
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
    write(dir.path(), &layout("demo/two", b"second payload"));
    let bin = build_with(dir.path());
    assert_eq!(listed(&bin), ["demo/one:v1", "demo/two:v1"]);

    // A folder removed: the next build drops it.
    fs::remove_dir_all(dir.path().join("demo/two")).unwrap();
    let bin = build_with(dir.path());
    assert_eq!(listed(&bin), ["demo/one:v1"]);

    // A blob whose bytes no longer match its name: the binary refuses to start.
    let tampered = dir.path().join(blob_path);
    fs::write(&tampered, b"first pay1oad").unwrap();
    let bin = build_with(dir.path());
    let out = Command::new(&bin)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(blob_path.as_str()) && stderr.contains("content has digest"),
        "{stderr}"
    );
}
