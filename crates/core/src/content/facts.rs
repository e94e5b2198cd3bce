//! Build-time facts: what loading found the embedded content to be, written down by build.rs
//! (which loads the content with this crate, a build-dependency), so that start-up builds the
//! registry without reading any JSON or checking anything twice.
//!
//! The facts are a serde struct ([`Facts`]) encoded with postcard and decoded without copies:
//! its strings borrow the facts' bytes, and what the registry keeps of them (quoted digests,
//! media types) are slices of those bytes. Facts name bodies, they never copy them: each
//! manifest and blob body is one of the input files, by its number in path order.
//!
//! Facts are bound to the content they describe: they list every file's path and sha256, and
//! [`read`] refuses them ([`Stale`]) unless the files it is given are exactly those (matched
//! by path, in any order). What is read back is checked as far as it can be without the JSON:
//! every digest must name the sha256 of the file it is the digest of, names and tags must be
//! valid, tags and repositories in order (each once). So facts can only make start-up faster:
//! when they do not fit, start-up loads and checks everything. `chartreg verify` re-reads the
//! content in full, should the facts ever lie.

use bytes::Bytes;
use bytestring::ByteString;
use serde::{Deserialize, Serialize};

use super::{Blob, ContentFile, HashMap, Listing, Manifest, Registry, Repository, Sha256Map};
use crate::oci::layout::{Annotations, Descriptor, blob_path};
use crate::oci::{Digest, RepositoryName, Tag};

/// Changed whenever [`Facts`] changes shape: facts of another version are stale, not misread.
const VERSION: u32 = 3;

/// Everything start-up needs to know of the content.
#[derive(Debug, Serialize, Deserialize)]
struct Facts<'a> {
    version: u32,
    /// Every file, in path order.
    #[serde(borrow)]
    files: Vec<FileFacts<'a>>,
    /// In name order.
    #[serde(borrow)]
    repositories: Vec<RepositoryFacts<'a>>,
}

#[derive(Debug, Serialize, Deserialize)]
struct FileFacts<'a> {
    path: &'a str,
    /// 32 bytes, borrowed (as an array, postcard would decode it a byte at a time).
    #[serde(with = "serde_bytes")]
    sha256: &'a [u8],
}

#[derive(Debug, Serialize, Deserialize)]
struct RepositoryFacts<'a> {
    name: &'a str,
    unreferenced: u32,
    /// In digest order.
    #[serde(borrow)]
    manifests: Vec<BodyFacts<'a>>,
    /// In digest order.
    #[serde(borrow)]
    blobs: Vec<BodyFacts<'a>>,
    /// In byte order.
    #[serde(borrow)]
    tags: Vec<TagFacts<'a>>,
    #[serde(borrow)]
    referrers: Vec<ReferrerFacts<'a>>,
}

/// A manifest or blob: the file that is its body, its digest in double quotes (the ETag,
/// holding the digest) and, for a manifest, the media type its descriptor gave.
#[derive(Debug, Serialize, Deserialize)]
struct BodyFacts<'a> {
    file: u32,
    quoted_digest: &'a str,
    media_type: &'a str,
}

#[derive(Debug, Serialize, Deserialize)]
struct TagFacts<'a> {
    name: &'a str,
    /// Its manifest's position in the repository's manifests.
    manifest: u32,
}

/// A manifest with a subject: the referrers API lists it under that subject.
#[derive(Debug, Serialize, Deserialize)]
struct ReferrerFacts<'a> {
    subject: &'a str,
    /// Its position in the repository's manifests (which give its digest, type and size).
    manifest: u32,
    artifact_type: Option<&'a str>,
    #[serde(borrow)]
    annotations: Vec<(&'a str, &'a str)>,
}

/// Facts that do not describe the files at hand (or are no facts at all).
#[derive(Debug, thiserror::Error)]
#[error("the build-time facts do not describe this content: {0}")]
pub struct Stale(String);

fn stale<T>(why: impl Into<String>) -> Result<T, Stale> {
    Err(Stale(why.into()))
}

/// The facts of `registry`, loaded from `files` (every body it holds is one of them); `None`
/// when a file has no sha256, a count does not fit the format, or postcard refuses the facts.
/// No facts lose nothing but start-up time: [`Registry::from_content`] then loads and checks
/// the files themselves.
pub fn write(registry: &Registry, files: &[ContentFile]) -> Option<Vec<u8>> {
    let mut sorted: Vec<&ContentFile> = files.iter().collect();
    sorted.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let numbers: HashMap<&str, u32> = sorted
        .iter()
        .enumerate()
        .map(|(i, f)| Some((f.path.as_ref(), u32::try_from(i).ok()?)))
        .collect::<Option<_>>()?;
    let facts = Facts {
        version: VERSION,
        files: sorted
            .iter()
            .map(|f| {
                Some(FileFacts {
                    path: &f.path,
                    sha256: f.sha256.as_ref()?,
                })
            })
            .collect::<Option<_>>()?,
        repositories: registry
            .repositories()
            .map(|r| repository_facts(r, &numbers))
            .collect::<Option<_>>()?,
    };
    // See the doc: without facts, start-up checks the files instead.
    postcard::to_allocvec(&facts).ok()
}

