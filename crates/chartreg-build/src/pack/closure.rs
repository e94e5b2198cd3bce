//! The content file's `images:` section: [`find`] finds the images the packed charts need
//! (`chart_images`), once per run; `images_file` writes them down, and with `closure: require
//! | warn` [`missing`] checks them: every image needed must be held by what pack writes, as a
//! node will ask for it: the repository chartreg serves it as (`quay.io/x/y`,
//! `docker.io/library/nginx`), holding its tag, or, when the chart pins a digest, that
//! manifest (the node pulls by the digest). A repository is read from the tree pack is about
//! to write, or, for one pack keeps without writing (imported from a bundle), from its
//! `index.json` and blobs on disk.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chartreg_core::oci::layout::{INDEX_FILE, ImageIndex, REF_NAME, blob_path};
use chartreg_core::tree::{Entry, Tree};

use super::{ChartPackage, Layer};
use crate::chart_images::{self, ChartInput, Closure, ImageRef, Options};
use crate::content_file::ClosureCheck;

/// What the content file's `images:` section asks for.
#[derive(Debug, Clone)]
pub struct ImagesCheck {
    /// The content file, for messages.
    pub config: PathBuf,
    /// `images.closure`; absent: the images are found and written down, not checked.
    pub mode: Option<ClosureCheck>,
    /// Values files by chart name.
    pub values: BTreeMap<String, Vec<PathBuf>>,
    pub options: Options,
}

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Find(#[from] chart_images::Error),
    #[error("{path}: {source}")]
    Index {
        path: String,
        source: serde_json::Error,
    },
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One needed image the content does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// `NAME VERSION` of each chart that needs it.
    pub charts: Vec<String>,
    pub image: ImageRef,
    /// Whether the content holds the repository at all.
    pub repository_held: bool,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (charts, need) = match self.charts.as_slice() {
            [one] => (format!("chart {one}"), "needs"),
            many => (format!("charts {}", many.join(", ")), "need"),
        };
        let repository = self.image.repository();
        write!(f, "{charts} {need} {}: ", self.image)?;
        match (self.repository_held, self.image.digest(), self.image.tag()) {
            (false, _, _) => write!(f, "no repository {repository}"),
            (true, Some(digest), _) => write!(f, "{repository} has no manifest {digest}"),
            (true, None, Some(tag)) => write!(f, "{repository} has no tag {tag}"),
            (true, None, None) => write!(f, "{repository} has no such image"),
        }
    }
}

/// The tags and manifests of one repository.
#[derive(Debug, Default)]
struct Holding {
    tags: BTreeSet<String>,
    blobs: BTreeSet<String>,
}

/// The images of `charts`, found as `check` says.
pub fn find(check: &ImagesCheck, charts: &[&ChartPackage]) -> Result<Closure, Error> {
    let charts = charts
        .iter()
        .map(|chart| {
            let values = check.values.get(chart.chart.name());
            chart_input(chart, values.cloned().unwrap_or_default())
        })
        .collect::<Result<Vec<_>, chart_images::Error>>()?;
    Ok(chart_images::find(&charts, &check.options)?)
}

/// `chart` as `chart_images` reads it, with the values files `values`: its package's bytes
/// (the file read again, or the package made from its folder).
pub fn chart_input(
    chart: &ChartPackage,
    values: Vec<PathBuf>,
) -> Result<ChartInput, chart_images::Error> {
    let package = match &chart.layer {
        Layer::File(file) => {
            std::fs::read(&file.path).map_err(|source| chart_images::Error::Read {
                path: file.path.clone(),
                source,
            })?
        }
        Layer::Packaged { data, .. } => data.clone(),
    };
    Ok(ChartInput {
        path: chart.path.clone(),
        package,
        values,
    })
}

/// The needed images of `closure` that neither `trees` (by repository name) nor the
/// repositories in `kept` (on disk under `out`) hold.
pub fn missing<'t>(
    closure: &Closure,
    trees: impl Iterator<Item = (&'t String, &'t Tree)>,
    kept: &BTreeSet<String>,
    out: &Path,
) -> Result<Vec<Missing>, Error> {
    let trees: BTreeMap<&String, &Tree> = trees.collect();
    let mut holdings: BTreeMap<String, Option<Holding>> = BTreeMap::new();
    let mut missing = Vec::new();
    for (image, charts) in closure.needed() {
        let repository = image.repository();
        if !holdings.contains_key(&repository) {
            let holding = match trees.get(&repository) {
                Some(tree) => Some(of_tree(&repository, tree)?),
                None if kept.contains(&repository) => Some(on_disk(&out.join(&repository))?),
                None => None,
            };
            holdings.insert(repository.clone(), holding);
        }
        let holding = holdings.get(&repository).and_then(Option::as_ref);
        let held = holding.is_some_and(|h| match (image.digest(), image.tag()) {
            (Some(digest), _) => h.blobs.contains(&blob_path(digest)),
            (None, Some(tag)) => h.tags.contains(tag.as_str()),
            (None, None) => false,
        });
        if !held {
            missing.push(Missing {
                charts: charts.iter().map(|c| c.replacen(':', " ", 1)).collect(),
                image: image.clone(),
                repository_held: holding.is_some(),
            });
        }
    }
    Ok(missing)
}

fn tags_of(index: &ImageIndex) -> BTreeSet<String> {
    index
        .manifests
        .iter()
        .filter_map(|d| d.annotations.get(REF_NAME).cloned())
        .collect()
}

fn of_tree(name: &str, tree: &Tree) -> Result<Holding, Error> {
    // A repository's tree holds its files under its name (`quay.io/x/y/index.json`).
    let index_key = format!("{name}/{INDEX_FILE}");
    let tags = match tree.get(&index_key) {
        Some(entry) => {
            let data = match entry {
                Entry::Bytes(data) => std::borrow::Cow::Borrowed(data.as_slice()),
                Entry::File(blob) | Entry::Link(blob) => {
                    std::borrow::Cow::Owned(std::fs::read(&blob.path).map_err(|source| {
                        Error::Read {
                            path: blob.path.clone(),
                            source,
                        }
                    })?)
                }
            };
            let index: ImageIndex =
                serde_json::from_slice(&data).map_err(|source| Error::Index {
                    path: index_key.clone(),
                    source,
                })?;
            tags_of(&index)
        }
        None => BTreeSet::new(),
    };
    Ok(Holding {
        tags,
        blobs: tree
            .keys()
            .filter_map(|k| k.strip_prefix(name)?.strip_prefix('/'))
            .filter(|k| k.starts_with("blobs/"))
            .map(str::to_owned)
            .collect(),
    })
}

fn on_disk(dir: &Path) -> Result<Holding, Error> {
    let index_path = dir.join(INDEX_FILE);
    let data = std::fs::read(&index_path).map_err(|source| Error::Read {
        path: index_path.clone(),
        source,
    })?;
    let index: ImageIndex = serde_json::from_slice(&data).map_err(|source| Error::Index {
        path: index_path.display().to_string(),
        source,
    })?;
    let mut blobs = BTreeSet::new();
    let algorithms = dir.join("blobs");
    for algorithm in std::fs::read_dir(&algorithms)
        .map_err(|source| Error::Read {
            path: algorithms.clone(),
            source,
        })?
        .flatten()
    {
        for blob in std::fs::read_dir(algorithm.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            blobs.insert(format!(
                "blobs/{}/{}",
                algorithm.file_name().to_string_lossy(),
                blob.file_name().to_string_lossy()
            ));
        }
    }
    Ok(Holding {
        tags: tags_of(&index),
        blobs,
    })
}
