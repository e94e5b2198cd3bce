//! `chartreg-build fetch`: from a list of upstream charts and images (mindthegap's files, as
//! they are) to content, the same bytes every time, pinned by a lock file.
//!
//! 1. The lists are read (`lists`): chart versions from classic repositories and `chartURLs`
//!    (`oci://...` or packages), image tags by registry.
//! 2. Charts are fetched in parallel (`helm_repo` for classic repositories, `oci` for OCI
//!    ones), each staged beside `<charts>/<name>-<version>.tgz` (and `.prov`), read as the
//!    chart it must be (`charts`); images (by tag, digest or both: `crate::pin`), a
//!    repository at a time, into OCI image layouts (`images`), with their referrers. Files already there with the right digest are not
//!    downloaded again; every download is bounded and checked before it replaces anything
//!    (`transport`).
//! 3. With `--config FILE`, the content file's `verify:` policy checks each chart and image
//!    before it takes its place (`verify`): a refusal fails the entry. With
//!    `--with-chart-images`, each chart is rendered from where it waits (`chart_images`): one
//!    whose images cannot be found fails, and leaves nothing. The charts left then take their
//!    places.
//! 4. The lock (`lock`) records what each entry resolved to, and who signed it. Without
//!    `--locked` it is rewritten and what changed is printed; with `--locked`, any difference
//!    from it (an upstream re-push, a list asking for other entries, other signers) is an error
//!    naming each entry, and nothing is written.
//!
//! Errors (`problem`) name the repository, chart and version (or image) and say what went
//! wrong: not found, authentication refused, digest mismatch, TLS failure.

mod chart_images;
mod charts;
pub mod command;
mod helm_repo;
mod images;
pub mod lists;
mod oci;
mod problem;
mod progress;
mod staging;
mod transport;
pub mod verify;
mod versions;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::StreamExt;

pub use crate::lock::{Lock, LockedChart, LockedImage};
use crate::pin::Pin;
pub use chart_images::WithChartImages;
use lists::{ChartSource, ChartsFile, ImageSource, ImagesFile};
pub use problem::{Entry, Failed, Failure, FetchError, Problem, Unlocked};
pub use transport::{CaFileError, Transport};
pub use verify::Verifier;

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

/// Runs the fetch `options` describe.
pub fn fetch(options: &Options) -> Result<Report, FetchError> {
    // One crypto provider for rustls, chosen here (two in the tree would make it panic).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(FetchError::Start)?;
    runtime.block_on(run(options))
}

