//! mindthegap's input files, read as mindthegap reads them (strictly: an unknown key is an
//! error naming the key and its line).
//!
//! The Helm charts file:
//! ```yaml
//! repositories:
//!   podinfo:                      # any name
//!     repoURL: https://stefanprodan.github.io/podinfo   # a classic Helm repository, or an
//!                                 # OCI one (oci://ghcr.io/stefanprodan/charts): CHART:VERSION
//!                                 # under it
//!     username: u                 # optional, sent only to repoURL's host
//!     password: p
//!     tlsVerify: true             # default
//!     charts:
//!       podinfo: ["6.2.0"]
//! chartURLs:                      # direct references
//!   - oci://ghcr.io/stefanprodan/charts/podinfo:6.3.0
//!   - ./local/mychart-1.0.0.tgz   # relative to the file's folder (and locked as written)
//! ```
//!
//! The images file: registry host -> `tlsVerify`, `credentials` (`username`, `password`),
//! `images` (repository path -> what to take of it: tags, digests `sha256:<hex>`, or tags
//! pinned to a digest `TAG@sha256:<hex>`; see [`crate::pin`]).
//! ```yaml
//! quay.io:
//!   tlsVerify: true
//!   images:
//!     jetstack/cert-manager-controller: [v1.16.1]
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::pin::Pin;

/// The Helm charts file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChartsFile {
    #[serde(default)]
    pub repositories: BTreeMap<String, ChartRepository>,
    #[serde(default, rename = "chartURLs")]
    pub chart_urls: Vec<String>,
    /// The file's folder: local chart URLs are relative to it.
    #[serde(skip)]
    pub base: PathBuf,
}

/// A Helm repository (classic, or OCI with an `oci://` URL) and the chart versions to take
/// from it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChartRepository {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    #[serde(default = "yes")]
    pub tls_verify: bool,
    #[serde(default)]
    pub charts: BTreeMap<String, Vec<String>>,
}

fn yes() -> bool {
    true
}

/// The images file: registry host -> what to take from it.
pub type ImagesFile = BTreeMap<String, ImageRegistry>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageRegistry {
    #[serde(default = "yes")]
    pub tls_verify: bool,
    #[serde(default)]
    pub credentials: Option<Credentials>,
    #[serde(default)]
    pub images: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Credentials {
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
}

/// Why a list could not be taken; each names the file or the entry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    File(#[from] crate::yaml_file::Error),
    #[error("`{0}`: expected oci://HOST/PATH/CHART:VERSION")]
    OciUrl(String),
    #[error("{}: {image}: {source} (an entry is a tag, sha256:<hex>, or TAG@sha256:<hex>)", file.display())]
    ImageEntry {
        file: PathBuf,
        image: String,
        source: Box<crate::pin::PinError>,
    },
    #[error("{}: {first} and {second} would be served under one tag: list one of them", file.display())]
    ServedTwice {
        file: PathBuf,
        first: String,
        second: String,
    },
}

/// A file read: its YAML decoded strictly, every error naming the file.
fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, Error> {
    Ok(crate::yaml_file::read(path)?)
}

impl ChartsFile {
    /// Reads `path`. Local chart URLs stay as written (the lock keys them so, whatever folder
    /// fetch runs in) and are read relative to the file's folder ([`ChartsFile::local`]).
    pub fn read(path: &Path) -> Result<ChartsFile, Error> {
        let mut file: ChartsFile = read(path)?;
        file.base = path.parent().unwrap_or(Path::new("")).to_owned();
        Ok(file)
    }

    /// Where the local package `url` (a `chartURLs` entry without a scheme) is.
    pub fn local(&self, url: &str) -> PathBuf {
        self.base.join(url)
    }
}

/// Reads the images file at `path`.
pub fn read_images(path: &Path) -> Result<ImagesFile, Error> {
    read(path)
}

/// One chart version asked for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChartSource {
    /// From a classic repository (by its name in the file).
    Repository {
        repository: String,
        chart: String,
        version: String,
    },
    /// `oci://host/path/chart:version`.
    Oci {
        registry: String,
        repository: String,
        tag: String,
    },
    /// A local package (or an http(s) URL of one).
    Url(String),
}

impl ChartRepository {
    /// For an OCI repository (`oci://HOST/PATH`): its registry host and path.
    pub fn oci(&self) -> Option<(&str, &str)> {
        let rest = self.repo_url.strip_prefix("oci://")?.trim_end_matches('/');
        Some(rest.split_once('/').unwrap_or((rest, "")))
    }
}

impl ChartSource {
    /// What the lock and messages call this source.
    pub fn describe(&self, file: &ChartsFile) -> String {
        match self {
            ChartSource::Repository {
                repository,
                chart,
                version,
            } => {
                let url = file
                    .repositories
                    .get(repository)
                    .map_or("?", |r| r.repo_url.as_str());
                format!("{chart} {version} from {url}")
            }
            ChartSource::Oci {
                registry,
                repository,
                tag,
            } => format!("oci://{registry}/{repository}:{tag}"),
            ChartSource::Url(url) => url.clone(),
        }
    }
}

