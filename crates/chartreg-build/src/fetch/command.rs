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
    /// Folder the chart packages are written into.
    #[arg(long, value_name = "DIR", default_value = "charts")]
    pub out: PathBuf,
    /// Folder the image layouts are written into (`<DIR>/<registry>/<repository>`).
    #[arg(long, value_name = "DIR", default_value = "images")]
    pub images_out: PathBuf,
    /// The lock file [default: chartreg.lock beside the charts file, else the images file].
    /// Given alone, the lists are the ones it was made from.
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

/// Runs `chartreg-build fetch` with `args`.
pub fn run(args: &FetchArgs) -> Result<(), Error> {
    let given = args.helm_charts_file.as_ref().or(args.images_file.as_ref());
    let lock = match (&args.lock, given) {
        (Some(lock), _) => lock.clone(),
        (None, Some(list)) => list.parent().unwrap_or(Path::new("")).join("chartreg.lock"),
        (None, None) => return Err(Error::NoLists),
    };
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
        out: args.out.clone(),
        images_out: args.images_out.clone(),
        lock,
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
    let lock_state = if options.locked {
        "matches"
    } else if report.changes.is_empty() {
        "unchanged:"
    } else {
        "updated"
    };
    let summary = format!(
        "fetched {} charts, {} images; lock {lock_state} {}",
        report.charts,
        report.images,
        options.lock.display()
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
