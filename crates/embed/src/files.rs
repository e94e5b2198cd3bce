//! The binary's content read back at start-up (feature `files`): what the build script
//! prepared ([`crate::prepare`]) as the binary holds it, turned into the files and facts the
//! registry is built from.
//!
//! Three sources, in the binary's own statics (see `src/main.rs`):
//! - rust-embed's files: the small ones, each with the sha256 rust-embed computed at compile
//!   time, borrowed from the binary (`debug-embed`: every build serves from the binary);
//! - the linked files: path, bytes ([`crate::linked_blob!`]) and sha256, written by the build
//!   script;
//! - the aliases: small files with the same bytes as an earlier one, embedded once, each
//!   given that one's bytes and sha256 under its own path.
//!
//! Nothing is copied or hashed: every file's bytes are `&'static`, and start-up checks their
//! recorded sha256 against the facts (`chartreg verify` checks the bytes against it).

use std::borrow::Cow;
use std::collections::HashMap;

use bytes::Bytes;
use chartreg_core::content::{Content, HeldFile};
use rust_embed::RustEmbed;

/// What the build script wrote for a binary, as its statics hold it.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    /// The files linked in as objects: path, bytes, sha256.
    pub linked: &'static [(&'static str, &'static [u8], [u8; 32])],
    /// Small files with the same bytes as an earlier one: (path, the earlier one's path).
    pub aliases: &'static [(&'static str, &'static str)],
    /// What the build found the content to be: its description, or why it cannot be served
    /// (see `chartreg_core::content`).
    pub facts: &'static [u8],
}

impl Embedded {
    /// Every file of the binary (`E`: its rust-embed type) and its facts. The facts match
    /// files by path, so their order does not matter.
    pub fn content<E: RustEmbed>(self) -> Content {
        // One loop. rust-embed finds each file by a binary search over its paths (a third of
        // start-up at 10,000 versions); a thread per CPU, each taking a share of the names, was
        // measured against it and does not pay: 58.2 ms against 60.5 ms median start-up, the
        // quartiles 53-63 ms for both (bench/scale_probe.py on `bench/gen_scale.py --versions
        // 10000`, 50 starts each, alternating, 2 CPUs, 2026-12-03).
        let mut files: Vec<HeldFile> = E::iter().filter_map(small::<E>).collect();
        files.extend(self.linked.iter().map(|&(path, bytes, sha256)| {
            HeldFile::with_sha256(path, Bytes::from_static(bytes), sha256)
        }));
        if !self.aliases.is_empty() {
            let by_path: HashMap<&str, &HeldFile> =
                files.iter().map(|f| (f.path.as_ref(), f)).collect();
            let shared: Vec<HeldFile> = self
                .aliases
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
        Content {
            files,
            facts: Bytes::from_static(self.facts),
        }
    }
}

/// One rust-embed file, its bytes borrowed from the binary and its sha256 computed at build
/// time.
fn small<E: RustEmbed>(path: Cow<'static, str>) -> Option<HeldFile> {
    let file = E::get(&path)?;
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
