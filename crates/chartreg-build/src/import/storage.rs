//! Reading one mindthegap bundle: an uncompressed tar of a CNCF distribution filesystem
//! storage root, streamed once.
//!
//! Blob files (`docker/registry/v2/blobs/sha256/<xx>/<hex>/data`) are written straight into
//! the staging folder, their sha256 checked while they stream (a blob that is not what its
//! path says is an error naming the entry); a blob another bundle already staged is read past.
//! Link files under `docker/registry/v2/repositories/<name>/` become each repository's tags
//! (`_manifests/tags/<tag>/current/link`) and revisions (`_manifests/revisions/sha256/<hex>/
//! link`). Tag history, layer links and uploads are not needed; `charts.yaml` and
//! `images.yaml` (what the bundle was asked for) are accepted and not needed either. Any other
//! file is an error naming it, since a bundle holding something this reader does not know may
//! hold content it would drop.
//!
//! A bundle is upstream's, so: an entry's name must be a plain relative path (no `..`, not
//! absolute), and its kind a file or a folder (links, devices, FIFOs and sparse files are
//! refused by name); blobs are streamed, never held; link files are read to 1 KiB, and
//! `images.yaml` to 5 MiB, as upstream YAML (`crate::yaml`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use chartreg_core::oci::{Digest, DigestError, NameError, RepositoryName};
use chartreg_core::tree::{BlobFile, Side, copy_hashing};

use super::ImportError;
use super::listed::{Listed, Naming};
use crate::pack::imported::MAX_MANIFEST;
use crate::yaml::{self, YamlError};

const ROOT: &str = "docker/registry/v2/";
/// A link file is `sha256:` and 64 hex digits; anything much longer is not one.
const MAX_LINK: u64 = 1024;
/// The most of `images.yaml` read: upstream YAML's bound (a list of image names: far less).
const MAX_LIST: u64 = yaml::MAX_BYTES;

/// Why a bundle as a whole could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleProblem {
    #[error("{0}")]
    Open(io::Error),
    #[error("not a tar archive: {0}")]
    NotTar(io::Error),
    #[error("not a readable tar archive (mindthegap bundles are uncompressed): {0}")]
    Unreadable(io::Error),
    #[error("holds no `{ROOT}` storage: not a mindthegap bundle")]
    NoStorage,
    #[error("repository `{name}`: {source}")]
    RepositoryName { name: String, source: NameError },
}

/// Why one entry of a bundle is not part of it, or could not be taken (shown after the
/// entry's name).
#[derive(Debug, thiserror::Error)]
pub enum EntryProblem {
    #[error("is not a plain relative path")]
    NotPlain,
    #[error("is not part of a mindthegap bundle (`{ROOT}...`, charts.yaml, images.yaml)")]
    NotInBundle,
    #[error("is not stored under {0}")]
    NotUnder(String),
    #[error("is not in a repository's `_manifests`, `_layers` or `_uploads`")]
    NotInRepository,
    #[error("names no repository")]
    NoRepository,
    #[error("is not a storage file this reader knows")]
    Unknown,
    #[error("names no sha256 digest: {0}")]
    NoDigest(DigestError),
    #[error("is a {0:?} entry; a bundle holds only files and folders")]
    Kind(tar::EntryType),
    #[error("is not a link file: {0}")]
    NotLinkText(io::Error),
    #[error("is not a link file (`sha256:<hex>`): {0}")]
    NotLink(DigestError),
    #[error("links {linked}, not the {digest} its path names")]
    LinksOther {
        linked: Box<Digest>,
        digest: Box<Digest>,
    },
    #[error("{0}")]
    Read(io::Error),
    #[error("is not mindthegap's images file: {0}")]
    List(YamlError),
    #[error("is more than {} MiB, more than an images file holds", MAX_LIST >> 20)]
    ListTooLarge,
    #[error("{}: {source}", path.display())]
    Stage { path: PathBuf, source: io::Error },
    #[error("has digest {actual}, not the {expected} it is stored under")]
    Digest {
        actual: Box<Digest>,
        expected: Box<Digest>,
    },
}

/// One repository of a bundle, as its storage names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredRepository {
    /// Tag -> the manifest it names now.
    pub tags: BTreeMap<String, Digest>,
    /// Every manifest stored in the repository (tagged or not).
    pub revisions: BTreeSet<Digest>,
}

/// What one bundle holds: its repositories (blobs are in the [`Staging`]).
#[derive(Debug, Clone)]
pub struct Bundle {
    pub path: PathBuf,
    /// By the name each is served as: an image in its registry's namespace when the bundle's
    /// `images.yaml` names the registry (module `listed`), else its stored path.
    pub repositories: BTreeMap<RepositoryName, StoredRepository>,
    /// Things the user should know (a path listed under several registries).
    pub notes: Vec<String>,
}

