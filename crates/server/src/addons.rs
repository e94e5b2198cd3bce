//! `chartreg addons-config`: the ConfigMap that tells a management cluster which add-on chart
//! versions exist (the `default-helm-addons-config` of Cluster API add-on tooling), made from
//! what the binary holds instead of by hand.
//!
//! One data key per chart under the repository URL's path (`oci://host/charts` -> the
//! repositories `charts/<name>`): the chart name, or the key a mapping file gives it
//! (`nfd: node-feature-discovery`), or `<key>-<version>` for every version with
//! `--all-versions`. `--only-mapped` keeps only the charts the mapping names; `--exclude`
//! leaves charts out (a name that is no chart is an error, not a silent no-op). Each value is
//! a block of YAML: `ChartName`, `ChartVersion` (the version as Chart.yaml writes it, `v` and
//! `+` kept) and `RepositoryURL`.
//!
//! By default each chart's version is the one `helm pull` without `--version` pulls
//! ([`helm_latest`] over the tags list chartreg serves, then that tag's Chart.yaml version):
//! with both `0.14.5` and `v0.14.5` packaged, `0.14.5`. When Helm would find none (a chart
//! with only prereleases, or with no version that is strict semver), the newest by Helm's
//! order, stable first, which `--version` then pulls.

mod mapping;

use std::collections::{BTreeMap, BTreeSet};

use chartreg_core::content::{Kind, Registry, Repository, Unreadable};
use chartreg_core::json;
use chartreg_core::oci::Reference;

use crate::web::model::chart_parts;

use crate::versions::{helm_latest, order};

pub use mapping::{Mapping, MappingError, read_mapping};

/// What the command is asked for.
#[derive(Debug, Clone)]
pub struct Request {
    pub repository_url: String,
    pub name: String,
    pub namespace: Option<String>,
    /// Data key -> chart name.
    pub mapping: Mapping,
    /// Only the charts `mapping` names.
    pub only_mapped: bool,
    /// Charts left out; each must be a chart under the repository URL.
    pub exclude: BTreeSet<String>,
    pub all_versions: bool,
}

/// Why there is no ConfigMap to print.
#[derive(Debug, thiserror::Error)]
pub enum AddonsError {
    #[error("--repository-url must be oci://HOST/PATH, not `{0}`")]
    Url(String),
    #[error("no charts under `{0}/` in this binary")]
    NoCharts(String),
    #[error("the mapping names `{0}`, which is not a chart under the repository URL")]
    UnknownChart(String),
    #[error("--exclude names `{0}`, which is not a chart under the repository URL")]
    UnknownExcluded(String),
    #[error("no chart under `{0}/` is left to list (--only-mapped, --exclude)")]
    NothingLeft(String),
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
}

/// One chart version the ConfigMap lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub chart: String,
    pub version: String,
}

/// A chart's versions: every one (as Chart.yaml writes it, oldest first in Helm's order), and
/// the one `helm pull` without `--version` gets.
struct Chart {
    versions: Vec<String>,
    latest: Option<String>,
}

/// The Chart.yaml version of the chart that `tag` (or the alias chartreg answers it with)
/// names in `repository`; `None` when that is no chart, or a chart whose metadata has no
/// `version` string (which Helm could not install either).
fn chart_version(repository: &Repository, tag: &str) -> Result<Option<String>, Unreadable> {
    // `tag` comes from the repository's tags or its tags list: a valid tag naming a manifest.
    let manifest = tag
        .parse()
        .ok()
        .and_then(|tag| repository.manifest(&Reference::Tag(tag)).ok());
    let Some(manifest) = manifest else {
        return Ok(None);
    };
    if repository.artifact(manifest, Some(tag))?.kind != Kind::Chart {
        return Ok(None);
    }
    let version = chart_parts(repository, manifest)?.and_then(|parts| {
        let version = parts.metadata.get("version")?.as_str()?;
        Some(version.to_owned())
    });
    Ok(version)
}

/// The chart in `repository`, if it holds any chart version.
fn chart(repository: &Repository) -> Result<Option<Chart>, Unreadable> {
    let mut versions = Vec::new();
    for tag in repository.tags() {
        versions.extend(chart_version(repository, tag)?);
    }
    if versions.is_empty() {
        return Ok(None);
    }
    versions.sort_by(|a, b| order(a).cmp(&order(b)).then_with(|| a.cmp(b)));
    versions.dedup();
    let listed = repository.tag_list().names().iter().map(String::as_str);
    let latest = match helm_latest(listed) {
        Some(tag) => chart_version(repository, tag)?,
        None => None,
    };
    Ok(Some(Chart { versions, latest }))
}

