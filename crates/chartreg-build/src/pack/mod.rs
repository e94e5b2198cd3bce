//! `chartreg-build pack`: inputs in, one OCI image layout per repository out, under `assets/`.
//!
//! The pipeline:
//! 1. [`read_inputs`] turns each input into an [`Input`] of its kind, reading and checking it
//!    as it goes, so that a bad input is refused before anything is written:
//!    - chart packages (`*.tgz`, with the `.tgz.prov` beside them: `chart_package`),
//!    - chart folders (a folder with `Chart.yaml`, packaged as `helm package` would, but
//!      deterministically: `chart_folder`),
//!    - OCI image layouts (`--layout DIR=REPOSITORY[:TAG]`: `image_layout`).
//! 2. [`build`] lays every input out: one [`Tree`] per repository (layout documents in
//!    memory, blobs by reference to the input files: path, size, digest, never their bytes).
//! 3. [`pack`] checks who owns what in the output folder (`owned`), then makes the new output
//!    folder beside it (`crate::durable::Generation`): each repository's tree
//!    ([`chartreg_core::tree::write_into`]: blobs streamed with their digests checked again, an
//!    unchanged repository linked from the current folder), what it does not own linked as it
//!    is, the chart repositories it no longer has inputs for left out, and the bookkeeping files
//!    beside them; then swaps the new folder in at one commit point. [`check`] does the same
//!    comparisons and writes nothing; what an interrupted run left is a difference.
//! 4. With the content file's `images:` section, the images the charts need are found once
//!    (`closure`), checked against what is packed when `images.closure` asks, and written down
//!    beside the repositories (`images_file`), for the server to show. With its `verify:`
//!    policy, signatures are checked and what verified is written down (`verify`). With its
//!    `lock:`, where each chart package was downloaded from is written down (`origins_file`).
//!
//! `planned::plan` does steps 1, 2 and 4 and decides step 3 (what to write, remove and keep); `pack` and
//! `check` carry it out or compare.
//!
//! Output depends only on the inputs: `created` comes from the package, never from a clock or
//! file-system time, and every map is ordered.

mod chart_folder;
mod chart_package;
pub mod closure;
pub mod command;
mod helmignore;
mod image_layout;
pub mod images_file;
pub mod imported;
mod origins_file;
mod owned;
mod planned;
mod problem;
mod provenance;
mod verify;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use chartreg_core::content::CHART_IMAGES_FILE;
use chartreg_core::oci::{Namespace, RepositoryName};
use chartreg_core::tree::{self, Outcome, Tree};

use crate::chart::Chart;
use crate::durable::{self, Generation};

// What fetch and lock take of chart reading and layout specs through pack.
pub use crate::chart::{MAX_DECOMPRESSED, name as chart_name};
pub use crate::layout_spec::{LayoutSpec, LayoutSpecError};
pub use chart_package::{ChartPackage, Layer};
pub use image_layout::ImageLayout;
pub use origins_file::Downloaded;
pub use owned::{
    GITIGNORE_FILE, IMPORT_STAGING, Owner, RECORD_FILE, Record, RecordError, leftover,
};
pub use problem::{PackError, Problem};
pub(crate) use problem::{at, io_at};

use planned::{bookkeeping, plan};

/// Reads and checks one chart package ([`crate::chart::read`]), refused as pack refuses it.
pub fn read_chart(package: &[u8]) -> Result<Chart, Problem> {
    Ok(crate::chart::read(package)?)
}

/// What one run packs, and where.
#[derive(Debug, Clone)]
pub struct Request {
    /// Chart packages, chart folders, or folders holding them.
    pub charts: Vec<PathBuf>,
    /// Chart repositories are `<prefix>/<chart name>`.
    pub prefix: String,
    pub layouts: Vec<LayoutSpec>,
    pub out: PathBuf,
    /// Symbolic links in chart folders may lead anywhere inside this folder (the content
    /// file's), besides the chart folder itself.
    pub links_within: Option<PathBuf>,
    /// The content file's `images:` section: the images the charts need, found, written down
    /// and (with `images.closure`) checked against what is packed.
    pub images: Option<closure::ImagesCheck>,
    /// The content file's `verify:` policy.
    pub verify: Option<crate::verify::Policy>,
    /// The packages the content file's lock pins, with where each was downloaded from: what
    /// `origins_file` writes down for the charts packed from them.
    pub downloaded: Vec<Downloaded>,
}

