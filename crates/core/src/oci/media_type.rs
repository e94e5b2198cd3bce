//! The media types chartreg writes or recognises.

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// OCI 1.1's empty descriptor's media type: the config of an artifact that has none (`{}`).
pub const OCI_EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// An SPDX document in JSON.
pub const SPDX_JSON: &str = "application/spdx+json";
/// A CycloneDX BOM in JSON.
pub const CYCLONEDX_JSON: &str = "application/vnd.cyclonedx+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
pub const HELM_CHART: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
pub const HELM_PROVENANCE: &str = "application/vnd.cncf.helm.chart.provenance.v1.prov";

/// What kind of document a manifest media type names, which decides what it references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestKind {
    /// An image manifest: references a config blob and layer blobs.
    Image,
    /// An index (or Docker manifest list): references other manifests.
    Index,
}

/// The kind of a manifest media type, or `None` for anything that is not a manifest.
pub fn manifest_kind(media_type: &str) -> Option<ManifestKind> {
    match media_type {
        OCI_MANIFEST | DOCKER_MANIFEST => Some(ManifestKind::Image),
        OCI_INDEX | DOCKER_MANIFEST_LIST => Some(ManifestKind::Index),
        _ => None,
    }
}

/// A stored manifest's media type: its `mediaType` field; else an index when it lists
/// `manifests`; else an image manifest. This is how CNCF distribution types what it stores
/// without one (every Helm-pushed chart manifest lacks `mediaType`).
pub fn of_manifest(data: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(default, rename = "mediaType")]
        media_type: Option<String>,
        #[serde(default)]
        manifests: Option<serde::de::IgnoredAny>,
    }
    match serde_json::from_slice::<Typed>(data) {
        Ok(Typed {
            media_type: Some(t),
            ..
        }) => t,
        Ok(Typed {
            manifests: Some(_), ..
        }) => OCI_INDEX.to_owned(),
        _ => OCI_MANIFEST.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_manifests_are_typed_from_their_content() {
        let typed = br#"{"mediaType":"application/vnd.docker.distribution.manifest.v2+json"}"#;
        assert_eq!(of_manifest(typed), DOCKER_MANIFEST);
        assert_eq!(
            of_manifest(br#"{"schemaVersion":2,"manifests":[]}"#),
            OCI_INDEX
        );
        let helm = br#"{"schemaVersion":2,"config":{},"layers":[]}"#;
        assert_eq!(of_manifest(helm), OCI_MANIFEST);
    }
}
