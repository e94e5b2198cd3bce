//! What was verified when the content was built, and the policy it was verified against.
//!
//! 1. `chartreg-build pack` checks charts' `.prov` and images' cosign signatures against the
//!    content file's `verify:` policy and, when there is one, writes [`VERIFICATION_FILE`]
//!    beside the repositories in the shape of [`VerificationFile`]: the policy with its
//!    material (keyring, cosign keys, trusted roots: what `chartreg verify` re-checks with, so
//!    the binary carries its own evidence), and per chart version and per image tag what
//!    verified it ([`Evidence`]) or the warning a failed signature gave under `mode: warn`.
//!    Artifacts with no record were not verified (unsigned, and no rule required them).
//! 2. The loader (`Description::of`) reads the file with [`VerificationFile`] when the content
//!    holds it: a file it cannot read is content that cannot be served, naming the file.
//! 3. A [`Registry`] keeps the file's bytes and parses them on the first
//!    [`Registry::chart_verification`] or [`Registry::image_verification`] call (module
//!    `beside`): the pages, `chartreg ls` and the SBOM show the records ("verified: key … at
//!    build"). `chartreg verify` checks the signatures again from the embedded bytes.
//!
//! Only the shape and the lookups live here: checking signatures is the trust crate's job.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{Registry, beside};
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
        beside::written(self)
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
    /// For an index cut down to some platforms (`fetch --platform`): the index upstream
    /// serves, which the signatures are over and which lists every platform kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<UpstreamIndex>,
}

/// The index upstream serves, of which a served index keeps some platforms: its digest and
/// its bytes (JSON, so kept as text), what `chartreg verify` checks the served one against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamIndex {
    pub digest: Digest,
    pub index: String,
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

/// By repository, then chart version or tag.
type Records = HashMap<String, HashMap<String, Record>>;

/// The file parsed: the charts' records and the images'.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    charts: Records,
    images: Records,
}

fn parse(bytes: &[u8]) -> Parsed {
    let Some(file) = beside::read::<VerificationFile>(VERIFICATION_FILE, bytes) else {
        return Parsed::default();
    };
    let by_name = |records: BTreeMap<RepositoryName, BTreeMap<String, Record>>| -> Records {
        records
            .into_iter()
            .map(|(repository, versions)| {
                (
                    repository.as_str().to_owned(),
                    versions.into_iter().collect(),
                )
            })
            .collect()
    };
    Parsed {
        charts: by_name(file.charts),
        images: by_name(file.images),
    }
}

impl Registry {
    /// Whether the content holds a record of what was verified at build.
    pub fn has_verification(&self) -> bool {
        self.verification.is_held()
    }

    /// What verified the chart `version` (as `Chart.yaml` has it) in `repository` at build, or
    /// the warning its failed signature gave; `None` when the content records nothing for it
    /// (no record at all, or not of this version): it was not verified.
    pub fn chart_verification(&self, repository: &str, version: &str) -> Option<&Record> {
        let parsed = self.verification.parsed(parse)?;
        parsed.charts.get(repository)?.get(version)
    }

