//! The chartreg binary: the library plus the content compiled into it.
//!
//! The embedded folder is `assets/` unless `CHARTREG_ASSETS` named another at build time. build.rs
//! splits it: small files come through rust-embed (with `debug-embed`, every build serves from the
//! binary), large ones are linked in as objects (include-blob) and listed in `$OUT_DIR/linked.rs`.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::process::ExitCode;

use bytes::Bytes;
use chartreg::content::ContentFile;
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$CHARTREG_EMBED_DIR"]
struct Assets;

/// The files linked in as objects: path, bytes, sha256 computed by build.rs.
fn linked() -> Vec<(&'static str, &'static [u8], [u8; 32])> {
    include!(concat!(env!("OUT_DIR"), "/linked.rs"))
}

/// Every embedded file, its bytes borrowed from the binary and its sha256 computed at build time.
fn embedded() -> impl Iterator<Item = ContentFile> {
    let linked = linked()
        .into_iter()
        .map(|(path, bytes, sha256)| ContentFile {
            path: path.to_owned(),
            data: Bytes::from_static(bytes),
            sha256: Some(sha256),
        });
    let small = Assets::iter().filter_map(|path| {
        let file = Assets::get(&path)?;
        let data = match file.data {
            Cow::Borrowed(bytes) => Bytes::from_static(bytes),
            Cow::Owned(bytes) => Bytes::from(bytes),
        };
        Some(ContentFile {
            path: path.into_owned(),
            data,
            sha256: Some(file.metadata.sha256_hash()),
        })
    });
    small.chain(linked)
}

fn main() -> ExitCode {
    chartreg::cli::main(std::env::args_os(), embedded)
}
