//! The charts of a fetch: each classic repository's index read once, then every chart version
//! fetched in parallel ([`fetch_all`]), and put in place once checked ([`place_all`]).
//!
//! One chart version is fetched whatever its source: a classic repository's entry, an OCI
//! repository's chart (`repoURL: oci://...`, with that entry's credentials and `tlsVerify`), an
//! OCI reference, or a package path or URL; written as `<charts>/<name>-<version>.tgz` (and
//! `.prov`, the one beside the package upstream, or its OCI provenance layer), and what the
//! lock records of it.
//!
//! Upstream is not trusted with a path or a chart:
//! 1. A name the charts file asks for is checked as a chart's name (Helm's rule and OCI's
//!    grammar), and the version a classic repository's index lists as one Helm accepts, before
//!    either is part of a file name.
//! 2. The package and its `.prov` arrive beside their places (`arrival::Arrival`), within their bounds
//!    (`transport::Bounded`), and the package is read as the chart it must be
//!    (`crate::pack::read_chart`): one Helm loads, whose name and version are the ones the index
//!    lists (or the charts file asks, for an OCI repository).
//! 3. The policy (`fetch --config`) verifies them; the chart is then [`Pending`]: its files
//!    wait beside their places until the run puts them there ([`Pending::place`]), once
//!    `--with-chart-images` rendered it from where it waits.
//!
//! Whatever refuses a chart, what was staged for it is removed, and what was in its place
//! stays.
//!
//! This module sends each chart to the module for its source: `classic` (a classic
//! repository's index), `registry` (OCI), `package` (a path or URL); each brings it up to an
//! `arrival::Arrival`, which they share, and which uses none of them.

mod arrival;
mod classic;
mod package;
mod registry;

use std::collections::BTreeMap;

use futures_util::StreamExt;

use super::failed::{Entry, Failed};
use super::helm_repo::{Index, Repository};
use super::lists::{ChartSource, ChartsFile, ImagesFile};
use super::options::{Fetched, Lists, Options};
use super::problem::Problem;
use super::{oci, progress};
use crate::lock::{Lock, LockedChart};

pub use arrival::Pending;

/// Charts: each classic repository's index once, then every version in parallel (`pinned`:
/// the lock, with `--locked`), each checked and waiting beside its place.
pub(super) async fn fetch_all(
    options: &Options,
    lists: Lists<'_>,
    chart_sources: &[ChartSource],
    pinned: Option<&Lock>,
    progress: &progress::Progress,
) -> Fetched<Pending> {
    let mut fetched = Fetched::default();
    let mut indexes = BTreeMap::new();
    for name in chart_sources.iter().filter_map(|s| match s {
        ChartSource::Repository { repository, .. } => Some(repository),
        _ => None,
    }) {
        if indexes.contains_key(name) {
            continue;
        }
        let Some(config) = lists.charts_file.repositories.get(name) else {
            continue;
        };
        if config.oci().is_some() {
            // An OCI repository has no index: its charts are tags.
            continue;
        }
        let indexed = match classic::repository(config, &options.transport) {
            Ok(repo) => repo.index().await.map(|index| (repo, index)),
            Err(problem) => Err(problem),
        };
        match indexed {
            Ok(indexed) => {
                indexes.insert(name.clone(), indexed);
            }
            Err(problem) => fetched.failures.push(Failed {
                entry: Entry::Repository {
                    name: name.clone(),
                    url: config.repo_url.clone(),
                },
                problem,
            }),
        }
    }
    let locked_charts = pinned.map(|l| &l.charts);
    let results: Vec<(String, Result<Pending, Problem>)> =
        futures_util::stream::iter(chart_sources.iter())
            .map(|source| {
                let key = source.describe(lists.charts_file);
                let pinned = locked_charts.and_then(|l| l.get(&key)).cloned();
                let task = progress.task(&key);
                let indexes = &indexes;
                let lists = (lists.charts_file, lists.images_file);
                async move {
                    let result = fetch(source, lists, indexes, options, pinned.as_ref()).await;
                    task.finish(&result);
                    (key, result)
                }
            })
            .buffer_unordered(options.parallel.max(1))
            .collect()
            .await;
    for (key, result) in results {
        // A repository whose index failed is reported once, above.
        if !matches!(result, Err(Problem::IndexFailed)) {
            fetched.record(key, result, Entry::Chart);
        }
    }
    fetched
}

/// Puts every chart that waits in `fetched` in its place: what the lock records of each, and
/// the failures, with any chart that could not be put in place.
pub(super) fn place_all(fetched: Fetched<Pending>) -> Fetched<LockedChart> {
    let mut placed = Fetched {
        locked: BTreeMap::new(),
        failures: fetched.failures,
    };
    for (key, chart) in fetched.locked {
        placed.record(key, chart.place(), Entry::Chart);
    }
    placed
}

/// Fetches one chart version, up to [`Pending`]: checked, not yet in place.
async fn fetch(
    source: &ChartSource,
    lists: (&ChartsFile, &ImagesFile),
    indexes: &BTreeMap<String, (Repository, Index)>,
    options: &Options,
    pinned: Option<&LockedChart>,
) -> Result<Pending, Problem> {
    let (charts, images) = lists;
    let pending = match source {
        ChartSource::Repository {
            repository,
            chart,
            version,
        } => match charts.repositories.get(repository) {
            Some(config) if config.oci().is_some() => {
                registry::fetch_from_oci_repository(config, chart, version, options, pinned).await?
            }
            _ => {
                let Some((repo, index)) = indexes.get(repository) else {
                    return Err(Problem::IndexFailed);
                };
                classic::fetch_from_repository(repo, index, chart, version, options, pinned).await?
            }
        },
        ChartSource::Oci {
            registry,
            repository,
            tag,
        } => {
            let registry = oci::Registry::for_host(registry, &options.transport, images)?;
            registry::fetch_oci(&registry, repository, tag, None, options, pinned).await?
        }
        ChartSource::Url(url) => package::fetch_url(url, charts, options, pinned).await?,
    };
    if let Some(pinned) = pinned
        && pinned.sha256 != pending.locked.sha256
    {
        let now = format!("sha256:{}", pending.locked.sha256);
        pending.discard();
        return Err(Problem::Repushed {
            locked: format!("sha256:{}", pinned.sha256),
            now,
        });
    }
    Ok(pending)
}
