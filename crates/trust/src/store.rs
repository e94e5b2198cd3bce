//! Where an image's signatures are read from: a [`Store`] lists a repository's manifests (with
//! their tags) and reads a manifest's or blob's bytes, checked against its digest. Two kinds:
//! an OCI image layout on disk ([`LayoutStore`]: fetch's staging folder, pack's inputs) and the
//! server's embedded content (`chartreg verify`). `image` checks what a store holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::{
    INDEX_FILE, ImageIndex, REF_NAME, UPSTREAM_DIGEST, blob_path, tag_of,
};
use serde::Deserialize;

/// The most of a layout's `index.json` read (one entry per tag and referrer: ~300 bytes each).
const INDEX_LIMIT: u64 = 64 << 20;
/// The most of a manifest, signature payload or bundle read (registries refuse manifests past
/// 4 MiB).
const DOCUMENT_LIMIT: u64 = 4 << 20;

/// Why a layout's signatures cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not what the layout says: {source}", path.display())]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} is not what the layout says: {tag}'s {UPSTREAM_DIGEST} `{value}`: {source}", path.display())]
    UpstreamDigest {
        path: PathBuf,
        tag: String,
        value: String,
        source: chartreg_core::oci::DigestError,
    },
    #[error("{} is not what the layout says: its content is not {digest}", path.display())]
    OtherBytes { path: PathBuf, digest: Digest },
    #[error("manifest {digest}: not a manifest: {source}")]
    NotManifest {
        digest: Digest,
        source: serde_json::Error,
    },
    #[error("{repository} {digest}: the recorded upstream index is not {digest}")]
    UpstreamIndex { repository: String, digest: Digest },
    #[error("{repository} {digest}: {source}")]
    NotHeld {
        repository: String,
        digest: Digest,
        source: Box<chartreg_core::content::Error>,
    },
}

/// Where a repository's manifests and blobs are read from: an OCI image layout on disk
/// ([`LayoutStore`]), or the server's embedded content.
pub trait Store {
    /// Every manifest the repository lists, with its tag when it has one.
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError>;
    /// The bytes of the manifest or blob `digest`, checked against it.
    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError>;
    /// When the index tagged `tag` keeps some platforms of the index upstream serves: that
    /// index's digest (its bytes are `read` by it).
    fn upstream(&self, tag: &str) -> Result<Option<Digest>, LayoutError>;
}

/// An OCI image layout on disk: its `index.json` entries, its `blobs/`.
pub struct LayoutStore<'a> {
    pub dir: &'a Path,
}

impl LayoutStore<'_> {
    fn index(&self) -> Result<ImageIndex, LayoutError> {
        let index_path = self.dir.join(INDEX_FILE);
        let data =
            chartreg_core::file::read_limited(&index_path, INDEX_LIMIT).map_err(|source| {
                LayoutError::Read {
                    path: index_path.clone(),
                    source,
                }
            })?;
        serde_json::from_slice(&data).map_err(|source| LayoutError::NotJson {
            path: index_path.clone(),
            source,
        })
    }
}

impl Store for LayoutStore<'_> {
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError> {
        Ok(self
            .index()?
            .manifests
            .into_iter()
            .map(|d| {
                let tag = d.annotations.get(REF_NAME).and_then(|r| tag_of(r));
                (tag, d.digest)
            })
            .collect())
    }

    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
        blob(self.dir, digest)
    }

    fn upstream(&self, tag: &str) -> Result<Option<Digest>, LayoutError> {
        let index = self.index()?;
        let Some(entry) = index.manifests.iter().find(|d| {
            d.annotations
                .get(REF_NAME)
                .and_then(|r| tag_of(r))
                .is_some_and(|t| t == tag)
        }) else {
            return Ok(None);
        };
        let Some(upstream) = entry.annotations.get(UPSTREAM_DIGEST) else {
            return Ok(None);
        };
        upstream
            .parse()
            .map(Some)
            .map_err(|source| LayoutError::UpstreamDigest {
                path: self.dir.join(INDEX_FILE),
                tag: tag.to_owned(),
                value: upstream.clone(),
                source,
            })
    }
}

/// What the checks read of a manifest: a signature's or bundle's layers, a referrer's type and
/// subject.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manifest {
    #[serde(default)]
    pub artifact_type: Option<String>,
    #[serde(default)]
    pub config: Option<Blob>,
    #[serde(default)]
    pub layers: Vec<Blob>,
    #[serde(default)]
    pub subject: Option<Blob>,
}

/// A descriptor, as the checks read it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Blob {
    pub media_type: String,
    pub digest: Digest,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// Reads the blob `digest` of the layout `dir`, checked against its digest.
fn blob(dir: &Path, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
    let path = dir.join(blob_path(digest));
    let data = chartreg_core::file::read_limited(&path, DOCUMENT_LIMIT).map_err(|source| {
        LayoutError::Read {
            path: path.clone(),
            source,
        }
    })?;
    if Digest::sha256_of(&data) != *digest {
        return Err(LayoutError::OtherBytes {
            path,
            digest: digest.clone(),
        });
    }
    Ok(data)
}

/// The manifest `digest` of `store`, read as the checks read it.
pub(crate) fn manifest(store: &dyn Store, digest: &Digest) -> Result<Manifest, LayoutError> {
    let data = store.read(digest)?;
    serde_json::from_slice(&data).map_err(|source| LayoutError::NotManifest {
        digest: digest.clone(),
        source,
    })
}
