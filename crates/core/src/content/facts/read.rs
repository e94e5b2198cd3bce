//! Start-up: the [`Registry`] a binary's facts describe, built from the files it holds, or why
//! it is not served ([`Unservable`]).
//!
//! 1. The facts are decoded without copies: their strings borrow the facts' bytes, and what the
//!    registry keeps of them (quoted digests, media types) are slices of those bytes.
//! 2. They must list exactly the files at hand, by path and sha256 (matched by path, in any
//!    order); facts of other files are [`Stale`]: the binary is not what its build made.
//! 3. Content the build found it cannot serve is refused with the build's words, naming the
//!    file.
//! 4. The rest is checked as far as it can be without the JSON: every digest must name the
//!    sha256 of the file it is the digest of, names and tags must be valid, tags and
//!    repositories in order (each once). `chartreg verify` describes the content in full
//!    again, should the facts ever lie.

use bytes::Bytes;
use bytestring::ByteString;

use super::{Facts, FileFacts, Found, RepositoryFacts, decode};
use crate::content::beside::Beside;
use crate::content::chart_images::CHART_IMAGES_FILE;
use crate::content::input::HeldFile;
use crate::content::origins::ORIGINS_FILE;
use crate::content::verification::VERIFICATION_FILE;
use crate::content::{Blob, HashMap, Manifest, Registry, Repository, Sha256Map};
use crate::oci::layout::{Annotations, Descriptor};
use crate::oci::{Digest, DigestError, NameError, RepositoryName, Tag, TagError};

/// Why a binary's content is not served.
#[derive(Debug, thiserror::Error)]
pub enum Unservable {
    /// The build found the content cannot be served: the file, and what is wrong with it.
    #[error("{path}: {problem}")]
    Refused { path: String, problem: String },
    #[error("the build-time facts do not describe this content: {0}")]
    Stale(#[from] Stale),
}

/// Facts that do not describe the files at hand (or are no facts at all).
#[derive(Debug, thiserror::Error)]
pub enum Stale {
    #[error("the build wrote none")]
    None,
    #[error("they cannot be read ({0})")]
    Unreadable(postcard::Error),
    #[error("they are facts of version {0}, not of this one")]
    Version(u32),
    #[error("they describe {described} files, not the {held} at hand")]
    FileCount { described: usize, held: usize },
    #[error("{0} is not a file they describe")]
    NotDescribed(String),
    #[error("{0} is not the file they describe")]
    OtherBytes(String),
    #[error("they name file {0}, which is not there")]
    NoSuchFile(u32),
    #[error("they name manifest {0}, which is not there")]
    NoSuchManifest(u32),
    #[error("a digest does not name its content: {quoted} is said of {path}")]
    Digest { quoted: String, path: String },
    #[error("a repository name is not valid: {0}")]
    Name(NameError),
    #[error("the repositories are not in order: {0} comes after {1}")]
    RepositoryOrder(RepositoryName, RepositoryName),
    #[error("a tag is not valid: {0}")]
    Tag(TagError),
    #[error("the tags of {repository} are not in order: {tag}")]
    TagOrder { repository: String, tag: String },
    #[error("a subject is not a digest: {0}")]
    Subject(DigestError),
}

/// The registry the facts in `bytes` describe, built from `files` (which must be the files the
/// facts were written of, in any order).
pub(crate) fn read(bytes: &Bytes, files: &[HeldFile]) -> Result<Registry, Unservable> {
    let facts: Facts<'_> = decode(bytes)?;
    let sorted = described_files(&facts.files, files)?;
    let repositories = match facts.found {
        Found::Served(repositories) => repositories,
        Found::Refused { path, problem } => {
            return Err(Unservable::Refused {
                path: path.to_owned(),
                problem: problem.to_owned(),
            });
        }
    };
    let reader = Reader {
        bytes,
        files: &sorted,
    };
    let mut built: Vec<Repository> = Vec::with_capacity(repositories.len());
    for described in &repositories {
        let repository = reader.repository(described)?;
        // The catalog lists them in byte order, each once, as the tags of a repository.
        if let Some(last) = built.last()
            && last.name.as_str() >= repository.name.as_str()
        {
            return Err(Stale::RepositoryOrder(repository.name, last.name.clone()).into());
        }
        built.push(repository);
    }
    let mut registry = Registry::assemble(built);
    // The files beside the layouts: their bytes kept, read on first use (module `beside`), so
    // that start-up does no more than one search for each.
    let beside = |name: &str| {
        sorted
            .binary_search_by(|f| f.path.as_ref().cmp(name))
            .ok()
            .and_then(|i| sorted.get(i))
            .map(|f| f.data.clone())
    };
    registry.chart_images = Beside::of(beside(CHART_IMAGES_FILE));
    registry.verification = Beside::of(beside(VERIFICATION_FILE));
    registry.origins = Beside::of(beside(ORIGINS_FILE));
    registry
        .repositories()
        .for_each(Repository::warn_unreferenced);
    Ok(registry)
}

/// `files` in path order, checked to be those `described`.
fn described_files<'f>(
    described: &[FileFacts<'_>],
    files: &'f [HeldFile],
) -> Result<Vec<&'f HeldFile>, Stale> {
    let mut sorted: Vec<&HeldFile> = files.iter().collect();
    // The binary's files come mostly in path order already: check before sorting.
    if !sorted.is_sorted_by(|a, b| a.path <= b.path) {
        sorted.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    }
    if sorted.len() != described.len() {
        return Err(Stale::FileCount {
            described: described.len(),
            held: sorted.len(),
        });
    }
    for (file, described) in sorted.iter().zip(described) {
        if file.path != described.path {
            return Err(Stale::NotDescribed(file.path.to_string()));
        }
        if file.sha256.as_slice() != described.sha256 {
            return Err(Stale::OtherBytes(file.path.to_string()));
        }
    }
    Ok(sorted)
}

