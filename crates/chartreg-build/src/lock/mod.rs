//! The lock file (`chartreg.lock`): for every chart and image fetched, where it came from,
//! the version or tag it resolved to, the digests of what was taken, and, with `fetch
//! --config`, who signed it (the key or identity the content file's `verify:` policy verified
//! it with). Written sorted, with stable formatting and no timestamps, so that it diffs well in
//! review; holds no credentials.
//!
//! `--locked` compares a fetch with it: a source that now serves other bytes for a locked
//! entry (an upstream re-push), a list that asks for other entries than the lock holds, or an
//! artifact no longer signed by whom the lock records, is an error naming each entry.
//!
//! This module holds the lock's shape and its errors, reads and writes it, and says what
//! changed; `paths` names files relative to the lock; `pinned` checks what pack takes against
//! it, on this module's types and `paths`.

mod paths;
mod pinned;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chartreg_core::content::Evidence;
use chartreg_core::oci::Digest;
use serde::{Deserialize, Serialize};

use crate::pack::LayoutSpecError;

pub use paths::{recorded, resolved};
pub use pinned::{served, served_repository};

/// Changed whenever the lock's shape changes.
pub const VERSION: u32 = 1;

/// Why a lock could not be read, or does not pin what is on disk; each names the lock file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    File(#[from] crate::yaml_file::Error),
    #[error("{}: a lock of version {version}, not {VERSION}", path.display())]
    Version { path: PathBuf, version: u32 },
    #[error(
        "{}: no such lock: run `chartreg-build fetch --helm-charts-file FILE --images-file FILE --lock {}` first",
        path.display(),
        path.display()
    )]
    Missing { path: PathBuf },
    /// A file the lock pins is missing or other than pinned; the remedy depends on whether the
    /// lock names the lists it was made from (`fetch --locked` then reads them).
    #[error(
        "{}: {what} {key}: {why}; run `chartreg-build fetch --locked --lock {}` {}",
        path.display(),
        path.display(),
        if *names_lists { "to take what it pins" } else { "with the lists it was made from (`--helm-charts-file`, `--images-file`) to take what it pins" }
    )]
    Stale {
        path: PathBuf,
        /// `chart` or `image`.
        what: &'static str,
        key: String,
        /// Boxed: errors are rare, and small `Result`s keep the happy path cheap.
        why: Box<Stale>,
        names_lists: bool,
    },
    #[error("{}: `{key}` is not REGISTRY/REPOSITORY:TAG, REGISTRY/REPOSITORY@sha256:HEX or REGISTRY/REPOSITORY:TAG@sha256:HEX (REGISTRY a host with a `.` or a port, or `localhost`)", path.display())]
    ImageKey { path: PathBuf, key: String },
    #[error("{}: `{key}` pins another digest than the {digest} the lock records for it", path.display())]
    KeyDigest {
        path: PathBuf,
        key: String,
        digest: String,
    },
    #[error("{}: layout {layout} holds both {first} and {second}", path.display())]
    LayoutTwice {
        path: PathBuf,
        layout: String,
        first: String,
        second: String,
    },
    #[error("{}: layout {layout}: {source}", path.display())]
    Layout {
        path: PathBuf,
        layout: String,
        source: LayoutSpecError,
    },
}

