//! The OCI image layout input: `--layout DIR=REPOSITORY[:TAG]`, a layout as `skopeo copy ...
//! oci:DIR:TAG`, `oras copy --to-oci-layout` or `crane pull --format=oci` write it, served as
//! `REPOSITORY` with every manifest, index and blob byte for byte (so digests, and the
//! signatures made over them, stay the upstream ones).
//!
//! What is taken:
//! 1. The tagged entries of `DIR/index.json` (their `org.opencontainers.image.ref.name`: a tag,
//!    or a reference whose part after the last `:` is one, as crane writes it); with `:TAG`,
//!    only that tag, or the one untagged entry when the index names none; with `@DIGEST`, the
//!    entry with that digest, served as `digest-sha256-<hex>` (or as TAG with `:TAG@DIGEST`,
//!    where a TAG the index gives another digest is refused).
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
//! Every file is read as `files` says: inside the layout, a regular file, documents within a
//! bound. Indexes nest at most 8 deep; a manifest is read once however many entries name it,
//! and referrers are found round by round, each subject looked at once. The layout's
//! `index.json` is written anew (the entries taken, tagged); blobs are copied from the input's
//! files when the tree is written.

mod files;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::{
    Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION, OCI_LAYOUT_FILE, OciLayout,
    REF_NAME, UPSTREAM_DIGEST, tag_of,
};
use chartreg_core::oci::media_type::{ManifestKind, manifest_kind};
use chartreg_core::tree::{BlobFile, LayoutBuilder, Tree};

use super::{PackError, Problem, at};
use crate::layout_spec::LayoutSpec;
use crate::pin::Pin;
use files::{LayoutFiles, MAX_INDEX, MAX_MARKER};

/// How deep indexes may nest below an entry of `index.json` (as the server's loader allows).
const MAX_NESTING: usize = 8;

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
    files: LayoutFiles<'a>,
    layout: LayoutBuilder,
    /// Manifests taken, by digest, and in the order they were.
    manifests: BTreeSet<Digest>,
    taken: Vec<Digest>,
    blobs: BTreeSet<Digest>,
    /// The subject of each manifest looked at for one.
    subjects: BTreeMap<Digest, Option<Digest>>,
}

impl ImageLayout {
    /// Reads the layout `spec` names, taking what the module doc says.
    pub fn read(spec: &LayoutSpec) -> Result<ImageLayout, PackError> {
        let files = LayoutFiles::open(&spec.dir)?;
        let marker_path = files.path(OCI_LAYOUT_FILE);
        let marker: OciLayout = files.json(&marker_path, MAX_MARKER)?;
        if marker.image_layout_version != LAYOUT_VERSION {
            return Err(at(&marker_path)(Problem::LayoutVersion(
                marker.image_layout_version,
            )));
        }
        let index_path = files.path(INDEX_FILE);
        let index: ImageIndex = files.json(&index_path, MAX_INDEX)?;
        let entries: Vec<Entry> = index
            .manifests
            .into_iter()
            .map(|d| {
                let tag = d.annotations.get(REF_NAME).and_then(|r| tag_of(r));
                Entry { descriptor: d, tag }
            })
            .collect();
        let chosen = choose(&index_path, &entries, spec.pin.as_ref())?;

        let mut taking = Taking {
            files,
            layout: LayoutBuilder::new(spec.repository.as_str()),
            manifests: BTreeSet::new(),
            taken: Vec::new(),
            blobs: BTreeSet::new(),
            subjects: BTreeMap::new(),
        };
        let mut tags = 0;
        // Upstream's indexes the chosen ones keep platforms of: their signatures are kept.
        let mut upstreams = BTreeSet::new();
        for (entry, tag) in &chosen {
            taking.manifest(&entry.descriptor, 0)?;
            taking.list(&entry.descriptor, Some(tag));
            tags += 1;
            if let Some(upstream) = entry.descriptor.annotations.get(UPSTREAM_DIGEST) {
                upstreams.insert(upstream.parse::<Digest>().map_err(|source| {
                    at(&index_path)(Problem::UpstreamDigest {
                        tag: tag.to_string(),
                        upstream: upstream.clone(),
                        source,
                    })
                })?);
            }
        }
        // Referrers, and theirs, round by round: each round takes the referrers of what the
        // round before took (the first: of everything taken so far, and of upstream's indexes).
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
        let mut fresh: BTreeSet<Digest> = taking.manifests.union(&upstreams).cloned().collect();
        while !fresh.is_empty() {
            let found: Vec<&Entry> = fresh
                .iter()
                .filter_map(|subject| subjects.get(subject))
                .flatten()
                .copied()
                .filter(|e| !taking.manifests.contains(&e.descriptor.digest))
                .collect();
            let before = taking.taken.len();
            for entry in found {
                taking.manifest(&entry.descriptor, 0)?;
                taking.list(&entry.descriptor, None);
            }
            fresh = taking
                .taken
                .get(before..)
                .unwrap_or_default()
                .iter()
                .cloned()
                .collect();
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
            tree: taking.layout.finish().map_err(at(&spec.dir))?,
            tags,
            manifests,
        })
    }
}

