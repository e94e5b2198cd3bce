//! The content file's `verify:` section as written: what must be signed, by whom (paths
//! relative to the content file until [`VerifySection::relative_to`] joins them), and what a
//! failed rule does ([`Mode`]). `policy` reads the files it names.

use std::path::{Path, PathBuf};

use serde::Deserialize;

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

/// What a failed rule does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Require,
    Warn,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Require => "require",
            Mode::Warn => "warn",
        }
    }
}
