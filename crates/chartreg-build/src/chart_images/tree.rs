//! A chart package read for its images: its `Chart.yaml` (name, version, appVersion, image
//! annotations, dependencies' aliases), its `values.yaml`, and its subcharts, each read the same
//! way, from folders under `charts/` or packages (`charts/*.tgz`) inside the package, as Helm's
//! loader finds them.
//!
//! A package holds what its authors wrote, which may be hostile: its archive is walked with
//! [`crate::chart`]'s checks, the chart and its subcharts are read within one [`Unpacking`] budget
//! (how deep they nest, how much their packages decompress to, how many values their YAML
//! holds), and every YAML document is read within [`yaml`]'s bounds. Errors name the file
//! inside the package, through the packages that hold it (`charts/db.tgz/values.yaml`),
//! control characters escaped.

use std::collections::BTreeMap;

use chartreg_core::shown::escaped;
use serde_yaml_ng::Value;

use crate::chart::name::{self as chart_name, ChartNameError};
use crate::chart::{ArchiveFile, ChartError, Metadata, Unpacking, archive_files};
use crate::yaml::YamlError;

/// Why a chart could not be read for its images.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// Boxed: errors are rare, and small `Result`s keep the happy path cheap.
    #[error("{}", shown_at(at, problem))]
    Package {
        at: String,
        problem: Box<ChartError>,
    },
    #[error("{}: {source}", escaped(file))]
    Yaml { file: String, source: YamlError },
    #[error("{}: {source}", escaped(file))]
    Metadata {
        file: String,
        source: serde_yaml_ng::Error,
    },
    #[error("{}: no Chart.yaml", escaped(.0))]
    NoChartYaml(String),
    #[error("{}: invalid chart name {name:?}: it {reason}", escaped(file))]
    Name {
        file: String,
        name: String,
        reason: ChartNameError,
    },
}

/// `problem`, after where in the package it is when that is not the package itself.
fn shown_at(at: &str, problem: &ChartError) -> String {
    if at.is_empty() {
        problem.to_string()
    } else {
        format!("{}: {problem}", escaped(at))
    }
}

impl From<ChartError> for TreeError {
    fn from(p: ChartError) -> Self {
        TreeError::Package {
            at: String::new(),
            problem: Box::new(p),
        }
    }
}

/// One chart and its subcharts.
#[derive(Debug, Clone)]
pub struct ChartTree {
    pub name: String,
    pub version: String,
    pub app_version: String,
    pub annotations: BTreeMap<String, String>,
    /// `values.yaml` (an empty mapping when there is none).
    pub values: Value,
    /// Each subchart by the key its values sit under in this chart's values (its alias, or its
    /// name).
    pub subcharts: Vec<(String, ChartTree)>,
}

/// The files of one package, by their path under its top folder, each with its place in the
/// archive; and where the package is (`""` for the one read, `charts/db.tgz/` for one inside
/// it, and so on).
struct Package<'a> {
    files: BTreeMap<&'a str, (usize, &'a ArchiveFile)>,
    place: &'a str,
}

impl ChartTree {
    /// `NAME:VERSION`.
    pub fn id(&self) -> String {
        format!("{}:{}", self.name, self.version)
    }

    /// Reads a chart package's bytes.
    pub fn read(package: &[u8]) -> Result<ChartTree, TreeError> {
        ChartTree::unpack(package, "", 0, &mut Unpacking::default())
    }

    /// The chart packaged in `package`, at `place` (see [`Package`]), `depth` subcharts below
    /// the one read.
    fn unpack(
        package: &[u8],
        place: &str,
        depth: usize,
        unpacking: &mut Unpacking,
    ) -> Result<ChartTree, TreeError> {
        let in_package = |problem| TreeError::Package {
            at: place.trim_end_matches('/').to_owned(),
            problem: Box::new(problem),
        };
        let files = {
            let tar = unpacking.gunzip(package).map_err(in_package)?;
            archive_files(&tar, |_| true).map_err(in_package)?
        };
        let package = Package {
            files: files
                .iter()
                .enumerate()
                .map(|(i, f)| (f.inner.as_str(), (i, f)))
                .collect(),
            place,
        };
        ChartTree::of_files(&package, "", depth, unpacking)
    }

