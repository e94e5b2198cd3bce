//! Why a fetch failed: a [`Problem`] with one entry (retried while it is a transient
//! [`Failure`]), each failed entry named ([`Failed`], [`Entry`]), entries only one of the lists
//! and the lock holds ([`Unlocked`]), and the [`FetchError`] that gathers them. An entry's name
//! is shown on its one line ([`one_line`]): names come from the lists and from upstream.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use chartreg_core::shown::escaped;

use super::transport::Bounded;
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
    /// An image a chart needs whose reference fetch cannot take (in an `Arc`: a `Problem` is
    /// `Clone`, and the reference's error is not).
    #[error("it needs the image {image}, which fetch cannot take: {source}")]
    ImageReference {
        image: String,
        source: Arc<crate::pin::PinError>,
    },
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
    /// A download past its bound (`from`: the URL or digest).
    #[error("{from}: {}", bound.exceeded())]
    TooLarge { from: String, bound: Bounded },
    /// A classic repository's index with more nodes than the YAML parser may hold.
    #[error(
        "{url}: {nodes} lines and items, more than the {} fetch reads of an index (the YAML \
         parser holds each in memory)",
        super::helm_repo::INDEX_NODES
    )]
    IndexTooLarge { url: String, nodes: usize },
    /// A classic repository's index whose YAML is refused before it is parsed (in an `Arc`: the
    /// error is not `Clone`).
    #[error("{url}: {source}")]
    IndexYaml {
        url: String,
        source: Arc<crate::yaml::YamlError>,
    },
    /// A classic repository's index the YAML parser did not read in time.
    #[error(
        "{url}: not read within {}, the most fetch gives the YAML parser for an index",
        humantime::format_duration(*within)
    )]
    IndexTooSlow {
        url: String,
        within: std::time::Duration,
    },
    /// The thread that reads an index could not be started (in an `Arc`: `std::io::Error` is
    /// not `Clone`).
    #[error("cannot start a thread to read the index: {0}")]
    Thread(Arc<std::io::Error>),
    /// A chart name the charts file asks for that is no chart's (in an `Arc`: a `Problem` is
    /// `Clone`, and the name's error is not).
    #[error("invalid chart name {name:?}: it {reason}")]
    ChartName {
        name: String,
        reason: Arc<crate::pack::chart_name::ChartNameError>,
    },
    /// A classic repository's index lists the chart at a version Helm does not accept: it is
    /// never part of a file name.
    #[error(
        "the index lists it as version {version:?}, not a version Helm accepts (a semantic \
         version as Helm reads one, which can be an OCI tag)"
    )]
    ListedVersion { version: String },
    /// A URL the index lists that is neither http nor https.
    #[error("the index lists it at {url:?}: only http and https URLs are fetched")]
    UrlScheme { url: String },
    /// The package is no chart Helm loads (in an `Arc`: `crate::pack::Problem` is not `Clone`).
    #[error("not a chart package Helm loads: {0}")]
    NotAChart(Arc<crate::pack::Problem>),
    /// The package holds another chart, or another version, than the one asked for.
    #[error(
        "the package is chart {:?} version {:?}, but {listed_by} lists it as {:?} version {:?}",
        package.0, package.1, asked.0, asked.1
    )]
    NotAsListed {
        /// The name and version asked for.
        asked: (String, String),
        /// The name and version in the package's Chart.yaml.
        package: (String, String),
        /// What lists it: `the index`, `the registry`.
        listed_by: &'static str,
    },
    /// A file fetch writes or reads back (in an `Arc`: `std::io::Error` is not `Clone`).
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    /// `--with-chart-images`: the chart's images cannot be found (its render refused, or
    /// stopped at a bound); in an `Arc`: the error is not `Clone`.
    #[error("--with-chart-images: {0}")]
    ChartImages(Arc<crate::chart_images::Error>),
}

impl Problem {
    /// The file `path` could not be written or read.
    pub fn file(path: &std::path::Path, source: std::io::Error) -> Problem {
        Problem::File {
            path: path.to_owned(),
            source: Arc::new(source),
        }
    }
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
    /// With `--locked`: entries the lists and the lock do not both hold.
    #[error("{}\n(--locked: run fetch without --locked to update the lock)", lines(.0))]
    Unlocked(Vec<Unlocked>),
    /// Two images asked for (by the images file and the charts) that would be served under
    /// one tag of one repository.
    #[error(
        "image {} and image {} would be served under one tag (the charts ask for one, the images file for the other): list the one the charts ask for",
        one_line(first),
        one_line(second)
    )]
    ServedTwice { first: String, second: String },
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
    /// An image, `registry/repository:tag` (or `@digest`, or `:tag@digest`).
    Image(String),
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Repository { name, url } => {
                write!(f, "repository {} ({})", one_line(name), one_line(url))
            }
            Entry::Chart(key) => write!(f, "chart {}", one_line(key)),
            Entry::Image(key) => write!(f, "image {}", one_line(key)),
        }
    }
}

/// An entry's name as a message shows it: on the one line it names (a line break or tab in it
/// written out, as [`escaped`] writes control characters), so that no name passes for a line
/// of the tool's own.
pub fn one_line(name: &str) -> Cow<'_, str> {
    if !name.contains(['\n', '\t']) {
        return escaped(name);
    }
    let written = name.replace('\n', "\\u{a}").replace('\t', "\\u{9}");
    Cow::Owned(escaped(&written).into_owned())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_named_on_their_line_with_control_characters_written_out() {
        let forged = Entry::Chart(
            "evil\nchartreg-build: wrote assets (0 charts) 1.0.0 from http://r.test/".into(),
        );
        assert_eq!(
            forged.to_string(),
            "chart evil\\u{a}chartreg-build: wrote assets (0 charts) 1.0.0 from http://r.test/"
        );
        let escapes = Entry::Chart("ctl\u{1b}[2J\u{202e}x\t1.0.0".into());
        assert_eq!(
            escapes.to_string(),
            "chart ctl\\u{1b}[2J\\u{202e}x\\u{9}1.0.0"
        );
        assert!(matches!(one_line("hello 1.0.0"), Cow::Borrowed(_)));
    }
}
