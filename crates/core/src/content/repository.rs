//! One repository of the registry ([`Repository`]): its tags (with the unprefixed forms of
//! charts' `v` tags), manifests ([`Manifest`]), blobs ([`Blob`]) and referrers, as the facts
//! fill them in (module `facts`), and the lookups a request makes of them: a manifest by tag or
//! digest, a blob by digest, the referrers of a subject, the bytes a pull downloads.

use bytes::Bytes;
use bytestring::ByteString;

use crate::oci::layout::Descriptor;
use crate::oci::{Digest, Namespace, Reference, RepositoryName};

use super::maps::{HashMap, Sha256Map};
use super::{Error, Listing, Unreadable};

/// A manifest as stored: exact bytes, the media type its descriptor gave, its digest.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub media_type: ByteString,
    pub digest: Digest,
    /// The digest in double quotes: the content's entity tag.
    pub quoted_digest: Bytes,
    pub data: Bytes,
}

/// A blob as stored.
#[derive(Debug, Clone)]
pub struct Blob {
    pub digest: Digest,
    /// The digest in double quotes: the content's entity tag.
    pub quoted_digest: Bytes,
    pub data: Bytes,
}

/// One repository: its tags, manifests, the blobs its manifests reference, and referrers.
#[derive(Debug)]
pub struct Repository {
    pub(super) name: RepositoryName,
    /// The registry the repository's images came from and the path within it, when its first
    /// path component names one (see module `namespaces`).
    pub(super) namespace: Option<(Namespace, String)>,
    /// Each tag's manifest, by its hash.
    pub(super) tags: HashMap<String, [u8; 32]>,
    /// The unprefixed forms of charts' `v` tags, listed beside them (see
    /// [`Repository::finish_tags`]).
    pub(super) unprefixed: HashMap<String, [u8; 32]>,
    /// Tag names (and unprefixed forms) in byte order, as the tags list returns them, with
    /// their JSON.
    pub(super) tag_list: Listing,
    pub(super) manifests: Sha256Map<Manifest>,
    pub(super) blobs: Sha256Map<Blob>,
    /// Descriptors of the manifests whose `subject` is the key, ordered by digest.
    pub(super) referrers: HashMap<Digest, Vec<Descriptor>>,
    /// Blobs of the layout that no manifest references (not served).
    pub(super) unreferenced: usize,
}

impl Repository {
    pub(super) fn new(name: RepositoryName) -> Self {
        let namespace = Namespace::split(name.as_str()).map(|(ns, path)| (ns, path.to_owned()));
        Repository {
            name,
            namespace,
            tags: HashMap::default(),
            unprefixed: HashMap::default(),
            tag_list: Listing::default(),
            manifests: Sha256Map::default(),
            blobs: Sha256Map::default(),
            referrers: HashMap::default(),
            unreferenced: 0,
        }
    }

    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The upstream registry this repository's images came from, and the path within it (as
    /// the registry names it), when the content keeps it.
    pub fn namespace(&self) -> Option<(&Namespace, &str)> {
        self.namespace
            .as_ref()
            .map(|(ns, path)| (ns, path.as_str()))
    }

    /// The manifest a tag points at, or the manifest with a digest. A tag that does not exist
    /// names the tag with its `v` prefix toggled, when that one does (`v0.14.5` finds
    /// `0.14.5`, `1.0.0` finds `v1.0.0`): people write versions both ways.
    #[inline]
    pub fn manifest(&self, reference: &Reference) -> Result<&Manifest, Error> {
        let hash = match reference {
            Reference::Tag(tag) => self.tag_hash(tag.as_str()),
            Reference::Digest(digest) => digest.sha256(),
        };
        let found = hash.and_then(|hash| self.manifests.get(&hash));
        found.ok_or_else(|| Error::ManifestUnknown {
            name: self.name.clone(),
            reference: reference.clone(),
        })
    }

    /// A blob referenced by one of this repository's manifests.
    #[inline]
    pub fn blob(&self, digest: &Digest) -> Result<&Blob, Error> {
        let found = digest.sha256().and_then(|hash| self.blobs.get(&hash));
        found.ok_or_else(|| Error::BlobUnknown {
            name: self.name.clone(),
            digest: digest.clone(),
        })
    }

    #[inline]
    fn tag_hash(&self, tag: &str) -> Option<[u8; 32]> {
        if let Some(hash) = self.tags.get(tag).or_else(|| self.unprefixed.get(tag)) {
            return Some(*hash);
        }
        match tag.strip_prefix('v') {
            Some(unprefixed) => self.tags.get(unprefixed).copied(),
            None => self.tags.get(&format!("v{tag}")).copied(),
        }
    }

    /// Every tag, sorted by byte order.
    pub fn tags(&self) -> Vec<&str> {
        let mut tags: Vec<&str> = self.tags.keys().map(String::as_str).collect();
        tags.sort_unstable();
        tags
    }

    /// The tags list (`{"name":…,"tags":[…]}`), ready to be paged.
    #[inline]
    pub fn tag_list(&self) -> &Listing {
        &self.tag_list
    }

    /// The digest a tag points at.
    pub fn tag_digest(&self, tag: &str) -> Option<&Digest> {
        self.tagged(tag).map(|m| &m.digest)
    }

    /// The manifest a tag (as [`Repository::tags`] lists it) points at.
    pub fn tagged(&self, tag: &str) -> Option<&Manifest> {
        let hash = self.tags.get(tag)?;
        self.manifests.get(hash)
    }

    /// Descriptors of the manifests that name `subject` as their subject, optionally only
    /// those of one artifact type. An unknown subject has no referrers.
    pub fn referrers<'a>(
        &'a self,
        subject: &Digest,
        artifact_type: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Descriptor> + 'a {
        self.referrers
            .get(subject)
            .into_iter()
            .flatten()
            .filter(move |d| artifact_type.is_none() || d.artifact_type.as_deref() == artifact_type)
    }

    /// Bytes a client downloads to pull `manifest` (one of this repository's): the manifest
    /// and every blob and child manifest it references.
    pub fn pull_size(&self, manifest: &Manifest) -> Result<u64, Unreadable> {
        let own = manifest.data.len() as u64;
        let mut referenced = 0u64;
        for d in manifest.document()?.references() {
            let child = d.digest.sha256().and_then(|h| self.manifests.get(&h));
            let size = match child {
                Some(child) => self.pull_size(child)?,
                None => d.size,
            };
            referenced = referenced.saturating_add(size);
        }
        Ok(own.saturating_add(referenced))
    }

    /// Says that some blobs of the layout are not served, if so.
    pub(super) fn warn_unreferenced(&self) {
        if self.unreferenced > 0 {
            log::warn!(
                "{}: {} blob(s) referenced by no manifest are not served",
                self.name,
                self.unreferenced
            );
        }
    }

    /// Every manifest and blob once (a manifest may also be referenced as a blob), with its size.
    pub(super) fn distinct_content(&self) -> impl Iterator<Item = (&[u8; 32], u64)> {
        let blobs = self.blobs.iter().map(|(h, b)| (h, b.data.len() as u64));
        let manifests = self
            .manifests
            .iter()
            .filter(|(h, _)| !self.blobs.contains_key(*h));
        blobs.chain(manifests.map(|(h, m)| (h, m.data.len() as u64)))
    }
}
