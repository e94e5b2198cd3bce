//! A chart package read for its images: its `Chart.yaml` (name, version, appVersion, image
//! annotations, dependencies' aliases), its `values.yaml`, and its subcharts, each read the same
//! way, from folders under `charts/` or packages (`charts/*.tgz`) inside the package, as Helm's
//! loader finds them.

use std::collections::BTreeMap;

use serde_yaml_ng::Value;

use crate::pack::chart_name::{self, ChartNameError};
use crate::pack::metadata::Metadata;
use crate::pack::{ArchiveFile, Problem, archive_files, gunzip};

/// Why a chart could not be read for its images.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// Boxed: errors are rare, and small `Result`s keep the happy path cheap.
    #[error("{0}")]
    Package(Box<Problem>),
    #[error("{file}: {message}")]
    Yaml { file: String, message: String },
    #[error("{0}: no Chart.yaml")]
    NoChartYaml(String),
    #[error("{file}: invalid chart name {name:?}: it {reason}")]
    Name {
        file: String,
        name: String,
        reason: ChartNameError,
    },
}

impl From<Problem> for TreeError {
    fn from(p: Problem) -> Self {
        TreeError::Package(Box::new(p))
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

impl ChartTree {
    /// `NAME:VERSION`.
    pub fn id(&self) -> String {
        format!("{}:{}", self.name, self.version)
    }

    /// Reads a chart package's bytes.
    pub fn read(package: &[u8]) -> Result<ChartTree, TreeError> {
        let tar = gunzip(package)?;
        let files = archive_files(&tar, |_| true)?;
        ChartTree::of_files(&files, "")
    }

    /// The chart whose files are those under `dir` (`""`, or `charts/NAME/`).
    fn of_files(files: &[ArchiveFile], dir: &str) -> Result<ChartTree, TreeError> {
        let at = |name: &str| format!("{dir}{name}");
        let file = |name: &str| files.iter().rev().find(|f| f.inner == at(name));
        let chart_yaml = file("Chart.yaml").ok_or_else(|| TreeError::NoChartYaml(at("")))?;
        let metadata: Metadata =
            serde_yaml_ng::from_slice(&chart_yaml.data).map_err(|e| TreeError::Yaml {
                file: at("Chart.yaml"),
                message: e.to_string(),
            })?;
        // Subcharts' names are matched against rendered paths and shown in messages.
        chart_name::check_helm(&metadata.name.0).map_err(|reason| TreeError::Name {
            file: at("Chart.yaml"),
            name: metadata.name.0.clone(),
            reason,
        })?;
        let values = match file("values.yaml") {
            Some(f) => match serde_yaml_ng::from_slice::<Value>(&f.data) {
                Ok(Value::Null) => Value::Mapping(Default::default()),
                Ok(v) => v,
                Err(e) => {
                    return Err(TreeError::Yaml {
                        file: at("values.yaml"),
                        message: e.to_string(),
                    });
                }
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
        let mut subcharts = Vec::new();
        let charts_dir = at("charts/");
        let mut folders: Vec<&str> = files
            .iter()
            .filter_map(|f| f.inner.strip_prefix(&charts_dir))
            .filter_map(|rest| rest.strip_suffix("/Chart.yaml"))
            .filter(|name| !name.contains('/') && !name.starts_with(['_', '.']))
            .collect();
        folders.sort_unstable();
        folders.dedup();
        for folder in folders {
            let sub = ChartTree::of_files(files, &format!("{charts_dir}{folder}/"))?;
            subcharts.push((key_of(&sub.name), sub));
        }
        for f in files {
            let Some(name) = f.inner.strip_prefix(&charts_dir) else {
                continue;
            };
            if name.contains('/') || name.starts_with(['_', '.']) || !name.ends_with(".tgz") {
                continue;
            }
            let sub = ChartTree::read(&f.data).map_err(|e| match e {
                TreeError::Package(p) => TreeError::Yaml {
                    file: f.inner.clone(),
                    message: p.to_string(),
                },
                other => other,
            })?;
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
mod tests {
    use super::*;

    fn package(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut header, path, *data).unwrap();
        }
        let tar = tar.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn subcharts_are_read_from_folders_and_packages_by_their_values_key() {
        let inner = package(&[
            ("db/Chart.yaml", b"name: db\nversion: 2.0.0\n"),
            ("db/values.yaml", b"image: postgres:16\n"),
        ]);
        let outer = package(&[
            (
                "app/Chart.yaml",
                b"name: app\nversion: 1.0.0\nappVersion: \"3.1\"\ndependencies:\n  - {name: agent, version: 0.1.0, alias: probe}\n  - {name: db, version: 2.0.0}\n",
            ),
            ("app/values.yaml", b"image: {repository: app}\n"),
            ("app/charts/agent/Chart.yaml", b"name: agent\nversion: 0.1.0\n"),
            ("app/charts/agent/values.yaml", b"image: agent:1\n"),
            ("app/charts/db-2.0.0.tgz", &inner),
        ]);
        let tree = ChartTree::read(&outer).unwrap();
        assert_eq!(tree.id(), "app:1.0.0");
        assert_eq!(tree.app_version, "3.1");
        let keys: Vec<(&str, String)> = tree
            .subcharts
            .iter()
            .map(|(k, c)| (k.as_str(), c.id()))
            .collect();
        assert_eq!(
            keys,
            [("probe", "agent:0.1.0".into()), ("db", "db:2.0.0".into())]
        );
        assert_eq!(
            tree.subchart_of("app/charts/db/templates/x.yaml")
                .map(ChartTree::id),
            Some("db:2.0.0".into())
        );
        assert!(tree.subchart_of("app/templates/x.yaml").is_none());
    }
}
