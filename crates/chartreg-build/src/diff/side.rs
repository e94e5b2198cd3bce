//! One side of `diff`: what a built server serves, read from the server itself.
//!
//! 1. [`Side::read`]: a file is a server binary; a folder (`LAYOUT[:TAG]`) an OCI image
//!    layout, its image for this machine's platform read as `--base` reads one (every blob
//!    checked against its digest), and the `chartreg` file of its layers (the last layer that
//!    holds one) written to a work file; anything else an image reference in a registry
//!    (`REGISTRY/PATH:TAG`, `@DIGEST`, `:TAG@DIGEST`), this machine's platform of it copied
//!    into a work layout as fetch copies images (`fetch::pull`), then read as a layout.
//! 2. The binary asked, within bounds of time, memory and output, for `ls --json` and
//!    `ls --content-digest`: what it serves, version by version (repository, tag, kind,
//!    digest, pull size, what verified it at build), and the digest of its content.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chartreg_core::oci::Digest;
use serde::Deserialize;

use crate::bounded::{Bounded, BoundedError, Limits};
use crate::image::base::{self, BaseSpec};
use crate::image::binary::host_platform;

/// The bounds of asking a server what it serves: a row per version, about 300 bytes each.
const ASK_LIMITS: Limits = Limits {
    time: std::time::Duration::from_secs(120),
    memory: 2 * 1024 * 1024 * 1024,
    output: 256 * 1024 * 1024,
};

/// Why a side cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    #[error("{0}")]
    Pull(#[from] crate::fetch::pull::PullError),
    #[error("{text}: {source}")]
    Layout {
        text: String,
        #[source]
        source: Box<crate::image::Error>,
    },
    #[error(
        "{text}: this machine is no Linux platform an image names, so no image in it can be asked what it serves"
    )]
    NoHostPlatform { text: String },
    #[error(
        "{text}: not executable, so no server binary (give a server binary or an OCI image layout, LAYOUT[:TAG])"
    )]
    NotExecutable { text: String },
    #[error("{text}: no layer of its image holds /chartreg: it is no chartreg image")]
    NoServer { text: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{text}: `chartreg {asked}`: {source}")]
    Run {
        text: String,
        asked: &'static str,
        #[source]
        source: BoundedError,
    },
    #[error("{text}: `chartreg {asked}` failed ({status}): {stderr}")]
    Status {
        text: String,
        asked: &'static str,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("{text}: `chartreg {asked}` printed no answer chartreg gives ({reason})")]
    Answer {
        text: String,
        asked: &'static str,
        reason: String,
    },
}

/// What one side serves.
#[derive(Debug)]
pub struct Side {
    /// As given on the command line.
    pub text: String,
    pub content_digest: Digest,
    /// Every tagged version (referrers, which have no tag, are left out).
    pub rows: Vec<Row>,
}

/// A row of `chartreg ls --json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Row {
    pub repository: String,
    pub tag: Option<String>,
    pub digest: String,
    pub size: u64,
    pub kind: String,
    /// What verified it at build: `null` for none; absent for a referrer.
    #[serde(default)]
    pub verified: Option<serde_json::Value>,
}

impl Side {
    /// Reads the side `text` names (see the module's documentation); `work` is a folder for
    /// the binary taken out of a layout.
    pub fn read(text: &str, reach: &Reach, work: &Path) -> Result<Side, SideError> {
        let path = Path::new(text);
        let binary = if path.is_file() {
            executable(text, path)?
        } else {
            let spec = if path.is_dir() {
                BaseSpec {
                    dir: path.to_owned(),
                    tag: None,
                }
            } else {
                match BaseSpec::parse(text) {
                    Ok(spec) if spec.dir.is_dir() => spec,
                    _ => pulled(text, reach, work)?,
                }
            };
            server_of(text, &spec, work)?
        };
        let ask = |asked: &'static str| -> Result<Vec<u8>, SideError> {
            let done = Bounded::new(&binary, ASK_LIMITS)
                .args(asked.split(' '))
                .run()
                .map_err(|source| SideError::Run {
                    text: text.to_owned(),
                    asked,
                    source,
                })?;
            if !done.status.success() {
                return Err(SideError::Status {
                    text: text.to_owned(),
                    asked,
                    status: done.status,
                    stderr: String::from_utf8_lossy(&done.stderr).trim().to_owned(),
                });
            }
            Ok(done.stdout)
        };
        let answer = |asked: &'static str, reason: String| SideError::Answer {
            text: text.to_owned(),
            asked,
            reason,
        };
        let printed = ask("ls --content-digest")?;
        let digest_text = String::from_utf8_lossy(&printed).trim().to_owned();
        let content_digest: Digest = digest_text
            .parse()
            .map_err(|_| answer("ls --content-digest", format!("{digest_text:?}")))?;
        let listed = ask("ls --json")?;
        let rows: Vec<Row> =
            serde_json::from_slice(&listed).map_err(|e| answer("ls --json", e.to_string()))?;
        Ok(Side {
            text: text.to_owned(),
            content_digest,
            rows: rows.into_iter().filter(|r| r.tag.is_some()).collect(),
        })
    }
}

