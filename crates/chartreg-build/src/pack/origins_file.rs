//! Where each chart packed from a lock was downloaded from, written beside the repositories
//! ([`ORIGINS_FILE`], in `chartreg_core`'s [`OriginsFile`] shape, which the server reads for
//! its pages and its SBOM). It is content, committed like the chart repositories it describes,
//! and compared by `pack --check`.
//!
//! The lock pins each package by its sha256 ([`Downloaded`], from `Lock::pack_inputs`); a
//! packed chart whose package is one of those gets its lock's `url` as its origin. A URL an
//! origin may not be ([`OriginUrl`]: credentials, odd characters, another scheme) is left out
//! with a warning naming the lock and its entry; a local path (a `chartURLs` entry of a file)
//! is no upstream, and is left out quietly. A run writes the origins of the charts it packs;
//! those of chart repositories an earlier run packed under another prefix are kept while the
//! record lists them; with none left, the file is removed.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::content::{ORIGINS_FILE, Origin, OriginUrl, OriginsFile};
use chartreg_core::oci::{Digest, RepositoryName};

use super::ChartPackage;

/// A chart package a lock pins: the file, the lock and its entry, the package's digest as
/// checked against the lock, and the URL fetch downloaded it from (the lock's `url`, as
/// written: checked here, when it becomes an origin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    pub file: PathBuf,
    pub lock: PathBuf,
    /// The entry's key in the lock (`hello 1.0.0 from https://…`).
    pub key: String,
    pub digest: Digest,
    pub url: String,
}

/// Why the file in the output folder could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{}: not a record pack wrote of where charts came from: {source}", path.display())]
    NotOrigins {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// The origins of `charts` (served under `prefix`) whose packages `downloaded` pins, and a
/// warning for each URL that could not be one.
pub fn of(
    charts: &[&ChartPackage],
    prefix: &str,
    downloaded: &[Downloaded],
) -> (OriginsFile, Vec<String>) {
    let mut warnings = Vec::new();
    let mut by_digest: BTreeMap<&Digest, OriginUrl> = BTreeMap::new();
    for d in downloaded {
        if !d.url.contains("://") {
            continue;
        }
        match d.url.parse::<OriginUrl>() {
            Ok(url) => {
                by_digest.entry(&d.digest).or_insert(url);
            }
            Err(e) => warnings.push(format!(
                "{}: chart {}: its url is not recorded as where it came from: {e}",
                d.lock.display(),
                d.key
            )),
        }
    }
    let mut file = OriginsFile::default();
    for package in charts {
        let digest = package.layer.digest();
        let Some(url) = by_digest.get(digest) else {
            continue;
        };
        // pack refuses a chart whose repository name is not valid before it gets here.
        let Ok(repository) = format!("{prefix}/{}", package.chart.name()).parse::<RepositoryName>()
        else {
            continue;
        };
        file.charts.entry(repository).or_default().insert(
            package.chart.version().to_owned(),
            Origin {
                url: url.clone(),
                digest: digest.clone(),
            },
        );
    }
    (file, warnings)
}

/// The file in `out`, if there is one.
pub fn load(out: &Path) -> Result<Option<OriginsFile>, Error> {
    let path = out.join(ORIGINS_FILE);
    match fs::read(&path) {
        Ok(data) => serde_json::from_slice(&data)
            .map(Some)
            .map_err(|source| Error::NotOrigins { path, source }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Read { path, source }),
    }
}

/// The file after a run: `previous`'s entries of the repositories `kept` says to keep, and
/// this run's (`made`); `None` when that leaves nothing.
pub fn merged(
    previous: Option<OriginsFile>,
    made: OriginsFile,
    kept: impl Fn(&str) -> bool,
) -> Option<OriginsFile> {
    let mut file = previous.unwrap_or_default();
    file.charts
        .retain(|repository, _| kept(repository.as_str()));
    file.charts.extend(made.charts);
    (!file.charts.is_empty()).then_some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(name: &str, version: &str) -> ChartPackage {
        let dir = tempfile::tempdir().unwrap();
        let chart = dir.path().join(name);
        fs::create_dir_all(&chart).unwrap();
        fs::write(
            chart.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
        )
        .unwrap();
        ChartPackage::from_folder(&chart, None).unwrap()
    }

    fn downloaded(package: &ChartPackage, url: &str) -> Downloaded {
        Downloaded {
            file: PathBuf::from("charts/x.tgz"),
            lock: PathBuf::from("chartreg.lock"),
            key: format!(
                "{} {} from somewhere",
                package.chart.name(),
                package.chart.version()
            ),
            digest: package.layer.digest().clone(),
            url: url.to_owned(),
        }
    }

    #[test]
    fn each_locked_package_gets_its_url_and_no_other_chart_gets_one() {
        let (a, b, c) = (
            package("a", "1.0.0"),
            package("b", "2.0.0+x"),
            package("c", "0.1.0"),
        );
        let pinned = [
            downloaded(&a, "https://charts.example.io/a-1.0.0.tgz"),
            downloaded(&b, "oci://ghcr.io/org/b:2.0.0_x"),
            // A package given by its path: no upstream, no warning.
            downloaded(&c, "../local/c-0.1.0.tgz"),
        ];
        let (file, warnings) = of(&[&a, &b, &c], "charts", &pinned);
        assert!(warnings.is_empty(), "{warnings:?}");
        let got: Vec<(String, String, String)> = file
            .charts
            .iter()
            .flat_map(|(r, versions)| {
                versions
                    .iter()
                    .map(move |(v, o)| (r.to_string(), v.clone(), o.url.to_string()))
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "charts/a".into(),
                    "1.0.0".into(),
                    "https://charts.example.io/a-1.0.0.tgz".into()
                ),
                (
                    "charts/b".into(),
                    "2.0.0+x".into(),
                    "oci://ghcr.io/org/b:2.0.0_x".into()
                ),
            ]
        );
        assert_eq!(
            file.charts[&"charts/a".parse::<RepositoryName>().unwrap()]["1.0.0"].digest,
            *a.layer.digest()
        );
    }

    #[test]
    fn a_url_an_origin_may_not_be_is_left_out_with_a_warning_naming_the_entry() {
        let a = package("a", "1.0.0");
        let pinned = [downloaded(
            &a,
            "https://user:secret@charts.example.io/a.tgz",
        )];
        let (file, warnings) = of(&[&a], "charts", &pinned);
        assert!(file.charts.is_empty());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("chartreg.lock: chart a 1.0.0 from somewhere: ")
                && warnings[0].contains("credentials"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_run_keeps_what_other_prefixes_packed_and_removes_the_file_when_nothing_is_left() {
        let a = package("a", "1.0.0");
        let (made, _) = of(
            &[&a],
            "other",
            &[downloaded(&a, "https://charts.example.io/a.tgz")],
        );
        let merged_file = merged(None, made.clone(), |_| false).unwrap();
        let kept = merged(Some(merged_file.clone()), OriginsFile::default(), |r| {
            r == "other/a"
        });
        assert_eq!(kept, Some(merged_file.clone()));
        assert_eq!(
            merged(Some(merged_file), OriginsFile::default(), |_| false),
            None
        );
        let bytes = made.to_bytes();
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_none());
        fs::write(dir.path().join(ORIGINS_FILE), &bytes).unwrap();
        assert_eq!(load(dir.path()).unwrap(), Some(made));
        fs::write(dir.path().join(ORIGINS_FILE), b"[]").unwrap();
        let refused = load(dir.path()).unwrap_err().to_string();
        assert!(refused.contains(ORIGINS_FILE), "{refused}");
    }
}
