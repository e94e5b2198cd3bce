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

/// What `fetch` is asked.
#[derive(Debug, Clone)]
pub struct Options {
    pub charts_file: Option<PathBuf>,
    pub images_file: Option<PathBuf>,
    /// Where charts go (`charts/`).
    pub out: PathBuf,
    /// Where image layouts go (`images/`).
    pub images_out: PathBuf,
    pub lock: PathBuf,
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
}

impl Options {
    /// How the lock names `path` (relative to its folder: see [`crate::lock::recorded`]).
    pub fn recorded(&self, path: &Path) -> String {
        crate::lock::recorded(&self.lock, path)
    }

    /// Where a chart goes: where the lock put it when `--locked` (whatever the current folder
    /// is), else `--out`.
    pub fn charts_dir(&self, pinned: Option<&LockedChart>) -> PathBuf {
        pinned
            .and_then(|p| {
                crate::lock::resolved(&self.lock, &p.file)
                    .parent()
                    .map(Path::to_owned)
            })
            .unwrap_or_else(|| self.out.clone())
    }
}

/// What a fetch did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub charts: usize,
    pub images: usize,
    /// How the lock changed (empty when it did not).
    pub changes: Vec<String>,
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
