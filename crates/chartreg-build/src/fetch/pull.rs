//! One image from a registry into an OCI image layout, for the commands that read an image
//! where it is served (`diff`): `REGISTRY/PATH:TAG`, `REGISTRY/PATH@DIGEST` or
//! `REGISTRY/PATH:TAG@DIGEST` (the digest is what is taken, and checked), one platform of it,
//! no referrers, anonymously; plain HTTP for loopback and the hosts named, and a CA file's
//! certificates trusted besides the system's. Everything is read as fetch reads it: bounded,
//! every blob checked against its digest.

use std::collections::BTreeMap;
use std::path::Path;

use chartreg_core::oci::Tag;

use super::images::repository::{Asked, copy_repository};
use super::oci::Registry;
use super::problem::Problem;
use super::transport::{CaFileError, Transport};
use crate::pin::{self, Pin, PinError};

/// Why the image was not taken.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("cannot start: {0}")]
    Start(#[source] std::io::Error),
    #[error(transparent)]
    CaFile(#[from] CaFileError),
    #[error(
        "`{0}` is no image reference REGISTRY/PATH:TAG, REGISTRY/PATH@DIGEST or REGISTRY/PATH:TAG@DIGEST"
    )]
    Reference(String),
    #[error("`{text}`: {source}")]
    Pin {
        text: String,
        #[source]
        source: PinError,
    },
    /// Boxed: errors are rare, and a small `Result` keeps the happy path cheap.
    #[error("{reference}: {problem}")]
    Problem {
        reference: String,
        problem: Box<Problem>,
    },
}

/// Where the image is and how to reach it.
pub struct Pull<'a> {
    pub reference: &'a str,
    /// `os/arch`: the platform taken from an index.
    pub platform: &'a str,
    pub plain_http: &'a [String],
    pub ca_file: Option<&'a Path>,
}

/// Copies the image `pull` names into the layout `dir`; returns the tag it is under there.
pub fn pull(pull: &Pull<'_>, dir: &Path) -> Result<Tag, PullError> {
    let text = pull.reference;
    let (registry, rest) = text
        .split_once('/')
        .filter(|(host, _)| host.contains('.') || host.contains(':') || *host == "localhost")
        .ok_or_else(|| PullError::Reference(text.to_owned()))?;
    let (path, pin) = pin::split(rest).ok_or_else(|| PullError::Reference(text.to_owned()))?;
    let pin = pin.map_err(|source| PullError::Pin {
        text: text.to_owned(),
        source,
    })?;
    let transport = Transport {
        ca_pem: pull.ca_file.map(Transport::read_ca_file).transpose()?,
        plain_http: pull.plain_http.to_vec(),
    };
    // One crypto provider for rustls, chosen here (two in the tree would make it panic).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(PullError::Start)?;
    let problem = |problem: Problem| PullError::Problem {
        reference: text.to_owned(),
        problem: Box::new(problem),
    };
    let registry = Registry::new(registry, &transport, true, None, None).map_err(problem)?;
    let pins = [pin.clone()];
    let platforms = [pull.platform.to_owned()];
    let pinned: BTreeMap<Pin, super::images::repository::Pinned> = BTreeMap::new();
    let asked = Asked {
        pins: &pins,
        platforms: &platforms,
        with_referrers: false,
        pinned: &pinned,
        verify: None,
    };
    runtime
        .block_on(copy_repository(&registry, path, dir, &asked))
        .map_err(|mut failed| match failed.pop() {
            Some((_, p)) => problem(p),
            None => PullError::Reference(text.to_owned()),
        })?;
    Ok(pin.served().clone())
}
