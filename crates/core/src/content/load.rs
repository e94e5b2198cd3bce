//! Building a `Registry` from files, checking everything, in one pass and in this order (the
//! order in which the first problem found is the one reported):
//!
//! 1. The layouts: every folder holding an `oci-layout` file (a layout's folder is its
//!    repository name). Each file is placed in the deepest layout above it; a file outside
//!    every layout is refused.
//! 2. Layout by layout, in name order: its files in the order given (the marker's version
//!    checked; each blob's file name checked against its sha256), then its `index.json` parsed.
//! 3. The manifests `index.json` lists, in its order, each with everything it references:
//!    every blob present with its descriptor's size (and so, by step 2, with its digest),
//!    nested indexes followed; media types, schema versions and subjects checked; referrers
//!    recorded. Then the tags.
//!
//! The binary seldom runs this at start-up: build.rs runs it and writes down what it found
//! (see `facts`).

use std::collections::BTreeMap;

use bytes::Bytes;

use super::problem::{MAX_NESTING, fail};
use super::{
    Blob, ContentFile, Data, HashMap, LoadError, Manifest, Problem, Registry, Repository,
    Sha256Map, quote,
};
use crate::oci::layout::{
    self, Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION, OCI_LAYOUT_FILE,
    OciLayout, REF_NAME,
};
use crate::oci::media_type::{ManifestKind, manifest_kind};
use crate::oci::{Digest, RepositoryName, Tag, decode_sha256, sha256};

pub(super) fn registry(
    files: impl IntoIterator<Item = ContentFile>,
) -> Result<Registry, LoadError> {
    // What the build tool keeps beside the repositories (its record, a `.gitignore`) is not
    // content: paths whose first component starts with `.`.
    let files: Vec<ContentFile> = files
        .into_iter()
        .filter(|f| !f.path.starts_with('.'))
        .collect();
    let mut repositories = Vec::new();
    for (root, members) in layouts(&files)? {
        repositories.push(Layout::read(root, &members)?.load()?);
    }
    Ok(Registry::assemble(repositories))
}

/// Every layout's folder with its files (in the order given), by folder.
fn layouts(files: &[ContentFile]) -> Result<BTreeMap<&str, Vec<&ContentFile>>, LoadError> {
    let marker = format!("/{OCI_LAYOUT_FILE}");
    let mut layouts: BTreeMap<&str, Vec<&ContentFile>> = BTreeMap::new();
    for file in files {
        if file.path == OCI_LAYOUT_FILE {
            return fail(file.path.as_ref(), Problem::UnnamedLayout);
        }
        if let Some(root) = file.path.strip_suffix(&marker) {
            layouts.insert(root, Vec::new());
        }
    }
    for file in files {
        // The folders above the file, deepest first.
        let mut folders = std::iter::successors(parent(&file.path), |folder| parent(folder));
        let Some(root) = folders.find(|f| layouts.contains_key(f)) else {
            return fail(file.path.as_ref(), Problem::OutsideLayout);
        };
        if let Some(members) = layouts.get_mut(root) {
            members.push(file);
        }
    }
    Ok(layouts)
}

fn parent(path: &str) -> Option<&str> {
    path.rsplit_once('/').map(|(parent, _)| parent)
}

/// One layout's files, read: its blobs by hash and its parsed `index.json`.
struct Layout<'f> {
    root: &'f str,
    name: RepositoryName,
    blobs: Sha256Map<&'f ContentFile>,
    index_path: &'f str,
    index: ImageIndex,
}

