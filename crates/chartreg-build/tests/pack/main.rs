//! `chartreg-build pack` through the real binary: the committed assets are exactly what packing
//! the content file gives, output is deterministic, and every kind of bad input is refused with
//! a message naming the file, a non-zero exit, and the output folder left as it was. By input
//! kind: chart packages, chart folders, OCI image layouts; who owns what in the output; and
//! the list of the images each chart version needs.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use chartreg_core::content::HeldFile;
use chartreg_core::tree::read_dir as read_tree;
use flate2::Compression;
use flate2::write::GzEncoder;
use rstest::rstest;

mod chart_images;
#[path = "../common/mod.rs"]
mod common;
mod folders;
mod layouts;
mod ownership;
mod packages;
mod verify_images;

/// The repository root (this crate lives in `crates/chartreg-build`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files under `dir`, as the server binary would embed them.
fn files_in(dir: &Path) -> Vec<HeldFile> {
    read_tree(dir, dir)
        .expect("content folder is readable")
        .into_iter()
        .map(|(path, data)| HeldFile::new(path, data))
        .collect()
}

fn chartreg_build(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .args(args)
        .output()
        .expect("chartreg-build runs")
}

fn pack(args: &[&str]) -> Output {
    chartreg_build(&[&["pack"], args].concat())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A gzipped tar holding `files` (path, bytes), every entry with mtime `mtime`.
fn targz(files: &[(&str, &[u8])], mtime: u64) -> Vec<u8> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    for (path, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(mtime);
        header.set_cksum();
        builder.append_data(&mut header, path, *data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// A minimal chart package whose Chart.yaml is `chart_yaml`.
fn chart(chart_yaml: &str) -> Vec<u8> {
    targz(
        &[
            ("demo/Chart.yaml", chart_yaml.as_bytes()),
            ("demo/values.yaml", b"replicas: 1\n"),
            (
                "demo/templates/cm.yaml",
                b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
            ),
        ],
        1_700_000_000,
    )
}

fn chart_yaml(name: &str, version: &str) -> String {
    format!("apiVersion: v2\nname: {name}\nversion: {version}\ndescription: test chart\n")
}

/// A temporary input folder and output folder, the output pre-filled with the committed assets.
struct Scene {
    _dir: tempfile::TempDir,
    input: PathBuf,
    out: PathBuf,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("charts");
        let out = dir.path().join("assets");
        fs::create_dir_all(&input).unwrap();
        copy_dir(&root().join("assets"), &out);
        Scene {
            _dir: dir,
            input,
            out,
        }
    }

    fn add(&self, file: &str, data: &[u8]) -> PathBuf {
        let path = self.input.join(file);
        fs::write(&path, data).unwrap();
        path
    }

    fn pack(&self) -> Output {
        pack(&[
            self.input.to_str().unwrap(),
            "--out",
            self.out.to_str().unwrap(),
        ])
    }

    fn output(&self) -> BTreeMap<String, Vec<u8>> {
        read_tree(&self.out, &self.out).unwrap()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for (path, data) in read_tree(from, from).unwrap() {
        let target = to.join(&path);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(target, data).unwrap();
    }
}
