//! Building a `Registry` from files: find the layouts, follow every manifest, verify every
//! referenced blob, and refuse with a `LoadError` that names the file at the first problem.
//!
//! This is what start-up costs, so it runs in phases, the per-file and per-manifest ones spread
//! over every CPU ([`in_parallel`]):
//! 1. Each file is placed in its layout (the deepest folder above it holding an `oci-layout`)
//!    and classified; a blob's name is checked against its sha256 (computed at build time for
//!    embedded files); `oci-layout` and `index.json` are parsed where they are met.
//! 2. Per layout: its files' problems are looked at, its blobs indexed by hash, and the digests
//!    its `index.json` lists are read.
//! 3. Every listed manifest is fetched and, for an image manifest, parsed with its blobs found.
//! 4. Per layout, in `index.json` order: manifests are checked and stored (nested indexes are
//!    followed here), then its tags.
//!
//! Phases 1 to 3 keep the problems they meet; the first one is reported in the order of a
//! one-pass load (layouts by name; in a layout its files in order, then its manifests in index
//! order, then its tags), whatever the number of CPUs.
//!
//! Strings read from JSON share the files' bytes: a digest's text, its quoted form (the JSON
//! string with its quotes, which is the ETag) and a manifest's media type are slices, not copies.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;
use bytestring::ByteString;
use sha2::{Digest as _, Sha256};

use super::raw::{RawDescriptor, RawImage, RawIndex, from_json};
use super::{Blob, ContentFile, Listing, Manifest, Registry, Repository, Sha256Map, in_parallel};
use crate::oci::layout::{
    self, Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION, OCI_LAYOUT_FILE,
    OciLayout, REF_NAME,
};
use crate::oci::media_type::{ManifestKind, manifest_kind};
use crate::oci::{Digest, DigestError, NameError, RepositoryName, TagError, decode_sha256};

/// Indexes may nest; content addressing rules out cycles, this bounds the depth anyway.
const MAX_NESTING: usize = 8;

/// Content that cannot be served, and the file it is in.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct LoadError {
    pub path: String,
    pub problem: Problem,
}

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error(
        "not part of any OCI image layout (no `{OCI_LAYOUT_FILE}` file in its folder or above)"
    )]
    OutsideLayout,
    #[error(
        "unexpected file in an OCI image layout (only `{OCI_LAYOUT_FILE}`, `{INDEX_FILE}` and `blobs/<algorithm>/<digest>` belong there)"
    )]
    UnexpectedFile,
    #[error("an image layout at the top of the content folder has no repository name")]
    UnnamedLayout,
    #[error("the layout's folder is not a valid repository name: {0}")]
    Name(NameError),
    #[error("missing: every image layout needs an `{INDEX_FILE}`")]
    MissingIndex,
    #[error("invalid JSON: {0}")]
    Json(serde_json::Error),
    #[error("a descriptor's digest is invalid: {0}")]
    DescriptorDigest(DigestError),
    #[error("unsupported image layout version `{0}` (expected `{LAYOUT_VERSION}`)")]
    LayoutVersion(String),
    #[error("only sha256 content is supported, not `{0}`")]
    Algorithm(String),
    #[error("the file name is not a valid digest: {0}")]
    BlobName(String),
    #[error("content has digest {actual}, not the {expected} it is stored under")]
    DigestMismatch { expected: Digest, actual: Digest },
    #[error("referenced blob {0} is missing")]
    MissingBlob(Digest),
    #[error("{digest} is {actual} bytes, but its descriptor says {expected}")]
    Size {
        digest: Digest,
        expected: u64,
        actual: u64,
    },
    #[error("`{0}` is not a manifest media type (OCI or Docker image manifest or index)")]
    NotManifest(String),
    #[error("`{0}` is not a valid media type (RFC 6838 `type/subtype`)")]
    MediaType(String),
    #[error(
        "manifest {digest} says its mediaType is `{body}`, but its descriptor says `{descriptor}`"
    )]
    MediaTypeMismatch {
        digest: Digest,
        body: String,
        descriptor: String,
    },
    #[error("manifest {0}: schemaVersion must be 2")]
    SchemaVersion(Digest),
    #[error("manifest {digest}: {source}")]
    Manifest {
        digest: Digest,
        source: serde_json::Error,
    },
    #[error("invalid tag in `{REF_NAME}`: {0}")]
    Tag(TagError),
    #[error("tag `{tag}` names both {first} and {second}")]
    DuplicateTag {
        tag: String,
        first: Digest,
        second: Digest,
    },
    #[error("indexes nest deeper than {MAX_NESTING} levels")]
    TooDeep,
}

