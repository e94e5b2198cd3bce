//! A Helm chart package (`.tgz`) read the way Helm's loader reads it: the code that `pack`
//! (serving charts), `chart_images` (finding their images) and `fetch` (checking what it
//! downloads) share, below all three.
//!
//! 1. [`archive`]: the one walk over a package's archive, refusing what Helm's loader refuses;
//!    [`Unpacking`] bounds what one chart and its subcharts may decompress and how deep they
//!    nest ([`unpacking`]).
//! 2. [`read`]: the package's `Chart.yaml` (and a v1 chart's `requirements.yaml`), read within
//!    [`crate::yaml`]'s bounds into [`Metadata`] ([`metadata`], normalised as Helm normalises
//!    it), its name ([`name`]) and version ([`version`]) checked: a [`Chart`], with the time
//!    its `Chart.yaml` was packaged.
//!
//! Every refusal is a [`ChartError`], saying what is wrong inside the package; callers name
//! the package.

mod archive;
mod error;
pub mod metadata;
pub mod name;
pub mod unpacking;
pub mod version;

use std::time::{Duration, SystemTime};

use serde_yaml_ng::{Mapping, Value};

use crate::yaml;
use chartreg_core::oci::Tag;

pub use archive::MAX_DECOMPRESSED;
pub(crate) use archive::{ArchiveFile, archive_files, gunzip};
pub use error::ChartError;
pub use metadata::Metadata;
pub use unpacking::Unpacking;

/// What serving one package needs to know of it.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Normalised as Helm normalises it before `helm push`.
    pub metadata: Metadata,
    /// The chart version as a tag (`+` written `_`).
    pub tag: Tag,
    /// When `Chart.yaml` was written into the package (its tar entry's mtime).
    pub created: SystemTime,
}

impl Chart {
    pub fn name(&self) -> &str {
        &self.metadata.name.0
    }

    pub fn version(&self) -> &str {
        &self.metadata.version.0
    }
}

/// Reads and checks one package.
pub fn read(package: &[u8]) -> Result<Chart, ChartError> {
    let tar = gunzip(package, MAX_DECOMPRESSED)?;
    let files = archive_files(&tar, |inner| {
        inner == "Chart.yaml" || inner == "requirements.yaml"
    })?;
    let file = |name: &str| files.iter().find(|f| f.inner == name);
    let Some(chart_yaml) = file("Chart.yaml") else {
        return Err(ChartError::NoChartYaml);
    };

    // Helm decodes Chart.yaml, then requirements.yaml, into one value: the latter's top-level
    // keys replace the former's. The YAML of both shares one budget of values.
    let mut budget = yaml::Budget::default();
    let mut merged = Mapping::new();
    overlay(&mut merged, &chart_yaml.data, "Chart.yaml", &mut budget)?;
    if let Some(requirements) = file("requirements.yaml") {
        overlay(
            &mut merged,
            &requirements.data,
            "requirements.yaml",
            &mut budget,
        )?;
    }
    let mut metadata: Metadata =
        serde_yaml_ng::from_value(Value::Mapping(merged)).map_err(ChartError::Metadata)?;
    metadata.normalise();

    let tag = validate(&metadata)?;
    Ok(Chart {
        metadata,
        tag,
        created: SystemTime::UNIX_EPOCH + Duration::from_secs(chart_yaml.mtime),
    })
}

/// Decodes one YAML file and lays its top-level keys over `merged`.
fn overlay(
    merged: &mut Mapping,
    data: &[u8],
    file: &'static str,
    budget: &mut yaml::Budget,
) -> Result<(), ChartError> {
    let value = yaml::value(data, budget).map_err(|source| ChartError::Yaml { file, source })?;
    match value {
        Value::Null => Ok(()),
        Value::Mapping(map) => {
            merged.extend(map);
            Ok(())
        }
        _ => Err(ChartError::NotMapping(file)),
    }
}

