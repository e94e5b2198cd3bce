//! Why a fetch failed: each failed entry named ([`Failed`], [`Entry`]) with its
//! [`Problem`], entries only one of the lists and the lock holds ([`Unlocked`]), and the
//! [`FetchError`] that gathers them. An entry's name is shown on its one line ([`one_line`]):
//! names come from the lists and from upstream.

use std::borrow::Cow;
use std::path::PathBuf;

use chartreg_core::shown::escaped;

use super::lists;
use super::problem::Problem;

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
    /// The fetched folder holds something no fetch wrote.
    #[error(
        "{}: holds `{name}`, which fetch did not write: fetch replaces this folder whole (its lock, charts/ and images/); move `{name}` out, or give --out a folder of its own",
        dir.display()
    )]
    NotFetched { dir: PathBuf, name: String },
    /// The fetched folder could not be replaced (or the run was stopped): it is as it was.
    #[error("{0}")]
    Folder(crate::durable::Error),
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
