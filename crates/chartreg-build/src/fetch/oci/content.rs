//! What fetch reads of a registry's repository: manifests by tag or digest (checked against
//! the digest asked for and the one the registry gave), every page of its tags, referrers (the
//! OCI referrers API, or cosign's tag schema where there is none), and blobs streamed into
//! files, never more than their descriptors give, checked against their digests.

use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::{Descriptor, ImageIndex};
use futures_util::StreamExt;
use serde::Deserialize;

use super::classify::classify;
use super::{MANIFEST_TYPES, Registry};
use crate::fetch::problem::{Document, Failure, Problem};
use crate::fetch::transport::{Bounded, Partial, quoted, sha256_of_hex, with_retries};

/// A page of a repository's tags.
#[derive(Debug, Deserialize)]
struct TagList {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

impl Registry {
    /// The manifest `tag_or_digest` names: its bytes (at most [`Bounded::Manifest`]) and its
    /// digest, checked against the digest asked for and the one the registry gave.
    pub async fn manifest(
        &self,
        repository: &str,
        tag_or_digest: &str,
    ) -> Result<(Vec<u8>, String), Problem> {
        let reference = self.reference(repository, tag_or_digest)?;
        let at = reference
            .digest()
            .or(reference.tag())
            .unwrap_or("latest")
            .to_owned();
        let url = self.url(&reference, &format!("manifests/{at}"))?;
        let (data, given) = self
            .document(&reference, &url, &MANIFEST_TYPES.join(", "))
            .await?;
        let digest = Digest::sha256_of(&data).to_string();
        let expected = reference
            .digest()
            .map(str::to_owned)
            .or(given.filter(|g| g.starts_with("sha256:")));
        if let Some(expected) = expected
            && expected != digest
        {
            return Err(Problem::DigestMismatch {
                expected: quoted(&expected),
                actual: digest,
            });
        }
        Ok((data, digest))
    }

    /// The repository's tags, every page of them (each at most [`Bounded::Manifest`]); what the
    /// registry lists that is no tag is left out.
    pub async fn tags(&self, repository: &str) -> Result<Vec<String>, Problem> {
        const PAGE: usize = 1000;
        let reference = self.reference(repository, "latest")?;
        let mut tags: Vec<String> = Vec::new();
        // Pages until one brings nothing new (a registry may page with a smaller size than
        // asked); a bound keeps one that never ends from looping.
        for _ in 0..100 {
            let last = tags.last().cloned();
            let mut url = self.url(&reference, "tags/list")?;
            {
                let mut query = url.query_pairs_mut();
                query.append_pair("n", &PAGE.to_string());
                if let Some(last) = &last {
                    query.append_pair("last", last);
                }
            }
            let (data, _) = self.document(&reference, &url, "application/json").await?;
            let page: TagList = serde_json::from_slice(&data)
                .map_err(|e| Problem::not_json(Document::TagList(url.to_string()), e))?;
            let before = tags.len();
            // What is no tag (an attacker's megabyte of text) is not one of them.
            tags.extend(
                page.tags
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| Some(t) > last.as_ref())
                    .filter(|t| t.parse::<chartreg_core::oci::Tag>().is_ok()),
            );
            if tags.len() == before {
                break;
            }
        }
        Ok(tags)
    }

    /// Whether a manifest `tag` exists (for cosign's tag schema): `None` when it does not.
    pub async fn manifest_if_any(
        &self,
        repository: &str,
        tag: &str,
    ) -> Result<Option<(Vec<u8>, String)>, Problem> {
        match self.manifest(repository, tag).await {
            Ok(found) => Ok(Some(found)),
            Err(Problem::NotFound) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// Streams the blob `layer` describes into `target` (through a temporary file, renamed
    /// once its digest is checked), never more bytes than its descriptor gives; returns its
    /// size.
    pub async fn blob(
        &self,
        repository: &str,
        layer: &Descriptor,
        target: &std::path::Path,
    ) -> Result<u64, Problem> {
        let digest = layer.digest.as_str();
        let reference = self.reference(repository, digest)?;
        let expected = sha256_of_hex(digest).ok_or_else(|| Problem::NotSha256 {
            digest: digest.to_owned(),
        })?;
        let bound = Bounded::Blob(layer.size);
        let (size, _) = with_retries(|| async {
            self.client
                .store_auth_if_needed(reference.resolve_registry(), &self.auth)
                .await;
            let sized = self
                .client
                .pull_blob_stream(&reference, digest)
                .await
                .map_err(classify)?;
            if sized.content_length.is_some_and(|l| l > bound.bytes()) {
                return Err(Failure::Final(Problem::TooLarge {
                    from: digest.to_owned(),
                    bound,
                }));
            }
            let mut stream = sized.stream;
            let mut partial = Partial::create(target, bound, digest).map_err(Failure::Final)?;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| Failure::Transient(Problem::network(e)))?;
                partial.write(&chunk).map_err(Failure::Final)?;
            }
            partial.finish(Some(expected)).map_err(Failure::Final)
        })
        .await?;
        Ok(size)
    }

    /// The digests (and media types) of the manifests whose subject is `digest`: the OCI
    /// referrers API, or, where the registry has none (404), the referrers tag schema's index
    /// (`sha256-<hex>`); none when neither is there.
    pub async fn referrers(
        &self,
        repository: &str,
        digest: &str,
    ) -> Result<Vec<(String, String)>, Problem> {
        let reference = self.reference(repository, digest)?;
        let url = self.url(&reference, &format!("referrers/{digest}"))?;
        let data = match self
            .document(&reference, &url, "application/vnd.oci.image.index.v1+json")
            .await
        {
            Ok((data, _)) => data,
            Err(Problem::NotFound) => {
                let fallback = digest.replace(':', "-");
                match self.manifest_if_any(repository, &fallback).await? {
                    Some((data, _)) => data,
                    None => return Ok(Vec::new()),
                }
            }
            Err(other) => return Err(other),
        };
        let index: ImageIndex = serde_json::from_slice(&data)
            .map_err(|e| Problem::not_json(Document::Referrers(digest.to_owned()), e))?;
        Ok(index
            .manifests
            .into_iter()
            .map(|m| (m.digest.to_string(), m.media_type))
            .collect())
    }
}