    /// The same for the image tag `tag` in `repository` (as served).
    pub fn image_verification(&self, repository: &str, tag: &str) -> Option<&Record> {
        let parsed = self.verification.parsed(parse)?;
        parsed.images.get(repository)?.get(tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::beside::one_image;

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
                        upstream: None,
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

    fn record(verified: Vec<Evidence>, warning: Option<&str>) -> Record {
        Record {
            digest: Digest::sha256_of(b"package"),
            verified,
            warning: warning.map(str::to_owned),
            upstream: None,
        }
    }

    #[test]
    fn a_registry_finds_each_record_by_chart_version_and_by_image_tag() {
        let key = Evidence::Key {
            key: "0123abcd".into(),
            subkey: None,
            form: Form::Prov,
        };
        let file = VerificationFile {
            policy: PolicyRecord {
                mode: "warn".into(),
                ..PolicyRecord::default()
            },
            charts: BTreeMap::from([(
                "charts/app".parse().unwrap(),
                BTreeMap::from([
                    ("1.0.0+build.1".to_owned(), record(vec![key.clone()], None)),
                    ("0.9.0".to_owned(), record(vec![], Some("no signature"))),
                ]),
            )]),
            images: BTreeMap::from([(
                "images/x".parse().unwrap(),
                BTreeMap::from([("v1".to_owned(), record(vec![key.clone()], None))]),
            )]),
        };
        let mut files = one_image("images/x", "v1").0;
        files.push(crate::content::HeldFile::new(
            VERIFICATION_FILE,
            file.to_bytes(),
        ));
        let registry = Registry::from_files(files).unwrap();
        assert!(registry.has_verification());
        let found = registry
            .chart_verification("charts/app", "1.0.0+build.1")
            .unwrap();
        assert_eq!(found.verified, std::slice::from_ref(&key));
        let warned = registry.chart_verification("charts/app", "0.9.0").unwrap();
        assert_eq!(warned.warning.as_deref(), Some("no signature"));
        assert_eq!(
            registry
                .image_verification("images/x", "v1")
                .unwrap()
                .verified,
            [key]
        );
        // Nothing recorded: not verified. Charts and images are looked up apart.
        assert!(registry.chart_verification("charts/app", "1.0.0").is_none());
        assert!(registry.chart_verification("images/x", "v1").is_none());
        assert!(registry.image_verification("images/x", "v2").is_none());
        assert!(registry.image_verification("charts/app", "0.9.0").is_none());
    }

    #[test]
    fn content_without_the_file_records_nothing() {
        let registry = Registry::from_files(one_image("images/x", "v1").0).unwrap();
        assert!(!registry.has_verification());
        assert!(registry.image_verification("images/x", "v1").is_none());
    }

    /// A file the loader cannot read is content that cannot be served, naming the file: not
    /// JSON, an invalid name or digest, evidence of no known kind, a field it does not know.
    #[test]
    fn a_file_the_loader_cannot_read_refuses_the_content_naming_it() {
        let digest = Digest::sha256_of(b"x");
        for bad in [
            "not json".to_owned(),
            r#"{"charts":{}}"#.to_owned(),
            r#"{"policy":{"mode":"require"},"images":{"Images/x":{}}}"#.to_owned(),
            r#"{"policy":{"mode":"require"},"images":{"images/x":{"v1":{"digest":"sha256:12"}}}}"#
                .to_owned(),
            format!(
                r#"{{"policy":{{"mode":"require"}},"images":{{"images/x":{{"v1":{{"digest":"{digest}","verified":[{{"by":"guess","form":"sig"}}]}}}}}}}}"#
            ),
            format!(
                r#"{{"policy":{{"mode":"require"}},"charts":{{"charts/a":{{"1.0.0":{{"digest":"{digest}","verified":[{{"by":"key","key":"ab","form":"pgp"}}]}}}}}}}}"#
            ),
            r#"{"policy":{"mode":"require"},"other":1}"#.to_owned(),
        ] {
            let mut files = one_image("images/x", "v1").0;
            files.push(crate::content::HeldFile::new(
                VERIFICATION_FILE,
                bad.clone().into_bytes(),
            ));
            let built: Vec<crate::content::BuildFile> =
                files.iter().map(crate::content::BuildFile::from).collect();
            let refused = crate::content::Description::of(&built)
                .refusal()
                .map(ToString::to_string)
                .unwrap_or_else(|| panic!("{bad} was accepted"));
            assert!(refused.starts_with(VERIFICATION_FILE), "{bad}: {refused}");
            let served = Registry::from_files(files);
            assert!(
                served.is_err_and(|e| e.to_string().starts_with(VERIFICATION_FILE)),
                "{bad}"
            );
        }
    }
}
