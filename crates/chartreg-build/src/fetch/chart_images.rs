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
//! An image a chart names by tag is taken by tag; by digest, by that digest (served under
//! `digest-sha256-<hex>`); by both, by the digest, served under the tag (`crate::pin`). A reference
//! fetch cannot take (a digest other than sha256) fails the chart, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::charts::Pending;
use super::failed::FetchError;
use super::failed::{Entry, Failed, Unlocked};
use super::lists::ImageSource;
use super::options::Fetched;
use super::options::WithChartImages;
use super::problem::Problem;
use super::transport::Bounded;
use crate::chart_images::{self, ChartInput};
use crate::lock::Lock;
use crate::pin::Pin;

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
        let added = closure_of(with, pending)
            .map_err(|e| Problem::ChartImages(Arc::new(e)))
            .and_then(|closure| add(&mut asked, &closure));
        if let Err(problem) = added {
            if let Some(pending) = fetched.locked.remove(&key) {
                pending.discard();
            }
            fetched.failures.push(Failed {
                entry: Entry::Chart(key),
                problem,
            });
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

/// Adds the images `closure` needs to `asked`, each by its tag, digest or both; warns of the
/// rest (escaped, `crate::cli`: they quote the charts and Helm). An image whose reference fetch
/// cannot take fails the chart: nothing is added for it.
fn add(asked: &mut Asked, closure: &chart_images::Closure) -> Result<(), Problem> {
    for warning in &closure.warnings {
        crate::output::warn(warning);
    }
    let mut adding = Vec::new();
    for (image, charts) in closure.needed() {
        let pin = match Pin::of(image.tag(), image.digest()) {
            Some(Ok(pin)) => pin,
            Some(Err(source)) => {
                return Err(Problem::ImageReference {
                    image: image.to_string(),
                    source: Arc::new(source),
                });
            }
            // The reader gives every reference a tag (`latest`) or a digest.
            None => {
                return Err(Problem::ImageReference {
                    image: image.to_string(),
                    source: Arc::new(crate::pin::PinError::Nothing(image.to_string())),
                });
            }
        };
        let source = ImageSource {
            registry: image.registry().as_str().to_owned(),
            repository: image.path().to_owned(),
            pin,
        };
        adding.push((source, charts));
    }
    for (source, charts) in adding {
        let entry = asked
            .entry(source.describe())
            .or_insert_with(|| (source, BTreeSet::new()));
        entry.1.extend(charts.into_iter().map(str::to_owned));
    }
    Ok(())
}

/// The images `lock` records as asked by charts.
pub fn locked(lock: &Lock) -> Vec<ImageSource> {
    lock.images
        .iter()
        .filter(|(_, image)| !image.charts.is_empty())
        .filter_map(|(key, _)| {
            let (registry, rest) = key.split_once('/')?;
            let (repository, pin) = crate::pin::split(rest)?;
            Some(ImageSource {
                registry: registry.to_owned(),
                repository: repository.to_owned(),
                pin: pin.ok()?,
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
