//! The container image `make image` built (`make test` builds it before the tests), read from
//! its OCI image layout `target/image/oci` without an engine: its config (user, entrypoint,
//! port, labels); its tag (`target/image/tag`), which names the version and the content digest
//! of the binary inside; the layer the Containerfile adds holds only `/chartreg`, a static
//! binary; and its root file system, run as uid 65532 on a read-only root (`unshare` and
//! `chroot`, as containers run it), serves charts that Helm 3 and 4 pull. `tests/make.rs`
//! builds more images, with other tags and labels.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

fn layout() -> Option<PathBuf> {
    let dir = common::root().join("target/image/oci");
    if dir.join("index.json").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "target/image/oci is missing: `make image` (make test does) builds it before the tests"
    );
    eprintln!("skipping: no image built (make image)");
    None
}

fn blob(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// The tag `make image` wrote beside the layout.
fn tag(layout: &Path) -> String {
    let file = layout.with_file_name("tag");
    let tag = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    tag.trim_end().to_owned()
}

/// The image's manifest and config.
fn manifest_and_config(layout: &Path) -> (Value, Value) {
    let index = json(&layout.join("index.json"));
    let entry = &index["manifests"][0];
    assert_eq!(
        entry["annotations"]["org.opencontainers.image.ref.name"],
        tag(layout),
        "tagged with the tag written beside it"
    );
    let manifest = json(&blob(layout, entry["digest"].as_str().unwrap()));
    let config = json(&blob(
        layout,
        manifest["config"]["digest"].as_str().unwrap(),
    ));
    (manifest, config)
}

/// The files of a layer (a tar, gzip or not): path -> (is a regular file, mode).
fn layer_files(path: &Path) -> Vec<(String, bool, u32)> {
    let data = fs::read(path).unwrap();
    let reader: Box<dyn std::io::Read> = if data.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(data.as_slice()))
    } else {
        Box::new(data.as_slice())
    };
    let mut archive = tar::Archive::new(reader);
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let path = e
                .path()
                .unwrap()
                .to_string_lossy()
                .trim_start_matches("./")
                .to_owned();
            (
                path,
                e.header().entry_type().is_file(),
                e.header().mode().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_image_config_and_its_layer() {
    let Some(layout) = layout() else { return };
    let (manifest, config) = manifest_and_config(&layout);
    let c = &config["config"];
    assert_eq!(c["User"], "65532:65532");
    assert_eq!(c["Entrypoint"], serde_json::json!(["/chartreg"]));
    assert_eq!(c["Cmd"], serde_json::json!(["serve"]));
    assert!(c["ExposedPorts"]["5000/tcp"].is_object(), "{c}");
    let labels = &c["Labels"];
    assert_eq!(labels["org.opencontainers.image.version"], tag(&layout));
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    for label in ["created", "title"] {
        let value = labels[format!("org.opencontainers.image.{label}")]
            .as_str()
            .unwrap_or("");
        assert!(!value.is_empty(), "label {label}: {labels}");
    }
    // Only when known: a commit (from a clean work tree), a URL (never a local path).
    if let Some(revision) = labels["org.opencontainers.image.revision"].as_str() {
        assert!(
            revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()),
            "{labels}"
        );
    }
    if let Some(source) = labels["org.opencontainers.image.source"].as_str() {
        assert!(
            source.starts_with("http://") || source.starts_with("https://"),
            "{labels}"
        );
    }
    assert!(
        labels["org.opencontainers.image.created"]
            .as_str()
            .unwrap()
            .ends_with('Z'),
        "{labels}"
    );
    assert_eq!(config["architecture"], "amd64");
    // The last layer is what the Containerfile adds: /chartreg and nothing else.
    let layers = manifest["layers"].as_array().unwrap();
    let added = layer_files(&blob(
        &layout,
        layers.last().unwrap()["digest"].as_str().unwrap(),
    ));
    let files: Vec<&(String, bool, u32)> = added.iter().filter(|(_, file, _)| *file).collect();
    assert_eq!(files.len(), 1, "{added:?}");
    assert_eq!(files[0].0, "chartreg");
    assert_eq!(files[0].2 & 0o111, 0o111, "executable");
}

