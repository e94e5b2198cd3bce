//! The chartreg binary: the library plus the content compiled into it.
//!
//! The embedded folder is `assets/` unless `CHARTREG_ASSETS` named another at build time. build.rs
//! splits it: small files come through rust-embed (with `debug-embed`, every build serves from the
//! binary), large ones are linked in as objects (include-blob) and listed in `$OUT_DIR/linked.rs`.
//! build.rs also loads the content and writes down what it found (`$OUT_DIR/facts.bin`, see
//! `Registry::facts`), so that start-up need not read it again.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::process::ExitCode;

use bytes::Bytes;
use chartreg_core::content::{Content, ContentFile};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$CHARTREG_EMBED_DIR"]
struct Assets;

/// The files linked in as objects: path, bytes, sha256 computed by build.rs.
fn linked() -> Vec<(&'static str, &'static [u8], [u8; 32])> {
    include!(concat!(env!("OUT_DIR"), "/linked.rs"))
}

/// One rust-embed file, its bytes borrowed from the binary and its sha256 computed at build time.
fn small(path: Cow<'static, str>) -> Option<ContentFile> {
    let file = Assets::get(&path)?;
    let data = match file.data {
        Cow::Borrowed(bytes) => Bytes::from_static(bytes),
        Cow::Owned(bytes) => Bytes::from(bytes),
    };
    Some(ContentFile {
        path,
        data,
        sha256: Some(file.metadata.sha256_hash()),
    })
}

/// What the build found the content to be; empty when it could not say (see build.rs).
static FACTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/facts.bin"));

/// Every embedded file, in the order build.rs wrote the facts of them (rust-embed's, then the
/// linked ones). rust-embed finds each file by a binary search over its paths, which is most of
/// the cost with tens of thousands of files: every CPU shares that work.
fn embedded() -> Vec<ContentFile> {
    let names: Vec<Cow<'static, str>> = Assets::iter().collect();
    let mut files: Vec<ContentFile> = chartreg_core::content::in_parallel(&names, 1024, |chunk| {
        chunk.iter().cloned().filter_map(small).collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect();
    files.extend(
        linked()
            .into_iter()
            .map(|(path, bytes, sha256)| ContentFile {
                path: path.into(),
                data: Bytes::from_static(bytes),
                sha256: Some(sha256),
            }),
    );
    files
}

fn main() -> ExitCode {
    chartreg::cli::main(std::env::args_os(), || Content {
        files: embedded(),
        facts: Bytes::from_static(FACTS),
    })
}
