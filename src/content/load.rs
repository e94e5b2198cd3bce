//! Building a `Registry` from files: find the layouts, follow every manifest, verify every
//! referenced blob, and refuse with a `LoadError` that names the file at the first problem.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::{BuildHasherDefault, Hasher};

use bytes::Bytes;

use sha2::{Digest as _, Sha256};

use super::raw::{RawDescriptor, RawImage, RawIndex};
use super::{Blob, ContentFile, HashMap, Listing, Manifest, Registry, Repository};
use crate::oci::layout::{
    self, Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION, OCI_LAYOUT_FILE,
    OciLayout, REF_NAME,
};
use crate::oci::media_type::{ManifestKind, manifest_kind};
use crate::oci::{Digest, DigestError, NameError, RepositoryName, TagError};

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

/// The files of one layout, each with its path inside the layout.
struct Layout<'a> {
    root: &'a str,
    files: Vec<(&'a str, &'a ContentFile)>,
}

pub(super) fn registry(
    files: impl IntoIterator<Item = ContentFile>,
) -> Result<Registry, LoadError> {
    let files: Vec<ContentFile> = files.into_iter().collect();
    let layouts = group_into_layouts(&files)?;

    let mut registry = Registry::default();
    let mut names = Vec::new();
    // Bytes of distinct content: a blob may be in several repositories.
    let mut distinct: HashMap<Digest, u64> = HashMap::default();
    let several = layouts.len() > 1;
    for layout in layouts.into_values() {
        let repository = load_layout(&layout)?;
        for (digest, size) in repository.distinct_content() {
            if several {
                distinct.insert(digest.clone(), size);
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
    registry.catalog = Listing::new(r#"{"repositories":["#, names);
    if several {
        registry.summary.bytes = distinct.values().sum();
    }
    Ok(registry)
}

impl Repository {
    /// Every manifest and blob once (a manifest may also be referenced as a blob), with its size.
    fn distinct_content(&self) -> impl Iterator<Item = (&Digest, u64)> {
        let blobs = self
            .blobs
            .values()
            .map(|b| (&b.digest, b.data.len() as u64));
        let manifests = self
            .manifests
            .values()
            .filter(|m| !self.blobs.contains_key(&m.digest));
        blobs.chain(manifests.map(|m| (&m.digest, m.data.len() as u64)))
    }
}

/// Assigns each file to the deepest folder above it that holds an `oci-layout` file.
fn group_into_layouts(files: &[ContentFile]) -> Result<BTreeMap<&str, Layout<'_>>, LoadError> {
    let mut layouts: BTreeMap<&str, Layout<'_>> = BTreeMap::new();
    let marker_suffix = format!("/{OCI_LAYOUT_FILE}");
    for file in files {
        if file.path == OCI_LAYOUT_FILE {
            return fail(file.path.as_ref(), Problem::UnnamedLayout);
        }
        if let Some(root) = file.path.strip_suffix(&marker_suffix) {
            layouts.insert(
                root,
                Layout {
                    root,
                    files: Vec::new(),
                },
            );
        }
    }
    // Files of one folder belong to one layout (the deepest above the folder), and files come
    // mostly folder by folder: look up each folder once.
    let mut last: Option<(&str, &str)> = None; // (folder, layout root)
    for file in files {
        let folder = file.path.rsplit_once('/').map_or("", |(folder, _)| folder);
        let root = match last {
            Some((last_folder, root)) if last_folder == folder => root,
            _ => {
                let mut inner: &str = &file.path;
                loop {
                    let Some((parent, _)) = inner.rsplit_once('/') else {
                        return fail(file.path.as_ref(), Problem::OutsideLayout);
                    };
                    if let Some(layout) = layouts.get(parent) {
                        break layout.root;
                    }
                    inner = parent;
                }
            }
        };
        last = Some((folder, root));
        let inner = &file.path[root.len() + 1..];
        if let Some(layout) = layouts.get_mut(root) {
            layout.files.push((inner, file));
        }
    }
    Ok(layouts)
}

/// What kind of file a path inside a layout is.
enum Entry<'a> {
    Marker,
    Index,
    Blob(&'a str, &'a str),
}

fn classify(inner: &str) -> Option<Entry<'_>> {
    match inner {
        OCI_LAYOUT_FILE => Some(Entry::Marker),
        INDEX_FILE => Some(Entry::Index),
        _ => {
            let rest = inner.strip_prefix("blobs/")?;
            let (algorithm, encoded) = rest.split_once('/')?;
            (!encoded.contains('/')).then_some(Entry::Blob(algorithm, encoded))
        }
    }
}

fn parse_json<'a, T: serde::Deserialize<'a>>(path: &str, data: &'a [u8]) -> Result<T, LoadError> {
    serde_json::from_slice(data).or_else(|e| fail(path, Problem::Json(e)))
}

/// Loads and checks one layout into a repository.
fn load_layout(layout: &Layout<'_>) -> Result<Repository, LoadError> {
    let path_of = |inner: &str| format!("{}/{inner}", layout.root);
    let name: RepositoryName = match layout.root.parse() {
        Ok(name) => name,
        Err(e) => return fail(path_of(OCI_LAYOUT_FILE), Problem::Name(e)),
    };

    // Every file must belong to the layout, and every blob must hold what its name says.
    // Blobs are found by their sha256 (the only algorithm stored), kept beside the map.
    let mut blobs: Sha256Map<Bytes> =
        Sha256Map::with_capacity_and_hasher(layout.files.len(), Default::default());
    let mut index_file = None;
    for &(inner, file) in &layout.files {
        match classify(inner) {
            None => return fail(file.path.as_ref(), Problem::UnexpectedFile),
            Some(Entry::Marker) => {
                let marker: OciLayout = parse_json(&file.path, &file.data)?;
                if marker.image_layout_version != LAYOUT_VERSION {
                    return fail(
                        file.path.as_ref(),
                        Problem::LayoutVersion(marker.image_layout_version),
                    );
                }
            }
            Some(Entry::Index) => index_file = Some(file),
            Some(Entry::Blob(algorithm, encoded)) => {
                if algorithm != "sha256" {
                    return fail(file.path.as_ref(), Problem::Algorithm(algorithm.to_owned()));
                }
                let hash = file
                    .sha256
                    .unwrap_or_else(|| Sha256::digest(&file.data).into());
                // A name equal to the content's digest is a valid one; parse only to explain.
                if !hex_is(encoded, &hash) {
                    let actual = Digest::from_sha256(hash);
                    return match format!("{algorithm}:{encoded}").parse() {
                        Ok(expected) => fail(
                            file.path.as_ref(),
                            Problem::DigestMismatch { expected, actual },
                        ),
                        Err(e) => fail(file.path.as_ref(), Problem::BlobName(e.to_string())),
                    };
                }
                blobs.insert(hash, file.data.clone());
            }
        }
    }
    let Some(index_file) = index_file else {
        return fail(path_of(INDEX_FILE), Problem::MissingIndex);
    };
    let index: RawIndex<'_> = parse_json(&index_file.path, &index_file.data)?;

    let mut repository = Repository {
        name: name.as_str().to_owned(),
        ..Repository::default()
    };
    repository.tags.reserve(index.manifests.len());
    repository.manifests.reserve(index.manifests.len());
    repository
        .blobs
        .reserve(blobs.len().saturating_sub(index.manifests.len()));
    let mut loader = Loader {
        found: Found {
            layout,
            blobs: &blobs,
        },
        repository: &mut repository,
    };
    let listed = index
        .manifests
        .iter()
        .map(|d| {
            let digest = Loader::digest(|| index_file.path.to_string(), &index_file.data, d)?;
            Ok((digest, d))
        })
        .collect::<Result<Vec<_>, LoadError>>()?;
    loader.manifests(&listed)?;
    for (digest, descriptor) in &listed {
        if let Some(tag) = &descriptor.annotations.0 {
            loader.tag(&index_file.path, tag, digest)?;
        }
    }

    // Blobs kept are those some manifest references (as a blob or as a manifest).
    let unreferenced = blobs
        .len()
        .saturating_sub(repository.distinct_content().count());
    if unreferenced > 0 {
        log::warn!(
            "{}: {unreferenced} blob(s) referenced by no manifest are not served",
            layout.root
        );
    }
    let mut tags: Vec<String> = repository.tags.keys().cloned().collect();
    tags.sort_unstable();
    // Serialising a string cannot fail.
    let name = serde_json::to_string(&repository.name).unwrap_or_default();
    repository.tag_list = Listing::new(&format!(r#"{{"name":{name},"tags":["#), tags);
    for referrers in repository.referrers.values_mut() {
        referrers.sort_by(|a, b| a.digest.cmp(&b.digest));
    }
    Ok(repository)
}

/// Whether `encoded` is the lowercase hex of `hash`.
fn hex_is(encoded: &str, hash: &[u8; 32]) -> bool {
    let mut text = [0; 64];
    hex::encode_to_slice(hash, &mut text).is_ok() && encoded.as_bytes() == text
}

/// A map keyed by sha256 hashes. They are uniformly distributed already: their first eight
/// bytes are the hash-map hash (these maps live only while loading trusted content).
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

/// The layout's files, read-only: shared by the threads that read manifests.
struct Found<'a, 'f> {
    layout: &'a Layout<'f>,
    blobs: &'a Sha256Map<Bytes>,
}

/// A manifest fetched and, for an image manifest, parsed with its blobs found: the part of
/// loading that needs no other manifest, done in parallel (see [`Loader::manifests`]).
enum Prepared {
    Image {
        data: Bytes,
        schema_version: u32,
        body_media_type: Option<String>,
        has_subject: bool,
        blobs: Vec<Blob>,
    },
    Index {
        data: Bytes,
    },
}

impl Found<'_, '_> {
    fn blob_file(&self, digest: &Digest) -> String {
        format!("{}/{}", self.layout.root, layout::blob_path(digest))
    }

    /// The bytes a digest names, checked for presence and size.
    fn fetch(&self, digest: &Digest, size: u64) -> Result<Bytes, LoadError> {
        let found = digest.sha256().and_then(|hash| self.blobs.get(&hash));
        let Some(data) = found else {
            return fail(self.blob_file(digest), Problem::MissingBlob(digest.clone()));
        };
        if data.len() as u64 != size {
            return fail(
                self.blob_file(digest),
                Problem::Size {
                    digest: digest.clone(),
                    expected: size,
                    actual: data.len() as u64,
                },
            );
        }
        Ok(data.clone())
    }

    /// Fetches the manifest `digest` (described by `descriptor`) and, for an image manifest,
    /// parses it and finds its blobs.
    fn prepare(
        &self,
        descriptor: &RawDescriptor<'_>,
        digest: &Digest,
    ) -> Result<Prepared, LoadError> {
        let path = || self.blob_file(digest);
        let media_type: &str = &descriptor.media_type;
        if !valid_media_type(media_type) {
            return fail(path(), Problem::MediaType(media_type.to_owned()));
        }
        let Some(kind) = manifest_kind(media_type) else {
            return fail(path(), Problem::NotManifest(media_type.to_owned()));
        };
        let data = self.fetch(digest, descriptor.size)?;
        if kind == ManifestKind::Index {
            return Ok(Prepared::Index { data });
        }
        let m: RawImage<'_> =
            serde_json::from_slice(&data).map_err(|e| manifest_error(path(), digest, e))?;
        let mut blobs = Vec::with_capacity(1 + m.layers.len());
        for blob in std::iter::once(&m.config).chain(&m.layers) {
            let blob_digest = Loader::digest(path, &data, blob)?;
            blobs.push(Blob {
                data: self.fetch(&blob_digest, blob.size)?,
                quoted_digest: super::quote(&blob_digest),
                digest: blob_digest,
            });
        }
        Ok(Prepared::Image {
            schema_version: m.schema_version,
            body_media_type: m.media_type.map(Cow::into_owned),
            has_subject: m.subject.is_some(),
            blobs,
            data,
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

struct Loader<'a, 'f> {
    found: Found<'a, 'f>,
    repository: &'a mut Repository,
}

impl Loader<'_, '_> {
    /// A descriptor's digest, parsed, sharing the bytes of the file (`path()`) it is in.
    fn digest(
        path: impl FnOnce() -> String,
        source: &Bytes,
        descriptor: &RawDescriptor<'_>,
    ) -> Result<Digest, LoadError> {
        descriptor
            .digest_in(source)
            .or_else(|e| fail(path(), Problem::DescriptorDigest(e)))
    }

    fn tag(&mut self, index_path: &str, tag: &str, digest: &Digest) -> Result<(), LoadError> {
        if let Err(e) = tag.parse::<crate::oci::Tag>() {
            return fail(index_path, Problem::Tag(e));
        }
        if let Some(first) = self.repository.tags.get(tag)
            && first != digest
        {
            return fail(
                index_path,
                Problem::DuplicateTag {
                    tag: tag.to_owned(),
                    first: first.clone(),
                    second: digest.clone(),
                },
            );
        }
        self.repository.tags.insert(tag.to_owned(), digest.clone());
        Ok(())
    }

    /// Loads the manifests `index.json` lists (with their digests), and everything they
    /// reference. The manifests are fetched and parsed on all CPUs, in chunks; they are then
    /// checked and stored in order, so that the problem reported is the first in file order
    /// (tags are checked after all manifests).
    fn manifests(&mut self, listed: &[(Digest, &RawDescriptor<'_>)]) -> Result<(), LoadError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = listed.len().div_ceil(threads).max(256);
        let found = &self.found;
        let prepared: Vec<Vec<Result<Prepared, LoadError>>> = std::thread::scope(|scope| {
            let prepare = move |part: &[(Digest, &RawDescriptor<'_>)]| -> Vec<_> {
                part.iter()
                    .map(|(digest, descriptor)| found.prepare(descriptor, digest))
                    .collect()
            };
            let mut parts = listed.chunks(chunk);
            let first = parts.next().unwrap_or_default();
            let others: Vec<_> = parts
                .map(|part| scope.spawn(move || prepare(part)))
                .collect();
            let mut all = vec![prepare(first)];
            for other in others {
                // A panic while preparing is a bug: let it surface as one.
                all.push(
                    other
                        .join()
                        .unwrap_or_else(|e| std::panic::resume_unwind(e)),
                );
            }
            all
        });
        for ((digest, descriptor), prepared) in listed.iter().zip(prepared.into_iter().flatten()) {
            if self.repository.manifests.contains_key(digest) {
                continue;
            }
            self.commit(descriptor, digest.clone(), prepared?, 0)?;
        }
        Ok(())
    }

    /// Loads one manifest (not in parallel: nested indexes and their children).
    fn manifest(
        &mut self,
        descriptor: &RawDescriptor<'_>,
        digest: Digest,
        depth: usize,
    ) -> Result<(), LoadError> {
        if depth > MAX_NESTING {
            return fail(self.found.blob_file(&digest), Problem::TooDeep);
        }
        if self.repository.manifests.contains_key(&digest) {
            return Ok(());
        }
        let prepared = self.found.prepare(descriptor, &digest)?;
        self.commit(descriptor, digest, prepared, depth)
    }

    /// Checks a prepared manifest and stores it with its blobs (and, for an index, loads its
    /// children).
    fn commit(
        &mut self,
        descriptor: &RawDescriptor<'_>,
        digest: Digest,
        prepared: Prepared,
        depth: usize,
    ) -> Result<(), LoadError> {
        let root = self.found.layout.root;
        let path = || format!("{root}/{}", layout::blob_path(&digest));
        let media_type: &str = &descriptor.media_type;
        let (data, schema_version, body_media_type, has_subject) = match prepared {
            Prepared::Image {
                data,
                schema_version,
                body_media_type,
                has_subject,
                blobs,
            } => {
                for blob in blobs {
                    self.repository.blobs.insert(blob.digest.clone(), blob);
                }
                (data, schema_version, body_media_type, has_subject)
            }
            Prepared::Index { data } => {
                let i: RawIndex<'_> = serde_json::from_slice(&data)
                    .map_err(|e| manifest_error(path(), &digest, e))?;
                for child in &i.manifests {
                    let child_digest = Loader::digest(path, &data, child)?;
                    self.manifest(child, child_digest, depth + 1)?;
                }
                let body = i.media_type.map(Cow::into_owned);
                (data.clone(), i.schema_version, body, i.subject.is_some())
            }
        };
        if schema_version != 2 {
            return fail(path(), Problem::SchemaVersion(digest));
        }
        if let Some(body) = body_media_type
            && body != media_type
        {
            return fail(
                path(),
                Problem::MediaTypeMismatch {
                    digest,
                    body,
                    descriptor: media_type.to_owned(),
                },
            );
        }
        if has_subject {
            // Rare: read in full for the referrers API.
            let error = |e| manifest_error(path(), &digest, e);
            let (subject, artifact_type, annotations) = match manifest_kind(media_type) {
                Some(ManifestKind::Index) => {
                    let i: ImageIndex = serde_json::from_slice(&data).map_err(error)?;
                    (i.subject, i.artifact_type, i.annotations)
                }
                _ => {
                    let m: ImageManifest = serde_json::from_slice(&data).map_err(error)?;
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
            digest.clone(),
            Manifest {
                media_type: media_type.to_owned(),
                quoted_digest: super::quote(&digest),
                digest,
                data,
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
        Some(ManifestKind::Image) => serde_json::from_slice::<ImageManifest>(&manifest.data)
            .map(|m| std::iter::once(m.config).chain(m.layers).collect())
            .unwrap_or_default(),
        Some(ManifestKind::Index) => serde_json::from_slice::<ImageIndex>(&manifest.data)
            .map(|i| i.manifests)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    descriptors.into_iter()
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