fn repository_facts<'r>(
    repository: &'r Repository,
    numbers: &HashMap<&str, u32>,
) -> Option<RepositoryFacts<'r>> {
    // The file a body is: `<repository>/blobs/sha256/<hex>`, as loading found it.
    let file = |digest: &Digest| {
        let path = format!("{}/{}", repository.name(), blob_path(digest));
        numbers.get(path.as_str()).copied()
    };
    let body = |digest: &Digest, quoted: &'r Bytes, media_type: &'r str| {
        Some(BodyFacts {
            file: file(digest)?,
            quoted_digest: std::str::from_utf8(quoted).ok()?,
            media_type,
        })
    };
    let mut manifests: Vec<(&[u8; 32], &Manifest)> = repository.manifests.iter().collect();
    manifests.sort_unstable_by_key(|(hash, _)| **hash);
    let position = |hash: &[u8; 32]| {
        let at = manifests.binary_search_by_key(&hash, |(h, _)| h).ok()?;
        u32::try_from(at).ok()
    };
    let mut blobs: Vec<(&[u8; 32], &Blob)> = repository.blobs.iter().collect();
    blobs.sort_unstable_by_key(|(hash, _)| **hash);
    let mut referrers = Vec::new();
    let mut subjects: Vec<_> = repository.referrers.iter().collect();
    subjects.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (subject, descriptors) in subjects {
        for d in descriptors {
            referrers.push(ReferrerFacts {
                subject: subject.as_str(),
                manifest: position(&d.digest.sha256()?)?,
                artifact_type: d.artifact_type.as_deref(),
                annotations: d
                    .annotations
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
            });
        }
    }
    Some(RepositoryFacts {
        name: repository.name(),
        unreferenced: u32::try_from(repository.unreferenced).ok()?,
        manifests: manifests
            .iter()
            .map(|(_, m)| body(&m.digest, &m.quoted_digest, &m.media_type))
            .collect::<Option<_>>()?,
        blobs: blobs
            .iter()
            .map(|(_, b)| body(&b.digest, &b.quoted_digest, ""))
            .collect::<Option<_>>()?,
        tags: repository
            .tags()
            .into_iter()
            .map(|tag| {
                Some(TagFacts {
                    name: tag,
                    manifest: position(repository.tags.get(tag)?)?,
                })
            })
            .collect::<Option<_>>()?,
        referrers,
    })
}

/// The registry the facts describe, built from `files` (which must be the files the facts
/// were written from, in any order, with their sha256).
pub fn read(bytes: &Bytes, files: &[ContentFile]) -> Result<Registry, Stale> {
    if bytes.is_empty() {
        return stale("the build wrote none");
    }
    let facts: Facts<'_> = match postcard::from_bytes(bytes) {
        Ok(facts) => facts,
        Err(e) => return stale(format!("they cannot be read ({e})")),
    };
    if facts.version != VERSION {
        return stale("they are facts of another version");
    }
    let mut sorted: Vec<&ContentFile> = files.iter().collect();
    // The binary's files come mostly in path order already: check before sorting.
    if !sorted.is_sorted_by(|a, b| a.path <= b.path) {
        sorted.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    }
    if sorted.len() != facts.files.len() {
        return stale(format!(
            "they describe {} files, not the {} at hand",
            facts.files.len(),
            sorted.len()
        ));
    }
    for (file, described) in sorted.iter().zip(&facts.files) {
        if file.path != described.path {
            return stale(format!("{} is not a file they describe", file.path));
        }
        if file.sha256.as_ref().map(|h| h.as_slice()) != Some(described.sha256) {
            return stale(format!("{} is not the file they describe", file.path));
        }
    }
    let reader = Reader {
        bytes,
        files: &sorted,
    };
    let mut repositories = Vec::with_capacity(facts.repositories.len());
    let mut last: Option<&str> = None;
    for described in &facts.repositories {
        // The catalog lists them in byte order, each once, as the tags of a repository.
        if last.is_some_and(|last| last >= described.name) {
            return stale("the repositories are not in order");
        }
        last = Some(described.name);
        repositories.push(reader.repository(described)?);
    }
    let registry = Registry::assemble(repositories);
    registry
        .repositories()
        .for_each(Repository::warn_unreferenced);
    Ok(registry)
}

/// What the parts of the facts are read with: their bytes, and the files in path order.
struct Reader<'a> {
    bytes: &'a Bytes,
    files: &'a [&'a ContentFile],
}

