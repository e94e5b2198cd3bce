//! The OCI image layout input: `--layout DIR=REPOSITORY[:TAG]`, a layout as `skopeo copy ...
//! oci:DIR:TAG`, `oras copy --to-oci-layout` or `crane pull --format=oci` write it, served as
//! `REPOSITORY` with every manifest, index and blob byte for byte (so digests, and the
//! signatures made over them, stay the upstream ones).
//!
//! What is taken:
//! 1. The tagged entries of `DIR/index.json` (their `org.opencontainers.image.ref.name`: a tag,
//!    or a reference whose part after the last `:` is one, as crane writes it); with `:TAG`,
//!    only that tag, or the one untagged entry when the index names none.
//! 2. Everything they reference: an index's manifests (every platform), a manifest's config
//!    and layers. Each must be in the layout with its descriptor's size; manifests are read and
//!    checked against their digest here, blobs while they are copied (see `tree`).
//! 3. Their referrers: untagged entries whose `subject` is taken content (signatures,
//!    attestations, SBOMs in OCI 1.1 form, and theirs in turn), and, with `:TAG`, the cosign
//!    tag-schema tags `sha256-<hex>.sig/.att/.sbom` of taken manifests. For an index that keeps
//!    some platforms of the one upstream serves (`fetch --platform`, [`UPSTREAM_DIGEST`] on its
//!    entry), those of upstream's index too: its signatures, which the verification reads
//!    (upstream's index itself is not served: the platforms it lists and the index keeps are).
//!
//! The layout's `index.json` is written anew (the entries taken, tagged); blobs are copied from
//! the input's files when the tree is written.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use chartreg_core::oci::layout::{
    Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION, OCI_LAYOUT_FILE, OciLayout,
    REF_NAME, UPSTREAM_DIGEST, blob_path, tag_of,
};
use chartreg_core::oci::media_type::{ManifestKind, manifest_kind};
use chartreg_core::oci::{Digest, NameError, RepositoryName, Tag, TagError};
use chartreg_core::tree::{BlobFile, LayoutBuilder, Tree};

use super::{PackError, Problem, at, io_at};

/// `DIR=REPOSITORY[:TAG]`, as given to `--layout`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutSpec {
    pub dir: PathBuf,
    pub repository: RepositoryName,
    pub tag: Option<Tag>,
}

/// Why a `DIR=REPOSITORY[:TAG]` is not one.
#[derive(Debug, thiserror::Error)]
pub enum LayoutSpecError {
    #[error("`{0}` is not DIR=REPOSITORY or DIR=REPOSITORY:TAG")]
    NoEquals(String),
    #[error("`{0}` names no layout folder before `=`")]
    NoFolder(String),
    #[error("`{repository}` is not a repository name: {source}")]
    Repository {
        repository: String,
        source: NameError,
    },
    #[error("`{tag}` is not a tag: {source}")]
    Tag { tag: String, source: TagError },
}

impl FromStr for LayoutSpec {
    type Err = LayoutSpecError;

    fn from_str(s: &str) -> Result<Self, LayoutSpecError> {
        let Some((dir, target)) = s.rsplit_once('=') else {
            return Err(LayoutSpecError::NoEquals(s.to_owned()));
        };
        if dir.is_empty() {
            return Err(LayoutSpecError::NoFolder(s.to_owned()));
        }
        let (repository, tag) = match target.split_once(':') {
            Some((repository, tag)) => (repository, Some(tag)),
            None => (target, None),
        };
        Ok(LayoutSpec {
            dir: PathBuf::from(dir),
            repository: repository
                .parse()
                .map_err(|source| LayoutSpecError::Repository {
                    repository: repository.to_owned(),
                    source,
                })?,
            tag: tag
                .map(|t| {
                    t.parse().map_err(|source| LayoutSpecError::Tag {
                        tag: t.to_owned(),
                        source,
                    })
                })
                .transpose()?,
        })
    }
}

/// One layout input, read and checked: the repository's tree.
#[derive(Debug, Clone)]
pub struct ImageLayout {
    pub spec: LayoutSpec,
    pub tree: Tree,
    /// Tags and manifests the repository holds.
    pub tags: usize,
    pub manifests: usize,
}

/// An entry of the input's `index.json`, with the tag it gets (if any).
struct Entry {
    descriptor: Descriptor,
    tag: Option<String>,
}

/// What is taken from the layout so far.
struct Taking<'a> {
    dir: &'a Path,
    layout: LayoutBuilder,
    /// Manifests taken, by digest.
    manifests: BTreeSet<Digest>,
    blobs: BTreeSet<Digest>,
}

