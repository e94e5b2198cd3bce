//! Images into OCI image layouts, one layout per repository (`<images-out>/<host>/<path>`),
//! which `pack --layout` (or the content file's `fetch.lock`) then serves.
//!
//! For each tag: the manifest or index the tag names, byte for byte (its digest is upstream's);
//! an index's manifests, every platform or those `--platform` asks for (then a new index of
//! those is written and tagged, and its digest is no longer upstream's); each manifest's config
//! and layers; and, unless told not to, the referrers of everything taken (the OCI referrers
//! API, and cosign's `sha256-<hex>.sig/.att/.sbom` tags), and theirs. Blobs already in the
//! layout with the right digest are not downloaded again.
//!
//! A repository's layout is filled in a folder beside it (`.<name>.fetch-new`, blobs the old
//! layout already holds hard-linked in) and renamed into place once complete: a fetch that
//! fails, or is interrupted, leaves the layout that was there before, never a part of one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chartreg_core::oci::gojson;
use chartreg_core::oci::layout::{
    Annotations, Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION,
    OCI_LAYOUT_FILE, OciLayout, Platform, REF_NAME,
};
use chartreg_core::oci::{Digest, media_type};

use super::Problem;
use super::oci::Registry;
use super::transport::existing_sha256;

/// What was taken for one tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    pub digest: String,
    pub platforms: Vec<String>,
    pub referrers: Vec<String>,
}

/// Whether `platform` is one `wanted` asks for (`os/arch` or `os/arch/variant`).
fn wanted(platform: Option<&Platform>, wanted: &[String]) -> bool {
    let Some(p) = platform else {
        return false;
    };
    wanted.iter().any(|w| {
        let mut parts = w.split('/');
        let (os, arch, variant) = (parts.next(), parts.next(), parts.next());
        os == Some(p.os.as_str())
            && arch == Some(p.architecture.as_str())
            && variant.is_none_or(|v| p.variant.as_deref() == Some(v))
    })
}

/// One repository's layout being filled.
struct Filling<'a> {
    registry: &'a Registry,
    repository: &'a str,
    /// The staging folder.
    dir: PathBuf,
    /// The layout it replaces (blobs there are taken, not downloaded again).
    previous: PathBuf,
    /// Manifests taken, by digest.
    manifests: BTreeSet<String>,
    /// Manifests whose referrers were asked for.
    asked: BTreeSet<String>,
    /// Configs and layers taken, by digest.
    blobs: BTreeSet<String>,
}

impl Filling<'_> {
    fn blob_path(&self, digest: &str) -> PathBuf {
        self.dir
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    }

    /// A blob into the layout: linked from the previous layout when it holds it with its
    /// digest, else downloaded.
    async fn blob(&mut self, digest: &str) -> Result<(), Problem> {
        if !self.blobs.insert(digest.to_owned()) {
            return Ok(());
        }
        let path = self.blob_path(digest);
        let hex = digest.trim_start_matches("sha256:");
        let old = self.previous.join("blobs/sha256").join(hex);
        if existing_sha256(&old).map(hex::encode).as_deref() == Some(hex) {
            let io = |e: std::io::Error| Problem::Io(format!("{}: {e}", path.display()));
            std::fs::create_dir_all(path.parent().unwrap_or(&self.dir)).map_err(io)?;
            if std::fs::hard_link(&old, &path).is_err() {
                std::fs::copy(&old, &path).map_err(io)?;
            }
            return Ok(());
        }
        self.registry
            .blob(self.repository, digest, &path)
            .await
            .map(|_| ())
    }

    /// Writes manifest bytes under their digest (checked).
    fn store(&mut self, data: &[u8], digest: &str) -> Result<(), Problem> {
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
            .map_err(|e| Problem::Io(format!("{}: {e}", path.display())))?;
        self.manifests.insert(digest.to_owned());
        Ok(())
    }

    /// Takes the manifest `data` (digest `digest`) and everything it references; returns the
    /// platforms of an index's manifests.
    async fn take(
        &mut self,
        data: &[u8],
        digest: &str,
        depth: usize,
    ) -> Result<Vec<String>, Problem> {
        if depth > 8 {
            return Err(Problem::Invalid("indexes nest deeper than 8 levels".into()));
        }
        self.store(data, digest)?;
        let kind = media_type::of_manifest(data);
        let mut platforms = Vec::new();
        if media_type::manifest_kind(&kind) == Some(media_type::ManifestKind::Index) {
            let index: ImageIndex = serde_json::from_slice(data)
                .map_err(|e| Problem::Invalid(format!("index {digest}: {e}")))?;
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
                .map_err(|e| Problem::Invalid(format!("manifest {digest}: {e}")))?;
            for blob in std::iter::once(&m.config).chain(&m.layers) {
                self.blob(blob.digest.as_str()).await?;
            }
        }
        Ok(platforms)
    }

    /// The referrers of every manifest taken, and theirs, until there are no more; each taken,
    /// with its descriptor for `index.json`.
    async fn referrers(&mut self) -> Result<Vec<Descriptor>, Problem> {
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
                    let mut d = Descriptor::new(
                        &media,
                        digest
                            .parse()
                            .map_err(|e| Problem::Invalid(format!("{digest}: {e}")))?,
                        data.len() as u64,
                    );
                    d.artifact_type = artifact_type;
                    found.push(d);
                }
            }
        }
    }
}

