//! Building a `Registry` from files: find the layouts, follow every manifest, verify every
//! referenced blob, and refuse with a `LoadError` that names the file at the first problem.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use super::{Blob, ContentFile, Listing, Manifest, Registry, Repository};
use crate::oci::layout::{
    self, Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION, OCI_LAYOUT_FILE,
    OciLayout, REF_NAME,
};
use crate::oci::media_type::{ManifestKind, manifest_kind};
use crate::oci::{Digest, NameError, RepositoryName, TagError};

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

/// The files of one layout, by their path inside it.
struct Layout<'a> {
    root: String,
    files: HashMap<&'a str, &'a ContentFile>,
}

pub(super) fn registry(
    files: impl IntoIterator<Item = ContentFile>,
) -> Result<Registry, LoadError> {
    let files: Vec<ContentFile> = files.into_iter().collect();
    let layouts = group_into_layouts(&files)?;

    let mut registry = Registry::default();
    let mut names = Vec::new();
    let mut distinct: HashMap<Digest, u64> = HashMap::new();
    for layout in layouts.into_values() {
        let repository = load_layout(&layout)?;
        for m in repository.manifests.values() {
            distinct.insert(m.digest.clone(), m.data.len() as u64);
        }
        for b in repository.blobs.values() {
            distinct.insert(b.digest.clone(), b.data.len() as u64);
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
    registry.summary.bytes = distinct.values().sum();
    Ok(registry)
}

/// Assigns each file to the deepest folder above it that holds an `oci-layout` file.
fn group_into_layouts(files: &[ContentFile]) -> Result<BTreeMap<String, Layout<'_>>, LoadError> {
    let mut layouts: BTreeMap<String, Layout<'_>> = BTreeMap::new();
    for file in files {
        if file.path == OCI_LAYOUT_FILE {
            return fail(&file.path, Problem::UnnamedLayout);
        }
        if let Some(root) = file.path.strip_suffix(&format!("/{OCI_LAYOUT_FILE}")) {
            layouts.insert(
                root.to_owned(),
                Layout {
                    root: root.to_owned(),
                    files: HashMap::new(),
                },
            );
        }
    }
    for file in files {
        let mut folder = file.path.as_str();
        let layout = loop {
            let Some((parent, _)) = folder.rsplit_once('/') else {
                return fail(&file.path, Problem::OutsideLayout);
            };
            if let Some(layout) = layouts.get_mut(parent) {
                break layout;
            }
            folder = parent;
        };
        let inner = &file.path[layout.root.len() + 1..];
        layout.files.insert(inner, file);
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

fn parse_json<T: serde::de::DeserializeOwned>(path: &str, data: &[u8]) -> Result<T, LoadError> {
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
    let mut blobs: HashMap<Digest, Bytes> = HashMap::new();
    let mut index_file = None;
    for (inner, file) in &layout.files {
        match classify(inner) {
            None => return fail(&file.path, Problem::UnexpectedFile),
            Some(Entry::Marker) => {
                let marker: OciLayout = parse_json(&file.path, &file.data)?;
                if marker.image_layout_version != LAYOUT_VERSION {
                    return fail(
                        &file.path,
                        Problem::LayoutVersion(marker.image_layout_version),
                    );
                }
            }
            Some(Entry::Index) => index_file = Some(*file),
            Some(Entry::Blob(algorithm, encoded)) => {
                if algorithm != "sha256" {
                    return fail(&file.path, Problem::Algorithm(algorithm.to_owned()));
                }
                let expected: Digest = match format!("{algorithm}:{encoded}").parse() {
                    Ok(d) => d,
                    Err(e) => return fail(&file.path, Problem::BlobName(e.to_string())),
                };
                let actual = match file.sha256 {
                    Some(hash) => Digest::from_sha256(hash),
                    None => Digest::sha256_of(&file.data),
                };
                if actual != expected {
                    return fail(&file.path, Problem::DigestMismatch { expected, actual });
                }
                blobs.insert(expected, file.data.clone());
            }
        }
    }
    let Some(index_file) = index_file else {
        return fail(path_of(INDEX_FILE), Problem::MissingIndex);
    };
    let index: ImageIndex = parse_json(&index_file.path, &index_file.data)?;

    let mut repository = Repository {
        name: name.as_str().to_owned(),
        ..Repository::default()
    };
    let mut loader = Loader {
        layout,
        blobs: &blobs,
        repository: &mut repository,
    };
    for descriptor in &index.manifests {
        loader.manifest(descriptor, 0)?;
        if let Some(tag) = descriptor.annotations.get(REF_NAME) {
            loader.tag(&index_file.path, tag, &descriptor.digest)?;
        }
    }

    let unreferenced = blobs
        .keys()
        .filter(|d| !repository.blobs.contains_key(d) && !repository.manifests.contains_key(d))
        .count();
    if unreferenced > 0 {
        log::warn!(
            "{}: {unreferenced} blob(s) referenced by no manifest are not served",
            layout.root
        );
    }
    let mut tags: Vec<String> = repository.tags.keys().cloned().collect();
    tags.sort();
    // Serialising a string cannot fail.
    let name = serde_json::to_string(&repository.name).unwrap_or_default();
    repository.tag_list = Listing::new(&format!(r#"{{"name":{name},"tags":["#), tags);
    for referrers in repository.referrers.values_mut() {
        referrers.sort_by(|a, b| a.digest.cmp(&b.digest));
    }
    Ok(repository)
}

struct Loader<'a, 'f> {
    layout: &'a Layout<'f>,
    blobs: &'a HashMap<Digest, Bytes>,
    repository: &'a mut Repository,
}

impl Loader<'_, '_> {
    fn blob_file(&self, digest: &Digest) -> String {
        format!("{}/{}", self.layout.root, layout::blob_path(digest))
    }

    /// The bytes a descriptor points at, checked for presence and size.
    fn fetch(&self, descriptor: &Descriptor) -> Result<Bytes, LoadError> {
        let path = self.blob_file(&descriptor.digest);
        let Some(data) = self.blobs.get(&descriptor.digest) else {
            return fail(path, Problem::MissingBlob(descriptor.digest.clone()));
        };
        if data.len() as u64 != descriptor.size {
            return fail(
                path,
                Problem::Size {
                    digest: descriptor.digest.clone(),
                    expected: descriptor.size,
                    actual: data.len() as u64,
                },
            );
        }
        Ok(data.clone())
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

    /// Loads the manifest a descriptor points at and everything it references.
    fn manifest(&mut self, descriptor: &Descriptor, depth: usize) -> Result<(), LoadError> {
        let path = self.blob_file(&descriptor.digest);
        if depth > MAX_NESTING {
            return fail(path, Problem::TooDeep);
        }
        if self.repository.manifests.contains_key(&descriptor.digest) {
            return Ok(());
        }
        if !valid_media_type(&descriptor.media_type) {
            return fail(path, Problem::MediaType(descriptor.media_type.clone()));
        }
        let Some(kind) = manifest_kind(&descriptor.media_type) else {
            return fail(path, Problem::NotManifest(descriptor.media_type.clone()));
        };
        let data = self.fetch(descriptor)?;
        let digest = descriptor.digest.clone();
        let manifest_error = |source| LoadError {
            path: path.clone(),
            problem: Problem::Manifest {
                digest: digest.clone(),
                source,
            },
        };
        let (schema_version, body_media_type, referrer) = match kind {
            ManifestKind::Image => {
                let m: ImageManifest = serde_json::from_slice(&data).map_err(manifest_error)?;
                for blob in std::iter::once(&m.config).chain(&m.layers) {
                    let bytes = self.fetch(blob)?;
                    self.repository.blobs.insert(
                        blob.digest.clone(),
                        Blob {
                            digest: blob.digest.clone(),
                            quoted_digest: super::quote(&blob.digest),
                            data: bytes,
                        },
                    );
                }
                let artifact_type = m
                    .artifact_type
                    .clone()
                    .or_else(|| Some(m.config.media_type.clone()));
                let referrer = m.subject.map(|s| (s.digest, artifact_type, m.annotations));
                (m.schema_version, m.media_type, referrer)
            }
            ManifestKind::Index => {
                let i: ImageIndex = serde_json::from_slice(&data).map_err(manifest_error)?;
                for child in &i.manifests {
                    self.manifest(child, depth + 1)?;
                }
                let referrer = i
                    .subject
                    .map(|s| (s.digest, i.artifact_type, i.annotations));
                (i.schema_version, i.media_type, referrer)
            }
        };
        if schema_version != 2 {
            return fail(path, Problem::SchemaVersion(digest));
        }
        if let Some(body) = body_media_type
            && body != descriptor.media_type
        {
            return fail(
                path,
                Problem::MediaTypeMismatch {
                    digest,
                    body,
                    descriptor: descriptor.media_type.clone(),
                },
            );
        }
        if let Some((subject, artifact_type, annotations)) = referrer {
            self.repository
                .referrers
                .entry(subject)
                .or_default()
                .push(Descriptor {
                    media_type: descriptor.media_type.clone(),
                    digest: digest.clone(),
                    size: descriptor.size,
                    annotations,
                    artifact_type,
                });
        }
        self.repository.manifests.insert(
            digest.clone(),
            Manifest {
                media_type: descriptor.media_type.clone(),
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
