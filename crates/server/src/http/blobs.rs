//! `GET /v2/<name>/blobs/<digest>`: a blob some manifest of the repository references, whole
//! or as a single byte range (`If-Range` honoured), in slices for large ones (see `body`).
//! Blobs never change: immutable for a year, with the digest as ETag.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};

use super::headers::{none_match, shared_value};
use super::range::{self, Selection};
use super::routes::Target;
use super::{ApiError, DIGEST, IMMUTABLE, body};
use chartreg_core::content::{Blob, Registry};
use chartreg_core::oci::Digest;

pub(super) fn get(
    req: &HttpRequest,
    registry: &Registry,
    target: &Target,
    digest: &Digest,
) -> Result<HttpResponse, ApiError> {
    let blob = registry
        .resolve(&target.name, target.namespace.as_ref())?
        .blob(digest)?;
    let size = blob.data.len() as u64;
    let etag = &blob.quoted_digest;
    if none_match(req, etag) {
        let mut response = HttpResponse::NotModified();
        with_blob_headers(&mut response, blob)?;
        return Ok(response.finish());
    }
    // A range applies only to the representation the client already has part of.
    let if_range = req
        .headers()
        .get(header::IF_RANGE)
        .and_then(|v| v.to_str().ok());
    let range = req
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .filter(|_| if_range.is_none_or(|validator| validator.trim().as_bytes() == &etag[..]));
    let (mut response, data) = match range::select(range, size) {
        Selection::Full => (HttpResponse::Ok(), blob.data.clone()),
        Selection::Unsatisfiable => return Err(ApiError::RangeNotSatisfiable { size }),
        Selection::Partial { start, end } => {
            let mut partial = HttpResponse::PartialContent();
            partial.insert_header((header::CONTENT_RANGE, format!("bytes {start}-{end}/{size}")));
            (partial, blob.data.slice(start as usize..=end as usize))
        }
    };
    with_blob_headers(&mut response, blob)?;
    Ok(response.body(body::from_bytes(data)))
}

fn with_blob_headers(builder: &mut HttpResponseBuilder, blob: &Blob) -> Result<(), ApiError> {
    builder
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        ))
        .insert_header((DIGEST, shared_value(&blob.digest.to_bytes())?))
        .insert_header((header::ACCEPT_RANGES, HeaderValue::from_static("bytes")))
        .insert_header((header::ETAG, shared_value(&blob.quoted_digest)?))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE)));
    Ok(())
}
