//! An image's signatures, found in the OCI image layout that holds it, and what checking them
//! against the policy comes to.
//!
//! For each tagged image of the layout (a tag a node pulls; cosign's `sha256-<hex>.*` tags are
//! its signatures, not images), the signatures over its digest are:
//! - the legacy form: the manifest tagged `sha256-<hex>.sig`, each simple-signing layer one
//!   signature (`cosign`);
//! - the bundle form: every manifest of the layout whose `subject` is the image and whose
//!   artifact type is the Sigstore bundle's, its one layer the bundle (`bundle`).
//!
//! The image is verified when one of them verifies (as `cosign verify` accepts an image one
//! signature of which verifies); unsigned when there is none (attestations do not count);
//! otherwise it failed, for each signature's reason. A failure is refused or warned about when a
//! `require` pattern names the repository; otherwise a signature that fails is a warning.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use chartreg_core::content::{Evidence, Form};
use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::{INDEX_FILE, ImageIndex, REF_NAME, blob_path, tag_of};
use serde::Deserialize;

use crate::bundle;
use crate::cosign::{self, CERTIFICATE_ANNOTATION, SIGNATURE_ANNOTATION, SIMPLE_SIGNING};
use crate::policy::{Checked, ImagePolicy};
use crate::section::Mode;

/// The Sigstore bundle's media type: a referrer's artifact type and its layer's.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// Why one signature of an image does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigReason {
    #[error("no signature")]
    Unsigned,
    #[error("signed with a key, and the policy names no keys (verify.images.keys)")]
    NoKeys,
    #[error(
        "the .sig signature verifies with none of verify.images.keys: signed by another key, or its payload was changed"
    )]
    NoKeyVerifies,
    #[error("signed by another key (hint {hint}), not one of verify.images.keys")]
    OtherKey { hint: String },
    #[error("the signature does not verify{}: the signed content was changed ({detail})", key.as_ref().map(|k| format!(" with key {k}")).unwrap_or_default())]
    BadSignature { key: Option<String>, detail: String },
    #[error("digest mismatch: the signature is over {signed}")]
    OtherDigest { signed: String, key: Option<String> },
    #[error(
        "a keyless .sig signature (certificate annotation): keyless signatures are checked in the bundle form (cosign 3, or cosign sign --new-bundle-format)"
    )]
    KeylessSig,
    #[error(
        "signed keylessly (a certificate), and the policy names no keyless signers (verify.images.keyless)"
    )]
    NoKeyless,
    #[error("identity mismatch: the certificate names {got}, the policy wants {want}")]
    IdentityMismatch { got: String, want: String },
    #[error("issuer mismatch: the certificate names {got}, the policy wants {want}")]
    IssuerMismatch { got: String, want: String },
    #[error("certificate: {0}")]
    Certificate(String),
    #[error("transparency log: {0}")]
    TransparencyLog(String),
    #[error("timestamp: {0}")]
    Timestamp(String),
    #[error("malformed signature: {0}")]
    Malformed(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<SigReason>),
}

/// What checking one tagged image came to.
#[derive(Debug, Clone)]
pub struct ImageChecked {
    pub repository: String,
    pub tag: String,
    pub digest: Digest,
    pub checked: Checked<Vec<Evidence>>,
}

/// Why a layout's signatures cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not what the layout says: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
    #[error("{what}: {detail}")]
    Unreadable { what: String, detail: String },
}

/// Where a repository's manifests and blobs are read from: an OCI image layout on disk
/// ([`LayoutStore`]), or the server's embedded content.
pub trait Store {
    /// Every manifest the repository lists, with its tag when it has one.
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError>;
    /// The bytes of the manifest or blob `digest`, checked against it.
    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError>;
}

/// An OCI image layout on disk: its `index.json` entries, its `blobs/`.
pub struct LayoutStore<'a> {
    pub dir: &'a Path,
}

