//! The policy: the content file's `verify:` section (`section`) as read ([`Policy`]: its
//! keyring, keys and trusted roots parsed, their bytes kept; a verifier made over each root by
//! `verifier`). A policy is read
//! from the files the section names ([`Policy::of`]) or from the record the built content
//! embeds ([`Policy::from_record`]); [`Policy::record`] is that record. [`check_chart`] and the
//! rule lookups say what a chart's check comes to under it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chartreg_core::content::{ChartsMaterial, ImagesMaterial, KeylessMaterial, PolicyRecord};

use crate::cosign::{CosignKey, KeyError};
use crate::keyring::{Keyring, KeyringError};
use crate::prov::{Reason, Signer};
use crate::section::{Mode, VerifySection};
use crate::verifier::{self, RootError};
use crate::{patterns, prov};

/// Why a policy cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Keyring(#[from] KeyringError),
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The keyring a record keeps (hex) is not hex.
    #[error("{}: not an OpenPGP keyring: the recorded keyring is not hex: {source}", path.display())]
    RecordedKeyring {
        path: PathBuf,
        source: hex::FromHexError,
    },
    #[error(transparent)]
    Root(#[from] RootError),
    #[error("mode `{0}` is neither require nor warn")]
    Mode(String),
}

/// The content file's policy, its material read: what pack and fetch check against.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub charts: Option<ChartPolicy>,
    pub images: Option<ImagePolicy>,
}

impl Policy {
    /// What the built content embeds: the mode, and each part's material and patterns.
    pub fn record(&self) -> PolicyRecord {
        PolicyRecord {
            mode: self.mode().as_str().to_owned(),
            charts: self.charts.as_ref().map(ChartPolicy::record),
            images: self.images.as_ref().map(ImagePolicy::record),
        }
    }

    /// The policy `record` (read from `from`) stands for.
    pub fn from_record(from: &Path, record: &PolicyRecord) -> Result<Policy, PolicyError> {
        let mode = match record.mode.as_str() {
            "require" => Mode::Require,
            "warn" => Mode::Warn,
            other => return Err(PolicyError::Mode(other.to_owned())),
        };
        Ok(Policy {
            charts: record
                .charts
                .as_ref()
                .map(|c| ChartPolicy::from_record(from, mode, c))
                .transpose()?,
            images: record
                .images
                .as_ref()
                .map(|i| ImagePolicy::from_record(from, mode, i))
                .transpose()?,
        })
    }

    /// The mode (the same for both parts).
    pub fn mode(&self) -> Mode {
        self.charts
            .as_ref()
            .map(|c| c.mode)
            .or(self.images.as_ref().map(|i| i.mode))
            .unwrap_or_default()
    }

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
    /// That root's JSON, as the record keeps it.
    pub key_root_json: Option<String>,
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
    /// The root's JSON, as the record keeps it.
    pub root_json: String,
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

impl ImagePolicy {
    /// The policy a content file's section makes (`None` without an `images:` part).
    pub fn of(config: &Path, section: &VerifySection) -> Result<Option<ImagePolicy>, PolicyError> {
        let Some(images) = &section.images else {
            return Ok(None);
        };
        let key_root = images
            .trusted_root
            .as_deref()
            .map(verifier::read_root)
            .transpose()?;
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
                    let (root_json, verifier) = verifier::read_root(&rule.trusted_root)?;
                    Ok(KeylessRule {
                        identity: rule.identity.clone(),
                        issuer: rule.issuer.clone(),
                        root: rule.trusted_root.clone(),
                        root_json,
                        verifier,
                    })
                })
                .collect::<Result<_, PolicyError>>()?,
            key_root_json: key_root.as_ref().map(|(json, _)| json.clone()),
            key_root: key_root.map(|(_, verifier)| verifier),
            no_root: verifier::empty_verifier()?,
            require: images.require.clone(),
        }))
    }

    /// The images' part of the record.
    pub fn record(&self) -> ImagesMaterial {
        ImagesMaterial {
            keys: self.keys.iter().map(|k| k.pem.clone()).collect(),
            trusted_root: self.key_root_json.clone(),
            keyless: self
                .keyless
                .iter()
                .map(|r| KeylessMaterial {
                    identity: r.identity.clone(),
                    issuer: r.issuer.clone(),
                    trusted_root: r.root_json.clone(),
                })
                .collect(),
            require: self.require.clone(),
        }
    }

    /// The images' policy a record makes (`from`: the record's file, for messages).
    pub fn from_record(
        from: &Path,
        mode: Mode,
        record: &ImagesMaterial,
    ) -> Result<ImagePolicy, PolicyError> {
        let key_root = match &record.trusted_root {
            Some(json) => Some(verifier::root_verifier(from, json)?),
            None => None,
        };
        Ok(ImagePolicy {
            config: from.to_owned(),
            mode,
            keys: record
                .keys
                .iter()
                .map(|pem| CosignKey::from_pem(from, pem))
                .collect::<Result<_, _>>()?,
            keyless: record
                .keyless
                .iter()
                .map(|r| {
                    Ok(KeylessRule {
                        identity: r.identity.clone(),
                        issuer: r.issuer.clone(),
                        root: from.to_owned(),
                        root_json: r.trusted_root.clone(),
                        verifier: verifier::root_verifier(from, &r.trusted_root)?,
                    })
                })
                .collect::<Result<_, PolicyError>>()?,
            key_root,
            key_root_json: record.trusted_root.clone(),
            no_root: verifier::empty_verifier()?,
            require: record.require.clone(),
        })
    }

    /// The `require` pattern that names repository `name`, if one does.
    pub fn rule(&self, name: &str) -> Option<&str> {
        patterns::first_match(&self.require, name)
    }
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

    /// The charts' part of the record.
    pub fn record(&self) -> ChartsMaterial {
        ChartsMaterial {
            keyring: hex::encode(&self.keyring.data),
            require: self.require.clone(),
        }
    }

    /// The charts' policy a record makes (`from`: the record's file, for messages).
    pub fn from_record(
        from: &Path,
        mode: Mode,
        record: &ChartsMaterial,
    ) -> Result<ChartPolicy, PolicyError> {
        let data = hex::decode(&record.keyring).map_err(|source| PolicyError::RecordedKeyring {
            path: from.to_owned(),
            source,
        })?;
        Ok(ChartPolicy {
            config: from.to_owned(),
            mode,
            keyring: Keyring::from_bytes(from, data)?,
            require: record.require.clone(),
        })
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

impl<S> Checked<S> {
    /// The same outcome, who signed said by `f`.
    pub fn map<T>(self, f: impl FnOnce(S) -> T) -> Checked<T> {
        match self {
            Checked::Verified(s) => Checked::Verified(f(s)),
            Checked::NotSigned => Checked::NotSigned,
            Checked::Failed { refuse, line } => Checked::Failed { refuse, line },
        }
    }
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
