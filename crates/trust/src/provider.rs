//! The cryptography sigstore-verify runs on: ring, the provider the rest of the build tool (and
//! the server's TLS) already uses, so the build tool links no second crypto library.
//! sigstore-crypto's own backend is aws-lc-rs, a C library built by aws-lc-sys: without it the
//! crate asks for a [`CryptoProvider`], and this is that provider, mapping each signing scheme to
//! ring's verification algorithm (as sigstore-crypto's aws-lc provider maps it to aws-lc's).
//!
//! Verification only: the build tool never signs. Two kinds of input ring cannot check are
//! refused with sigstore-crypto's `UnsupportedAlgorithm`: ML-DSA keys, and signatures over a
//! digest given without its message (a hashedrekord bundle of a digest). cosign's signatures
//! over images are DSSE envelopes, verified over their message.

use std::sync::OnceLock;

use ring::digest::{Context, SHA256, SHA384, SHA512};
use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use sigstore_verify::crypto::{
    CryptoProvider, Error, HashContext, Result, SigningScheme, install_default_provider,
};
use sigstore_verify::types::HashAlgorithm;

/// ring, for sigstore-crypto.
#[derive(Debug)]
pub struct RingProvider;

static PROVIDER: RingProvider = RingProvider;
static INSTALLED: OnceLock<()> = OnceLock::new();

/// Makes ring sigstore-crypto's provider for this process; called before every verification
/// (the first call installs it, later ones do nothing).
pub fn install() {
    INSTALLED.get_or_init(|| {
        // Only this module installs one, once: another provider cannot be there before it.
        let _ = install_default_provider(&PROVIDER);
    });
}

struct RingHash(Context);

impl HashContext for RingHash {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    fn finalize(self: Box<Self>) -> Vec<u8> {
        self.0.finish().as_ref().to_vec()
    }
}

/// ring's algorithm for `scheme`; `None` for the schemes ring has no verifier for.
fn algorithm(scheme: SigningScheme) -> Option<&'static dyn VerificationAlgorithm> {
    Some(match scheme {
        SigningScheme::EcdsaP256Sha256 => &signature::ECDSA_P256_SHA256_ASN1,
        SigningScheme::EcdsaP256Sha384 => &signature::ECDSA_P256_SHA384_ASN1,
        SigningScheme::EcdsaP384Sha256 => &signature::ECDSA_P384_SHA256_ASN1,
        SigningScheme::EcdsaP384Sha384 => &signature::ECDSA_P384_SHA384_ASN1,
        SigningScheme::Ed25519 => &signature::ED25519,
        SigningScheme::RsaPssSha256 => &signature::RSA_PSS_2048_8192_SHA256,
        SigningScheme::RsaPssSha384 => &signature::RSA_PSS_2048_8192_SHA384,
        SigningScheme::RsaPssSha512 => &signature::RSA_PSS_2048_8192_SHA512,
        SigningScheme::RsaPkcs1Sha256 => &signature::RSA_PKCS1_2048_8192_SHA256,
        SigningScheme::RsaPkcs1Sha384 => &signature::RSA_PKCS1_2048_8192_SHA384,
        SigningScheme::RsaPkcs1Sha512 => &signature::RSA_PKCS1_2048_8192_SHA512,
        _ => return None,
    })
}

impl CryptoProvider for RingProvider {
    fn hash(&self, algorithm: HashAlgorithm) -> Result<Box<dyn HashContext>> {
        let backend = match algorithm {
            HashAlgorithm::Sha2256 => &SHA256,
            HashAlgorithm::Sha2384 => &SHA384,
            HashAlgorithm::Sha2512 => &SHA512,
            other => {
                return Err(Error::UnsupportedAlgorithm(format!(
                    "cannot compute {other} digests"
                )));
            }
        };
        Ok(Box::new(RingHash(Context::new(backend))))
    }

    fn verify_raw(
        &self,
        scheme: SigningScheme,
        spki_pubkey_bytes: &[u8],
        data: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        let algorithm = algorithm(scheme).ok_or_else(|| {
            Error::UnsupportedAlgorithm(format!("{} signatures are not checked", scheme.name()))
        })?;
        UnparsedPublicKey::new(algorithm, spki_pubkey_bytes)
            .verify(data, signature)
            .map_err(|_| Error::Verification(format!("{} signature invalid", scheme.name())))
    }

    fn verify_prehashed(
        &self,
        scheme: SigningScheme,
        _spki_pubkey_bytes: &[u8],
        _digest: &[u8],
        _signature: &[u8],
    ) -> Result<()> {
        Err(Error::UnsupportedAlgorithm(format!(
            "a {} signature over a digest alone is not checked (sign the image: cosign signs \
             its DSSE statement)",
            scheme.name()
        )))
    }
}