/// Copies `tags` of `repository` into the layout `dir`; returns what each tag took.
///
/// `pinned` (with `--locked`) holds the digest each tag must resolve to: a tag resolving to
/// another is refused before the layout's `index.json` changes or a blob is removed, so that
/// what an earlier fetch wrote stays as it was.
pub async fn copy_repository(
    registry: &Registry,
    repository: &str,
    tags: &[String],
    dir: &Path,
    platforms: &[String],
    with_referrers: bool,
    pinned: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, Copied>, (String, Problem)> {
    let staging = Staging::beside(dir).map_err(|p| (tags.join(","), p))?;
    let mut filling = Filling {
        registry,
        repository,
        dir: staging.path.clone(),
        previous: dir.to_owned(),
        manifests: BTreeSet::new(),
        asked: BTreeSet::new(),
        blobs: BTreeSet::new(),
    };
    let mut entries: Vec<Descriptor> = Vec::new();
    let mut copied = BTreeMap::new();
    for tag in tags {
        let at = |p: Problem| (tag.clone(), p);
        let (mut data, mut digest) = match registry.manifest(repository, tag).await {
            // Which tags there are, to say which was meant (none: no such repository).
            Err(Problem::NotFound) => {
                let tags = registry.tags(repository).await.unwrap_or_default();
                return Err(at(if tags.is_empty() {
                    Problem::NotFound
                } else {
                    Problem::NoSuchTag {
                        asked: tag.clone(),
                        nearest: super::versions::nearest(tag, tags.iter().map(String::as_str)),
                    }
                }));
            }
            other => other.map_err(at)?,
        };
        let mut kind = media_type::of_manifest(&data);
        // Only some platforms: a new index of those.
        if !platforms.is_empty()
            && media_type::manifest_kind(&kind) == Some(media_type::ManifestKind::Index)
        {
            let mut index: ImageIndex = serde_json::from_slice(&data)
                .map_err(|e| at(Problem::Invalid(format!("index {digest}: {e}"))))?;
            let before = index.manifests.len();
            index
                .manifests
                .retain(|d| wanted(d.platform.as_ref(), platforms));
            if index.manifests.is_empty() {
                return Err(at(Problem::NoSuchPlatform(platforms.join(", "))));
            }
            if index.manifests.len() != before {
                data = gojson::to_vec(&index).map_err(|e| at(e.into()))?;
                digest = Digest::sha256_of(&data).to_string();
                kind = index
                    .media_type
                    .clone()
                    .unwrap_or_else(|| media_type::OCI_INDEX.to_owned());
            }
        }
        if let Some(locked) = pinned.get(tag)
            && *locked != digest
        {
            return Err(at(Problem::Repushed {
                locked: locked.clone(),
                now: digest,
            }));
        }
        let taken = filling.take(&data, &digest, 0).await.map_err(at)?;
        let mut descriptor = Descriptor::new(
            &kind,
            digest
                .parse()
                .map_err(|e| at(Problem::Invalid(format!("{digest}: {e}"))))?,
            data.len() as u64,
        );
        descriptor
            .annotations
            .insert(REF_NAME.to_owned(), tag.clone());
        entries.push(descriptor);
        let mut referrers = Vec::new();
        if with_referrers {
            // cosign's tag schema, then the referrers API for everything taken so far.
            let hex = digest.trim_start_matches("sha256:");
            for suffix in ["sig", "att", "sbom"] {
                let schema_tag = format!("sha256-{hex}.{suffix}");
                if let Some((sdata, sdigest)) = registry
                    .manifest_if_any(repository, &schema_tag)
                    .await
                    .map_err(at)?
                {
                    let skind = media_type::of_manifest(&sdata);
                    Box::pin(filling.take(&sdata, &sdigest, 0))
                        .await
                        .map_err(at)?;
                    let mut d = Descriptor::new(
                        &skind,
                        sdigest
                            .parse()
                            .map_err(|e| at(Problem::Invalid(format!("{sdigest}: {e}"))))?,
                        sdata.len() as u64,
                    );
                    d.annotations.insert(REF_NAME.to_owned(), schema_tag);
                    referrers.push(sdigest);
                    entries.push(d);
                }
            }
            for d in filling.referrers().await.map_err(at)? {
                referrers.push(d.digest.to_string());
                entries.push(d);
            }
        }
        referrers.sort();
        copied.insert(
            tag.clone(),
            Copied {
                digest,
                platforms: taken,
                referrers,
            },
        );
    }
    write_layout(&staging.path, entries).map_err(|p| (tags.join(","), p))?;
    staging.swap_in(dir).map_err(|p| (tags.join(","), p))?;
    Ok(copied)
}

/// A layout being filled beside its place; removed unless swapped in.
struct Staging {
    path: PathBuf,
}

impl Staging {
    fn beside(dir: &Path) -> Result<Staging, Problem> {
        let path = sibling(dir, "fetch-new");
        if path.exists() {
            // An earlier fetch's, interrupted.
            std::fs::remove_dir_all(&path)
                .map_err(|e| Problem::Io(format!("{}: {e}", path.display())))?;
        }
        std::fs::create_dir_all(&path)
            .map_err(|e| Problem::Io(format!("{}: {e}", path.display())))?;
        Ok(Staging { path })
    }

    /// Renames the complete layout into `dir`, replacing what was there.
    fn swap_in(self, dir: &Path) -> Result<(), Problem> {
        chartreg_core::tree::swap_in(&self.path, dir, &sibling(dir, "fetch-old"))
            .map_err(|e| Problem::Io(e.to_string()))
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
fn write_layout(dir: &Path, entries: Vec<Descriptor>) -> Result<(), Problem> {
    let io = |p: &Path, e: std::io::Error| Problem::Io(format!("{}: {e}", p.display()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_and_platforms() {
        assert_eq!(
            media_type::of_manifest(br#"{"manifests":[]}"#),
            media_type::OCI_INDEX
        );
        assert_eq!(
            media_type::of_manifest(br#"{"config":{}}"#),
            media_type::OCI_MANIFEST
        );
        assert_eq!(
            media_type::of_manifest(
                br#"{"mediaType":"application/vnd.docker.distribution.manifest.v2+json"}"#
            ),
            media_type::DOCKER_MANIFEST
        );
        let arm = Platform {
            architecture: "arm64".into(),
            os: "linux".into(),
            variant: Some("v8".into()),
        };
        assert!(wanted(Some(&arm), &["linux/arm64".into()]));
        assert!(wanted(Some(&arm), &["linux/arm64/v8".into()]));
        assert!(!wanted(
            Some(&arm),
            &["linux/arm64/v7".into(), "linux/amd64".into()]
        ));
        assert!(!wanted(None, &["linux/arm64".into()]));
    }
}
