//! `diff --key FILE` and `diff --policy FILE`: each image side's signature verified before
//! anything else of it is read, by the trust crate, as fetch and pack verify images.
//!
//! - `--key`: a cosign public key (PEM, as `cosign generate-key-pair` writes cosign.pub);
//! - `--policy`: a content file, its `verify.images` keys and keyless rules (as fetch reads
//!   them: `fetch::verify::Verifier`).
//!
//! Either way every image side must verify: the policy is applied as if its `images.require`
//! were `["*"]` in `mode: require`, whatever the file says, so that an unsigned side, or one
//! whose signatures all fail, is refused, naming it and why. The signatures are those `image
//! --sign-key` writes and cosign reads: the manifest tagged `sha256-<hex>.sig` (in the layout,
//! or pulled from the registry beside the image) and Sigstore bundle referrers, read through
//! [`Layouts`] (the image's layout, and the signature's when it was pulled into another) as
//! `super::layout` reads: bounded, no link followed.

use std::path::{Path, PathBuf};

use chartreg_core::content::Evidence;
use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::{INDEX_FILE, REF_NAME, UPSTREAM_DIGEST, tag_of};
use chartreg_trust::{
    Checked, ImagePolicy, ImagesSection, LayoutError, Mode, Store, VerifySection,
};

use super::layout::{DOCUMENT_LIMIT, Layout, ReadError};

/// Why a side's signature was not accepted, or the policy cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SignedError {
    #[error("--key {}: {source}", path.display())]
    Key {
        path: PathBuf,
        #[source]
        source: Box<chartreg_trust::PolicyError>,
    },
    #[error("--policy: {0}")]
    Policy(#[source] Box<crate::fetch::verify::Error>),
    #[error(
        "--policy {}: its verify: section has no images: part (keys or keyless rules to verify images with)",
        .0.display()
    )]
    NoImages(PathBuf),
    #[error("its signatures cannot be read: {0}")]
    Unreadable(#[source] Box<chartreg_trust::LayoutError>),
    #[error("refused: {line}{}", note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default())]
    Refused { line: String, note: Option<String> },
    #[error("refused: its image {0} has no tag, so no signature of it is found")]
    Untagged(String),
}

/// What every image side is verified with.
#[derive(Debug, Clone)]
pub struct Trust {
    policy: ImagePolicy,
}

impl Trust {
    /// The cosign public key at `path`.
    pub fn key(path: &Path) -> Result<Trust, SignedError> {
        let section = VerifySection {
            mode: Mode::Require,
            charts: None,
            images: Some(ImagesSection {
                keys: vec![path.to_owned()],
                trusted_root: None,
                keyless: Vec::new(),
                require: Vec::new(),
            }),
        };
        let policy = ImagePolicy::of(path, &section)
            .map_err(|source| SignedError::Key {
                path: path.to_owned(),
                source: Box::new(source),
            })?
            .ok_or_else(|| SignedError::NoImages(path.to_owned()))?;
        Ok(Trust::every_side(policy))
    }

    /// The `verify.images` policy of the content file `config`.
    pub fn policy(config: &Path) -> Result<Trust, SignedError> {
        let verifier = crate::fetch::verify::Verifier::read(config)
            .map_err(|e| SignedError::Policy(Box::new(e)))?;
        let policy = verifier
            .policy
            .images
            .ok_or_else(|| SignedError::NoImages(config.to_owned()))?;
        Ok(Trust::every_side(policy))
    }

    /// `policy` with every image required to verify (see the module's documentation).
    fn every_side(mut policy: ImagePolicy) -> Trust {
        policy.mode = Mode::Require;
        policy.require = vec!["*".to_owned()];
        Trust { policy }
    }

    /// Who signed the image tagged `tag` in `store`, served as `repository`; refused when it
    /// does not verify (`note` says why no signature may have been found).
    pub fn check(
        &self,
        store: &dyn Store,
        repository: &str,
        tag: Option<&str>,
        note: Option<String>,
    ) -> Result<Vec<Evidence>, SignedError> {
        let Some(tag) = tag else {
            return Err(SignedError::Untagged(repository.to_owned()));
        };
        let checked = chartreg_trust::check_store(&self.policy, repository, store, Some(tag))
            .map_err(|e| SignedError::Unreadable(Box::new(e)))?;
        match checked
            .into_iter()
            .find(|c| c.tag == tag)
            .map(|c| c.checked)
        {
            Some(Checked::Verified(signers)) => Ok(signers),
            Some(Checked::Failed { line, .. }) => Err(SignedError::Refused { line, note }),
            Some(Checked::NotSigned) | None => Err(SignedError::Refused {
                line: format!("image {repository}:{tag}: not signed"),
                note,
            }),
        }
    }
}

/// A [`ReadError`] as the trust crate's error.
fn for_trust(e: ReadError) -> LayoutError {
    LayoutError::Read {
        path: e.path,
        source: std::io::Error::other(e.problem.to_string()),
    }
}

impl Store for Layout {
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError> {
        Layouts(std::slice::from_ref(self)).entries()
    }

    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
        self.blob_bytes(digest, DOCUMENT_LIMIT).map_err(for_trust)
    }

    fn upstream(&self, tag: &str) -> Result<Option<Digest>, LayoutError> {
        Layouts(std::slice::from_ref(self)).upstream(tag)
    }
}

/// Several layouts read as one: an image and its signature, pulled into a layout each.
pub struct Layouts<'a>(pub &'a [Layout]);

impl Store for Layouts<'_> {
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError> {
        let mut entries = Vec::new();
        for layout in self.0 {
            let index = layout.index().map_err(for_trust)?;
            entries.extend(index.manifests.into_iter().map(|d| {
                let tag = d.annotations.get(REF_NAME).and_then(|r| tag_of(r));
                (tag, d.digest)
            }));
        }
        Ok(entries)
    }

    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
        let holding = self.0.iter().find(|l| l.has_blob(digest));
        match holding.or(self.0.first()) {
            Some(layout) => layout.blob_bytes(digest, DOCUMENT_LIMIT).map_err(for_trust),
            None => Err(LayoutError::OtherBytes {
                path: PathBuf::new(),
                digest: digest.clone(),
            }),
        }
    }

    fn upstream(&self, tag: &str) -> Result<Option<Digest>, LayoutError> {
        for layout in self.0 {
            let index = layout.index().map_err(for_trust)?;
            let entry = index.manifests.iter().find(|d| {
                d.annotations
                    .get(REF_NAME)
                    .and_then(|r| tag_of(r))
                    .is_some_and(|t| t == tag)
            });
            if let Some(upstream) = entry.and_then(|d| d.annotations.get(UPSTREAM_DIGEST)) {
                return upstream
                    .parse()
                    .map(Some)
                    .map_err(|source| LayoutError::UpstreamDigest {
                        path: layout.path.join(INDEX_FILE),
                        tag: tag.to_owned(),
                        value: upstream.clone(),
                        source,
                    });
            }
        }
        Ok(None)
    }
}