impl ImageLayout {
    /// Reads the layout `spec` names, taking what the module doc says.
    pub fn read(spec: &LayoutSpec) -> Result<ImageLayout, PackError> {
        let dir = spec.dir.as_path();
        let marker_path = dir.join(OCI_LAYOUT_FILE);
        let marker: OciLayout = read_json(&marker_path)?;
        if marker.image_layout_version != LAYOUT_VERSION {
            return Err(at(&marker_path)(Problem::LayoutVersion(
                marker.image_layout_version,
            )));
        }
        let index_path = dir.join(INDEX_FILE);
        let index: ImageIndex = read_json(&index_path)?;
        let entries: Vec<Entry> = index
            .manifests
            .into_iter()
            .map(|d| {
                let tag = d.annotations.get(REF_NAME).and_then(|r| tag_of(r));
                Entry { descriptor: d, tag }
            })
            .collect();
        let chosen = choose(&index_path, &entries, spec.tag.as_ref())?;

        let mut taking = Taking {
            dir,
            layout: LayoutBuilder::new(spec.repository.as_str()),
            manifests: BTreeSet::new(),
            blobs: BTreeSet::new(),
        };
        let mut tags = 0;
        // Upstream's indexes the chosen ones keep platforms of: their signatures are kept.
        let mut upstreams = BTreeSet::new();
        for (entry, tag) in &chosen {
            taking.manifest(&entry.descriptor, 0)?;
            taking.list(&entry.descriptor, Some(tag));
            tags += 1;
            if let Some(upstream) = entry.descriptor.annotations.get(UPSTREAM_DIGEST) {
                upstreams.insert(upstream.parse::<Digest>().map_err(|e| {
                    at(&index_path)(Problem::Json(format!(
                        "{tag}'s {UPSTREAM_DIGEST} `{upstream}`: {e}"
                    )))
                })?);
            }
        }
        let signed =
            |taking: &Taking, d: &Digest| taking.manifests.contains(d) || upstreams.contains(d);
        // Referrers, and theirs, until no more are found.
        let mut subjects: BTreeMap<Digest, Vec<&Entry>> = BTreeMap::new();
        let mut schema_tags = Vec::new();
        for entry in &entries {
            if chosen.iter().any(|(c, _)| std::ptr::eq(*c, entry)) {
                continue;
            }
            match &entry.tag {
                None => {
                    if let Some(subject) = taking.subject_of(&entry.descriptor)? {
                        subjects.entry(subject).or_default().push(entry);
                    }
                }
                Some(tag) => schema_tags.push((entry, tag.clone())),
            }
        }
        loop {
            let found: Vec<&Entry> = subjects
                .iter()
                .filter(|(subject, _)| signed(&taking, subject))
                .flat_map(|(_, referrers)| referrers.iter().copied())
                .filter(|e| !taking.manifests.contains(&e.descriptor.digest))
                .collect();
            if found.is_empty() {
                break;
            }
            for entry in found {
                taking.manifest(&entry.descriptor, 0)?;
                taking.list(&entry.descriptor, None);
            }
        }
        // The cosign tag schema: `sha256-<hex of a taken manifest>.sig` and the like.
        for (entry, tag) in schema_tags {
            let names_taken = ["sig", "att", "sbom"].iter().any(|kind| {
                taking
                    .manifests
                    .iter()
                    .chain(&upstreams)
                    .any(|d| *tag == format!("{}-{}.{kind}", d.algorithm(), d.encoded()))
            });
            if names_taken && !taking.manifests.contains(&entry.descriptor.digest) {
                taking.manifest(&entry.descriptor, 0)?;
                taking.list(&entry.descriptor, Some(&tag));
                tags += 1;
            }
        }
        let manifests = taking.manifests.len();
        Ok(ImageLayout {
            spec: spec.clone(),
            tree: taking
                .layout
                .finish()
                .map_err(|e| at(&spec.dir)(e.into()))?,
            tags,
            manifests,
        })
    }
}

