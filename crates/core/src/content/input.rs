//! What a registry is built from: the input files (their bytes held, or left on disk at build
//! time) and, for a binary, the facts its build wrote of them; and when the content was checked.

use std::borrow::Cow;
use std::path::PathBuf;

use bytes::Bytes;

/// One input file: its path relative to the content root (with `/` separators), its bytes (or,
/// at build time, where they are), and its sha256 when already known (rust-embed and build.rs
/// compute it at build time), so that start-up need not hash anything.
#[derive(Debug, Clone)]
pub struct ContentFile {
    /// Borrowed for embedded files, so that start-up copies no paths.
    pub path: Cow<'static, str>,
    pub data: Data,
    pub sha256: Option<[u8; 32]>,
}

/// Where an input file's bytes are.
#[derive(Debug, Clone)]
pub enum Data {
    /// In memory: every file of a binary (borrowed from it), and tests' files.
    Held(Bytes),
    /// Still on disk, `size` bytes: a large file at build time, which is never held whole. The
    /// loader reads it only if it must parse it (a manifest), and the registry it builds keeps
    /// no bytes for it: such a registry describes its content (see
    /// [`Registry::facts`](super::Registry::facts)) and must not serve it.
    OnDisk { file: PathBuf, size: u64 },
}

impl ContentFile {
    /// A file whose digest will be computed when the registry is built.
    pub fn new(path: impl Into<Cow<'static, str>>, data: impl Into<Bytes>) -> Self {
        ContentFile {
            path: path.into(),
            data: Data::Held(data.into()),
            sha256: None,
        }
    }

    /// The file with its sha256 known already (computed at build time).
    pub fn with_sha256(self, sha256: [u8; 32]) -> Self {
        ContentFile {
            sha256: Some(sha256),
            ..self
        }
    }

    /// A file of `size` bytes left on disk at `file`, with its sha256 (computed while it was
    /// streamed): see [`Data::OnDisk`].
    pub fn on_disk(
        path: impl Into<Cow<'static, str>>,
        file: PathBuf,
        size: u64,
        sha256: [u8; 32],
    ) -> Self {
        ContentFile {
            path: path.into(),
            data: Data::OnDisk { file, size },
            sha256: Some(sha256),
        }
    }

    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        match &self.data {
            Data::Held(bytes) => bytes.len() as u64,
            Data::OnDisk { size, .. } => *size,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its bytes, when they are in memory.
    pub fn held(&self) -> Option<&Bytes> {
        match &self.data {
            Data::Held(bytes) => Some(bytes),
            Data::OnDisk { .. } => None,
        }
    }
}

/// What a binary holds: its files, and the facts its build wrote of them (see
/// [`Registry::facts`](super::Registry::facts); empty when it wrote none).
#[derive(Debug, Default)]
pub struct Content {
    pub files: Vec<ContentFile>,
    pub facts: Bytes,
}

/// When the content a registry serves was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// By the build, which wrote down what it found: start-up only checked that the facts
    /// describe these very files.
    AtBuild,
    /// At start-up, in full.
    AtStartup,
}