fn fail<T>(path: impl Into<String>, problem: Problem) -> Result<T, LoadError> {
    Err(LoadError {
        path: path.into(),
        problem,
    })
}

/// Files each thread takes at a time in phase 1, and manifests in phase 3: a chunk costs far
/// more than taking it, and a thread slowed down by another process simply takes fewer.
const FILES_PER_CHUNK: usize = 1024;
const MANIFESTS_PER_CHUNK: usize = 128;

pub(super) fn registry(
    files: impl IntoIterator<Item = ContentFile>,
) -> Result<Registry, LoadError> {
    let files: Vec<ContentFile> = files.into_iter().collect();
    let roots = Roots::find(&files)?;

    // Phase 1. Files stay in their chunks: file `i` is `placed[i / FILES_PER_CHUNK][i % ...]`.
    let mut placed: Vec<Vec<Placed<'_>>> = in_parallel(&files, FILES_PER_CHUNK, |chunk| {
        let mut last = None;
        chunk
            .iter()
            .map(|file| roots.place(file, &mut last))
            .collect::<Vec<_>>()
    });
    // A file outside every layout is refused before any layout is read.
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); roots.names.len()];
    for (i, p) in placed.iter().flatten().enumerate() {
        match p.layout {
            Some(layout) => members[layout].push(i),
            None => return fail(files[i].path.as_ref(), Problem::OutsideLayout),
        }
    }

    // Phase 2.
    let gathered: Vec<Result<Gathered<'_>, LoadError>> = roots
        .names
        .iter()
        .zip(&members)
        .map(|(root, members)| gather(root, members, &files, &mut placed))
        .collect();

    // Phase 3. Each chunk's results come with the blobs they found.
    let work: Vec<(&Gathered<'_>, usize)> = gathered
        .iter()
        .flatten()
        .flat_map(|g| (0..g.listed.len()).map(move |k| (g, k)))
        .collect();
    let mut parts = in_parallel(&work, MANIFESTS_PER_CHUNK, |chunk| {
        let mut blobs = Vec::with_capacity(2 * chunk.len());
        let results: Vec<_> = chunk
            .iter()
            .map(|&(g, k)| g.prepare(&g.index.manifests[k], &g.listed[k], &mut blobs))
            .collect();
        (results, blobs)
    });
    let mut prepared = parts.iter_mut().flat_map(|(results, blobs)| {
        let blobs: &[FoundBlob] = blobs;
        results.drain(..).map(move |result| (result, blobs))
    });

    // Phase 4.
    let mut registry = Registry::default();
    let mut names = Vec::new();
    // Bytes of distinct content: a blob may be in several repositories.
    let mut distinct: Sha256Map<u64> = Sha256Map::default();
    let several = gathered.len() > 1;
    for layout in gathered {
        let repository = load_layout(&layout?, &mut prepared)?;
        for (hash, size) in repository.distinct_content() {
            if several {
                distinct.insert(*hash, size);
            } else {
                registry.summary.bytes += size;
            }
        }
        registry.summary.tags += repository.tags().len();
        registry.summary.manifests += repository.manifests.len();
        registry.summary.blobs += repository.blobs.len();
        names.push(repository.name.clone());
        registry
            .repositories
            .insert(repository.name.clone(), repository);
    }
    names.sort();
    registry.summary.repositories = names.len();
    registry.catalog = Listing::catalog(names);
    if several {
        registry.summary.bytes = distinct.values().sum();
    }
    Ok(registry)
}

