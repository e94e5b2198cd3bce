//! The chart input: a Helm chart package (`.tgz`) and the `.tgz.prov` beside it, or a chart
//! folder packaged (`chart_folder`), laid out as `helm push` would push them: the config blob (Chart.yaml metadata as Helm's JSON, see
//! `metadata`), the package bytes unchanged as the chart layer, the `.prov` as a provenance
//! layer, and a manifest with Helm's annotations, tagged with the version (`+` written `_`);
//! one repository `<prefix>/<chart name>` per chart, holding all its versions.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::oci::gojson::{self, Unwritable};
use chartreg_core::oci::layout::{Annotations, Descriptor, ImageManifest};
use chartreg_core::oci::{Digest, RepositoryName, media_type};
use chartreg_core::tree::{BlobFile, LayoutBuilder, Tree};

use super::{PackError, Problem, at, chart_folder, io_at, provenance};
use crate::chart::{self, Chart, MAX_DECOMPRESSED};

const PACKAGE_EXT: &str = ".tgz";
const PROVENANCE_EXT: &str = ".prov";

/// One chart, read and checked: where it came from, its package, what it holds, and its
/// provenance file.
#[derive(Debug, Clone)]
pub struct ChartPackage {
    /// The package file or the chart folder.
    pub path: PathBuf,
    pub layer: Layer,
    pub chart: Chart,
    /// The `.tgz.prov` beside a package, checked against it.
    pub provenance: Option<BlobFile>,
    /// What reading it found worth a warning (a folder's links that leave it).
    pub warnings: Vec<String>,
}

/// The chart layer: a package file (by reference, with the digest of the bytes that were
/// read), or the package made from a folder.
#[derive(Debug, Clone)]
pub enum Layer {
    File(BlobFile),
    Packaged { data: Vec<u8>, digest: Digest },
}

impl Layer {
    pub fn digest(&self) -> &Digest {
        match self {
            Layer::File(file) => &file.digest,
            Layer::Packaged { digest, .. } => digest,
        }
    }
}

fn provenance_path(package: &Path) -> PathBuf {
    let mut p = package.as_os_str().to_owned();
    p.push(PROVENANCE_EXT);
    PathBuf::from(p)
}

/// A file's bytes, and the blob reference they make.
fn read_blob(path: &Path) -> io::Result<(Vec<u8>, BlobFile)> {
    // A package Helm would load is at most its 100 MiB decompressed; its gzip is smaller.
    let data = chartreg_core::file::read_limited(path, MAX_DECOMPRESSED)?;
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
            layer: Layer::File(blob),
            chart,
            provenance,
            warnings: Vec::new(),
        })
    }

    /// Packages the chart folder `folder` (see `chart_folder`; symbolic links may lead
    /// anywhere inside `links_within` besides the folder itself).
    pub fn from_folder(
        folder: &Path,
        links_within: Option<&Path>,
    ) -> Result<ChartPackage, PackError> {
        let packaged = chart_folder::package(folder, links_within)?;
        Ok(ChartPackage {
            path: folder.to_owned(),
            layer: Layer::Packaged {
                digest: Digest::sha256_of(&packaged.data),
                data: packaged.data,
            },
            chart: packaged.chart,
            provenance: None,
            warnings: packaged.warnings,
        })
    }

    /// Whether `other` is the same package with the same provenance file.
    fn same_as(&self, other: &ChartPackage) -> bool {
        self.layer.digest() == other.layer.digest()
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
fn lay_out_version(
    layout: &mut LayoutBuilder,
    package: &ChartPackage,
) -> Result<Descriptor, Unwritable> {
    let chart = &package.chart;
    let config = layout.blob(media_type::HELM_CONFIG, gojson::to_vec(&chart.metadata)?);
    let chart_layer = match &package.layer {
        Layer::File(file) => layout.blob_file(media_type::HELM_CHART, file.clone()),
        Layer::Packaged { data, .. } => layout.blob(media_type::HELM_CHART, data.clone()),
    };
    let mut layers = vec![chart_layer];
    if let Some(prov) = &package.provenance {
        layers.push(layout.blob_file(media_type::HELM_PROVENANCE, prov.clone()));
    }
    // `helm push` orders layers by digest.
    layers.sort_by(|a, b| a.digest.cmp(&b.digest));
    let manifest = ImageManifest {
        annotations: helm_annotations(chart),
        ..ImageManifest::new(config, layers)
    };
    Ok(layout.manifest(media_type::OCI_MANIFEST, &manifest))
}

/// One chart's repository: its name, tree, how many versions it holds, and an input it
/// came from (for messages).
pub(super) struct ChartRepository {
    pub repository: String,
    pub tree: Tree,
    pub versions: usize,
    pub source: PathBuf,
}

/// Lays out every package as OCI image layouts under `<prefix>/<chart name>/`; the same
/// package given twice counts once, two packages of one chart version are an error.
pub(super) fn lay_out<'a>(
    packages: impl IntoIterator<Item = &'a ChartPackage>,
    prefix: &str,
) -> Result<Vec<ChartRepository>, PackError> {
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

    let mut laid_out = Vec::with_capacity(repositories.len());
    for (repository, versions) in repositories {
        let mut layout = LayoutBuilder::new(&repository);
        let mut source = PathBuf::new();
        for (tag, package) in &versions {
            let manifest = lay_out_version(&mut layout, package).map_err(at(&package.path))?;
            layout.list(manifest, Some(tag));
            source.clone_from(&package.path);
        }
        laid_out.push(ChartRepository {
            repository,
            tree: layout.finish().map_err(at(&source))?,
            versions: versions.len(),
            source,
        });
    }
    Ok(laid_out)
}
