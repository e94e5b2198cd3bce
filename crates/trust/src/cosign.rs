//! cosign public keys, and cosign's legacy signature form: the `sha256-<hex>.sig` tag beside an
//! image, a manifest whose layers are simple-signing payloads, each signed (ECDSA, base64 DER in
//! the layer's `dev.cosignproject.cosign/signature` annotation) over the payload's bytes.
//!
//! A payload verifies when one of the policy's keys verifies its signature (sigstore-crypto,
//! over ring: `provider`) and its `critical.image.docker-manifest-digest` is the image's digest.
//! Not checked: `critical.identity.docker-reference` (mirrors and relocations change the name;
//! cosign does not require it either), and keyless `.sig` signatures (certificate annotation):
//! those are refused with a pointer to the bundle form, which carries what checking them needs.

use std::path::{Path, PathBuf};

use chartreg_core::oci::Digest;
use serde::Deserialize;
use sigstore_verify::crypto::VerificationKey;
use sigstore_verify::types::{DerPublicKey, SignatureBytes};

use crate::reason::SigReason;

/// The most of a public key file read (a PEM key is well under a KiB).
const KEY_LIMIT: u64 = 1 << 20;

/// The simple-signing layer's media type.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The layer annotation a keyless signature's certificate is in.
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";

/// A cosign public key of the policy.
#[derive(Debug, Clone)]
pub struct CosignKey {
    pub path: PathBuf,
    /// The key file's text, as read (the content's record embeds it).
    pub pem: String,
    pub der: DerPublicKey,
    /// `sha256:<hex>` of the key's SubjectPublicKeyInfo: what the lock and pages show, and the
    /// base64 of its bytes is a bundle's `publicKey.hint`.
    pub fingerprint: String,
}

/// Why a key file is not one.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read cosign key {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a PEM public key (`-----BEGIN PUBLIC KEY-----`, as `cosign generate-key-pair` writes cosign.pub): {source}", path.display())]
    NotPem {
        path: PathBuf,
        source: Box<sigstore_verify::types::Error>,
    },
    /// A PEM public key of a kind or curve no verifier takes.
    #[error("{} is not a PEM public key (`-----BEGIN PUBLIC KEY-----`, as `cosign generate-key-pair` writes cosign.pub): {source}", path.display())]
    Unusable {
        path: PathBuf,
        source: Box<sigstore_verify::crypto::Error>,
    },
}

impl CosignKey {
    /// Reads the PEM public key at `path`.
    pub fn read(path: &Path) -> Result<CosignKey, KeyError> {
        let text =
            chartreg_core::file::read_limited_to_string(path, KEY_LIMIT).map_err(|source| {
                KeyError::Read {
                    path: path.to_owned(),
                    source,
                }
            })?;
        CosignKey::from_pem(path, &text)
    }

    /// The PEM public key `text` (read from `path`, for messages).
    pub fn from_pem(path: &Path, text: &str) -> Result<CosignKey, KeyError> {
        let der = DerPublicKey::from_pem(text).map_err(|source| KeyError::NotPem {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        VerificationKey::from_spki(&der).map_err(|source| KeyError::Unusable {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        Ok(CosignKey {
            path: path.to_owned(),
            pem: text.to_owned(),
            fingerprint: Digest::sha256_of(der.as_bytes()).to_string(),
            der,
        })
    }

    /// Whether this key verifies `signature` over `data`.
    pub fn verifies(&self, data: &[u8], signature: &SignatureBytes) -> bool {
        VerificationKey::from_spki(&self.der).is_ok_and(|k| k.verify(data, signature).is_ok())
    }

    /// Whether a bundle's `publicKey.hint` (base64 of the SHA-256 of the key's
    /// SubjectPublicKeyInfo, as cosign writes it) names this key. sigstore-verify does not
    /// compare it; a bundle is checked with the key it names.
    pub fn is_hinted(&self, hint: &str) -> bool {
        use sha2::Digest as _;
        SignatureBytes::from_base64(hint.trim())
            .is_ok_and(|h| h.as_bytes() == sha2::Sha256::digest(self.der.as_bytes()).as_slice())
    }
}

#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    image: PayloadImage,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct PayloadImage {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

/// Checks one simple-signing layer (its `payload` bytes and its annotations' `signature` and
/// `certificate`) of a signature over `image`, against `keys`: the fingerprint of the key that
/// verified it.
pub fn check_simple_signing(
    keys: &[CosignKey],
    image: &Digest,
    payload: &[u8],
    signature: Option<&str>,
    certificate: Option<&str>,
) -> Result<String, SigReason> {
    let Some(signature) = signature else {
        return Err(SigReason::NoSignatureAnnotation {
            annotation: SIGNATURE_ANNOTATION,
        });
    };
    let signature =
        SignatureBytes::from_base64(signature.trim()).map_err(SigReason::SignatureNotBase64)?;
    crate::provider::install();
    let Some(key) = keys.iter().find(|k| k.verifies(payload, &signature)) else {
        return Err(if certificate.is_some() {
            SigReason::KeylessSig
        } else if keys.is_empty() {
            SigReason::NoKeys
        } else {
            SigReason::NoKeyVerifies
        });
    };
    let payload: Payload = serde_json::from_slice(payload).map_err(SigReason::NotSimpleSigning)?;
    if payload.critical.kind != "cosign container image signature" {
        return Err(SigReason::PayloadType(payload.critical.kind));
    }
    if payload.critical.image.digest != image.to_string() {
        return Err(SigReason::OtherDigest {
            signed: payload.critical.image.digest,
            key: Some(key.fingerprint.clone()),
        });
    }
    Ok(key.fingerprint.clone())
}
