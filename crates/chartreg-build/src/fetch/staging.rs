//! A repository's layout as fetch fills it: in a hidden folder beside its place ([`Staging`],
//! `.<name>.fetch-new`), manifests and blobs taken from the registry or linked from the layout
//! it replaces ([`Filling`]), `index.json` written once the tags are taken ([`write_layout`]),
//! and renamed into place only when complete and checked (`images::copy_repository`); dropped
//! otherwise, so a failed fetch leaves the layout that was there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chartreg_core::oci::gojson;
use chartreg_core::oci::layout::{
    Annotations, Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION,
    OCI_LAYOUT_FILE, OciLayout, REF_NAME,
};
use chartreg_core::oci::{Digest, media_type};

use super::oci::Registry;
use super::problem::Problem;
use super::problem::{Document, MAX_NESTING};
use super::transport::existing_sha256;

/// One repository's layout being filled.
pub(super) struct Filling<'a> {
    pub(super) registry: &'a Registry,
    pub(super) repository: &'a str,
    /// The staging folder.
    pub(super) dir: PathBuf,
    /// The layout it replaces (blobs there are taken, not downloaded again).
    pub(super) previous: PathBuf,
    /// Manifests taken, by digest.
    pub(super) manifests: BTreeSet<String>,
    /// Manifests whose referrers were asked for.
    pub(super) asked: BTreeSet<String>,
    /// Configs and layers taken, by digest.
    pub(super) blobs: BTreeSet<String>,
}

impl Filling<'_> {
    pub(super) fn blob_path(&self, digest: &str) -> PathBuf {
        self.dir
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    }

    /// A blob into the layout: linked from the previous layout when it holds it with its
    /// digest, else downloaded (never more than the size `blob` gives).
    pub(super) async fn blob(&mut self, blob: &Descriptor) -> Result<(), Problem> {
        let digest = blob.digest.as_str();
        if !self.blobs.insert(digest.to_owned()) {
            return Ok(());
        }
        let path = self.blob_path(digest);
        let hex = digest.trim_start_matches("sha256:");
        let old = self.previous.join("blobs/sha256").join(hex);
        if existing_sha256(&old).map(hex::encode).as_deref() == Some(hex) {
            let io = |e: std::io::Error| Problem::file(&path, e);
            std::fs::create_dir_all(path.parent().unwrap_or(&self.dir)).map_err(io)?;
            if std::fs::hard_link(&old, &path).is_err() {
                std::fs::copy(&old, &path).map_err(io)?;
            }
            return Ok(());
        }
        self.registry
            .blob(self.repository, blob, &path)
            .await
            .map(|_| ())
    }

    /// Writes manifest bytes under their digest (checked).
    pub(super) fn store(&mut self, data: &[u8], digest: &str) -> Result<(), Problem> {
        let actual = Digest::sha256_of(data);
        if actual.as_str() != digest {
            return Err(Problem::DigestMismatch {
                expected: digest.to_owned(),
                actual: actual.to_string(),
            });
        }
        let path = self.blob_path(digest);
        std::fs::create_dir_all(path.parent().unwrap_or(&self.dir))
            .and_then(|()| std::fs::write(&path, data))
            .map_err(|e| Problem::file(&path, e))?;
        self.manifests.insert(digest.to_owned());
        Ok(())
    }

    /// Takes the manifest `data` (digest `digest`) and everything it references; returns the
    /// platforms of an index's manifests.
    pub(super) async fn take(
        &mut self,
        data: &[u8],
        digest: &str,
        depth: usize,
    ) -> Result<Vec<String>, Problem> {
        if depth > MAX_NESTING {
            return Err(Problem::TooDeep {
                digest: digest.to_owned(),
            });
        }
        self.store(data, digest)?;
        let kind = media_type::of_manifest(data);
        let mut platforms = Vec::new();
        if media_type::manifest_kind(&kind) == Some(media_type::ManifestKind::Index) {
            let index: ImageIndex = serde_json::from_slice(data)
                .map_err(|e| Problem::not_json(Document::Index(digest.to_owned()), e))?;
            for child in &index.manifests {
                if let Some(p) = &child.platform {
                    platforms.push(p.to_string());
                }
                if self.manifests.contains(child.digest.as_str()) {
                    continue;
                }
                let (child_data, child_digest) = self
                    .registry
                    .manifest(self.repository, child.digest.as_str())
                    .await?;
                Box::pin(self.take(&child_data, &child_digest, depth + 1)).await?;
            }
        } else {
            let m: ImageManifest = serde_json::from_slice(data)
                .map_err(|e| Problem::not_json(Document::Manifest(digest.to_owned()), e))?;
            for blob in std::iter::once(&m.config).chain(&m.layers) {
                self.blob(blob).await?;
            }
        }
        Ok(platforms)
    }

    /// The referrers of every manifest taken, and theirs, until there are no more; each taken,
    /// with its descriptor for `index.json`.
    pub(super) async fn referrers(&mut self) -> Result<Vec<Descriptor>, Problem> {
        let mut found = Vec::new();
        loop {
            let pending: Vec<String> = self.manifests.difference(&self.asked).cloned().collect();
            if pending.is_empty() {
                return Ok(found);
            }
            for subject in pending {
                self.asked.insert(subject.clone());
                for (digest, media) in self.registry.referrers(self.repository, &subject).await? {
                    if self.manifests.contains(&digest) {
                        continue;
                    }
                    let (data, digest) = self.registry.manifest(self.repository, &digest).await?;
                    // A manifest that is no JSON is refused by `take` just below.
                    let artifact_type = serde_json::from_slice::<serde_json::Value>(&data)
                        .ok()
                        .and_then(|v| v.get("artifactType")?.as_str().map(str::to_owned));
                    Box::pin(self.take(&data, &digest, 0)).await?;
                    let mut d =
                        Descriptor::new(&media, Problem::digest(&digest)?, data.len() as u64);
                    d.artifact_type = artifact_type;
                    found.push(d);
                }
            }
        }
    }
}