/// The entries to take and the tag each gets.
fn choose<'e>(
    index_path: &Path,
    entries: &'e [Entry],
    tag: Option<&Tag>,
) -> Result<Vec<(&'e Entry, String)>, PackError> {
    let named: Vec<String> = entries.iter().filter_map(|e| e.tag.clone()).collect();
    let Some(tag) = tag else {
        if named.is_empty() {
            return Err(at(index_path)(Problem::LayoutUntagged));
        }
        return Ok(entries
            .iter()
            .filter_map(|e| Some((e, e.tag.clone()?)))
            .collect());
    };
    let matching: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.tag.as_deref() == Some(tag.as_str()))
        .collect();
    match (matching.as_slice(), entries) {
        ([one], _) => Ok(vec![(*one, tag.as_str().to_owned())]),
        ([], [only]) if named.is_empty() => Ok(vec![(only, tag.as_str().to_owned())]),
        ([], _) => Err(at(index_path)(Problem::LayoutTagUnknown {
            tag: tag.as_str().to_owned(),
            named,
        })),
        (_, _) => Err(at(index_path)(Problem::LayoutTagTwice(
            tag.as_str().to_owned(),
        ))),
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, PackError> {
    let data = fs::read(path).map_err(io_at(path))?;
    serde_json::from_slice(&data).map_err(|e| at(path)(Problem::Json(e.to_string())))
}

impl Taking<'_> {
    fn blob_file(&self, digest: &Digest) -> PathBuf {
        self.dir.join(blob_path(digest))
    }

    /// The layout's file for `d`, present with `d`'s size.
    fn present(&self, d: &Descriptor) -> Result<BlobFile, PackError> {
        let path = self.blob_file(&d.digest);
        if d.digest.algorithm() != "sha256" {
            return Err(at(&path)(Problem::Algorithm(
                d.digest.algorithm().to_owned(),
            )));
        }
        let meta = fs::metadata(&path)
            .map_err(|_| at(&path)(Problem::LayoutMissingBlob(d.digest.clone())))?;
        if meta.len() != d.size {
            return Err(at(&path)(Problem::LayoutBlobSize {
                expected: d.size,
                actual: meta.len(),
            }));
        }
        Ok(BlobFile {
            path,
            size: d.size,
            digest: d.digest.clone(),
        })
    }

    /// The bytes of the manifest `d`, checked against its digest.
    fn manifest_bytes(&self, d: &Descriptor) -> Result<Vec<u8>, PackError> {
        let file = self.present(d)?;
        let data = fs::read(&file.path).map_err(io_at(&file.path))?;
        let actual = Digest::sha256_of(&data);
        if actual != d.digest {
            return Err(at(&file.path)(Problem::LayoutDigest {
                expected: Box::new(d.digest.clone()),
                actual: Box::new(actual),
            }));
        }
        Ok(data)
    }

    /// The subject of the manifest `d`, if it has one.
    fn subject_of(&self, d: &Descriptor) -> Result<Option<Digest>, PackError> {
        let Some(kind) = manifest_kind(&d.media_type) else {
            return Ok(None);
        };
        let data = self.manifest_bytes(d)?;
        let path = self.blob_file(&d.digest);
        let subject = match kind {
            ManifestKind::Image => parse::<ImageManifest>(&path, &data)?.subject,
            ManifestKind::Index => parse::<ImageIndex>(&path, &data)?.subject,
        };
        Ok(subject.map(|s| s.digest))
    }

    /// Takes the manifest `d` and everything it references.
    fn manifest(&mut self, d: &Descriptor, depth: usize) -> Result<(), PackError> {
        let path = self.blob_file(&d.digest);
        if depth > 8 {
            return Err(at(&path)(Problem::LayoutTooDeep));
        }
        if self.manifests.contains(&d.digest) {
            return Ok(());
        }
        let Some(kind) = manifest_kind(&d.media_type) else {
            return Err(at(&path)(Problem::LayoutNotManifest(d.media_type.clone())));
        };
        let data = self.manifest_bytes(d)?;
        match kind {
            ManifestKind::Image => {
                let m: ImageManifest = parse(&path, &data)?;
                for blob in std::iter::once(&m.config).chain(&m.layers) {
                    if self.blobs.insert(blob.digest.clone()) {
                        let file = self.present(blob)?;
                        self.layout.blob_file(&blob.media_type, file);
                    }
                }
            }
            ManifestKind::Index => {
                let i: ImageIndex = parse(&path, &data)?;
                for child in &i.manifests {
                    self.manifest(child, depth + 1)?;
                }
            }
        }
        self.manifests.insert(d.digest.clone());
        self.layout.blob(&d.media_type, data);
        Ok(())
    }

    /// Lists `d` in the new `index.json`, with the input entry's annotations but its tag.
    fn list(&mut self, d: &Descriptor, tag: Option<&str>) {
        let mut listed = d.clone();
        listed.annotations.remove(REF_NAME);
        self.layout.list(listed, tag);
    }
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, data: &[u8]) -> Result<T, PackError> {
    serde_json::from_slice(data).map_err(|e| at(path)(Problem::Json(e.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("v1.2.3", Some("v1.2.3"))]
    #[case("latest", Some("latest"))]
    #[case("docker.io/library/alpine:3.20", Some("3.20"))]
    #[case("127.0.0.1:5000/app:v1", Some("v1"))]
    #[case("127.0.0.1:5000/app", None)]
    #[case("app@sha256:0000", None)]
    fn ref_names_give_tags(#[case] ref_name: &str, #[case] tag: Option<&str>) {
        assert_eq!(tag_of(ref_name).as_deref(), tag);
    }

    #[rstest]
    #[case("dir=images/app", Ok(("dir", "images/app", None)))]
    #[case("a=b=images/app:v1", Ok(("a=b", "images/app", Some("v1"))))]
    #[case("dir", Err("is not DIR=REPOSITORY"))]
    #[case("=images/app", Err("names no layout folder"))]
    #[case("dir=Images/app", Err("is not a repository name"))]
    #[case("dir=images/app:bad tag", Err("is not a tag"))]
    fn layout_specs(
        #[case] text: &str,
        #[case] expected: Result<(&str, &str, Option<&str>), &str>,
    ) {
        match (text.parse::<LayoutSpec>(), expected) {
            (Ok(spec), Ok((dir, repository, tag))) => {
                assert_eq!(spec.dir, PathBuf::from(dir));
                assert_eq!(spec.repository.as_str(), repository);
                assert_eq!(spec.tag.as_ref().map(Tag::as_str), tag);
            }
            (Err(e), Err(words)) => assert!(e.to_string().contains(words), "{e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}
