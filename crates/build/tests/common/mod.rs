//! Shared by the tests that run a build machine (`dist.rs`, `builder_image.rs`): the repository
//! root, `CI=true`, a command's output for a failure message, the crates cargo said it compiled,
//! and a real-shaped chart folder.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository root (this crate lives in `crates/build`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

pub fn describe(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The crates of the `Compiling ...` lines cargo printed on stderr.
pub fn compiled(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Compiling "))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
        .collect()
}

/// A chart folder `name` at `version` in `dir`, with one template.
pub fn chart_folder(dir: &Path, name: &str, version: &str) {
    fs::create_dir_all(dir.join("templates")).unwrap();
    fs::write(
        dir.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: {version}\nappVersion: \"1.0\"\n"),
    )
    .unwrap();
    fs::write(dir.join("values.yaml"), "replicas: 1\n").unwrap();
    fs::write(
        dir.join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    )
    .unwrap();
}