/// One input, by kind.
#[derive(Debug, Clone)]
pub enum Input {
    /// A chart, from its package or its folder (boxed: its metadata is large).
    Chart(Box<ChartPackage>),
    Layout(ImageLayout),
}

/// Reads every input of `request`: chart files as given, chart folders, folders for their
/// `*.tgz` files and chart folders; then each layout.
pub fn read_inputs(request: &Request) -> Result<Vec<Input>, PackError> {
    let mut found = Vec::new();
    for path in &request.charts {
        let meta = fs::metadata(path).map_err(io_at(path))?;
        if !meta.is_dir() {
            found.push(Input::Chart(Box::new(ChartPackage::read(path)?)));
            continue;
        }
        if chart_folder::is_chart_folder(path) {
            found.push(Input::Chart(Box::new(ChartPackage::from_folder(
                path,
                request.links_within.as_deref(),
            )?)));
            continue;
        }
        let mut names: Vec<PathBuf> = fs::read_dir(path)
            .map_err(io_at(path))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io_at(path))?;
        names.sort();
        for name in &names {
            if name.is_dir() && chart_folder::is_chart_folder(name) {
                found.push(Input::Chart(Box::new(ChartPackage::from_folder(
                    name,
                    request.links_within.as_deref(),
                )?)));
            } else if let Some(package) = chart_package::in_folder(name)? {
                found.push(Input::Chart(Box::new(ChartPackage::read(&package)?)));
            }
        }
    }
    if let (Some(first), true) = (request.charts.first(), found.is_empty()) {
        return Err(at(first)(Problem::NoPackages));
    }
    for spec in &request.layouts {
        found.push(Input::Layout(ImageLayout::read(spec)?));
    }
    Ok(found)
}

/// Every repository the inputs make, with what owns it and its tree.
#[derive(Debug, Clone)]
pub struct Packed {
    pub repositories: BTreeMap<String, (Owner, Tree)>,
    pub charts: usize,
    pub versions: usize,
    pub layouts: usize,
    /// The input each repository comes from, for messages.
    pub sources: BTreeMap<String, PathBuf>,
    /// What the inputs' reading found worth a warning.
    pub warnings: Vec<String>,
    /// The charts and images whose signatures verified, and by whom.
    pub verified: Vec<String>,
}

/// Lays out every input (charts under `<prefix>/`); two inputs for one repository are an
/// error naming both.
pub fn build(inputs: &[Input], prefix: &str, out: &Path) -> Result<Packed, PackError> {
    prefix
        .parse::<RepositoryName>()
        .map_err(|e| at(Path::new(prefix))(Problem::Prefix(e)))?;
    if Namespace::split(&format!("{prefix}/chart")).is_some() {
        return Err(at(Path::new(prefix))(Problem::PrefixIsARegistry(
            prefix.to_owned(),
        )));
    }
    let packages = inputs.iter().filter_map(|input| match input {
        Input::Chart(package) => Some(package.as_ref()),
        Input::Layout(_) => None,
    });
    let warnings = inputs
        .iter()
        .filter_map(|input| match input {
            Input::Chart(package) => Some(package.warnings.iter().cloned()),
            Input::Layout(_) => None,
        })
        .flatten()
        .collect();
    let charts = chart_package::lay_out(packages, prefix)?;
    let mut packed = Packed {
        charts: charts.len(),
        versions: charts.iter().map(|c| c.versions).sum(),
        layouts: 0,
        repositories: BTreeMap::new(),
        sources: BTreeMap::new(),
        warnings,
        verified: Vec::new(),
    };
    let sources = &mut packed.sources;
    for chart in charts {
        sources.insert(chart.repository.clone(), chart.source);
        let owner = Owner::Chart {
            prefix: prefix.to_owned(),
        };
        packed
            .repositories
            .insert(chart.repository, (owner, chart.tree));
    }
    for input in inputs {
        let Input::Layout(layout) = input else {
            continue;
        };
        let name = layout.spec.repository.as_str().to_owned();
        if let Some(other) = sources.get(&name) {
            return Err(at(&layout.spec.dir)(Problem::RepositoryTwice {
                repository: name,
                other: other.clone(),
            }));
        }
        sources.insert(name.clone(), layout.spec.dir.clone());
        let owner = Owner::Layout {
            from: shown_from(&layout.spec.dir, out),
        };
        packed
            .repositories
            .insert(name, (owner, layout.tree.clone()));
        packed.layouts += 1;
    }
    Ok(packed)
}

