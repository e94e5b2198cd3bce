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
//! layout already holds hard-linked in), checked against the content file's `verify:` policy
//! when `--config` gives one (`super::verify`), and renamed into place once complete and
//! verified: a fetch that fails, is refused or is interrupted leaves the layout that was there
//! before, never a part of one.
//!
//! `--platform` and signatures: upstream signs the index it serves, and the index of some of
//! its platforms is a new one, with a digest nobody signed. So the index upstream serves is
//! kept beside it (its bytes, not its other platforms), with its signatures (its
//! `sha256-<hex>.sig` tag and its referrers), and the new index's entry in `index.json` names it
//! ([`UPSTREAM_DIGEST`]). The policy checks the tag by upstream's index (`chartreg_trust`): the
//! signatures over it vouch for the platforms kept, which are its own manifests, as it lists
//! them; pack checks the same, and records upstream's index for `chartreg verify`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chartreg_core::content::Evidence;
use chartreg_core::oci::gojson;
use chartreg_core::oci::layout::{
    Annotations, Descriptor, INDEX_FILE, ImageIndex, ImageManifest, LAYOUT_VERSION,
    OCI_LAYOUT_FILE, OciLayout, Platform, REF_NAME, UPSTREAM_DIGEST,
};
use chartreg_core::oci::{Digest, media_type};

use super::Problem;
use super::oci::Registry;
use super::transport::existing_sha256;
use super::verify::Verifier;

/// What was taken for one tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    pub digest: String,
    pub platforms: Vec<String>,
    pub referrers: Vec<String>,
    /// With `--platform`, when the index was cut down: the index upstream serves.
    pub upstream: Option<String>,
    /// Who signed it, as the policy verified it.
    pub verified: Vec<Evidence>,
}

/// What to take of one repository.
pub struct Asked<'a> {
    pub tags: &'a [String],
    /// `--platform` (empty: every platform).
    pub platforms: &'a [String],
    pub with_referrers: bool,
    /// With `--locked`: what the lock pins for each tag. A tag resolving to another digest, or
    /// with other referrers, is refused before the layout takes its place, so that what an
    /// earlier fetch wrote stays as it was.
    pub pinned: &'a BTreeMap<String, Pinned>,
    /// The policy to check the layout with before it takes its place (`fetch --config`).
    pub verify: Option<Checking<'a>>,
}

/// What the lock pins for a tag: its digest and its referrers' (signatures, SBOMs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    pub digest: String,
    pub referrers: Vec<String>,
}

/// How a repository's layout is checked.
pub struct Checking<'a> {
    pub verifier: &'a Verifier,
    /// The repository as pack serves it: the name the policy's patterns match.
    pub served: String,
    /// With `--locked`: who the lock records signed each tag.
    pub locked: Option<BTreeMap<String, Vec<Evidence>>>,
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

/// Copies `asked.tags` of `repository` into the layout `dir`; returns what each tag took, or
/// the problem of each tag that failed (`a,b` for the repository's tags together).
pub async fn copy_repository(
    registry: &Registry,
    repository: &str,
    dir: &Path,
    asked: &Asked<'_>,
) -> Result<BTreeMap<String, Copied>, Vec<(String, Problem)>> {
    let all = || asked.tags.join(",");
    let staging = Staging::beside(dir).map_err(|p| vec![(all(), p)])?;
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
    for tag in asked.tags {
        let at = |p: Problem| vec![(tag.clone(), p)];
        let taken = take_tag(&mut filling, tag, asked).await.map_err(at)?;
        entries.extend(taken.entries);
        copied.insert(tag.clone(), taken.copied);
    }
    write_layout(&staging.path, entries).map_err(|p| vec![(all(), p)])?;
    if let Some(checking) = &asked.verify {
        let signed = checking
            .verifier
            .layout(&checking.served, &staging.path, checking.locked.as_ref())
            .map_err(|p| vec![(all(), p)])??;
        for (tag, signers) in signed {
            if let Some(c) = copied.get_mut(&tag) {
                c.verified = signers;
            }
        }
    }
    // Locked, the signatures and SBOMs must be the lock's too.
    let changed: Vec<(String, Problem)> = copied
        .iter()
        .filter_map(|(tag, c)| {
            let locked = asked.pinned.get(tag)?;
            (locked.referrers != c.referrers).then(|| {
                (
                    tag.clone(),
                    Problem::ReferrersChanged {
                        now: c.referrers.clone(),
                        locked: locked.referrers.clone(),
                    },
                )
            })
        })
        .collect();
    if !changed.is_empty() {
        return Err(changed);
    }
    staging.swap_in(dir).map_err(|p| vec![(all(), p)])?;
    Ok(copied)
}

