//! `chartreg pack`: Helm chart packages in, one OCI image layout per chart out.
//!
//! The pipeline:
//! 1. `read_inputs` finds every `*.tgz` (and the `.tgz.prov` beside it) in the inputs.
//! 2. `build` reads each package (`chart`), checks its provenance file (`provenance`), and lays
//!    out, in memory, what `helm push` would have pushed: the config blob (Chart.yaml metadata
//!    as Helm's JSON, see `metadata`), the package bytes unchanged as the chart layer, the
//!    `.prov` as a provenance layer, and a manifest with Helm's annotations, tagged with the
//!    version (`+` written `_`). The result is a `Tree` of relative paths to bytes.
//! 3. `write` replaces `<out>/<prefix>` with that tree: built aside, then swapped in, and left
//!    untouched when nothing changed, so a failed or repeated pack never damages `assets/`.
//!
//! Output depends only on the packages: `created` comes from the package, never from a clock
//! or file-system time, and every map is ordered.

mod chart;
pub mod metadata;
mod provenance;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::oci::gojson;
use crate::oci::layout::{Annotations, Descriptor, ImageManifest, LayoutBuilder};
use crate::oci::{Digest, NameError, RepositoryName, TagError, media_type};

pub use chart::{Chart, MAX_DECOMPRESSED};

/// Paths relative to the output folder, each with its bytes.
pub type Tree = crate::oci::layout::Files;

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

/// One chart package and its optional provenance file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub path: PathBuf,
    pub package: Vec<u8>,
    pub provenance: Option<Vec<u8>>,
}

const PACKAGE_EXT: &str = ".tgz";
const PROVENANCE_EXT: &str = ".prov";

fn provenance_path(package: &Path) -> PathBuf {
    let mut p = package.as_os_str().to_owned();
    p.push(PROVENANCE_EXT);
    PathBuf::from(p)
}

fn read_input(path: &Path) -> Result<Input, PackError> {
    let package = fs::read(path).map_err(io_at(path))?;
    let prov_path = provenance_path(path);
    let provenance = match fs::read(&prov_path) {
        Ok(data) => Some(data),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_at(&prov_path)(e)),
    };
    Ok(Input {
        path: path.to_owned(),
        package,
        provenance,
    })
}

/// Reads every package named by `inputs`: files as given, folders for their `*.tgz` files.
pub fn read_inputs(inputs: &[PathBuf]) -> Result<Vec<Input>, PackError> {
    let mut found = Vec::new();
    for input in inputs {
        let meta = fs::metadata(input).map_err(io_at(input))?;
        if !meta.is_dir() {
            found.push(read_input(input)?);
            continue;
        }
        let mut names: Vec<PathBuf> = fs::read_dir(input)
            .map_err(io_at(input))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io_at(input))?;
        names.sort();
        for path in &names {
            let name = path.to_string_lossy();
            if let Some(package) = name.strip_suffix(PROVENANCE_EXT)
                && package.ends_with(PACKAGE_EXT)
                && !Path::new(package).is_file()
            {
                return Err(at(path)(Problem::OrphanProvenance(package.to_owned())));
            }
            if name.ends_with(PACKAGE_EXT) && path.is_file() {
                found.push(read_input(path)?);
            }
        }
    }
    if found.is_empty() {
        let first = inputs.first().cloned().unwrap_or_default();
        return Err(at(&first)(Problem::NoPackages));
    }
    Ok(found)
}

/// One chart version: the package it came from and what it holds.
struct Version<'a> {
    input: &'a Input,
    chart: Chart,
}

/// The manifest annotations `helm push` writes (Helm's `generateOCIAnnotations`).
fn helm_annotations(chart: &Chart) -> Annotations {
    let m = &chart.metadata;
    let mut a = Annotations::new();
    let mut add = |key: &str, value: &str| {
        if !value.trim().is_empty() {
            a.insert(key.to_owned(), value.to_owned());
        }
    };
    add("org.opencontainers.image.description", &m.description.0);
    add("org.opencontainers.image.title", &m.name.0);
    add("org.opencontainers.image.version", &m.version.0);
    add("org.opencontainers.image.url", &m.home.0);
    let created = humantime::format_rfc3339_seconds(chart.created).to_string();
    add("org.opencontainers.image.created", &created);
    if let Some(source) = m.sources.first() {
        add("org.opencontainers.image.source", &source.0);
    }
    if !m.maintainers.is_empty() {
        let authors: Vec<String> = m
            .maintainers
            .iter()
            .map(|p| match (p.name.0.as_str(), p.email.0.as_str()) {
                (name, "") => name.to_owned(),
                (name, email) => format!("{name} ({email})"),
            })
            .collect();
        add("org.opencontainers.image.authors", &authors.join(", "));
    }
    // Chart annotations win, except over the title and version.
    for (key, value) in &m.annotations {
        if key != "org.opencontainers.image.title" && key != "org.opencontainers.image.version" {
            a.insert(key.clone(), value.0.clone());
        }
    }
    a
}

