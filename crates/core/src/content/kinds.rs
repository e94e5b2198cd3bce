//! What an artifact is, for people (`chartreg ls`, the pages): a chart, an image, an image
//! index, a signature, an SBOM, an attestation, or other; an image's platforms; the subject a
//! referrer refers to. Worked out from the manifest, its config and the media types the tools
//! that make them use (Helm, cosign, Notation, Syft, SPDX, CycloneDX), and for cosign's tag
//! schema from the tag's suffix.

use super::{Document, Manifest, Repository, Unreadable};
use crate::oci::Digest;
use crate::oci::layout::{ImageManifest, Platform};
use crate::oci::media_type::{self, ManifestKind, manifest_kind};

/// The kinds of artifact told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Chart,
    Image,
    ImageIndex,
    Signature,
    Sbom,
    Attestation,
    Other,
}

impl Kind {
    /// The name it is serialised as (`image-index`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Chart => "chart",
            Kind::Image => "image",
            Kind::ImageIndex => "image-index",
            Kind::Signature => "signature",
            Kind::Sbom => "sbom",
            Kind::Attestation => "attestation",
            Kind::Other => "other",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::Chart => "chart",
            Kind::Image => "image",
            Kind::ImageIndex => "image index",
            Kind::Signature => "signature",
            Kind::Sbom => "SBOM",
            Kind::Attestation => "attestation",
            Kind::Other => "other",
        }
    }
}

/// What a manifest is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub kind: Kind,
    /// `os/architecture[/variant]` of an image, or of each image of an index.
    pub platforms: Vec<String>,
    pub subject: Option<Digest>,
    pub artifact_type: Option<String>,
}

const SIGNATURE_TYPES: [&str; 3] = [
    "application/vnd.dev.cosign.artifact.sig.v1+json",
    "application/vnd.dev.cosign.simplesigning.v1+json",
    "application/vnd.cncf.notary.signature",
];
const SBOM_TYPES: [&str; 6] = [
    "application/vnd.dev.cosign.artifact.sbom.v1+json",
    media_type::SPDX_JSON,
    "text/spdx+json",
    "text/spdx",
    media_type::CYCLONEDX_JSON,
    "application/vnd.syft+json",
];
const ATTESTATION_TYPES: [&str; 2] = [
    "application/vnd.dsse.envelope.v1+json",
    "application/vnd.in-toto+json",
];
const SIGSTORE_BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const IMAGE_CONFIGS: [&str; 2] = [
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.docker.container.image.v1+json",
];

/// The kind that media types (an artifact type, a config's and layers') say, if any.
fn by_types<'a>(types: impl IntoIterator<Item = &'a str>, predicate: Option<&str>) -> Option<Kind> {
    let mut kind = None;
    for t in types {
        let found = if SIGNATURE_TYPES.contains(&t) {
            Kind::Signature
        } else if SBOM_TYPES.contains(&t) {
            Kind::Sbom
        } else if ATTESTATION_TYPES.contains(&t) {
            Kind::Attestation
        } else if t == SIGSTORE_BUNDLE {
            match predicate {
                Some("https://sigstore.dev/cosign/sign/v1") => Kind::Signature,
                _ => Kind::Attestation,
            }
        } else {
            continue;
        };
        kind = Some(kind.map_or(found, |k: Kind| k.min(found)));
    }
    kind
}

/// The kind cosign's tag schema gives a tag: `sha256-<hex>.sig`, `.att`, `.sbom`.
fn by_tag(tag: Option<&str>) -> Option<Kind> {
    let tag = tag?.strip_prefix("sha256-")?;
    let (hex, suffix) = tag.split_once('.')?;
    if hex.len() != 64 {
        return None;
    }
    match suffix {
        "sig" => Some(Kind::Signature),
        "att" => Some(Kind::Attestation),
        "sbom" => Some(Kind::Sbom),
        _ => None,
    }
}

impl Manifest {
    /// Whether this is a Helm chart's manifest: an image manifest whose config is Helm's (as
    /// [`Repository::artifact`] tells a [`Kind::Chart`]).
    pub fn is_chart(&self) -> bool {
        manifest_kind(&self.media_type) == Some(ManifestKind::Image)
            && serde_json::from_slice::<ImageManifest>(&self.data)
                .is_ok_and(|m| m.config.media_type == media_type::HELM_CONFIG)
    }
}

