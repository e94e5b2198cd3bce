//! `fetch --with-chart-images`: the images the fetched charts need (`chart_images`: rendered
//! with Helm, from annotations, from values) are fetched with them, each recorded in the lock
//! with the charts that asked for it (`LockedImage::charts`).
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

use super::lists::ImageSource;
use super::problem::{Entry, Unlocked};
use super::{FetchError, Lock, LockedChart, Options};
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

/// The images of `charts` (the lock's entries just fetched, their files where the lock says).
pub fn asked(
    with: &WithChartImages,
    options: &Options,
    charts: &BTreeMap<String, LockedChart>,
) -> Result<Asked, FetchError> {
    let inputs = charts
        .values()
        .map(|chart| {
            let path = crate::lock::resolved(&options.lock, &chart.file);
            let package = std::fs::read(&path).map_err(|source| {
                FetchError::ChartImages(Box::new(chart_images::Error::Read {
                    path: path.clone(),
                    source,
                }))
            })?;
            Ok(ChartInput {
                path,
                package,
                values: with.values.get(&chart.name).cloned().unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>, FetchError>>()?;
    let closure = chart_images::find(&inputs, &with.options)
        .map_err(|e| FetchError::ChartImages(Box::new(e)))?;
    for warning in &closure.warnings {
        eprintln!("chartreg-build: warning: {warning}");
    }
    let mut asked = Asked::new();
    for (image, charts) in closure.needed() {
        let Some(tag) = image.tag() else {
            eprintln!(
                "chartreg-build: warning: {image} (needed by {}) is pinned by digest only, and \
                 fetch takes tags: not fetched",
                charts.into_iter().collect::<Vec<_>>().join(", ")
            );
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
    Ok(asked)
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