/// A layout folder as the record shows it: relative to the folder holding the output folder
/// (the repository root, for `assets/`), so that the record is the same on every machine;
/// as given when it lies elsewhere.
fn shown_from(dir: &Path, out: &Path) -> String {
    let base = out
        .canonicalize()
        .ok()
        .or_else(|| {
            out.parent()
                .and_then(|p| p.canonicalize().ok())
                .map(|p| p.join("x"))
        })
        .and_then(|out| out.parent().map(Path::to_path_buf));
    let relative = match (base, dir.canonicalize()) {
        (Some(base), Ok(dir)) => dir.strip_prefix(&base).ok().map(Path::to_path_buf),
        _ => None,
    };
    relative
        .unwrap_or_else(|| dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// What one run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub charts: usize,
    pub versions: usize,
    pub layouts: usize,
    /// Repositories written (new or changed), removed, and left as they were.
    pub written: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: usize,
    pub warnings: Vec<String>,
    /// The charts and images whose signatures verified, and by whom.
    pub verified: Vec<String>,
    /// Whether the output folder was replaced (a repository, a bookkeeping file, or what an
    /// interrupted run left, changed) or left as it was.
    pub outcome: Outcome,
}

/// `chartreg-build pack`: reads and lays out the inputs, then replaces the output folder whole
/// (see `durable`): what stays is linked from the current folder, the rest written beside it,
/// and the new folder swapped in at one commit point; a refusal or a failure leaves the folder
/// as it was.
pub fn pack(request: &Request) -> Result<Report, PackError> {
    let out = &request.out;
    let generation = Generation::begin(out, RUN).map_err(at(out))?;
    let plan = plan(request)?;
    let staging = generation.path();
    let write_error = |e: tree::WriteError| match e {
        // The input's file, not the output, is what is wrong.
        tree::WriteError::Changed {
            path,
            expected,
            size,
        } => at(&path)(Problem::NotItsDigest { expected, size }),
        e => at(out)(Problem::Write(e)),
    };
    let mut report = Report {
        charts: plan.packed.charts,
        versions: plan.packed.versions,
        layouts: plan.packed.layouts,
        written: Vec::new(),
        removed: Vec::new(),
        unchanged: 0,
        warnings: plan.packed.warnings.clone(),
        verified: plan.packed.verified.clone(),
        outcome: Outcome::Unchanged,
    };
    let kept = bookkeeping(&plan).map_err(|e| at(out)(Problem::Record(e)))?;
    // What this run writes or removes; everything else in the folder (hand-placed layouts,
    // imported repositories) is taken over as it is.
    let trees: Vec<(&String, &Tree)> = plan
        .packed
        .repositories
        .iter()
        .map(|(name, (_, tree))| (name, tree))
        .chain(plan.restores.iter().map(|(name, tree)| (name, tree)))
        .collect();
    let ours: Vec<&str> = trees
        .iter()
        .map(|(name, _)| name.as_str())
        .chain(plan.removals.iter().map(String::as_str))
        .chain(kept.iter().map(|(file, _)| *file))
        .collect();
    let written_here =
        |path: &str| ours.iter().any(|name| within(path, name)) || owned::leftover(path);
    // Which repositories differ, found once: a run that changes nothing links nothing.
    let mut outcomes = Vec::with_capacity(trees.len());
    for (name, tree) in &trees {
        durable::stop::check().map_err(|e| at(out)(durable::Error::from(e)))?;
        let holds = tree::holds(tree, out, name).map_err(write_error)?;
        outcomes.push(if holds {
            Outcome::Unchanged
        } else {
            Outcome::Written
        });
    }
    let same_bookkeeping = kept
        .iter()
        .all(|(file, data)| fs::read(out.join(file)).ok() == *data);
    let nothing_to_remove = plan.removals.iter().all(|name| !out.join(name).exists());
    if outcomes.iter().all(|o| *o == Outcome::Unchanged)
        && same_bookkeeping
        && nothing_to_remove
        // (What killed runs left beside the folder, the generation removed as it began.)
        && leftovers_inside(out).is_empty()
    {
        report.unchanged = trees.len();
        return Ok(report);
    }
    durable::link_tree(out, staging, &written_here).map_err(at(out))?;
    for ((name, tree), outcome) in trees.iter().zip(outcomes) {
        durable::stop::check().map_err(|e| at(out)(durable::Error::from(e)))?;
        tree::put_into(tree, out, name, &staging.join(name.as_str()), outcome)
            .map_err(write_error)?;
        match outcome {
            Outcome::Written => report.written.push((*name).clone()),
            Outcome::Unchanged => report.unchanged += 1,
        }
    }
    for name in &plan.removals {
        if out.join(name).exists() {
            report.removed.push(name.clone());
        }
    }
    for (file, data) in &kept {
        if let Some(data) = data {
            let path = staging.join(file);
            fs::write(&path, data).map_err(io_at(&path))?;
        }
    }
    report.outcome = match generation.commit().map_err(at(out))? {
        durable::Committed::Written => Outcome::Written,
        durable::Committed::Unchanged => Outcome::Unchanged,
    };
    Ok(report)
}

/// What a run of `pack` is called beside its output folder (`.assets.pack-new`).
const RUN: &str = "pack";

/// Whether `path` (relative to the output folder, `/`-separated) is `name` or lies inside it.
fn within(path: &str, name: &str) -> bool {
    path.strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// What an interrupted run left in or beside the output folder `out`, by name.
fn leftovers(out: &Path) -> Vec<String> {
    let mut found: Vec<String> = durable::leftovers(out, RUN)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    found.extend(leftovers_inside(out));
    found
}

/// What an interrupted run of an earlier chartreg-build left inside the output folder `out`
/// (see `owned::leftover`), by path relative to it.
fn leftovers_inside(out: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![(out.to_owned(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if owned::leftover(&relative) {
                found.push(relative);
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) && !relative.ends_with("blobs") {
                pending.push((entry.path(), relative));
            }
        }
    }
    found.sort();
    found
}

/// Whether the output folder already holds what `pack` would write of what is committed: the
/// chart repositories and the bookkeeping files (image layouts are rebuilt, not committed).
/// Writes nothing; stale parts are an error naming each.
pub fn check(request: &Request) -> Result<Report, PackError> {
    let plan = plan(request)?;
    let out = &request.out;
    let mut stale = Vec::new();
    for (name, (owner, tree)) in &plan.packed.repositories {
        if matches!(owner, Owner::Chart { .. })
            && !tree::holds(tree, out, name).map_err(|e| at(out)(Problem::Write(e)))?
        {
            stale.push(name.clone());
        }
    }
    for name in &plan.removals {
        if out.join(name).exists() {
            stale.push(format!("{name} (no longer packed)"));
        }
    }
    for (name, tree) in &plan.restores {
        if !tree::holds(tree, out, name).map_err(|e| at(out)(Problem::Write(e)))? {
            stale.push(format!("{name} (imported only now)"));
        }
    }
    for left in leftovers(out) {
        stale.push(format!(
            "{left} (left by an interrupted run; pack removes it)"
        ));
    }
    for (file, data) in bookkeeping(&plan).map_err(|e| at(out)(Problem::Record(e)))? {
        let present = fs::read(out.join(file)).ok();
        if present != data {
            let note = (file == CHART_IMAGES_FILE)
                .then(|| images_file::stale_note(present.as_deref(), plan.chart_images.as_ref()))
                .flatten();
            stale.push(match note {
                Some(note) => format!("{file} ({note})"),
                None => file.to_owned(),
            });
        }
    }
    if !stale.is_empty() {
        return Err(at(out)(Problem::Stale(stale)));
    }
    Ok(Report {
        charts: plan.packed.charts,
        versions: plan.packed.versions,
        layouts: plan.packed.layouts,
        written: Vec::new(),
        removed: Vec::new(),
        unchanged: plan.packed.repositories.len(),
        warnings: plan.packed.warnings,
        verified: plan.packed.verified,
        outcome: Outcome::Unchanged,
    })
}
