//! The media types chartreg writes or recognises.

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
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
