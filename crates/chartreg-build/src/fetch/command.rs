//! `chartreg-build fetch`: the flags, and [`run`], which finds the lists and the policy (given,
//! or the ones the lock was made from), fetches ([`super::fetch`]) and prints what changed in
//! the lock, who signed what, and the policy's warnings: each line escaped (`crate::cli`), as
//! they quote upstream (chart names, URLs, signers), each entry on its line
//! (`failed::one_line`).

use std::path::{Path, PathBuf};

use clap::Args;

use super::failed::one_line;
use super::{CaFileError, FetchError, Lock, Options, Transport, Verifier};

/// Why `fetch` did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "fetch: give --helm-charts-file, --images-file, or both (or --lock FILE: the lists that lock was made from)"
    )]
    NoLists,
    #[error(
        "fetch: {} names no lists: give --helm-charts-file, --images-file, or both",
        .0.display()
    )]
    LockNamesNoLists(PathBuf),
    #[error(transparent)]
    CaFile(#[from] CaFileError),
    /// The large causes are boxed: errors are rare, and small `Result`s keep the happy path
    /// cheap.
    #[error(transparent)]
    Lock(Box<crate::lock::Error>),
    #[error("fetch failed:\n{0}")]
    Fetch(Box<FetchError>),
    #[error("fetch: {0}")]
    ChartImages(Box<crate::chart_images::Error>),
    #[error("fetch: {0}")]
    Policy(Box<super::verify::Error>),
    #[error(
        "fetch: --images-out is no longer taken: image layouts go into the fetched folder, {}/images (give --out DIR; see docs/content.md, \"Fetching from upstream\")",
        .0.display()
    )]
    ImagesOut(PathBuf),
    #[error(
        "fetch: --lock {} is the lock of the fetched folder {}, not of --out {}: give one of them",
        lock.display(),
        folder.display(),
        out.display()
    )]
    LockElsewhere {
        lock: PathBuf,
        folder: PathBuf,
        out: PathBuf,
    },
    #[error(
        "fetch: --lock {}: no such lock, and no place for one: a lock lives in the fetched folder, beside charts/ and images/ and nothing else (give --lock DIR/chartreg.lock, or --out DIR)",
        .0.display()
    )]
    NotFetchedLock(PathBuf),
}

impl From<crate::lock::Error> for Error {
    fn from(e: crate::lock::Error) -> Self {
        Error::Lock(Box::new(e))
    }
}

impl From<FetchError> for Error {
    fn from(e: FetchError) -> Self {
        Error::Fetch(Box::new(e))
    }
}

