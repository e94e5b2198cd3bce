//! `GET /v2/<name>/manifests/<tag or digest>`: the stored bytes, with the media type the
//! layout's descriptor gave and the manifest digest as `Docker-Content-Digest` and ETag. By
//! digest the answer never changes (immutable for a year); by tag it is revalidated, and a
//! matching `If-None-Match` gets 304.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};

use super::headers::{none_match, shared_value};
use super::routes::Target;
use super::{ApiError, DIGEST, IMMUTABLE, REVALIDATE};
use chartreg_core::content::Registry;
use chartreg_core::oci::Reference;

pub(super) fn get(
    req: &HttpRequest,
    registry: &Registry,
    target: &Target,
    reference: &Reference,
) -> Result<HttpResponse, ApiError> {
    let manifest = registry
        .resolve(&target.name, target.namespace.as_ref())?
        .manifest(reference)?;
    let cache_control = match reference {
        Reference::Digest(_) => IMMUTABLE,
        Reference::Tag(_) => REVALIDATE,
    };
    let not_modified = none_match(req, &manifest.quoted_digest);
    let mut response = if not_modified {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response
        .insert_header((
            header::CONTENT_TYPE,
            shared_value(manifest.media_type.as_bytes())?,
        ))
        .insert_header((DIGEST, shared_value(&manifest.digest.to_bytes())?))
        .insert_header((header::ETAG, shared_value(&manifest.quoted_digest)?))
        .insert_header((
            header::CACHE_CONTROL,
            HeaderValue::from_static(cache_control),
        ));
    if not_modified {
        return Ok(response.finish());
    }
    Ok(response.body(manifest.data.clone()))
}