/// Every chart version the file asks for, in a stable order.
pub fn chart_sources(file: &ChartsFile) -> Result<Vec<ChartSource>, Error> {
    let mut sources = Vec::new();
    for (name, repository) in &file.repositories {
        for (chart, versions) in &repository.charts {
            for version in versions {
                sources.push(ChartSource::Repository {
                    repository: name.clone(),
                    chart: chart.clone(),
                    version: version.clone(),
                });
            }
        }
    }
    for url in &file.chart_urls {
        if let Some(rest) = url.strip_prefix("oci://") {
            let (host, path) = rest
                .split_once('/')
                .ok_or_else(|| Error::OciUrl(url.clone()))?;
            // No tag means `latest`, as mindthegap takes it.
            let (repository, tag) = match path.rsplit_once(':') {
                Some((repository, tag)) if !tag.contains('/') => (repository, tag),
                _ => (path, "latest"),
            };
            sources.push(ChartSource::Oci {
                registry: host.to_owned(),
                repository: repository.to_owned(),
                tag: tag.to_owned(),
            });
        } else {
            sources.push(ChartSource::Url(url.clone()));
        }
    }
    sources.sort();
    sources.dedup();
    Ok(sources)
}

/// One image asked for: a tag, a digest, or a tag pinned to a digest ([`Pin`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImageSource {
    pub registry: String,
    pub repository: String,
    pub pin: Pin,
}

impl ImageSource {
    /// What the lock and messages call it: `REGISTRY/PATH:TAG`, `REGISTRY/PATH@DIGEST`,
    /// `REGISTRY/PATH:TAG@DIGEST`.
    pub fn describe(&self) -> String {
        format!("{}/{}{}", self.registry, self.repository, self.pin)
    }
}

/// Every image the file asks for, in a stable order; an entry that is no tag, digest or
/// `TAG@DIGEST`, or two entries of a repository served under one tag (`v1` and
/// `v1@sha256:...`), fails naming the file and the entries.
pub fn image_sources(file: &ImagesFile, path: &Path) -> Result<Vec<ImageSource>, Error> {
    let mut sources = Vec::new();
    for (registry, r) in file {
        for (repository, tags) in &r.images {
            for tag in tags {
                let pin = tag.parse::<Pin>().map_err(|source| Error::ImageEntry {
                    file: path.to_owned(),
                    image: format!("{registry}/{repository}"),
                    source: Box::new(source),
                })?;
                sources.push(ImageSource {
                    registry: registry.clone(),
                    repository: repository.clone(),
                    pin,
                });
            }
        }
    }
    sources.sort();
    sources.dedup();
    one_tag_each(&sources).map_err(|(first, second)| Error::ServedTwice {
        file: path.to_owned(),
        first,
        second,
    })?;
    Ok(sources)
}

/// `Err` with the two entries when two of `sources` (sorted) would be served under one tag
/// of one repository.
pub fn one_tag_each(sources: &[ImageSource]) -> Result<(), (String, String)> {
    let mut seen: BTreeMap<(&str, &str, &str), &ImageSource> = BTreeMap::new();
    for source in sources {
        let key = (
            source.registry.as_str(),
            source.repository.as_str(),
            source.pin.served().as_str(),
        );
        if let Some(first) = seen.insert(key, source) {
            return Err((first.describe(), source.describe()));
        }
    }
    Ok(())
}

/// Where an image's layout goes: `<images-out>/<registry host>/<repository>`, with the port's
/// `:` written `_` (a folder name must not hold `:` on every system).
pub fn layout_dir(images_out: &Path, registry: &str, repository: &str) -> PathBuf {
    images_out.join(registry.replace(':', "_")).join(repository)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mindthegap_files_strictly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repos.yaml");
        std::fs::write(
            &path,
            "repositories:\n  podinfo:\n    repoURL: https://example.test/podinfo\n    charts:\n      podinfo: [\"6.2.0\", \"6.1.0\"]\nchartURLs:\n  - oci://ghcr.io/stefanprodan/charts/podinfo:6.3.0\n  - oci://127.0.0.1:5000/charts/hello\n  - ./local-1.0.0.tgz\n",
        )
        .unwrap();
        let file = ChartsFile::read(&path).unwrap();
        let sources = chart_sources(&file).unwrap();
        assert_eq!(sources.len(), 5);
        assert!(sources.contains(&ChartSource::Oci {
            registry: "127.0.0.1:5000".into(),
            repository: "charts/hello".into(),
            tag: "latest".into()
        }));
        assert!(sources.contains(&ChartSource::Url("./local-1.0.0.tgz".into())));
        assert_eq!(
            file.local("./local-1.0.0.tgz"),
            dir.path().join("./local-1.0.0.tgz")
        );

        std::fs::write(
            &path,
            "repositories:\n  x:\n    repoURL: https://e.test\n    chart: {}\n",
        )
        .unwrap();
        let e = ChartsFile::read(&path).unwrap_err().to_string();
        assert!(
            e.contains("unknown field `chart`") && e.contains("line 4"),
            "{e}"
        );

        let images = dir.path().join("images.yaml");
        std::fs::write(
            &images,
            "quay.io:\n  images:\n    a/b: [v1, v2]\n  tlsverify: false\n",
        )
        .unwrap();
        let e = read_images(&images).unwrap_err().to_string();
        assert!(e.contains("tlsverify") && e.contains("line 4"), "{e}");
    }
}
