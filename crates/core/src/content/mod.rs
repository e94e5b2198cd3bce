//! The content model: an immutable, in-memory registry of OCI image layouts, looked up by
//! validated names, tags and digests, and the one way content becomes one.
//!
//! How content flows through it:
//! 1. The build describes the content ([`Description::of`], module `load`): from every file as
//!    it has it ([`BuildFile`]: bytes held, or left on disk), a folder holding an `oci-layout`
//!    file is one repository, named by its path (`charts/hello/oci-layout` -> `charts/hello`);
//!    each layout's `index.json` is read, every manifest followed (indexes recursively), each
//!    referenced blob checked present with the descriptor's size and stored under its sha256,
//!    tags and referrers recorded. The two files beside the layouts, [`CHART_IMAGES_FILE`]
//!    (the images each chart version needs, module `chart_images`) and [`VERIFICATION_FILE`]
//!    (what was verified at build, module `verification`), are read and checked too. A
//!    problem is a `LoadError` naming the file: such content is described as refused.
//! 2. The description is written down as facts ([`Description::facts`], module `facts`):
//!    postcard, naming each body by its file, bound to every file by path and sha256.
//! 3. [`Registry::from_facts`] builds the registry from the facts and the files a binary holds
//!    ([`HeldFile`]), after checking that the facts describe exactly those files; facts of
//!    other files, or of content the build refused, are refused, naming the file. Tests, which
//!    have only files, take the same path through [`Registry::from_files`]; `chartreg verify`
//!    describes the files again and names where the binary's facts differ
//!    ([`Description::differences`]). The registry keeps the bytes of the list of chart
//!    images and of the verification record, if any, and reads each when first asked
//!    ([`Registry::chart_images`], [`Registry::chart_verification`]).
//! 4. Requests look up `Registry::repository`, then `Repository::manifest` / `blob` / `tags` /
//!    `referrers`: hash-map lookups returning the stored bytes (`Bytes`, zero-copy for embedded
//!    `&'static` data). Misses are `Error::NameUnknown` / `ManifestUnknown` / `BlobUnknown`.
//!
//! No HTTP types live here; `http` maps `Error` to statuses and codes.

// Requests and content reach this module: no arithmetic that can overflow or divide by zero
// (checked, saturating or widened instead), outside tests.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

mod chart_images;
mod description;
mod document;
mod facts;
mod input;
mod kinds;
mod listing;
mod load;
mod maps;
mod namespaces;
mod problem;
mod verification;

use bytes::Bytes;
use bytestring::ByteString;

use crate::oci::layout::Descriptor;
use crate::oci::{Digest, Namespace, Reference, RepositoryName};

use maps::{HashMap, Sha256Map};
use namespaces::Namespaces;

pub use chart_images::{
    CHART_IMAGES_FILE, ChartImage, ChartImages, ChartImagesFile, ImageEntry, VersionImages, Way,
};
pub use description::Description;
pub use document::{Document, Unreadable};
pub use facts::{FactsError, Stale, Unservable};
pub use input::{BuildBytes, BuildFile, Content, HeldFile};
pub use kinds::{Artifact, Kind};
pub use listing::Listing;
pub use problem::{LoadError, Problem};
pub use verification::{
    ChartsMaterial, Evidence, Form, ImagesMaterial, KeylessMaterial, PolicyRecord, Record,
    UpstreamIndex, VERIFICATION_FILE, VerificationFile,
};

/// Why files do not make a registry ([`Registry::from_files`]).
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Facts(#[from] FactsError),
    #[error(transparent)]
    Unservable(#[from] Unservable),
}

/// A lookup that found nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("repository `{0}` is not known to this registry")]
    NameUnknown(RepositoryName),
    #[error("manifest `{reference}` is not known in repository `{name}`")]
    ManifestUnknown {
        name: RepositoryName,
        reference: Reference,
    },
    #[error("blob `{digest}` is not known in repository `{name}`")]
    BlobUnknown {
        name: RepositoryName,
        digest: Digest,
    },
    /// `?ns=` named a registry this content holds no image of.
    #[error(
        "repository `{name}` is not known: this registry holds no images of registry `{namespace}` (it holds {})",
        namespaces::listed(held)
    )]
    NamespaceUnknown {
        name: RepositoryName,
        namespace: Namespace,
        held: Vec<Namespace>,
    },
    /// A path held for several registries, asked for without `?ns=`.
    #[error(
        "repository `{name}` is held for {} registries: {}; ask with `?ns=REGISTRY` or by the full name",
        candidates.len(),
        namespaces::candidates(candidates)
    )]
    Ambiguous {
        name: RepositoryName,
        /// Each namespace holding it, with the repository's full name.
        candidates: Vec<(Namespace, String)>,
    },
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