impl Repository {
    /// Says that some blobs of the layout are not served, if so.
    pub(super) fn warn_unreferenced(&self) {
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

/// The folders holding an `oci-layout` file, sorted.
struct Roots<'f> {
    names: Vec<&'f str>,
    /// Whether another layout lies inside each one.
    nested: Vec<bool>,
}

/// What phase 1 made of a file: its layout (none: outside every layout), and what it is there.
struct Placed<'f> {
    layout: Option<usize>,
    kind: Result<Kind<'f>, Box<LoadError>>,
}

enum Kind<'f> {
    /// `oci-layout`, checked.
    Marker,
    /// `index.json`, parsed (a problem with it is reported after those of the other files).
    Index(Box<Result<RawIndex<'f>, LoadError>>),
    /// A blob whose name is its sha256.
    Blob([u8; 32]),
}

impl<'f> Roots<'f> {
    fn find(files: &'f [ContentFile]) -> Result<Self, LoadError> {
        let marker_suffix = format!("/{OCI_LAYOUT_FILE}");
        let mut names = Vec::new();
        for file in files {
            let path: &'f str = &file.path;
            if path == OCI_LAYOUT_FILE {
                return fail(path, Problem::UnnamedLayout);
            }
            if let Some(root) = path.strip_suffix(&marker_suffix) {
                names.push(root);
            }
        }
        names.sort_unstable();
        names.dedup();
        // Names with a layout's name as prefix follow it in sorted order.
        let nested = (0..names.len())
            .map(|i| {
                names[i + 1..]
                    .iter()
                    .take_while(|other| other.starts_with(names[i]))
                    .any(|other| inside(other, names[i]))
            })
            .collect();
        Ok(Roots { names, nested })
    }

    /// The layout `path` belongs to: the deepest folder above it that holds an `oci-layout`.
    /// Files come mostly layout by layout: `last` is the layout of the file before.
    fn layout_of(&self, path: &str, last: &mut Option<usize>) -> Option<usize> {
        if let Some(layout) = *last
            && !self.nested[layout]
            && inside(path, self.names[layout])
        {
            return Some(layout);
        }
        let mut inner = path;
        while let Some((parent, _)) = inner.rsplit_once('/') {
            if let Ok(layout) = self.names.binary_search(&parent) {
                *last = Some(layout);
                return Some(layout);
            }
            inner = parent;
        }
        None
    }

    fn place(&self, file: &'f ContentFile, last: &mut Option<usize>) -> Placed<'f> {
        let Some(layout) = self.layout_of(&file.path, last) else {
            return Placed {
                layout: None,
                kind: Ok(Kind::Marker),
            };
        };
        let inner = &file.path[self.names[layout].len() + 1..];
        Placed {
            layout: Some(layout),
            kind: classify(file, inner).map_err(Box::new),
        }
    }
}

/// Whether `path` lies inside the folder `root`.
fn inside(path: &str, root: &str) -> bool {
    path.len() > root.len() + 1 && path.starts_with(root) && path.as_bytes()[root.len()] == b'/'
}

/// What a file is in its layout (`inner`: its path there), checked as far as it can be alone.
fn classify<'f>(file: &'f ContentFile, inner: &str) -> Result<Kind<'f>, LoadError> {
    let path: &'f str = &file.path;
    match inner {
        OCI_LAYOUT_FILE => {
            let marker: OciLayout = parse_json(path, &file.data)?;
            if marker.image_layout_version != LAYOUT_VERSION {
                return fail(path, Problem::LayoutVersion(marker.image_layout_version));
            }
            Ok(Kind::Marker)
        }
        INDEX_FILE => Ok(Kind::Index(Box::new(parse_json(path, &file.data)))),
        _ => {
            let blob = inner
                .strip_prefix("blobs/")
                .and_then(|rest| rest.split_once('/'));
            let Some((algorithm, encoded)) = blob else {
                return fail(path, Problem::UnexpectedFile);
            };
            let named = (algorithm == "sha256")
                .then(|| decode_sha256(encoded.as_bytes()))
                .flatten();
            if named.is_none() && encoded.contains('/') {
                return fail(path, Problem::UnexpectedFile);
            }
            if algorithm != "sha256" {
                return fail(path, Problem::Algorithm(algorithm.to_owned()));
            }
            let hash = file
                .sha256
                .unwrap_or_else(|| Sha256::digest(&file.data).into());
            // A name equal to the content's digest is a valid one; parse only to explain.
            if named == Some(hash) {
                return Ok(Kind::Blob(hash));
            }
            let actual = Digest::from_sha256(hash);
            match format!("{algorithm}:{encoded}").parse() {
                Ok(expected) => fail(path, Problem::DigestMismatch { expected, actual }),
                Err(e) => fail(path, Problem::BlobName(e.to_string())),
            }
        }
    }
}