/// Checks the provenance file, then stores what `helm push` would push for one chart version
/// in `layout`; returns the manifest's descriptor.
fn lay_out(layout: &mut LayoutBuilder, version: &Version<'_>) -> Result<Descriptor, PackError> {
    let (input, chart) = (version.input, &version.chart);
    let package = layout.blob(media_type::HELM_CHART, input.package.clone());
    if let Some(prov) = &input.provenance {
        let signed_name = format!("{}-{}{PACKAGE_EXT}", chart.name(), chart.version());
        provenance::check(prov, &signed_name, &package.digest)
            .map_err(at(&provenance_path(&input.path)))?;
    }
    let config = layout.blob(media_type::HELM_CONFIG, gojson::to_vec(&chart.metadata));
    let mut layers = vec![package];
    if let Some(prov) = &input.provenance {
        layers.push(layout.blob(media_type::HELM_PROVENANCE, prov.clone()));
    }
    // `helm push` orders layers by digest.
    layers.sort_by(|a, b| a.digest.cmp(&b.digest));
    let manifest = ImageManifest {
        annotations: helm_annotations(chart),
        ..ImageManifest::new(config, layers)
    };
    Ok(layout.manifest(media_type::OCI_MANIFEST, &manifest))
}

/// The layouts of a set of packages, and how many charts and versions they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub tree: Tree,
    pub charts: usize,
    pub versions: usize,
}

/// Lays out every package as OCI image layouts under `<prefix>/<chart name>/`.
pub fn build(inputs: &[Input], prefix: &str) -> Result<Packed, PackError> {
    let prefix_path = Path::new(prefix);
    prefix
        .parse::<RepositoryName>()
        .map_err(|e| at(prefix_path)(Problem::Prefix(e)))?;

    // repository -> tag -> version
    let mut repositories: BTreeMap<String, BTreeMap<String, Version<'_>>> = BTreeMap::new();
    for input in inputs {
        let chart = chart::read(&input.package).map_err(at(&input.path))?;
        let repository = format!("{prefix}/{}", chart.name());
        if let Err(error) = repository.parse::<RepositoryName>() {
            return Err(at(&input.path)(Problem::RepositoryName {
                chart: chart.name().to_owned(),
                repository,
                error,
            }));
        }
        let versions = repositories.entry(repository).or_default();
        if let Some(existing) = versions.get(chart.tag.as_str()) {
            if existing.input.package == input.package
                && existing.input.provenance == input.provenance
            {
                continue;
            }
            return Err(at(&input.path)(Problem::Conflict {
                name: chart.name().to_owned(),
                version: chart.version().to_owned(),
                other: existing.input.path.clone(),
            }));
        }
        versions.insert(chart.tag.as_str().to_owned(), Version { input, chart });
    }

    let mut packed = Packed {
        tree: Tree::new(),
        charts: repositories.len(),
        versions: repositories.values().map(BTreeMap::len).sum(),
    };
    for (repository, versions) in repositories {
        let mut layout = LayoutBuilder::new(&repository);
        for (tag, version) in &versions {
            let manifest = lay_out(&mut layout, version)?;
            layout.list(manifest, Some(tag));
        }
        packed.tree.extend(layout.finish());
    }
    Ok(packed)
}

/// Every file under `dir`, by path relative to `base`, with `/` separators.
pub fn read_tree(dir: &Path, base: &Path) -> io::Result<Tree> {
    let mut tree = Tree::new();
    if !dir.exists() {
        return Ok(tree);
    }
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(base).unwrap_or(&path);
                let key = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                tree.insert(key, fs::read(&path)?);
            }
        }
    }
    Ok(tree)
}

/// Whether `write` changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Unchanged,
    Written,
}

/// Replaces `<out>/<prefix>` with `tree` (whose paths all start with `<prefix>/`), unless it
/// already holds exactly that. The new folder is written beside the old one and renamed into
/// place, so an error leaves the old content as it was.
pub fn write(tree: &Tree, out: &Path, prefix: &str) -> Result<Outcome, PackError> {
    let target = out.join(prefix);
    let write_error = |e: io::Error| at(&target)(Problem::Write(e.to_string()));
    if read_tree(&target, out).map_err(write_error)? == *tree {
        return Ok(Outcome::Unchanged);
    }
    let parent = target.parent().unwrap_or(out).to_owned();
    let leaf = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staging = parent.join(format!(".{leaf}.pack-new"));
    let previous = parent.join(format!(".{leaf}.pack-old"));
    for leftover in [&staging, &previous] {
        if leftover.exists() {
            fs::remove_dir_all(leftover).map_err(write_error)?;
        }
    }
    fs::create_dir_all(&staging).map_err(write_error)?;
    let staged = (|| -> io::Result<()> {
        for (path, data) in tree {
            let relative = path
                .strip_prefix(prefix)
                .and_then(|p| p.strip_prefix('/'))
                .unwrap_or(path);
            let file = staging.join(relative);
            if let Some(dir) = file.parent() {
                fs::create_dir_all(dir)?;
            }
            fs::write(&file, data)?;
        }
        Ok(())
    })();
    if let Err(e) = staged {
        let _ = fs::remove_dir_all(&staging);
        return Err(write_error(e));
    }
    if target.exists() {
        fs::rename(&target, &previous).map_err(write_error)?;
    }
    if let Err(e) = fs::rename(&staging, &target) {
        if previous.exists() {
            let _ = fs::rename(&previous, &target);
        }
        return Err(write_error(e));
    }
    if previous.exists() {
        fs::remove_dir_all(&previous).map_err(write_error)?;
    }
    Ok(Outcome::Written)
}

/// What one `pack` run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub charts: usize,
    pub versions: usize,
    pub outcome: Outcome,
}

/// `chartreg pack`: reads `inputs`, lays them out, writes `<out>/<prefix>`.
pub fn pack(inputs: &[PathBuf], out: &Path, prefix: &str) -> Result<Report, PackError> {
    let inputs = read_inputs(inputs)?;
    let packed = build(&inputs, prefix)?;
    let outcome = write(&packed.tree, out, prefix)?;
    Ok(Report {
        charts: packed.charts,
        versions: packed.versions,
        outcome,
    })
}
