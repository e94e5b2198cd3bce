//! What was verified when the content was built, and the policy it was verified against.
//!
//! 1. `chartreg-build pack` checks charts' `.prov` and images' cosign signatures against the
//!    content file's `verify:` policy and, when there is one, writes [`VERIFICATION_FILE`]
//!    beside the repositories in the shape of [`VerificationFile`]: the policy with its
//!    material (keyring, cosign keys, trusted roots: what `chartreg verify` re-checks with, so
//!    the binary carries its own evidence), and per chart version and per image tag what
//!    verified it ([`Evidence`]) or the warning a failed signature gave under `mode: warn`.
//!    Artifacts with no record were not verified (unsigned, and no rule required them).
//! 2. The server shows each version's record ("verified: key … at build") on its pages and in
//!    `chartreg ls`; `chartreg verify` checks the signatures again from the embedded bytes.
//!
//! Only the shape lives here: checking signatures is the trust crate's job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::oci::{Digest, RepositoryName};

/// The file's path in the content, beside the repositories (as `chart-images.json`).
pub const VERIFICATION_FILE: &str = "verification.json";

/// What the file holds (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerificationFile {
    pub policy: PolicyRecord,
    /// By chart repository (`charts/cilium`), then chart version.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub charts: BTreeMap<RepositoryName, BTreeMap<String, Record>>,
    /// By image repository as served (`quay.io/cilium/cilium`), then tag.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<RepositoryName, BTreeMap<String, Record>>,
}

impl VerificationFile {
    /// The file as it is written: sorted, indented JSON ending in a newline (the same
    /// verification gives the same bytes, so `pack --check` compares them).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut data = serde_json::to_vec_pretty(self)
            .unwrap_or_else(|_| unreachable!("names, strings and lists serialise"));
        data.push(b'\n');
        data
    }
}

/// The content file's `verify:` policy, with the material it names embedded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyRecord {
    /// `require` or `warn`.
    pub mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charts: Option<ChartsMaterial>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImagesMaterial>,
}

/// The charts' part: the OpenPGP keyring's bytes (hex) and the required name patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChartsMaterial {
    pub keyring: String,
    pub require: Vec<String>,
}

/// The images' part: cosign public keys (PEM), the trusted root for key-signed bundles' log
/// entries (its JSON), the keyless rules (each with its root's JSON), required patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImagesMaterial {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_root: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keyless: Vec<KeylessMaterial>,
    pub require: Vec<String>,
}

/// One keyless rule: identity pattern, exact issuer, the trusted root's JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeylessMaterial {
    pub identity: String,
    pub issuer: String,
    pub trusted_root: String,
}

/// One artifact's verification: the digest checked (a chart's package, an image's manifest or
/// index), who signed it, or the warning its failed signature gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub digest: Digest,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verified: Vec<Evidence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Which signature form verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    /// A chart's `.prov` (OpenPGP clear-signed).
    Prov,
    /// cosign's `sha256-<hex>.sig` tag.
    Sig,
    /// A Sigstore bundle referrer.
    Bundle,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Prov => ".prov",
            Form::Sig => ".sig",
            Form::Bundle => "bundle",
        }
    }
}

/// Who signed, as verified: what the lock records, pages show and `chartreg verify` re-checks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "lowercase", deny_unknown_fields)]
pub enum Evidence {
    /// A key: an OpenPGP primary key's fingerprint (hex, `.prov`), with the signing subkey's
    /// when another; or a cosign key's `sha256:` of its SubjectPublicKeyInfo.
    Key {
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subkey: Option<String>,
        form: Form,
    },
    /// A keyless signature: the certificate's identity and issuer.
    Identity {
        identity: String,
        issuer: String,
        form: Form,
    },
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Evidence::Key { key, subkey, form } => {
                write!(f, "key {key}")?;
                if let Some(subkey) = subkey {
                    write!(f, " (subkey {subkey})")?;
                }
                write!(f, " ({})", form.as_str())
            }
            Evidence::Identity {
                identity,
                issuer,
                form,
            } => write!(
                f,
                "identity {identity} (issuer {issuer}, {})",
                form.as_str()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_reads_back_and_says_who() {
        let file = VerificationFile {
            policy: PolicyRecord {
                mode: "require".into(),
                ..PolicyRecord::default()
            },
            charts: BTreeMap::new(),
            images: BTreeMap::from([(
                "quay.io/org/app".parse().unwrap(),
                BTreeMap::from([(
                    "v1".to_owned(),
                    Record {
                        digest: Digest::sha256_of(b"x"),
                        verified: vec![
                            Evidence::Key {
                                key: "sha256:ab".into(),
                                subkey: None,
                                form: Form::Sig,
                            },
                            Evidence::Identity {
                                identity: "https://github.com/o/r/w.yaml@refs/tags/v1".into(),
                                issuer: "https://token.actions.githubusercontent.com".into(),
                                form: Form::Bundle,
                            },
                        ],
                        warning: None,
                    },
                )]),
            )]),
        };
        let bytes = file.to_bytes();
        let back: VerificationFile = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, file);
        let record = &back.images[&"quay.io/org/app".parse::<RepositoryName>().unwrap()]["v1"];
        assert_eq!(record.verified[0].to_string(), "key sha256:ab (.sig)");
        assert_eq!(
            record.verified[1].to_string(),
            "identity https://github.com/o/r/w.yaml@refs/tags/v1 (issuer https://token.actions.githubusercontent.com, bundle)"
        );
        assert!(
            String::from_utf8(bytes)
                .unwrap()
                .contains("\"by\": \"identity\"")
        );
    }
}
