//! Describing content (a [`Description`]): every layout found and checked in full, in one pass
//! and in this order (the order in which the first problem found is the one reported):
//!
//! 1. The layouts: every folder holding an `oci-layout` file (a layout's folder is its
//!    repository name). Each file is placed in the deepest layout above it; a file outside
//!    every layout is refused, but for [`CHART_IMAGES_FILE`], [`VERIFICATION_FILE`] and
//!    [`ORIGINS_FILE`] (step 4). Paths whose first
//!    component starts with `.` (what the build tool keeps beside the repositories: its record,
//!    a `.gitignore`) are not content.
//! 2. Layout by layout, in name order: its files in the order given (the marker's version
//!    checked; each blob's file name checked against its sha256), then its `index.json` parsed.
//! 3. The manifests `index.json` lists, in its order, each with everything it references:
//!    every blob present with its descriptor's size (and so, by step 2, with its digest),
//!    nested indexes followed; media types, schema versions and subjects checked; referrers
//!    recorded. Then the tags.
//! 4. The files at the top of the folder that are content, when present, each read as the
//!    registry will read it: the list of the images each chart version needs,
//!    [`CHART_IMAGES_FILE`] (`chart_images`: every repository name, tag, digest and way
//!    valid), then what was verified at build, [`VERIFICATION_FILE`] (`verification`: the
//!    policy, every repository name, digest and evidence valid), then where fetched charts
//!    came from, [`ORIGINS_FILE`] (`origins`: every repository name, URL and digest valid).
//!
//! Only indexes and manifests are read (from disk, for a file the build left there); every
//! other body is named by its file, never read. This is the one loader: the build describes
//! the content with it, and `chartreg verify` describes it again.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::chart_images::{CHART_IMAGES_FILE, ChartImagesFile};
use super::description::{
    BlobDescription, DescribedFile, Description, Found, ManifestDescription, RepositoryDescription,
};
use super::input::{BuildBytes, BuildFile};
use super::origins::{ORIGINS_FILE, OriginsFile};
use super::problem::{MAX_NESTING, fail};
use super::verification::{VERIFICATION_FILE, VerificationFile};
use super::{LoadError, Problem, Sha256Map};
use crate::oci::layout::{
    self, Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION, OCI_LAYOUT_FILE,
    OciLayout, REF_NAME,
};
use crate::oci::media_type::{ManifestKind, manifest_kind};
use crate::oci::{Digest, RepositoryName, Tag, decode_sha256};

impl Description {
    /// Describes `files`, checking everything (see the module's documentation for the checks
    /// and their order). Content that cannot be served is described too: as the first problem
    /// found.
    pub fn of(files: &[BuildFile]) -> Self {
        // Files are named by their position in path order.
        let mut sorted: Vec<(usize, &BuildFile)> = files.iter().enumerate().collect();
        sorted.sort_by(|a, b| a.1.path.cmp(&b.1.path));
        let mut numbers = vec![0; files.len()];
        for (number, (given, _)) in sorted.iter().enumerate() {
            if let Some(slot) = numbers.get_mut(*given) {
                *slot = number;
            }
        }
        let numbered: Vec<Numbered<'_>> = files
            .iter()
            .zip(numbers)
            .map(|(file, number)| Numbered { file, number })
            .collect();
        Description {
            files: sorted
                .iter()
                .map(|(_, f)| DescribedFile {
                    path: f.path.clone(),
                    sha256: f.sha256,
                })
                .collect(),
            found: repositories(&numbered),
        }
    }
}

fn repositories(files: &[Numbered<'_>]) -> Result<Vec<RepositoryDescription>, LoadError> {
    let mut repositories = Vec::new();
    for (root, members) in layouts(files)? {
        repositories.push(Layout::read(root, &members)?.load()?);
    }
    if let Some(listed) = files.iter().find(|f| f.file.path == CHART_IMAGES_FILE) {
        parse_json::<ChartImagesFile>(CHART_IMAGES_FILE, &read(listed.file)?)?;
    }
    if let Some(recorded) = files.iter().find(|f| f.file.path == VERIFICATION_FILE) {
        parse_json::<VerificationFile>(VERIFICATION_FILE, &read(recorded.file)?)?;
    }
    if let Some(recorded) = files.iter().find(|f| f.file.path == ORIGINS_FILE) {
        parse_json::<OriginsFile>(ORIGINS_FILE, &read(recorded.file)?)?;
    }
    Ok(repositories)
}

/// A file and its position in path order.
#[derive(Debug, Clone, Copy)]
struct Numbered<'f> {
    file: &'f BuildFile,
    number: usize,
}

