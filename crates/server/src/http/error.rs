//! The HTTP layer's one error type: every failure a request can meet, mapped once to a status
//! and an OCI error code, and serialised as the distribution spec's JSON envelope
//! `{"errors":[{"code":…,"message":…,"detail":…}]}`.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use std::sync::Arc;

use chartreg_core::oci::{DigestError, NameError, NamespaceError, ReferenceError};
use chartreg_core::{content, json};

use super::pagination::PageQueryError;
use crate::web::WebError;

/// Error codes of the OCI distribution spec, plus `PAGINATION_NUMBER_INVALID` and
/// `RANGE_INVALID` from CNCF distribution and chartreg's own `QUERY_INVALID` and
/// `REQUEST_HEADER_FIELDS_TOO_LARGE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// Blob unknown to registry.
    BlobUnknown,
    /// Provided digest did not match uploaded content (or is not a valid digest).
    DigestInvalid,
    /// Manifest unknown to registry.
    ManifestUnknown,
    /// Invalid repository name.
    NameInvalid,
    /// Repository name not known to registry.
    NameUnknown,
    /// The operation is unsupported.
    Unsupported,
    /// Invalid number of results requested (`n`).
    PaginationNumberInvalid,
    /// The requested range cannot be satisfied.
    RangeInvalid,
    /// A query string that cannot be read (the referrers API's `artifactType`).
    QueryInvalid,
    /// The request head is larger than this server accepts.
    RequestHeaderFieldsTooLarge,
    /// Something went wrong on the server.
    Unknown,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Content(#[from] content::Error),
    #[error("invalid repository name: {0}")]
    NameInvalid(#[from] NameError),
    #[error("invalid digest: {0}")]
    DigestInvalid(#[from] DigestError),
    /// A tag that cannot exist is an unknown manifest (the conformance suite expects 404).
    #[error("manifest unknown: {0}")]
    TagInvalid(chartreg_core::oci::TagError),
    #[error("invalid pagination: {0}")]
    Pagination(#[from] PageQueryError),
    #[error("invalid referrers query: {0}")]
    ReferrersQuery(serde_urlencoded::de::Error),
    #[error("invalid query: {0}")]
    NamespaceQuery(serde_urlencoded::de::Error),
    /// `?ns=` that names no registry host.
    #[error("invalid `ns`: {0}")]
    NamespaceInvalid(#[from] NamespaceError),
    #[error("range not satisfiable for a blob of {size} bytes")]
    RangeNotSatisfiable { size: u64 },
    #[error("this registry is read-only: {0} is not supported")]
    MethodNotAllowed(String),
    #[error("no such endpoint: {0}")]
    NoRoute(String),
    #[error("the request head is larger than the {0} bytes this server accepts")]
    HeadersTooLarge(usize),
    /// Cannot happen with content that loaded; answered 500 rather than a panic.
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// The pages could not be made from this content (said once, when they were made).
    #[error("the pages cannot be made: {0}")]
    Pages(Arc<WebError>),
    /// A referrers index that serde_json refused to write.
    #[error("cannot write the referrers index: {0}")]
    ReferrersIndex(serde_json::Error),
}

impl ErrorCode {
    /// The code as the envelope spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BlobUnknown => "BLOB_UNKNOWN",
            ErrorCode::DigestInvalid => "DIGEST_INVALID",
            ErrorCode::ManifestUnknown => "MANIFEST_UNKNOWN",
            ErrorCode::NameInvalid => "NAME_INVALID",
            ErrorCode::NameUnknown => "NAME_UNKNOWN",
            ErrorCode::Unsupported => "UNSUPPORTED",
            ErrorCode::PaginationNumberInvalid => "PAGINATION_NUMBER_INVALID",
            ErrorCode::RangeInvalid => "RANGE_INVALID",
            ErrorCode::QueryInvalid => "QUERY_INVALID",
            ErrorCode::RequestHeaderFieldsTooLarge => "REQUEST_HEADER_FIELDS_TOO_LARGE",
            ErrorCode::Unknown => "UNKNOWN",
        }
    }
}

impl From<ReferenceError> for ApiError {
    fn from(e: ReferenceError) -> Self {
        match e {
            ReferenceError::Tag(t) => ApiError::TagInvalid(t),
            ReferenceError::Digest(d) => ApiError::DigestInvalid(d),
        }
    }
}

impl ApiError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::Content(
                content::Error::NameUnknown(_)
                | content::Error::NamespaceUnknown { .. }
                | content::Error::Ambiguous { .. },
            ) => ErrorCode::NameUnknown,
            ApiError::Content(content::Error::ManifestUnknown { .. }) => ErrorCode::ManifestUnknown,
            ApiError::Content(content::Error::BlobUnknown { .. }) => ErrorCode::BlobUnknown,
            ApiError::NameInvalid(_) => ErrorCode::NameInvalid,
            ApiError::DigestInvalid(_) => ErrorCode::DigestInvalid,
            ApiError::TagInvalid(_) => ErrorCode::ManifestUnknown,
            ApiError::Pagination(_) => ErrorCode::PaginationNumberInvalid,
            ApiError::ReferrersQuery(_)
            | ApiError::NamespaceQuery(_)
            | ApiError::NamespaceInvalid(_) => ErrorCode::QueryInvalid,
            ApiError::RangeNotSatisfiable { .. } => ErrorCode::RangeInvalid,
            ApiError::MethodNotAllowed(_) | ApiError::NoRoute(_) => ErrorCode::Unsupported,
            ApiError::HeadersTooLarge(_) => ErrorCode::RequestHeaderFieldsTooLarge,
            ApiError::Internal(_) | ApiError::Pages(_) | ApiError::ReferrersIndex(_) => {
                ErrorCode::Unknown
            }
        }
    }
}

