//! sigstore-verify's [`Verifier`]s, made once per policy: one over each Sigstore trusted root
//! the policy names (a `trustedRoot` file read, or the root's JSON the content's record keeps),
//! and one over the empty root, for key-signed bundles checked without a transparency log.
//! `policy` makes them as it reads a policy; `bundle` verifies with them. They compute with
//! ring (`provider`), installed before a root is read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sigstore_verify::Verifier;
use sigstore_verify::trust_root::TrustedRoot;

use crate::provider;

/// The most of a trusted root read (Sigstore's public one is ~10 KiB).
const ROOT_LIMIT: u64 = 16 << 20;

/// The empty trusted root: no authorities, no logs.
const EMPTY_ROOT: &str =
    r#"{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}"#;

/// Why no verifier is made over a trusted root; each names the root's file.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("cannot use the trusted root {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot use the trusted root {}: {source}", path.display())]
    NotRoot {
        path: PathBuf,
        source: sigstore_verify::trust_root::Error,
    },
    #[error("cannot use the trusted root {}: {source}", path.display())]
    Unusable {
        path: PathBuf,
        source: Box<sigstore_verify::Error>,
    },
    /// The empty root (a constant) is refused: this sigstore-verify reads roots otherwise.
    #[error("cannot make a verifier: {0}")]
    EmptyNotRoot(#[source] sigstore_verify::trust_root::Error),
    #[error("cannot make a verifier: {0}")]
    EmptyUnusable(#[source] Box<sigstore_verify::Error>),
}

/// The trusted root file `path`: its JSON and a verifier over it.
pub fn read_root(path: &Path) -> Result<(String, Arc<Verifier>), RootError> {
    let json = chartreg_core::file::read_limited_to_string(path, ROOT_LIMIT).map_err(|source| {
        RootError::Read {
            path: path.to_owned(),
            source,
        }
    })?;
    let verifier = root_verifier(path, &json)?;
    Ok((json, verifier))
}

/// A verifier over the trusted root `json` (from `path`, for messages).
pub fn root_verifier(path: &Path, json: &str) -> Result<Arc<Verifier>, RootError> {
    provider::install();
    let root = TrustedRoot::from_json(json).map_err(|source| RootError::NotRoot {
        path: path.to_owned(),
        source,
    })?;
    Verifier::new(&root)
        .map(Arc::new)
        .map_err(|source| RootError::Unusable {
            path: path.to_owned(),
            source: Box::new(source),
        })
}

/// A verifier over nothing: key-signed bundles checked without a transparency log.
pub fn empty_verifier() -> Result<Arc<Verifier>, RootError> {
    provider::install();
    let root = TrustedRoot::from_json(EMPTY_ROOT).map_err(RootError::EmptyNotRoot)?;
    Verifier::new(&root)
        .map(Arc::new)
        .map_err(|source| RootError::EmptyUnusable(Box::new(source)))
}