fn parse_json<'a, T: serde::Deserialize<'a>>(path: &str, data: &'a [u8]) -> Result<T, LoadError> {
    from_json(data).or_else(|e| fail(path, Problem::Json(e)))
}

/// `text`, which usually lies in `source` (a string read from that JSON), as a string sharing
/// `source`'s bytes; a copy when it does not (a string with escapes is decoded elsewhere).
fn shared_str(source: &Bytes, text: &str) -> ByteString {
    range_in(source, text)
        .and_then(|range| ByteString::try_from(source.slice(range)).ok())
        .unwrap_or_else(|| ByteString::from(text))
}

fn range_in(source: &[u8], text: &str) -> Option<Range<usize>> {
    let start = (text.as_ptr() as usize).checked_sub(source.as_ptr() as usize)?;
    (start <= source.len() && text.len() <= source.len() - start).then(|| start..start + text.len())
}

/// A digest read from a JSON document, with its quoted form (the content's entity tag) and,
/// for sha256, its hash. Text and quoted form share the document's bytes: the JSON string
/// with its quotes is the quoted form.
struct Named {
    digest: Digest,
    quoted: Bytes,
    hash: Option<[u8; 32]>,
}

impl Named {
    /// The digest `text` read from `source` (the file at `path()`).
    fn read(path: impl FnOnce() -> String, source: &Bytes, text: &str) -> Result<Named, LoadError> {
        let digest = Digest::from_shared(shared_str(source, text))
            .or_else(|e| fail(path(), Problem::DescriptorDigest(e)))?;
        let quoted = range_in(source, text)
            .filter(|r| r.start > 0 && source.get(r.start - 1) == Some(&b'"'))
            .filter(|r| source.get(r.end) == Some(&b'"'))
            .map(|r| source.slice(r.start - 1..r.end + 1))
            .unwrap_or_else(|| super::quote(&digest));
        Ok(Named {
            hash: digest.sha256(),
            digest,
            quoted,
        })
    }
}

/// What phase 2 gathered of one layout.
struct Gathered<'f> {
    root: &'f str,
    name: RepositoryName,
    /// Every blob of the layout, by hash.
    blobs: Sha256Map<&'f Bytes>,
    index_file: &'f ContentFile,
    index: RawIndex<'f>,
    /// The digest of each manifest `index.json` lists, in its order.
    listed: Vec<Named>,
}

/// Phase 2 for one layout: its files (`members`, in file order) checked, its blobs indexed,
/// the digests its index lists read.
fn gather<'f>(
    root: &'f str,
    members: &[usize],
    files: &'f [ContentFile],
    placed: &mut [Vec<Placed<'f>>],
) -> Result<Gathered<'f>, LoadError> {
    let path_of = |inner: &str| format!("{root}/{inner}");
    let name: RepositoryName = match root.parse() {
        Ok(name) => name,
        Err(e) => return fail(path_of(OCI_LAYOUT_FILE), Problem::Name(e)),
    };
    let mut blobs = Sha256Map::with_capacity_and_hasher(members.len(), Default::default());
    let mut index = None;
    for &i in members {
        let slot = &mut placed[i / FILES_PER_CHUNK][i % FILES_PER_CHUNK];
        let kind = std::mem::replace(&mut slot.kind, Ok(Kind::Marker));
        match kind.map_err(|e| *e)? {
            Kind::Marker => {}
            Kind::Index(parsed) => index = Some((&files[i], parsed)),
            Kind::Blob(hash) => {
                blobs.insert(hash, &files[i].data);
            }
        }
    }
    let Some((index_file, parsed)) = index else {
        return fail(path_of(INDEX_FILE), Problem::MissingIndex);
    };
    let index = (*parsed)?;
    let listed = index
        .manifests
        .iter()
        .map(|d| Named::read(|| index_file.path.to_string(), &index_file.data, &d.digest))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Gathered {
        root,
        name,
        blobs,
        index_file,
        index,
        listed,
    })
}