    /// The chart whose files are those of `package` under `dir` (`""`, or `charts/NAME/`).
    fn of_files(
        package: &Package,
        dir: &str,
        depth: usize,
        unpacking: &mut Unpacking,
    ) -> Result<ChartTree, TreeError> {
        let place = package.place;
        let at = |name: &str| format!("{place}{dir}{name}");
        let file = |name: &str| {
            package
                .files
                .get(format!("{dir}{name}").as_str())
                .map(|(_, f)| *f)
        };
        let chart_yaml = file("Chart.yaml").ok_or_else(|| TreeError::NoChartYaml(at("")))?;
        let yaml_error = |name: &str, source| TreeError::Yaml {
            file: at(name),
            source,
        };
        let metadata = unpacking
            .yaml(&chart_yaml.data)
            .map_err(|e| yaml_error("Chart.yaml", e))?;
        let metadata: Metadata =
            serde_yaml_ng::from_value(metadata).map_err(|source| TreeError::Metadata {
                file: at("Chart.yaml"),
                source,
            })?;
        // Subcharts' names are matched against rendered paths and shown in messages.
        chart_name::check_helm(&metadata.name.0).map_err(|reason| TreeError::Name {
            file: at("Chart.yaml"),
            name: metadata.name.0.clone(),
            reason,
        })?;
        let values = match file("values.yaml") {
            Some(f) => match unpacking.yaml(&f.data) {
                Ok(Value::Null) => Value::Mapping(Default::default()),
                Ok(v) => v,
                Err(e) => return Err(yaml_error("values.yaml", e)),
            },
            None => Value::Mapping(Default::default()),
        };
        let key_of = |name: &str| {
            metadata
                .dependencies
                .iter()
                .find(|d| d.name.0 == name && !d.alias.0.is_empty())
                .map_or_else(|| name.to_owned(), |d| d.alias.0.clone())
        };
        // What `charts/` holds: each chart's files are walked once here, whatever the number
        // of its subcharts.
        let charts_dir = format!("{dir}charts/");
        let mut folders = Vec::new();
        let mut packages = Vec::new();
        for (path, (i, f)) in package.files.range(charts_dir.as_str()..) {
            let Some(rest) = path.strip_prefix(&charts_dir) else {
                break;
            };
            if rest.starts_with(['_', '.']) {
                continue;
            }
            if let Some(name) = rest.strip_suffix("/Chart.yaml")
                && !name.contains('/')
            {
                folders.push(name);
            } else if !rest.contains('/') && rest.ends_with(".tgz") {
                packages.push((*i, *f));
            }
        }
        // Packages in archive order, as Helm's loader meets them.
        packages.sort_unstable_by_key(|(i, _)| *i);
        let nested = |name: &str| -> Result<(), TreeError> {
            Unpacking::nest(depth + 1).map_err(|problem| TreeError::Package {
                at: at(&format!("charts/{name}")),
                problem: Box::new(problem),
            })
        };
        let mut subcharts = Vec::new();
        for folder in folders {
            nested(folder)?;
            let sub = ChartTree::of_files(
                package,
                &format!("{charts_dir}{folder}/"),
                depth + 1,
                unpacking,
            )?;
            subcharts.push((key_of(&sub.name), sub));
        }
        for (_, f) in packages {
            nested(f.inner.trim_start_matches(charts_dir.as_str()))?;
            let place = format!("{place}{}/", f.inner);
            let sub = ChartTree::unpack(&f.data, &place, depth + 1, unpacking)?;
            subcharts.push((key_of(&sub.name), sub));
        }
        Ok(ChartTree {
            name: metadata.name.0,
            version: metadata.version.0,
            app_version: metadata.app_version.0,
            annotations: metadata
                .annotations
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect(),
            values,
            subcharts,
        })
    }

    /// The subchart a rendered template path's folders name (`platform/charts/agent/...`):
    /// the chain of subcharts below this one, by folder name (a subchart's folder is its
    /// chart name).
    pub fn subchart_of(&self, source: &str) -> Option<&ChartTree> {
        let mut parts = source.split('/').skip(1).peekable();
        let mut chart = self;
        let mut found = None;
        while parts.next() == Some("charts") {
            let name = parts.next()?;
            let sub = chart
                .subcharts
                .iter()
                .map(|(_, c)| c)
                .find(|c| c.name == name)?;
            found = Some(sub);
            chart = sub;
        }
        found
    }
}

#[cfg(test)]
mod tests;
