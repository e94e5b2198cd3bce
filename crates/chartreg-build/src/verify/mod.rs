//! `verify:` in the content file: what must be signed, by whom, and what pack does when it is
//! not.
//! - Charts: each chart's `.prov` is checked against the policy's keyring ([`prov`],
//!   [`keyring`]) when pack reads it.
//! - Images: each tagged image of a layout, by its cosign signatures: the legacy `.sig` tag
//!   ([`cosign`]) and Sigstore bundle referrers ([`bundle`]), found in the layout ([`image`]),
//!   checked with the policy's keys and keyless rules (sigstore-verify over ring: [`provider`]).
//!
//! An artifact whose name a `require` pattern ([`patterns`]) matches must verify, else pack
//! refuses it (`mode: require`) or warns (`mode: warn`); one no pattern names is checked when it
//! is signed, and a signature that fails is a warning.
//!
//! ```yaml
//! verify:
//!   mode: require              # or warn
//!   charts:
//!     keyring: keys/pubring.gpg
//!     require: ["*"]           # chart name patterns that must be signed
//!   images:
//!     keys: [keys/cosign.pub]
//!     trustedRoot: keys/trusted_root.json   # optional: key-signed bundles' log entries
//!     keyless:
//!       - {identity: "https://github.com/ORG/REPO/.github/workflows/release.yaml@refs/tags/*",
//!          issuer: "https://token.actions.githubusercontent.com", trustedRoot: keys/trusted_root.json}
//!     require: ["quay.io/*"]   # repository patterns that must be signed
//! ```

pub mod bundle;
pub mod cosign;
pub mod image;
pub mod keyring;
pub mod patterns;
pub mod prov;
pub mod provider;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

pub use cosign::{CosignKey, KeyError};
pub use image::{ImageChecked, LayoutError, check_layout};
pub use keyring::{Keyring, KeyringError};
pub use prov::{Reason, Signer};

/// The content file's `verify:` section, as written (paths relative to the content file).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifySection {
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub charts: Option<ChartsSection>,
    #[serde(default)]
    pub images: Option<ImagesSection>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChartsSection {
    pub keyring: PathBuf,
    #[serde(default)]
    pub require: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImagesSection {
    /// cosign public keys (PEM).
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// The trusted root whose transparency logs key-signed bundles' entries are checked with;
    /// without it, a key-signed bundle's signature is checked and its log entry is not.
    #[serde(default)]
    pub trusted_root: Option<PathBuf>,
    #[serde(default)]
    pub keyless: Vec<KeylessSection>,
    #[serde(default)]
    pub require: Vec<String>,
}

/// Who may sign keylessly: the certificate identity (a pattern), its issuer (exact), and the
/// Sigstore trusted root (given offline) its certificate, SCT and log entry are checked with.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeylessSection {
    pub identity: String,
    pub issuer: String,
    pub trusted_root: PathBuf,
}

impl VerifySection {
    /// Makes every path relative to `base` (the content file's folder).
    pub fn relative_to(&mut self, base: &Path) {
        if let Some(charts) = &mut self.charts {
            charts.keyring = base.join(&charts.keyring);
        }
        if let Some(images) = &mut self.images {
            for key in &mut images.keys {
                *key = base.join(&*key);
            }
            if let Some(root) = &mut images.trusted_root {
                *root = base.join(&*root);
            }
            for rule in &mut images.keyless {
                rule.trusted_root = base.join(&rule.trusted_root);
            }
        }
    }
}

/// Why a policy cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Keyring(#[from] KeyringError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("cannot use the trusted root {}: {reason}", path.display())]
    Root { path: PathBuf, reason: String },
    #[error("cannot make a verifier: {0}")]
    Verifier(String),
}

/// The content file's policy, its material read: what pack and fetch check against.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub charts: Option<ChartPolicy>,
    pub images: Option<ImagePolicy>,
}

impl Policy {
    /// The policy of the content file `config`'s `section`.
    pub fn of(config: &Path, section: &VerifySection) -> Result<Policy, PolicyError> {
        Ok(Policy {
            charts: ChartPolicy::of(config, section)?,
            images: ImagePolicy::of(config, section)?,
        })
    }
}

/// The images' policy, its keys and trusted roots read.
#[derive(Clone)]
pub struct ImagePolicy {
    pub config: PathBuf,
    pub mode: Mode,
    pub keys: Vec<CosignKey>,
    pub keyless: Vec<KeylessRule>,
    /// Key-signed bundles' log entries are checked with this (`images.trustedRoot`).
    pub key_root: Option<Arc<sigstore_verify::Verifier>>,
    /// A verifier over an empty root, for key-signed bundles without `images.trustedRoot`.
    pub no_root: Arc<sigstore_verify::Verifier>,
    pub require: Vec<String>,
}

