//! Rendering a chart with the Helm the team has, which needs no cluster and no network for a
//! chart whose subcharts it holds. The binary is the one `--helm` (or `CHARTREG_HELM`) names,
//! else `helm` on the PATH, and it must be Helm 3.11.1 or later ([`MINIMUM`]): before it,
//! `helm template` let a template make DNS lookups (`getHostByName`, CVE-2023-25165).
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
//!    with an error saying which, and which bound held its memory.
//! 4. Helm runs isolated ([`Bounded::isolated`]): in a network namespace of its own, with no
//!    network, and a PID namespace whose end ends whatever it started, where the machine
//!    allows (root, or unprivileged user namespaces); elsewhere with the user's network.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bounded::{Bounded, BoundedError, Limits};

/// The release name every chart is rendered as: Helm's default for `helm template CHART`.
pub const RELEASE: &str = "release-name";

/// The oldest Helm that renders charts: 3.11.1 stopped `helm template` from resolving host
/// names for templates (CVE-2023-25165).
pub const MINIMUM: semver::Version = semver::Version::new(3, 11, 1);

/// The bounds of asking Helm its version.
const VERSION_LIMITS: Limits = Limits {
    time: Duration::from_secs(30),
    memory: 256 << 20,
    output: 64 << 10,
};

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
    #[error(
        "{}: Helm {found} is older than {MINIMUM}, the oldest that renders charts here (before it, a template could make DNS lookups: CVE-2023-25165); give --helm a newer Helm",
        bin.display()
    )]
    TooOld { bin: PathBuf, found: String },
    #[error("{}: cannot tell which Helm it is (`helm version`): {why}", bin.display())]
    Version { bin: PathBuf, why: String },
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
            HelmError::Run(
                BoundedError::Spawn { .. }
                | BoundedError::Wait { .. }
                | BoundedError::NoBound { .. }
                | BoundedError::Blind { .. },
            ) => false,
            HelmError::Run(_) | HelmError::Template { .. } | HelmError::NotUtf8 => true,
            HelmError::Missing(_)
            | HelmError::TooOld { .. }
            | HelmError::Version { .. }
            | HelmError::Scratch(_)
            | HelmError::Path { .. } => false,
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
    /// The Helm `given` names (which must exist), else `helm` on `path` (the PATH's value),
    /// checked to be [`MINIMUM`] or later; `None` when neither.
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
            let helm = Helm {
                bin,
                limits: RenderLimits::default(),
            };
            helm.check_version()?;
            Ok(helm)
        })
        .transpose()
    }

    /// Refuses a Helm older than [`MINIMUM`], naming the version it says it is.
    pub fn check_version(&self) -> Result<(), HelmError> {
        let scratch = scratch()?;
        let done = self
            .command(scratch.path(), VERSION_LIMITS)
            .args(["version", "--template", "{{.Version}}"])
            .run()?;
        let said = String::from_utf8_lossy(&done.stdout).trim().to_owned();
        if !done.status.success() {
            return Err(HelmError::Version {
                bin: self.bin.clone(),
                why: format!("{}: {}", done.status, quoted(&done.stderr)),
            });
        }
        let found = version(&said).ok_or_else(|| HelmError::Version {
            bin: self.bin.clone(),
            why: format!("it printed {:?}", quoted(said.as_bytes())),
        })?;
        if found < MINIMUM {
            return Err(HelmError::TooOld {
                bin: self.bin.clone(),
                found: said,
            });
        }
        Ok(())
    }

    /// Helm run bounded and isolated, in `scratch` with its environment there (HOME, its
    /// folders and files, KUBECONFIG, TMPDIR).
    fn command(&self, scratch: &Path, limits: Limits) -> Bounded {
        let at = |name: &str| scratch.join(name);
        Bounded::new(&self.bin, limits)
            .isolated()
            .current_dir(scratch)
            .env("HOME", at("home"))
            .env("HELM_CACHE_HOME", at("cache"))
            .env("HELM_CONFIG_HOME", at("config"))
            .env("HELM_DATA_HOME", at("data"))
            .env("HELM_PLUGINS", at("plugins"))
            .env("HELM_REGISTRY_CONFIG", at("config/registry/config.json"))
            .env("HELM_REPOSITORY_CONFIG", at("config/repositories.yaml"))
            .env("HELM_REPOSITORY_CACHE", at("cache/repository"))
            .env("KUBECONFIG", at("kubeconfig"))
            .env("TMPDIR", scratch)
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
        let scratch = scratch()?;
        let limits = Limits {
            time: self.limits.time,
            memory: self.limits.memory,
            output: self.limits.output,
        };
        let mut run = self
            .command(scratch.path(), limits)
            .arg("template")
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

/// A scratch folder for one run of Helm.
fn scratch() -> Result<tempfile::TempDir, HelmError> {
    tempfile::Builder::new()
        .prefix("chartreg-helm-")
        .tempdir()
        .map_err(HelmError::Scratch)
}

/// The version `helm version --template {{.Version}}` printed (`v3.17.1`, `v4.3.1+g1a2b3c4`).
fn version(said: &str) -> Option<semver::Version> {
    let bare = said.strip_prefix('v').unwrap_or(said);
    let bare = bare.split_once('+').map_or(bare, |(v, _)| v);
    semver::Version::parse(bare).ok()
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
    fn helm_versions_are_read_as_helm_prints_them_and_compared_to_the_minimum() {
        let v = |s| version(s).unwrap();
        assert_eq!(v("v3.17.1"), semver::Version::new(3, 17, 1));
        assert_eq!(v("v4.3.1+g1a2b3c4"), semver::Version::new(4, 3, 1));
        assert!(v("v3.11.0") < MINIMUM);
        assert!(v("v3.11.1-rc.1") < MINIMUM);
        assert!(v("v3.11.1") >= MINIMUM && v("v4.0.0") >= MINIMUM);
        assert_eq!(version("<no value>"), None);
        assert_eq!(version(""), None);
    }

    #[test]
    fn helm_s_message_is_cut_and_its_lines_indented() {
        assert_eq!(quoted(b"Error: one\ntwo\n"), "Error: one\n    two");
        let long = vec![b'x'; QUOTED + 10];
        assert!(quoted(&long).ends_with("x [...]"));
    }
}