/// A blob a manifest references, found.
struct FoundBlob {
    hash: [u8; 32],
    blob: Blob,
}

/// A manifest fetched and, for an image manifest, parsed with its blobs found: the part of
/// loading that needs no other manifest (phase 3).
struct Prepared<'f> {
    hash: [u8; 32],
    data: &'f Bytes,
    kind: PreparedKind<'f>,
}

enum PreparedKind<'f> {
    Image {
        schema_version: u32,
        body_media_type: Option<Cow<'f, str>>,
        has_subject: bool,
        /// Where its blobs are in the list of blobs its chunk found.
        blobs: Range<usize>,
    },
    Index,
}

impl<'f> Gathered<'f> {
    fn blob_file(&self, digest: &Digest) -> String {
        format!("{}/{}", self.root, layout::blob_path(digest))
    }

    /// The bytes a digest names, checked for presence and size, with their hash.
    fn fetch(&self, named: &Named, size: u64) -> Result<([u8; 32], &'f Bytes), LoadError> {
        let found = named
            .hash
            .and_then(|hash| Some((hash, *self.blobs.get(&hash)?)));
        let Some((hash, data)) = found else {
            return fail(
                self.blob_file(&named.digest),
                Problem::MissingBlob(named.digest.clone()),
            );
        };
        if data.len() as u64 != size {
            return fail(
                self.blob_file(&named.digest),
                Problem::Size {
                    digest: named.digest.clone(),
                    expected: size,
                    actual: data.len() as u64,
                },
            );
        }
        Ok((hash, data))
    }

    /// Fetches the manifest `named` (described by `descriptor`) and, for an image manifest,
    /// parses it and finds its blobs, which it appends to `found`.
    fn prepare(
        &self,
        descriptor: &RawDescriptor<'_>,
        named: &Named,
        found: &mut Vec<FoundBlob>,
    ) -> Result<Prepared<'f>, LoadError> {
        let path = || self.blob_file(&named.digest);
        let media_type: &str = &descriptor.media_type;
        if !valid_media_type(media_type) {
            return fail(path(), Problem::MediaType(media_type.to_owned()));
        }
        let Some(kind) = manifest_kind(media_type) else {
            return fail(path(), Problem::NotManifest(media_type.to_owned()));
        };
        let (hash, data) = self.fetch(named, descriptor.size)?;
        if kind == ManifestKind::Index {
            return Ok(Prepared {
                hash,
                data,
                kind: PreparedKind::Index,
            });
        }
        let m: RawImage<'f> =
            from_json(data).map_err(|e| manifest_error(path(), &named.digest, e))?;
        let start = found.len();
        for blob in std::iter::once(&m.config).chain(&m.layers) {
            let blob_named = Named::read(path, data, &blob.digest)?;
            let (hash, blob_data) = self.fetch(&blob_named, blob.size)?;
            found.push(FoundBlob {
                hash,
                blob: Blob {
                    data: blob_data.clone(),
                    quoted_digest: blob_named.quoted,
                    digest: blob_named.digest,
                },
            });
        }
        Ok(Prepared {
            hash,
            data,
            kind: PreparedKind::Image {
                schema_version: m.schema_version,
                body_media_type: m.media_type,
                has_subject: m.subject.is_some(),
                blobs: start..found.len(),
            },
        })
    }
}

