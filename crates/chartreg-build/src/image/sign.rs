//! `image --sign-key KEY`: a cosign signature of the image, made offline and written into the
//! layout beside it.
//!
//! 1. The key ([`Signer::read`]): cosign's private key file, as `cosign generate-key-pair`
//!    writes it: PEM `ENCRYPTED SIGSTORE PRIVATE KEY` (or the older `ENCRYPTED COSIGN PRIVATE
//!    KEY`) around JSON naming the KDF (scrypt: N, r, p, salt), the cipher (nacl/secretbox:
//!    nonce) and the ciphertext, which is the PKCS#8 of an ECDSA P-256 key. The password is
//!    `COSIGN_PASSWORD`, as cosign reads it.
//! 2. The payload ([`Signer::sign`]): cosign's simple-signing JSON, its
//!    `critical.image.docker-manifest-digest` the manifest signed, its
//!    `critical.identity.docker-reference` the repository the image is pushed to
//!    ([`super::repository`]), which containers/image (CRI-O, Podman) compares with the one it
//!    pulls from.
//! 3. The signature: ECDSA P-256 over SHA-256, deterministic (RFC 6979: the same image and key
//!    give the same bytes, so the layout stays reproducible), DER, base64, in the payload
//!    layer's `dev.cosignproject.cosign/signature` annotation.
//!
//! `layout` signs what `index.json` tags and, for an index, each platform's manifest (as
//! `cosign sign --recursive` does: a node that pulls one platform by digest looks for that
//! digest's signature), and writes each signature twice: tagged `sha256-<hex>.sig` (cosign's
//! tag schema, where cosign, policy-controller, Kyverno and containers/image look), and as an
//! OCI 1.1 referrer of the manifest it signs.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chartreg_core::oci::Digest;
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::{DecodePrivateKey, EncodePublicKey};
use serde::Deserialize;
use zeroize::Zeroizing;

use super::repository::Repository;

/// The variable cosign reads a key's password from.
pub const PASSWORD_VARIABLE: &str = "COSIGN_PASSWORD";
/// The simple-signing layer's media type and its signature's annotation: the ones the trust
/// crate checks signatures by.
pub use crate::verify::cosign::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING};
/// The artifactType of a cosign signature attached as an OCI 1.1 referrer.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
/// The scrypt parameters a key file may ask for, checked before anything is derived: cosign
/// writes N = 2^15, r = 8, p = 1 (32 MiB, 2^18 blocks of work). scrypt needs 128·r·N bytes and
/// 128·r·N·p of work (BlockMix per element): a key file asking for more than 256 MiB, or more
/// than 16 times cosign's work, is refused at once, naming the parameter.
const MAX_LOG_N: u8 = 20;
const MAX_R: u32 = 32;
const MAX_P: u32 = 16;
const MAX_MEMORY: u64 = 256 << 20;
const MAX_WORK: u64 = 16 << 18;
/// The most of a key file read (a cosign key is well under a KiB).
const KEY_LIMIT: u64 = 1 << 20;

/// Why the key cannot sign.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("the signing key {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the signing key {} is not a cosign private key (PEM `ENCRYPTED SIGSTORE PRIVATE KEY`, as `cosign generate-key-pair` writes cosign.key): {reason}",
        path.display()
    )]
    NotCosign { path: PathBuf, reason: String },
    #[error(
        "the signing key {} does not open with the password in {PASSWORD_VARIABLE} (wrong password, or the file was changed)",
        path.display()
    )]
    Password { path: PathBuf },
    #[error("the signing key {} holds no ECDSA P-256 key: {reason}", path.display())]
    NotP256 { path: PathBuf, reason: String },
}

/// What signing takes: the key, and the repository the signatures name.
#[derive(Debug, Clone)]
pub struct Signing {
    pub signer: Signer,
    pub repository: Repository,
}

