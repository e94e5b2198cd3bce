//! Helm 3 (3.17, oras-go v1) and Helm 4 (oras-go v2) against the chartreg binary: pulls by
//! exact version, range, latest and `--devel` give byte-identical packages; `show` and
//! `template` work straight from the registry; `--verify` succeeds with the signing key and
//! fails without it; unknown charts fail; and what `helm push` stores in the CNCF
//! distribution registry has the same descriptors as what chartreg serves; chart folders packed
//! by `chartreg-build` are what Helm makes of the folders; versions are found as people write
//! them; the commands the chartreg chart's NOTES print work as printed; pack finds the images
//! charts need by rendering them.
//!
//! Every test runs once per Helm version (the case name says which), each with its own
//! chartreg process and Helm home folders.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod addons;
mod chart_images;
#[path = "../common/mod.rs"]
mod common;
mod folders;
mod notes;
mod pull;
mod push;
mod verify;
mod verify_ingest;
mod versions;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Distribution, Helm, Process, assert_same_bytes, assets_tag_digest, describe, root};
use rstest::rstest;
use serde_json::Value;

/// stdout and stderr together (Helm versions differ in where they print `Pulled:`/`Digest:`).
fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn charts_dir() -> PathBuf {
    root().join("charts")
}

fn str_path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// One file out of a chart package (a gzipped tar).
fn file_in_package(package: &Path, name: &str) -> String {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(package).expect("open package"));
    let mut archive = tar::Archive::new(gz);
    for entry in archive.entries().expect("package is a tar") {
        let mut entry = entry.expect("tar entry");
        if entry.path().expect("entry path").to_str() == Some(name) {
            let mut s = String::new();
            entry.read_to_string(&mut s).expect("UTF-8 file");
            return s;
        }
    }
    panic!("{} holds no {name}", package.display());
}
