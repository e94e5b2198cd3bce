//! The content model: an immutable, in-memory registry built once from (path, bytes) pairs that
//! hold OCI image layouts, and looked up by validated names, tags and digests.
//!
//! How content flows through it:
//! 1. `Registry::from_files` takes every file (the binary passes what rust-embed compiled in;
//!    tests pass anything). A folder holding an `oci-layout` file is one repository, named by its
//!    path (`charts/hello/oci-layout` -> `charts/hello`).
//! 2. `load` reads each layout's `index.json`, follows every manifest (indexes recursively),
//!    checks that each referenced blob is present with the descriptor's size and that its bytes
//!    have the digest they are stored under, and records tags and referrers. Any problem is a
//!    `LoadError` naming the file: the registry refuses to exist rather than serve wrong bytes.
//!    The binary builds it from build-time facts instead (`Registry::from_content`, module
//!    `facts`): build.rs runs this same loading and writes down what it found; start-up checks
//!    that the facts describe exactly the files it holds (by sha256) and builds the maps from
//!    them, falling back to step 2 when they do not.
//! 3. Requests look up `Registry::repository`, then `Repository::manifest` / `blob` / `tags` /
//!    `referrers`: hash-map lookups returning the stored bytes (`Bytes`, zero-copy for embedded
//!    `&'static` data). Misses are `Error::NameUnknown` / `ManifestUnknown` / `BlobUnknown`.
//!
//! No HTTP types live here; `http` maps `Error` to statuses and codes.

mod facts;
mod listing;
mod load;
mod parallel;
mod raw;

/// Hash maps keyed by names and digests, with a fast hasher (foldhash, already used by
/// actix-web): lookups are on every request; keys come from trusted content, and requests
/// only ever read the maps.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Maps keyed by sha256 hashes (manifests and blobs, found by digest). The hashes are uniformly
/// distributed already, so their first eight bytes are the hash-map hash: no hashing at all.
type Sha256Map<V> = std::collections::HashMap<[u8; 32], V, BuildHasherDefault<Sha256Prefix>>;

#[derive(Default)]
struct Sha256Prefix(u64);

impl Hasher for Sha256Prefix {
    fn finish(&self) -> u64 {
        self.0
    }

    /// An array hashes as its length, then its bytes: the length is the same for every key.
    fn write_usize(&mut self, _length: usize) {}

    fn write(&mut self, bytes: &[u8]) {
        if let Some(prefix) = bytes.first_chunk::<8>() {
            self.0 = u64::from_le_bytes(*prefix);
        }
    }
}

use std::borrow::Cow;
use std::hash::{BuildHasherDefault, Hasher};

use bytes::Bytes;
use bytestring::ByteString;

use crate::oci::layout::Descriptor;
use crate::oci::{Digest, Reference, RepositoryName};

pub use facts::Stale;
pub use listing::Listing;
pub use load::{LoadError, Problem};
pub use parallel::in_parallel;

/// One input file: its path relative to the content root (with `/` separators), its bytes, and
/// its sha256 when already known (rust-embed computes it at build time), so that start-up need
/// not hash anything.
#[derive(Debug, Clone)]
pub struct ContentFile {
    /// Borrowed for embedded files, so that start-up copies no paths.
    pub path: Cow<'static, str>,
    pub data: Bytes,
    pub sha256: Option<[u8; 32]>,
}

impl ContentFile {
    /// A file whose digest will be computed when the registry is built.
    pub fn new(path: impl Into<Cow<'static, str>>, data: impl Into<Bytes>) -> Self {
        ContentFile {
            path: path.into(),
            data: data.into(),
            sha256: None,
        }
    }
}

/// What a binary holds: its files, and the facts its build wrote of them (see
/// [`Registry::facts`]; empty when it wrote none).
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

/// A lookup that found nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("repository `{0}` is not known to this registry")]
    NameUnknown(RepositoryName),
    #[error("manifest `{reference}` is not known in repository `{name}`")]
    ManifestUnknown { name: String, reference: String },
    #[error("blob `{digest}` is not known in repository `{name}`")]
    BlobUnknown { name: String, digest: Digest },
}

/// A manifest as stored: exact bytes, the media type its descriptor gave, its digest.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub media_type: ByteString,
    pub digest: Digest,
    /// The digest in double quotes: the content's entity tag.
    pub quoted_digest: Bytes,
    pub data: Bytes,
}

/// A blob as stored.
#[derive(Debug, Clone)]
pub struct Blob {
    pub digest: Digest,
    /// The digest in double quotes: the content's entity tag.
    pub quoted_digest: Bytes,
    pub data: Bytes,
}

