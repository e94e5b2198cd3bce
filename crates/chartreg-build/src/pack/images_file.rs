//! The list pack writes beside the repositories when the content file has an `images:`
//! section: per packed chart version (by the repository pack serves the chart as and its
//! version), the images it needs and the ways each was found, and whether Helm rendered it
//! ([`CHART_IMAGES_FILE`], in `chartreg_core`'s [`ChartImagesFile`] shape, which the server
//! reads). It is content (the binary embeds it and shows it on the charts' pages), committed
//! like the chart repositories it describes, and compared by `pack --check`.
//!
//! A run writes the versions of the charts it packs; the entries of chart repositories an
//! earlier run packed under another prefix are kept while the record lists them; with no
//! entries left (no `images:` section) the file is removed.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::content::{CHART_IMAGES_FILE, ChartImagesFile, ImageEntry, VersionImages, Way};
use chartreg_core::oci::{NameError, RepositoryName};

use super::ChartPackage;
use crate::chart_images::Closure;

/// Why the list could not be made or the one in the output folder read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{}: not a list pack wrote: {source}", path.display())]
    NotList {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{image}: the repository it is served as is not valid: {source}")]
    Repository { image: String, source: NameError },
    #[error("chart {chart} would be served as `{repository}`: {source}")]
    Chart {
        chart: String,
        repository: String,
        source: NameError,
    },
}

/// The list of what `closure` found for `charts` (served under `prefix`): every chart version,
/// with the images it needs (see `chart_images`: found by rendering or an annotation, or in
/// the values of a chart Helm did not render), each with every way this chart's reading found
/// it.
pub fn of(
    closure: &Closure,
    charts: &[&ChartPackage],
    prefix: &str,
) -> Result<ChartImagesFile, Error> {
    let mut file = ChartImagesFile::default();
    for package in charts {
        let chart = &package.chart;
        let id = format!("{}:{}", chart.name(), chart.version());
        let repository = format!("{prefix}/{}", chart.name());
        let repository: RepositoryName = repository.parse().map_err(|source| Error::Chart {
            chart: id.clone(),
            repository,
            source,
        })?;
        let mut images = Vec::new();
        for (image, found) in &closure.images {
            let here: Vec<_> = found.iter().filter(|f| f.chart == id).collect();
            if !here.iter().any(|f| f.needed) {
                continue;
            }
            let from: BTreeSet<Way> = here.iter().map(|f| f.from).collect();
            let served = image.repository();
            images.push(ImageEntry {
                image: image.to_string(),
                repository: served.parse().map_err(|source| Error::Repository {
                    image: image.to_string(),
                    source,
                })?,
                tag: image.tag().cloned(),
                digest: image.digest().cloned(),
                from: from.into_iter().collect(),
            });
        }
        let version = VersionImages {
            rendered: closure.charts.get(&id).copied().unwrap_or(false),
            images,
        };
        file.charts
            .entry(repository)
            .or_default()
            .insert(chart.version().to_owned(), version);
    }
    Ok(file)
}

/// The list in `out`, if there is one.
pub fn load(out: &Path) -> Result<Option<ChartImagesFile>, Error> {
    let path = out.join(CHART_IMAGES_FILE);
    match fs::read(&path) {
        Ok(data) => serde_json::from_slice(&data)
            .map(Some)
            .map_err(|source| Error::NotList { path, source }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Read { path, source }),
    }
}

/// The list after a run: `previous`'s entries of the repositories `kept` says to keep, and
/// this run's (`made`, when the content file has an `images:` section); `None` when that
/// leaves nothing.
pub fn merged(
    previous: Option<ChartImagesFile>,
    made: Option<ChartImagesFile>,
    kept: impl Fn(&str) -> bool,
) -> Option<ChartImagesFile> {
    let mut file = previous.unwrap_or_default();
    file.charts
        .retain(|repository, _| kept(repository.as_str()));
    if let Some(made) = made {
        file.charts.extend(made.charts);
    }
    (!file.charts.is_empty()).then_some(file)
}

/// Why `present` (the list in the output folder) is not `wanted`, when Helm explains it: the
/// charts it rendered differ (a run without Helm finds images statically only).
pub fn stale_note(present: Option<&[u8]>, wanted: Option<&ChartImagesFile>) -> Option<String> {
    let present: ChartImagesFile = serde_json::from_slice(present?).ok()?;
    let rendered = |file: &ChartImagesFile| {
        file.charts
            .values()
            .flat_map(|versions| versions.values())
            .filter(|v| v.rendered)
            .count()
    };
    let (was, now) = (rendered(&present), rendered(wanted?));
    (was != now).then(|| {
        format!(
            "Helm rendered {now} chart versions now and {was} when it was written: give pack the \
             same Helm (--helm, CHARTREG_HELM or the PATH)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(repository: &str, version: &str, rendered: bool) -> ChartImagesFile {
        let mut file = ChartImagesFile::default();
        file.charts
            .entry(repository.parse().unwrap())
            .or_default()
            .insert(
                version.to_owned(),
                VersionImages {
                    rendered,
                    images: Vec::new(),
                },
            );
        file
    }

    #[test]
    fn a_run_replaces_its_own_entries_and_keeps_those_it_is_told_to() {
        let mut previous = file("charts/a", "1.0.0", true);
        previous
            .charts
            .extend(file("other/b", "1.0.0", true).charts);
        let made = file("charts/a", "2.0.0", false);
        let merged = merged(Some(previous.clone()), Some(made), |r| r == "other/b").unwrap();
        let names: Vec<(&str, Vec<&String>)> = merged
            .charts
            .iter()
            .map(|(r, v)| (r.as_str(), v.keys().collect()))
            .collect();
        assert_eq!(
            names,
            [
                ("charts/a", vec![&"2.0.0".to_owned()]),
                ("other/b", vec![&"1.0.0".to_owned()])
            ]
        );
        assert_eq!(super::merged(Some(previous), None, |_| false), None);
        assert_eq!(super::merged(None, None, |_| true), None);
    }

    #[test]
    fn a_list_stale_because_helm_rendered_other_charts_says_so() {
        let written = file("charts/a", "1.0.0", true).to_bytes();
        let note = stale_note(Some(&written), Some(&file("charts/a", "1.0.0", false))).unwrap();
        assert!(
            note.contains("rendered 0 chart versions now and 1"),
            "{note}"
        );
        assert_eq!(
            stale_note(Some(&written), Some(&file("charts/a", "2.0.0", true))),
            None
        );
        assert_eq!(
            stale_note(None, Some(&file("charts/a", "1.0.0", true))),
            None
        );
    }
}
