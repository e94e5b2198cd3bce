//! `chartreg-build diff OLD NEW` between two real builds from the kit `make build` writes: OLD
//! a server binary (`build`), NEW an image layout (`image`); one chart upgraded (1.0.0 to
//! 1.1.0), one chart rebuilt under the same version (changed), one image removed, one added,
//! one kept. Every line is checked against what each server lists (`ls --json`; NEW's is read
//! from the listing its image carries, never by running it), the JSON form and the exit
//! statuses (1: changes, 0: none, 2: a side that is no build); NEW is then copied by skopeo to
//! a real registry (CNCF distribution) and diffed from there by tag and by digest, and, signed,
//! with its cosign key. `tests/diff_reads` holds the hostile images.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn tool() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The folder cargo builds into (`target/`), where `make build` writes the kit.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .parent()
        .and_then(Path::parent)
        .expect("target/release/chartreg-build")
        .to_owned()
}

/// A content file in `dir`: the charts in `charts`, and each layout (the sample image) as a
/// repository.
fn content(dir: &Path, charts: &Path, repositories: &[&str]) -> PathBuf {
    let sample = common::root().join("images/sample");
    let mut yaml = format!(
        "charts:\n  prefix: charts\n  from: [{}]\nlayouts:\n",
        charts.display()
    );
    for r in repositories {
        yaml.push_str(&format!(
            "  - from: {}\n    repository: {r}\n",
            sample.display()
        ));
    }
    let path = dir.join("content.yaml");
    fs::write(&path, yaml).unwrap();
    path
}

/// A cosign key (`cosign.key`, password `pw`) written by PyNaCl; `None` (skipped) when PyNaCl
/// is missing, a failure under `CI=true`.
fn cosign_key(dir: &Path) -> Option<PathBuf> {
    let root = common::root();
    let made = Command::new("python3")
        .env("PYTHONPATH", root.join(".tools/python"))
        .arg(root.join("tests/fixtures/signing/cosign.py"))
        .arg("key")
        .arg(dir)
        .arg("pw")
        .output()
        .expect("python3 runs");
    if !made.status.success() {
        assert!(
            !common::ci(),
            "cosign.py key failed (CI=true: scripts/install-tools.sh installs PyNaCl): {}",
            text(&made.stderr)
        );
        eprintln!("SKIPPED: signing (PyNaCl is missing)");
        return None;
    }
    Some(dir.join("cosign.key"))
}

/// The server binary in the image layout `layout` (its last layer's `chartreg`), written to
/// `out`.
fn server_of(layout: &Path, out: &Path) -> PathBuf {
    let json = |digest: &Value| -> Value {
        let hex = digest.as_str().unwrap().trim_start_matches("sha256:");
        serde_json::from_slice(&fs::read(layout.join("blobs/sha256").join(hex)).unwrap()).unwrap()
    };
    let index: Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest = json(&index["manifests"][0]["digest"]);
    let layer = manifest["layers"].as_array().unwrap().last().unwrap()["digest"].clone();
    let hex = layer
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_owned();
    let file = fs::File::open(layout.join("blobs/sha256").join(hex)).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some("chartreg") {
            let mut written = fs::File::create(out).unwrap();
            std::io::copy(&mut entry, &mut written).unwrap();
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(out, fs::Permissions::from_mode(0o755)).unwrap();
            return out.to_owned();
        }
    }
    panic!("no chartreg in {}", layout.display());
}

fn run(args: &[&str]) -> Output {
    tool().args(args).output().expect("chartreg-build runs")
}