/// How registries are reached: plain HTTP hosts, a CA file.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    pub plain_http: Vec<String>,
    pub ca_file: Option<PathBuf>,
}

/// The image `text` names in its registry, this machine's platform of it, copied into a
/// layout in `work`.
fn pulled(text: &str, reach: &Reach, work: &Path) -> Result<BaseSpec, SideError> {
    let host = host_platform().ok_or_else(|| SideError::NoHostPlatform {
        text: text.to_owned(),
    })?;
    let platform = format!("{}/{}", host.os, host.architecture);
    let dir = work.join("pulled");
    let tag = crate::fetch::pull::pull(
        &crate::fetch::pull::Pull {
            reference: text,
            platform: &platform,
            plain_http: &reach.plain_http,
            ca_file: reach.ca_file.as_deref(),
        },
        &dir,
    )?;
    Ok(BaseSpec {
        dir,
        tag: Some(tag),
    })
}

/// The file `path` as a program to run: its absolute path (a bare name is never looked up
/// in PATH), when it is executable.
fn executable(text: &str, path: &Path) -> Result<PathBuf, SideError> {
    use std::os::unix::fs::PermissionsExt;
    let absolute = path.canonicalize().map_err(|source| SideError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mode = fs::metadata(&absolute)
        .map_err(|source| SideError::Io {
            path: path.to_owned(),
            source,
        })?
        .permissions()
        .mode();
    if mode & 0o111 == 0 {
        return Err(SideError::NotExecutable {
            text: text.to_owned(),
        });
    }
    Ok(absolute)
}

/// The server binary in the image `spec` names, for this machine, written into `work`.
fn server_of(text: &str, spec: &BaseSpec, work: &Path) -> Result<PathBuf, SideError> {
    let host = host_platform().ok_or_else(|| SideError::NoHostPlatform {
        text: text.to_owned(),
    })?;
    let images = base::read(spec, &[&host]).map_err(|source| SideError::Layout {
        text: text.to_owned(),
        source: Box::new(source),
    })?;
    let out = work.join("chartreg");
    for image in &images {
        for (_, layer) in image.layers.iter().rev() {
            if extract_server(&layer.path, &out)? {
                return Ok(out);
            }
        }
    }
    Err(SideError::NoServer {
        text: text.to_owned(),
    })
}

/// Writes the layer's `chartreg` (gzipped tar, as `image` writes it) to `out`, executable;
/// whether the layer holds one.
fn extract_server(layer: &Path, out: &Path) -> Result<bool, SideError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| SideError::Io { path, source }
    };
    let file = fs::File::open(layer).map_err(io(layer))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in archive.entries().map_err(io(layer))? {
        let mut entry = entry.map_err(io(layer))?;
        let name = entry.path().map_err(io(layer))?.into_owned();
        let is_server = name == Path::new("chartreg") || name == Path::new("./chartreg");
        if !is_server || !entry.header().entry_type().is_file() {
            continue;
        }
        let mut written = fs::File::create(out).map_err(io(out))?;
        io::copy(&mut entry, &mut written).map_err(io(out))?;
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(out, fs::Permissions::from_mode(0o700)).map_err(io(out))?;
        return Ok(true);
    }
    Ok(false)
}
