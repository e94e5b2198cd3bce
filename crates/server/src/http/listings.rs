//! The lists: `GET /v2/` (an empty object: the API is here, and needs no authentication),
//! `GET /v2/_catalog?n=&last=` and `GET /v2/<name>/tags/list?n=&last=`. Pages are cut from the
//! JSON the content model made at load time, with a relative `Link` to the next page.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;

use super::ApiError;
use super::pagination::{self, PageQuery};
use super::routes::Target;
use chartreg_core::content::{Listing, Registry};
use chartreg_core::oci::Namespace;

/// A 200 with JSON made beforehand.
pub(super) fn json_bytes(data: Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ))
        .body(data)
}

/// `GET /v2/`
pub(super) fn base() -> HttpResponse {
    json_bytes(Bytes::from_static(b"{}"))
}

/// `GET /v2/_catalog?n=&last=`
pub(super) fn catalog(req: &HttpRequest, registry: &Registry) -> Result<HttpResponse, ApiError> {
    page(req, registry.catalog(), None)
}

/// `GET /v2/<name>/tags/list?n=&last=`
pub(super) fn tags(
    req: &HttpRequest,
    registry: &Registry,
    target: &Target,
) -> Result<HttpResponse, ApiError> {
    let repository = registry.resolve(&target.name, target.namespace.as_ref())?;
    page(req, repository.tag_list(), target.namespace.as_ref())
}

/// A page of `listing` as the query string asks (all of it without one), with a `Link` to the
/// next page when there is one (in the same `namespace`).
fn page(
    req: &HttpRequest,
    listing: &Listing,
    namespace: Option<&Namespace>,
) -> Result<HttpResponse, ApiError> {
    let names = listing.names();
    if req.query_string().is_empty() {
        return Ok(json_bytes(listing.page(0..names.len())));
    }
    let page = PageQuery::parse(req.query_string())?;
    let (range, more) = page.apply(names);
    let link = match (
        more,
        page.n,
        range.end.checked_sub(1).and_then(|i| names.get(i)),
    ) {
        (true, Some(n), Some(last)) => Some(pagination::next_link(req.path(), n, last, namespace)),
        _ => None,
    };
    let mut response = json_bytes(listing.page(range));
    if let Some(link) = link
        && let Ok(value) = HeaderValue::from_str(&link)
    {
        response.headers_mut().insert(header::LINK, value);
    }
    Ok(response)
}