/// A key that signs images.
#[derive(Clone)]
pub struct Signer {
    key: p256::ecdsa::SigningKey,
    /// `sha256:<hex>` of the public key's SubjectPublicKeyInfo, as policies and pages name
    /// keys.
    pub fingerprint: String,
    /// The public key (PEM), as `cosign.pub` holds it.
    pub public_pem: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Encrypted {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

/// What was signed and how: the payload, and the annotation its layer carries.
#[derive(Debug, Clone)]
pub struct Signed {
    pub payload: Vec<u8>,
    /// base64 of the DER signature.
    pub signature: String,
}

impl Signer {
    /// Reads and opens cosign's private key at `path` with `password`.
    pub fn read(path: &Path, password: &[u8]) -> Result<Signer, SignError> {
        use std::io::Read;
        let not = |reason: &str| SignError::NotCosign {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(KEY_LIMIT).read_to_string(&mut text))
            .map_err(|source| SignError::Read {
                path: path.to_owned(),
                source,
            })?;
        let body = pem_body(&text).ok_or_else(|| not("no such PEM block"))?;
        let json = STANDARD
            .decode(body)
            .map_err(|e| not(&format!("its PEM is not base64: {e}")))?;
        let encrypted: Encrypted = serde_json::from_slice(&json)
            .map_err(|e| not(&format!("its content is not cosign's JSON: {e}")))?;
        if encrypted.kdf.name != "scrypt" || encrypted.cipher.name != "nacl/secretbox" {
            return Err(not(&format!(
                "it is encrypted with {} and {}, not scrypt and nacl/secretbox",
                encrypted.kdf.name, encrypted.cipher.name
            )));
        }
        let params = scrypt_params(encrypted.kdf.params).map_err(|e| not(&e.to_string()))?;
        let decode = |what: &str, b64: &str| {
            STANDARD
                .decode(b64)
                .map_err(|e| not(&format!("its {what} is not base64: {e}")))
        };
        let salt = decode("salt", &encrypted.kdf.salt)?;
        let nonce = decode("nonce", &encrypted.cipher.nonce)?;
        let ciphertext = decode("ciphertext", &encrypted.ciphertext)?;
        // Every secret is wiped when it goes: the derived key, the decrypted PKCS#8 (the signing
        // key wipes itself).
        let mut secret = Zeroizing::new([0u8; 32]);
        scrypt::scrypt(password, &salt, &params, secret.as_mut())
            .map_err(|e| not(&format!("scrypt: {e}")))?;
        use crypto_secretbox::aead::{Aead, KeyInit};
        let nonce: [u8; 24] = nonce
            .try_into()
            .map_err(|_| not("its nonce is not 24 bytes"))?;
        let der = Zeroizing::new(
            crypto_secretbox::XSalsa20Poly1305::new(&(*secret).into())
                .decrypt(&nonce.into(), ciphertext.as_slice())
                .map_err(|_| SignError::Password {
                    path: path.to_owned(),
                })?,
        );
        let key =
            p256::ecdsa::SigningKey::from_pkcs8_der(&der).map_err(|e| SignError::NotP256 {
                path: path.to_owned(),
                reason: e.to_string(),
            })?;
        let public = key
            .verifying_key()
            .to_public_key_der()
            .map_err(|e| SignError::NotP256 {
                path: path.to_owned(),
                reason: e.to_string(),
            })?;
        let fingerprint = Digest::sha256_of(public.as_bytes()).to_string();
        let public_pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD
                .encode(public.as_bytes())
                .as_bytes()
                .chunks(64)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
                .join("\n")
        );
        Ok(Signer {
            key,
            fingerprint,
            public_pem,
        })
    }

    /// Signs the manifest `digest` names as pushed to `repository` (cosign's
    /// `docker-reference`).
    pub fn sign(&self, digest: &Digest, repository: &Repository) -> Signed {
        let quoted = |s: &str| {
            serde_json::to_string(s).unwrap_or_else(|_| unreachable!("strings serialise"))
        };
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":{}}},"image":{{"docker-manifest-digest":{}}},"type":"cosign container image signature"}},"optional":null}}"#,
            quoted(repository.as_str()),
            quoted(digest.as_str())
        )
        .into_bytes();
        let signature: p256::ecdsa::Signature = self.key.sign(&payload);
        Signed {
            payload,
            signature: STANDARD.encode(signature.to_der().as_bytes()),
        }
    }
}

/// A key file's scrypt parameter past its bound (see above), with the values it asks for.
#[derive(Debug, thiserror::Error)]
enum KdfBound {
    #[error("its scrypt N {n} is not a power of two up to 2^{MAX_LOG_N}")]
    N { n: u64 },
    #[error("its scrypt r {r} is not from 1 to {MAX_R}")]
    R { r: u32 },
    #[error("its scrypt p {p} is not from 1 to {MAX_P}")]
    P { p: u32 },
    #[error(
        "its scrypt N {n} and r {r} ask for {} MiB, more than the {} MiB taken",
        memory >> 20,
        MAX_MEMORY >> 20
    )]
    Memory { n: u64, r: u32, memory: u64 },
    #[error(
        "its scrypt N {n}, r {r} and p {p} ask for {work} blocks of work, more than the {MAX_WORK} taken (16 times cosign's)"
    )]
    Work { n: u64, r: u32, p: u32, work: u64 },
    #[error("its scrypt parameters: {0}")]
    Invalid(scrypt::errors::InvalidParams),
}