/// One repository: its tags, manifests, the blobs its manifests reference, and referrers.
#[derive(Debug)]
pub struct Repository {
    name: RepositoryName,
    /// The registry the repository's images came from and the path within it, when its first
    /// path component names one (see module `namespaces`).
    namespace: Option<(Namespace, String)>,
    /// Each tag's manifest, by its hash.
    tags: HashMap<String, [u8; 32]>,
    /// The unprefixed forms of charts' `v` tags, listed beside them (see
    /// [`Repository::finish_tags`]).
    unprefixed: HashMap<String, [u8; 32]>,
    /// Tag names (and unprefixed forms) in byte order, as the tags list returns them, with
    /// their JSON.
    tag_list: Listing,
    manifests: Sha256Map<Manifest>,
    blobs: Sha256Map<Blob>,
    /// Descriptors of the manifests whose `subject` is the key, ordered by digest.
    referrers: HashMap<Digest, Vec<Descriptor>>,
    /// Blobs of the layout that no manifest references (not served).
    unreferenced: usize,
}

impl Repository {
    fn new(name: RepositoryName) -> Self {
        let namespace = Namespace::split(name.as_str()).map(|(ns, path)| (ns, path.to_owned()));
        Repository {
            name,
            namespace,
            tags: HashMap::default(),
            unprefixed: HashMap::default(),
            tag_list: Listing::default(),
            manifests: Sha256Map::default(),
            blobs: Sha256Map::default(),
            referrers: HashMap::default(),
            unreferenced: 0,
        }
    }

    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The upstream registry this repository's images came from, and the path within it (as
    /// the registry names it), when the content keeps it.
    pub fn namespace(&self) -> Option<(&Namespace, &str)> {
        self.namespace
            .as_ref()
            .map(|(ns, path)| (ns, path.as_str()))
    }

    /// The manifest a tag points at, or the manifest with a digest. A tag that does not exist
    /// names the tag with its `v` prefix toggled, when that one does (`v0.14.5` finds
    /// `0.14.5`, `1.0.0` finds `v1.0.0`): people write versions both ways.
    #[inline]
    pub fn manifest(&self, reference: &Reference) -> Result<&Manifest, Error> {
        let hash = match reference {
            Reference::Tag(tag) => self.tag_hash(tag.as_str()),
            Reference::Digest(digest) => digest.sha256(),
        };
        let found = hash.and_then(|hash| self.manifests.get(&hash));
        found.ok_or_else(|| Error::ManifestUnknown {
            name: self.name.clone(),
            reference: reference.clone(),
        })
    }

    /// A blob referenced by one of this repository's manifests.
    #[inline]
    pub fn blob(&self, digest: &Digest) -> Result<&Blob, Error> {
        let found = digest.sha256().and_then(|hash| self.blobs.get(&hash));
        found.ok_or_else(|| Error::BlobUnknown {
            name: self.name.clone(),
            digest: digest.clone(),
        })
    }

    #[inline]
    fn tag_hash(&self, tag: &str) -> Option<[u8; 32]> {
        if let Some(hash) = self.tags.get(tag).or_else(|| self.unprefixed.get(tag)) {
            return Some(*hash);
        }
        match tag.strip_prefix('v') {
            Some(unprefixed) => self.tags.get(unprefixed).copied(),
            None => self.tags.get(&format!("v{tag}")).copied(),
        }
    }

    /// Every tag, sorted by byte order.
    pub fn tags(&self) -> Vec<&str> {
        let mut tags: Vec<&str> = self.tags.keys().map(String::as_str).collect();
        tags.sort_unstable();
        tags
    }

    /// The tags list (`{"name":…,"tags":[…]}`), ready to be paged.
    #[inline]
    pub fn tag_list(&self) -> &Listing {
        &self.tag_list
    }

    /// The digest a tag points at.
    pub fn tag_digest(&self, tag: &str) -> Option<&Digest> {
        self.tagged(tag).map(|m| &m.digest)
    }

