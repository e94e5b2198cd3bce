//! Imported repositories (from mindthegap bundles, by `import-bundle`) as layout trees, and
//! their merge with packed charts of the same repository.
//!
//! `import-bundle` writes each repository it imports as an OCI layout and records, in the
//! output folder's record, the manifests it listed there ([`Imported`]). That record is what
//! lets `pack` rebuild the imported part of a repository from the folder itself, whatever
//! pack added to it since: the listed manifests and everything they reference
//! ([`imported_tree`]). A repository both imported and packed is merged by tag ([`merge`]): an
//! imported tag keeps its manifest (the digest older clusters saw); a packed version of the
//! same tag with the same chart layers stays pullable by digest, untagged; one with other
//! layers is an error naming both sources.
//!
//! Manifests are read whole, so at most [`MAX_MANIFEST`] of each; a layout folder's blobs are
//! taken only when they are regular files (not links, FIFOs or devices).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use chartreg_core::oci::layout::{
    Descriptor, INDEX_FILE, ImageIndex, LAYOUT_VERSION, OCI_LAYOUT_FILE, OciLayout, REF_NAME,
    blob_path,
};
use chartreg_core::oci::media_type::{self, ManifestKind};
use chartreg_core::oci::{Digest, gojson};
use chartreg_core::tree::{BlobFile, Entry, Tree};
use serde::{Deserialize, Serialize};

/// How deep indexes may nest (as the server's loader allows).
const MAX_NESTING: usize = 8;

/// The most of a manifest read: registries refuse larger ones (distribution's default limit,
/// which fetch applies too).
pub const MAX_MANIFEST: u64 = 4 << 20;

/// Why an imported repository could not be walked or merged.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Unwritable(#[from] chartreg_core::oci::gojson::Unwritable),
    #[error("manifest {0} is missing")]
    Missing(Digest),
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A blob of the tree being packed that could not be read.
    #[error("{0}")]
    Packed(std::io::Error),
    #[error("indexes nest deeper than {MAX_NESTING} levels at {0}")]
    TooDeep(Digest),
    #[error("manifest {digest}: {source}")]
    Json {
        digest: Digest,
        source: serde_json::Error,
    },
    #[error("blob {blob} (referenced by manifest {manifest}) is missing")]
    BlobMissing {
        blob: Box<Digest>,
        manifest: Box<Digest>,
    },
    #[error("manifest {digest} has media type `{kind}`, not a manifest")]
    NotManifest { digest: Digest, kind: String },
    #[error(
        "manifest {digest} is {size} bytes, more than the {} MiB registries accept",
        MAX_MANIFEST >> 20
    )]
    TooLarge { digest: Digest, size: u64 },
    #[error("{}: imported from {}: {source}", folder.display(), bundles.join(", "))]
    Imported {
        folder: PathBuf,
        bundles: Vec<String>,
        source: Box<Error>,
    },
    #[error("{name}: packed without an index.json")]
    NoPackedIndex { name: String },
    /// The packed `index.json` does not parse.
    #[error("{0}")]
    PackedIndex(serde_json::Error),
    #[error(
        "{name}:{tag}: the chart packed from {} is not the one imported from {} (other chart layers); keep one of them",
        packed_from.display(),
        bundles.join(", ")
    )]
    OtherChart {
        name: String,
        tag: String,
        packed_from: PathBuf,
        bundles: Vec<String>,
    },
}

/// What `import-bundle` wrote into one repository: the bundles (file names) and the manifests
/// it listed in `index.json`, tagged or not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Imported {
    pub bundles: Vec<String>,
    pub manifests: Vec<Descriptor>,
}

/// Where a layout's blobs come from.
pub trait Blobs {
    /// The file holding `digest`, if there is one.
    fn blob(&self, digest: &Digest) -> Option<BlobFile>;

    /// The bytes of the manifest `digest`, at most [`MAX_MANIFEST`].
    fn read(&self, digest: &Digest) -> Result<Vec<u8>, Error> {
        let file = self
            .blob(digest)
            .ok_or_else(|| Error::Missing(digest.clone()))?;
        if file.size > MAX_MANIFEST {
            return Err(Error::TooLarge {
                digest: digest.clone(),
                size: file.size,
            });
        }
        let read = |source| Error::Read {
            path: file.path.clone(),
            source,
        };
        let mut data = Vec::new();
        std::fs::File::open(&file.path)
            .and_then(|f| f.take(MAX_MANIFEST + 1).read_to_end(&mut data))
            .map_err(read)?;
        if data.len() as u64 > MAX_MANIFEST {
            return Err(Error::TooLarge {
                digest: digest.clone(),
                size: data.len() as u64,
            });
        }
        Ok(data)
    }
}