/// What the server `binary` lists: (repository, tag) -> its row.
fn listed(binary: &Path) -> std::collections::BTreeMap<(String, String), Value> {
    let out = Command::new(binary)
        .args(["ls", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.into_iter()
        .filter(|r| r["tag"].is_string())
        .map(|r| {
            (
                (
                    r["repository"].as_str().unwrap().to_owned(),
                    r["tag"].as_str().unwrap().to_owned(),
                ),
                r,
            )
        })
        .collect()
}

fn human(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < 4 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", ["B", "KiB", "MiB", "GiB", "TiB"][unit])
}

fn line(sign: &str, row: &Value) -> String {
    format!(
        "{sign} {}:{}  {}  {}  {}  not verified",
        row["repository"].as_str().unwrap(),
        row["tag"].as_str().unwrap(),
        row["kind"].as_str().unwrap(),
        row["digest"].as_str().unwrap(),
        human(row["size"].as_u64().unwrap())
    )
}

#[test]
fn a_diff_of_two_builds_names_every_version_added_removed_and_changed() {
    let target = target_dir();
    let kit = target.join("share/chartreg/kit");
    if !kit.is_dir() {
        assert!(
            !common::ci(),
            "{} is missing (CI=true): `make build` (make test does) writes the kit",
            kit.display()
        );
        eprintln!("SKIPPED: no kit (make build)");
        return;
    }
    let cache = target.join("kit-cache");
    let dir = tempfile::tempdir().unwrap();
    let (old_dir, new_dir) = (dir.path().join("old"), dir.path().join("new"));
    for (side, version, description) in
        [(&old_dir, "1.0.0", "first"), (&new_dir, "1.1.0", "second")]
    {
        let charts = side.join("charts");
        common::chart_folder(&charts, "demo", version);
        let rebuilt = common::chart_folder(&charts, "rebuilt", "1.0.0");
        fs::write(
            rebuilt.join("Chart.yaml"),
            format!("apiVersion: v2\nname: rebuilt\nversion: 1.0.0\ndescription: the {description} build\n"),
        )
        .unwrap();
    }
    let old_config = content(
        &old_dir,
        &old_dir.join("charts"),
        &["images/gone", "images/kept"],
    );
    let new_config = content(
        &new_dir,
        &new_dir.join("charts"),
        &["images/kept", "images/new"],
    );
    let old_bin = dir.path().join("old-chartreg");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let built = run(&[
        "build",
        "--config",
        &s(&old_config),
        "--kit",
        &s(&kit),
        "--cache",
        &s(&cache),
        "--out",
        &s(&old_bin),
    ]);
    assert!(built.status.success(), "build: {}", text(&built.stderr));
    // NEW signed with a cosign key (written by PyNaCl, tests/fixtures/signing/cosign.py): its
    // server names the key as its signer.
    let key = cosign_key(dir.path());
    let signed = key.is_some();
    let new_layout = dir.path().join("new-oci");
    let mut image = tool();
    image.args([
        "image",
        "--config",
        &s(&new_config),
        "--kit",
        &s(&kit),
        "--cache",
        &s(&cache),
        "--out",
        &s(&new_layout),
    ]);
    if let Some(key) = &key {
        image
            .arg("--sign-key")
            .arg(key)
            .args(["--repository", "registry.example/team/chartreg"])
            .env("COSIGN_PASSWORD", "pw");
    }
    let imaged = image.output().unwrap();
    assert!(imaged.status.success(), "image: {}", text(&imaged.stderr));
    // NEW's server, taken out of its image: its binary for the expected lines.
    let new_bin = server_of(&new_layout, &dir.path().join("new-server"));
    if key.is_some() {
        let said = text(&imaged.stdout);
        let fingerprint = said
            .split("signed by key ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("{said}"));
        let sbom = Command::new(&new_bin)
            .args(["ls", "--sbom"])
            .output()
            .unwrap();
        let sbom: Value = serde_json::from_slice(&sbom.stdout).unwrap();
        assert!(
            sbom["packages"][0]["comment"]
                .as_str()
                .unwrap()
                .ends_with(&format!("; its image signed by key {fingerprint}")),
            "{}",
            sbom["packages"][0]
        );
    }

    let out = run(&["diff", &s(&old_bin), &s(&new_layout)]);
    assert_eq!(out.status.code(), Some(1), "changes: {}", text(&out.stderr));
    let (old, new) = (listed(&old_bin), listed(&new_bin));
    let key = |r: &str, t: &str| (r.to_owned(), t.to_owned());
    let mut expected = Vec::new();
    let mut entries: Vec<(String, String, u8, String)> = Vec::new();
    let mut added_bytes = 0;
    let (mut added, mut removed) = (0, 0);
    for ((repository, tag), row) in &new {
        if !old.contains_key(&key(repository, tag)) {
            entries.push((repository.clone(), tag.clone(), 0, line("+", row)));
            added_bytes += row["size"].as_u64().unwrap();
            added += 1;
        }
    }
    for ((repository, tag), row) in &old {
        if !new.contains_key(&key(repository, tag)) {
            entries.push((repository.clone(), tag.clone(), 1, line("-", row)));
            removed += 1;
        }
    }
    let (was, now) = (
        &old[&key("charts/rebuilt", "1.0.0")],
        &new[&key("charts/rebuilt", "1.0.0")],
    );
    assert_ne!(was["digest"], now["digest"]);
    let mut changed = format!(
        "~ charts/rebuilt:1.0.0  chart  {} -> {}",
        was["digest"].as_str().unwrap(),
        now["digest"].as_str().unwrap()
    );
    if was["size"] != now["size"] {
        changed.push_str(&format!(
            "  {} -> {}",
            human(was["size"].as_u64().unwrap()),
            human(now["size"].as_u64().unwrap())
        ));
    }
    added_bytes += now["size"].as_u64().unwrap();
    entries.push(("charts/rebuilt".into(), "1.0.0".into(), 2, changed));
    entries.sort();
    let content_of = |bin: &Path| {
        let o = Command::new(bin)
            .args(["ls", "--content-digest"])
            .output()
            .unwrap();
        text(&o.stdout).trim().to_owned()
    };
    let version_of = |bin: &Path| {
        let o = Command::new(bin).arg("--version").output().unwrap();
        text(&o.stdout).trim().to_owned()
    };
    expected.push(format!(
        "{} ({}, content {}) -> {} ({}, content {})",
        s(&old_bin),
        version_of(&old_bin),
        content_of(&old_bin),
        s(&new_layout),
        version_of(&new_bin),
        content_of(&new_bin)
    ));
    expected.extend(entries.into_iter().map(|e| e.3));
    expected.push(format!(
        "{added} added, {removed} removed, 1 changed; a rollout adds {} ({added_bytes} bytes)",
        human(added_bytes)
    ));
    let printed: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert_eq!(printed, expected);
    // What the content was made to hold: demo upgraded, an image removed, one added, one kept.
    for l in [
        "+ charts/demo:1.1.0  chart",
        "- charts/demo:1.0.0  chart",
        "- images/gone:v1  ",
        "+ images/new:v1  ",
    ] {
        assert!(
            printed.iter().any(|p| p.starts_with(l)),
            "{l}: {printed:#?}"
        );
    }
    assert!(
        !printed.iter().any(|p| p.contains("images/kept")),
        "{printed:#?}"
    );

    let json = run(&["diff", "--format", "json", &s(&old_bin), &s(&new_layout)]);
    assert_eq!(json.status.code(), Some(1));
    let changes: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(changes["added"].as_array().unwrap().len(), added);
    assert_eq!(changes["removed"].as_array().unwrap().len(), removed);
    assert_eq!(changes["changed"][0]["new"]["digest"], now["digest"]);
    assert_eq!(changes["bytesAdded"], added_bytes);
    assert_eq!(changes["new"]["contentDigest"], content_of(&new_bin));

    let same = run(&["diff", &s(&new_bin), &s(&new_layout)]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
    assert!(
        text(&same.stdout)
            .ends_with("no change: both serve the same versions, content and server\n"),
        "{}",
        text(&same.stdout)
    );
    // NEW where a cluster pulls it: in a registry (CNCF distribution), by tag and by digest.
    if let (Some(registry), Some(skopeo)) = (common::Distribution::start(), common::tool("skopeo"))
    {
        let index: Value =
            serde_json::from_slice(&fs::read(new_layout.join("index.json")).unwrap()).unwrap();
        let top = &index["manifests"][0];
        let tag = top["annotations"]["org.opencontainers.image.ref.name"]
            .as_str()
            .unwrap();
        let at = format!("{}/team/chartreg", registry.addr);
        let copied = Command::new(&skopeo)
            .args(["copy", "--quiet", "--dest-tls-verify=false"])
            .arg(format!("oci:{}:{tag}", s(&new_layout)))
            .arg(format!("docker://{at}:{tag}"))
            .output()
            .unwrap();
        assert!(copied.status.success(), "skopeo: {}", text(&copied.stderr));
        let by_tag = run(&["diff", &format!("{at}:{tag}"), &s(&new_bin)]);
        assert_eq!(by_tag.status.code(), Some(0), "{}", text(&by_tag.stderr));
        // Signed (by `image --sign-key`), its signature copied beside it: verified from the
        // layout and from the registry (its `.sig` tag) with the public key.
        if signed {
            let sig = format!("{}.sig", top["digest"].as_str().unwrap().replace(':', "-"));
            let copied = Command::new(&skopeo)
                .args(["copy", "--quiet", "--dest-tls-verify=false"])
                .arg(format!("oci:{}:{sig}", s(&new_layout)))
                .arg(format!("docker://{at}:{sig}"))
                .output()
                .unwrap();
            assert!(copied.status.success(), "skopeo: {}", text(&copied.stderr));
            let public = dir.path().join("cosign.pub");
            let verified = run(&[
                "diff",
                "--key",
                &s(&public),
                &s(&new_layout),
                &format!("{at}:{tag}"),
            ]);
            assert_eq!(
                verified.status.code(),
                Some(0),
                "{}",
                text(&verified.stderr)
            );
            let said = text(&verified.stdout);
            assert!(said.contains("old: signed by key sha256:"), "{said}");
            assert!(said.contains("new: signed by key sha256:"), "{said}");
        }
        let by_digest = format!("{at}@{}", top["digest"].as_str().unwrap());
        let pulled = run(&["diff", &s(&old_bin), &by_digest]);
        assert_eq!(pulled.status.code(), Some(1), "{}", text(&pulled.stderr));
        let pulled: Vec<String> = text(&pulled.stdout).lines().map(str::to_owned).collect();
        assert_eq!(
            pulled[1..],
            printed[1..],
            "the same changes as from the layout"
        );
        assert!(pulled[0].contains(&by_digest), "{}", pulled[0]);
        let wrong = format!("{at}@sha256:{}", "0".repeat(64));
        let missing = run(&["diff", &wrong, &s(&new_bin)]);
        assert_eq!(missing.status.code(), Some(2));
        assert!(
            text(&missing.stderr).contains(&wrong),
            "{}",
            text(&missing.stderr)
        );
    }
    let bad = run(&["diff", &s(&old_config), &s(&new_layout)]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains(&format!("{}: not executable", s(&old_config))),
        "{}",
        text(&bad.stderr)
    );
}