impl Reader<'_> {
    /// A string of the facts as shared text (no copy).
    fn text(&self, text: &str) -> ByteString {
        // Postcard borrows every string from the bytes it decodes: the slice is theirs.
        let shared = self.bytes.slice_ref(text.as_bytes());
        ByteString::try_from(shared).unwrap_or_else(|_| ByteString::from(text))
    }

    /// The body of file `n`, and its sha256, which `quoted` must name.
    fn body(&self, n: u32, quoted: &str) -> Result<(Bytes, [u8; 32], Digest, Bytes), Stale> {
        let Some(file) = self.files.get(n as usize) else {
            return stale("they name a file that is not there");
        };
        let Some(hash) = file.sha256 else {
            return stale("a file has no sha256");
        };
        let Some(data) = file.held() else {
            return stale("a file is not in memory");
        };
        // The quoted digest must be exactly `"sha256:<hex of the file's sha256>"`: compared with
        // that, it needs no parsing (a third of start-up, when it was parsed).
        let mut expected = [0u8; 73];
        expected[0] = b'"';
        expected[1..8].copy_from_slice(b"sha256:");
        if hex::encode_to_slice(hash, &mut expected[8..72]).is_err() {
            return stale("a digest does not name its content");
        }
        expected[72] = b'"';
        if quoted.as_bytes() != expected {
            return stale("a digest does not name its content");
        }
        let quoted = self.text(quoted);
        let digest = Digest::from_known_sha256(quoted.slice_ref(&quoted[1..72]), hash);
        Ok((data.clone(), hash, digest, quoted.into_bytes()))
    }

    fn repository(&self, described: &RepositoryFacts<'_>) -> Result<Repository, Stale> {
        let Ok(name) = described.name.parse::<RepositoryName>() else {
            return stale("a repository name is not valid");
        };
        let mut manifests =
            Sha256Map::with_capacity_and_hasher(described.manifests.len(), Default::default());
        let mut positions = Vec::with_capacity(described.manifests.len());
        for m in &described.manifests {
            let (data, hash, digest, quoted_digest) = self.body(m.file, m.quoted_digest)?;
            let manifest = Manifest {
                media_type: self.text(m.media_type),
                digest,
                quoted_digest,
                data,
            };
            positions.push(hash);
            manifests.insert(hash, manifest);
        }
        let mut blobs =
            Sha256Map::with_capacity_and_hasher(described.blobs.len(), Default::default());
        for b in &described.blobs {
            let (data, hash, digest, quoted_digest) = self.body(b.file, b.quoted_digest)?;
            let blob = Blob {
                digest,
                quoted_digest,
                data,
            };
            blobs.insert(hash, blob);
        }
        let manifest_at = |position: u32| match positions.get(position as usize) {
            Some(hash) => Ok(hash),
            None => stale("they name a manifest that is not there"),
        };
        let mut tags = HashMap::with_capacity_and_hasher(described.tags.len(), Default::default());
        let mut names: Vec<String> = Vec::with_capacity(described.tags.len());
        for tag in &described.tags {
            if tag.name.parse::<Tag>().is_err() {
                return stale("a tag is not valid");
            }
            if names.last().is_some_and(|last| last.as_str() >= tag.name) {
                return stale("the tags are not in order");
            }
            tags.insert(tag.name.to_owned(), *manifest_at(tag.manifest)?);
            names.push(tag.name.to_owned());
        }
        let mut referrers: HashMap<Digest, Vec<Descriptor>> = HashMap::default();
        for r in &described.referrers {
            let Ok(subject) = Digest::from_shared(self.text(r.subject)) else {
                return stale("a subject is not a digest");
            };
            let Some(m) = manifests.get(manifest_at(r.manifest)?) else {
                return stale("they name a manifest that is not there");
            };
            referrers.entry(subject).or_default().push(Descriptor {
                media_type: m.media_type.to_string(),
                digest: m.digest.clone(),
                size: m.data.len() as u64,
                annotations: r
                    .annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<Annotations>(),
                platform: None,
                artifact_type: r.artifact_type.map(str::to_owned),
            });
        }
        let mut repository = Repository {
            name,
            tags,
            unprefixed: HashMap::default(),
            tag_list: Listing::default(),
            manifests,
            blobs,
            referrers,
            unreferenced: described.unreferenced as usize,
        };
        repository.finish_tags(names);
        Ok(repository)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape decodes as it was encoded (postcard is not self-describing: a field that
    /// serde skipped would shift everything after it).
    #[test]
    fn facts_round_trip() {
        let facts = Facts {
            version: VERSION,
            files: vec![FileFacts {
                path: "a/blobs/sha256/x",
                sha256: &[7; 32],
            }],
            repositories: vec![RepositoryFacts {
                name: "a",
                unreferenced: 1,
                manifests: vec![BodyFacts {
                    file: 0,
                    quoted_digest: "\"sha256:x\"",
                    media_type: "m/t",
                }],
                blobs: Vec::new(),
                tags: vec![TagFacts {
                    name: "v1",
                    manifest: 0,
                }],
                referrers: vec![ReferrerFacts {
                    subject: "sha256:y",
                    manifest: 0,
                    artifact_type: None,
                    annotations: vec![("k", "v")],
                }],
            }],
        };
        let bytes = postcard::to_allocvec(&facts).unwrap();
        let back: Facts<'_> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(format!("{back:?}"), format!("{facts:?}"));
    }
}
