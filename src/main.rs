//! The chartreg binary: the library plus the content compiled into it.
//!
//! The embedded folder is `assets/` unless `CHARTREG_ASSETS` named another at build time
//! (see build.rs). With rust-embed's `debug-embed`, every build serves from the binary.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::process::ExitCode;

use bytes::Bytes;
use chartreg::content::ContentFile;
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$CHARTREG_ASSETS_DIR"]
struct Assets;

/// Every embedded file, its bytes borrowed from the binary and its sha256 computed at build time.
fn embedded() -> impl Iterator<Item = ContentFile> {
    Assets::iter().filter_map(|path| {
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
    })
}

fn main() -> ExitCode {
    chartreg::cli::main(std::env::args_os(), embedded)
}
