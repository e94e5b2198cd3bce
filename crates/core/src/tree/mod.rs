//! Trees of files to write under a content folder, and the writer that puts one into place.
//!
//! A [`Tree`] maps paths (relative, `/`-separated) to [`Entry`]s: layout documents held in
//! memory (`index.json`, manifests, configs: small), and blobs held by reference to the file
//! that has them ([`BlobFile`]: path, size, digest; never their bytes, since an image layer can
//! be GiBs). The build tool's inputs produce trees; [`write_into`] writes one into a new
//! generation of an output folder (the build tool swaps the whole folder in at once):
//!
//! 1. If the current folder already holds exactly the tree (same paths; same bytes for
//!    documents; same size and sha256 for blobs), its files are linked into the new one:
//!    [`Outcome::Unchanged`].
//! 2. Otherwise the tree is written there, blobs streamed from their files while their sha256
//!    is checked again (a source that changed since it was read is an error naming it, never a
//!    wrong blob).
//!
//! [`read_dir`] and [`load`] give in-memory [`Files`] for what must hold the bytes anyway
//! (tests, in-process registries).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::oci::Digest;

mod layout;
mod write;

pub use layout::LayoutBuilder;
pub use write::{Outcome, WriteError, holds_tree as holds, put_into, write_into};

/// Paths (relative to the content root) and bytes of one or more layouts, in memory.
pub type Files = BTreeMap<String, Vec<u8>>;

/// A blob by reference: the file that holds it, its size and its digest when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFile {
    pub path: PathBuf,
    pub size: u64,
    pub digest: Digest,
}

impl BlobFile {
    /// Reads `path` once, as a stream, for its size and sha256.
    pub fn hash(path: &Path) -> io::Result<BlobFile> {
        let (size, sha256) = hash_file(path)?;
        Ok(BlobFile {
            path: path.to_owned(),
            size,
            digest: Digest::from_sha256(sha256),
        })
    }
}

/// One file of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A document (or small blob) held in memory.
    Bytes(Vec<u8>),
    /// A blob copied from a file when the tree is written.
    File(BlobFile),
    /// A blob hard-linked from its file when the tree is written (copied where the file
    /// system cannot link): for staged files that nothing writes again, such as the blobs
    /// `import-bundle` streams out of a bundle, so that a bundle never needs twice its size
    /// on disk. The linked file's digest is checked as a copied one's is.
    Link(BlobFile),
}

impl Entry {
    /// The entry's bytes: borrowed for documents, read from the file for blobs.
    pub fn read(&self) -> io::Result<std::borrow::Cow<'_, [u8]>> {
        match self {
            Entry::Bytes(data) => Ok(data.as_slice().into()),
            Entry::File(blob) | Entry::Link(blob) => fs::read(&blob.path)
                .map_err(|e| at(&blob.path, e))
                .map(Into::into),
        }
    }
}

impl From<Vec<u8>> for Entry {
    fn from(data: Vec<u8>) -> Self {
        Entry::Bytes(data)
    }
}

/// Paths relative to a content folder, each with what to write there.
pub type Tree = BTreeMap<String, Entry>;

/// Every entry's bytes in memory (blob files read): for content small enough to hold, such as
/// tests and in-process registries.
pub fn load(tree: Tree) -> io::Result<Files> {
    tree.into_iter()
        .map(|(path, entry)| {
            let data = match entry {
                Entry::Bytes(data) => data,
                Entry::File(blob) | Entry::Link(blob) => {
                    fs::read(&blob.path).map_err(|e| at(&blob.path, e))?
                }
            };
            Ok((path, data))
        })
        .collect()
}

/// Every file under `dir` with its bytes, by path relative to `base` with `/` separators; an
/// empty map when `dir` does not exist.
pub fn read_dir(dir: &Path, base: &Path) -> io::Result<Files> {
    files_below(dir, base)?
        .into_iter()
        .map(|(key, path)| Ok((key, fs::read(&path).map_err(|e| at(&path, e))?)))
        .collect()
}

/// Every file under `dir` (path relative to `base`, `/`-separated -> its path).
pub(crate) fn files_below(dir: &Path, base: &Path) -> io::Result<BTreeMap<String, PathBuf>> {
    let mut files = BTreeMap::new();
    if !dir.exists() {
        return Ok(files);
    }
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder).map_err(|e| at(&folder, e))? {
            let path = entry.map_err(|e| at(&folder, e))?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(base).unwrap_or(&path);
                let key = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                files.insert(key, path);
            }
        }
    }
    Ok(files)
}

/// A file's size and sha256, read as a stream.
pub(crate) fn hash_file(path: &Path) -> io::Result<(u64, [u8; 32])> {
    copy_hashing(&mut fs::File::open(path)?, &mut io::sink()).map_err(|(_, e)| e)
}

/// Which side of a copy failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Reading,
    Writing,
}

/// Copies `reader` to `writer` in 1 MiB chunks; returns the size and sha256 of what passed.
pub fn copy_hashing(
    reader: &mut impl io::Read,
    writer: &mut impl io::Write,
) -> Result<(u64, [u8; 32]), (Side, io::Error)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = reader.read(&mut buffer).map_err(|e| (Side::Reading, e))?;
        let Some(chunk) = buffer.get(..n).filter(|chunk| !chunk.is_empty()) else {
            break;
        };
        hasher.update(chunk);
        writer.write_all(chunk).map_err(|e| (Side::Writing, e))?;
        size = size.saturating_add(n as u64);
    }
    Ok((size, hasher.finalize().into()))
}

fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}