/// The folder blobs are streamed into, shared by every bundle of a run.
#[derive(Debug)]
pub struct Staging {
    pub dir: PathBuf,
    pub blobs: BTreeMap<Digest, BlobFile>,
}

impl Staging {
    pub fn new(dir: PathBuf) -> io::Result<Staging> {
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir)?;
        Ok(Staging {
            dir,
            blobs: BTreeMap::new(),
        })
    }

    /// A staged manifest's bytes; `None` when it is not staged, or larger than a manifest
    /// may be (then it is none).
    pub fn read(&self, digest: &Digest) -> io::Result<Option<Vec<u8>>> {
        match self.blobs.get(digest) {
            Some(file) if file.size <= MAX_MANIFEST => {
                let mut data = Vec::new();
                fs::File::open(&file.path)?
                    .take(MAX_MANIFEST)
                    .read_to_end(&mut data)?;
                Ok(Some(data))
            }
            _ => Ok(None),
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Nothing is left to report to: a folder that stays is removed by the next import.
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// What one tar entry is.
#[derive(Debug, PartialEq, Eq)]
enum Part {
    Blob(Digest),
    Tag {
        repository: String,
        tag: String,
    },
    Revision {
        repository: String,
        digest: Digest,
    },
    /// The images file the bundle was made from (`images.yaml`): which registry each image
    /// path came from (see `listed`).
    ImagesList,
    /// Storage bookkeeping a layout does not need (tag history, layer links, uploads, the
    /// bundle's charts file, folders).
    Skipped,
}

/// Reads the bundle at `path` once, staging its blobs.
pub fn read(path: &Path, staging: &mut Staging) -> Result<Bundle, ImportError> {
    let bundle_error = |why: BundleProblem| ImportError::Bundle {
        bundle: path.to_owned(),
        why,
    };
    let entry_error = |entry: &str, why: EntryProblem| ImportError::Entry {
        bundle: path.to_owned(),
        entry: entry.to_owned(),
        why: Box::new(why),
    };
    let file = fs::File::open(path).map_err(|e| bundle_error(BundleProblem::Open(e)))?;
    let mut archive = tar::Archive::new(io::BufReader::new(file));
    let entries = archive
        .entries()
        .map_err(|e| bundle_error(BundleProblem::NotTar(e)))?;
    let mut found: BTreeMap<String, StoredRepository> = BTreeMap::new();
    let mut listed = Listed::default();
    let mut saw_storage = false;
    for entry in entries {
        let mut entry = entry.map_err(|e| bundle_error(BundleProblem::Unreadable(e)))?;
        let raw = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw).into_owned();
        let kind = entry.header().entry_type();
        let part = if kind.is_dir() {
            Part::Skipped
        } else if kind.is_file() {
            classify(&name).map_err(|why| entry_error(&name, why))?
        } else if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            Part::Skipped
        } else {
            return Err(entry_error(&name, EntryProblem::Kind(kind)));
        };
        saw_storage |= !matches!(part, Part::Skipped | Part::ImagesList);
        match part {
            Part::Skipped => {}
            Part::ImagesList => {
                let mut data = Vec::new();
                (&mut entry)
                    .take(MAX_LIST + 1)
                    .read_to_end(&mut data)
                    .map_err(|e| entry_error(&name, EntryProblem::Read(e)))?;
                if data.len() as u64 > MAX_LIST {
                    return Err(entry_error(&name, EntryProblem::ListTooLarge));
                }
                listed =
                    Listed::parse(&data).map_err(|e| entry_error(&name, EntryProblem::List(e)))?;
            }
            Part::Blob(digest) => {
                if staging.blobs.contains_key(&digest) {
                    io::copy(&mut entry, &mut io::sink())
                        .map_err(|e| entry_error(&name, EntryProblem::Read(e)))?;
                    continue;
                }
                let blob = stage(&mut entry, &digest, &staging.dir)
                    .map_err(|why| entry_error(&name, why))?;
                staging.blobs.insert(digest, blob);
            }
            Part::Tag { repository, tag } => {
                let digest = link(&mut entry).map_err(|why| entry_error(&name, why))?;
                found
                    .entry(repository)
                    .or_default()
                    .tags
                    .insert(tag, digest);
            }
            Part::Revision { repository, digest } => {
                let linked = link(&mut entry).map_err(|why| entry_error(&name, why))?;
                if linked != digest {
                    return Err(entry_error(
                        &name,
                        EntryProblem::LinksOther {
                            linked: Box::new(linked),
                            digest: Box::new(digest),
                        },
                    ));
                }
                found
                    .entry(repository)
                    .or_default()
                    .revisions
                    .insert(digest);
            }
        }
    }
    if !saw_storage {
        return Err(bundle_error(BundleProblem::NoStorage));
    }
    let mut repositories = BTreeMap::new();
    let mut notes = Vec::new();
    for (stored, repository) in found {
        let name = match listed.naming(&stored) {
            Naming::Namespaced(name) => name,
            Naming::Unlisted => stored,
            Naming::Several(names) => {
                notes.push(format!(
                    "{}: images.yaml lists {stored} under several registries ({}); it is served as {stored}, by its path",
                    path.display(),
                    names.join(", ")
                ));
                stored
            }
        };
        let parsed = name.parse::<RepositoryName>().map_err(|source| {
            bundle_error(BundleProblem::RepositoryName {
                name: name.clone(),
                source,
            })
        })?;
        repositories.insert(parsed, repository);
    }
    Ok(Bundle {
        path: path.to_owned(),
        repositories,
        notes,
    })
}

