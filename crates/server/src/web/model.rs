//! What the pages show, worked out once from the registry: every repository with its kind
//! and its versions newest first (digest, pull size, kind, platforms), a chart's metadata from
//! its config (Chart.yaml as JSON: untrusted text, escaped where it is shown), what is
//! attached to each version (referrers by `subject`, and cosign's `sha256-<hex>.sig/.att/.sbom`
//! tags), the images a chart version needs, each held here or not, when the content lists
//! them ([`images`]), what verified each version's signature at build, when the content
//! records it ([`verified`]), and where a chart's package was downloaded from, when the
//! content records it (`origins.json`). Serialised as it is for `Accept: application/json`.

use serde::{Deserialize, Serialize};

use chartreg_core::content::{
    Document, Evidence, Kind, Manifest, Record, Registry, Repository, Unreadable, Way,
};
use chartreg_core::oci::media_type::{HELM_CHART, HELM_PROVENANCE};
use chartreg_core::oci::{Digest, Reference};

use crate::versions::newest_first;

/// Everything the registry holds, for people.
#[derive(Debug, Clone, Serialize)]
pub struct Overview {
    pub repositories: Vec<RepositoryView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RepositoryView {
    pub name: String,
    /// The upstream registry its images came from, and their path there, when the content
    /// keeps it: nodes pull them as `<registry>/<path>` through a mirror configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// What its newest version is (`chart`, `image`, ...).
    pub kind: Kind,
    pub versions: Vec<VersionView>,
}

/// Where a repository's images came from.
#[derive(Debug, Clone, Serialize)]
pub struct Upstream {
    /// `quay.io`, `127.0.0.1:5057`: what `?ns=` names.
    pub registry: String,
    pub path: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct VersionView {
    pub tag: String,
    pub digest: String,
    /// Bytes a pull downloads.
    pub size: u64,
    pub kind: Kind,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chart: Option<ChartView>,
    /// Signatures, attestations and SBOMs attached to it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attached: Vec<Attached>,
    /// The images a chart version needs, when the content lists them (an empty list: it
    /// needs none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<ImageView>>,
    /// What verified its signature at build, or the warning a failed one gave; `null`: not
    /// verified.
    pub verified: Option<Verified>,
}

/// A version's record of verification at build (`verification.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// Who signed it, each as verified (a key, or a keyless identity and issuer).
    pub by: Vec<Evidence>,
    /// Why its signature failed, when `mode: warn` let it through.
    pub warning: Option<String>,
}

/// What a version is, for its record of verification.
#[derive(Debug, Clone, Copy)]
pub enum Signed<'a> {
    /// A chart: by its version as `Chart.yaml` has it, and its package's digest.
    Chart {
        version: &'a str,
        package: &'a Digest,
    },
    /// Anything else: by its tag, and the digest the tag names.
    Tag { tag: &'a str, digest: &'a Digest },
}

/// What verified `signed` in `repository` at build, as the content records it; `None`: not
/// verified (no record, or one of other bytes than these, which says nothing of them).
pub fn verified(registry: &Registry, repository: &str, signed: Signed<'_>) -> Option<Verified> {
    if !registry.has_verification() {
        return None;
    }
    let (record, digest): (Option<&Record>, &Digest) = match signed {
        Signed::Chart { version, package } => {
            (registry.chart_verification(repository, version), package)
        }
        Signed::Tag { tag, digest } => (registry.image_verification(repository, tag), digest),
    };
    let record = record.filter(|r| r.digest == *digest)?;
    if record.verified.is_empty() && record.warning.is_none() {
        return None;
    }
    Some(Verified {
        by: record.verified.clone(),
        warning: record.warning.clone(),
    })
}

/// One image a chart version needs.
#[derive(Debug, Clone, Serialize)]
pub struct ImageView {
    /// The reference, normalised as containerd reads it.
    pub image: String,
    /// The repository chartreg serves it as.
    pub repository: String,
    /// Whether this registry answers a node's pull of it.
    pub held: bool,
    /// How the build found it: `render` (Helm rendered the chart), `annotation`, `values`
    /// (read statically).
    pub from: Vec<Way>,
}

/// The images the chart `version` in `repository` needs, as the registry lists them.
pub fn images(registry: &Registry, repository: &str, version: &str) -> Option<Vec<ImageView>> {
    let listed = registry.chart_images(repository, version)?;
    Some(
        listed
            .images
            .iter()
            .map(|i| ImageView {
                image: i.entry.image.clone(),
                repository: i.entry.repository.as_str().to_owned(),
                held: i.held,
                from: i.entry.from.clone(),
            })
            .collect(),
    )
}

/// The parts of a chart's metadata the pages show.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartView {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// Whether a provenance file (`.prov`) is attached.
    #[serde(default)]
    pub signed: bool,
    /// Where its package was downloaded from, when the content records it (`origins.json`:
    /// charts packed from a lock); never read from the chart's own metadata.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Maintainer {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Attached {
    pub digest: String,
    pub kind: Kind,
    /// The tag it has (cosign's tag schema), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

/// A chart version's stored parts: its metadata (as JSON) and its package and provenance.
pub struct ChartParts<'a> {
    pub metadata: serde_json::Value,
    pub package: &'a chartreg_core::content::Blob,
    pub provenance: Option<&'a chartreg_core::content::Blob>,
    /// `org.opencontainers.image.created`, as `helm push` (and pack) write it.
    pub created: Option<String>,
}