    /// The manifest a tag (as [`Repository::tags`] lists it) points at.
    pub fn tagged(&self, tag: &str) -> Option<&Manifest> {
        let hash = self.tags.get(tag)?;
        self.manifests.get(hash)
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

    /// Bytes a client downloads to pull `manifest` (one of this repository's): the manifest
    /// and every blob and child manifest it references.
    pub fn pull_size(&self, manifest: &Manifest) -> Result<u64, Unreadable> {
        let own = manifest.data.len() as u64;
        let mut referenced = 0u64;
        for d in manifest.document()?.references() {
            let child = d.digest.sha256().and_then(|h| self.manifests.get(&h));
            let size = match child {
                Some(child) => self.pull_size(child)?,
                None => d.size,
            };
            referenced = referenced.saturating_add(size);
        }
        Ok(own.saturating_add(referenced))
    }

    /// Says that some blobs of the layout are not served, if so.
    fn warn_unreferenced(&self) {
        if self.unreferenced > 0 {
            log::warn!(
                "{}: {} blob(s) referenced by no manifest are not served",
                self.name,
                self.unreferenced
            );
        }
    }

    /// Every manifest and blob once (a manifest may also be referenced as a blob), with its size.
    fn distinct_content(&self) -> impl Iterator<Item = (&[u8; 32], u64)> {
        let blobs = self.blobs.iter().map(|(h, b)| (h, b.data.len() as u64));
        let manifests = self
            .manifests
            .iter()
            .filter(|(h, _)| !self.blobs.contains_key(*h));
        blobs.chain(manifests.map(|(h, m)| (h, m.data.len() as u64)))
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
    /// The namespaced repositories by their path within the namespace.
    namespaces: Namespaces,
    summary: Summary,
    /// The images each chart version needs, when the content lists them (module
    /// `chart_images`).
    chart_images: chart_images::Held,
    /// What was verified at build, when the content records it (module `verification`).
    verification: verification::Held,
}

impl Registry {
    /// The registry of `repositories`, with its catalog and summary.
    fn assemble(repositories: Vec<Repository>) -> Self {
        let mut summary = Summary {
            repositories: repositories.len(),
            ..Summary::default()
        };
        // Bytes of distinct content: a blob may be in several repositories.
        let mut distinct: Sha256Map<u64> = Sha256Map::default();
        let several = repositories.len() > 1;
        let mut names = Vec::with_capacity(repositories.len());
        let mut by_name = HashMap::with_capacity_and_hasher(repositories.len(), Default::default());
        for repository in repositories {
            summary.tags = summary.tags.saturating_add(repository.tags.len());
            summary.manifests = summary.manifests.saturating_add(repository.manifests.len());
            summary.blobs = summary.blobs.saturating_add(repository.blobs.len());
            for (hash, size) in repository.distinct_content() {
                if several {
                    distinct.insert(*hash, size);
                } else {
                    summary.bytes = summary.bytes.saturating_add(size);
                }
            }
            names.push(repository.name().to_owned());
            by_name.insert(repository.name().to_owned(), repository);
        }
        if several {
            summary.bytes = distinct
                .values()
                .fold(0, |sum, size| sum.saturating_add(*size));
        }
        names.sort_unstable();
        Registry {
            repositories: by_name,
            namespaces: Namespaces::of(names.iter().map(String::as_str)),
            catalog: Listing::catalog(names),
            summary,
            chart_images: chart_images::Held::default(),
            verification: verification::Held::default(),
        }
    }

    /// The registry a binary serves: built from the facts its build wrote and the files it
    /// holds, which the facts must describe exactly (see module `facts`).
    pub fn from_facts(facts: &Bytes, files: &[HeldFile]) -> Result<Self, Unservable> {
        facts::read(facts, files)
    }

    /// The registry of `files`, the way a binary gets it: described (checking everything),
    /// written down as facts, and built from those facts and the files.
    pub fn from_files(files: impl IntoIterator<Item = HeldFile>) -> Result<Self, FilesError> {
        let files: Vec<HeldFile> = files.into_iter().collect();
        let built: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
        let description = Description::of(&built);
        let facts = description.facts()?;
        if let Err(refused) = description.found {
            return Err(FilesError::Load(refused));
        }
        Ok(Self::from_facts(&Bytes::from(facts), &files)?)
    }

    /// The repository named `name` exactly.
    #[inline]
    pub fn repository(&self, name: &RepositoryName) -> Result<&Repository, Error> {
        self.repositories
            .get(name.as_str())
            .ok_or_else(|| Error::NameUnknown(name.clone()))
    }

    /// The repository a request names: `name` in the upstream registry `namespace` (`?ns=`),
    /// or without one `name` exactly, else the one registry's repository whose path it is
    /// (see module `namespaces`).
    #[inline]
    pub fn resolve(
        &self,
        name: &RepositoryName,
        namespace: Option<&Namespace>,
    ) -> Result<&Repository, Error> {
        if namespace.is_none()
            && let Some(exact) = self.repositories.get(name.as_str())
        {
            return Ok(exact);
        }
        self.resolve_in_namespaces(name, namespace)
    }

    /// [`Registry::resolve`] when the name is not a repository's, or `?ns=` was given (a
    /// node's containerd through a mirror). Out of line: a name asked without `ns` (Helm,
    /// skopeo, the path form) stays one inlined lookup, 118 instructions a request fewer by
    /// callgrind (bench/results/issue27-ab.txt); with `ns` it costs one call more.
    #[inline(never)]
    fn resolve_in_namespaces(
        &self,
        name: &RepositoryName,
        namespace: Option<&Namespace>,
    ) -> Result<&Repository, Error> {
        let full = match namespace {
            None => self.namespaces.only(name)?,
            Some(namespace) => self
                .namespaces
                .within(name, namespace, |full| self.repositories.contains_key(full))?,
        };
        self.repositories
            .get(full)
            .ok_or_else(|| Error::NameUnknown(name.clone()))
    }

    /// The upstream registries whose images this content holds, sorted.
    pub fn namespaces(&self) -> &[Namespace] {
        self.namespaces.held()
    }

    /// Every repository name, sorted by byte order, ready to be paged.
    #[inline]
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
