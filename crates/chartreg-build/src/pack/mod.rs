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
//! 3. [`pack`] checks who owns what in the output folder (`owned`), then swaps each
//!    repository's folder for its tree ([`chartreg_core::tree::replace`]: blobs streamed into
//!    place with their digests checked again, an unchanged repository left untouched), removes
//!    the chart repositories it no longer has inputs for, and writes down what it wrote.
//!    [`check`] does the same comparisons and writes nothing.
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

// What fetch and lock take of chart reading and layout specs through pack.
pub use crate::chart::{MAX_DECOMPRESSED, name as chart_name};
pub use crate::layout_spec::{LayoutSpec, LayoutSpecError};
pub use chart_package::{ChartPackage, Layer};
pub use image_layout::ImageLayout;
pub use origins_file::Downloaded;
pub use owned::{GITIGNORE_FILE, Owner, RECORD_FILE, Record, RecordError};
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
}

impl Report {
    pub fn outcome(&self) -> Outcome {
        if self.written.is_empty() && self.removed.is_empty() {
            Outcome::Unchanged
        } else {
            Outcome::Written
        }
    }
}

/// `chartreg-build pack`: reads and lays out the inputs, then writes the output folder.
pub fn pack(request: &Request) -> Result<Report, PackError> {
    let plan = plan(request)?;
    let out = &request.out;
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
    };
    let trees = plan
        .packed
        .repositories
        .iter()
        .map(|(name, (_, tree))| (name, tree));
    for (name, tree) in trees.chain(plan.restores.iter().map(|(name, tree)| (name, tree))) {
        match tree::replace(tree, out, name).map_err(write_error)? {
            Outcome::Written => report.written.push(name.clone()),
            Outcome::Unchanged => report.unchanged += 1,
        }
    }
    for name in &plan.removals {
        let folder = out.join(name);
        if folder.exists() {
            fs::remove_dir_all(&folder).map_err(io_at(&folder))?;
            report.removed.push(name.clone());
        }
    }
    for (file, data) in bookkeeping(&plan).map_err(|e| at(out)(Problem::Record(e)))? {
        owned::keep(out, file, data.as_deref()).map_err(|e| at(out)(Problem::Record(e)))?;
    }
    Ok(report)
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
    })
}
