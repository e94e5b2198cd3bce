//! Why one signature of an image does not verify ([`SigReason`]): what each checker says of a
//! signature (`cosign` of a `.sig` layer, `bundle` of a Sigstore bundle, `cut` of an index cut
//! from upstream's), and what `image` joins into the line the user reads (several reasons: one
//! per signature, `; `-separated).
//!
//! A reason that comes from a library's error (a verifier's refusal, a parse) keeps that error
//! as its source; the line says it after what was being read.

use std::string::FromUtf8Error;

use chartreg_core::oci::Digest;
use sigstore_verify::{CertificateError, TimestampError, TransparencyLogError};

/// Why one signature of an image does not verify.
#[derive(Debug, thiserror::Error)]
pub enum SigReason {
    #[error("no signature")]
    Unsigned,
    #[error("signed with a key, and the policy names no keys (verify.images.keys)")]
    NoKeys,
    #[error(
        "the .sig signature verifies with none of verify.images.keys: signed by another key, or its payload was changed"
    )]
    NoKeyVerifies,
    #[error("signed by another key (hint {hint}), not one of verify.images.keys")]
    OtherKey { hint: String },
    /// The verifier's words for why the signature does not verify (its only detail).
    #[error("the signature does not verify{}: the signed content was changed ({detail})", key.as_ref().map(|k| format!(" with key {k}")).unwrap_or_default())]
    BadSignature { key: Option<String>, detail: String },
    #[error("digest mismatch: the signature is over {signed}")]
    OtherDigest { signed: String, key: Option<String> },
    #[error(
        "a keyless .sig signature (certificate annotation): keyless signatures are checked in the bundle form (cosign 3, or cosign sign --new-bundle-format)"
    )]
    KeylessSig,
    #[error(
        "signed keylessly (a certificate), and the policy names no keyless signers (verify.images.keyless)"
    )]
    NoKeyless,
    #[error("identity mismatch: the certificate names {got}, the policy wants {want}")]
    IdentityMismatch { got: String, want: String },
    #[error("issuer mismatch: the certificate names {got}, the policy wants {want}")]
    IssuerMismatch { got: String, want: String },
    #[error("certificate: {0}")]
    Certificate(#[source] CertificateError),
    #[error("transparency log: {0}")]
    TransparencyLog(#[source] TransparencyLogError),
    #[error(
        "transparency log: the bundle has no log entry (signed with --tlog-upload=false?): a key-signed bundle is checked with its entry"
    )]
    NoLogEntry,
    #[error(
        "transparency log: no log entry with an inclusion proof (signed with --tlog-upload=false?), and verify.images.trustedRoot asks for one"
    )]
    NoInclusionProof,
    #[error("timestamp: {0}")]
    Timestamp(#[source] TimestampError),
    #[error("malformed signature: the bundle is not UTF-8 JSON")]
    BundleNotUtf8(#[source] std::str::Utf8Error),
    #[error("malformed signature: not a Sigstore bundle: {0}")]
    NotBundle(#[source] sigstore_verify::types::Error),
    #[error("malformed signature: the bundle's statement is not in-toto: {0}")]
    NotInToto(#[source] serde_json::Error),
    /// The image's digest, which sigstore-verify takes as a SHA-256 hash, is not one.
    #[error("malformed signature: {image}: {source}")]
    ImageDigest {
        image: Box<Digest>,
        source: sigstore_verify::types::Error,
    },
    #[error("malformed signature: a .sig layer without its {annotation} annotation")]
    NoSignatureAnnotation { annotation: &'static str },
    #[error("malformed signature: the .sig signature is not base64: {0}")]
    SignatureNotBase64(#[source] sigstore_verify::types::Error),
    #[error("malformed signature: the signed .sig payload is not simple signing: {0}")]
    NotSimpleSigning(#[source] serde_json::Error),
    #[error(
        "malformed signature: the signed .sig payload's type is `{0}`, not a cosign container image signature"
    )]
    PayloadType(String),
    /// Any other refusal of the verifier, in its words.
    #[error(transparent)]
    Invalid(Box<sigstore_verify::Error>),
    #[error(
        "the index keeps platforms of upstream's {upstream}, which does not list {manifest} as it does"
    )]
    NotUpstreams {
        upstream: Box<Digest>,
        manifest: Box<Digest>,
    },
    #[error("the index or upstream's {upstream} is not an index: {source}")]
    NotIndex {
        upstream: Box<Digest>,
        source: serde_json::Error,
    },
    #[error("the index or upstream's {upstream} is not an index: {source}")]
    IndexNotUtf8 {
        upstream: Box<Digest>,
        source: FromUtf8Error,
    },
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<SigReason>),
}