#[derive(Debug, Clone, Args)]
pub struct FetchArgs {
    /// mindthegap's Helm charts file: classic repositories and their chart versions, and
    /// `chartURLs` (`oci://...`, packages).
    #[arg(long, value_name = "FILE")]
    pub helm_charts_file: Option<PathBuf>,
    /// mindthegap's images file: registries, their images and tags.
    #[arg(long, value_name = "FILE")]
    pub images_file: Option<PathBuf>,
    /// The fetched folder, which each run replaces whole: the lock (`DIR/chartreg.lock`), the
    /// chart packages (`DIR/charts/`) and the image layouts
    /// (`DIR/images/<registry>/<repository>`) [default: fetched].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No longer taken: image layouts go into the fetched folder's `images/` (`--out`).
    #[arg(long, value_name = "DIR", hide = true)]
    pub images_out: Option<PathBuf>,
    /// The lock: a fetched folder's (`DIR/chartreg.lock`: that folder is the one written), or
    /// one an earlier chartreg-build wrote beside the lists, whose files this run moves into
    /// the fetched folder [default: DIR/chartreg.lock]. Given alone, the lists are the ones it
    /// was made from.
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Take exactly what the lock pins: fail, naming each entry, if a source now serves other
    /// bytes or the lists ask for other entries; the lock is never written.
    #[arg(long)]
    pub locked: bool,
    /// Only these platforms of multi-platform images (`linux/amd64`, `linux/arm64/v8`;
    /// repeatable) [default: every platform].
    #[arg(long = "platform", value_name = "OS/ARCH[/VARIANT]")]
    pub platforms: Vec<String>,
    /// PEM certificates to trust (besides the system's) for HTTPS sources.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// A registry host (`host` or `host:port`) reached over plain HTTP (repeatable; loopback
    /// hosts always are).
    #[arg(long = "plain-http", value_name = "HOST")]
    pub plain_http: Vec<String>,
    /// Do not take images' referrers (signatures, attestations, SBOMs).
    #[arg(long)]
    pub no_referrers: bool,
    /// Downloads at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub parallel: usize,
    /// Fetch the images the fetched charts need too (as `chartreg-build images` finds them),
    /// recorded in the lock with the charts that need each.
    #[arg(long)]
    pub with_chart_images: bool,
    /// A values file to find a chart's images with: `CHART=FILE` (repeatable; with
    /// `--with-chart-images`).
    #[arg(
        long = "values",
        value_name = "CHART=FILE",
        requires = "with_chart_images",
        value_parser = crate::chart_images::command::chart_values
    )]
    pub values: Vec<(String, PathBuf)>,
    /// How the charts are rendered for `--with-chart-images`.
    #[command(flatten)]
    pub render: crate::chart_images::flags::RenderArgs,
    /// The content file (content.yaml) whose `verify:` policy what is fetched must pass
    /// before it takes its place; recorded in the lock [default: with `--locked`, or the lock
    /// alone, the one the lock records].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The fetched folder and the lock a run starts from: `--lock`, `--out`, or, when neither
/// names a lock there is, the one an earlier chartreg-build wrote beside the lists (moved).
struct Places {
    dir: PathBuf,
    /// The lock the run reads its lists and pins from.
    lock: PathBuf,
    /// That lock, when it is an earlier chartreg-build's (its files are moved).
    moving_from: Option<PathBuf>,
}

fn places(args: &FetchArgs, given: Option<&PathBuf>) -> Result<Places, Error> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
    if args.images_out.is_some() {
        return Err(Error::ImagesOut(out));
    }
    let folder_of = |lock: &Path| match lock.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    if let Some(lock) = &args.lock {
        if super::is_fetch_folder_lock(lock) {
            let dir = folder_of(lock);
            if let Some(out) = &args.out {
                let real = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
                if real(out) != real(&dir) {
                    return Err(Error::LockElsewhere {
                        lock: lock.clone(),
                        folder: dir,
                        out: out.clone(),
                    });
                }
            }
            return Ok(Places {
                dir,
                lock: lock.clone(),
                moving_from: None,
            });
        }
        if !lock.is_file() {
            return Err(Error::NotFetchedLock(lock.clone()));
        }
        return Ok(Places {
            dir: out,
            lock: lock.clone(),
            moving_from: Some(lock.clone()),
        });
    }
    let lock = out.join(super::LOCK_FILE);
    // An earlier chartreg-build's lock beside the lists, while the folder has none.
    let earlier = given
        .map(|list| folder_of(list).join(super::LOCK_FILE))
        .filter(|old| !lock.exists() && old.is_file() && !super::is_fetch_folder_lock(old));
    Ok(match earlier {
        Some(old) => Places {
            dir: out,
            lock: old.clone(),
            moving_from: Some(old),
        },
        None => Places {
            dir: out,
            lock,
            moving_from: None,
        },
    })
}

/// The fetched folder when `--out` does not name one.
pub const DEFAULT_DIR: &str = "fetched";

