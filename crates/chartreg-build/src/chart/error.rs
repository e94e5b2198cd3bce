//! Why a chart package is not one Helm loads, or not one chartreg can serve: its gzip and tar
//! layers, its archive's entries, its subcharts' budget, and its `Chart.yaml`. A
//! [`ChartError`] says what is wrong inside the package; the caller names the package (pack
//! with the input's path, `ChartTree` with the place inside the package, fetch with the URL).

use chartreg_core::oci::TagError;

use super::MAX_DECOMPRESSED;
use super::name::ChartNameError;
use super::unpacking::{MAX_NESTING, MAX_UNPACKED};
use super::version::VersionError;
use crate::yaml::YamlError;

#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("not a gzip file (a Helm chart package is a .tgz)")]
    NotGzip,
    #[error("corrupt gzip data: {0}")]
    Gzip(#[source] std::io::Error),
    #[error("decompresses to more than {} MiB, the most Helm loads", MAX_DECOMPRESSED / 1024 / 1024)]
    TooLarge,
    #[error("not a valid tar archive: {0}")]
    Tar(#[source] std::io::Error),
    #[error("not a valid tar archive: the archive holds no files")]
    EmptyArchive,
    #[error(
        "no Chart.yaml in the archive's top folder (a chart package holds `<name>/Chart.yaml`)"
    )]
    NoChartYaml,
    #[error("Chart.yaml is at the top of the archive, not inside the chart's folder")]
    ChartYamlAtTop,
    // Entries Helm's loader refuses: shown as Rust writes strings, control characters escaped.
    #[error(
        "archive entry {0:?} references the parent directory (`..`); Helm refuses a chart that does"
    )]
    EntryParent(String),
    #[error("archive entry {0:?} is an absolute path; Helm refuses a chart that holds one")]
    EntryAbsolute(String),
    #[error("archive entry {0:?} names a Windows drive; Helm refuses a chart that holds one")]
    EntryDrive(String),
    #[error(
        "archive entry {0:?} lies outside the chart's folder (a chart package holds `<name>/...`); Helm refuses content outside it"
    )]
    EntryOutside(String),
    #[error(
        "archive entry {entry:?} is {kind}; a chart package holds only files and folders (`helm package` writes nothing else, and Helm would load it as an empty file)"
    )]
    EntryKind { entry: String, kind: String },
    #[error(
        "archive entries {first:?} and {entry:?} are both the chart's {inner:?}: Helm loads the last of them, so a package holds each file once"
    )]
    EntryTwice {
        entry: String,
        first: String,
        inner: String,
    },
    #[error("subcharts nest more than {MAX_NESTING} deep here (charts nest two or three deep)")]
    SubchartsTooDeep,
    #[error(
        "the chart's packages, its own and its subcharts', decompress to more than {} MiB together",
        MAX_UNPACKED >> 20
    )]
    SubchartsTooLarge,
    #[error("invalid YAML in {file}: {source}")]
    Yaml {
        file: &'static str,
        source: YamlError,
    },
    #[error("invalid YAML in {0}: the document is not a mapping")]
    NotMapping(&'static str),
    #[error("invalid chart metadata: {0}")]
    Metadata(#[source] serde_yaml_ng::Error),
    #[error("Chart.yaml has no `{0}`")]
    MissingField(&'static str),
    #[error("invalid chart name {name:?}: it {reason}")]
    InvalidChartName {
        name: String,
        reason: ChartNameError,
    },
    #[error("chart version `{0}` is not a version Helm accepts: {1}")]
    Version(String, VersionError),
    #[error("chart version `{0}` cannot be an OCI tag: {1}")]
    Tag(String, TagError),
    #[error("chart type `{0}` must be `application` or `library`")]
    ChartType(String),
    #[error("dependency alias `{0}` may only hold letters, digits, `_` and `-`")]
    DependencyAlias(String),
    #[error("more than one dependency named or aliased `{0}`")]
    DuplicateDependency(String),
}

impl ChartError {
    /// The file of the package the error is about, when it is one file's YAML.
    pub fn yaml_file(&self) -> Option<&'static str> {
        match self {
            ChartError::Yaml { file, .. } | ChartError::NotMapping(file) => Some(file),
            _ => None,
        }
    }
}