/// The image's root file system, unpacked by GNU tar (gzip or not, as tar finds it). A tar
/// process writes the files, not this one: a file this test process held open for writing
/// would be inherited by every child another test thread forks meanwhile, and running it
/// would fail with ETXTBSY until those children exec.
fn unpack(layout: &Path, into: &Path) {
    let (manifest, _) = manifest_and_config(layout);
    for layer in manifest["layers"].as_array().unwrap() {
        let blob = blob(layout, layer["digest"].as_str().unwrap());
        let out = Command::new("tar")
            .arg("-xf")
            .arg(&blob)
            .arg("-C")
            .arg(into)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::describe(&out));
    }
}

#[test]
fn the_binary_is_static() {
    let Some(layout) = layout() else { return };
    let Some(readelf) = common::tool("readelf") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    unpack(&layout, root.path());
    let out = Command::new(readelf)
        .args(["--program-headers", "--dynamic"])
        .arg(root.path().join("chartreg"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("program interpreter"),
        "a dynamic loader is needed: {text}"
    );
    assert!(
        !text.contains("(NEEDED)"),
        "a shared library is needed: {text}"
    );
}

#[test]
fn the_tag_names_the_content_of_the_binary_inside() {
    let Some(layout) = layout() else { return };
    let (_, config) = manifest_and_config(&layout);
    let root = tempfile::tempdir().unwrap();
    unpack(&layout, root.path());
    let digest = common::content_digest_of(&root.path().join("chartreg"));
    assert_eq!(
        config["config"]["Labels"]["io.chartreg.content.digest"],
        digest.as_str()
    );
    let tag = tag(&layout);
    match std::env::var("IMAGE_TAG") {
        Ok(chosen) => assert_eq!(tag, chosen),
        Err(_) => {
            let hex = digest.strip_prefix("sha256:").unwrap();
            assert_eq!(tag, format!("{}-{}", env!("CARGO_PKG_VERSION"), &hex[..12]));
        }
    }
}

/// The image's root run as a container runs it: a new mount namespace, the root bind-mounted
/// read-only, chroot into it as 65532:65532.
fn run_image(root: &Path) -> (Child, String) {
    let script = r#"set -e
mount --bind "$1" "$1"
mount -o remount,bind,ro "$1"
exec chroot --userspec=65532:65532 "$1" /chartreg serve --listen 127.0.0.1:0 --shutdown-delay 0s"#;
    // A process group of its own: chartreg, once it runs as 65532, is no longer killed with
    // its parent (a change of user clears the parent-death signal), so the group is.
    let mut child = Command::new("unshare")
        .args([
            "--mount",
            "--fork",
            "--kill-child",
            "--",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(root)
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("unshare runs");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut log = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.split(" on http://").nth(1) {
                let _ = tx.send(Ok(addr.split_whitespace().next().unwrap().to_owned()));
            }
            log.push_str(&line);
            log.push('\n');
        }
        let _ = tx.send(Err(log));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(addr)) => (child, addr),
        other => {
            stop(&mut child);
            panic!("the image did not start: {other:?}");
        }
    }
}

/// Kills the image's whole process group, and waits for its leader.
fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
}

#[test]
fn the_image_serves_charts_to_helm_as_nonroot_on_a_read_only_root() {
    let Some(layout) = layout() else { return };
    for tool in ["unshare", "chroot", "mount"] {
        if common::tool(tool).is_none() {
            return;
        }
    }
    let root = tempfile::tempdir().unwrap();
    unpack(&layout, root.path());
    let (mut child, addr) = run_image(root.path());
    let mut pulled = Vec::new();
    for name in ["helm3", "helm4"] {
        let Some(helm) = common::tool(name) else {
            continue;
        };
        let home = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(&helm);
        cmd.args([
            "pull",
            &format!("oci://{addr}/charts/hello"),
            "--version",
            "1.0.0",
            "--plain-http",
            "--destination",
        ])
        .arg(home.path());
        common::isolate_helm(&mut cmd, home.path());
        let out = common::output_of(&mut cmd, name);
        pulled.push((
            name,
            out.status.success(),
            common::describe(&out),
            home.path().join("hello-1.0.0.tgz").is_file(),
        ));
    }
    stop(&mut child);
    for (name, ok, out, file) in pulled {
        assert!(ok && file, "{name} pull from the image: {out}");
    }
}