/// Runs `chartreg-build fetch` with `args`.
pub fn run(args: &FetchArgs) -> Result<(), Error> {
    let given = args.helm_charts_file.as_ref().or(args.images_file.as_ref());
    if given.is_none() && args.lock.is_none() && args.out.is_none() {
        return Err(Error::NoLists);
    }
    let places = places(args, given)?;
    let lock = places.lock.clone();
    let mut values = crate::chart_images::command::by_chart(&args.values);
    let mut with_chart_images = args.with_chart_images;
    let recorded = if given.is_none() || args.locked {
        Lock::read(&lock)?.map(|l| l.lists).unwrap_or_default()
    } else {
        crate::lock::Lists::default()
    };
    // A lock that took its charts' images takes them again, with the values files it names
    // (unless `--values` names others): with `--locked`, or from the lock alone.
    if let Some(files) = &recorded.chart_images {
        with_chart_images = true;
        if args.values.is_empty() {
            for (chart, files) in files {
                values.insert(
                    chart.clone(),
                    files
                        .iter()
                        .map(|f| crate::lock::resolved(&lock, f))
                        .collect(),
                );
            }
        }
    }
    // No list given: the ones the lock was made from.
    let (charts_file, images_file) = if given.is_some() {
        (args.helm_charts_file.clone(), args.images_file.clone())
    } else {
        // No lock names no lists: the error below says so.
        let resolve = |p: &Option<String>| p.as_ref().map(|p| crate::lock::resolved(&lock, p));
        let lists = (
            resolve(&recorded.helm_charts_file),
            resolve(&recorded.images_file),
        );
        if lists.0.is_none() && lists.1.is_none() {
            return Err(Error::LockNamesNoLists(lock));
        }
        lists
    };
    let chart_images = if with_chart_images {
        let options = crate::chart_images::command::options(&args.render, &[])
            .map_err(|e| Error::ChartImages(Box::new(e)))?;
        crate::chart_images::command::note(&options);
        Some(super::WithChartImages { options, values })
    } else {
        None
    };
    // The policy: the one given, else the one the lock was fetched with (`--locked`, or the
    // lock alone).
    let policy = args.config.clone().or_else(|| {
        recorded
            .policy
            .as_ref()
            .map(|p| crate::lock::resolved(&lock, p))
    });
    let verify = match &policy {
        Some(path) => Some(std::sync::Arc::new(
            Verifier::read(path).map_err(|e| Error::Policy(Box::new(e)))?,
        )),
        None => None,
    };
    let ca_pem = match &args.ca_file {
        Some(path) => Some(Transport::read_ca_file(path)?),
        None => None,
    };
    let options = Options {
        charts_file,
        images_file,
        dir: places.dir,
        moving_from: places.moving_from,
        locked: args.locked,
        platforms: args.platforms.clone(),
        referrers: !args.no_referrers,
        transport: Transport {
            ca_pem,
            plain_http: args.plain_http.clone(),
        },
        parallel: args.parallel,
        chart_images,
        verify,
        staging: PathBuf::new(),
    };
    let fetched = super::fetch(&options);
    let notes = options
        .verify
        .as_ref()
        .map(|v| v.notes())
        .unwrap_or_default();
    for warning in &notes.warnings {
        crate::output::warn(warning);
    }
    let report = fetched?;
    if let Some((old, _)) = &report.moved {
        crate::output::print_line(format_args!(
            "moved what {} pinned into {}: its lock is now {} (name it as `lock:` in the content file)",
            old.display(),
            options.dir.display(),
            options.lock_file().display()
        ));
    }
    for warning in report.moved.iter().flat_map(|(_, warnings)| warnings) {
        crate::output::warn(warning);
    }
    let lock_state = if options.locked {
        "matches"
    } else if report.changes.is_empty() {
        "unchanged:"
    } else {
        "updated"
    };
    let folder_state = match report.committed {
        crate::durable::Committed::Written => "wrote",
        crate::durable::Committed::Unchanged => "unchanged:",
    };
    let summary = format!(
        "fetched {} charts, {} images; lock {lock_state} {}; {folder_state} {}",
        report.charts,
        report.images,
        options.lock_file().display(),
        options.dir.display()
    );
    crate::output::print_line(summary);
    for change in &report.changes {
        crate::output::print_line(format_args!("  {}", one_line(change)));
    }
    for line in &notes.verified {
        crate::output::print_line(format_args!("  verified {}", one_line(line)));
    }
    Ok(())
}
