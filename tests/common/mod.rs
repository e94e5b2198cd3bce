//! Shared by the integration tests: the committed content, chartreg on a real socket (the
//! release binary as a process, or the library in-process over any content), and the external
//! tools the tests drive.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use actix_web::{HttpServer, web};
use chartreg_core::content::{ContentFile, Registry};
use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::tree::LayoutBuilder;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `dir`, as the binary would embed them.
pub fn files_in(dir: &Path) -> Vec<ContentFile> {
    chartreg_core::tree::read_dir(dir, dir)
        .expect("content folder is readable")
        .into_iter()
        .map(|(path, data)| ContentFile::new(path, data))
        .collect()
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

/// A minimal chart folder `<dir>/<name>`: Chart.yaml with `version`, values and a template.
pub fn chart_folder(dir: &Path, name: &str, version: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(folder.join("templates")).expect("chart folder");
    let write = |path: &str, text: &str| {
        std::fs::write(folder.join(path), text).expect("chart file");
    };
    write(
        "Chart.yaml",
        &format!(
            "apiVersion: v2\nname: {name}\nversion: {version}\nappVersion: \"{version}\"\ndescription: {name} for the tests\n"
        ),
    );
    write("values.yaml", "greeting: hello\n");
    write(
        "templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  version: {{ .Chart.Version | quote }}\n",
    );
    folder
}

/// The names of the files in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// An OCI image manifest of an empty config and one layer of `layer`, its blobs added to
/// `layout`.
pub fn image(layout: &mut LayoutBuilder, layer: &[u8]) -> ImageManifest {
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/vnd.oci.image.layer.v1.tar", layer.to_vec());
    ImageManifest::new(config, vec![layer])
}

/// The committed `assets/` as a registry: the same content the binary embeds.
pub fn assets_registry() -> Registry {
    Registry::from_files(files_in(&root().join("assets"))).expect("assets/ is valid content")
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

/// An external tool: Helm from `.tools/` (`helm3`, `helm4`), anything else from PATH.
/// Missing: under `CI=true` the test fails; elsewhere it is skipped with a note.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = match name {
        "helm3" | "helm4" => {
            Some(root().join(".tools").join(name).join("helm")).filter(|p| p.is_file())
        }
        _ => std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        }),
    };
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!(
                "{name} is missing (CI=true): run scripts/install-tools.sh, which `make test` does"
            );
        }
        eprintln!("SKIPPED: {name} is not installed; run scripts/install-tools.sh");
    }
    found
}

/// The content digest of the folder a binary embeds, computed here from its files as the README
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

/// sha256 of bytes, as `sha256:<hex>`.
pub fn sha256(data: &[u8]) -> String {
    chartreg_core::oci::Digest::sha256_of(data).to_string()
}

mod certs;
mod clients;
mod servers;

#[allow(unused_imports)]
pub use certs::{LOOPBACK_NAME, LoopbackCert};
#[allow(unused_imports)]
pub use clients::*;
#[allow(unused_imports)]
pub use servers::*;
