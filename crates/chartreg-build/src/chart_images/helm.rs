//! Rendering a chart with the Helm the team has, which needs no cluster and no network for a
//! chart whose subcharts it holds. The binary is the one `--helm` (or `CHARTREG_HELM`) names,
//! else `helm` on the PATH.
//!
//! The chart is upstream's, so nothing of it reaches Helm's command line but as a value, and the
//! run is bounded ([`crate::bounded`]):
//! 1. The command line is `helm template --values=ABS... -- release-name ABS_CHART`: the
//!    release name is fixed (Helm's own default), everything after `--` is positional, and
//!    every path is absolute (none can start with `-`).
//! 2. Helm gets an environment of its own: `HOME`, its cache, config, data and plugin folders,
//!    its repository and registry files, `KUBECONFIG` and `TMPDIR` all in a scratch folder
//!    made for the run (and its working folder), so no `HELM_*` or `KUBECONFIG` of the user's
//!    can send it elsewhere and a render touches nothing of the user's. `GOMEMLIMIT` is set
//!    below the memory limit, so Go collects garbage harder before the limit stops it.
//! 3. Time, memory and output are bounded by [`RenderLimits`]; a render past one is stopped
//!    with an error saying which.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bounded::{Bounded, BoundedError, Limits};

/// The release name every chart is rendered as: Helm's default for `helm template CHART`.
pub const RELEASE: &str = "release-name";

/// How much of Helm's stderr a message quotes.
const QUOTED: usize = 4096;

/// Why Helm could not render a chart, or could not be run.
#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    /// It could not be started, or was stopped at a bound.
    #[error(transparent)]
    Run(#[from] BoundedError),
    #[error("helm template failed ({status}): {message}")]
    Template {
        status: std::process::ExitStatus,
        message: String,
    },
    #[error("helm template printed something that is not UTF-8")]
    NotUtf8,
    #[error("{}: no such file (given by --helm or CHARTREG_HELM)", .0.display())]
    Missing(PathBuf),
    #[error("a scratch folder for Helm: {0}")]
    Scratch(std::io::Error),
    #[error("{}: {source}", path.display())]
    Path {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl HelmError {
    /// Whether Helm ran and did not render the chart (refused it, was stopped at a bound, or
    /// printed what is not text), as opposed to Helm or this machine not being usable.
    pub fn is_render_failure(&self) -> bool {
        match self {
            HelmError::Run(BoundedError::Spawn { .. } | BoundedError::Wait { .. }) => false,
            HelmError::Run(_) | HelmError::Template { .. } | HelmError::NotUtf8 => true,
            HelmError::Missing(_) | HelmError::Scratch(_) | HelmError::Path { .. } => false,
        }
    }
}

/// The bounds of one render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    pub time: Duration,
    /// Bytes.
    pub memory: u64,
    /// Bytes of rendered manifests (and again of messages).
    pub output: u64,
}

impl RenderLimits {
    pub const DEFAULT_TIME: Duration = Duration::from_secs(60);
    pub const DEFAULT_MEMORY_MIB: u64 = 2048;
    pub const DEFAULT_OUTPUT: u64 = 64 * 1024 * 1024;
}

impl Default for RenderLimits {
    fn default() -> Self {
        RenderLimits {
            time: Self::DEFAULT_TIME,
            memory: Self::DEFAULT_MEMORY_MIB * 1024 * 1024,
            output: Self::DEFAULT_OUTPUT,
        }
    }
}

/// A Helm binary, and the bounds of each render.
#[derive(Debug, Clone)]
pub struct Helm {
    pub bin: PathBuf,
    pub limits: RenderLimits,
}

impl Helm {
    /// The Helm `given` names (which must exist), else `helm` on `path` (the PATH's value);
    /// `None` when neither.
    pub fn find(given: Option<&Path>, path: Option<OsString>) -> Result<Option<Helm>, HelmError> {
        let bin = match given {
            Some(bin) if !bin.is_file() => return Err(HelmError::Missing(bin.to_owned())),
            Some(bin) => Some(bin.to_owned()),
            None => path.and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join("helm"))
                    .find(|p| p.is_file())
            }),
        };
        bin.map(|bin| {
            let bin = std::path::absolute(&bin).map_err(|source| HelmError::Path {
                path: bin.clone(),
                source,
            })?;
            Ok(Helm {
                bin,
                limits: RenderLimits::default(),
            })
        })
        .transpose()
    }

    /// The manifests Helm renders from `chart` (a package or folder) with `values` laid over
    /// its own, as text.
    pub fn template(&self, chart: &Path, values: &[PathBuf]) -> Result<String, HelmError> {
        let absolute = |path: &Path| {
            std::path::absolute(path).map_err(|source| HelmError::Path {
                path: path.to_owned(),
                source,
            })
        };
        let scratch = tempfile::Builder::new()
            .prefix("chartreg-helm-")
            .tempdir()
            .map_err(HelmError::Scratch)?;
        let at = |name: &str| scratch.path().join(name);
        let limits = Limits {
            time: self.limits.time,
            memory: self.limits.memory,
            output: self.limits.output,
        };
        let mut run = Bounded::new(&self.bin, limits)
            .arg("template")
            .current_dir(scratch.path())
            .env("HOME", at("home"))
            .env("HELM_CACHE_HOME", at("cache"))
            .env("HELM_CONFIG_HOME", at("config"))
            .env("HELM_DATA_HOME", at("data"))
            .env("HELM_PLUGINS", at("plugins"))
            .env("HELM_REGISTRY_CONFIG", at("config/registry/config.json"))
            .env("HELM_REPOSITORY_CONFIG", at("config/repositories.yaml"))
            .env("HELM_REPOSITORY_CACHE", at("cache/repository"))
            .env("KUBECONFIG", at("kubeconfig"))
            .env("TMPDIR", scratch.path())
            .env("GOMEMLIMIT", (self.limits.memory / 10 * 9).to_string());
        for file in values {
            let mut flag = OsString::from("--values=");
            flag.push(absolute(file)?);
            run = run.arg(flag);
        }
        let done = run.arg("--").arg(RELEASE).arg(absolute(chart)?).run()?;
        if !done.status.success() {
            return Err(HelmError::Template {
                status: done.status,
                message: quoted(&done.stderr),
            });
        }
        String::from_utf8(done.stdout).map_err(|_| HelmError::NotUtf8)
    }
}

/// Helm's message as a message quotes it: its first [`QUOTED`] bytes, trimmed, each further
/// line indented (so no line of it passes for one of this tool's own).
fn quoted(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr.get(..QUOTED).unwrap_or(stderr));
    let mut quoted = text.trim().replace('\n', "\n    ");
    if stderr.len() > QUOTED {
        quoted.push_str(" [...]");
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_s_message_is_cut_and_its_lines_indented() {
        assert_eq!(quoted(b"Error: one\ntwo\n"), "Error: one\n    two");
        let long = vec![b'x'; QUOTED + 10];
        assert!(quoted(&long).ends_with("x [...]"));
    }
}
