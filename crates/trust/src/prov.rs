//! A Helm provenance file's signature, checked as `helm verify` checks it: the OpenPGP
//! clear-signed message's signature against a keyring (the primary key of each key, then each
//! subkey whose binding verified: rPGP's own key check tries the primary key only), then the
//! package digest the signed text lists for `<name>-<version>.tgz`, read from the text the
//! signature covers.

use std::collections::BTreeMap;

use chartreg_core::oci::Digest;
use pgp::composed::CleartextSignedMessage;
use pgp::packet::Signature;
use pgp::types::{KeyDetails, VerifyingKey};

use crate::keyring::Keyring;

/// Who signed: the key's primary fingerprint (what `helm verify` prints) and the key that
/// made the signature (the primary key or a subkey), uppercase hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    pub primary: String,
    pub signing: String,
}

impl Signer {
    /// As the lock and the content record it: the primary key, and the subkey when another.
    pub fn evidence(&self) -> chartreg_core::content::Evidence {
        chartreg_core::content::Evidence::Key {
            key: self.primary.clone(),
            subkey: (self.signing != self.primary).then(|| self.signing.clone()),
            form: chartreg_core::content::Form::Prov,
        }
    }
}

/// Why a provenance file does not verify.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Reason {
    #[error("no signature (no .prov beside the package)")]
    Unsigned,
    #[error("the .prov is not an OpenPGP clear-signed message: not UTF-8: {0}")]
    NotUtf8(#[source] std::str::Utf8Error),
    #[error("the .prov is not an OpenPGP clear-signed message: {0}")]
    NotCleartext(#[source] std::sync::Arc<pgp::errors::Error>),
    #[error(
        "the .prov is not an OpenPGP clear-signed message: no `files:` section after the chart metadata"
    )]
    NoFiles,
    #[error("signed by another key ({}), not one in {keyring}", .issuers.join(", "))]
    OtherKey {
        issuers: Vec<String>,
        keyring: String,
    },
    #[error("the signature does not match the signed text (key {key}): the .prov was changed")]
    BadSignature { key: String },
    #[error("digest mismatch: the signed .prov lists {listed} for {file}, the package is {actual}")]
    DigestMismatch {
        file: String,
        listed: String,
        actual: String,
    },
    #[error("the signed .prov lists no digest for {0}")]
    NotListed(String),
}

/// Checks `prov` against `keyring`, for the package `file` (`NAME-VERSION.tgz`) whose digest is
/// `package`.
pub fn verify(
    prov: &[u8],
    keyring: &Keyring,
    file: &str,
    package: &Digest,
) -> Result<Signer, Reason> {
    let text = std::str::from_utf8(prov).map_err(Reason::NotUtf8)?;
    let (message, _) = CleartextSignedMessage::from_string(text)
        .map_err(|e| Reason::NotCleartext(std::sync::Arc::new(e)))?;
    let signed = message.signed_text();
    let signer = signer(&message, &signed, keyring)?;
    let listed = listed(&signed, file)?;
    if listed != package.as_str() {
        return Err(Reason::DigestMismatch {
            file: file.to_owned(),
            listed,
            actual: package.to_string(),
        });
    }
    Ok(signer)
}

fn signer(
    message: &CleartextSignedMessage,
    signed: &str,
    keyring: &Keyring,
) -> Result<Signer, Reason> {
    for signature in message.signatures() {
        for key in &keyring.keys {
            let primary = key.primary_key.fingerprint();
            let mut candidates: Vec<(&dyn Verifies, String)> =
                vec![(&key.primary_key, format!("{primary:X}"))];
            for sub in &key.public_subkeys {
                if sub.verify_bindings(&key.primary_key).is_ok() {
                    candidates.push((&sub.key, format!("{:X}", sub.key.fingerprint())));
                }
            }
            for (candidate, fingerprint) in candidates {
                if candidate.verifies(signature, signed.as_bytes()) {
                    return Ok(Signer {
                        primary: format!("{primary:X}"),
                        signing: fingerprint,
                    });
                }
            }
        }
    }
    // No key verified it: a key of the keyring issued it (the text or signature changed), or
    // another key did.
    let issuers = issuers(message);
    let held = keyring.keys.iter().find_map(|key| {
        let ids: Vec<String> = std::iter::once(key.primary_key.legacy_key_id().to_string())
            .chain(
                key.public_subkeys
                    .iter()
                    .map(|s| s.key.legacy_key_id().to_string()),
            )
            .collect();
        issuers
            .iter()
            .any(|i| ids.iter().any(|id| i.eq_ignore_ascii_case(id)))
            .then(|| format!("{:X}", key.primary_key.fingerprint()))
    });
    Err(match held {
        Some(key) => Reason::BadSignature { key },
        None => Reason::OtherKey {
            issuers,
            keyring: keyring.path.display().to_string(),
        },
    })
}

