//! Header values shared by the handlers: stored text as header values, and `If-None-Match`.

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderValue};
use bytes::Bytes;

use super::ApiError;

/// A header value sharing stored bytes (digests and media types are checked at load to be
/// ASCII; the `http` crate checks them again here, without copying).
pub(super) fn shared_value(text: &Bytes) -> Result<HeaderValue, ApiError> {
    HeaderValue::from_maybe_shared(text.clone())
        .map_err(|_| ApiError::Internal("a stored digest is not a valid header value"))
}

/// Whether `If-None-Match` names `etag` (or is `*`), comparing weakly as RFC 9110 asks.
pub(super) fn none_match(req: &HttpRequest, etag: &[u8]) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim())
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t).as_bytes() == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_that_is_no_header_value_is_an_error() {
        let text = Bytes::from_static(b"\"sha256:00\"");
        assert_eq!(shared_value(&text).unwrap().as_bytes(), &text[..]);
        let bad = Bytes::from_static(b"line\nbreak");
        assert!(shared_value(&bad).is_err());
    }
}
