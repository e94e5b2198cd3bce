//! Serde types for the documents of an OCI image layout: `oci-layout`, `index.json`, image
//! manifests, image indexes and their descriptors.
//!
//! The build tool writes these (through `tree::LayoutBuilder`) and `content` reads them.
//! Annotations are `BTreeMap`s so that written JSON is byte-for-byte deterministic; fields are
//! declared in the order the OCI image spec (and Go's encoder) writes them. Unknown fields are
//! ignored when reading.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Digest, media_type};

/// The annotation that carries a tag in `index.json`.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
/// On a tagged index's entry in `index.json`: the digest of the index upstream serves, of
/// which this one keeps some platforms (`chartreg-build fetch --platform`); the signatures
/// upstream made are over that one, whose bytes the layout holds beside it.
pub const UPSTREAM_DIGEST: &str = "io.chartreg.fetch.upstream-digest";
/// The file that marks a folder as an OCI image layout.
pub const OCI_LAYOUT_FILE: &str = "oci-layout";
pub const INDEX_FILE: &str = "index.json";
/// The layout version chartreg writes and accepts.
pub const LAYOUT_VERSION: &str = "1.0.0";

pub type Annotations = BTreeMap<String, String>;

fn is_empty(a: &Annotations) -> bool {
    a.is_empty()
}

/// The content of the `oci-layout` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OciLayout {
    #[serde(rename = "imageLayoutVersion")]
    pub image_layout_version: String,
}

/// A content descriptor: what a blob or manifest is, where to find it and how big it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub annotations: Annotations,
    /// The platform an index's entry is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

impl Descriptor {
    pub fn new(media_type: &str, digest: Digest, size: u64) -> Self {
        Descriptor {
            media_type: media_type.to_owned(),
            digest,
            size,
            annotations: Annotations::new(),
            platform: None,
            artifact_type: None,
        }
    }
}

/// What an image runs on (an index entry's `platform`, or an image config's fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub os: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl std::fmt::Display for Platform {
    /// `os/architecture[/variant]`, as `--platform` flags write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(variant) = &self.variant {
            write!(f, "/{variant}")?;
        }
        Ok(())
    }
}

/// An OCI image manifest (also reads Docker schema 2 manifests, which share the shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub annotations: Annotations,
}

impl ImageManifest {
    /// An OCI image manifest of `config` and `layers`, with no annotations or subject.
    pub fn new(config: Descriptor, layers: Vec<Descriptor>) -> Self {
        ImageManifest {
            schema_version: 2,
            media_type: Some(media_type::OCI_MANIFEST.to_owned()),
            artifact_type: None,
            config,
            layers,
            subject: None,
            annotations: Annotations::new(),
        }
    }
}

/// An OCI image index: `index.json` of a layout, or an index manifest (also reads Docker
/// manifest lists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub manifests: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub annotations: Annotations,
}

/// The tag an index entry's `ref.name` annotation stands for: itself, or the part after the
/// last `:` of a reference such as `registry.example/app:1.0` (not of a digest reference), as
/// skopeo, oras and crane write them.
pub fn tag_of(ref_name: &str) -> Option<String> {
    if ref_name.parse::<super::Tag>().is_ok() {
        return Some(ref_name.to_owned());
    }
    let (before, tail) = ref_name.rsplit_once(':')?;
    (!before.ends_with("@sha256") && !tail.contains('/') && tail.parse::<super::Tag>().is_ok())
        .then(|| tail.to_owned())
}

/// The path of a blob inside a layout: `blobs/<algorithm>/<encoded>`.
pub fn blob_path(digest: &Digest) -> String {
    format!("blobs/{}/{}", digest.algorithm(), digest.encoded())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_serialises_in_spec_order_with_sorted_annotations() {
        let d = Digest::sha256_of(b"x");
        let mut m = ImageManifest::new(
            Descriptor::new(media_type::HELM_CONFIG, d.clone(), 1),
            vec![Descriptor::new(media_type::HELM_CHART, d.clone(), 1)],
        );
        m.annotations.insert("z".into(), "1".into());
        m.annotations.insert("a".into(), "2".into());
        let json = serde_json::to_string(&m).unwrap();
        let expected = format!(
            r#"{{"schemaVersion":2,"mediaType":"{}","config":{{"mediaType":"{}","digest":"{d}","size":1}},"layers":[{{"mediaType":"{}","digest":"{d}","size":1}}],"annotations":{{"a":"2","z":"1"}}}}"#,
            media_type::OCI_MANIFEST,
            media_type::HELM_CONFIG,
            media_type::HELM_CHART
        );
        assert_eq!(json, expected);
        assert_eq!(serde_json::from_str::<ImageManifest>(&json).unwrap(), m);
    }

    #[test]
    fn descriptor_rejects_invalid_digest() {
        let err = serde_json::from_str::<Descriptor>(
            r#"{"mediaType":"x","digest":"sha256:nothex","size":1}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("sha256"), "{err}");
    }
}
