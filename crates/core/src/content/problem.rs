//! Why content cannot be served: a [`LoadError`] names the file and says what is wrong with
//! it ([`Problem`]). Loading stops at the first one; nothing is served from such content.

use crate::oci::layout::{INDEX_FILE, LAYOUT_VERSION, OCI_LAYOUT_FILE, REF_NAME};
use crate::oci::{Digest, DigestError, NameError, TagError};

/// Indexes may nest; content addressing rules out cycles, this bounds the depth anyway.
pub(super) const MAX_NESTING: usize = 8;

/// Content that cannot be served, and the file it is in.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct LoadError {
    pub path: String,
    /// Boxed: an error is rare, and a small `Result` keeps the loader's happy path cheap.
    pub problem: Box<Problem>,
}

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error(
        "not part of any OCI image layout (no `{OCI_LAYOUT_FILE}` file in its folder or above)"
    )]
    OutsideLayout,
    #[error(
        "unexpected file in an OCI image layout (only `{OCI_LAYOUT_FILE}`, `{INDEX_FILE}` and `blobs/<algorithm>/<digest>` belong there)"
    )]
    UnexpectedFile,
    #[error("an image layout at the top of the content folder has no repository name")]
    UnnamedLayout,
    #[error("the layout's folder is not a valid repository name: {0}")]
    Name(NameError),
    #[error("missing: every image layout needs an `{INDEX_FILE}`")]
    MissingIndex,
    #[error("cannot be read: {0}")]
    Read(std::io::Error),
    #[error("invalid JSON: {0}")]
    Json(serde_json::Error),
    #[error("a descriptor's digest is invalid: {0}")]
    DescriptorDigest(DigestError),
    #[error("unsupported image layout version `{0}` (expected `{LAYOUT_VERSION}`)")]
    LayoutVersion(String),
    #[error("only sha256 content is supported, not `{0}`")]
    Algorithm(String),
    #[error("the file name is not a valid digest: {0}")]
    BlobName(String),
    #[error("content has digest {actual}, not the {expected} it is stored under")]
    DigestMismatch { expected: Digest, actual: Digest },
    #[error("referenced blob {0} is missing")]
    MissingBlob(Digest),
    #[error("{digest} is {actual} bytes, but its descriptor says {expected}")]
    Size {
        digest: Digest,
        expected: u64,
        actual: u64,
    },
    #[error("`{0}` is not a manifest media type (OCI or Docker image manifest or index)")]
    NotManifest(String),
    #[error("`{0}` is not a valid media type (RFC 6838 `type/subtype`)")]
    MediaType(String),
    #[error(
        "manifest {digest} says its mediaType is `{body}`, but its descriptor says `{descriptor}`"
    )]
    MediaTypeMismatch {
        digest: Digest,
        body: String,
        descriptor: String,
    },
    #[error("manifest {0}: schemaVersion must be 2")]
    SchemaVersion(Digest),
    #[error("manifest {digest}: {source}")]
    Manifest {
        digest: Digest,
        source: serde_json::Error,
    },
    #[error("invalid tag in `{REF_NAME}`: {0}")]
    Tag(TagError),
    #[error("tag `{tag}` names both {first} and {second}")]
    DuplicateTag {
        tag: String,
        first: Digest,
        second: Digest,
    },
    #[error("indexes nest deeper than {MAX_NESTING} levels")]
    TooDeep,
}

pub(super) fn fail<T>(path: impl Into<String>, problem: Problem) -> Result<T, LoadError> {
    Err(LoadError {
        path: path.into(),
        problem: Box::new(problem),
    })
}