impl Repository {
    /// What the manifest `manifest` (tagged `tag`, if it is) is.
    pub fn artifact(&self, manifest: &Manifest, tag: Option<&str>) -> Result<Artifact, Unreadable> {
        let mut artifact = Artifact {
            kind: Kind::Other,
            platforms: Vec::new(),
            subject: None,
            artifact_type: None,
        };
        match manifest.document()? {
            Document::Index(index) => {
                artifact.subject = index.subject.map(|s| s.digest);
                artifact.platforms = index
                    .manifests
                    .iter()
                    .filter_map(|d| d.platform.as_ref())
                    .filter(|p| p.os != "unknown")
                    .map(Platform::to_string)
                    .collect();
                let predicate = index.annotations.get("dev.sigstore.bundle.predicateType");
                artifact.kind = by_types(
                    index.artifact_type.as_deref(),
                    predicate.map(String::as_str),
                )
                .or_else(|| by_tag(tag))
                .unwrap_or(Kind::ImageIndex);
                artifact.artifact_type = index.artifact_type;
            }
            Document::Image(m) => {
                artifact.subject = m.subject.as_ref().map(|s| s.digest.clone());
                let predicate = m.annotations.get("dev.sigstore.bundle.predicateType");
                let types = m
                    .artifact_type
                    .iter()
                    .map(String::as_str)
                    .chain([m.config.media_type.as_str()])
                    .chain(m.layers.iter().map(|l| l.media_type.as_str()));
                artifact.kind = if m.config.media_type == media_type::HELM_CONFIG {
                    Kind::Chart
                } else if let Some(kind) = by_types(types.clone(), predicate.map(String::as_str)) {
                    kind
                } else if let Some(kind) = by_tag(tag) {
                    kind
                } else if m.artifact_type.is_none()
                    && IMAGE_CONFIGS.contains(&m.config.media_type.as_str())
                {
                    artifact.platforms = self.platform_of(&m).into_iter().collect();
                    Kind::Image
                } else {
                    Kind::Other
                };
                artifact.artifact_type = m.artifact_type.clone();
            }
        }
        Ok(artifact)
    }

    /// An image's platform, from its config. Loading does not read configs (they are served as
    /// stored), so one that is missing its platform fields, or is not JSON, shows no platform:
    /// what is served is the same either way.
    fn platform_of(&self, m: &ImageManifest) -> Option<String> {
        let config = self.blob(&m.config.digest).ok()?;
        let platform: Platform = serde_json::from_slice(&config.data).ok()?;
        (!platform.os.is_empty()).then(|| platform.to_string())
    }

    /// Every manifest that refers to another (`subject`), with its subject, in digest order.
    pub fn referring(&self) -> Vec<(&Digest, &Manifest)> {
        let mut found: Vec<(&Digest, &Manifest)> = self
            .referrers
            .iter()
            .flat_map(|(subject, descriptors)| {
                descriptors.iter().filter_map(move |d| {
                    let hash = d.digest.sha256()?;
                    Some((subject, self.manifests.get(&hash)?))
                })
            })
            .collect();
        found.sort_by(|a, b| a.1.digest.cmp(&b.1.digest));
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_serde_writes() {
        for kind in [
            Kind::Chart,
            Kind::Image,
            Kind::ImageIndex,
            Kind::Signature,
            Kind::Sbom,
            Kind::Attestation,
            Kind::Other,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }

    #[test]
    fn media_types_and_tags_tell_kinds() {
        assert_eq!(by_types(["application/spdx+json"], None), Some(Kind::Sbom));
        assert_eq!(
            by_types(["application/vnd.dev.cosign.simplesigning.v1+json"], None),
            Some(Kind::Signature)
        );
        assert_eq!(
            by_types(
                [SIGSTORE_BUNDLE],
                Some("https://sigstore.dev/cosign/sign/v1")
            ),
            Some(Kind::Signature)
        );
        assert_eq!(
            by_types([SIGSTORE_BUNDLE], Some("https://slsa.dev/provenance/v1")),
            Some(Kind::Attestation)
        );
        assert_eq!(by_types(["application/octet-stream"], None), None);
        let hex = "0".repeat(64);
        assert_eq!(
            by_tag(Some(&format!("sha256-{hex}.sig"))),
            Some(Kind::Signature)
        );
        assert_eq!(
            by_tag(Some(&format!("sha256-{hex}.sbom"))),
            Some(Kind::Sbom)
        );
        assert_eq!(by_tag(Some("sha256-abc.sig")), None);
        assert_eq!(by_tag(Some("v1.0.0")), None);
    }
}
