//! The two kinds of input file, one per purpose:
//!
//! - [`HeldFile`]: a file whose bytes are in memory, with its sha256: what a binary holds (and
//!   what tests hold). A [`Registry`](super::Registry), which serves, is built only from these
//!   and the facts of them ([`Content`]).
//! - [`BuildFile`]: a file as the build has it: its bytes in memory or left on disk (a large
//!   file is never held whole at build time), with its size and sha256. A
//!   [`Description`](super::Description) is made from these; no registry ever is.

use std::borrow::Cow;
use std::path::PathBuf;

use bytes::Bytes;

use crate::oci::sha256;

/// One file a binary holds: its path relative to the content root (with `/` separators), its
/// bytes and their sha256 (computed at build time, so that start-up hashes nothing).
#[derive(Debug, Clone)]
pub struct HeldFile {
    /// Borrowed for embedded files, so that start-up copies no paths.
    pub path: Cow<'static, str>,
    pub data: Bytes,
    pub sha256: [u8; 32],
}

impl HeldFile {
    /// A file whose sha256 is computed now.
    pub fn new(path: impl Into<Cow<'static, str>>, data: impl Into<Bytes>) -> Self {
        let data = data.into();
        HeldFile {
            path: path.into(),
            sha256: sha256(&data),
            data,
        }
    }

    /// A file whose sha256 was computed already (by the build), taken as given: start-up checks
    /// it against the facts, `chartreg verify` against the bytes.
    pub fn with_sha256(
        path: impl Into<Cow<'static, str>>,
        data: impl Into<Bytes>,
        sha256: [u8; 32],
    ) -> Self {
        HeldFile {
            path: path.into(),
            data: data.into(),
            sha256,
        }
    }
}

/// What a binary holds: its files, and the facts its build wrote of them (see
/// [`Description::facts`](super::Description::facts)).
#[derive(Debug, Default)]
pub struct Content {
    pub files: Vec<HeldFile>,
    pub facts: Bytes,
}

/// One file of the content as the build has it: its path relative to the content root (with
/// `/` separators), its size and sha256, and where its bytes are.
#[derive(Debug, Clone)]
pub struct BuildFile {
    pub path: String,
    pub size: u64,
    pub sha256: [u8; 32],
    pub bytes: BuildBytes,
}

/// Where a build file's bytes are.
#[derive(Debug, Clone)]
pub enum BuildBytes {
    /// In memory.
    Held(Bytes),
    /// Still on disk, at this path: read only if describing must parse the file (an index or a
    /// manifest).
    OnDisk(PathBuf),
}

impl BuildFile {
    /// A file whose bytes are in memory, with their sha256 as given.
    pub fn held(path: impl Into<String>, data: impl Into<Bytes>, sha256: [u8; 32]) -> Self {
        let data = data.into();
        BuildFile {
            path: path.into(),
            size: data.len() as u64,
            sha256,
            bytes: BuildBytes::Held(data),
        }
    }

    /// A file of `size` bytes left on disk at `file`, with its sha256 (computed while it was
    /// streamed).
    pub fn on_disk(path: impl Into<String>, file: PathBuf, size: u64, sha256: [u8; 32]) -> Self {
        BuildFile {
            path: path.into(),
            size,
            sha256,
            bytes: BuildBytes::OnDisk(file),
        }
    }
}

/// A held file as the build would have it: its bytes, and its sha256 as recorded.
impl From<&HeldFile> for BuildFile {
    fn from(file: &HeldFile) -> Self {
        BuildFile::held(file.path.as_ref(), file.data.clone(), file.sha256)
    }
}

/// The digest naming a whole content: the sha256 of one line per file, `<sha256 hex>  <path>`
/// ended by a NUL byte, in byte order of the paths; the lines `sha256sum -z` prints for the
/// folder's files. The same files give the same digest however they were built (the build
/// computes it from its files, `chartreg ls --content-digest` from the binary's), and any
/// changed, added or removed file another.
pub fn content_digest<'a>(
    files: impl IntoIterator<Item = (&'a str, [u8; 32])>,
) -> crate::oci::Digest {
    let mut lines: Vec<(&str, [u8; 32])> = files.into_iter().collect();
    lines.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut text = Vec::with_capacity(
        lines
            .iter()
            .map(|(p, _)| p.len().saturating_add(67))
            .fold(0usize, usize::saturating_add),
    );
    for (path, sha256) in lines {
        text.extend_from_slice(hex::encode(sha256).as_bytes());
        text.extend_from_slice(b"  ");
        text.extend_from_slice(path.as_bytes());
        text.push(0);
    }
    crate::oci::Digest::sha256_of(&text)
}