impl Chart {
    /// The version the ConfigMap names by default: what Helm pulls without `--version`, else
    /// the newest stable version in Helm's order, else the newest.
    fn default_version(&self) -> Option<&String> {
        let stable = || {
            self.versions
                .iter()
                .rev()
                .find(|v| order(v).is_some_and(|o| o.pre.is_empty()))
        };
        self.latest
            .as_ref()
            .or_else(stable)
            .or(self.versions.last())
    }
}

/// The entries of the ConfigMap for `registry`.
pub fn entries(registry: &Registry, request: &Request) -> Result<Vec<Entry>, AddonsError> {
    let path = request
        .repository_url
        .strip_prefix("oci://")
        .and_then(|rest| rest.split_once('/'))
        .map(|(_, path)| path.trim_end_matches('/'))
        .filter(|path| !path.is_empty())
        .ok_or_else(|| AddonsError::Url(request.repository_url.clone()))?;
    let mut charts: BTreeMap<String, Chart> = BTreeMap::new();
    for repository in registry.repositories() {
        let Some(name) = repository
            .name()
            .strip_prefix(path)
            .and_then(|r| r.strip_prefix('/'))
        else {
            continue;
        };
        if name.contains('/') {
            continue;
        }
        if let Some(chart) = chart(repository)? {
            charts.insert(name.to_owned(), chart);
        }
    }
    if charts.is_empty() {
        return Err(AddonsError::NoCharts(path.to_owned()));
    }
    for name in request.mapping.values() {
        if !charts.contains_key(name) {
            return Err(AddonsError::UnknownChart(name.clone()));
        }
    }
    for name in &request.exclude {
        if !charts.contains_key(name) {
            return Err(AddonsError::UnknownExcluded(name.clone()));
        }
    }
    let mapped: BTreeSet<&String> = request.mapping.values().collect();
    charts.retain(|name, _| {
        !request.exclude.contains(name) && (!request.only_mapped || mapped.contains(name))
    });
    if charts.is_empty() {
        return Err(AddonsError::NothingLeft(path.to_owned()));
    }
    let key_of = |chart: &str| {
        request
            .mapping
            .iter()
            .find(|(_, c)| c.as_str() == chart)
            .map_or_else(|| chart.to_owned(), |(key, _)| key.clone())
    };
    let mut entries = Vec::new();
    for (name, chart) in &charts {
        let key = key_of(name);
        if request.all_versions {
            for version in &chart.versions {
                entries.push(Entry {
                    key: format!("{key}-{version}"),
                    chart: name.clone(),
                    version: version.clone(),
                });
            }
            continue;
        }
        if let Some(version) = chart.default_version() {
            entries.push(Entry {
                key,
                chart: name.clone(),
                version: version.clone(),
            });
        }
    }
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(entries)
}

/// `text` as a YAML scalar that reads back as the same string.
fn scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+/:".contains(&b))
        && !text.starts_with(['-', ':', '.'])
        && text.parse::<f64>().is_err()
        && !matches!(
            text,
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "~"
        );
    if plain {
        text.to_owned()
    } else {
        // A JSON string is a YAML double-quoted scalar.
        json::string(text)
    }
}

/// The ConfigMap as YAML.
pub fn config_map(entries: &[Entry], request: &Request) -> String {
    let mut out = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n");
    let mut line = |parts: &[&str]| {
        parts.iter().for_each(|part| out.push_str(part));
        out.push('\n');
    };
    line(&["  name: ", &scalar(&request.name)]);
    if let Some(namespace) = &request.namespace {
        line(&["  namespace: ", &scalar(namespace)]);
    }
    line(&["data:"]);
    for e in entries {
        line(&["  ", &json::string(&e.key), ": |"]);
        line(&["    ChartName: ", &scalar(&e.chart)]);
        line(&["    ChartVersion: ", &scalar(&e.version)]);
        line(&["    RepositoryURL: ", &scalar(&request.repository_url)]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_as_helm_orders_them() {
        let mut versions = vec!["1.10.0", "v1.2", "1.2.1-rc.1", "1.2.1", "0.9.0+build.7"];
        versions.sort_by_key(|v| order(v));
        assert_eq!(
            versions,
            ["0.9.0+build.7", "v1.2", "1.2.1-rc.1", "1.2.1", "1.10.0"]
        );
        assert!(order("latest").is_none());
    }

    #[test]
    fn scalars_read_back_as_strings() {
        assert_eq!(scalar("v0.14.5"), "v0.14.5");
        assert_eq!(scalar("1.2.3+build.7"), "1.2.3+build.7");
        assert_eq!(
            scalar("oci://helm-repository.ns.svc/charts"),
            "oci://helm-repository.ns.svc/charts"
        );
        assert_eq!(scalar("1.0"), "\"1.0\"");
        assert_eq!(scalar("true"), "\"true\"");
        assert_eq!(scalar("a b"), "\"a b\"");
    }
}