/// `"<digest>"`, computed once per stored item.
pub(crate) fn quote(digest: &Digest) -> Bytes {
    let text = digest.as_str();
    let mut quoted = Vec::with_capacity(text.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(text.as_bytes());
    quoted.push(b'"');
    Bytes::from(quoted)
}

/// One repository: its tags, manifests, the blobs its manifests reference, and referrers.
#[derive(Debug, Default)]
pub struct Repository {
    name: String,
    /// Each tag's manifest, by its hash.
    tags: HashMap<String, [u8; 32]>,
    /// Tag names in byte order, as the tags list returns them, with their JSON.
    tag_list: Listing,
    manifests: Sha256Map<Manifest>,
    blobs: Sha256Map<Blob>,
    /// Descriptors of the manifests whose `subject` is the key, ordered by digest.
    referrers: HashMap<Digest, Vec<Descriptor>>,
    /// Blobs of the layout that no manifest references (not served).
    unreferenced: usize,
}

impl Repository {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The manifest a tag points at, or the manifest with a digest.
    pub fn manifest(&self, reference: &Reference) -> Result<&Manifest, Error> {
        let hash = match reference {
            Reference::Tag(tag) => self.tags.get(tag.as_str()).copied(),
            Reference::Digest(digest) => digest.sha256(),
        };
        let found = hash.and_then(|hash| self.manifests.get(&hash));
        found.ok_or_else(|| Error::ManifestUnknown {
            name: self.name.clone(),
            reference: reference.to_string(),
        })
    }

    /// A blob referenced by one of this repository's manifests.
    pub fn blob(&self, digest: &Digest) -> Result<&Blob, Error> {
        let found = digest.sha256().and_then(|hash| self.blobs.get(&hash));
        found.ok_or_else(|| Error::BlobUnknown {
            name: self.name.clone(),
            digest: digest.clone(),
        })
    }

    /// Every tag, sorted by byte order.
    pub fn tags(&self) -> &[String] {
        self.tag_list.names()
    }

    /// The tags list (`{"name":…,"tags":[…]}`), ready to be paged.
    pub fn tag_list(&self) -> &Listing {
        &self.tag_list
    }

    /// The digest a tag points at.
    pub fn tag_digest(&self, tag: &str) -> Option<&Digest> {
        let hash = self.tags.get(tag)?;
        self.manifests.get(hash).map(|m| &m.digest)
    }

    /// Descriptors of the manifests that name `subject` as their subject, optionally only
    /// those of one artifact type. An unknown subject has no referrers.
    pub fn referrers<'a>(
        &'a self,
        subject: &Digest,
        artifact_type: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Descriptor> + 'a {
        self.referrers
            .get(subject)
            .into_iter()
            .flatten()
            .filter(move |d| artifact_type.is_none() || d.artifact_type.as_deref() == artifact_type)
    }

    /// Bytes a client downloads to pull the manifest `digest`: the manifest and every blob
    /// and child manifest it references.
    pub fn pull_size(&self, digest: &Digest) -> u64 {
        let Some(manifest) = digest.sha256().and_then(|hash| self.manifests.get(&hash)) else {
            return 0;
        };
        let own = manifest.data.len() as u64;
        let referenced: u64 = load::references(manifest)
            .map(|d| {
                let is_manifest = d
                    .digest
                    .sha256()
                    .is_some_and(|h| self.manifests.contains_key(&h));
                if is_manifest {
                    self.pull_size(&d.digest)
                } else {
                    d.size
                }
            })
            .sum();
        own + referenced
    }
}

/// Counts for the start-up log line and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub repositories: usize,
    pub tags: usize,
    pub manifests: usize,
    pub blobs: usize,
    /// Bytes of distinct manifests and blobs.
    pub bytes: u64,
}

/// The whole registry: immutable once built.
#[derive(Debug, Default)]
pub struct Registry {
    repositories: HashMap<String, Repository>,
    /// Repository names, sorted by byte order, as the catalog (`{"repositories":[…]}`) lists
    /// them.
    catalog: Listing,
    summary: Summary,
}

impl Registry {
    /// Builds and checks the registry from every file of the content root.
    pub fn from_files(files: impl IntoIterator<Item = ContentFile>) -> Result<Self, LoadError> {
        load::registry(files)
    }

    /// Builds the registry from a binary's content: from its build-time facts when they
    /// describe these files, else (saying why, unless there are none) from the files.
    pub fn from_content(content: Content) -> Result<(Self, Checked), LoadError> {
        match facts::read(&content.facts, &content.files) {
            Ok(registry) => {
                registry
                    .repositories()
                    .for_each(Repository::warn_unreferenced);
                Ok((registry, Checked::AtBuild))
            }
            Err(stale) => {
                if !content.facts.is_empty() {
                    log::warn!("{stale}; checking it now");
                }
                Ok((Self::from_files(content.files)?, Checked::AtStartup))
            }
        }
    }

    /// The facts of this registry, built from `files`, for [`Registry::from_content`]: which
    /// file each body it holds is, and the strings it keeps. `None` for content facts cannot
    /// describe (referrers).
    pub fn facts(&self, files: &[ContentFile]) -> Option<Vec<u8>> {
        facts::write(self, files)
    }

    /// Builds the registry from `files` and the facts written of them, or says why the facts
    /// do not describe them.
    pub fn from_facts(facts: &Bytes, files: &[ContentFile]) -> Result<Self, Stale> {
        facts::read(facts, files)
    }

    pub fn repository(&self, name: &RepositoryName) -> Result<&Repository, Error> {
        self.repositories
            .get(name.as_str())
            .ok_or_else(|| Error::NameUnknown(name.clone()))
    }

    /// Every repository name, sorted by byte order, ready to be paged.
    pub fn catalog(&self) -> &Listing {
        &self.catalog
    }

    /// Repositories in catalog order.
    pub fn repositories(&self) -> impl Iterator<Item = &Repository> {
        self.catalog
            .names()
            .iter()
            .filter_map(|n| self.repositories.get(n))
    }

    pub fn summary(&self) -> Summary {
        self.summary
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn sha256_keys_hash_to_their_first_eight_bytes() {
        let hasher = BuildHasherDefault::<Sha256Prefix>::default();
        let mut key = [7u8; 32];
        key[..8].copy_from_slice(&42u64.to_le_bytes());
        assert_eq!(hasher.hash_one(key), 42);
        key[0] = 43;
        assert_eq!(hasher.hash_one(key), 43);
    }
}