/// The distribution spec's error envelope of one error, as JSON:
/// `{"errors":[{"code":"<CODE>","message":"<message>"}]}`.
pub fn error_body(code: ErrorCode, message: &str) -> Vec<u8> {
    let mut body = String::with_capacity(message.len().saturating_add(64));
    body.push_str(r#"{"errors":[{"code":""#);
    body.push_str(code.as_str());
    body.push_str(r#"","message":"#);
    json::push_string(&mut body, message);
    body.push_str("}]}");
    body.into_bytes()
}

/// What `Allow` says on a 405.
pub const ALLOWED_METHODS: &str = "GET, HEAD";

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::Content(_) | ApiError::TagInvalid(_) | ApiError::NoRoute(_) => {
                StatusCode::NOT_FOUND
            }
            ApiError::NameInvalid(_)
            | ApiError::DigestInvalid(_)
            | ApiError::Pagination(_)
            | ApiError::ReferrersQuery(_)
            | ApiError::NamespaceQuery(_)
            | ApiError::NamespaceInvalid(_) => StatusCode::BAD_REQUEST,
            ApiError::RangeNotSatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ApiError::Internal(_) | ApiError::Pages(_) | ApiError::ReferrersIndex(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        response.insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
        match self {
            ApiError::MethodNotAllowed(_) => {
                response.insert_header((header::ALLOW, HeaderValue::from_static(ALLOWED_METHODS)));
            }
            ApiError::RangeNotSatisfiable { size } => {
                response.insert_header((header::CONTENT_RANGE, format!("bytes */{size}")));
            }
            _ => {}
        }
        response.body(error_body(self.code(), &self.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(ErrorCode::BlobUnknown, "blob `sha256:…` is not known")]
    #[case(ErrorCode::RequestHeaderFieldsTooLarge, "")]
    #[case(ErrorCode::Unsupported, "GET /v2/\"quoted\"\\path\n\u{1}")]
    #[case(ErrorCode::Unknown, "<script>&")]
    fn the_envelope_is_the_specs_json(#[case] code: ErrorCode, #[case] message: &str) {
        let body: serde_json::Value = serde_json::from_slice(&error_body(code, message)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"errors": [{"code": code.as_str(), "message": message}]})
        );
    }

    #[test]
    fn codes_are_screaming_snake_case_of_their_names() {
        for code in [
            ErrorCode::BlobUnknown,
            ErrorCode::DigestInvalid,
            ErrorCode::ManifestUnknown,
            ErrorCode::NameInvalid,
            ErrorCode::NameUnknown,
            ErrorCode::Unsupported,
            ErrorCode::PaginationNumberInvalid,
            ErrorCode::RangeInvalid,
            ErrorCode::QueryInvalid,
            ErrorCode::RequestHeaderFieldsTooLarge,
            ErrorCode::Unknown,
        ] {
            let name = format!("{code:?}");
            let mut snake = String::new();
            for (i, c) in name.char_indices() {
                if i > 0 && c.is_ascii_uppercase() {
                    snake.push('_');
                }
                snake.push(c.to_ascii_uppercase());
            }
            assert_eq!(code.as_str(), snake);
        }
    }
}
