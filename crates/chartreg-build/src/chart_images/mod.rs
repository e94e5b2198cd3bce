//! The images each chart needs: found three ways, best first, joined per image.
//!
//! For each chart ([`ChartInput`]: its package or folder, the package's bytes, and the values
//! files the team names for it):
//! 1. `render`: Helm renders it with its values and those files ([`helm`]), and every image in
//!    the pod specs of the output is read ([`rendered`]); a chart Helm cannot render (it
//!    refuses, or is stopped at a bound) is an error, unless the options accept the static
//!    ways' finding for it instead (`--static-fallback`, a warning);
//! 2. `annotation`: the images its `Chart.yaml` annotations list ([`annotations`]);
//! 3. `values`: the images its values name, read statically ([`values`]).
//!
//! References are normalised ([`reference`]) and joined into a [`Closure`]: per image, every
//! place it was found. An image is *needed* when rendering or an annotation found it, or when
//! the values did in a chart that was not rendered (no Helm, or Helm failed); an image only the
//! values name in a rendered chart is listed, not needed (a part those values leave disabled).
//! `command` is `chartreg-build images`; pack checks the closure against what it packs, and
//! writes down what each chart version needs (`pack::images_file`).

pub mod annotations;
pub mod command;
pub mod flags;
pub mod helm;
pub mod reference;
pub mod rendered;
pub mod tree;
pub mod values;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;
use serde_yaml_ng::Value;

pub use helm::{Helm, HelmError, RenderLimits};
pub use reference::{ImageRef, ReferenceError};
pub use tree::{ChartTree, TreeError};

/// Why finding the images failed: an input that could not be read, naming it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Chart { path: PathBuf, source: TreeError },
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("values file {}: {source}", path.display())]
    Values {
        path: PathBuf,
        source: serde_yaml_ng::Error,
    },
    #[error(transparent)]
    Helm(#[from] HelmError),
    /// Boxed: errors are rare, and small `Result`s keep the happy path cheap.
    #[error(
        "{chart} ({}): Helm could not render it: {source}\n  (its images are not found statically \
         instead unless asked: --static-fallback)",
        path.display()
    )]
    Render {
        chart: String,
        path: PathBuf,
        source: Box<HelmError>,
    },
}

/// A way of finding images: the content model's, which names them in the list pack writes
/// beside the repositories (`render`, `annotation`, `values`).
pub use chartreg_core::content::Way;

/// One chart to read.
#[derive(Debug, Clone)]
pub struct ChartInput {
    /// The package or folder, as Helm takes it and messages name it.
    pub path: PathBuf,
    /// The package's bytes (a folder packaged).
    pub package: Vec<u8>,
    /// Values files laid over the chart's own, in order.
    pub values: Vec<PathBuf>,
}

/// How to look.
#[derive(Debug, Clone)]
pub struct Options {
    /// Helm to render with; `None`: the static ways only.
    pub helm: Option<Helm>,
    /// The ways to use (all three unless told).
    pub ways: BTreeSet<Way>,
    /// When Helm cannot render a chart, its images are found statically (with a warning)
    /// instead of failing.
    pub static_fallback: bool,
}

/// One place an image was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    /// The chart given (`NAME:VERSION`).
    pub chart: String,
    /// The subchart it is in (`NAME:VERSION`), if not the chart itself.
    pub subchart: Option<String>,
    pub from: Way,
    /// The template and pod spec, the annotation, or the values path.
    pub at: String,
    /// The values files the chart was read with.
    pub values: Vec<String>,
    /// Whether this finding makes the image needed (see the module's documentation).
    #[serde(skip)]
    pub needed: bool,
}

/// Every image the charts reference, with where each was found.
#[derive(Debug, Clone, Default)]
pub struct Closure {
    pub images: BTreeMap<ImageRef, Vec<Found>>,
    /// The charts read (`NAME:VERSION`), and whether Helm rendered each.
    pub charts: BTreeMap<String, bool>,
    /// What the reading met and went on from: charts Helm could not render, annotations and
    /// rendered images that are no references.
    pub warnings: Vec<String>,
}

impl Closure {
    /// The images needed (see the module's documentation), with the charts that need each.
    pub fn needed(&self) -> impl Iterator<Item = (&ImageRef, BTreeSet<&str>)> {
        self.images.iter().filter_map(|(image, found)| {
            let charts: BTreeSet<&str> = found
                .iter()
                .filter(|f| f.needed)
                .map(|f| f.chart.as_str())
                .collect();
            (!charts.is_empty()).then_some((image, charts))
        })
    }
}

/// Finds the images of every chart in `charts`.
pub fn find(charts: &[ChartInput], options: &Options) -> Result<Closure, Error> {
    let mut closure = Closure::default();
    for input in charts {
        find_one(input, options, &mut closure)?;
    }
    Ok(closure)
}

fn find_one(input: &ChartInput, options: &Options, closure: &mut Closure) -> Result<(), Error> {
    let tree = ChartTree::read(&input.package).map_err(|source| Error::Chart {
        path: input.path.clone(),
        source,
    })?;
    let chart = tree.id();
    let given = input
        .values
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
                path: path.clone(),
                source,
            })?;
            match serde_yaml_ng::from_str::<Value>(&text) {
                Ok(Value::Null) => Ok(Value::Mapping(Default::default())),
                Ok(v) => Ok(v),
                Err(source) => Err(Error::Values {
                    path: path.clone(),
                    source,
                }),
            }
        })
        .collect::<Result<Vec<Value>, Error>>()?;
    let values_names: Vec<String> = input
        .values
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut add = |image: ImageRef, subchart, from, at, needed| {
        closure.images.entry(image).or_default().push(Found {
            chart: chart.clone(),
            subchart,
            from,
            at,
            values: values_names.clone(),
            needed,
        });
    };

    let mut rendered = false;
    if let (Some(helm), true) = (&options.helm, options.ways.contains(&Way::Render)) {
        match helm.template(&input.path, &input.values) {
            Ok(manifests) => {
                rendered = true;
                let (found, problems) = rendered::find(&manifests);
                for r in found {
                    let subchart = tree.subchart_of(&r.source).map(ChartTree::id);
                    add(r.image, subchart, Way::Render, r.at, true);
                }
                for p in problems {
                    closure.warnings.push(format!("{chart}: {p}"));
                }
            }
            Err(e) if e.is_render_failure() && options.static_fallback => {
                closure.warnings.push(format!(
                    "{chart} ({}): Helm could not render it, so its images are found statically: {e}",
                    input.path.display()
                ));
            }
            Err(e) if e.is_render_failure() => {
                return Err(Error::Render {
                    chart,
                    path: input.path.clone(),
                    source: Box::new(e),
                });
            }
            Err(e) => return Err(e.into()),
        }
    }
    if options.ways.contains(&Way::Annotation) {
        for a in annotations::find(&tree, &mut closure.warnings) {
            add(a.image, a.subchart, Way::Annotation, a.at, true);
        }
    }
    if options.ways.contains(&Way::Values) {
        for v in values::find(&tree, &given) {
            // The values file that last sets it, when one does.
            let at = input
                .values
                .iter()
                .zip(&given)
                .rev()
                .find(|(_, file)| values::sets(file, &v.path))
                .map_or(v.at, |(name, _)| format!("{} {}", name.display(), v.path));
            add(v.image, v.subchart, Way::Values, at, !rendered);
        }
    }
    closure.charts.insert(chart, rendered);
    Ok(())
}