/// The scrypt parameters of a key file, within the bounds above; the error names the one past
/// its bound.
fn scrypt_params(KdfParams { n, r, p }: KdfParams) -> Result<scrypt::Params, KdfBound> {
    let log_n = (n.is_power_of_two() && n > 1)
        .then(|| n.trailing_zeros())
        .and_then(|l| u8::try_from(l).ok())
        .filter(|l| *l <= MAX_LOG_N)
        .ok_or(KdfBound::N { n })?;
    if r == 0 || r > MAX_R {
        return Err(KdfBound::R { r });
    }
    if p == 0 || p > MAX_P {
        return Err(KdfBound::P { p });
    }
    let memory = 128 * u64::from(r) * n;
    if memory > MAX_MEMORY {
        return Err(KdfBound::Memory { n, r, memory });
    }
    let work = n * u64::from(r) * u64::from(p);
    if work > MAX_WORK {
        return Err(KdfBound::Work { n, r, p, work });
    }
    scrypt::Params::new(log_n, r, p, 32).map_err(KdfBound::Invalid)
}

/// The base64 between the BEGIN and END lines of cosign's private key block.
fn pem_body(text: &str) -> Option<String> {
    for label in [
        "ENCRYPTED SIGSTORE PRIVATE KEY",
        "ENCRYPTED COSIGN PRIVATE KEY",
    ] {
        let begin = format!("-----BEGIN {label}-----");
        let end = format!("-----END {label}-----");
        if let Some(start) = text.find(&begin) {
            let rest = &text[start + begin.len()..];
            let stop = rest.find(&end)?;
            return Some(rest[..stop].split_whitespace().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case(32768, 8, 1, None)]
    #[case(1 << 20, 2, 1, None)]
    #[case(1 << 21, 1, 1, Some("its scrypt N 2097152 is not a power of two up to 2^20"))]
    #[case(3, 8, 1, Some("its scrypt N 3 is not a power of two"))]
    #[case(32768, 0, 1, Some("its scrypt r 0 is not from 1 to 32"))]
    #[case(
        32768,
        u32::MAX,
        1,
        Some("its scrypt r 4294967295 is not from 1 to 32")
    )]
    #[case(
        32768,
        8,
        u32::MAX,
        Some("its scrypt p 4294967295 is not from 1 to 16")
    )]
    #[case(1 << 20, 8, 1, Some("its scrypt N 1048576 and r 8 ask for 1024 MiB"))]
    #[case(1 << 15, 8, 16, None)]
    #[case(1 << 18, 8, 16, Some("ask for 33554432 blocks of work"))]
    fn scrypt_parameters_past_their_bounds_are_refused_naming_them(
        #[case] n: u64,
        #[case] r: u32,
        #[case] p: u32,
        #[case] refused: Option<&str>,
    ) {
        let started = std::time::Instant::now();
        match (scrypt_params(KdfParams { n, r, p }), refused) {
            (Ok(_), None) => {}
            (Err(e), Some(want)) => assert!(e.to_string().contains(want), "{e}"),
            (got, want) => panic!("{n} {r} {p}: {:?}, wanted {want:?}", got.map(|_| ())),
        }
        assert!(started.elapsed() < std::time::Duration::from_millis(50));
    }

    #[test]
    fn a_hostile_key_file_is_refused_before_anything_is_derived() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cosign.key");
        let json = r#"{"kdf":{"name":"scrypt","params":{"N":32768,"r":4294967295,"p":4294967295},"salt":"AAAA"},"cipher":{"name":"nacl/secretbox","nonce":"AAAA"},"ciphertext":"AAAA"}"#;
        std::fs::write(
            &path,
            format!(
                "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n{}\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
                STANDARD.encode(json)
            ),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let e = Signer::read(&path, b"pw").unwrap_err();
        assert!(e.to_string().contains("its scrypt r 4294967295"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }
}