impl Store for LayoutStore<'_> {
    fn entries(&self) -> Result<Vec<(Option<String>, Digest)>, LayoutError> {
        let index_path = self.dir.join(INDEX_FILE);
        let data = fs::read(&index_path).map_err(|source| LayoutError::Read {
            path: index_path.clone(),
            source,
        })?;
        let index: ImageIndex =
            serde_json::from_slice(&data).map_err(|e| LayoutError::Invalid {
                path: index_path.clone(),
                detail: e.to_string(),
            })?;
        Ok(index
            .manifests
            .into_iter()
            .map(|d| {
                let tag = d.annotations.get(REF_NAME).and_then(|r| tag_of(r));
                (tag, d.digest)
            })
            .collect())
    }

    fn read(&self, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
        blob(self.dir, digest)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    #[serde(default)]
    artifact_type: Option<String>,
    #[serde(default)]
    config: Option<Blob>,
    #[serde(default)]
    layers: Vec<Blob>,
    #[serde(default)]
    subject: Option<Blob>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Blob {
    media_type: String,
    digest: Digest,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// Reads the blob `digest` of the layout `dir`, checked against its digest.
fn blob(dir: &Path, digest: &Digest) -> Result<Vec<u8>, LayoutError> {
    let path = dir.join(blob_path(digest));
    let data = fs::read(&path).map_err(|source| LayoutError::Read {
        path: path.clone(),
        source,
    })?;
    if Digest::sha256_of(&data) != *digest {
        return Err(LayoutError::Invalid {
            path,
            detail: format!("its content is not {digest}"),
        });
    }
    Ok(data)
}

fn manifest(store: &dyn Store, digest: &Digest) -> Result<Manifest, LayoutError> {
    let data = store.read(digest)?;
    serde_json::from_slice(&data).map_err(|e| LayoutError::Unreadable {
        what: format!("manifest {digest}"),
        detail: format!("not a manifest: {e}"),
    })
}

/// Whether `tag` is one of cosign's tags for the manifest `sha256-<hex>` (its signatures,
/// attestations, SBOMs, or the referrers index of registries without the referrers API).
pub fn is_cosign_tag(tag: &str) -> bool {
    let Some(rest) = tag.strip_prefix("sha256-") else {
        return false;
    };
    let hex = rest.split_once('.').map_or(rest, |(hex, _)| hex);
    hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks every tagged image of the layout `dir` (only `tag`, when given) served as
/// `repository` against `policy`.
pub fn check_layout(
    policy: &ImagePolicy,
    repository: &str,
    dir: &Path,
    tag: Option<&str>,
) -> Result<Vec<ImageChecked>, LayoutError> {
    check_store(policy, repository, &LayoutStore { dir }, tag)
}

/// Checks every tagged image of `store` (only `tag`, when given), served as `repository`,
/// against `policy`.
pub fn check_store(
    policy: &ImagePolicy,
    repository: &str,
    store: &dyn Store,
    tag: Option<&str>,
) -> Result<Vec<ImageChecked>, LayoutError> {
    let entries = store.entries()?;
    let tagged: Vec<(String, Digest)> = entries
        .iter()
        .filter_map(|(t, d)| Some((t.clone()?, d.clone())))
        .collect();
    // Every manifest with a subject, by its subject: the bundle referrers among them.
    let mut bundles: BTreeMap<Digest, Vec<Digest>> = BTreeMap::new();
    for (_, digest) in &entries {
        let tagged_image = tagged.iter().any(|(t, d)| d == digest && !is_cosign_tag(t));
        if tagged_image {
            continue;
        }
        let m = manifest(store, digest)?;
        let is_bundle = m.artifact_type.as_deref() == Some(BUNDLE_MEDIA_TYPE)
            || m.config.as_ref().map(|c| c.media_type.as_str()) == Some(BUNDLE_MEDIA_TYPE);
        if let (true, Some(subject)) = (is_bundle, m.subject) {
            bundles
                .entry(subject.digest)
                .or_default()
                .push(digest.clone());
        }
    }
    let mut checked = Vec::new();
    for (name, digest) in &tagged {
        if is_cosign_tag(name) || tag.is_some_and(|t| t != name) {
            continue;
        }
        let mut signers = Vec::new();
        let mut failures = Vec::new();
        let sig_tag = format!("sha256-{}.sig", digest.encoded());
        if let Some((_, sig)) = tagged.iter().find(|(t, _)| *t == sig_tag) {
            for layer in manifest(store, sig)?.layers {
                if layer.media_type != SIMPLE_SIGNING {
                    continue;
                }
                let payload = store.read(&layer.digest)?;
                match cosign::check_simple_signing(
                    &policy.keys,
                    digest,
                    &payload,
                    layer
                        .annotations
                        .get(SIGNATURE_ANNOTATION)
                        .map(String::as_str),
                    layer
                        .annotations
                        .get(CERTIFICATE_ANNOTATION)
                        .map(String::as_str),
                ) {
                    Ok(key) => signers.push(Evidence::Key {
                        key,
                        subkey: None,
                        form: Form::Sig,
                    }),
                    Err(reason) => failures.push(reason),
                }
            }
        }
        for referrer in bundles.get(digest).into_iter().flatten() {
            for layer in manifest(store, referrer)?.layers {
                if layer.media_type != BUNDLE_MEDIA_TYPE {
                    continue;
                }
                match bundle::check_bundle(policy, digest, &store.read(&layer.digest)?) {
                    Ok(Some(signer)) => signers.push(signer),
                    Ok(None) => {}
                    Err(reason) => failures.push(reason),
                }
            }
        }
        let outcome = if !signers.is_empty() {
            Ok(signers)
        } else if failures.is_empty() {
            Err(SigReason::Unsigned)
        } else if failures.len() == 1 {
            Err(failures.remove(0))
        } else {
            Err(SigReason::Several(failures))
        };
        let what = format!("image {repository}:{name} ({digest})");
        checked.push(ImageChecked {
            repository: repository.to_owned(),
            tag: name.clone(),
            digest: digest.clone(),
            checked: decide(policy.rule(repository), policy.mode, &what, outcome),
        });
    }
    Ok(checked)
}

/// What an outcome comes to under a `require` rule (if one names the artifact) and the mode.
fn decide(
    rule: Option<&str>,
    mode: Mode,
    what: &str,
    outcome: Result<Vec<Evidence>, SigReason>,
) -> Checked<Vec<Evidence>> {
    match (outcome, rule) {
        (Ok(signers), _) => Checked::Verified(signers),
        (Err(SigReason::Unsigned), None) => Checked::NotSigned,
        (Err(reason), Some(rule)) => Checked::Failed {
            refuse: mode == Mode::Require,
            line: format!("{what}: rule images.require \"{rule}\": {reason}"),
        },
        (Err(reason), None) => Checked::Failed {
            refuse: false,
            line: format!("{what}: signed, not required, and {reason}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    #[rstest]
    #[case(
        "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sig",
        true
    )]
    #[case(
        "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        true
    )]
    #[case(
        "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.att",
        true
    )]
    #[case("sha256-0123.sig", false)]
    #[case("v1.0", false)]
    #[case("sha256-latest", false)]
    fn cosign_tags(#[case] tag: &str, #[case] cosign: bool) {
        assert_eq!(super::is_cosign_tag(tag), cosign);
    }
}
