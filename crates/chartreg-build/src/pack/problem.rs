//! Why `pack` refused: a [`PackError`] names the file (or folder) and says what is wrong with
//! it. `pack` reads and checks every input before it writes anything, so a refused run leaves
//! the output folder as it was.

use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::oci::{Digest, DigestError, NameError};

use crate::chart::{ChartError, MAX_DECOMPRESSED};

/// A problem with one input file.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct PackError {
    pub path: PathBuf,
    /// Boxed: errors are rare, and small `Result`s keep the happy path cheap.
    pub problem: Box<Problem>,
}

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("{0}")]
    Io(#[source] io::Error),
    #[error("{0}")]
    Imported(#[from] super::imported::Error),
    #[error(transparent)]
    Unwritable(#[from] chartreg_core::oci::gojson::Unwritable),
    #[error("{name} is imported from {}; only charts merge with an imported repository", bundles.join(", "))]
    ImportedLayout { name: String, bundles: Vec<String> },
    /// Boxed: the check reads charts, whose problems are these.
    #[error("images.closure: {0}")]
    Closure(Box<super::closure::Error>),
    #[error(
        "images.closure: require: the charts need images the content does not hold:{}",
        .0.iter().map(|m| format!("\n  {m}")).collect::<String>()
    )]
    MissingImages(Vec<super::closure::Missing>),
    /// Boxed: rare, and its causes hold paths.
    #[error("{0}")]
    ChartImages(Box<super::images_file::Error>),
    #[error(
        "a repository is named `{}`, the file pack writes the images the charts need into; rename it",
        chartreg_core::content::CHART_IMAGES_FILE
    )]
    ChartImagesName,
    #[error(
        "verify: require: refused:{}",
        .0.iter().map(|l| format!("\n  {l}")).collect::<String>()
    )]
    Unverified(Vec<String>),
    #[error("verify: {0}")]
    Signatures(crate::verify::LayoutError),
    #[error("not the record pack writes of what verified: {0}")]
    NotVerification(#[source] serde_json::Error),
    #[error(
        "{} verified against another policy (an earlier run's verify:, which this file records); one output folder holds what one policy verified: give every content file packed into it the same verify: section, or pack these again with this one, or remove them from the folder",
        .0.join(", ")
    )]
    OtherPolicy(Vec<String>),
    #[error(
        "a repository is named `{}`, the file pack writes what verified into; rename it",
        chartreg_core::content::VERIFICATION_FILE
    )]
    VerificationName,
    /// Boxed: rare, and its causes hold paths.
    #[error("{0}")]
    Origins(Box<super::origins_file::Error>),
    #[error(
        "a repository is named `{}`, the file pack writes where charts came from into; rename it",
        chartreg_core::content::ORIGINS_FILE
    )]
    OriginsName,
    #[error("no chart packages (*.tgz) or chart folders found")]
    NoPackages,
    #[error("a provenance file with no package beside it (expected {0})")]
    OrphanProvenance(String),
    #[error(transparent)]
    Chart(#[from] ChartError),
    #[error("chart `{chart}` cannot be served as `{repository}`: {error}")]
    RepositoryName {
        chart: String,
        repository: String,
        error: NameError,
    },
    #[error("invalid --prefix: {0}")]
    Prefix(NameError),
    /// Charts are not images of a registry: a prefix read as one would put them in its
    /// namespace.
    #[error(
        "invalid --prefix `{0}`: its first component would be read as a registry host (it has a `.` or a port, or is `localhost`), and charts are not kept per registry; choose another, such as `charts`"
    )]
    PrefixIsARegistry(String),
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
    Write(#[source] chartreg_core::tree::WriteError),
    #[error(
        "its bytes do not have the digest {expected} ({size} bytes) they are packed under (the input is not what it says, or changed while being packed); nothing was written"
    )]
    NotItsDigest { expected: Digest, size: u64 },

    // Chart folders.
    #[error("not a chart folder: it has no Chart.yaml")]
    NotAChartFolder,
    #[error("SOURCE_DATE_EPOCH must be whole seconds since 1970, not `{0}`")]
    SourceDateEpoch(String),
    #[error("line {line}: {problem}")]
    HelmIgnore { line: usize, problem: String },
    #[error("file names must be UTF-8")]
    NotUtf8Name,
    #[error(
        "a symbolic link that leaves {} (to {}){}",
        bound.as_ref().map_or("the chart folder".to_owned(), |b| format!("the folder holding the content file, {}", b.display())),
        target.display(),
        if bound.is_some() { ": links are followed only inside it" } else { ": links are followed only inside it (with --config, inside the content file's folder)" }
    )]
    SymlinkOutside {
        target: PathBuf,
        /// The folder links may lead anywhere inside (the content file's), when not the chart's.
        bound: Option<PathBuf>,
    },
    #[error("a symbolic link loops back to a folder above it")]
    SymlinkLoop,
    #[error("not a regular file (Helm loads only regular files)")]
    NotRegularFile,
    #[error(
        "the chart folder's files come to more than {} MiB with this one, the most Helm loads of a chart",
        MAX_DECOMPRESSED >> 20
    )]
    FolderTooLarge,
    #[error("values.schema.json is not valid JSON")]
    SchemaJson,
    #[error("charts/ holds only subcharts: folders with a Chart.yaml, or .tgz packages")]
    NotASubchart,
    #[error("found in Chart.yaml, but missing in charts/: {}", .0.join(", "))]
    MissingDependencies(Vec<String>),

    // Image layouts.
    #[error("unsupported image layout version `{0}` (expected `1.0.0`)")]
    LayoutVersion(String),
    #[error("invalid JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error(
        "invalid JSON: {tag}'s {} `{upstream}`: {source}",
        chartreg_core::oci::layout::UPSTREAM_DIGEST
    )]
    UpstreamDigest {
        tag: String,
        upstream: String,
        source: DigestError,
    },
    #[error(
        "names no manifest by tag (`org.opencontainers.image.ref.name`): give one with DIR=REPOSITORY:TAG"
    )]
    LayoutUntagged,
    #[error("names no manifest `{tag}` (it names: {})", if named.is_empty() { "none".to_owned() } else { named.join(", ") })]
    LayoutTagUnknown { tag: String, named: Vec<String> },
    #[error("names two manifests `{0}`")]
    LayoutTagTwice(String),
    #[error("names no manifest {0} among its entries")]
    LayoutDigestUnknown(Box<Digest>),
    #[error("tags `{tag}` as {tagged}, but {pinned} is asked for under that tag")]
    LayoutTagElsewhere {
        tag: String,
        tagged: Box<Digest>,
        pinned: Box<Digest>,
    },
    #[error("missing: the layout has no blob {0}")]
    LayoutMissingBlob(Digest),
    #[error("is {actual} bytes, but its descriptor says {expected}")]
    LayoutBlobSize { expected: u64, actual: u64 },
    #[error("has digest {actual}, not the {expected} it is stored under")]
    LayoutDigest {
        expected: Box<Digest>,
        actual: Box<Digest>,
    },
    #[error("`{0}` is not a manifest media type (OCI or Docker image manifest or index)")]
    LayoutNotManifest(String),
    #[error("indexes nest deeper than 8 levels")]
    LayoutTooDeep,
    #[error(
        "is a symbolic link that leaves the layout (to {}): a layout's files are read only inside it",
        .0.display()
    )]
    LayoutOutside(PathBuf),
    #[error(
        "is not a regular file (a FIFO, a device or a socket): a layout's documents and blobs are files"
    )]
    LayoutNotFile,
    #[error(
        "is a manifest of {size} bytes, its descriptor says: more than the {} MiB registries accept",
        super::imported::MAX_MANIFEST >> 20
    )]
    LayoutManifestTooLarge { size: u64 },
    #[error("is {size} bytes, more than the {} MiB read of it", limit >> 20)]
    LayoutFileTooLarge { size: u64, limit: u64 },
    #[error("only sha256 content is supported, not `{0}`")]
    Algorithm(String),

    // The output folder.
    #[error("repository `{repository}` is also written from {}", other.display())]
    RepositoryTwice { repository: String, other: PathBuf },
    #[error(
        "repository `{0}` exists and was not written by pack (remove it, or choose another name)"
    )]
    NotOwned(String),
    #[error("repository `{inner}` would lie inside repository `{outer}`")]
    Nested { inner: String, outer: String },
    #[error("{0}")]
    Record(#[from] super::owned::RecordError),
    /// The output folder could not be replaced (or the run was stopped): it is as it was.
    #[error("{0}")]
    Output(#[from] crate::durable::Error),
    #[error("out of date, run `make assets` and commit the result: {}", .0.join(", "))]
    Stale(Vec<String>),
}

/// The [`PackError`] of `problem` (pack's own, or a chart's) at `path`.
pub(crate) fn at<P: Into<Problem>>(path: &Path) -> impl Fn(P) -> PackError + '_ {
    move |problem| PackError {
        path: path.to_owned(),
        problem: Box::new(problem.into()),
    }
}

pub(crate) fn io_at(path: &Path) -> impl Fn(io::Error) -> PackError + '_ {
    move |e| PackError {
        path: path.to_owned(),
        problem: Box::new(Problem::Io(e)),
    }
}