fn manifest_error(path: String, digest: &Digest, source: serde_json::Error) -> LoadError {
    LoadError {
        path,
        problem: Problem::Manifest {
            digest: digest.clone(),
            source,
        },
    }
}

/// Phase 4 for one layout: its manifests, prepared in phase 3 (taken from `prepared`, in
/// `index.json` order, each with the blobs its chunk found), checked and stored; then its tags.
fn load_layout<'f, 'b>(
    layout: &Gathered<'f>,
    prepared: &mut impl Iterator<Item = (Result<Prepared<'f>, LoadError>, &'b [FoundBlob])>,
) -> Result<Repository, LoadError> {
    let mut repository = Repository {
        name: layout.name.as_str().to_owned(),
        ..Repository::default()
    };
    let listed = layout.index.manifests.len();
    repository.tags.reserve(listed);
    repository.manifests.reserve(listed);
    repository
        .blobs
        .reserve(layout.blobs.len().saturating_sub(listed));
    let mut loader = Loader {
        layout,
        repository: &mut repository,
    };
    let index_data = &layout.index_file.data;
    for ((descriptor, named), (prepared, found)) in layout
        .index
        .manifests
        .iter()
        .zip(&layout.listed)
        .zip(prepared)
    {
        if loader.has_manifest(named) {
            continue;
        }
        loader.commit(descriptor, index_data, named, prepared?, found, 0)?;
    }
    for (descriptor, named) in layout.index.manifests.iter().zip(&layout.listed) {
        if let Some(tag) = &descriptor.annotations.0 {
            loader.tag(&layout.index_file.path, tag, named)?;
        }
    }

    // Blobs kept are those some manifest references (as a blob or as a manifest).
    repository.unreferenced = layout
        .blobs
        .len()
        .saturating_sub(repository.distinct_content().count());
    repository.warn_unreferenced();
    let mut tags: Vec<String> = repository.tags.keys().cloned().collect();
    tags.sort_unstable();
    repository.tag_list = Listing::tags(&repository.name, tags);
    for referrers in repository.referrers.values_mut() {
        referrers.sort_by(|a, b| a.digest.cmp(&b.digest));
    }
    Ok(repository)
}

struct Loader<'a, 'f> {
    layout: &'a Gathered<'f>,
    repository: &'a mut Repository,
}

