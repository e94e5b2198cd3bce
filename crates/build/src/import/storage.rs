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

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use chartreg_core::oci::{Digest, RepositoryName};
use chartreg_core::tree::{BlobFile, Side, copy_hashing};

use super::ImportError;

const ROOT: &str = "docker/registry/v2/";
/// A link file is `sha256:` and 64 hex digits; anything much longer is not one.
const MAX_LINK: u64 = 1024;

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
    pub repositories: BTreeMap<RepositoryName, StoredRepository>,
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

    /// A blob's bytes (manifests and configs: small).
    pub fn read(&self, digest: &Digest) -> Option<Vec<u8>> {
        fs::read(&self.blobs.get(digest)?.path).ok()
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
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
    /// Storage bookkeeping a layout does not need (tag history, layer links, uploads, the
    /// bundle's request files, folders).
    Skipped,
}

/// Reads the bundle at `path` once, staging its blobs.
pub fn read(path: &Path, staging: &mut Staging) -> Result<Bundle, ImportError> {
    let bundle_error = |entry: &str, why: String| ImportError::Entry {
        bundle: path.to_owned(),
        entry: entry.to_owned(),
        why,
    };
    let file = fs::File::open(path).map_err(|e| ImportError::Bundle {
        bundle: path.to_owned(),
        why: e.to_string(),
    })?;
    let mut archive = tar::Archive::new(io::BufReader::new(file));
    let entries = archive.entries().map_err(|e| ImportError::Bundle {
        bundle: path.to_owned(),
        why: format!("not a tar archive: {e}"),
    })?;
    let mut found: BTreeMap<String, StoredRepository> = BTreeMap::new();
    let mut saw_storage = false;
    for entry in entries {
        let mut entry = entry.map_err(|e| ImportError::Bundle {
            bundle: path.to_owned(),
            why: format!("not a readable tar archive (mindthegap bundles are uncompressed): {e}"),
        })?;
        let raw = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw).into_owned();
        let kind = entry.header().entry_type();
        let part = if kind.is_dir() {
            Part::Skipped
        } else if kind.is_file() {
            classify(&name).map_err(|why| bundle_error(&name, why))?
        } else if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            Part::Skipped
        } else {
            return Err(bundle_error(
                &name,
                format!("is a {kind:?} entry; a bundle holds only files and folders"),
            ));
        };
        saw_storage |= part != Part::Skipped;
        match part {
            Part::Skipped => {}
            Part::Blob(digest) => {
                if staging.blobs.contains_key(&digest) {
                    io::copy(&mut entry, &mut io::sink())
                        .map_err(|e| bundle_error(&name, e.to_string()))?;
                    continue;
                }
                let blob = stage(&mut entry, &digest, &staging.dir)
                    .map_err(|why| bundle_error(&name, why))?;
                staging.blobs.insert(digest, blob);
            }
            Part::Tag { repository, tag } => {
                let digest = link(&mut entry).map_err(|why| bundle_error(&name, why))?;
                found
                    .entry(repository)
                    .or_default()
                    .tags
                    .insert(tag, digest);
            }
            Part::Revision { repository, digest } => {
                let linked = link(&mut entry).map_err(|why| bundle_error(&name, why))?;
                if linked != digest {
                    return Err(bundle_error(
                        &name,
                        format!("links {linked}, not the {digest} its path names"),
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
        return Err(ImportError::Bundle {
            bundle: path.to_owned(),
            why: format!("holds no `{ROOT}` storage: not a mindthegap bundle"),
        });
    }
    let mut repositories = BTreeMap::new();
    for (name, repository) in found {
        let parsed = name
            .parse::<RepositoryName>()
            .map_err(|e| ImportError::Bundle {
                bundle: path.to_owned(),
                why: format!("repository `{name}`: {e}"),
            })?;
        repositories.insert(parsed, repository);
    }
    Ok(Bundle {
        path: path.to_owned(),
        repositories,
    })
}

/// What the tar entry `name` is; an error says why it is not part of a bundle.
fn classify(name: &str) -> Result<Part, String> {
    let clean = name.strip_prefix("./").unwrap_or(name);
    if Path::new(clean)
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err("is not a plain relative path".into());
    }
    if matches!(clean, "charts.yaml" | "images.yaml") {
        return Ok(Part::Skipped);
    }
    let Some(rest) = clean.strip_prefix(ROOT) else {
        return Err(format!(
            "is not part of a mindthegap bundle (`{ROOT}...`, charts.yaml, images.yaml)"
        ));
    };
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["blobs", "sha256", prefix, hex, "data"] => {
            let digest = sha256_digest(hex)?;
            if !hex.starts_with(prefix) || prefix.len() != 2 {
                return Err(format!("is not stored under {}", &hex[..2]));
            }
            Ok(Part::Blob(digest))
        }
        ["repositories", rest @ ..] => {
            let Some(at) = rest.iter().position(|p| p.starts_with('_')) else {
                return Err(
                    "is not in a repository's `_manifests`, `_layers` or `_uploads`".into(),
                );
            };
            let repository = rest[..at].join("/");
            if repository.is_empty() {
                return Err("names no repository".into());
            }
            match &rest[at..] {
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
                _ => Err("is not a storage file this reader knows".into()),
            }
        }
        _ => Err("is not a storage file this reader knows".into()),
    }
}

fn sha256_digest(hex: &str) -> Result<Digest, String> {
    format!("sha256:{hex}")
        .parse::<Digest>()
        .map_err(|e| format!("names no sha256 digest: {e}"))
}

/// A link file's digest (exactly `sha256:<hex>`).
fn link(entry: &mut impl Read) -> Result<Digest, String> {
    let mut text = String::new();
    entry
        .take(MAX_LINK)
        .read_to_string(&mut text)
        .map_err(|e| format!("is not a link file: {e}"))?;
    text.trim_end()
        .parse::<Digest>()
        .map_err(|e| format!("is not a link file (`sha256:<hex>`): {e}"))
}

/// Streams a blob into the staging folder, checking that its bytes have its digest.
fn stage(entry: &mut impl Read, digest: &Digest, dir: &Path) -> Result<BlobFile, String> {
    let path = dir.join(digest.encoded());
    let written = |e: io::Error| format!("{}: {e}", path.display());
    let mut sink = io::BufWriter::new(fs::File::create(&path).map_err(written)?);
    let (size, sha256) = copy_hashing(entry, &mut sink).map_err(|(side, e)| match side {
        Side::Reading => e.to_string(),
        Side::Writing => written(e),
    })?;
    sink.flush().map_err(written)?;
    let actual = Digest::from_sha256(sha256);
    if actual != *digest {
        let _ = fs::remove_file(&path);
        return Err(format!(
            "has digest {actual}, not the {digest} it is stored under"
        ));
    }
    Ok(BlobFile {
        path,
        size,
        digest: actual,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const HEX: &str = "0b9c4c34b963724ec546df5c5232aac2809aedb11fa0bbb025ddd1f958b3075d";

    fn digest() -> Digest {
        format!("sha256:{HEX}").parse().unwrap()
    }

    #[rstest]
    #[case::blob(format!("docker/registry/v2/blobs/sha256/0b/{HEX}/data"), Part::Blob(digest()))]
    #[case::dot_slash(format!("./docker/registry/v2/blobs/sha256/0b/{HEX}/data"), Part::Blob(digest()))]
    #[case::tag(
        "docker/registry/v2/repositories/charts/podinfo/_manifests/tags/6.2.0/current/link".into(),
        Part::Tag { repository: "charts/podinfo".into(), tag: "6.2.0".into() }
    )]
    #[case::revision(
        format!("docker/registry/v2/repositories/a/_manifests/revisions/sha256/{HEX}/link"),
        Part::Revision { repository: "a".into(), digest: digest() }
    )]
    #[case::history(
        format!("docker/registry/v2/repositories/a/_manifests/tags/1/index/sha256/{HEX}/link"),
        Part::Skipped
    )]
    #[case::layer(format!("docker/registry/v2/repositories/a/b/_layers/sha256/{HEX}/link"), Part::Skipped)]
    #[case::upload("docker/registry/v2/repositories/a/_uploads/x/data".into(), Part::Skipped)]
    #[case::charts("charts.yaml".into(), Part::Skipped)]
    #[case::images("./images.yaml".into(), Part::Skipped)]
    fn storage_files_are_classified(#[case] name: String, #[case] want: Part) {
        assert_eq!(classify(&name), Ok(want));
    }

    #[rstest]
    #[case::outside("README.md", "not part of a mindthegap bundle")]
    #[case::traversal("docker/registry/v2/../../etc/passwd", "plain relative path")]
    #[case::absolute("/docker/registry/v2/blobs", "plain relative path")]
    #[case::bad_hex("docker/registry/v2/blobs/sha256/zz/zz/data", "names no sha256 digest")]
    #[case::wrong_folder(
        "docker/registry/v2/blobs/sha256/ff/0b9c4c34b963724ec546df5c5232aac2809aedb11fa0bbb025ddd1f958b3075d/data",
        "not stored under 0b"
    )]
    #[case::no_repository(
        "docker/registry/v2/repositories/_manifests/tags/1/current/link",
        "names no repository"
    )]
    #[case::unknown("docker/registry/v2/repositories/a/_manifests/other", "reader knows")]
    #[case::not_in_repo("docker/registry/v2/repositories/a/b/c", "`_manifests`")]
    fn other_files_are_refused_saying_why(#[case] name: &str, #[case] why: &str) {
        let e = classify(name).unwrap_err();
        assert!(e.contains(why), "{name}: {e}");
    }

    #[test]
    fn a_link_is_a_digest_and_nothing_else() {
        assert_eq!(link(&mut format!("sha256:{HEX}").as_bytes()), Ok(digest()));
        assert!(link(&mut "sha256:abc".as_bytes()).is_err());
        assert!(link(&mut "not a link".as_bytes()).is_err());
    }
}