/// The stored parts of the chart `manifest` in `repository`, if it is a chart: an image
/// manifest with a chart layer whose config is JSON. Loading does not read configs (they are
/// served as stored): a chart whose config is not JSON has no parts to show, and is served the
/// same.
pub fn chart_parts<'a>(
    repository: &'a Repository,
    manifest: &Manifest,
) -> Result<Option<ChartParts<'a>>, Unreadable> {
    let Document::Image(m) = manifest.document()? else {
        return Ok(None);
    };
    Ok(parts_of(repository, &m))
}

fn parts_of<'a>(
    repository: &'a Repository,
    m: &chartreg_core::oci::layout::ImageManifest,
) -> Option<ChartParts<'a>> {
    // Every blob a stored manifest references is stored.
    let config = repository.blob(&m.config.digest).ok()?;
    let metadata: serde_json::Value = serde_json::from_slice(&config.data).ok()?;
    let layer = |media_type: &str| {
        m.layers
            .iter()
            .find(|l| l.media_type == media_type)
            .and_then(|l| repository.blob(&l.digest).ok())
    };
    Some(ChartParts {
        metadata,
        package: layer(HELM_CHART)?,
        provenance: layer(HELM_PROVENANCE),
        created: m
            .annotations
            .get("org.opencontainers.image.created")
            .cloned(),
    })
}

/// The cosign tag-schema subject of a tag: `sha256-<hex>.sig` -> `sha256:<hex>`.
fn tag_subject(tag: &str) -> Option<Digest> {
    let rest = tag.strip_prefix("sha256-")?;
    let (hex, suffix) = rest.split_once('.')?;
    matches!(suffix, "sig" | "att" | "sbom")
        .then(|| format!("sha256:{hex}").parse().ok())
        .flatten()
}

fn is_attachment(kind: Kind) -> bool {
    matches!(kind, Kind::Signature | Kind::Sbom | Kind::Attestation)
}

impl Overview {
    pub fn of(registry: &Registry) -> Result<Overview, Unreadable> {
        Ok(Overview {
            repositories: registry
                .repositories()
                .map(|r| repository_view(registry, r))
                .collect::<Result<_, _>>()?,
        })
    }
}

fn repository_view(
    registry: &Registry,
    repository: &Repository,
) -> Result<RepositoryView, Unreadable> {
    let manifest_of =
        |digest: &Digest| repository.manifest(&Reference::Digest(digest.clone())).ok();
    // Tags that attach to another version (cosign's schema) are shown with it.
    let mut tagged_attachments: Vec<(Digest, Attached)> = Vec::new();
    let mut versions = Vec::new();
    for tag in repository.tags() {
        // Each tag listed names a stored manifest.
        let Some(manifest) = repository.tagged(tag) else {
            continue;
        };
        let digest = &manifest.digest;
        let artifact = repository.artifact(manifest, Some(tag))?;
        if let Some(subject) = tag_subject(tag)
            && is_attachment(artifact.kind)
            && manifest_of(&subject).is_some()
        {
            tagged_attachments.push((
                subject,
                Attached {
                    digest: digest.to_string(),
                    kind: artifact.kind,
                    tag: Some(tag.to_owned()),
                    artifact_type: artifact.artifact_type,
                },
            ));
            continue;
        }
        let parts = match artifact.kind {
            Kind::Chart => chart_parts(repository, manifest)?,
            _ => None,
        };
        let package = parts.as_ref().map(|parts| &parts.package.digest);
        let chart = parts.map(|parts| {
            // Chart.yaml's fields the pages show, each optional: metadata without them (or
            // with other types) shows empty fields, and the chart is served the same.
            let mut view: ChartView = serde_json::from_value(parts.metadata).unwrap_or_default();
            view.signed = parts.provenance.is_some();
            view.origin = registry
                .chart_origin(repository.name(), &view.version, &parts.package.digest)
                .map(ToString::to_string);
            view
        });
        let mut attached = Vec::new();
        for d in repository.referrers(digest, None) {
            // Every referrer recorded is a stored manifest.
            let Some(referrer) = manifest_of(&d.digest) else {
                continue;
            };
            let a = repository.artifact(referrer, None)?;
            attached.push(Attached {
                digest: d.digest.to_string(),
                kind: a.kind,
                tag: None,
                artifact_type: a.artifact_type,
            });
        }
        let images = chart
            .as_ref()
            .and_then(|c| images(registry, repository.name(), &c.version));
        let signed = match (&chart, package) {
            (Some(chart), Some(package)) => Some(Signed::Chart {
                version: &chart.version,
                package,
            }),
            // A chart whose metadata cannot be read has no version to look up.
            _ if artifact.kind == Kind::Chart => None,
            _ => Some(Signed::Tag { tag, digest }),
        };
        let verified = signed.and_then(|signed| verified(registry, repository.name(), signed));
        versions.push(VersionView {
            tag: tag.to_owned(),
            digest: digest.to_string(),
            size: repository.pull_size(manifest)?,
            kind: artifact.kind,
            platforms: artifact.platforms,
            chart,
            attached,
            images,
            verified,
        });
    }
    for (subject, attached) in tagged_attachments {
        let subject = subject.to_string();
        if let Some(version) = versions.iter_mut().find(|v| v.digest == subject) {
            version.attached.push(attached);
        }
    }
    versions.sort_by(|a, b| newest_first(&a.tag, &b.tag));
    Ok(RepositoryView {
        name: repository.name().to_owned(),
        upstream: repository.namespace().map(|(registry, path)| Upstream {
            registry: registry.to_string(),
            path: path.to_owned(),
        }),
        kind: versions.first().map_or(Kind::Other, |v| v.kind),
        versions,
    })
}
