//! The content file (`content.yaml` at the repository root): every input `make assets` packs,
//! written down once so that a fresh clone builds the same content without commands someone
//! once typed. `chartreg-build pack --config FILE` reads it; paths in it are relative to the
//! file's folder. Unknown keys are an error naming the key and its line.
//!
//! ```yaml
//! charts:
//!   prefix: charts            # repositories `charts/<chart name>` (the default)
//!   from: [charts, deploy/chart]  # packages, chart folders, or folders holding them
//! layouts:                    # OCI image layouts, each served as one repository
//!   - from: images/sample
//!     repository: images/sample
//!     tag: v1                 # optional: the one image to take: a tag, sha256:<hex>, or
//!                             # TAG@sha256:<hex> (the digest, served under TAG)
//!     namespace: quay.io      # optional: the upstream registry it came from; served as
//!                             # quay.io/images/sample, and to nodes asking with ?ns=quay.io
//! lock: chartreg.lock         # optional: what `chartreg-build fetch` took, checked, packed
//! images:                     # optional: the images the charts need (`chartreg-build images`),
//!                             # which pack writes down (`chart-images.json`) for the pages
//!   closure: require          # pack fails (`warn`: warns) when a chart needs an image the
//!                             # content does not hold; absent: not checked
//!   values:                   # values files to find a chart's images with, by chart name
//!     cilium: [values/cilium-hubble.yaml]
//! verify:                     # optional: what must be signed, by whom (see `verify`)
//!   mode: require             # or warn
//!   charts:
//!     keyring: keys/pubring.gpg   # `.prov` signatures, as `helm verify --keyring` checks them
//!     require: ["*"]          # chart name patterns that must be signed
//!   images:                   # cosign signatures: `.sig` tags and Sigstore bundle referrers
//!     keys: [keys/cosign.pub]
//!     keyless: [{identity: "https://github.com/ORG/REPO/*", issuer: "...", trustedRoot: keys/root.json}]
//!     require: ["quay.io/*"]  # repository patterns that must be signed
//! ```
//!
//! With a `lock`, every chart package and image layout it pins is packed too (each checked
//! against its digests first; images served under their upstream repository path), without
//! the network.

use std::path::{Path, PathBuf};

use chartreg_core::oci::{Namespace, NamespaceError};
use serde::Deserialize;

use crate::layout_spec::{LayoutSpec, LayoutSpecError};

/// Why the content file could not be taken; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    File(#[from] crate::yaml_file::Error),
    #[error("{}: layout {repository}: namespace: {source}", path.display())]
    Namespace {
        path: PathBuf,
        repository: String,
        source: NamespaceError,
    },
    #[error("{}: layout {repository}: {source}", path.display())]
    Layout {
        path: PathBuf,
        repository: String,
        source: LayoutSpecError,
    },
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentFile {
    #[serde(default)]
    pub charts: Option<Charts>,
    #[serde(default)]
    pub layouts: Vec<Layout>,
    #[serde(default)]
    pub lock: Option<PathBuf>,
    #[serde(default)]
    pub images: Option<Images>,
    /// What must be signed, by whom (see `verify`).
    #[serde(default)]
    pub verify: Option<crate::verify::VerifySection>,
}

/// What the content file says about the images its charts need.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Images {
    #[serde(default)]
    pub closure: Option<ClosureCheck>,
    /// Values files by chart name, laid over the chart's own when its images are found.
    #[serde(default)]
    pub values: std::collections::BTreeMap<String, Vec<PathBuf>>,
}

/// What pack does when a chart needs an image the content does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClosureCheck {
    Require,
    Warn,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Charts {
    #[serde(default)]
    pub prefix: Option<String>,
    pub from: Vec<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    pub from: PathBuf,
    pub repository: String,
    #[serde(default)]
    pub tag: Option<String>,
    /// The upstream registry the layout's images came from: the repository is served in its
    /// namespace (`<registry>/<repository>`, see `Namespace`).
    #[serde(default)]
    pub namespace: Option<String>,
}

impl ContentFile {
    /// Reads `path`; every path in it is made relative to the file's folder.
    pub fn read(path: &Path) -> Result<ContentFile, Error> {
        let mut file: ContentFile = crate::yaml_file::read(path)?;
        let base = path.parent().unwrap_or(Path::new(""));
        if let Some(charts) = &mut file.charts {
            for from in &mut charts.from {
                *from = base.join(&*from);
            }
        }
        for layout in &mut file.layouts {
            layout.from = base.join(&layout.from);
        }
        if let Some(lock) = &mut file.lock {
            *lock = base.join(&*lock);
        }
        if let Some(verify) = &mut file.verify {
            verify.relative_to(base);
        }
        if let Some(images) = &mut file.images {
            for files in images.values.values_mut() {
                for f in files {
                    *f = base.join(&*f);
                }
            }
        }
        Ok(file)
    }

    /// The layouts as `--layout` would give them.
    pub fn layout_specs(&self, path: &Path) -> Result<Vec<LayoutSpec>, Error> {
        self.layouts
            .iter()
            .map(|l| {
                let repository = match &l.namespace {
                    Some(namespace) => {
                        let namespace =
                            Namespace::registry(namespace).map_err(|source| Error::Namespace {
                                path: path.to_owned(),
                                repository: l.repository.clone(),
                                source,
                            })?;
                        namespace.served_name(&l.repository)
                    }
                    None => l.repository.clone(),
                };
                let target = match &l.tag {
                    Some(tag) => format!("{repository}:{tag}"),
                    None => repository,
                };
                format!("{}={target}", l.from.display())
                    .parse()
                    .map_err(|source| Error::Layout {
                        path: path.to_owned(),
                        repository: l.repository.clone(),
                        source,
                    })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn reads_paths_relative_to_the_file_and_refuses_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("content.yaml");
        fs::write(
            &path,
            "charts:\n  from: [charts]\nlayouts:\n  - from: images/a\n    repository: images/a\n    tag: v1\n",
        )
        .unwrap();
        let file = ContentFile::read(&path).unwrap();
        assert_eq!(
            file.charts.as_ref().unwrap().from,
            [dir.path().join("charts")]
        );
        let specs = file.layout_specs(&path).unwrap();
        assert_eq!(specs[0].dir, dir.path().join("images/a"));
        assert_eq!(specs[0].pin.as_ref().unwrap().to_string(), ":v1");

        fs::write(
            &path,
            "layouts:\n  - from: a\n    repository: jetstack/x\n    namespace: 127.0.0.1:5057\n",
        )
        .unwrap();
        let specs = ContentFile::read(&path)
            .unwrap()
            .layout_specs(&path)
            .unwrap();
        assert_eq!(specs[0].repository.as_str(), "127.0.0.1_5057/jetstack/x");
        fs::write(
            &path,
            "layouts:\n  - from: a\n    repository: x\n    namespace: not a host\n",
        )
        .unwrap();
        let e = ContentFile::read(&path)
            .unwrap()
            .layout_specs(&path)
            .unwrap_err();
        let e = e.to_string();
        assert!(e.contains("layout x: namespace: `not a host`"), "{e}");

        fs::write(&path, "charts:\n  from: [charts]\n  prefx: x\n").unwrap();
        let e = ContentFile::read(&path).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("prefx") && e.contains("line 3"), "{e}");
    }
}
