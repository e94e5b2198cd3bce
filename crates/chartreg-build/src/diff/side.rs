//! One side of `diff`: what a build serves, read as data from its image, or asked of a server
//! binary the user gives.
//!
//! 1. [`Side::read`]: a file is a server binary (the user's own: the one case where anything
//!    is run, bounded in time, memory and output, as `image` asks a binary, `Listing::ask`);
//!    a folder (`LAYOUT[:TAG]`) an OCI image layout ([`super::layout`]: read as data, bounded,
//!    no link followed); anything else an image reference in a registry
//!    (`REGISTRY/PATH:TAG`, `@DIGEST`, `:TAG@DIGEST`), its image for this machine's platform
//!    copied into a work layout as fetch copies images (`fetch::pull`: bounded, every blob
//!    checked), with, when a signature is asked for, its cosign signature (the
//!    `sha256-<hex>.sig` tag) into another; then read as a layout. Nothing of an image is
//!    written anywhere but those layouts, and nothing of it is run.
//! 2. With `--key` or `--policy` ([`super::signed`]) the image's signature is verified first;
//!    a binary has none, and is refused.
//! 3. The listing the image carries ([`super::carried`]): the server's version, content digest,
//!    and the rows of `ls --json` (repository, tag, kind, digest, pull size, what verified it
//!    at build).

use std::path::{Path, PathBuf};

use chartreg_core::content::Evidence;
use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::UPSTREAM_DIGEST;
use serde::Deserialize;

use super::carried::{self, CarriedError};
use super::layout::{Layout, ReadError};
use super::signed::{Layouts, SignedError, Trust};
use crate::image::BaseSpec;
use crate::image::binary::host_platform;
use crate::image::listing::{Listing, ListingError};

/// Why a side cannot be read. Each names the side as given.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    #[error("{text}: {source}")]
    Pull {
        text: String,
        #[source]
        source: Box<crate::fetch::pull::PullError>,
    },
    #[error(
        "{text}: this machine is no Linux platform an image names, so no image can be pulled for it"
    )]
    NoHostPlatform { text: String },
    #[error(
        "{text}: not executable, so no server binary (give a server binary, an OCI image layout, LAYOUT[:TAG], or an image reference)"
    )]
    NotExecutable { text: String },
    #[error(
        "{text}: a server binary carries no signature to verify: give its image (LAYOUT[:TAG] or REGISTRY/PATH:TAG), or leave out --key and --policy"
    )]
    Unsignable { text: String },
    #[error("{text}: {source}")]
    Io {
        text: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{text}: {source}")]
    Asked {
        text: String,
        #[source]
        source: Box<ListingError>,
    },
    #[error("{text}: {source}")]
    Layout {
        text: String,
        #[source]
        source: Box<ReadError>,
    },
    #[error("{text}: {source}")]
    Carried {
        text: String,
        #[source]
        source: Box<CarriedError>,
    },
    #[error("{text}: {source}")]
    Signed {
        text: String,
        #[source]
        source: Box<SignedError>,
    },
    #[error("{text}: its listing: {reason}")]
    Rows { text: String, reason: String },
}

/// What one side serves.
#[derive(Debug)]
pub struct Side {
    /// As given on the command line.
    pub text: String,
    /// The server's version.
    pub version: String,
    pub content_digest: Digest,
    /// Every tagged version (referrers, which have no tag, are left out).
    pub rows: Vec<Row>,
    /// Who signed its image, when `--key` or `--policy` verified it.
    pub signed_by: Vec<Evidence>,
}

/// A row of `chartreg ls --json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Row {
    pub repository: String,
    pub tag: Option<String>,
    pub digest: String,
    pub size: u64,
    pub kind: String,
    /// What verified it at build: `null` for none; absent for a referrer.
    #[serde(default)]
    pub verified: Option<serde_json::Value>,
}

/// How registries are reached: plain HTTP hosts, a CA file.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    pub plain_http: Vec<String>,
    pub ca_file: Option<PathBuf>,
}

