//! What describing content found ([`Description`]): every file by path and sha256, and either
//! its repositories (per repository the manifests, blobs, tags, referrers and the count of
//! blobs nothing references, every body named by the file that holds it) or why it cannot be
//! served.
//!
//! A description is made once, by checking the content in full (`Description::of`, in `load`,
//! which gathers what each repository holds in a `Found`, put in order here), from the files as
//! the build has them (`BuildFile`); it holds no bodies. Its facts (`Description::facts`, in
//! `facts`) are what a binary is built with and what its [`Registry`](super::Registry) is made
//! from. This module holds only the description's shape: `load` and `facts` use it, it uses
//! neither.

use super::{HashMap, LoadError, Sha256Map};
use crate::oci::layout::Annotations;
use crate::oci::{Digest, RepositoryName};

/// What describing content found (see the module's documentation).
#[derive(Debug)]
pub struct Description {
    /// Every file described, in path order (what the facts bind themselves to).
    pub(super) files: Vec<DescribedFile>,
    /// The repositories in name order, or why the content cannot be served.
    pub(super) found: Result<Vec<RepositoryDescription>, LoadError>,
}

#[derive(Debug)]
pub(super) struct DescribedFile {
    pub(super) path: String,
    pub(super) sha256: [u8; 32],
}

/// One repository as loading found it. Files are named by their position in
/// [`Description::files`]; manifests by their position in `manifests`.
#[derive(Debug)]
pub(super) struct RepositoryDescription {
    pub(super) name: RepositoryName,
    /// In digest order.
    pub(super) manifests: Vec<ManifestDescription>,
    /// In digest order.
    pub(super) blobs: Vec<BlobDescription>,
    /// Tag names in byte order, each with its manifest.
    pub(super) tags: Vec<(String, usize)>,
    /// By subject, then by the referring manifest's digest.
    pub(super) referrers: Vec<ReferrerDescription>,
    /// Blobs of the layout that no manifest references (not served).
    pub(super) unreferenced: usize,
}

#[derive(Debug)]
pub(super) struct ManifestDescription {
    pub(super) digest: Digest,
    /// As its descriptor gave it.
    pub(super) media_type: String,
    pub(super) file: usize,
}

#[derive(Debug)]
pub(super) struct BlobDescription {
    pub(super) digest: Digest,
    pub(super) file: usize,
}

/// A manifest with a subject: the referrers API lists it under that subject.
#[derive(Debug)]
pub(super) struct ReferrerDescription {
    pub(super) subject: Digest,
    pub(super) manifest: usize,
    pub(super) artifact_type: Option<String>,
    pub(super) annotations: Annotations,
}

/// What a layout's manifests were found to hold, before it is put in order.
#[derive(Default)]
pub(super) struct Found {
    pub(super) manifests: Sha256Map<ManifestDescription>,
    pub(super) blobs: Sha256Map<BlobDescription>,
    pub(super) tags: HashMap<String, [u8; 32]>,
    /// Subject, referring manifest, its artifact type and annotations.
    pub(super) referrers: Vec<(Digest, [u8; 32], Option<String>, Annotations)>,
}

impl Found {
    /// The repository `name` holds, every list in the order its description gives.
    pub(super) fn in_order(
        self,
        name: RepositoryName,
        unreferenced: usize,
    ) -> RepositoryDescription {
        let mut manifests: Vec<([u8; 32], ManifestDescription)> =
            self.manifests.into_iter().collect();
        manifests.sort_unstable_by_key(|(hash, _)| *hash);
        let position = |hash: &[u8; 32]| {
            manifests
                .binary_search_by_key(hash, |(h, _)| *h)
                .unwrap_or_default()
        };
        let mut tags: Vec<(String, usize)> = self
            .tags
            .iter()
            .map(|(tag, hash)| (tag.clone(), position(hash)))
            .collect();
        tags.sort_unstable();
        let mut referrers: Vec<ReferrerDescription> = self
            .referrers
            .into_iter()
            .map(
                |(subject, hash, artifact_type, annotations)| ReferrerDescription {
                    subject,
                    manifest: position(&hash),
                    artifact_type,
                    annotations,
                },
            )
            .collect();
        // Manifests are in digest order: by position is by digest.
        referrers.sort_by(|a, b| (&a.subject, a.manifest).cmp(&(&b.subject, b.manifest)));
        let mut blobs: Vec<([u8; 32], BlobDescription)> = self.blobs.into_iter().collect();
        blobs.sort_unstable_by_key(|(hash, _)| *hash);
        RepositoryDescription {
            name,
            manifests: manifests.into_iter().map(|(_, m)| m).collect(),
            blobs: blobs.into_iter().map(|(_, b)| b).collect(),
            tags,
            referrers,
            unreferenced,
        }
    }
}

impl Description {
    /// Why the content cannot be served, if it cannot.
    pub fn refusal(&self) -> Option<&LoadError> {
        self.found.as_ref().err()
    }
}