/// Every layout's folder with its files (in the order given), by folder.
fn layouts<'f>(files: &[Numbered<'f>]) -> Result<BTreeMap<&'f str, Vec<Numbered<'f>>>, LoadError> {
    let files: Vec<Numbered<'f>> = files
        .iter()
        .filter(|f| !f.file.path.starts_with('.') && !beside_the_layouts(&f.file.path))
        .copied()
        .collect();
    let marker = format!("/{OCI_LAYOUT_FILE}");
    let mut layouts: BTreeMap<&str, Vec<Numbered<'f>>> = BTreeMap::new();
    for f in &files {
        let path: &'f str = &f.file.path;
        if path == OCI_LAYOUT_FILE {
            return fail(path, Problem::UnnamedLayout);
        }
        if let Some(root) = path.strip_suffix(&marker) {
            layouts.insert(root, Vec::new());
        }
    }
    for f in files {
        // The folders above the file, deepest first.
        let mut folders = std::iter::successors(parent(&f.file.path), |folder| parent(folder));
        let Some(root) = folders.find(|folder| layouts.contains_key(folder)) else {
            return fail(f.file.path.as_str(), Problem::OutsideLayout);
        };
        if let Some(members) = layouts.get_mut(root) {
            members.push(f);
        }
    }
    Ok(layouts)
}

/// Whether `path` is one of the content files at the top of the folder, beside the layouts.
fn beside_the_layouts(path: &str) -> bool {
    path == CHART_IMAGES_FILE || path == VERIFICATION_FILE || path == ORIGINS_FILE
}

fn parent(path: &str) -> Option<&str> {
    path.rsplit_once('/').map(|(parent, _)| parent)
}

/// One layout's files, read: its blobs by hash and its parsed `index.json`.
struct Layout<'f> {
    root: &'f str,
    name: RepositoryName,
    blobs: Sha256Map<Numbered<'f>>,
    index_path: &'f str,
    index: ImageIndex,
}

