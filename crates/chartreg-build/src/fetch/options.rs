//! What a fetch is asked ([`Options`], [`WithChartImages`]) and what it did ([`Report`]); between the two, the
//! lists as read ([`Lists`]) and what each kind of entry came to ([`Fetched`]), which the
//! charts and images halves of a run hand back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::failed::{Entry, Failed};
use super::lists::{ChartsFile, ImagesFile};
use super::problem::Problem;
use super::transport::Transport;
use super::verify::Verifier;
use crate::lock::LockedChart;

/// What `--with-chart-images` is given.
#[derive(Debug, Clone)]
pub struct WithChartImages {
    pub options: crate::chart_images::Options,
    /// Values files by chart name.
    pub values: BTreeMap<String, Vec<PathBuf>>,
}

/// The lock's name in the fetched folder.
pub const LOCK_FILE: &str = "chartreg.lock";
/// Where chart packages go in the fetched folder.
pub const CHARTS: &str = "charts";
/// Where image layouts go in the fetched folder.
pub const IMAGES: &str = "images";

/// What `fetch` is asked.
#[derive(Debug, Clone)]
pub struct Options {
    pub charts_file: Option<PathBuf>,
    pub images_file: Option<PathBuf>,
    /// The fetched folder, which a run replaces whole: the lock ([`LOCK_FILE`]), the chart
    /// packages ([`CHARTS`]), the image layouts ([`IMAGES`]).
    pub dir: PathBuf,
    /// A lock an earlier chartreg-build wrote beside the lists, whose files lie elsewhere:
    /// what it pins is moved into `dir` by this run (see `moved`).
    pub moving_from: Option<PathBuf>,
    pub locked: bool,
    pub platforms: Vec<String>,
    pub referrers: bool,
    pub transport: Transport,
    /// Downloads at once.
    pub parallel: usize,
    /// `--with-chart-images`: the images the fetched charts need are fetched too.
    pub chart_images: Option<WithChartImages>,
    /// `--config`: the content file's `verify:` policy, which what is fetched must pass.
    pub verify: Option<Arc<Verifier>>,
    /// The new fetched folder this run fills (beside `dir`, the same shape), set by the run.
    pub(super) staging: PathBuf,
}

impl Options {
    /// The lock this run writes, in the new folder.
    pub fn lock(&self) -> PathBuf {
        self.staging.join(LOCK_FILE)
    }

    /// The lock once the run is done.
    pub fn lock_file(&self) -> PathBuf {
        self.dir.join(LOCK_FILE)
    }

    /// Where image layouts go (in the new folder).
    pub fn images_out(&self) -> PathBuf {
        self.staging.join(IMAGES)
    }

    /// How the lock names `path` (relative to its folder: see [`crate::lock::recorded`]). The
    /// new folder lies beside the fetched one: what it names in itself and outside reads the
    /// same from either.
    pub fn recorded(&self, path: &Path) -> String {
        crate::lock::recorded(&self.lock(), path)
    }

    /// Where a chart goes: where the lock put it when `--locked`, else the new folder's
    /// `charts/`.
    pub fn charts_dir(&self, pinned: Option<&LockedChart>) -> PathBuf {
        pinned
            .and_then(|p| {
                crate::lock::resolved(&self.lock(), &p.file)
                    .parent()
                    .map(Path::to_owned)
            })
            .unwrap_or_else(|| self.staging.join(CHARTS))
    }
}

/// What a fetch did.
#[derive(Debug, Clone)]
pub struct Report {
    pub charts: usize,
    pub images: usize,
    /// How the lock changed (empty when it did not).
    pub changes: Vec<String>,
    /// Whether the fetched folder was replaced or left as it was.
    pub committed: crate::durable::Committed,
    /// When the run moved an earlier lock's files into the folder: that lock, and what of it
    /// could not be removed.
    pub moved: Option<(PathBuf, Vec<String>)>,
}

/// The two lists, as read.
#[derive(Clone, Copy)]
pub(super) struct Lists<'a> {
    pub(super) charts_file: &'a ChartsFile,
    pub(super) images_file: &'a ImagesFile,
}

/// What one kind of entry came to: what the lock records, and the entries that failed.
pub(super) struct Fetched<T> {
    pub(super) locked: BTreeMap<String, T>,
    pub(super) failures: Vec<Failed>,
}

impl<T> Fetched<T> {
    /// Records the outcome of the entry `key`: what it locked, or why it failed (`entry` names
    /// it in the failure).
    pub(super) fn record(
        &mut self,
        key: String,
        result: Result<T, Problem>,
        entry: fn(String) -> Entry,
    ) {
        match result {
            Ok(locked) => {
                self.locked.insert(key, locked);
            }
            Err(problem) => self.failures.push(Failed {
                entry: entry(key),
                problem,
            }),
        }
    }
}

impl<T> Default for Fetched<T> {
    fn default() -> Self {
        Fetched {
            locked: BTreeMap::new(),
            failures: Vec::new(),
        }
    }
}