/// The blobs of a layout folder on disk, hashed as they are taken.
pub struct LayoutFolder<'a>(pub &'a Path);

impl Blobs for LayoutFolder<'_> {
    /// The blob's file when it is a regular file (pack and import-bundle write no other) with
    /// the digest it is stored under.
    fn blob(&self, digest: &Digest) -> Option<BlobFile> {
        let path = self.0.join(blob_path(digest));
        if !std::fs::symlink_metadata(&path).ok()?.is_file() {
            return None;
        }
        let file = BlobFile::hash(&path).ok()?;
        (file.digest == *digest).then_some(file)
    }
}

impl Blobs for BTreeMap<Digest, BlobFile> {
    fn blob(&self, digest: &Digest) -> Option<BlobFile> {
        self.get(digest).cloned()
    }
}

#[derive(Deserialize)]
struct References {
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

/// The manifest `digest` and everything it references, from `blobs`: its descriptor (typed
/// from its content when stored without `mediaType`) and every blob file, manifest included.
pub fn walk(
    blobs: &impl Blobs,
    digest: &Digest,
    files: &mut BTreeMap<Digest, BlobFile>,
) -> Result<Descriptor, Error> {
    walk_at(blobs, digest, files, 0)
}

fn walk_at(
    blobs: &impl Blobs,
    digest: &Digest,
    files: &mut BTreeMap<Digest, BlobFile>,
    depth: usize,
) -> Result<Descriptor, Error> {
    if depth > MAX_NESTING {
        return Err(Error::TooDeep(digest.clone()));
    }
    let file = blobs
        .blob(digest)
        .ok_or_else(|| Error::Missing(digest.clone()))?;
    let data = blobs.read(digest)?;
    let kind = media_type::of_manifest(&data);
    let references: References = serde_json::from_slice(&data).map_err(|source| Error::Json {
        digest: digest.clone(),
        source,
    })?;
    let descriptor = Descriptor::new(&kind, digest.clone(), file.size);
    files.insert(digest.clone(), file);
    match media_type::manifest_kind(&kind) {
        Some(ManifestKind::Index) => {
            for child in &references.manifests {
                walk_at(blobs, &child.digest, files, depth + 1)?;
            }
        }
        Some(ManifestKind::Image) => {
            for d in references.config.iter().chain(&references.layers) {
                let blob = blobs.blob(&d.digest).ok_or_else(|| Error::BlobMissing {
                    blob: Box::new(d.digest.clone()),
                    manifest: Box::new(digest.clone()),
                })?;
                files.insert(d.digest.clone(), blob);
            }
        }
        None => {
            return Err(Error::NotManifest {
                digest: digest.clone(),
                kind,
            });
        }
    }
    Ok(descriptor)
}

/// What a manifest holds, to tell a re-push (same content, new `created`) from other content:
/// an image manifest's layers; an index's manifests.
pub fn content_of(blobs: &impl Blobs, digest: &Digest) -> Result<Vec<Digest>, Error> {
    let data = blobs.read(digest)?;
    let references: References = serde_json::from_slice(&data).map_err(|source| Error::Json {
        digest: digest.clone(),
        source,
    })?;
    Ok(references
        .layers
        .iter()
        .chain(&references.manifests)
        .map(|d| d.digest.clone())
        .collect())
}

/// One repository's layout tree: `index.json` listing `manifests`, and `files` as blobs,
/// linked from their files when `link` (staged bundle blobs), copied otherwise.
pub fn layout_tree(
    root: &str,
    manifests: &[Descriptor],
    files: BTreeMap<Digest, BlobFile>,
    link: bool,
) -> Result<Tree, Error> {
    let mut tree = Tree::new();
    for (digest, file) in files {
        let entry = if link {
            Entry::Link(file)
        } else {
            Entry::File(file)
        };
        tree.insert(format!("{root}/{}", blob_path(&digest)), entry);
    }
    let marker = OciLayout {
        image_layout_version: LAYOUT_VERSION.to_owned(),
    };
    tree.insert(
        format!("{root}/{OCI_LAYOUT_FILE}"),
        Entry::Bytes(gojson::to_vec(&marker)?),
    );
    tree.insert(
        format!("{root}/{INDEX_FILE}"),
        Entry::Bytes(index_bytes(manifests)?),
    );
    Ok(tree)
}

fn index_bytes(manifests: &[Descriptor]) -> Result<Vec<u8>, Error> {
    let index = ImageIndex {
        schema_version: 2,
        media_type: Some(media_type::OCI_INDEX.to_owned()),
        artifact_type: None,
        manifests: manifests.to_vec(),
        subject: None,
        annotations: Default::default(),
    };
    Ok(gojson::to_vec(&index)?)
}

/// The imported part of the repository `name`, rebuilt from its folder under `out`.
pub fn imported_tree(out: &Path, name: &str, imported: &Imported) -> Result<Tree, Error> {
    let folder = out.join(name);
    let blobs = LayoutFolder(&folder);
    let mut files = BTreeMap::new();
    for d in &imported.manifests {
        walk(&blobs, &d.digest, &mut files).map_err(|e| Error::Imported {
            folder: folder.clone(),
            bundles: imported.bundles.clone(),
            source: Box::new(e),
        })?;
    }
    layout_tree(name, &imported.manifests, files, false)
}

/// `packed` (a chart repository's tree, as pack lays it out) merged by tag with the imported
/// part of the same repository; `source` names the packed input in errors.
pub fn merge(
    packed: Tree,
    out: &Path,
    name: &str,
    imported: &Imported,
    source: &Path,
) -> Result<Tree, Error> {
    let index_key = format!("{name}/{INDEX_FILE}");
    let packed_index: ImageIndex = match packed.get(&index_key) {
        Some(Entry::Bytes(data)) => serde_json::from_slice(data).map_err(Error::PackedIndex)?,
        _ => {
            return Err(Error::NoPackedIndex {
                name: name.to_owned(),
            });
        }
    };
    let mut tree = imported_tree(out, name, imported)?;
    let imported_blobs = LayoutFolder(&out.join(name));
    let tagged: BTreeMap<&str, &Descriptor> = imported
        .manifests
        .iter()
        .filter_map(|d| d.annotations.get(REF_NAME).map(|t| (t.as_str(), d)))
        .collect();
    let listed: BTreeSet<&Digest> = imported.manifests.iter().map(|d| &d.digest).collect();
    let packed_blobs = TreeBlobs(&packed);
    let mut manifests = imported.manifests.clone();
    for mut d in packed_index.manifests {
        if listed.contains(&d.digest) {
            continue;
        }
        if let Some(tag) = d.annotations.get(REF_NAME).cloned()
            && let Some(kept) = tagged.get(tag.as_str())
        {
            let ours = content_of(&packed_blobs, &d.digest)?;
            let theirs = content_of(&imported_blobs, &kept.digest)?;
            if ours != theirs {
                return Err(Error::OtherChart {
                    name: name.to_owned(),
                    tag,
                    packed_from: source.to_owned(),
                    bundles: imported.bundles.clone(),
                });
            }
            // The same chart pushed again: the imported manifest keeps the tag.
            d.annotations.remove(REF_NAME);
        }
        manifests.push(d);
    }
    for (key, entry) in packed {
        if key != index_key {
            tree.entry(key).or_insert(entry);
        }
    }
    tree.insert(index_key, Entry::Bytes(index_bytes(&manifests)?));
    Ok(tree)
}

/// The blobs of a tree being packed.
struct TreeBlobs<'a>(&'a Tree);

impl Blobs for TreeBlobs<'_> {
    fn blob(&self, _: &Digest) -> Option<BlobFile> {
        None
    }

    fn read(&self, digest: &Digest) -> Result<Vec<u8>, Error> {
        let suffix = format!("/{}", blob_path(digest));
        let entry = self
            .0
            .iter()
            .find(|(key, _)| key.ends_with(&suffix))
            .map(|(_, entry)| entry)
            .ok_or_else(|| Error::Missing(digest.clone()))?;
        entry.read().map(|d| d.into_owned()).map_err(Error::Packed)
    }
}

#[cfg(test)]
mod tests;
