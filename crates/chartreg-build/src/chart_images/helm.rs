//! Rendering a chart with the Helm the team has: `helm template NAME CHART -f FILE...`, which
//! needs no cluster and no network for a chart whose subcharts it holds. The binary is the one
//! `--helm` (or `CHARTREG_HELM`) names, else `helm` on the PATH.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why Helm could not render a chart, or could not be run.
#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    #[error("{}: {source}", helm.display())]
    Run {
        helm: PathBuf,
        source: std::io::Error,
    },
    #[error("helm template failed: {0}")]
    Template(String),
    #[error("helm template printed something that is not UTF-8")]
    NotUtf8,
    #[error("{}: no such file (given by --helm or CHARTREG_HELM)", .0.display())]
    Missing(PathBuf),
}

/// A Helm binary.
#[derive(Debug, Clone)]
pub struct Helm {
    pub bin: PathBuf,
}

impl Helm {
    /// The Helm `given` names (which must exist), else `helm` on `path` (the PATH's value);
    /// `None` when neither.
    pub fn find(given: Option<&Path>, path: Option<OsString>) -> Result<Option<Helm>, HelmError> {
        if let Some(bin) = given {
            if !bin.is_file() {
                return Err(HelmError::Missing(bin.to_owned()));
            }
            return Ok(Some(Helm {
                bin: bin.to_owned(),
            }));
        }
        let found = path.and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("helm"))
                .find(|p| p.is_file())
        });
        Ok(found.map(|bin| Helm { bin }))
    }

    /// `helm template NAME CHART -f VALUES...`: the manifests, as text.
    pub fn template(
        &self,
        name: &str,
        chart: &Path,
        values: &[PathBuf],
    ) -> Result<String, HelmError> {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("template").arg(name).arg(chart);
        for file in values {
            cmd.arg("--values").arg(file);
        }
        let out = cmd.output().map_err(|source| HelmError::Run {
            helm: self.bin.clone(),
            source,
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(HelmError::Template(stderr.trim().to_owned()));
        }
        String::from_utf8(out.stdout).map_err(|_| HelmError::NotUtf8)
    }
}