/// Refuses what Helm refuses, and what cannot become an OCI tag.
fn validate(m: &Metadata) -> Result<Tag, ChartError> {
    let name = m.name.0.as_str();
    if name.is_empty() {
        return Err(ChartError::MissingField("name"));
    }
    name::check(name).map_err(|reason| ChartError::InvalidChartName {
        name: name.to_owned(),
        reason,
    })?;
    let version = m.version.0.as_str();
    if version.is_empty() {
        return Err(ChartError::MissingField("version"));
    }
    version::check(version).map_err(|e| ChartError::Version(version.to_owned(), e))?;
    let tag = version.replace('+', "_");
    let tag: Tag = tag
        .parse()
        .map_err(|e| ChartError::Tag(version.to_owned(), e))?;
    if !matches!(m.chart_type.0.as_str(), "" | "application" | "library") {
        return Err(ChartError::ChartType(m.chart_type.0.clone()));
    }
    let mut seen = std::collections::HashSet::new();
    for d in &m.dependencies {
        let alias = d.alias.0.as_str();
        if !alias.is_empty()
            && !alias
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(ChartError::DependencyAlias(alias.to_owned()));
        }
        let key = if alias.is_empty() { &d.name.0 } else { alias };
        if !seen.insert(key.to_owned()) {
            return Err(ChartError::DuplicateDependency(key.to_owned()));
        }
    }
    Ok(tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::{alias_bomb, deep};
    use rstest::rstest;
    use std::time::Instant;

    fn package(entries: &[(&str, &str)]) -> Vec<u8> {
        let entries: Vec<(&str, &[u8])> = entries.iter().map(|(p, d)| (*p, d.as_bytes())).collect();
        crate::samples::tar_gz(&entries)
    }

    const CHART: &str = "apiVersion: v1\nname: demo\nversion: 1.0.0\n";

    /// Each YAML file of the metadata, with a bomb: refused naming the file, within a second.
    /// Measured in a release build: the alias bomb 11 to 12 ms, nested 100,000 deep 0.1 ms
    /// (serde_yaml_ng alone: 16 ms at its repetition limit, and 16 s).
    #[rstest]
    #[case::chart_yaml_alias_bomb("Chart.yaml", format!("{CHART}{}", alias_bomb()), "alias bomb")]
    #[case::chart_yaml_deep("Chart.yaml", format!("{CHART}{}", deep()), "more than 256 deep")]
    #[case::requirements_alias_bomb("requirements.yaml", alias_bomb(), "alias bomb")]
    #[case::requirements_deep("requirements.yaml", deep(), "more than 256 deep")]
    fn yaml_bombs_are_refused_quickly_naming_the_file(
        #[case] file: &str,
        #[case] text: String,
        #[case] words: &str,
    ) {
        let chart = if file == "Chart.yaml" { &text } else { CHART };
        let mut entries = vec![("demo/Chart.yaml", chart)];
        let path = format!("demo/{file}");
        if file != "Chart.yaml" {
            entries.push((&path, &text));
        }
        let package = package(&entries);
        let start = Instant::now();
        let e = read(&package).unwrap_err().to_string();
        let took = start.elapsed();
        assert!(e.contains(file) && e.contains(words), "{e}");
        assert!(took.as_secs() < 1, "{took:?}");
    }

    #[test]
    fn a_second_chart_yaml_is_refused_not_merged() {
        let package = package(&[
            ("demo/Chart.yaml", CHART),
            ("demo/templates/x.yaml", "x"),
            ("demo/Chart.yaml", "name: other\nversion: 9.9.9\n"),
        ]);
        let e = read(&package).unwrap_err().to_string();
        assert!(
            e.contains("entries \"demo/Chart.yaml\" and \"demo/Chart.yaml\" are both"),
            "{e}"
        );
    }

    #[test]
    fn requirements_yaml_overlays_chart_yaml() {
        let package = package(&[
            ("demo/Chart.yaml", CHART),
            (
                "demo/requirements.yaml",
                "dependencies:\n  - {name: db, version: 1.0.0}\n",
            ),
        ]);
        let chart = read(&package).unwrap();
        assert_eq!(chart.name(), "demo");
        assert_eq!(chart.metadata.dependencies.len(), 1);
        assert_eq!(
            chart.created,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
        );
    }
}
