//! What `diff` reads of a layout is bounded: a listing layer that decompresses past its bound
//! (a gzip bomb), an `index.json` past its size, a blob that is a symbolic link to
//! `/dev/zero`, a FIFO for a blob: each refused within seconds (a reader that followed the
//! link, or opened the FIFO, would never finish), naming what it refused, with nothing written
//! into TMPDIR.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rstest::rstest;

use super::support::*;

/// How a layout is made hostile, after it is written: what is replaced, and what is said.
#[derive(Debug, Clone, Copy)]
enum Tamper {
    /// The listing layer is a gzip bomb: 96 MiB of zeros before the listing.
    Bomb,
    /// `index.json` is 5 MiB (of spaces around the same document).
    LargeIndex,
    /// The listing layer's blob is a link to `/dev/zero`.
    LinkToZero,
    /// The manifest's blob is a FIFO (opening it would wait for a writer for ever).
    Fifo,
}

impl Tamper {
    /// Makes `made` hostile; the file to be named in the refusal, and words the refusal says.
    fn apply(self, made: &Made) -> (PathBuf, &'static str) {
        let listing = made.listing.clone().unwrap();
        match self {
            Tamper::Bomb => (listing, "decompresses to more than 65 MiB"),
            Tamper::LargeIndex => {
                let index = made.dir.join("index.json");
                let mut data = fs::read(&index).unwrap();
                data.resize(5 << 20, b' ');
                fs::write(&index, data).unwrap();
                (
                    index,
                    "5242880 bytes, more than 4194304, the most read of it",
                )
            }
            Tamper::LinkToZero => {
                fs::remove_file(&listing).unwrap();
                std::os::unix::fs::symlink("/dev/zero", &listing).unwrap();
                (listing, "a symbolic link: not followed")
            }
            Tamper::Fifo => {
                let manifest = made.manifest.clone();
                fs::remove_file(&manifest).unwrap();
                let made = std::process::Command::new("mkfifo")
                    .arg(&manifest)
                    .status()
                    .unwrap();
                assert!(made.success());
                (manifest, "a FIFO, not a regular file: refused")
            }
        }
    }
}

/// The image's listing layer: a gzip bomb when `bomb`.
fn parts(new: &serde_json::Value, bomb: bool, dir: &Path) -> Parts {
    let mut parts = Parts::carrying(new, server_script(new, None, dir));
    if bomb {
        let zeros = vec![0u8; 96 << 20];
        let file = serde_json::to_vec(new).unwrap();
        parts.listing = Some(gzip(&tar(&[
            ("padding", 0o644, &zeros),
            ("chartreg.listing.json", 0o644, &file),
        ])));
    }
    parts
}

#[rstest]
#[case::gzip_bomb(Tamper::Bomb)]
#[case::large_index(Tamper::LargeIndex)]
#[case::link_to_dev_zero(Tamper::LinkToZero)]
#[case::fifo(Tamper::Fifo)]
fn a_hostile_layout_is_refused_at_once_by_name(#[case] tamper: Tamper) {
    let dir = tempfile::tempdir().unwrap();
    let old = listing(VERSION, &content("old"), &rows(&[("demo", "1.0.0")]));
    let new = listing(VERSION, &content("new"), &rows(&[("demo", "1.1.0")]));
    let old_bin = install(
        &dir.path().join("old-chartreg"),
        &server_script(&old, None, dir.path()),
    );
    let made = parts(&new, matches!(tamper, Tamper::Bomb), dir.path())
        .write(&dir.path().join("new-oci"), "v2");
    if let Some(listing) = &made.listing {
        assert!(
            fs::metadata(listing).unwrap().len() < 1 << 20,
            "a small blob"
        );
    }
    let (named, says) = tamper.apply(&made);
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let (out, took) = diff_within(
        &[s(&old_bin), s(&made.dir)],
        &[("TMPDIR", &tmp)],
        Duration::from_secs(30),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{tamper:?}: {stderr}");
    assert!(stderr.contains(s(&made.dir)), "names the side: {stderr}");
    let file = named.file_name().unwrap().to_str().unwrap();
    assert!(stderr.contains(file), "names {file}: {stderr}");
    assert!(stderr.contains(says), "{says}: {stderr}");
    assert!(took < Duration::from_secs(10), "{tamper:?} took {took:?}");
    assert_eq!(
        fs::read_dir(&tmp).unwrap().count(),
        0,
        "TMPDIR left as it was"
    );
}
