//! `chartreg-build fetch`: from a list of upstream charts and images (mindthegap's files, as
//! they are) to content, the same bytes every time, pinned by a lock file, all in one folder
//! that a run replaces whole (`folder`: `fetched/` holds the lock, `charts/` and `images/`).
//!
//! 1. The lists are read (`lists`): chart versions from classic repositories and `chartURLs`
//!    (`oci://...` or packages), image tags by registry.
//! 2. A new fetched folder is begun beside the current one (`crate::durable::Generation`),
//!    holding the current one's files, linked (`folder::seed`; or an earlier chartreg-build's
//!    lock's files, moved). Everything below writes only there.
//! 3. Charts are fetched in parallel (`charts`; `helm_repo` reads classic repositories, `oci`
//!    talks to registries), each as `charts/<name>-<version>.tgz` (and `.prov`), read as the
//!    chart it must be; images (by tag, digest or both: `crate::pin`), a repository at a time,
//!    into OCI image layouts (`images`, filled in `staging`), with their referrers. Files
//!    already there with the right digest are not downloaded again; every download is bounded
//!    and checked (`transport`).
//! 4. With `--config FILE`, the content file's `verify:` policy checks each chart and image
//!    (`verify`): a refusal fails the entry. With `--with-chart-images`, each chart is rendered
//!    (`chart_images`): one whose images cannot be found fails.
//! 5. Any entry that failed fails the run, and the new folder is removed: the fetched folder
//!    is as it was. Otherwise the lock (`lock`) records what each entry resolved to, and who
//!    signed it; with `--locked`, any difference from it (an upstream re-push, a list asking
//!    for other entries, other signers) is an error naming each entry, and the lock stays. What
//!    the lock does not pin is pruned from the new folder (`folder::prune`), which is then
//!    swapped in at one commit point, unless it holds what the current one does.
//!
//! Errors name the repository, chart and version (or image) (`failed`) and say what went wrong
//! (`problem`): not found, authentication refused, digest mismatch, TLS failure, each with the
//! error under it. SIGINT and SIGTERM stop a run before its commit point.
//!
//! `pull` takes one image of one platform into a layout, with the same parts, for `diff`.
//!
//! This module runs those steps in order (`options` holds what they are asked and hand back);
//! `charts` and `images` each run their half, `command` is the command line over it. Modules
//! below them (`helm_repo`, `oci`, `staging`, `transport`, `verify`, `problem`, `folder`) use
//! none of the ones above.

mod chart_images;
mod charts;
pub mod command;
mod failed;
mod folder;
mod helm_repo;
mod images;
pub mod lists;
mod oci;
mod options;
mod problem;
mod progress;
pub mod pull;
mod staging;
mod transport;
pub mod verify;
mod versions;

use std::path::Path;

pub use crate::lock::{Lock, LockedChart, LockedImage};
pub use failed::{Entry, Failed, FetchError, Unlocked};
pub use folder::is_fetch_folder_lock;
use lists::{ChartSource, ChartsFile, ImageSource, ImagesFile};
pub use options::{CHARTS, IMAGES, LOCK_FILE, Options, Report, WithChartImages};
pub use problem::{Failure, Problem};
pub use transport::{CaFileError, Transport};
pub use verify::Verifier;

use options::Lists;

/// Runs the fetch `options` describe: fills a new fetched folder beside `options.dir`, and
/// puts it in place whole once every entry is fetched and checked (see `folder`); any failure,
/// or a stop asked for by a signal, leaves the folder as it was.
pub fn fetch(options: &Options) -> Result<Report, FetchError> {
    // One crypto provider for rustls, chosen here (two in the tree would make it panic).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(FetchError::Start)?;
    runtime.block_on(async {
        tokio::select! {
            done = run(options) => done,
            stopped = crate::durable::stop::asked() => {
                Err(FetchError::Folder(crate::durable::Error::Stopped(stopped)))
            }
        }
    })
}

async fn run(options: &Options) -> Result<Report, FetchError> {
    folder::check(&options.dir)?;
    let generation =
        crate::durable::Generation::begin(&options.dir, "fetch").map_err(FetchError::Folder)?;
    let options = &Options {
        staging: generation.path().to_owned(),
        ..options.clone()
    };
    let (previous, moving) = match &options.moving_from {
        Some(old_path) => {
            let old = Lock::read(old_path)?;
            let moved = old
                .as_ref()
                .map(|old| folder::moved(old, old_path, &options.lock()));
            (moved, old.map(|old| (old_path.as_path(), old)))
        }
        None => (Lock::read(&options.lock_file())?, None),
    };
    folder::seed(
        &options.dir,
        moving.as_ref().map(|(path, lock)| (*path, lock)),
        generation.path(),
    )?;
    let lock = fetch_into(options, previous.as_ref()).await?;
    let lock = match lock {
        Some(lock) => lock,
        // --locked, and everything matched: the lock stays (moved, when moving).
        None => previous
            .clone()
            .ok_or_else(|| FetchError::NoLock(options.lock_file()))?,
    };
    folder::prune(generation.path(), &lock)?;
    write_lock(&options.lock(), &lock)?;
    let changes = lock.changes(previous.as_ref().unwrap_or(&Lock::new()));
    let committed = generation.commit().map_err(FetchError::Folder)?;
    let moved = moving.as_ref().map(|(old_path, old)| {
        (
            old_path.to_path_buf(),
            folder::finish_move(old_path, old, &options.dir),
        )
    });
    Ok(Report {
        charts: lock.charts.len(),
        images: lock.images.len(),
        changes,
        committed,
        moved,
    })
}

/// Fetches what the lists ask into the new folder: the lock that records it, or `None` with
/// `--locked` when everything matched the lock (`previous`).
async fn fetch_into(
    options: &Options,
    previous: Option<&Lock>,
) -> Result<Option<Lock>, FetchError> {
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
    if options.locked {
        let Some(previous) = previous else {
            return Err(FetchError::NoLock(options.lock_file()));
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
    let pinned = previous.filter(|_| options.locked);
    let lists = Lists {
        charts_file: &charts_file,
        images_file: &images_file,
    };
    let mut fetched = charts::fetch_all(options, lists, &chart_sources, pinned, &progress).await;
    // Rendered from where they wait, before they take their places: a chart whose images
    // cannot be found fails, and leaves nothing.
    let asked_by_charts = match &options.chart_images {
        Some(with) => chart_images::asked(with, &mut fetched),
        None => chart_images::Asked::new(),
    };
    let charts = charts::place_all(fetched);
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
    let images = images::fetch_all(options, lists, &image_sources, pinned, &progress).await;
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
    if options.locked {
        // Everything matched the lock: it stays as it is.
        return Ok(None);
    }
    Ok(Some(lock))
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

/// Writes the lock into the new folder (through a temporary file: the lock there may be the
/// current folder's, linked, which must not change).
fn write_lock(path: &Path, lock: &Lock) -> Result<(), FetchError> {
    let text = lock.to_text().map_err(|source| FetchError::LockText {
        path: path.to_owned(),
        source,
    })?;
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
