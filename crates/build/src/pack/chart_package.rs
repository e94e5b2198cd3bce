//! The chart package input: a Helm chart package (`.tgz`) and the `.tgz.prov` beside it, laid
//! out as `helm push` would push them: the config blob (Chart.yaml metadata as Helm's JSON, see
//! `metadata`), the package bytes unchanged as the chart layer, the `.prov` as a provenance
//! layer, and a manifest with Helm's annotations, tagged with the version (`+` written `_`);
//! one repository `<prefix>/<chart name>` per chart, holding all its versions.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::oci::layout::{Annotations, Descriptor, ImageManifest};
use chartreg_core::oci::{Digest, RepositoryName, gojson, media_type};
use chartreg_core::tree::{BlobFile, LayoutBuilder, Tree};

use super::chart::{self, Chart};
use super::{PackError, Packed, Problem, at, io_at, provenance};

const PACKAGE_EXT: &str = ".tgz";
const PROVENANCE_EXT: &str = ".prov";

/// One chart package, read and checked: its file, what it holds, and its provenance file.
#[derive(Debug, Clone)]
pub struct ChartPackage {
    pub path: PathBuf,
    /// The package as the chart layer: this file, with the digest of the bytes that were read.
    pub package: BlobFile,
    pub chart: Chart,
    /// The `.tgz.prov` beside the package, checked against it.
    pub provenance: Option<BlobFile>,
}

fn provenance_path(package: &Path) -> PathBuf {
    let mut p = package.as_os_str().to_owned();
    p.push(PROVENANCE_EXT);
    PathBuf::from(p)
}

/// A file's bytes, and the blob reference they make.
fn read_blob(path: &Path) -> io::Result<(Vec<u8>, BlobFile)> {
    let data = fs::read(path)?;
    let blob = BlobFile {
        path: path.to_owned(),
        size: data.len() as u64,
        digest: Digest::sha256_of(&data),
    };
    Ok((data, blob))
}

impl ChartPackage {
    /// Reads the package at `path` (and `path.prov` when present) and checks both.
    pub fn read(path: &Path) -> Result<ChartPackage, PackError> {
        let (package, blob) = read_blob(path).map_err(io_at(path))?;
        let chart = chart::read(&package).map_err(at(path))?;
        let prov_path = provenance_path(path);
        let provenance = match read_blob(&prov_path) {
            Ok((prov, prov_blob)) => {
                let signed_name = format!("{}-{}{PACKAGE_EXT}", chart.name(), chart.version());
                provenance::check(&prov, &signed_name, &blob.digest).map_err(at(&prov_path))?;
                Some(prov_blob)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_at(&prov_path)(e)),
        };
        Ok(ChartPackage {
            path: path.to_owned(),
            package: blob,
            chart,
            provenance,
        })
    }

    /// Whether `other` is the same package with the same provenance file.
    fn same_as(&self, other: &ChartPackage) -> bool {
        self.package.digest == other.package.digest
            && self.provenance.as_ref().map(|p| &p.digest)
                == other.provenance.as_ref().map(|p| &p.digest)
    }
}

/// The package `path` names when it is one of a folder's packages (`*.tgz`); a provenance
/// file with no package beside it is an error.
pub(super) fn in_folder(path: &Path) -> Result<Option<PathBuf>, PackError> {
    let name = path.to_string_lossy();
    if let Some(package) = name.strip_suffix(PROVENANCE_EXT)
        && package.ends_with(PACKAGE_EXT)
        && !Path::new(package).is_file()
    {
        return Err(at(path)(Problem::OrphanProvenance(package.to_owned())));
    }
    Ok((name.ends_with(PACKAGE_EXT) && path.is_file()).then(|| path.to_owned()))
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

/// Stores what `helm push` would push for one chart version in `layout`; returns the
/// manifest's descriptor.
fn lay_out_version(layout: &mut LayoutBuilder, package: &ChartPackage) -> Descriptor {
    let chart = &package.chart;
    let config = layout.blob(media_type::HELM_CONFIG, gojson::to_vec(&chart.metadata));
    let mut layers = vec![layout.blob_file(media_type::HELM_CHART, package.package.clone())];
    if let Some(prov) = &package.provenance {
        layers.push(layout.blob_file(media_type::HELM_PROVENANCE, prov.clone()));
    }
    // `helm push` orders layers by digest.
    layers.sort_by(|a, b| a.digest.cmp(&b.digest));
    let manifest = ImageManifest {
        annotations: helm_annotations(chart),
        ..ImageManifest::new(config, layers)
    };
    layout.manifest(media_type::OCI_MANIFEST, &manifest)
}

/// Lays out every package as OCI image layouts under `<prefix>/<chart name>/`; the same
/// package given twice counts once, two packages of one chart version are an error.
pub(super) fn lay_out<'a>(
    packages: impl IntoIterator<Item = &'a ChartPackage>,
    prefix: &str,
) -> Result<Packed, PackError> {
    // repository -> tag -> package
    let mut repositories: BTreeMap<String, BTreeMap<&str, &ChartPackage>> = BTreeMap::new();
    for package in packages {
        let chart = &package.chart;
        let repository = format!("{prefix}/{}", chart.name());
        if let Err(error) = repository.parse::<RepositoryName>() {
            return Err(at(&package.path)(Problem::RepositoryName {
                chart: chart.name().to_owned(),
                repository,
                error,
            }));
        }
        let versions = repositories.entry(repository).or_default();
        if let Some(existing) = versions.get(chart.tag.as_str()) {
            if existing.same_as(package) {
                continue;
            }
            return Err(at(&package.path)(Problem::Conflict {
                name: chart.name().to_owned(),
                version: chart.version().to_owned(),
                other: existing.path.clone(),
            }));
        }
        versions.insert(chart.tag.as_str(), package);
    }

    let mut packed = Packed {
        tree: Tree::new(),
        charts: repositories.len(),
        versions: repositories.values().map(BTreeMap::len).sum(),
    };
    for (repository, versions) in repositories {
        let mut layout = LayoutBuilder::new(&repository);
        for (tag, package) in versions {
            let manifest = lay_out_version(&mut layout, package);
            layout.list(manifest, Some(tag));
        }
        packed.tree.extend(layout.finish());
    }
    Ok(packed)
}