async fn run(options: &Options) -> Result<Report, FetchError> {
    let charts_file = match &options.charts_file {
        Some(path) => ChartsFile::read(path)?,
        None => ChartsFile::default(),
    };
    let images_file: ImagesFile = match &options.images_file {
        Some(path) => lists::read_images(path)?,
        None => ImagesFile::default(),
    };
    let chart_sources = lists::chart_sources(&charts_file)?;
    let mut image_sources = match &options.images_file {
        Some(path) => lists::image_sources(&images_file, path)?,
        None => Vec::new(),
    };
    let previous = Lock::read(&options.lock)?;
    if options.locked {
        let Some(previous) = &previous else {
            return Err(FetchError::NoLock(options.lock.clone()));
        };
        let mut asked = image_sources.clone();
        if options.chart_images.is_some() {
            asked.extend(chart_images::locked(previous));
            asked.sort();
            asked.dedup();
        }
        check_lists(&charts_file, &chart_sources, &asked, previous)?;
    }
    let progress = progress::Progress::new();
    let mut lock = Lock::new();
    lock.lists = crate::lock::Lists {
        helm_charts_file: options.charts_file.as_deref().map(|p| options.recorded(p)),
        images_file: options.images_file.as_deref().map(|p| options.recorded(p)),
        chart_images: options.chart_images.as_ref().map(|with| {
            with.values
                .iter()
                .map(|(chart, files)| {
                    (
                        chart.clone(),
                        files.iter().map(|f| options.recorded(f)).collect(),
                    )
                })
                .collect()
        }),
        policy: options.verify.as_ref().map(|v| options.recorded(&v.config)),
    };
    let pinned = previous.as_ref().filter(|_| options.locked);
    let lists = Lists {
        charts_file: &charts_file,
        images_file: &images_file,
    };
    let mut fetched = fetch_charts(options, lists, &chart_sources, pinned, &progress).await;
    // Rendered from where they wait, before they take their places: a chart whose images
    // cannot be found fails, and leaves nothing.
    let asked_by_charts = match &options.chart_images {
        Some(with) => chart_images::asked(with, &mut fetched),
        None => chart_images::Asked::new(),
    };
    let charts = place(fetched);
    if options.chart_images.is_some() && charts.failures.is_empty() {
        if let Some(pinned) = pinned {
            chart_images::check_locked(&asked_by_charts, pinned)?;
        }
        image_sources.extend(asked_by_charts.values().map(|(source, _)| source.clone()));
        image_sources.sort();
        image_sources.dedup();
        lists::one_tag_each(&image_sources)
            .map_err(|(first, second)| FetchError::ServedTwice { first, second })?;
    }
    let images = fetch_images(options, lists, &image_sources, pinned, &progress).await;
    progress.done();
    lock.charts = charts.locked;
    lock.images = images.locked;
    for (key, image) in &mut lock.images {
        if let Some((_, charts)) = asked_by_charts.get(key) {
            image.charts = charts.iter().cloned().collect();
        }
    }
    let mut failures = charts.failures;
    failures.extend(images.failures);
    if !failures.is_empty() {
        failures.sort_by_cached_key(ToString::to_string);
        return Err(FetchError::Entries(failures));
    }
    let report = Report {
        charts: lock.charts.len(),
        images: lock.images.len(),
        changes: previous
            .as_ref()
            .map_or_else(|| lock.changes(&Lock::new()), |before| lock.changes(before)),
    };
    if options.locked {
        // Everything matched the lock: nothing to write.
        return Ok(report);
    }
    write_lock(&options.lock, &lock)?;
    Ok(report)
}

/// The two lists, as read.
#[derive(Clone, Copy)]
struct Lists<'a> {
    charts_file: &'a ChartsFile,
    images_file: &'a ImagesFile,
}

/// What one kind of entry came to: what the lock records, and the entries that failed.
struct Fetched<T> {
    locked: BTreeMap<String, T>,
    failures: Vec<Failed>,
}

impl<T> Default for Fetched<T> {
    fn default() -> Self {
        Fetched {
            locked: BTreeMap::new(),
            failures: Vec::new(),
        }
    }
}

