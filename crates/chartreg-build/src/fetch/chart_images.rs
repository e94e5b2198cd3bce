//! `fetch --with-chart-images`: the images the fetched charts need (`chart_images`: rendered
//! with Helm, from annotations, from values) are fetched with them, each recorded in the lock
//! with the charts that asked for it (`LockedImage::charts`).
//!
//! Each chart is rendered from where its package waits, before it takes its place: one whose
//! images cannot be found (Helm refuses it, or it is stopped at a bound; `--static-fallback`
//! takes the static ways' finding instead) fails, and what was staged for it is removed, so it
//! leaves nothing in the charts folder (the lock is not written when anything fails).
//!
//! Without `--locked`, the closure of the charts just fetched joins the images file's tags.
//! With `--locked`, the images the lock records as asked by charts are asked for too (so the
//! lists are checked against the lock before anything is downloaded), and once the charts are
//! fetched their closure must be exactly those: a chart that now needs another image is an
//! entry the lock does not hold.
//!
//! Fetch takes tags: an image a chart pins by digest alone is left out, with a warning (pack's
//! `images.closure` check then names it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::charts::Pending;
use super::lists::ImageSource;
use super::problem::{Entry, Failed, Problem, Unlocked};
use super::transport::Bounded;
use super::{FetchError, Fetched, Lock};
use crate::chart_images::{self, ChartInput};

/// What `--with-chart-images` is given.
#[derive(Debug, Clone)]
pub struct WithChartImages {
    pub options: chart_images::Options,
    /// Values files by chart name.
    pub values: BTreeMap<String, Vec<PathBuf>>,
}

/// The tagged images the charts need: source, and the charts (`NAME:VERSION`) that asked.
pub type Asked = BTreeMap<String, (ImageSource, BTreeSet<String>)>;

/// The images the charts `fetched` holds need, each chart rendered (`chart_images::find`) from
/// where its package waits, before it takes its place. A chart whose images cannot be found
/// (Helm refused it, or it was stopped at a bound: see `--static-fallback`) becomes a failure
/// of that chart, and what was staged for it is removed.
pub fn asked(with: &WithChartImages, fetched: &mut Fetched<Pending>) -> Asked {
    let mut asked = Asked::new();
    let keys: Vec<String> = fetched.locked.keys().cloned().collect();
    for key in keys {
        let Some(pending) = fetched.locked.get(&key) else {
            continue;
        };
        match closure_of(with, pending) {
            Ok(closure) => add(&mut asked, &closure),
            Err(e) => {
                if let Some(pending) = fetched.locked.remove(&key) {
                    pending.discard();
                }
                fetched.failures.push(Failed {
                    entry: Entry::Chart(key),
                    problem: Problem::ChartImages(Arc::new(e)),
                });
            }
        }
    }
    asked
}

/// The images of the chart `pending`, read and rendered from where its package is now.
fn closure_of(
    with: &WithChartImages,
    pending: &Pending,
) -> Result<chart_images::Closure, chart_images::Error> {
    let path = pending.package().to_owned();
    let package =
        chartreg_core::file::read_limited(&path, Bounded::Package.bytes()).map_err(|source| {
            chart_images::Error::Read {
                path: path.clone(),
                source,
            }
        })?;
    let input = ChartInput {
        path,
        package,
        values: with
            .values
            .get(&pending.locked.name)
            .cloned()
            .unwrap_or_default(),
    };
    chart_images::find(&[input], &with.options)
}

/// Adds the tagged images `closure` needs to `asked`; warns of the rest (escaped, `crate::cli`:
/// they quote the charts and Helm).
fn add(asked: &mut Asked, closure: &chart_images::Closure) {
    for warning in &closure.warnings {
        crate::cli::warn(warning);
    }
    for (image, charts) in closure.needed() {
        let Some(tag) = image.tag() else {
            crate::cli::warn(format_args!(
                "{image} (needed by {}) is pinned by digest only, and fetch takes tags: not \
                 fetched",
                charts.into_iter().collect::<Vec<_>>().join(", ")
            ));
            continue;
        };
        let source = ImageSource {
            registry: image.registry().as_str().to_owned(),
            repository: image.path().to_owned(),
            tag: tag.as_str().to_owned(),
        };
        let entry = asked
            .entry(source.describe())
            .or_insert_with(|| (source, BTreeSet::new()));
        entry.1.extend(charts.into_iter().map(str::to_owned));
    }
}

/// The images `lock` records as asked by charts.
pub fn locked(lock: &Lock) -> Vec<ImageSource> {
    lock.images
        .iter()
        .filter(|(_, image)| !image.charts.is_empty())
        .filter_map(|(key, _)| {
            let (registry, rest) = key.split_once('/')?;
            let (repository, tag) = rest.rsplit_once(':')?;
            Some(ImageSource {
                registry: registry.to_owned(),
                repository: repository.to_owned(),
                tag: tag.to_owned(),
            })
        })
        .collect()
}

/// With `--locked`: the charts' images must be the ones the lock records as theirs.
pub fn check_locked(asked: &Asked, lock: &Lock) -> Result<(), FetchError> {
    let locked: BTreeSet<String> = locked(lock).iter().map(ImageSource::describe).collect();
    let mut problems: Vec<Unlocked> = asked
        .keys()
        .filter(|key| !locked.contains(*key))
        .map(|key| Unlocked::ChartsNeed(Entry::Image(key.clone())))
        .collect();
    problems.extend(
        locked
            .iter()
            .filter(|key| !asked.contains_key(*key))
            .map(|key| Unlocked::ChartsNoLongerNeed(Entry::Image(key.clone()))),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(FetchError::Unlocked(problems))
    }
}