impl Side {
    /// Reads the side `text` names (see the module's documentation), its image verified with
    /// `trust` when given; `work` is a folder for what is pulled from a registry.
    pub fn read(
        text: &str,
        reach: &Reach,
        trust: Option<&Trust>,
        work: &Path,
    ) -> Result<Side, SideError> {
        let path = Path::new(text);
        let (listing, signed_by) = if path.is_file() {
            if trust.is_some() {
                return Err(SideError::Unsignable {
                    text: text.to_owned(),
                });
            }
            let binary = executable(text, path)?;
            let listing = Listing::ask(&binary).map_err(|source| SideError::Asked {
                text: text.to_owned(),
                source: Box::new(source),
            })?;
            (listing, Vec::new())
        } else {
            let local = if path.is_dir() {
                Some(BaseSpec {
                    dir: path.to_owned(),
                    tag: None,
                })
            } else {
                BaseSpec::parse(text).ok().filter(|spec| spec.dir.is_dir())
            };
            let (layouts, tag, note) = match local {
                Some(spec) => {
                    let layout = Layout::open(&spec.dir).map_err(|source| SideError::Layout {
                        text: text.to_owned(),
                        source: Box::new(source),
                    })?;
                    (vec![layout], spec.tag.map(|t| t.as_str().to_owned()), None)
                }
                None => {
                    let pulled = pulled(text, reach, trust.is_some(), work)?;
                    (pulled.layouts, Some(pulled.tag), pulled.note)
                }
            };
            image(text, &layouts, tag.as_deref(), trust, note)?
        };
        let rows = listing
            .rows
            .into_iter()
            .map(serde_json::from_value::<Row>)
            .collect::<Result<Vec<Row>, _>>()
            .map_err(|e| SideError::Rows {
                text: text.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Side {
            text: text.to_owned(),
            version: listing.version,
            content_digest: listing.content_digest,
            rows: rows.into_iter().filter(|r| r.tag.is_some()).collect(),
            signed_by,
        })
    }
}

/// The listing of the image `tag` names in `layouts` (the first holds the image, the others
/// its signature), verified first with `trust` when given.
fn image(
    text: &str,
    layouts: &[Layout],
    tag: Option<&str>,
    trust: Option<&Trust>,
    note: Option<String>,
) -> Result<(Listing, Vec<Evidence>), SideError> {
    let carried = |source| SideError::Carried {
        text: text.to_owned(),
        source: Box::new(source),
    };
    let layout = layouts
        .first()
        .ok_or_else(|| carried(CarriedError::NoImage))?;
    let entry = carried::entry(layout, tag).map_err(carried)?;
    let signed_by = match trust {
        Some(trust) => {
            let named = entry
                .annotations
                .get(chartreg_core::oci::layout::REF_NAME)
                .and_then(|r| chartreg_core::oci::layout::tag_of(r));
            trust
                .check(&Layouts(layouts), text, named.as_deref(), note)
                .map_err(|source| SideError::Signed {
                    text: text.to_owned(),
                    source: Box::new(source),
                })?
        }
        None => Vec::new(),
    };
    let listing = carried::listing(layout, &entry).map_err(carried)?;
    Ok((listing, signed_by))
}

/// An image taken from its registry.
struct Pulled {
    /// The image's layout, then its signature's when one was taken.
    layouts: Vec<Layout>,
    /// The image's tag in its layout.
    tag: String,
    /// Why no signature was taken, when one was asked for and none was.
    note: Option<String>,
}

/// The image `text` names in its registry, this machine's platform of it, copied into a
/// layout in `work`; with `signature`, its cosign signature (if it has one) into another.
fn pulled(text: &str, reach: &Reach, signature: bool, work: &Path) -> Result<Pulled, SideError> {
    let host = host_platform().ok_or_else(|| SideError::NoHostPlatform {
        text: text.to_owned(),
    })?;
    let platform = format!("{}/{}", host.os, host.architecture);
    let pull = |reference: &str, dir: &Path| {
        crate::fetch::pull::pull(
            &crate::fetch::pull::Pull {
                reference,
                platform: &platform,
                plain_http: &reach.plain_http,
                ca_file: reach.ca_file.as_deref(),
            },
            dir,
        )
    };
    let open = |dir: &Path| {
        Layout::open(dir).map_err(|source| SideError::Layout {
            text: text.to_owned(),
            source: Box::new(source),
        })
    };
    let dir = work.join("pulled");
    let tag = pull(text, &dir).map_err(|source| SideError::Pull {
        text: text.to_owned(),
        source: Box::new(source),
    })?;
    let mut layouts = vec![open(&dir)?];
    let mut note = None;
    if signature {
        // What the signature is over: the image, or the index upstream serves when only this
        // platform of it was taken.
        let entry = layouts
            .first()
            .map(|l| carried::entry(l, Some(tag.as_str())))
            .transpose()
            .map_err(|source| SideError::Carried {
                text: text.to_owned(),
                source: Box::new(source),
            })?
            .ok_or_else(|| SideError::Carried {
                text: text.to_owned(),
                source: Box::new(CarriedError::NoImage),
            })?;
        let signed = match entry.annotations.get(UPSTREAM_DIGEST) {
            Some(upstream) => upstream.parse().unwrap_or(entry.digest),
            None => entry.digest,
        };
        let repository = repository_of(text);
        let sig = format!("{repository}:sha256-{}.sig", signed.encoded());
        let sig_dir = work.join("signature");
        match pull(&sig, &sig_dir) {
            Ok(_) => layouts.push(open(&sig_dir)?),
            Err(e) => note = Some(format!("no signature taken from {sig}: {e}")),
        }
    }
    Ok(Pulled {
        layouts,
        tag: tag.as_str().to_owned(),
        note,
    })
}

/// `REGISTRY/PATH` of `REGISTRY/PATH:TAG`, `REGISTRY/PATH@DIGEST` or `REGISTRY/PATH:TAG@DIGEST`.
fn repository_of(text: &str) -> &str {
    let before_digest = text.split_once('@').map_or(text, |(r, _)| r);
    match before_digest.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => repository,
        _ => before_digest,
    }
}

/// The file `path` as a program to run: its absolute path (a bare name is never looked up
/// in PATH), when it is executable.
fn executable(text: &str, path: &Path) -> Result<PathBuf, SideError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |source| SideError::Io {
        text: text.to_owned(),
        source,
    };
    let absolute = path.canonicalize().map_err(io)?;
    let mode = std::fs::metadata(&absolute)
        .map_err(io)?
        .permissions()
        .mode();
    if mode & 0o111 == 0 {
        return Err(SideError::NotExecutable {
            text: text.to_owned(),
        });
    }
    Ok(absolute)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    #[rstest]
    #[case("registry.example/team/chartreg:1.0", "registry.example/team/chartreg")]
    #[case("127.0.0.1:5000/chartreg:1.0", "127.0.0.1:5000/chartreg")]
    #[case("127.0.0.1:5000/chartreg@sha256:ab", "127.0.0.1:5000/chartreg")]
    #[case("127.0.0.1:5000/chartreg:v1@sha256:ab", "127.0.0.1:5000/chartreg")]
    #[case("127.0.0.1:5000/chartreg", "127.0.0.1:5000/chartreg")]
    fn repositories(#[case] text: &str, #[case] repository: &str) {
        assert_eq!(super::repository_of(text), repository);
    }
}