/// Charts: each classic repository's index once, then every version in parallel (`pinned`:
/// the lock, with `--locked`), each checked and waiting beside its place.
async fn fetch_charts(
    options: &Options,
    lists: Lists<'_>,
    chart_sources: &[ChartSource],
    pinned: Option<&Lock>,
    progress: &progress::Progress,
) -> Fetched<charts::Pending> {
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
        match charts::repository(config, &options.transport) {
            Ok(repo) => match repo.index().await {
                Ok(index) => {
                    indexes.insert(name.clone(), (repo, index));
                }
                Err(problem) => fetched.failures.push(Failed {
                    entry: Entry::Repository {
                        name: name.clone(),
                        url: config.repo_url.clone(),
                    },
                    problem,
                }),
            },
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
    let results: Vec<(String, Result<charts::Pending, Problem>)> =
        futures_util::stream::iter(chart_sources.iter())
            .map(|source| {
                let key = source.describe(lists.charts_file);
                let pinned = locked_charts.and_then(|l| l.get(&key)).cloned();
                let task = progress.task(&key);
                let indexes = &indexes;
                let lists = (lists.charts_file, lists.images_file);
                async move {
                    let result =
                        charts::fetch(source, lists, indexes, options, pinned.as_ref()).await;
                    task.finish(&result);
                    (key, result)
                }
            })
            .buffer_unordered(options.parallel.max(1))
            .collect()
            .await;
    for (key, result) in results {
        match result {
            Ok(locked) => {
                fetched.locked.insert(key, locked);
            }
            // A repository whose index failed is reported once, above.
            Err(Problem::IndexFailed) => {}
            Err(problem) => fetched.failures.push(Failed {
                entry: Entry::Chart(key),
                problem,
            }),
        }
    }
    fetched
}

/// Puts every chart that waits in `fetched` in its place: what the lock records of each, and
/// the failures, with any chart that could not be put in place.
fn place(fetched: Fetched<charts::Pending>) -> Fetched<LockedChart> {
    let mut placed = Fetched {
        locked: BTreeMap::new(),
        failures: fetched.failures,
    };
    for (key, chart) in fetched.locked {
        match chart.place() {
            Ok(locked) => {
                placed.locked.insert(key, locked);
            }
            Err(problem) => placed.failures.push(Failed {
                entry: Entry::Chart(key),
                problem,
            }),
        }
    }
    placed
}

/// Images: a repository at a time (its layout is one folder), repositories in parallel
/// (`pinned`: the lock, with `--locked`).
async fn fetch_images(
    options: &Options,
    lists: Lists<'_>,
    image_sources: &[ImageSource],
    pinned: Option<&Lock>,
    progress: &progress::Progress,
) -> Fetched<LockedImage> {
    let mut fetched = Fetched::default();
    let mut by_repository: BTreeMap<(String, String), Vec<Pin>> = BTreeMap::new();
    for image in image_sources {
        by_repository
            .entry((image.registry.clone(), image.repository.clone()))
            .or_default()
            .push(image.pin.clone());
    }
    let locked_images = pinned.map(|l| &l.images);
    let results: Vec<Vec<(String, Result<LockedImage, Problem>)>> =
        futures_util::stream::iter(by_repository.iter())
            .map(|((registry_host, repository), pins)| {
                let task = progress.task(&format!("{registry_host}/{repository}"));
                let images_file = lists.images_file;
                async move {
                    let key_of = |pin: &Pin| format!("{registry_host}/{repository}{pin}");
                    let registry = match oci::Registry::for_host(
                        registry_host,
                        &options.transport,
                        images_file,
                    ) {
                        Ok(registry) => registry,
                        Err(problem) => {
                            task.finish(&Err::<(), _>(problem.clone()));
                            return pins
                                .iter()
                                .map(|pin| (key_of(pin), Err(problem.clone())))
                                .collect::<Vec<_>>();
                        }
                    };
                    // Locked, where the lock put it; else under --images-out.
                    let dir = pins
                        .iter()
                        .find_map(|pin| locked_images?.get(&key_of(pin)))
                        .map_or_else(
                            || lists::layout_dir(&options.images_out, registry_host, repository),
                            |l| crate::lock::resolved(&options.lock, &l.layout),
                        );
                    let pinned: BTreeMap<Pin, images::Pinned> = pins
                        .iter()
                        .filter_map(|pin| {
                            let locked = locked_images?.get(&key_of(pin))?;
                            let pinned = images::Pinned {
                                digest: locked.digest.clone(),
                                referrers: locked.referrers.clone(),
                            };
                            Some((pin.clone(), pinned))
                        })
                        .collect();
                    let verify = options.verify.as_deref().map(|verifier| images::Checking {
                        verifier,
                        served: crate::lock::served_repository(registry_host, repository)
                            .unwrap_or_else(|| format!("{registry_host}/{repository}")),
                        locked: locked_images.map(|l| {
                            pins.iter()
                                .filter_map(|pin| {
                                    let verified = l.get(&key_of(pin))?.verified.clone();
                                    Some((pin.served().as_str().to_owned(), verified))
                                })
                                .collect()
                        }),
                    });
                    let asked = images::Asked {
                        pins,
                        platforms: &options.platforms,
                        with_referrers: options.referrers,
                        pinned: &pinned,
                        verify,
                    };
                    let copied = images::copy_repository(&registry, repository, &dir, &asked).await;
                    let layout = options.recorded(&dir);
                    let out: Vec<(String, Result<LockedImage, Problem>)> = match copied {
                        Ok(copied) => pins
                            .iter()
                            .map(|pin| {
                                let key = key_of(pin);
                                let result = match copied.get(pin) {
                                    Some(c) => Ok(LockedImage {
                                        digest: c.digest.clone(),
                                        platforms: c.platforms.clone(),
                                        referrers: c.referrers.clone(),
                                        layout: layout.clone(),
                                        charts: Vec::new(),
                                        upstream: c.upstream.clone(),
                                        verified: c.verified.clone(),
                                    }),
                                    None => Err(Problem::NotFound),
                                };
                                (key, result)
                            })
                            .collect(),
                        Err(failed) => failed
                            .into_iter()
                            .map(|(pin, problem)| {
                                // None: the repository's layout, for every pin together.
                                let key = pin.as_ref().map_or_else(
                                    || {
                                        let all: Vec<String> =
                                            pins.iter().map(ToString::to_string).collect();
                                        format!("{registry_host}/{repository} ({})", all.join(", "))
                                    },
                                    key_of,
                                );
                                (key, Err(problem))
                            })
                            .collect(),
                    };
                    let first_failure = out.iter().find_map(|(_, r)| r.as_ref().err().cloned());
                    task.finish(&first_failure.map_or(Ok(()), Err));
                    out
                }
            })
            .buffer_unordered(options.parallel.max(1))
            .collect()
            .await;
    for (key, result) in results.into_iter().flatten() {
        match result {
            Ok(locked) => {
                fetched.locked.insert(key, locked);
            }
            Err(problem) => fetched.failures.push(Failed {
                entry: Entry::Image(key),
                problem,
            }),
        }
    }
    fetched
}

/// With `--locked`: the lists must ask for exactly what the lock holds.
fn check_lists(
    charts_file: &ChartsFile,
    charts: &[ChartSource],
    images: &[ImageSource],
    lock: &Lock,
) -> Result<(), FetchError> {
    let asked_charts: Vec<String> = charts.iter().map(|c| c.describe(charts_file)).collect();
    let asked_images: Vec<String> = images.iter().map(ImageSource::describe).collect();
    let mut problems = Vec::new();
    for key in &asked_charts {
        if !lock.charts.contains_key(key) {
            problems.push(Unlocked::NotLocked(Entry::Chart(key.clone())));
        }
    }
    for key in lock.charts.keys().filter(|k| !asked_charts.contains(k)) {
        problems.push(Unlocked::NotListed(Entry::Chart(key.clone())));
    }
    for key in &asked_images {
        if !lock.images.contains_key(key) {
            problems.push(Unlocked::NotLocked(Entry::Image(key.clone())));
        }
    }
    for key in lock.images.keys().filter(|k| !asked_images.contains(k)) {
        problems.push(Unlocked::NotListed(Entry::Image(key.clone())));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(FetchError::Unlocked(problems))
    }
}

/// Writes the lock through a temporary file.
fn write_lock(path: &Path, lock: &Lock) -> Result<(), FetchError> {
    let text = lock.to_text().map_err(|source| FetchError::LockText {
        path: path.to_owned(),
        source,
    })?;
    // A lock that cannot be read back is written again.
    if std::fs::read_to_string(path).ok().as_deref() == Some(text.as_str()) {
        return Ok(());
    }
    let staged = path.with_extension("lock.new");
    std::fs::write(&staged, &text)
        .and_then(|()| std::fs::rename(&staged, path))
        .map_err(|source| FetchError::WriteLock {
            path: path.to_owned(),
            source,
        })
}
