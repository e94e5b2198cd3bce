//! The chartreg binary: the library plus the content compiled into it.
//!
//! The embedded folder is `assets/` unless `CHARTREG_ASSETS` named another at build time. build.rs
//! splits it: small files come through rust-embed (with `debug-embed`, every build serves from the
//! binary), large ones are linked in as objects named by their digest and listed in
//! `$OUT_DIR/linked.rs`; a small file whose bytes another has already is embedded once and
//! listed in `$OUT_DIR/aliases.rs`. build.rs also describes the content and writes the
//! description down (`$OUT_DIR/facts.bin`, see `Description::facts`): the registry is built
//! from those facts and these files (`Registry::from_facts`), without reading the content again.
//!
//! `unsafe_code` is forbidden in every crate of the project (`[workspace.lints]`). The one
//! `unsafe` in the binary is in the expansion of `chartreg_embed::linked_blob!` (the project's
//! own macro crate, where the lint does not look): an `extern` static per linked object, whose
//! symbol and size build.rs wrote together; start-up checks the sha256 written beside them
//! against the build's facts, and `chartreg verify` checks the bytes against that sha256, like
//! every other file's (see `chartreg_embed`).

use std::borrow::Cow;
use std::process::ExitCode;

use bytes::Bytes;
use chartreg_core::content::{Content, HeldFile};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "$CHARTREG_EMBED_DIR"]
struct Assets;

/// The files linked in as objects: path, bytes, sha256 computed by build.rs. A static, so that
/// each file is reached through a 64-bit address whatever its distance from the code.
static LINKED: &[(&str, &[u8], [u8; 32])] = include!(concat!(env!("OUT_DIR"), "/linked.rs"));

/// Small files with the same bytes as an earlier one, embedded once: (path, the earlier one's
/// path).
static ALIASES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/aliases.rs"));

/// One rust-embed file, its bytes borrowed from the binary and its sha256 computed at build time.
fn small(path: Cow<'static, str>) -> Option<HeldFile> {
    let file = Assets::get(&path)?;
    let data = match file.data {
        Cow::Borrowed(bytes) => Bytes::from_static(bytes),
        Cow::Owned(bytes) => Bytes::from(bytes),
    };
    Some(HeldFile::with_sha256(
        path,
        data,
        file.metadata.sha256_hash(),
    ))
}

/// What the build found the content to be (see build.rs): its description, or why it cannot be
/// served.
static FACTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/facts.bin"));

/// Every embedded file (the facts match them by path, so their order does not matter).
/// rust-embed finds each file by a binary search over its paths, which is most of start-up with
/// tens of thousands of files: every CPU takes a share of the names.
fn embedded() -> Vec<HeldFile> {
    let names: Vec<Cow<'static, str>> = Assets::iter().collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let share = names.len().div_ceil(threads).max(1);
    let mut files: Vec<HeldFile> = std::thread::scope(|scope| {
        let shares: Vec<_> = names
            .chunks(share)
            .map(|names| {
                scope.spawn(|| names.iter().cloned().filter_map(small).collect::<Vec<_>>())
            })
            .collect();
        shares
            .into_iter()
            // A panic in another thread is a bug: let it surface as one.
            .flat_map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    files.extend(LINKED.iter().map(|&(path, bytes, sha256)| {
        HeldFile::with_sha256(path, Bytes::from_static(bytes), sha256)
    }));
    if !ALIASES.is_empty() {
        let by_path: std::collections::HashMap<&str, &HeldFile> =
            files.iter().map(|f| (f.path.as_ref(), f)).collect();
        // An alias is its first file's bytes and sha256 under its own path.
        let shared: Vec<HeldFile> = ALIASES
            .iter()
            .filter_map(|&(path, first)| {
                Some(HeldFile {
                    path: path.into(),
                    ..(*by_path.get(first)?).clone()
                })
            })
            .collect();
        files.extend(shared);
    }
    files
}

fn main() -> ExitCode {
    if let Some(revision) = option_env!("CHARTREG_GIT_REVISION") {
        chartreg::metrics::BuildInfo::set_revision(revision);
    }
    chartreg::cli::main(std::env::args_os(), || Content {
        files: embedded(),
        facts: Bytes::from_static(FACTS),
    })
}