impl<'f> Layout<'f> {
    fn read(root: &'f str, members: &[&'f ContentFile]) -> Result<Self, LoadError> {
        let name: RepositoryName = root
            .parse()
            .or_else(|e| fail(format!("{root}/{OCI_LAYOUT_FILE}"), Problem::Name(e)))?;
        let mut blobs = Sha256Map::with_capacity_and_hasher(members.len(), Default::default());
        let mut index = None;
        for &file in members {
            let path: &str = &file.path;
            match path.get(root.len().saturating_add(1)..).unwrap_or_default() {
                OCI_LAYOUT_FILE => {
                    let marker: OciLayout = parse_json(path, &bytes(file)?)?;
                    if marker.image_layout_version != LAYOUT_VERSION {
                        return fail(path, Problem::LayoutVersion(marker.image_layout_version));
                    }
                }
                INDEX_FILE => index = Some(file),
                inner => {
                    blobs.insert(blob_hash(file, inner)?, file);
                }
            }
        }
        let Some(index_file) = index else {
            return fail(format!("{root}/{INDEX_FILE}"), Problem::MissingIndex);
        };
        Ok(Layout {
            root,
            name,
            blobs,
            index_path: &index_file.path,
            index: parse_json(&index_file.path, &bytes(index_file)?)?,
        })
    }

    /// The path of the blob file a digest names.
    fn blob_file(&self, digest: &Digest) -> String {
        format!("{}/{}", self.root, layout::blob_path(digest))
    }

    /// The file a descriptor names, present with the descriptor's size.
    fn fetch(&self, d: &Descriptor) -> Result<(&'f ContentFile, [u8; 32]), LoadError> {
        let found = d
            .digest
            .sha256()
            .and_then(|hash| Some((*self.blobs.get(&hash)?, hash)));
        let Some((file, hash)) = found else {
            return fail(
                self.blob_file(&d.digest),
                Problem::MissingBlob(d.digest.clone()),
            );
        };
        let actual = file.len();
        if actual != d.size {
            return fail(
                self.blob_file(&d.digest),
                Problem::Size {
                    digest: d.digest.clone(),
                    expected: d.size,
                    actual,
                },
            );
        }
        Ok((file, hash))
    }

    /// The repository: every manifest `index.json` lists, with what it references, and tags.
    fn load(self) -> Result<Repository, LoadError> {
        let mut repository = Repository::new(self.name.clone());
        for d in &self.index.manifests {
            self.manifest(&mut repository, d, 0)?;
        }
        for d in &self.index.manifests {
            if let Some(tag) = d.annotations.get(REF_NAME) {
                self.tag(&mut repository, tag, d)?;
            }
        }
        // Blobs kept are those some manifest references (as a blob or as a manifest).
        repository.unreferenced = self
            .blobs
            .len()
            .saturating_sub(repository.distinct_content().count());
        repository.warn_unreferenced();
        Ok(repository.finish())
    }

    fn tag(&self, repository: &mut Repository, tag: &str, d: &Descriptor) -> Result<(), LoadError> {
        if let Err(e) = tag.parse::<Tag>() {
            return fail(self.index_path, Problem::Tag(e));
        }
        let Some(hash) = d.digest.sha256() else {
            return fail(
                self.blob_file(&d.digest),
                Problem::MissingBlob(d.digest.clone()),
            );
        };
        if let Some(first) = repository.tags.get(tag)
            && *first != hash
        {
            let first = repository.manifests.get(first).map(|m| m.digest.clone());
            return fail(
                self.index_path,
                Problem::DuplicateTag {
                    tag: tag.to_owned(),
                    first: first.unwrap_or_else(|| d.digest.clone()),
                    second: d.digest.clone(),
                },
            );
        }
        repository.tags.insert(tag.to_owned(), hash);
        Ok(())
    }

    /// Checks and stores the manifest `d` names, with the blobs it references (an image) or
    /// the manifests it lists (an index, `depth` levels down).
    fn manifest(
        &self,
        repository: &mut Repository,
        d: &Descriptor,
        depth: usize,
    ) -> Result<(), LoadError> {
        let path = || self.blob_file(&d.digest);
        if depth > MAX_NESTING {
            return fail(path(), Problem::TooDeep);
        }
        if d.digest
            .sha256()
            .is_some_and(|hash| repository.manifests.contains_key(&hash))
        {
            return Ok(());
        }
        if !valid_media_type(&d.media_type) {
            return fail(path(), Problem::MediaType(d.media_type.clone()));
        }
        let Some(kind) = manifest_kind(&d.media_type) else {
            return fail(path(), Problem::NotManifest(d.media_type.clone()));
        };
        let (file, hash) = self.fetch(d)?;
        let data = bytes(file)?;
        let manifest_error = |source| LoadError {
            path: path(),
            problem: Box::new(Problem::Manifest {
                digest: d.digest.clone(),
                source,
            }),
        };
        let (schema_version, body_media_type, referrer) = match kind {
            ManifestKind::Image => {
                let m: ImageManifest = serde_json::from_slice(&data).map_err(manifest_error)?;
                for blob in std::iter::once(&m.config).chain(&m.layers) {
                    let (blob_file, blob_hash) = self.fetch(blob)?;
                    repository.blobs.entry(blob_hash).or_insert_with(|| Blob {
                        digest: blob.digest.clone(),
                        quoted_digest: quote(&blob.digest),
                        data: kept(blob_file),
                    });
                }
                let artifact_type = m.artifact_type.or(Some(m.config.media_type));
                let referrer = m.subject.map(|s| (s, artifact_type, m.annotations));
                (m.schema_version, m.media_type, referrer)
            }
            ManifestKind::Index => {
                let i: ImageIndex = serde_json::from_slice(&data).map_err(manifest_error)?;
                for child in &i.manifests {
                    self.manifest(repository, child, depth.saturating_add(1))?;
                }
                let referrer = i.subject.map(|s| (s, i.artifact_type, i.annotations));
                (i.schema_version, i.media_type, referrer)
            }
        };
        if schema_version != 2 {
            return fail(path(), Problem::SchemaVersion(d.digest.clone()));
        }
        if let Some(body) = body_media_type
            && body != d.media_type
        {
            return fail(
                path(),
                Problem::MediaTypeMismatch {
                    digest: d.digest.clone(),
                    body,
                    descriptor: d.media_type.clone(),
                },
            );
        }
        if let Some((subject, artifact_type, annotations)) = referrer {
            repository
                .referrers
                .entry(subject.digest)
                .or_default()
                .push(Descriptor {
                    media_type: d.media_type.clone(),
                    digest: d.digest.clone(),
                    size: d.size,
                    annotations,
                    platform: None,
                    artifact_type,
                });
        }
        repository.manifests.insert(
            hash,
            Manifest {
                media_type: d.media_type.as_str().into(),
                quoted_digest: quote(&d.digest),
                digest: d.digest.clone(),
                data,
            },
        );
        Ok(())
    }
}

