//! The Sigstore bundle form: a bundle (v0.3, as cosign 3 writes it) attached to the image as an
//! OCI referrer, checked with sigstore-verify (over ring: `provider`), all offline.
//!
//! A bundle is a signature of the image when it signs the image itself: a DSSE envelope of an
//! in-toto statement with cosign's signing predicate (`https://sigstore.dev/cosign/sign/v1`), or a
//! message signature. A statement of another predicate (an SBOM, a provenance) is an
//! attestation: kept, served, and not counted as a signature.
//!
//! What sigstore-verify checks, given the image's manifest digest as the artifact:
//! - key-signed (`publicKey.hint`): the DSSE signature with the policy key the hint names; the
//!   transparency-log entry (inclusion proof, checkpoint, inclusion promise) against
//!   `images.trustedRoot`'s logs when the policy gives one, else not (its consistency with the
//!   signature is still checked). A bundle without a log entry is refused: sigstore-verify
//!   checks none;
//! - keyless (a certificate): the certificate chain to the rule's trusted root's certificate
//!   authorities, valid at the log's verified time, with the code-signing use; its embedded
//!   certificate-transparency timestamp with the root's CT log keys; the log entry with the
//!   root's log keys; the DSSE signature with the certificate's key; the issuer (exact). The
//!   identity is then matched here against the rule's pattern (`*` any run).
//! - both: the statement's subject is the image's digest.
//!
//! Not checked: revocation (there is no online CRL/OCSP here), and the root's freshness (the
//! team keeps the trusted root file up to date).

use chartreg_core::oci::Digest;
use serde::Deserialize;
use sigstore_verify::types::{
    Artifact, ArtifactDigest, Bundle, Sha256Hash, SignatureContent,
    bundle::VerificationMaterialContent,
};
use sigstore_verify::{Error, PublicKeyVerificationPolicy, VerificationPolicy};

use chartreg_core::content::{Evidence, Form};

use crate::patterns;
use crate::policy::ImagePolicy;
use crate::reason::SigReason;

/// The in-toto predicate cosign signs an image with.
pub const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

#[derive(Deserialize)]
struct Statement {
    #[serde(rename = "predicateType", default)]
    predicate_type: String,
    #[serde(default)]
    subject: Vec<Subject>,
}

#[derive(Deserialize)]
struct Subject {
    #[serde(default)]
    digest: std::collections::BTreeMap<String, String>,
}

/// Checks the bundle `json` attached to `image`: `Ok(None)` when it is an attestation, not a
/// signature; else who signed it, or why it does not verify.
pub fn check_bundle(
    policy: &ImagePolicy,
    image: &Digest,
    json: &[u8],
) -> Result<Option<Evidence>, SigReason> {
    let text = std::str::from_utf8(json).map_err(SigReason::BundleNotUtf8)?;
    let bundle = Bundle::from_json(text).map_err(SigReason::NotBundle)?;
    let subjects = match &bundle.content {
        SignatureContent::DsseEnvelope(envelope) => {
            let statement: Statement = serde_json::from_slice(envelope.payload.as_bytes())
                .map_err(SigReason::NotInToto)?;
            if statement.predicate_type != SIGN_PREDICATE {
                return Ok(None);
            }
            statement
                .subject
                .iter()
                .filter_map(|s| s.digest.get("sha256").map(|h| format!("sha256:{h}")))
                .collect::<Vec<_>>()
        }
        // A message signature (or a content this version does not know) names no subject.
        _ => Vec::new(),
    };
    let hash = Sha256Hash::from_hex(image.encoded()).map_err(|source| SigReason::ImageDigest {
        image: Box::new(image.clone()),
        source,
    })?;
    let artifact = || Artifact::Digest(ArtifactDigest::from(hash));
    crate::provider::install();
    let mismatch = |e: Error, key: Option<String>| match e {
        Error::ArtifactMismatch(_) => SigReason::OtherDigest {
            signed: if subjects.is_empty() {
                "another digest".to_owned()
            } else {
                subjects.join(", ")
            },
            key,
        },
        other => reason(other, key),
    };
    match &bundle.verification_material.content {
        VerificationMaterialContent::PublicKey(id) => {
            let Some(key) = policy.keys.iter().find(|k| k.is_hinted(&id.hint)) else {
                return Err(if policy.keys.is_empty() {
                    SigReason::NoKeys
                } else {
                    SigReason::OtherKey {
                        hint: id.hint.clone(),
                    }
                });
            };
            if bundle.verification_material.tlog_entries.is_empty() {
                return Err(SigReason::NoLogEntry);
            }
            if policy.key_root.is_some() && !bundle.has_inclusion_proof() {
                return Err(SigReason::NoInclusionProof);
            }
            let check = PublicKeyVerificationPolicy::new(key.der.clone());
            let (verifier, check) = match &policy.key_root {
                Some(root) => (root.as_ref(), check),
                None => (policy.no_root.as_ref(), check.skip_tlog_unsafe()),
            };
            verifier
                .verify(artifact(), &bundle, &check)
                .map_err(|e| mismatch(e, Some(key.fingerprint.clone())))?;
            Ok(Some(Evidence::Key {
                key: key.fingerprint.clone(),
                subkey: None,
                form: Form::Bundle,
            }))
        }
        _ => {
            if policy.keyless.is_empty() {
                return Err(SigReason::NoKeyless);
            }
            let mut reasons = Vec::new();
            for rule in &policy.keyless {
                let check = VerificationPolicy::any_identity().require_issuer(rule.issuer.clone());
                match rule.verifier.verify(artifact(), &bundle, &check) {
                    Ok(result) => {
                        let identity = result
                            .identity()
                            .map(|i| i.as_str().to_owned())
                            .unwrap_or_default();
                        if patterns::matches(&rule.identity, &identity) {
                            return Ok(Some(Evidence::Identity {
                                identity,
                                issuer: rule.issuer.clone(),
                                form: Form::Bundle,
                            }));
                        }
                        reasons.push(SigReason::IdentityMismatch {
                            got: identity,
                            want: rule.identity.clone(),
                        });
                    }
                    Err(e) => reasons.push(mismatch(e, None)),
                }
            }
            Err(match reasons.len() {
                1 => reasons.remove(0),
                _ => SigReason::Several(reasons),
            })
        }
    }
}

/// A verifier's refusal, as the line says it.
fn reason(e: Error, key: Option<String>) -> SigReason {
    match e {
        Error::IssuerMismatch { expected, actual } => SigReason::IssuerMismatch {
            got: actual.unwrap_or_else(|| "none".into()),
            want: expected,
        },
        Error::SignatureInvalid(detail) => SigReason::BadSignature { key, detail },
        Error::Certificate(e) => SigReason::Certificate(e),
        Error::TransparencyLog(e) => SigReason::TransparencyLog(e),
        Error::Timestamp(e) => SigReason::Timestamp(e),
        other => SigReason::Invalid(Box::new(other)),
    }
}