/// How a pinned file differs from the lock.
#[derive(Debug, thiserror::Error)]
pub enum Stale {
    #[error("{}: {source}", file.display())]
    Unreadable {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", file.display())]
    NotAnIndex {
        file: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} is {actual}, the lock pins sha256:{pinned}", file.display())]
    Package {
        file: PathBuf,
        actual: Digest,
        pinned: String,
    },
    #[error("{} tags it {tagged}, the lock pins {pinned}", layout.display())]
    Tagged {
        layout: PathBuf,
        tagged: Digest,
        pinned: String,
    },
    #[error("{} has no tag {tag}", layout.display())]
    NoTag { layout: PathBuf, tag: String },
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    pub version: u32,
    /// The lists this lock was made from, relative to its folder: `fetch --locked --lock FILE`
    /// reads them when no list is given.
    #[serde(default, skip_serializing_if = "Lists::is_empty")]
    pub lists: Lists,
    /// By the source as the list writes it (see `ChartSource::describe`).
    #[serde(default)]
    pub charts: BTreeMap<String, LockedChart>,
    /// By `registry/repository:tag`.
    #[serde(default)]
    pub images: BTreeMap<String, LockedImage>,
}

/// The list files a lock was made from (see [`recorded`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lists {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_charts_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images_file: Option<String>,
    /// `fetch --with-chart-images`: the values files used to find the charts' images, by
    /// chart name (present, even empty, when the charts' images were fetched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_images: Option<BTreeMap<String, Vec<String>>>,
    /// `fetch --config`: the content file whose `verify:` policy checked what was fetched, so
    /// that `fetch --locked` checks it again with the same policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

impl Lists {
    fn is_empty(&self) -> bool {
        self.helm_charts_file.is_none() && self.images_file.is_none() && self.chart_images.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedChart {
    pub name: String,
    pub version: String,
    /// Where the package was downloaded from.
    pub url: String,
    /// The package's sha256 (hex).
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance_sha256: Option<String>,
    /// For an OCI source: the upstream manifest digest (the served one differs: pack lays the
    /// package out again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// The file written, relative to the lock's folder (`/`-separated; `..` where it lies
    /// outside it).
    pub file: String,
    /// Who signed its `.prov`, when the policy's keyring verified it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<Evidence>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedImage {
    /// The manifest or index digest the tag resolved to.
    pub digest: String,
    /// The platforms taken (empty: a single-platform image).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    /// Signatures, attestations and SBOMs taken with it, by digest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub referrers: Vec<String>,
    /// The layout written, relative to the lock's folder, as `file` is.
    pub layout: String,
    /// The charts (`NAME:VERSION`) that need it, when `fetch --with-chart-images` took it for
    /// them (empty: only the images file asked for it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charts: Vec<String>,
    /// With `--platform`: the index upstream serves, of which `digest` keeps some platforms;
    /// its signatures are over this digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Who signed it (each signature the policy verified, sorted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verified: Vec<Evidence>,
}

impl Lock {
    pub fn new() -> Self {
        Lock {
            version: VERSION,
            ..Lock::default()
        }
    }

    /// The lock at `path`; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<Lock>, Error> {
        let Some(lock): Option<Lock> = crate::yaml_file::read_if_present(path)? else {
            return Ok(None);
        };
        if lock.version != VERSION {
            return Err(Error::Version {
                path: path.to_owned(),
                version: lock.version,
            });
        }
        Ok(Some(lock))
    }

    /// The lock as it is written: a header comment, then sorted YAML.
    pub fn to_text(&self) -> Result<String, serde_yaml_ng::Error> {
        let body = serde_yaml_ng::to_string(self)?;
        Ok(format!(
            "# Written by chartreg-build fetch: what was fetched, pinned by digest. Review changes\n\
             # to it like code; `fetch --locked` refuses anything else.\n{body}"
        ))
    }

    /// What changed from `before` to this lock, a line each.
    pub fn changes(&self, before: &Lock) -> Vec<String> {
        let mut changes = Vec::new();
        diff(&before.charts, &self.charts, "chart", &mut changes, |c| {
            let by = c
                .verified
                .as_ref()
                .map(|e| format!(" verified by {e}"))
                .unwrap_or_default();
            format!("{} {} sha256:{}{by}", c.name, c.version, c.sha256)
        });
        diff(&before.images, &self.images, "image", &mut changes, |i| {
            let by: Vec<String> = i.verified.iter().map(ToString::to_string).collect();
            if by.is_empty() {
                i.digest.clone()
            } else {
                format!("{} verified by {}", i.digest, by.join(", "))
            }
        });
        changes
    }
}

fn diff<T: PartialEq>(
    before: &BTreeMap<String, T>,
    after: &BTreeMap<String, T>,
    what: &str,
    out: &mut Vec<String>,
    show: impl Fn(&T) -> String,
) {
    for (key, value) in after {
        match before.get(key) {
            None => out.push(format!("added {what} {key}: {}", show(value))),
            Some(old) if old != value => {
                out.push(format!(
                    "changed {what} {key}: {} -> {}",
                    show(old),
                    show(value)
                ));
            }
            Some(_) => {}
        }
    }
    for (key, value) in before {
        if !after.contains_key(key) {
            out.push(format!("removed {what} {key}: {}", show(value)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(sha: &str) -> LockedChart {
        LockedChart {
            name: "a".into(),
            version: "1.0.0".into(),
            url: "https://e.test/a-1.0.0.tgz".into(),
            sha256: sha.into(),
            provenance_sha256: None,
            manifest: None,
            file: "a-1.0.0.tgz".into(),
            verified: None,
        }
    }

    #[test]
    fn locks_read_back_and_say_what_changed() {
        let mut lock = Lock::new();
        lock.charts
            .insert("a 1.0.0 from https://e.test".into(), chart("00"));
        let text = lock.to_text().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chartreg.lock");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(Lock::read(&path).unwrap(), Some(lock.clone()));
        assert_eq!(
            lock.to_text().unwrap(),
            text,
            "the same lock, the same bytes"
        );
        let mut after = lock.clone();
        after
            .charts
            .insert("a 1.0.0 from https://e.test".into(), chart("11"));
        assert_eq!(
            after.changes(&lock),
            ["changed chart a 1.0.0 from https://e.test: a 1.0.0 sha256:00 -> a 1.0.0 sha256:11"]
        );
        assert!(Lock::read(&dir.path().join("none")).unwrap().is_none());
    }
}
