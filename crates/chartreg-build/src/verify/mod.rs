//! `verify:` in the content file: what must be signed, by whom, and what pack does when it is
//! not. Charts so far: each chart's `.prov` is checked against the policy's keyring
//! ([`prov`], [`keyring`]) when pack reads it; a chart whose name a `require` pattern
//! ([`patterns`]) matches must verify, else pack refuses it (`mode: require`) or warns
//! (`mode: warn`); a chart no pattern names is checked when it is signed, and a signature that
//! fails is a warning.
//!
//! ```yaml
//! verify:
//!   mode: require              # or warn
//!   charts:
//!     keyring: keys/pubring.gpg
//!     require: ["*"]           # chart name patterns that must be signed
//! ```

pub mod keyring;
pub mod patterns;
pub mod prov;

use std::path::PathBuf;

use serde::Deserialize;

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
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChartsSection {
    pub keyring: PathBuf,
    #[serde(default)]
    pub require: Vec<String>,
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
        self.require
            .iter()
            .find(|p| patterns::matches(p, name))
            .map(String::as_str)
    }
}

/// What checking one chart came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// Signed by a key of the keyring.
    Verified(Signer),
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
) -> Checked {
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