/// What one tag took: its entries in `index.json`, and what the lock records.
struct TakenTag {
    entries: Vec<Descriptor>,
    copied: Copied,
}

/// Takes `tag` (and its referrers, if asked) into the layout being filled.
async fn take_tag(
    filling: &mut Filling<'_>,
    tag: &str,
    asked: &Asked<'_>,
) -> Result<TakenTag, Problem> {
    let (registry, repository) = (filling.registry, filling.repository);
    let (mut data, mut digest) = match registry.manifest(repository, tag).await {
        // Which tags there are, to say which was meant (none: no such repository).
        Err(Problem::NotFound) => {
            let tags = registry.tags(repository).await.unwrap_or_default();
            return Err(if tags.is_empty() {
                Problem::NotFound
            } else {
                Problem::NoSuchTag {
                    asked: tag.to_owned(),
                    nearest: super::versions::nearest(tag, tags.iter().map(String::as_str)),
                }
            });
        }
        other => other?,
    };
    let mut kind = media_type::of_manifest(&data);
    let mut upstream = None;
    // Only some platforms: a new index of those.
    if !asked.platforms.is_empty()
        && media_type::manifest_kind(&kind) == Some(media_type::ManifestKind::Index)
    {
        let mut index: ImageIndex = serde_json::from_slice(&data)
            .map_err(|e| Problem::Invalid(format!("index {digest}: {e}")))?;
        let before = index.manifests.len();
        index
            .manifests
            .retain(|d| wanted(d.platform.as_ref(), asked.platforms));
        if index.manifests.is_empty() {
            return Err(Problem::NoSuchPlatform(asked.platforms.join(", ")));
        }
        if index.manifests.len() != before {
            let cut = gojson::to_vec(&index)?;
            let cut_digest = Digest::sha256_of(&cut).to_string();
            upstream = Some((
                std::mem::replace(&mut data, cut),
                std::mem::replace(&mut digest, cut_digest),
            ));
            kind = index
                .media_type
                .clone()
                .unwrap_or_else(|| media_type::OCI_INDEX.to_owned());
        }
    }
    if let Some(locked) = asked.pinned.get(tag)
        && locked.digest != digest
    {
        return Err(Problem::Repushed {
            locked: locked.digest.clone(),
            now: digest,
        });
    }
    let platforms = filling.take(&data, &digest, 0).await?;
    let descriptor_of = |kind: &str, digest: &str, size: usize| -> Result<Descriptor, Problem> {
        Ok(Descriptor::new(
            kind,
            digest
                .parse()
                .map_err(|e| Problem::Invalid(format!("{digest}: {e}")))?,
            size as u64,
        ))
    };
    let mut descriptor = descriptor_of(&kind, &digest, data.len())?;
    descriptor
        .annotations
        .insert(REF_NAME.to_owned(), tag.to_owned());
    // The index upstream serves and signs: its bytes (and, below, its signatures) kept.
    let upstream = match upstream {
        Some((up_data, up_digest)) => {
            filling.store(&up_data, &up_digest)?;
            descriptor
                .annotations
                .insert(UPSTREAM_DIGEST.to_owned(), up_digest.clone());
            Some(up_digest)
        }
        None => None,
    };
    let mut entries = vec![descriptor];
    let mut referrers = Vec::new();
    if asked.with_referrers {
        // cosign's tag schema (for the digest upstream signed), then the referrers API for
        // everything taken so far.
        let signed = upstream.as_deref().unwrap_or(digest.as_str());
        let hex = signed.trim_start_matches("sha256:");
        for suffix in ["sig", "att", "sbom"] {
            let schema_tag = format!("sha256-{hex}.{suffix}");
            if let Some((sdata, sdigest)) =
                registry.manifest_if_any(repository, &schema_tag).await?
            {
                let skind = media_type::of_manifest(&sdata);
                Box::pin(filling.take(&sdata, &sdigest, 0)).await?;
                let mut d = descriptor_of(&skind, &sdigest, sdata.len())?;
                d.annotations.insert(REF_NAME.to_owned(), schema_tag);
                referrers.push(sdigest);
                entries.push(d);
            }
        }
        for d in filling.referrers().await? {
            referrers.push(d.digest.to_string());
            entries.push(d);
        }
    }
    referrers.sort();
    Ok(TakenTag {
        entries,
        copied: Copied {
            digest,
            platforms,
            referrers,
            upstream,
            verified: Vec::new(),
        },
    })
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