impl<'f> Loader<'_, 'f> {
    fn has_manifest(&self, named: &Named) -> bool {
        named
            .hash
            .is_some_and(|hash| self.repository.manifests.contains_key(&hash))
    }

    /// Tags the manifest `named` (stored already).
    fn tag(&mut self, index_path: &str, tag: &str, named: &Named) -> Result<(), LoadError> {
        if let Err(e) = tag.parse::<crate::oci::Tag>() {
            return fail(index_path, Problem::Tag(e));
        }
        let Some(hash) = named.hash else {
            return fail(
                self.layout.blob_file(&named.digest),
                Problem::MissingBlob(named.digest.clone()),
            );
        };
        let repository = &mut *self.repository;
        if let Some(first) = repository.tags.get(tag)
            && *first != hash
        {
            let first = repository.manifests.get(first).map(|m| m.digest.clone());
            return fail(
                index_path,
                Problem::DuplicateTag {
                    tag: tag.to_owned(),
                    first: first.unwrap_or_else(|| named.digest.clone()),
                    second: named.digest.clone(),
                },
            );
        }
        repository.tags.insert(tag.to_owned(), hash);
        Ok(())
    }

    /// Loads one manifest of a nested index (not in parallel).
    fn manifest(
        &mut self,
        descriptor: &RawDescriptor<'f>,
        source: &'f Bytes,
        named: &Named,
        depth: usize,
    ) -> Result<(), LoadError> {
        if depth > MAX_NESTING {
            return fail(self.layout.blob_file(&named.digest), Problem::TooDeep);
        }
        if self.has_manifest(named) {
            return Ok(());
        }
        let mut found = Vec::new();
        let prepared = self.layout.prepare(descriptor, named, &mut found)?;
        self.commit(descriptor, source, named, prepared, &found, depth)
    }

    /// Checks a prepared manifest and stores it with its blobs (and, for an index, loads its
    /// children). `source` is the JSON that `descriptor` was read from; `found` holds the
    /// blobs phase 3 found.
    fn commit(
        &mut self,
        descriptor: &RawDescriptor<'_>,
        source: &Bytes,
        named: &Named,
        prepared: Prepared<'f>,
        found: &[FoundBlob],
        depth: usize,
    ) -> Result<(), LoadError> {
        let digest = &named.digest;
        let path = || self.layout.blob_file(digest);
        let media_type: &str = &descriptor.media_type;
        let data = prepared.data;
        let (schema_version, body_media_type, has_subject) = match prepared.kind {
            PreparedKind::Image {
                schema_version,
                body_media_type,
                has_subject,
                blobs,
            } => {
                for FoundBlob { hash, blob } in found.get(blobs).unwrap_or_default() {
                    self.repository
                        .blobs
                        .entry(*hash)
                        .or_insert_with(|| blob.clone());
                }
                (schema_version, body_media_type, has_subject)
            }
            PreparedKind::Index => {
                let i: RawIndex<'f> =
                    from_json(data).map_err(|e| manifest_error(path(), digest, e))?;
                for child in &i.manifests {
                    let child_named = Named::read(path, data, &child.digest)?;
                    self.manifest(child, data, &child_named, depth + 1)?;
                }
                (i.schema_version, i.media_type, i.subject.is_some())
            }
        };
        if schema_version != 2 {
            return fail(path(), Problem::SchemaVersion(digest.clone()));
        }
        if let Some(body) = body_media_type
            && body != media_type
        {
            return fail(
                path(),
                Problem::MediaTypeMismatch {
                    digest: digest.clone(),
                    body: body.into_owned(),
                    descriptor: media_type.to_owned(),
                },
            );
        }
        if has_subject {
            // Rare: read in full for the referrers API.
            let error = |e| manifest_error(path(), digest, e);
            let (subject, artifact_type, annotations) = match manifest_kind(media_type) {
                Some(ManifestKind::Index) => {
                    let i: ImageIndex = from_json(data).map_err(error)?;
                    (i.subject, i.artifact_type, i.annotations)
                }
                _ => {
                    let m: ImageManifest = from_json(data).map_err(error)?;
                    let artifact_type = m
                        .artifact_type
                        .clone()
                        .or_else(|| Some(m.config.media_type.clone()));
                    (m.subject, artifact_type, m.annotations)
                }
            };
            if let Some(subject) = subject {
                self.repository
                    .referrers
                    .entry(subject.digest)
                    .or_default()
                    .push(Descriptor {
                        media_type: media_type.to_owned(),
                        digest: digest.clone(),
                        size: descriptor.size,
                        annotations,
                        artifact_type,
                    });
            }
        }
        self.repository.manifests.insert(
            prepared.hash,
            Manifest {
                media_type: shared_str(source, media_type),
                quoted_digest: named.quoted.clone(),
                digest: digest.clone(),
                data: data.clone(),
            },
        );
        Ok(())
    }
}

/// RFC 6838 `type "/" subtype` with restricted-name characters: safe to send as Content-Type.
fn valid_media_type(media_type: &str) -> bool {
    let name = |s: &str| {
        let mut bytes = s.bytes();
        bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
            && s.len() <= 127
            && bytes.all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    media_type
        .split_once('/')
        .is_some_and(|(t, sub)| name(t) && name(sub))
}

/// The descriptors a stored (already validated) manifest references.
pub(super) fn references(manifest: &Manifest) -> impl Iterator<Item = Descriptor> {
    let descriptors = match manifest_kind(&manifest.media_type) {
        Some(ManifestKind::Image) => from_json::<ImageManifest>(&manifest.data)
            .map(|m| std::iter::once(m.config).chain(m.layers).collect())
            .unwrap_or_default(),
        Some(ManifestKind::Index) => from_json::<ImageIndex>(&manifest.data)
            .map(|i| i.manifests)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    descriptors.into_iter()
}