/// One `images.keyless` entry, its root read.
#[derive(Clone)]
pub struct KeylessRule {
    pub identity: String,
    pub issuer: String,
    pub root: PathBuf,
    pub verifier: Arc<sigstore_verify::Verifier>,
}

impl std::fmt::Debug for ImagePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImagePolicy")
            .field("config", &self.config)
            .field("mode", &self.mode)
            .field("keys", &self.keys)
            .field(
                "keyless",
                &self
                    .keyless
                    .iter()
                    .map(|r| (&r.identity, &r.issuer, &r.root))
                    .collect::<Vec<_>>(),
            )
            .field("key_root", &self.key_root.is_some())
            .field("require", &self.require)
            .finish()
    }
}

/// A verifier over the trusted root file `path`.
fn root_verifier(path: &Path) -> Result<Arc<sigstore_verify::Verifier>, PolicyError> {
    let root_error = |reason: String| PolicyError::Root {
        path: path.to_owned(),
        reason,
    };
    provider::install();
    let root = sigstore_verify::trust_root::TrustedRoot::from_file(path)
        .map_err(|e| root_error(e.to_string()))?;
    sigstore_verify::Verifier::new(&root)
        .map(Arc::new)
        .map_err(|e| root_error(e.to_string()))
}

impl ImagePolicy {
    /// The policy a content file's section makes (`None` without an `images:` part).
    pub fn of(config: &Path, section: &VerifySection) -> Result<Option<ImagePolicy>, PolicyError> {
        let Some(images) = &section.images else {
            return Ok(None);
        };
        provider::install();
        Ok(Some(ImagePolicy {
            config: config.to_owned(),
            mode: section.mode,
            keys: images
                .keys
                .iter()
                .map(|k| CosignKey::read(k))
                .collect::<Result<_, _>>()?,
            keyless: images
                .keyless
                .iter()
                .map(|rule| {
                    Ok(KeylessRule {
                        identity: rule.identity.clone(),
                        issuer: rule.issuer.clone(),
                        root: rule.trusted_root.clone(),
                        verifier: root_verifier(&rule.trusted_root)?,
                    })
                })
                .collect::<Result<_, PolicyError>>()?,
            key_root: images
                .trusted_root
                .as_deref()
                .map(root_verifier)
                .transpose()?,
            no_root: bundle::empty_verifier().map_err(PolicyError::Verifier)?,
            require: images.require.clone(),
        }))
    }

    /// The `require` pattern that names repository `name`, if one does.
    pub fn rule(&self, name: &str) -> Option<&str> {
        patterns::first_match(&self.require, name)
    }
}

/// What a failed rule does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Require,
    Warn,
}

/// The charts' policy, its keyring read.
#[derive(Debug, Clone)]
pub struct ChartPolicy {
    /// The content file it comes from, for messages.
    pub config: PathBuf,
    pub mode: Mode,
    pub keyring: Keyring,
    pub require: Vec<String>,
}

impl ChartPolicy {
    /// The policy a content file's section makes (`None` without a `charts:` part).
    pub fn of(
        config: &std::path::Path,
        section: &VerifySection,
    ) -> Result<Option<ChartPolicy>, KeyringError> {
        let Some(charts) = &section.charts else {
            return Ok(None);
        };
        Ok(Some(ChartPolicy {
            config: config.to_owned(),
            mode: section.mode,
            keyring: Keyring::read(&charts.keyring)?,
            require: charts.require.clone(),
        }))
    }

    /// The `require` pattern that names chart `name`, if one does.
    pub fn rule(&self, name: &str) -> Option<&str> {
        patterns::first_match(&self.require, name)
    }
}

/// What checking one artifact came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked<S> {
    /// Signed by whom the policy trusts: `S` says who.
    Verified(S),
    /// Neither signed nor required.
    NotSigned,
    /// A line for the user: refused (`require`) or a warning.
    Failed { refuse: bool, line: String },
}

/// Checks chart `name` `version` (its package `file` with digest `package`, and its `.prov`
/// if any) against `policy`.
pub fn check_chart(
    policy: &ChartPolicy,
    name: &str,
    version: &str,
    prov: Option<&[u8]>,
    file: &str,
    package: &chartreg_core::oci::Digest,
) -> Checked<Signer> {
    let rule = policy.rule(name);
    let result = match prov {
        Some(prov) => prov::verify(prov, &policy.keyring, file, package),
        None => Err(Reason::Unsigned),
    };
    match (result, rule) {
        (Ok(signer), _) => Checked::Verified(signer),
        (Err(Reason::Unsigned), None) => Checked::NotSigned,
        (Err(reason), Some(rule)) => Checked::Failed {
            refuse: policy.mode == Mode::Require,
            line: format!("chart {name} {version}: rule charts.require \"{rule}\": {reason}"),
        },
        (Err(reason), None) => Checked::Failed {
            refuse: false,
            line: format!("chart {name} {version}: signed, not required, and {reason}"),
        },
    }
}