/// What the parts of the facts are read with: their bytes, and the files in path order.
struct Reader<'a> {
    bytes: &'a Bytes,
    files: &'a [&'a HeldFile],
}

impl Reader<'_> {
    /// A string of the facts as shared text (no copy).
    fn text(&self, text: &str) -> ByteString {
        // Postcard borrows every string from the bytes it decodes: the slice is theirs.
        let shared = self.bytes.slice_ref(text.as_bytes());
        ByteString::try_from(shared).unwrap_or_else(|_| ByteString::from(text))
    }

    /// The body of file `n`, and its sha256, which `quoted` must name.
    fn body(&self, n: u32, quoted: &str) -> Result<(Bytes, [u8; 32], Digest, Bytes), Stale> {
        let Some(file) = self.files.get(n as usize) else {
            return Err(Stale::NoSuchFile(n));
        };
        let hash = file.sha256;
        // The quoted digest must be exactly `"sha256:<hex of the file's sha256>"`: compared with
        // that, it needs no parsing (a third of start-up, when it was parsed).
        let mut expected = [0u8; 73];
        expected[0] = b'"';
        expected[1..8].copy_from_slice(b"sha256:");
        let encoded = hex::encode_to_slice(hash, &mut expected[8..72]);
        expected[72] = b'"';
        if encoded.is_err() || quoted.as_bytes() != expected {
            return Err(Stale::Digest {
                quoted: quoted.to_owned(),
                path: file.path.to_string(),
            });
        }
        let quoted = self.text(quoted);
        let digest = Digest::from_known_sha256(quoted.slice_ref(&quoted[1..72]), hash);
        Ok((file.data.clone(), hash, digest, quoted.into_bytes()))
    }

    fn repository(&self, described: &RepositoryFacts<'_>) -> Result<Repository, Stale> {
        let name: RepositoryName = described.name.parse().map_err(Stale::Name)?;
        let mut manifests =
            Sha256Map::with_capacity_and_hasher(described.manifests.len(), Default::default());
        let mut positions = Vec::with_capacity(described.manifests.len());
        for m in &described.manifests {
            let (data, hash, digest, quoted_digest) = self.body(m.file, m.quoted_digest)?;
            let manifest = Manifest {
                media_type: self.text(m.media_type),
                digest,
                quoted_digest,
                data,
            };
            positions.push(hash);
            manifests.insert(hash, manifest);
        }
        let mut blobs =
            Sha256Map::with_capacity_and_hasher(described.blobs.len(), Default::default());
        for b in &described.blobs {
            let (data, hash, digest, quoted_digest) = self.body(b.file, b.quoted_digest)?;
            let blob = Blob {
                digest,
                quoted_digest,
                data,
            };
            blobs.insert(hash, blob);
        }
        let manifest_at = |position: u32| {
            positions
                .get(position as usize)
                .ok_or(Stale::NoSuchManifest(position))
        };
        let mut tags = HashMap::with_capacity_and_hasher(described.tags.len(), Default::default());
        let mut names: Vec<String> = Vec::with_capacity(described.tags.len());
        for tag in &described.tags {
            tag.name.parse::<Tag>().map_err(Stale::Tag)?;
            if names.last().is_some_and(|last| last.as_str() >= tag.name) {
                return Err(Stale::TagOrder {
                    repository: described.name.to_owned(),
                    tag: tag.name.to_owned(),
                });
            }
            tags.insert(tag.name.to_owned(), *manifest_at(tag.manifest)?);
            names.push(tag.name.to_owned());
        }
        let mut referrers: HashMap<Digest, Vec<Descriptor>> = HashMap::default();
        for r in &described.referrers {
            let subject = Digest::from_shared(self.text(r.subject)).map_err(Stale::Subject)?;
            let Some(m) = manifests.get(manifest_at(r.manifest)?) else {
                return Err(Stale::NoSuchManifest(r.manifest));
            };
            referrers.entry(subject).or_default().push(Descriptor {
                media_type: m.media_type.to_string(),
                digest: m.digest.clone(),
                size: m.data.len() as u64,
                annotations: r
                    .annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<Annotations>(),
                platform: None,
                artifact_type: r.artifact_type.map(str::to_owned),
            });
        }
        let mut repository = Repository::new(name);
        repository.tags = tags;
        repository.manifests = manifests;
        repository.blobs = blobs;
        repository.referrers = referrers;
        repository.unreferenced = described.unreferenced as usize;
        repository.finish_tags(names);
        Ok(repository)
    }
}