/// A layout being filled beside its place; removed unless swapped in.
pub(super) struct Staging {
    pub(super) path: PathBuf,
}

impl Staging {
    pub(super) fn beside(dir: &Path) -> Result<Staging, Problem> {
        let path = sibling(dir, "fetch-new");
        if path.exists() {
            // An earlier fetch's, interrupted.
            std::fs::remove_dir_all(&path).map_err(|e| Problem::file(&path, e))?;
        }
        std::fs::create_dir_all(&path).map_err(|e| Problem::file(&path, e))?;
        Ok(Staging { path })
    }

    /// Renames the complete layout into `dir`, replacing what was there: both lie in the
    /// run's new fetched folder, which only the run sees until it is put in place whole.
    pub(super) fn swap_in(self, dir: &Path) -> Result<(), Problem> {
        if std::fs::symlink_metadata(dir).is_ok() {
            std::fs::remove_dir_all(dir).map_err(|e| Problem::file(dir, e))?;
        }
        std::fs::rename(&self.path, dir).map_err(|e| Problem::file(dir, e))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Renamed away when swapped in; otherwise nothing partial stays behind.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `.<name>.<suffix>` beside `dir` (hidden, and no layout `pack` would take).
fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.with_file_name(format!(".{name}.{suffix}"))
}

/// Writes `oci-layout` and `index.json` (this fetch's tags: the list says what the layout
/// holds) into the staged layout `dir`, which holds only what they reference.
pub(super) fn write_layout(dir: &Path, entries: Vec<Descriptor>) -> Result<(), Problem> {
    let io = |p: &Path, e: std::io::Error| Problem::file(p, e);
    let marker = dir.join(OCI_LAYOUT_FILE);
    std::fs::write(
        &marker,
        gojson::to_vec(&OciLayout {
            image_layout_version: LAYOUT_VERSION.to_owned(),
        })?,
    )
    .map_err(|e| io(&marker, e))?;
    let mut manifests = entries;
    manifests.sort_by(|a, b| {
        let tag = |d: &Descriptor| d.annotations.get(REF_NAME).cloned().unwrap_or_default();
        (tag(a), a.digest.as_str()).cmp(&(tag(b), b.digest.as_str()))
    });
    manifests.dedup_by(|a, b| a.digest == b.digest && a.annotations == b.annotations);
    let index = ImageIndex {
        schema_version: 2,
        media_type: Some(media_type::OCI_INDEX.to_owned()),
        artifact_type: None,
        manifests,
        subject: None,
        annotations: Annotations::new(),
    };
    let index_path = dir.join(INDEX_FILE);
    std::fs::write(&index_path, gojson::to_vec(&index)?).map_err(|e| io(&index_path, e))
}