/// The entries to take and the tag each gets.
fn choose<'e>(
    index_path: &Path,
    entries: &'e [Entry],
    pin: Option<&Pin>,
) -> Result<Vec<(&'e Entry, String)>, PackError> {
    let named: Vec<String> = entries.iter().filter_map(|e| e.tag.clone()).collect();
    let Some(pin) = pin else {
        if named.is_empty() {
            return Err(at(index_path)(Problem::LayoutUntagged));
        }
        return Ok(entries
            .iter()
            .filter_map(|e| Some((e, e.tag.clone()?)))
            .collect());
    };
    let served = pin.served().as_str().to_owned();
    let tagged: Vec<&Entry> = match pin.tag() {
        Some(tag) => entries
            .iter()
            .filter(|e| e.tag.as_deref() == Some(tag.as_str()))
            .collect(),
        None => Vec::new(),
    };
    if let [_, _, ..] = tagged.as_slice() {
        return Err(at(index_path)(Problem::LayoutTagTwice(served)));
    }
    let Some(digest) = pin.digest() else {
        return match (tagged.as_slice(), entries) {
            ([one], _) => Ok(vec![(*one, served)]),
            ([], [only]) if named.is_empty() => Ok(vec![(only, served)]),
            _ => Err(at(index_path)(Problem::LayoutTagUnknown {
                tag: served,
                named,
            })),
        };
    };
    // By digest: the entry with it (a tag the layout gives another digest is refused).
    if let [one] = tagged.as_slice()
        && one.descriptor.digest != *digest
    {
        return Err(at(index_path)(Problem::LayoutTagElsewhere {
            tag: served,
            tagged: Box::new(one.descriptor.digest.clone()),
            pinned: Box::new(digest.clone()),
        }));
    }
    match entries.iter().find(|e| e.descriptor.digest == *digest) {
        Some(entry) => Ok(vec![(entry, served)]),
        None => Err(at(index_path)(Problem::LayoutDigestUnknown(Box::new(
            digest.clone(),
        )))),
    }
}

impl Taking<'_> {
    /// The layout's file for `d`, present with `d`'s size.
    fn present(&self, d: &Descriptor) -> Result<BlobFile, PackError> {
        let path = self.files.blob(&d.digest);
        if d.digest.algorithm() != "sha256" {
            return Err(at(&path)(Problem::Algorithm(
                d.digest.algorithm().to_owned(),
            )));
        }
        let Some(size) = self.files.size(&path)? else {
            return Err(at(&path)(Problem::LayoutMissingBlob(d.digest.clone())));
        };
        if size != d.size {
            return Err(at(&path)(Problem::LayoutBlobSize {
                expected: d.size,
                actual: size,
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
        let data = self.files.manifest(&d.digest, d.size)?;
        let actual = Digest::sha256_of(&data);
        if actual != d.digest {
            return Err(at(&file.path)(Problem::LayoutDigest {
                expected: Box::new(d.digest.clone()),
                actual: Box::new(actual),
            }));
        }
        Ok(data)
    }

    /// The subject of the manifest `d`, if it has one (each manifest read once for it).
    fn subject_of(&mut self, d: &Descriptor) -> Result<Option<Digest>, PackError> {
        let Some(kind) = manifest_kind(&d.media_type) else {
            return Ok(None);
        };
        if let Some(subject) = self.subjects.get(&d.digest) {
            return Ok(subject.clone());
        }
        let data = self.manifest_bytes(d)?;
        let path = self.files.blob(&d.digest);
        let subject = match kind {
            ManifestKind::Image => parse::<ImageManifest>(&path, &data)?.subject,
            ManifestKind::Index => parse::<ImageIndex>(&path, &data)?.subject,
        }
        .map(|s| s.digest);
        self.subjects.insert(d.digest.clone(), subject.clone());
        Ok(subject)
    }

    /// Takes the manifest `d` and everything it references.
    fn manifest(&mut self, d: &Descriptor, depth: usize) -> Result<(), PackError> {
        let path = self.files.blob(&d.digest);
        if depth > MAX_NESTING {
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
        self.taken.push(d.digest.clone());
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
    serde_json::from_slice(data).map_err(|e| at(path)(Problem::Json(e)))
}

#[cfg(test)]
mod tests;