impl<'f> Layout<'f> {
    fn read(root: &'f str, members: &[Numbered<'f>]) -> Result<Self, LoadError> {
        let name: RepositoryName = root
            .parse()
            .or_else(|e| fail(format!("{root}/{OCI_LAYOUT_FILE}"), Problem::Name(e)))?;
        let mut blobs = Sha256Map::with_capacity_and_hasher(members.len(), Default::default());
        let mut index = None;
        for &member in members {
            let file = member.file;
            let path: &str = &file.path;
            match path.get(root.len().saturating_add(1)..).unwrap_or_default() {
                OCI_LAYOUT_FILE => {
                    let marker: OciLayout = parse_json(path, &read(file)?)?;
                    if marker.image_layout_version != LAYOUT_VERSION {
                        return fail(path, Problem::LayoutVersion(marker.image_layout_version));
                    }
                }
                INDEX_FILE => index = Some(file),
                inner => {
                    blobs.insert(blob_hash(file, inner)?, member);
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
            index: parse_json(&index_file.path, &read(index_file)?)?,
        })
    }

    /// The path of the blob file a digest names.
    fn blob_file(&self, digest: &Digest) -> String {
        format!("{}/{}", self.root, layout::blob_path(digest))
    }

    /// The file a descriptor names, present with the descriptor's size.
    fn fetch(&self, d: &Descriptor) -> Result<(Numbered<'f>, [u8; 32]), LoadError> {
        let found = d
            .digest
            .sha256()
            .and_then(|hash| Some((*self.blobs.get(&hash)?, hash)));
        let Some((member, hash)) = found else {
            return fail(
                self.blob_file(&d.digest),
                Problem::MissingBlob(d.digest.clone()),
            );
        };
        let actual = member.file.size;
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
        Ok((member, hash))
    }

    /// The repository: every manifest `index.json` lists, with what it references, and tags.
    fn load(self) -> Result<RepositoryDescription, LoadError> {
        let mut found = Found::default();
        for d in &self.index.manifests {
            self.manifest(&mut found, d, 0)?;
        }
        for d in &self.index.manifests {
            if let Some(tag) = d.annotations.get(REF_NAME) {
                self.tag(&mut found, tag, d)?;
            }
        }
        // Blobs kept are those some manifest references (as a blob or as a manifest).
        let distinct = found.blobs.len().saturating_add(
            found
                .manifests
                .keys()
                .filter(|hash| !found.blobs.contains_key(*hash))
                .count(),
        );
        let unreferenced = self.blobs.len().saturating_sub(distinct);
        Ok(found.in_order(self.name, unreferenced))
    }

    fn tag(&self, found: &mut Found, tag: &str, d: &Descriptor) -> Result<(), LoadError> {
        if let Err(e) = tag.parse::<Tag>() {
            return fail(self.index_path, Problem::Tag(e));
        }
        let Some(hash) = d.digest.sha256() else {
            return fail(
                self.blob_file(&d.digest),
                Problem::MissingBlob(d.digest.clone()),
            );
        };
        if let Some(first) = found.tags.get(tag)
            && *first != hash
        {
            let first = found.manifests.get(first).map(|m| m.digest.clone());
            return fail(
                self.index_path,
                Problem::DuplicateTag {
                    tag: tag.to_owned(),
                    first: first.unwrap_or_else(|| d.digest.clone()),
                    second: d.digest.clone(),
                },
            );
        }
        found.tags.insert(tag.to_owned(), hash);
        Ok(())
    }

    /// Checks and records the manifest `d` names, with the blobs it references (an image) or
    /// the manifests it lists (an index, `depth` levels down).
    fn manifest(&self, found: &mut Found, d: &Descriptor, depth: usize) -> Result<(), LoadError> {
        let path = || self.blob_file(&d.digest);
        if depth > MAX_NESTING {
            return fail(path(), Problem::TooDeep);
        }
        if d.digest
            .sha256()
            .is_some_and(|hash| found.manifests.contains_key(&hash))
        {
            return Ok(());
        }
        if !valid_media_type(&d.media_type) {
            return fail(path(), Problem::MediaType(d.media_type.clone()));
        }
        let Some(kind) = manifest_kind(&d.media_type) else {
            return fail(path(), Problem::NotManifest(d.media_type.clone()));
        };
        let (member, hash) = self.fetch(d)?;
        let data = read(member.file)?;
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
                    found
                        .blobs
                        .entry(blob_hash)
                        .or_insert_with(|| BlobDescription {
                            digest: blob.digest.clone(),
                            file: blob_file.number,
                        });
                }
                let artifact_type = m.artifact_type.or(Some(m.config.media_type));
                let referrer = m.subject.map(|s| (s, artifact_type, m.annotations));
                (m.schema_version, m.media_type, referrer)
            }
            ManifestKind::Index => {
                let i: ImageIndex = serde_json::from_slice(&data).map_err(manifest_error)?;
                for child in &i.manifests {
                    self.manifest(found, child, depth.saturating_add(1))?;
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
            found
                .referrers
                .push((subject.digest, hash, artifact_type, annotations));
        }
        found.manifests.insert(
            hash,
            ManifestDescription {
                digest: d.digest.clone(),
                media_type: d.media_type.clone(),
                file: member.number,
            },
        );
        Ok(())
    }
}

/// The sha256 of a blob file (`inner`: its path in the layout), which must be its name.
fn blob_hash(file: &BuildFile, inner: &str) -> Result<[u8; 32], LoadError> {
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
    if named == Some(file.sha256) {
        return Ok(file.sha256);
    }
    let actual = Digest::from_sha256(file.sha256);
    match format!("{algorithm}:{encoded}").parse() {
        Ok(expected) => fail(path, Problem::DigestMismatch { expected, actual }),
        Err(e) => fail(path, Problem::BlobName(e.to_string())),
    }
}

/// A file's bytes, read from disk if the build left them there (an index or manifest in a
/// large file).
fn read(file: &BuildFile) -> Result<Bytes, LoadError> {
    match &file.bytes {
        BuildBytes::Held(bytes) => Ok(bytes.clone()),
        BuildBytes::OnDisk(on_disk) => match std::fs::read(on_disk) {
            Ok(read) => Ok(Bytes::from(read)),
            Err(e) => fail(file.path.as_str(), Problem::Read(e)),
        },
    }
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
