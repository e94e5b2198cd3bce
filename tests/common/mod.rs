//! Shared by the integration tests: the committed content, chartreg on a real socket (the
//! release binary as a process, or the library in-process over any content), and the external
//! tools the tests drive, a node's containerd and upstream registries among them.
//!
//! `certs.rs`, `clients.rs`, `content.rs` and `in_process.rs` are used by the build tool's tests
//! too: `crates/chartreg-build/tests/common` includes them by path (one copy of each). They take only
//! `root()` from the module that includes them; the rest (the chartreg binary as a process,
//! packing with the build tool) is this side's own.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use chartreg_core::content::Registry;
use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::tree::LayoutBuilder;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Removes from `cmd`'s environment the variables cargo sets for this test (`CARGO_PKG_NAME`,
/// `CARGO_MANIFEST_DIR` ...), for a cargo it runs that shares the checkout's build folder: build
/// scripts watch some of them (ring's does), and one that differs from the checkout's compile
/// reruns them and recompiles every crate after them there.
pub fn without_cargos_test_variables(cmd: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        let set_by_cargo = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|prefix| text.starts_with(prefix))
            || ["CARGO_TARGET_TMPDIR", "CARGO_PRIMARY_PACKAGE", "OUT_DIR"].contains(&&*text);
        if set_by_cargo {
            cmd.env_remove(&name);
        }
    }
    cmd
}

/// `chartreg-build ARGS` (the build tool's binary); fails the test, showing its output, unless
/// it succeeds.
pub fn chartreg_build(args: &[&str]) -> std::process::Output {
    let out = Command::new(chartreg_build_bin())
        .args(args)
        .output()
        .expect("chartreg-build runs");
    assert!(
        out.status.success(),
        "chartreg-build {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `chartreg-build pack ARGS --out TMP`, and the registry the server would build from it.
pub fn packed(args: &[&str]) -> (tempfile::TempDir, Registry) {
    let out = tempfile::tempdir().expect("temp dir");
    let out_arg = out.path().to_str().expect("UTF-8 temp path").to_owned();
    let mut all = vec!["pack"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", &out_arg]);
    chartreg_build(&all);
    let registry = Registry::from_files(files_in(out.path())).expect("packed content loads");
    (out, registry)
}

/// `chartreg-build pack --config CONFIG --out OUT` finding the images the charts need with
/// `helm`, or with none (an empty PATH and no `CHARTREG_HELM`: statically, as on a machine
/// without Helm, and as `make check` runs); `check`: with `--check`. Its output, whether it
/// succeeded or not.
pub fn pack_images(
    config: &Path,
    out: &Path,
    helm: Option<&Path>,
    check: bool,
) -> std::process::Output {
    let no_path = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(chartreg_build_bin());
    cmd.arg("pack")
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .env_remove("CHARTREG_HELM");
    if check {
        cmd.arg("--check");
    }
    match helm {
        Some(helm) => cmd.arg("--helm").arg(helm),
        None => cmd.env("PATH", no_path.path()),
    };
    cmd.output().expect("chartreg-build runs")
}

/// [`pack_images`] into a new folder, which must succeed; the folder and the registry the
/// server would build from it.
pub fn packed_images(config: &Path, helm: Option<&Path>) -> (tempfile::TempDir, Registry) {
    let out = tempfile::tempdir().expect("temp dir");
    let done = pack_images(config, out.path(), helm, false);
    assert!(done.status.success(), "pack: {}", describe(&done));
    let registry = Registry::from_files(files_in(out.path())).expect("packed content loads");
    (out, registry)
}

/// An OCI image manifest of an empty config and one layer of `layer`, its blobs added to
/// `layout`.
pub fn image(layout: &mut LayoutBuilder, layer: &[u8]) -> ImageManifest {
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/vnd.oci.image.layer.v1.tar", layer.to_vec());
    ImageManifest::new(config, vec![layer])
}

/// The chartreg binary cargo built for these tests (the release binary under `make test`).
pub fn chartreg_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_chartreg"))
}

/// The build tool's binary, `chartreg-build`, from the same build as [`chartreg_bin`] (`env!`
/// names only this package's own binaries; `cargo test --workspace`, which `make test` runs,
/// builds both). Never built from here: a missing binary fails the test, saying how to build it.
pub fn chartreg_build_bin() -> PathBuf {
    let bin =
        chartreg_bin().with_file_name(format!("chartreg-build{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build both binaries (`cargo test --workspace`, as `make test` does)",
        bin.display()
    );
    bin
}

/// The content digest of the folder a binary embeds, computed here from its files as docs/serving.md
/// defines it (what `chartreg ls --content-digest` prints): the sha256 of the lines
/// `sha256sum -z` prints (`<hex>  <path>` and a NUL) for every file, in byte order of the paths,
/// symbolic links followed, the folder's top-level entries starting with `.` left out.
pub fn folder_content_digest(dir: &Path) -> String {
    fn walk(dir: &Path, prefix: &str, lines: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let entry = entry.expect("dir entry");
            let name = entry.file_name().into_string().expect("UTF-8 name");
            if prefix.is_empty() && name.starts_with('.') {
                continue;
            }
            let path = format!("{prefix}{name}");
            // `metadata` follows symbolic links, as the build does.
            if entry.path().metadata().expect("metadata").is_dir() {
                walk(&entry.path(), &format!("{path}/"), lines);
            } else {
                let data = std::fs::read(entry.path()).expect("readable file");
                let hash = sha256(&data);
                lines.push((path, hash.trim_start_matches("sha256:").to_owned()));
            }
        }
    }
    let mut lines = Vec::new();
    walk(dir, "", &mut lines);
    lines.sort();
    let text: Vec<u8> = lines
        .iter()
        .flat_map(|(path, hex)| format!("{hex}  {path}\0").into_bytes())
        .collect();
    sha256(&text)
}

/// What `bin ls --content-digest` prints, without its newline.
pub fn content_digest_of(bin: &Path) -> String {
    let out = Command::new(bin)
        .args(["ls", "--content-digest"])
        .output()
        .expect("chartreg runs");
    assert!(out.status.success(), "{}", describe(&out));
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .trim_end()
        .to_owned()
}

mod certs;
mod clients;
mod containerd;
mod content;
mod in_process;
mod servers;
mod upstreams;

#[allow(unused_imports)]
pub use certs::{LOOPBACK_NAME, LoopbackCert};
#[allow(unused_imports)]
pub use clients::*;
#[allow(unused_imports)]
pub use containerd::*;
#[allow(unused_imports)]
pub use content::*;
#[allow(unused_imports)]
pub use in_process::{Background, InProcess};
#[allow(unused_imports)]
pub use servers::*;
#[allow(unused_imports)]
pub use upstreams::*;