/// What the tar entry `name` is; an error says why it is not part of a bundle.
fn classify(name: &str) -> Result<Part, EntryProblem> {
    let clean = name.strip_prefix("./").unwrap_or(name);
    if Path::new(clean)
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(EntryProblem::NotPlain);
    }
    if clean == "charts.yaml" {
        return Ok(Part::Skipped);
    }
    if clean == "images.yaml" {
        return Ok(Part::ImagesList);
    }
    let Some(rest) = clean.strip_prefix(ROOT) else {
        return Err(EntryProblem::NotInBundle);
    };
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["blobs", "sha256", prefix, hex, "data"] => {
            let digest = sha256_digest(hex)?;
            if !hex.starts_with(prefix) || prefix.len() != 2 {
                return Err(EntryProblem::NotUnder(hex[..2].to_owned()));
            }
            Ok(Part::Blob(digest))
        }
        ["repositories", rest @ ..] => {
            let Some(at) = rest.iter().position(|p| p.starts_with('_')) else {
                return Err(EntryProblem::NotInRepository);
            };
            let (names, tail) = rest.split_at(at);
            let repository = names.join("/");
            if repository.is_empty() {
                return Err(EntryProblem::NoRepository);
            }
            match tail {
                ["_manifests", "tags", tag, "current", "link"] => Ok(Part::Tag {
                    repository,
                    tag: (*tag).to_owned(),
                }),
                ["_manifests", "tags", _, "index", "sha256", _, "link"] => Ok(Part::Skipped),
                ["_manifests", "revisions", "sha256", hex, "link"] => Ok(Part::Revision {
                    repository,
                    digest: sha256_digest(hex)?,
                }),
                ["_layers", "sha256", _, "link"] => Ok(Part::Skipped),
                ["_uploads", ..] => Ok(Part::Skipped),
                _ => Err(EntryProblem::Unknown),
            }
        }
        _ => Err(EntryProblem::Unknown),
    }
}

fn sha256_digest(hex: &str) -> Result<Digest, EntryProblem> {
    format!("sha256:{hex}")
        .parse::<Digest>()
        .map_err(EntryProblem::NoDigest)
}

/// A link file's digest (exactly `sha256:<hex>`).
fn link(entry: &mut impl Read) -> Result<Digest, EntryProblem> {
    let mut text = String::new();
    entry
        .take(MAX_LINK)
        .read_to_string(&mut text)
        .map_err(EntryProblem::NotLinkText)?;
    text.trim_end()
        .parse::<Digest>()
        .map_err(EntryProblem::NotLink)
}

/// Streams a blob into the staging folder, checking that its bytes have its digest.
fn stage(entry: &mut impl Read, digest: &Digest, dir: &Path) -> Result<BlobFile, EntryProblem> {
    let path = dir.join(digest.encoded());
    let written = |source: io::Error| EntryProblem::Stage {
        path: path.clone(),
        source,
    };
    let mut sink = io::BufWriter::new(fs::File::create(&path).map_err(written)?);
    let (size, sha256) = copy_hashing(entry, &mut sink).map_err(|(side, e)| match side {
        Side::Reading => EntryProblem::Read(e),
        Side::Writing => written(e),
    })?;
    sink.flush().map_err(written)?;
    let actual = Digest::from_sha256(sha256);
    if actual != *digest {
        // The refusal is what matters; a staged file left behind goes with the staging folder.
        let _ = fs::remove_file(&path);
        return Err(EntryProblem::Digest {
            actual: Box::new(actual),
            expected: Box::new(digest.clone()),
        });
    }
    Ok(BlobFile {
        path,
        size,
        digest: actual,
    })
}

#[cfg(test)]
mod tests;
