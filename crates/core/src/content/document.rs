//! A stored manifest read again as the document its media type names ([`Document`]), for what
//! is worked out from it after loading (the bytes a pull downloads, what an artifact is).
//!
//! Loading checked that every stored manifest parses, so content that loaded never meets
//! [`Unreadable`]; the type still says so, and callers report it rather than count a manifest
//! that cannot be read as one that references nothing.

use super::Manifest;
use crate::oci::Digest;
use crate::oci::layout::{Descriptor, ImageIndex, ImageManifest};
use crate::oci::media_type::{ManifestKind, manifest_kind};

/// A stored manifest, parsed.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "made and taken apart once per call, never stored or moved around"
)]
pub enum Document {
    Image(ImageManifest),
    Index(ImageIndex),
}

/// A stored manifest that is not the document its media type names.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("stored manifest {digest}: `{media_type}` is not a manifest media type")]
    NotManifest { digest: Digest, media_type: String },
    #[error("stored manifest {digest} cannot be read: {source}")]
    Json {
        digest: Digest,
        source: serde_json::Error,
    },
}

impl Manifest {
    /// This manifest as its document.
    pub fn document(&self) -> Result<Document, Unreadable> {
        let json = |source| Unreadable::Json {
            digest: self.digest.clone(),
            source,
        };
        match manifest_kind(&self.media_type) {
            Some(ManifestKind::Image) => serde_json::from_slice(&self.data)
                .map(Document::Image)
                .map_err(json),
            Some(ManifestKind::Index) => serde_json::from_slice(&self.data)
                .map(Document::Index)
                .map_err(json),
            None => Err(Unreadable::NotManifest {
                digest: self.digest.clone(),
                media_type: self.media_type.to_string(),
            }),
        }
    }
}

impl Document {
    /// The descriptors it references: an image's config and layers, an index's manifests.
    pub fn references(self) -> Vec<Descriptor> {
        match self {
            Document::Image(m) => std::iter::once(m.config).chain(m.layers).collect(),
            Document::Index(i) => i.manifests,
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::content::{HeldFile, Registry, Repository};
    use crate::oci::layout::ImageManifest;
    use crate::oci::{Reference, media_type, sha256};
    use crate::tree::LayoutBuilder;

    fn stored(media_type: &str, data: String) -> Manifest {
        let digest = Digest::from_sha256(sha256(data.as_bytes()));
        Manifest {
            media_type: media_type.into(),
            quoted_digest: Bytes::from(format!("\"{digest}\"")),
            digest,
            data: Bytes::from(data),
        }
    }

    /// A repository holding `manifests` (and no blobs).
    fn holding(manifests: &[&Manifest]) -> Repository {
        let mut repository = Repository::new("r".parse().unwrap());
        for m in manifests {
            let hash = m.digest.sha256().unwrap();
            repository.manifests.insert(hash, (*m).clone());
        }
        repository
    }

    fn index_of(child: &Manifest) -> Manifest {
        stored(
            media_type::OCI_INDEX,
            format!(
                r#"{{"schemaVersion":2,"mediaType":"{}","manifests":[{{"mediaType":"{}","digest":"{}","size":{}}}]}}"#,
                media_type::OCI_INDEX,
                child.media_type,
                child.digest,
                child.data.len()
            ),
        )
    }

    #[test]
    fn pull_size_counts_the_manifest_and_what_it_references() {
        let mut layout = LayoutBuilder::new("r");
        let config = layout.blob(media_type::OCI_CONFIG, b"{}".to_vec());
        let layer = layout.blob("application/vnd.oci.image.layer.v1.tar", vec![0; 100]);
        let descriptor = layout.manifest(
            media_type::OCI_MANIFEST,
            &ImageManifest::new(config, vec![layer]),
        );
        layout.list(descriptor, Some("t"));
        let files: Vec<HeldFile> = layout
            .into_files()
            .unwrap()
            .into_iter()
            .map(|(path, data)| HeldFile::new(path, data))
            .collect();
        let registry = Registry::from_files(files).unwrap();
        let repository = registry.repository(&"r".parse().unwrap()).unwrap();
        let manifest = repository
            .manifest(&Reference::Tag("t".parse().unwrap()))
            .unwrap();
        let expected = manifest.data.len() as u64 + 2 + 100;
        assert_eq!(repository.pull_size(manifest).unwrap(), expected);
        let index = index_of(manifest);
        let with_index = holding(&[manifest, &index]);
        assert_eq!(
            with_index.pull_size(&index).unwrap(),
            index.data.len() as u64 + expected
        );
    }

    #[test]
    fn a_manifest_that_cannot_be_read_is_reported_not_counted_as_referencing_nothing() {
        let broken = stored(media_type::OCI_MANIFEST, "{not json".to_owned());
        let index = index_of(&broken);
        let repository = holding(&[&broken, &index]);
        for top in [&broken, &index] {
            let size = repository.pull_size(top);
            assert!(
                matches!(&size, Err(Unreadable::Json { digest, .. }) if *digest == broken.digest),
                "{size:?}"
            );
        }
        let artifact = repository.artifact(&broken, None);
        assert!(
            matches!(&artifact, Err(Unreadable::Json { digest, .. }) if *digest == broken.digest),
            "{artifact:?}"
        );
    }

    #[test]
    fn a_stored_manifest_of_another_media_type_is_reported() {
        let odd = stored("application/octet-stream", "{}".to_owned());
        let error = odd.document().unwrap_err();
        assert!(
            matches!(&error, Unreadable::NotManifest { digest, media_type }
                if *digest == odd.digest && media_type == "application/octet-stream"),
            "{error:?}"
        );
    }
}
