//! Facts: a [`Description`] written down, which a binary is built with and its
//! [`Registry`](super::Registry) is made from at start-up, without reading any JSON or
//! checking anything twice.
//!
//! 1. [`write`]: the build describes the content and encodes the description as [`Facts`], a
//!    serde struct, with postcard. Facts name bodies, they never copy them: each manifest and
//!    blob body is one of the files, by its number in path order. Content that cannot be served
//!    is written down too, as the file and the problem (`Found::Refused`).
//! 2. `read` (module `read`): start-up decodes them without copies (their strings borrow the
//!    facts' bytes, and what the registry keeps of them are slices of those bytes), checks that
//!    they describe exactly the files the binary holds, and builds the registry, or refuses.
//! 3. `diff` (module `diff`): `chartreg verify` describes the content again and names where the
//!    facts it was built with differ from those of that description.

mod diff;
mod read;

use serde::{Deserialize, Serialize};

use super::description::{Description, RepositoryDescription};
use crate::oci::Digest;

pub(super) use read::read;
pub use read::{Stale, Unservable};

/// Changed whenever [`Facts`] changes shape: facts of another version are stale, not misread.
const VERSION: u32 = 4;

/// Everything start-up needs to know of the content.
#[derive(Debug, Serialize, Deserialize)]
struct Facts<'a> {
    version: u32,
    /// Every file, in path order.
    #[serde(borrow)]
    files: Vec<FileFacts<'a>>,
    #[serde(borrow)]
    found: Found<'a>,
}

#[derive(Debug, Serialize, Deserialize)]
struct FileFacts<'a> {
    path: &'a str,
    /// 32 bytes, borrowed (as an array, postcard would decode it a byte at a time).
    #[serde(with = "serde_bytes")]
    sha256: &'a [u8],
}

/// What describing the content found.
#[derive(Debug, Serialize, Deserialize)]
enum Found<'a> {
    /// Its repositories, in name order.
    Served(#[serde(borrow)] Vec<RepositoryFacts<'a>>),
    /// It cannot be served: the file, and what is wrong with it.
    Refused { path: &'a str, problem: &'a str },
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
    /// By subject, then by digest.
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

/// Why a description cannot be written down.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    #[error("the content has {count} {what}, more than the facts can number")]
    TooMany { what: &'static str, count: usize },
    #[error("the facts cannot be encoded: {0}")]
    Encode(postcard::Error),
}

/// `n` as a number the facts hold.
fn number(n: usize, what: &'static str, count: usize) -> Result<u32, FactsError> {
    u32::try_from(n).map_err(|_| FactsError::TooMany { what, count })
}

impl Description {
    /// The facts of this description, which a binary is built with and its registry made from
    /// (postcard-encoded; see the module's documentation).
    pub fn facts(&self) -> Result<Vec<u8>, FactsError> {
        write(self)
    }

    /// Where `facts` (a binary's) differ from the facts of this description, each difference
    /// named (repository, tag, manifest, blob, file): none when they are its facts.
    pub fn differences(&self, facts: &[u8]) -> Result<Vec<String>, FactsError> {
        Ok(diff::differences(facts, &self.facts()?))
    }
}

/// The facts of `description`.
fn write(description: &Description) -> Result<Vec<u8>, FactsError> {
    let files = description
        .files
        .iter()
        .map(|f| FileFacts {
            path: &f.path,
            sha256: &f.sha256,
        })
        .collect();
    // The strings the facts hold that the description does not: quoted digests and the
    // problem's text.
    let quoted: Vec<Quoted>;
    let problem: String;
    let found = match &description.found {
        Ok(repositories) => {
            quoted = repositories.iter().map(Quoted::of).collect();
            let described = repositories
                .iter()
                .zip(&quoted)
                .map(|(r, q)| repository_facts(r, q, description.files.len()))
                .collect::<Result<_, _>>()?;
            Found::Served(described)
        }
        Err(refused) => {
            problem = refused.problem.to_string();
            Found::Refused {
                path: &refused.path,
                problem: &problem,
            }
        }
    };
    let facts = Facts {
        version: VERSION,
        files,
        found,
    };
    postcard::to_allocvec(&facts).map_err(FactsError::Encode)
}

/// A repository's digests in double quotes, as the facts hold them.
struct Quoted {
    manifests: Vec<String>,
    blobs: Vec<String>,
}

impl Quoted {
    fn of(repository: &RepositoryDescription) -> Self {
        let quote = |d: &Digest| format!("\"{d}\"");
        Quoted {
            manifests: repository
                .manifests
                .iter()
                .map(|m| quote(&m.digest))
                .collect(),
            blobs: repository.blobs.iter().map(|b| quote(&b.digest)).collect(),
        }
    }
}

fn repository_facts<'a>(
    repository: &'a RepositoryDescription,
    quoted: &'a Quoted,
    files: usize,
) -> Result<RepositoryFacts<'a>, FactsError> {
    let manifests = repository.manifests.len();
    let body = |file: usize, quoted_digest: &'a str, media_type: &'a str| {
        Ok(BodyFacts {
            file: number(file, "files", files)?,
            quoted_digest,
            media_type,
        })
    };
    Ok(RepositoryFacts {
        name: repository.name.as_str(),
        unreferenced: number(repository.unreferenced, "blobs", repository.unreferenced)?,
        manifests: repository
            .manifests
            .iter()
            .zip(&quoted.manifests)
            .map(|(m, q)| body(m.file, q, &m.media_type))
            .collect::<Result<_, _>>()?,
        blobs: repository
            .blobs
            .iter()
            .zip(&quoted.blobs)
            .map(|(b, q)| body(b.file, q, ""))
            .collect::<Result<_, _>>()?,
        tags: repository
            .tags
            .iter()
            .map(|(name, manifest)| {
                Ok(TagFacts {
                    name,
                    manifest: number(*manifest, "manifests", manifests)?,
                })
            })
            .collect::<Result<_, _>>()?,
        referrers: repository
            .referrers
            .iter()
            .map(|r| {
                Ok(ReferrerFacts {
                    subject: r.subject.as_str(),
                    manifest: number(r.manifest, "manifests", manifests)?,
                    artifact_type: r.artifact_type.as_deref(),
                    annotations: r
                        .annotations
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect(),
                })
            })
            .collect::<Result<_, _>>()?,
    })
}

/// The facts in `bytes`, of this version.
fn decode(bytes: &[u8]) -> Result<Facts<'_>, Stale> {
    if bytes.is_empty() {
        return Err(Stale::None);
    }
    let facts: Facts<'_> = postcard::from_bytes(bytes).map_err(Stale::Unreadable)?;
    if facts.version != VERSION {
        return Err(Stale::Version(facts.version));
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape decodes as it was encoded (postcard is not self-describing: a field that
    /// serde skipped would shift everything after it).
    #[test]
    fn facts_round_trip() {
        let served = Facts {
            version: VERSION,
            files: vec![FileFacts {
                path: "a/blobs/sha256/x",
                sha256: &[7; 32],
            }],
            found: Found::Served(vec![RepositoryFacts {
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
            }]),
        };
        let refused = Facts {
            version: VERSION,
            files: Vec::new(),
            found: Found::Refused {
                path: "a/index.json",
                problem: "invalid JSON",
            },
        };
        for facts in [served, refused] {
            let bytes = postcard::to_allocvec(&facts).unwrap();
            let back = decode(&bytes).unwrap();
            assert_eq!(format!("{back:?}"), format!("{facts:?}"));
        }
    }
}
