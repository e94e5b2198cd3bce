//! Images into OCI image layouts, one layout per repository (`<images-out>/<host>/<path>`),
//! which `pack --layout` (or the content file's `fetch.lock`) then serves.
//!
//! For each tag, digest or tag pinned to a digest (`crate::pin`): the manifest or index it
//! names, byte for byte (its digest is upstream's; a digest asked for is checked against the
//! bytes, and is what a pinned tag takes), tagged as it is served (a digest alone as
//! `digest-sha256-<hex>`); an index's manifests, every platform or those `--platform` asks for (then
//! a new index of those is written and tagged, and its digest is no longer upstream's: so never
//! for a digest asked for, which is taken whole); each manifest's config
//! and layers; and, unless told not to, the referrers of everything taken (the OCI referrers
//! API, and cosign's `sha256-<hex>.sig/.att/.sbom` tags), and theirs. Blobs already in the
//! layout with the right digest are not downloaded again.
//!
//! A repository's layout is filled in a folder beside it (`fetch::staging`: blobs the old
//! layout already holds hard-linked in), checked against the content file's `verify:` policy
//! when `--config` gives one (`fetch::verify`) and, with `--locked`, against the lock's digests
//! and referrers, and renamed into place once complete and checked: a fetch that fails, is
//! refused or is interrupted leaves the layout that was there before, never a part of one.
//!
//! `--platform` and signatures: upstream signs the index it serves, and the index of some of
//! its platforms is a new one, with a digest nobody signed. So the index upstream serves is
//! kept beside it (its bytes, not its other platforms), with its signatures (its
//! `sha256-<hex>.sig` tag and its referrers), and the new index's entry in `index.json` names it
//! ([`UPSTREAM_DIGEST`]). The policy checks the tag by upstream's index (`chartreg_trust`): the
//! signatures over it vouch for the platforms kept, which are its own manifests, as it lists
//! them; pack checks the same, and records upstream's index for `chartreg verify`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use chartreg_core::content::Evidence;
use chartreg_core::oci::gojson;
use chartreg_core::oci::layout::{Descriptor, ImageIndex, Platform, REF_NAME, UPSTREAM_DIGEST};
use chartreg_core::oci::{Digest, media_type};

use crate::fetch::oci::Registry;
use crate::fetch::problem::Document;
use crate::fetch::problem::Problem;
use crate::fetch::staging::{Filling, Staging, write_layout};
use crate::fetch::verify::Verifier;
use crate::pin::Pin;

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
    /// Tags, digests, or tags pinned to digests (`crate::pin`).
    pub pins: &'a [Pin],
    /// `--platform` (empty: every platform).
    pub platforms: &'a [String],
    pub with_referrers: bool,
    /// With `--locked`: what the lock pins for each entry. A tag resolving to another digest,
    /// or with other referrers, is refused before the layout takes its place, so that what an
    /// earlier fetch wrote stays as it was.
    pub pinned: &'a BTreeMap<Pin, Pinned>,
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
    /// With `--locked`: who the lock records signed each tag (as served: see `crate::pin`).
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

/// Copies `asked.pins` of `repository` into the layout `dir`; returns what each took, or the
/// problem of each that failed (`None`: of the repository's layout, for all of them).
pub async fn copy_repository(
    registry: &Registry,
    repository: &str,
    dir: &Path,
    asked: &Asked<'_>,
) -> Result<BTreeMap<Pin, Copied>, Vec<(Option<Pin>, Problem)>> {
    let all = |p: Problem| vec![(None, p)];
    let staging = Staging::beside(dir).map_err(all)?;
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
    for pin in asked.pins {
        let at = |p: Problem| vec![(Some(pin.clone()), p)];
        let taken = take_pin(&mut filling, pin, asked).await.map_err(at)?;
        entries.extend(taken.entries);
        copied.insert(pin.clone(), taken.copied);
    }
    write_layout(&staging.path, entries).map_err(all)?;
    if let Some(checking) = &asked.verify {
        let signed = checking
            .verifier
            .layout(&checking.served, &staging.path, checking.locked.as_ref())
            .map_err(all)?
            .map_err(|failed| {
                failed
                    .into_iter()
                    .map(|(tag, p)| {
                        (
                            asked
                                .pins
                                .iter()
                                .find(|pin| pin.served().as_str() == tag)
                                .cloned(),
                            p,
                        )
                    })
                    .collect::<Vec<_>>()
            })?;
        for (tag, signers) in signed {
            if let Some(pin) = asked.pins.iter().find(|pin| pin.served().as_str() == tag)
                && let Some(c) = copied.get_mut(pin)
            {
                c.verified = signers;
            }
        }
    }
    // Locked, the signatures and SBOMs must be the lock's too.
    let changed: Vec<(Option<Pin>, Problem)> = copied
        .iter()
        .filter_map(|(pin, c)| {
            let locked = asked.pinned.get(pin)?;
            (locked.referrers != c.referrers).then(|| {
                (
                    Some(pin.clone()),
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
    staging.swap_in(dir).map_err(all)?;
    Ok(copied)
}

/// What one pin took: its entries in `index.json`, and what the lock records.
struct Taken {
    entries: Vec<Descriptor>,
    copied: Copied,
}

/// Takes what `pin` names (and its referrers, if asked) into the layout being filled, tagged
/// as it is served (`Pin::served`). A digest is taken as it is, every platform (a new index
/// of some would be another digest, which nobody pinned), and checked against its bytes.
async fn take_pin(
    filling: &mut Filling<'_>,
    pin: &Pin,
    asked: &Asked<'_>,
) -> Result<Taken, Problem> {
    let (registry, repository) = (filling.registry, filling.repository);
    let tag = pin.served().as_str();
    let (mut data, mut digest) = match registry.manifest(repository, pin.reference()).await {
        // Which tags there are, to say which was meant (none: no such repository).
        Err(Problem::NotFound) if pin.digest().is_none() => {
            let tags = registry.tags(repository).await.unwrap_or_default();
            return Err(if tags.is_empty() {
                Problem::NotFound
            } else {
                Problem::NoSuchTag {
                    asked: tag.to_owned(),
                    nearest: crate::fetch::versions::nearest(tag, tags.iter().map(String::as_str)),
                }
            });
        }
        other => other?,
    };
    let mut kind = media_type::of_manifest(&data);
    let mut upstream = None;
    // Only some platforms: a new index of those (not of a pinned digest).
    if !asked.platforms.is_empty()
        && pin.digest().is_none()
        && media_type::manifest_kind(&kind) == Some(media_type::ManifestKind::Index)
    {
        let mut index: ImageIndex = serde_json::from_slice(&data)
            .map_err(|e| Problem::not_json(Document::Index(digest.clone()), e))?;
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
    if let Some(locked) = asked.pinned.get(pin)
        && locked.digest != digest
    {
        return Err(Problem::Repushed {
            locked: locked.digest.clone(),
            now: digest,
        });
    }
    let platforms = filling.take(&data, &digest, 0).await?;
    let descriptor_of = |kind: &str, digest: &str, size: usize| -> Result<Descriptor, Problem> {
        Ok(Descriptor::new(kind, Problem::digest(digest)?, size as u64))
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
    Ok(Taken {
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
