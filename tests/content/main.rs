//! Building the registry: what it holds from the committed assets, and refusing (with the
//! file named) every kind of content that could make it serve wrong bytes.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;
mod layouts;
mod refused;

use chartreg_core::content::{FilesError, HeldFile, LoadError, Problem, Registry};
use chartreg_core::oci::layout::{Annotations, Descriptor, ImageIndex, ImageManifest};
use chartreg_core::oci::{Digest, Reference, media_type};
use chartreg_core::tree::{Files, LayoutBuilder};

/// A valid layout `test/app` with tag `v1`, and the manifest's descriptor.
fn valid() -> (Files, Descriptor, ImageManifest) {
    let mut layout = LayoutBuilder::new("test/app");
    let m = common::image(&mut layout, b"layer bytes");
    let d = layout.manifest(media_type::OCI_MANIFEST, &m);
    layout.list(d.clone(), Some("v1"));
    (layout.into_files().unwrap(), d, m)
}

fn load(files: Files) -> Result<Registry, LoadError> {
    refusal(Registry::from_files(
        files.into_iter().map(|(p, b)| HeldFile::new(p, b)),
    ))
}

/// The registry, or why the content cannot be served (the only way files that describe
/// themselves into facts can fail).
fn refusal(built: Result<Registry, FilesError>) -> Result<Registry, LoadError> {
    built.map_err(|e| match e {
        FilesError::Load(refused) => refused,
        other => panic!("not a refusal of the content: {other}"),
    })
}

fn blob_path(d: &Descriptor) -> String {
    format!("test/app/blobs/sha256/{}", d.digest.encoded())
}

fn refused(files: Files, path: &str) -> Problem {
    match load(files) {
        Ok(_) => panic!("content with a problem in {path} was accepted"),
        Err(e) => {
            assert_eq!(e.path, path, "{e}");
            assert!(
                e.to_string().starts_with(path),
                "the message names the file: {e}"
            );
            *e.problem
        }
    }
}