/// A key that can check a signature (a primary key or a subkey).
trait Verifies {
    fn verifies(&self, signature: &Signature, data: &[u8]) -> bool;
}

impl<K: VerifyingKey> Verifies for K {
    fn verifies(&self, signature: &Signature, data: &[u8]) -> bool {
        signature.verify(self, data).is_ok()
    }
}

/// The key IDs the signatures name as their issuers (the fingerprint's last 8 bytes when only
/// that is given), lowercase hex.
fn issuers(message: &CleartextSignedMessage) -> Vec<String> {
    let mut ids: Vec<String> = message
        .signatures()
        .iter()
        .flat_map(|s| {
            s.issuer_key_id()
                .into_iter()
                .map(ToString::to_string)
                .chain(s.issuer_fingerprint().into_iter().map(|f| {
                    let hex = format!("{f:x}");
                    hex[hex.len().saturating_sub(16)..].to_owned()
                }))
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        ids.push("no issuer named".to_owned());
    }
    ids
}

/// The digest the signed text lists for `file` (its second YAML document's `files:`).
fn listed(signed: &str, file: &str) -> Result<String, Reason> {
    #[derive(serde::Deserialize)]
    struct Files {
        files: BTreeMap<String, String>,
    }
    let text = signed.replace("\r\n", "\n");
    let files = text
        .split("\n...\n")
        .nth(1)
        .and_then(|doc| serde_yaml_ng::from_str::<Files>(doc).ok())
        .ok_or(Reason::NoFiles)?;
    files
        .files
        .get(file)
        .cloned()
        .ok_or_else(|| Reason::NotListed(file.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
    }

    fn sample() -> (Vec<u8>, Keyring, Digest) {
        let prov = std::fs::read(root().join("charts/motd-1.0.0.tgz.prov")).unwrap();
        let keyring =
            Keyring::read(&root().join("tests/fixtures/sample-signing-pubring.gpg")).unwrap();
        let package = std::fs::read(root().join("charts/motd-1.0.0.tgz")).unwrap();
        (prov, keyring, Digest::sha256_of(&package))
    }

    #[test]
    fn the_sample_chart_verifies_with_its_keyring() {
        let (prov, keyring, digest) = sample();
        let signer = verify(&prov, &keyring, "motd-1.0.0.tgz", &digest).unwrap();
        assert_eq!(signer.primary.len(), 40, "{signer:?}");
    }

    #[test]
    fn a_changed_text_another_package_and_another_name_are_refused() {
        let (prov, keyring, digest) = sample();
        let text = String::from_utf8(prov.clone()).unwrap();
        let changed = text.replacen("name: motd", "name: mote", 1);
        assert_ne!(changed, text);
        assert!(matches!(
            verify(changed.as_bytes(), &keyring, "motd-1.0.0.tgz", &digest),
            Err(Reason::BadSignature { .. })
        ));
        let other = Digest::sha256_of(b"another package");
        assert!(matches!(
            verify(&prov, &keyring, "motd-1.0.0.tgz", &other),
            Err(Reason::DigestMismatch { .. })
        ));
        assert!(matches!(
            verify(&prov, &keyring, "motd-2.0.0.tgz", &digest),
            Err(Reason::NotListed(file)) if file == "motd-2.0.0.tgz"
        ));
        assert!(matches!(
            verify(b"not a signed message", &keyring, "motd-1.0.0.tgz", &digest),
            Err(Reason::NotCleartext(_))
        ));
    }
}
