//! Images into OCI image layouts, one layout per repository (`<images-out>/<host>/<path>`),
//! which `pack --layout` (or the content file's `fetch.lock`) then serves.
//!
//! For each tag: the manifest or index the tag names, byte for byte (its digest is upstream's);
//! an index's manifests, every platform or those `--platform` asks for (then a new index of
//! those is written and tagged, and its digest is no longer upstream's); each manifest's config
//! and layers; and, unless told not to, the referrers of everything taken (the OCI referrers
//! API, and cosign's `sha256-<hex>.sig/.att/.sbom` tags), and theirs. Blobs already in the
//! layout with the right digest are not downloaded again.

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
    dir: PathBuf,
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

    /// A blob into the layout, unless it is there already with its digest.
    async fn blob(&mut self, digest: &str) -> Result<(), Problem> {
        self.blobs.insert(digest.to_owned());
        let path = self.blob_path(digest);
        if existing_sha256(&path).map(hex::encode).as_deref()
            == Some(digest.trim_start_matches("sha256:"))
        {
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
                    let artifact_type = serde_json::from_slice::<serde_json::Value>(&data)
                        .ok()
                        .and_then(|v| v["artifactType"].as_str().map(str::to_owned));
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
    let mut filling = Filling {
        registry,
        repository,
        dir: dir.to_owned(),
        manifests: BTreeSet::new(),
        asked: BTreeSet::new(),
        blobs: BTreeSet::new(),
    };
    let mut entries: Vec<Descriptor> = Vec::new();
    let mut copied = BTreeMap::new();
    for tag in tags {
        let at = |p: Problem| (tag.clone(), p);
        let (mut data, mut digest) = registry.manifest(repository, tag).await.map_err(at)?;
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
                data = gojson::to_vec(&index);
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
    let kept: BTreeSet<&String> = filling.manifests.iter().chain(&filling.blobs).collect();
    write_layout(dir, entries, &kept).map_err(|p| (tags.join(","), p))?;
    Ok(copied)
}

/// Writes `oci-layout` and `index.json` (this fetch's tags: the list says what the layout
/// holds), then removes the blobs nothing in it references any more (an earlier fetch's).
fn write_layout(
    dir: &Path,
    entries: Vec<Descriptor>,
    kept: &BTreeSet<&String>,
) -> Result<(), Problem> {
    let io = |p: &Path, e: std::io::Error| Problem::Io(format!("{}: {e}", p.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let marker = dir.join(OCI_LAYOUT_FILE);
    std::fs::write(
        &marker,
        gojson::to_vec(&OciLayout {
            image_layout_version: LAYOUT_VERSION.to_owned(),
        }),
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
    let staged = dir.join(format!("{INDEX_FILE}.new"));
    std::fs::write(&staged, gojson::to_vec(&index)).map_err(|e| io(&staged, e))?;
    std::fs::rename(&staged, &index_path).map_err(|e| io(&index_path, e))?;
    let blobs = dir.join("blobs/sha256");
    let listed = std::fs::read_dir(&blobs).map_err(|e| io(&blobs, e))?;
    for entry in listed.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !kept.contains(&format!("sha256:{name}")) {
            std::fs::remove_file(entry.path()).map_err(|e| io(&entry.path(), e))?;
        }
    }
    Ok(())
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
