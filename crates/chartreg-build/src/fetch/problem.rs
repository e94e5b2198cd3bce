//! Why a fetch failed: a [`Problem`] with one entry (retried while it is a transient
//! [`Failure`]), each failed entry named ([`Failed`], [`Entry`]), entries only one of the lists
//! and the lock holds ([`Unlocked`]), and the [`FetchError`] that gathers them.

use std::path::PathBuf;

use super::{lists, versions};

/// What went wrong with one entry.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Problem {
    #[error("not found")]
    NotFound,
    #[error("the repository has no such chart")]
    NoSuchChart,
    #[error("the source has no version {asked}{}", versions::listed(nearest))]
    NoSuchVersion { asked: String, nearest: Vec<String> },
    #[error("the source has no tag {asked}{}", versions::listed(nearest))]
    NoSuchTag { asked: String, nearest: Vec<String> },
    #[error("no platform {0} in the index")]
    NoSuchPlatform(String),
    #[error("authentication refused (HTTP {0})")]
    AuthRefused(u16),
    #[error("authentication refused: {0}")]
    AuthRefusedBecause(String),
    #[error("digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch { expected: String, actual: String },
    #[error(
        "TLS failure: {0} (a private CA is trusted with --ca-file FILE; `tlsVerify: false` on the list's entry skips the check)"
    )]
    Tls(String),
    #[error("network failure: {0}")]
    Network(String),
    #[error("HTTP {0}: {1}")]
    Http(u16, String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Io(String),
    /// In an `Arc`: a `Problem` is `Clone`, and serde_json's error is not.
    #[error(transparent)]
    Unwritable(std::sync::Arc<chartreg_core::oci::gojson::Unwritable>),
    #[error("the lock pins {locked}, the source now serves {now} (re-pushed upstream?)")]
    Repushed { locked: String, now: String },
    /// The chart's classic repository has no index: its failure is reported once, for the
    /// repository.
    #[error("the repository's index could not be read")]
    IndexFailed,
    #[error("its referrers are now {}, the lock pins {}", now.join(", "), locked.join(", "))]
    ReferrersChanged {
        now: Vec<String>,
        locked: Vec<String>,
    },
    /// The policy (`fetch --config`) refuses it: `line` names the artifact, its digest, the
    /// rule and why, as pack says it.
    #[error(
        "refused by {} verify: {line}{}",
        config.display(),
        locked.as_ref().map(|l| format!(" (the lock records it verified by {l})")).unwrap_or_default()
    )]
    Refused {
        config: PathBuf,
        line: String,
        /// With `--locked`: who the lock records signed it.
        locked: Option<String>,
    },
    /// With `--locked`: the lock records other signers than the ones found now.
    #[error("the lock records it verified by {locked}; now {now}")]
    NotAsLocked { locked: String, now: String },
}

impl From<chartreg_core::oci::gojson::Unwritable> for Problem {
    fn from(e: chartreg_core::oci::gojson::Unwritable) -> Self {
        Problem::Unwritable(std::sync::Arc::new(e))
    }
}

/// A failure that may be worth trying again, or not.
#[derive(Debug)]
pub enum Failure {
    Transient(Problem),
    Final(Problem),
}

/// Why a fetch failed: a list or the lock that could not be taken, or every entry that
/// failed, each named.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("cannot start: {0}")]
    Start(std::io::Error),
    #[error(transparent)]
    Lists(#[from] lists::Error),
    /// Boxed: errors are rare, and small `Result`s keep the happy path cheap.
    #[error(transparent)]
    Lock(Box<crate::lock::Error>),
    #[error("{}: --locked, but there is no lock: run fetch without --locked first", .0.display())]
    NoLock(PathBuf),
    #[error("{}: {source}", path.display())]
    LockText {
        path: PathBuf,
        source: serde_yaml_ng::Error,
    },
    #[error("{}: {source}", path.display())]
    WriteLock {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Entries that failed, sorted by how they read.
    #[error("{}", lines(.0))]
    Entries(Vec<Failed>),
    /// `--with-chart-images`: the charts' images could not be found (boxed: rare and large).
    #[error("--with-chart-images: {0}")]
    ChartImages(Box<crate::chart_images::Error>),
    /// With `--locked`: entries the lists and the lock do not both hold.
    #[error("{}\n(--locked: run fetch without --locked to update the lock)", lines(.0))]
    Unlocked(Vec<Unlocked>),
}

impl From<crate::lock::Error> for FetchError {
    fn from(e: crate::lock::Error) -> Self {
        FetchError::Lock(Box::new(e))
    }
}

fn lines(items: &[impl std::fmt::Display]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// What an entry of the lists or the lock is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A classic Helm repository, by its name in the list, and its URL.
    Repository { name: String, url: String },
    /// A chart, by its lock key.
    Chart(String),
    /// An image, `registry/repository:tag`.
    Image(String),
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Repository { name, url } => write!(f, "repository {name} ({url})"),
            Entry::Chart(key) => write!(f, "chart {key}"),
            Entry::Image(key) => write!(f, "image {key}"),
        }
    }
}

/// One entry that failed, and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{entry}: {problem}")]
pub struct Failed {
    pub entry: Entry,
    pub problem: Problem,
}

/// An entry only one of the lists and the lock holds.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unlocked {
    #[error("{0}: in the list but not in the lock")]
    NotLocked(Entry),
    #[error("{0}: in the lock but not in the list")]
    NotListed(Entry),
    #[error("{0}: the charts need it, but the lock does not pin it")]
    ChartsNeed(Entry),
    #[error("{0}: in the lock as an image the charts need, but none does now")]
    ChartsNoLongerNeed(Entry),
}
