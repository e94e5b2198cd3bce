//! `chartreg-build pack`: inputs in, one OCI image layout per repository out, under `assets/`.
//!
//! The pipeline:
//! 1. [`read_inputs`] turns each path it is given into [`Input`]s, one kind each (today only
//!    chart packages: every `*.tgz` of a folder, with the `.tgz.prov` beside it), reading and
//!    checking each one as it goes, so a bad input is refused before anything is written.
//! 2. [`build`] lays every input out with its kind's module (`chart_package`), giving a
//!    [`Tree`]: layout documents in memory and blobs by reference to the input files (path,
//!    size, digest), never their bytes.
//! 3. [`chartreg_core::tree::replace`] swaps `<out>/<prefix>` for that tree, streaming blobs
//!    into place and checking their digests again; it leaves the folder untouched when nothing
//!    changed, and as it was when anything fails.
//!
//! Output depends only on the inputs: `created` comes from the package, never from a clock or
//! file-system time, and every map is ordered.

mod chart;
mod chart_package;
pub mod metadata;
mod provenance;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::oci::{Digest, NameError, RepositoryName, TagError};
use chartreg_core::tree::{self, Outcome, Tree};

pub use chart::{Chart, MAX_DECOMPRESSED};
pub use chart_package::ChartPackage;

/// A problem with one input file.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct PackError {
    pub path: PathBuf,
    pub problem: Problem,
}

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("{0}")]
    Io(String),
    #[error("no chart packages (*.tgz) found")]
    NoPackages,
    #[error("a provenance file with no package beside it (expected {0})")]
    OrphanProvenance(String),
    #[error("not a gzip file (a Helm chart package is a .tgz)")]
    NotGzip,
    #[error("corrupt gzip data: {0}")]
    Gzip(String),
    #[error("decompresses to more than {} MiB, the most Helm loads", MAX_DECOMPRESSED / 1024 / 1024)]
    TooLarge,
    #[error("not a valid tar archive: {0}")]
    Tar(String),
    #[error(
        "no Chart.yaml in the archive's top folder (a chart package holds `<name>/Chart.yaml`)"
    )]
    NoChartYaml,
    #[error("Chart.yaml is at the top of the archive, not inside the chart's folder")]
    ChartYamlAtTop,
    #[error("invalid YAML in {0}: {1}")]
    Yaml(&'static str, String),
    #[error("invalid chart metadata: {0}")]
    Metadata(String),
    #[error("Chart.yaml has no `{0}`")]
    MissingField(&'static str),
    #[error("invalid chart name `{0}`")]
    InvalidChartName(String),
    #[error(
        "chart version `{0}` is not semantic versioning 2.0 (e.g. 1.2.3, 1.2.3-rc.1, 1.2.3+build.4): {1}"
    )]
    Version(String, String),
    #[error("chart version `{0}` cannot be an OCI tag: {1}")]
    Tag(String, TagError),
    #[error("chart type `{0}` must be `application` or `library`")]
    ChartType(String),
    #[error("dependency alias `{0}` may only hold letters, digits, `_` and `-`")]
    DependencyAlias(String),
    #[error("more than one dependency named or aliased `{0}`")]
    DuplicateDependency(String),
    #[error("chart `{chart}` cannot be served as `{repository}`: {error}")]
    RepositoryName {
        chart: String,
        repository: String,
        error: NameError,
    },
    #[error("invalid --prefix: {0}")]
    Prefix(NameError),
    #[error("{name} {version} is also packaged, with different bytes, in {}", other.display())]
    Conflict {
        name: String,
        version: String,
        other: PathBuf,
    },
    #[error("invalid provenance file: {0}")]
    Provenance(String),
    #[error("the provenance file has no checksum for `{0}`")]
    ProvenanceMissing(String),
    #[error("the provenance file says the package is {listed}, but it is {actual}")]
    ProvenanceMismatch { listed: String, actual: Digest },
    #[error("cannot write the output: {0}")]
    Write(String),
}

fn at(path: &Path) -> impl Fn(Problem) -> PackError + '_ {
    move |problem| PackError {
        path: path.to_owned(),
        problem,
    }
}

fn io_at(path: &Path) -> impl Fn(io::Error) -> PackError + '_ {
    move |e| PackError {
        path: path.to_owned(),
        problem: Problem::Io(e.to_string()),
    }
}

/// One input of `pack`, by kind; each kind has its module.
#[derive(Debug, Clone)]
pub enum Input {
    /// A Helm chart package (`.tgz`) and its optional provenance file.
    ChartPackage(ChartPackage),
}

/// Reads every input named by `paths`: files as given, folders for their `*.tgz` files.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, PackError> {
    let mut found = Vec::new();
    for path in paths {
        let meta = fs::metadata(path).map_err(io_at(path))?;
        if !meta.is_dir() {
            found.push(Input::ChartPackage(ChartPackage::read(path)?));
            continue;
        }
        let mut names: Vec<PathBuf> = fs::read_dir(path)
            .map_err(io_at(path))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io_at(path))?;
        names.sort();
        for name in &names {
            if let Some(package) = chart_package::in_folder(name)? {
                found.push(Input::ChartPackage(ChartPackage::read(&package)?));
            }
        }
    }
    if found.is_empty() {
        let first = paths.first().cloned().unwrap_or_default();
        return Err(at(&first)(Problem::NoPackages));
    }
    Ok(found)
}

/// The layouts of a set of inputs, and how many charts and versions they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub tree: Tree,
    pub charts: usize,
    pub versions: usize,
}

/// Lays out every input under `<prefix>/`.
pub fn build(inputs: &[Input], prefix: &str) -> Result<Packed, PackError> {
    prefix
        .parse::<RepositoryName>()
        .map_err(|e| at(Path::new(prefix))(Problem::Prefix(e)))?;
    let packages = inputs.iter().map(|input| match input {
        Input::ChartPackage(package) => package,
    });
    chart_package::lay_out(packages, prefix)
}

/// What one `pack` run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub charts: usize,
    pub versions: usize,
    pub outcome: Outcome,
}

/// `chartreg-build pack`: reads `inputs`, lays them out, writes `<out>/<prefix>`.
pub fn pack(inputs: &[PathBuf], out: &Path, prefix: &str) -> Result<Report, PackError> {
    let inputs = read_inputs(inputs)?;
    let packed = build(&inputs, prefix)?;
    let target = out.join(prefix);
    let outcome = tree::replace(&packed.tree, out, prefix)
        .map_err(|e| at(&target)(Problem::Write(e.to_string())))?;
    Ok(Report {
        charts: packed.charts,
        versions: packed.versions,
        outcome,
    })
}