/// The sha256 of a blob file (`inner`: its path in the layout), which must be its name.
fn blob_hash(file: &ContentFile, inner: &str) -> Result<[u8; 32], LoadError> {
    let path: &str = &file.path;
    let Some((algorithm, encoded)) = inner
        .strip_prefix("blobs/")
        .and_then(|rest| rest.split_once('/'))
    else {
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
    let hash = match file.sha256 {
        Some(hash) => hash,
        None => sha256(&bytes(file)?),
    };
    if named == Some(hash) {
        return Ok(hash);
    }
    let actual = Digest::from_sha256(hash);
    match format!("{algorithm}:{encoded}").parse() {
        Ok(expected) => fail(path, Problem::DigestMismatch { expected, actual }),
        Err(e) => fail(path, Problem::BlobName(e.to_string())),
    }
}

/// A file's bytes, read from disk if they are not held (build time: an index or manifest in a
/// large file).
fn bytes(file: &ContentFile) -> Result<Bytes, LoadError> {
    match &file.data {
        Data::Held(bytes) => Ok(bytes.clone()),
        Data::OnDisk { file: on_disk, .. } => match std::fs::read(on_disk) {
            Ok(read) => Ok(Bytes::from(read)),
            Err(e) => fail(file.path.as_ref(), Problem::Read(e)),
        },
    }
}

/// What a blob keeps of its file: its bytes, or none for a file left on disk (a registry of such
/// files describes its content and is not served, see `Data::OnDisk`).
fn kept(file: &ContentFile) -> Bytes {
    file.held().cloned().unwrap_or_default()
}

fn parse_json<T: serde::de::DeserializeOwned>(path: &str, data: &[u8]) -> Result<T, LoadError> {
    serde_json::from_slice(data).or_else(|e| fail(path, Problem::Json(e)))
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

impl Repository {
    pub(super) fn new(name: RepositoryName) -> Self {
        Repository {
            name,
            tags: HashMap::default(),
            unprefixed: HashMap::default(),
            tag_list: Default::default(),
            manifests: Sha256Map::default(),
            blobs: Sha256Map::default(),
            referrers: HashMap::default(),
            unreferenced: 0,
        }
    }

    /// The tags list made from the tags, referrers in digest order.
    fn finish(mut self) -> Self {
        let mut tags: Vec<String> = self.tags.keys().cloned().collect();
        tags.sort_unstable();
        self.finish_tags(tags);
        for referrers in self.referrers.values_mut() {
            referrers.sort_by(|a, b| a.digest.cmp(&b.digest));
        }
        self
    }
}
