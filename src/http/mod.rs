//! The OCI distribution read API over a [`Registry`], with actix-web.
//!
//! How a request flows:
//! 1. Middleware sets `Docker-Distribution-API-Version` on every response, errors included;
//!    [`observe`] caps the request head, and once the body is sent logs one access line and
//!    records metrics.
//! 2. One default service ([`app`]) picks the endpoint from the path by hand ([`routes`]): no
//!    request walks a list of resource patterns. Only GET and HEAD reach handlers; other
//!    methods on `/v2/...` get 405 UNSUPPORTED with `Allow: GET, HEAD`; unknown paths get a
//!    JSON 404.
//! 3. A handler parses the repository name, tag or digest, pagination or Range into validated
//!    types first (bad input becomes an [`ApiError`] before any lookup), then looks up the
//!    registry (hash maps) and answers with the stored bytes and their precomputed digest
//!    (header values made from stored text are kept per worker thread, see `shared_value`).
//!    HEAD runs the same handler; actix sends the headers (Content-Length included) without
//!    the body.
//! 4. Every error is an [`ApiError`], turned into the spec's JSON envelope in one place.
//!
//! Digest-addressed answers (blobs, manifests by digest) never change: they are marked
//! immutable for a year. Answers by tag carry the manifest digest as ETag and are revalidated;
//! a matching `If-None-Match` gets 304.
//!
//! Outside `/v2`: `/healthz` (alive), `/readyz` (serving and not shutting down) and, unless
//! metrics have a listener of their own, `/metrics`.

mod body;
mod error;
mod observe;
mod pagination;
mod range;
mod routes;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{App, HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};

use crate::metrics::{BuildInfo, Metrics};
use chartreg_core::content::{Listing, Registry};
use chartreg_core::oci::layout::{Annotations, Descriptor};
use chartreg_core::oci::{Digest, Reference, RepositoryName, media_type};

pub use error::{ALLOWED_METHODS, ApiError, ErrorCode};
pub use observe::OPERATIONS_PATHS;
pub use pagination::Page;
pub use range::{RangeSpec, Selection};
pub use routes::{Route, classify};

/// `Docker-Distribution-API-Version`, on every answer (see `observe`).
pub const API_VERSION_HEADER: header::HeaderName =
    header::HeaderName::from_static("docker-distribution-api-version");
pub const API_VERSION: &str = "registry/2.0";
/// `Docker-Content-Digest`, as a header name made once.
pub const DIGEST: header::HeaderName = header::HeaderName::from_static("docker-content-digest");
/// `OCI-Filters-Applied`, sent when the referrers list was filtered.
pub const FILTERS_APPLIED: header::HeaderName =
    header::HeaderName::from_static("oci-filters-applied");

/// Cache-Control of digest-addressed answers.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Cache-Control of answers by tag: cache, but ask again before using.
pub const REVALIDATE: &str = "no-cache";
/// The default cap on the request head (request line and headers), in bytes.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 16 * 1024;

type Registered = web::Data<Registry>;

/// Server state beside the content: readiness, metrics, limits.
#[derive(Debug)]
pub struct Ops {
    ready: AtomicBool,
    pub metrics: Arc<Metrics>,
    pub max_header_bytes: usize,
    /// Whether `/metrics` is answered here (not when it has a listener of its own).
    pub serve_metrics: bool,
}

impl Ops {
    pub fn new(metrics: Arc<Metrics>, max_header_bytes: usize, serve_metrics: bool) -> Self {
        Ops {
            ready: AtomicBool::new(false),
            metrics,
            max_header_bytes,
            serve_metrics,
        }
    }

    /// Defaults for tests and embedders: ready, metrics for `registry`, the default header cap.
    pub fn for_registry(registry: &Registry) -> Self {
        let build = BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            revision: "unknown".to_owned(),
        };
        let ops = Ops::new(
            Arc::new(Metrics::new(registry.summary(), build)),
            DEFAULT_MAX_HEADER_BYTES,
            true,
        );
        ops.set_ready(true);
        ops
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}

/// [`app_with`] with default [`Ops`].
pub fn app(
    registry: Registered,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let ops = web::Data::new(Ops::for_registry(&registry));
    app_with(registry, ops)
}

/// The whole application: middleware and route table. Used by the server and by tests.
pub fn app_with(
    registry: Registered,
    ops: web::Data<Ops>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(registry)
        .app_data(ops)
        .wrap(observe::Observe)
        .default_service(web::to(api))
}

/// `GET /healthz`: the process is alive.
fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, HeaderValue::from_static("text/plain")))
        .body("ok\n")
}

/// `GET /readyz`: content loaded, listening, not shutting down.
fn readyz(ops: &Ops) -> HttpResponse {
    let (mut response, text) = if ops.is_ready() {
        (HttpResponse::Ok(), "ready\n")
    } else {
        (HttpResponse::ServiceUnavailable(), "not ready\n")
    };
    response
        .insert_header((header::CONTENT_TYPE, HeaderValue::from_static("text/plain")))
        .body(text)
}

/// The Prometheus scrape response.
pub fn metrics_response(metrics: &Metrics) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        ))
        .body(metrics.render())
}

/// Every request: the operations endpoints, then the registry API (see [`routes`]; matched by
/// hand, as one default service, so that no request walks a list of resource patterns).
/// Writes under `/v2` get 405; unknown paths get 404.
async fn api(req: HttpRequest, registry: Registered) -> Result<HttpResponse, ApiError> {
    let path = req.path();
    let read = matches!(*req.method(), Method::GET | Method::HEAD);
    if read && let Some(answer) = operations(&req) {
        return answer;
    }
    if !read && routes::is_api(path) {
        return Err(ApiError::MethodNotAllowed(req.method().to_string()));
    }
    let route = routes::classify(path).filter(|_| read);
    match route {
        None => Err(ApiError::NoRoute(path.to_owned())),
        Some(Route::Base) => Ok(base()),
        Some(Route::Catalog) => catalog(&req, &registry),
        Some(Route::Tags { name }) => tags_list(&req, &registry, name),
        Some(Route::Manifest { name, reference }) => manifest(&req, &registry, name, reference),
        Some(Route::Blob { name, digest }) => blob(&req, &registry, name, digest),
        Some(Route::Referrers { name, digest }) => referrers(&req, &registry, name, digest),
    }
}

/// `/healthz`, `/readyz` and (unless it has a listener of its own) `/metrics`.
fn operations(req: &HttpRequest) -> Option<Result<HttpResponse, ApiError>> {
    let path = req.path();
    if !OPERATIONS_PATHS.contains(&path) {
        return None;
    }
    let Some(ops) = req.app_data::<web::Data<Ops>>() else {
        return Some(Err(ApiError::Internal(
            "the application has no operations state",
        )));
    };
    Some(match path {
        "/healthz" => Ok(healthz()),
        "/readyz" => Ok(readyz(ops)),
        _ if ops.serve_metrics => Ok(metrics_response(&ops.metrics)),
        _ => Err(ApiError::NoRoute(path.to_owned())),
    })
}

/// A 200 with JSON made beforehand.
fn json_bytes(data: bytes::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ))
        .body(data)
}

fn json_response(
    status: StatusCode,
    content_type: &'static str,
    value: &impl Serialize,
) -> HttpResponse {
    // Serialising these plain data types cannot fail.
    let data = serde_json::to_vec(value).unwrap_or_default();
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, HeaderValue::from_static(content_type)))
        .body(data)
}

/// `GET /v2/`: the API is here, and needs no authentication.
fn base() -> HttpResponse {
    json_bytes(bytes::Bytes::from_static(b"{}"))
}

/// A page of `listing` as the query string asks (all of it without one), with a `Link` to the
/// next page when there is one. Pages are cut from JSON made at load time.
fn listing_page(req: &HttpRequest, listing: &Listing) -> Result<HttpResponse, ApiError> {
    let names = listing.names();
    if req.query_string().is_empty() {
        return Ok(json_bytes(listing.page(0..names.len())));
    }
    let page = Page::parse(req.query_string()).map_err(ApiError::Pagination)?;
    let (range, more) = page.apply(names);
    let link = match (
        more,
        page.n,
        range.end.checked_sub(1).and_then(|i| names.get(i)),
    ) {
        (true, Some(n), Some(last)) => Some(pagination::next_link(req.path(), n, last)),
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

/// `GET /v2/_catalog?n=&last=`
fn catalog(req: &HttpRequest, registry: &Registry) -> Result<HttpResponse, ApiError> {
    listing_page(req, registry.catalog())
}

/// `GET /v2/<name>/tags/list?n=&last=`
fn tags_list(req: &HttpRequest, registry: &Registry, name: &str) -> Result<HttpResponse, ApiError> {
    let name: RepositoryName = name.parse()?;
    listing_page(req, registry.repository(&name)?.tag_list())
}

/// `GET /v2/<name>/manifests/<tag or digest>`: the stored bytes, with the media type the
/// layout's descriptor gave.
fn manifest(
    req: &HttpRequest,
    registry: &Registry,
    name: &str,
    reference: &str,
) -> Result<HttpResponse, ApiError> {
    let name: RepositoryName = name.parse()?;
    let reference: Reference = reference.parse()?;
    let manifest = registry.repository(&name)?.manifest(&reference)?;
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

thread_local! {
    /// Header values made from stored text (digests, ETags, media types), kept per worker
    /// thread. The `http` crate checks every byte of a value it is given, about 500
    /// instructions for a digest (a twentieth of a small request); stored text never changes,
    /// so each is checked once per thread. Found by where the text is (hashing the text itself
    /// cost as much as checking it) and compared on every use, so a value can never stand for
    /// other text, even if a registry is dropped and another is built in its place. Bounded by
    /// the content: three texts per item.
    static STORED_VALUES: std::cell::RefCell<std::collections::HashMap<(usize, usize), HeaderValue, foldhash::fast::RandomState>> =
        std::cell::RefCell::default();
}

/// A header value sharing stored bytes (digests and media types are checked at load to be
/// ASCII; checked again here, once per text and thread, without copying).
fn shared_value(text: &bytes::Bytes) -> Result<HeaderValue, ApiError> {
    let at = (text.as_ptr() as usize, text.len());
    STORED_VALUES.with_borrow_mut(|values| {
        if let Some(value) = values.get(&at)
            && value.as_bytes() == &text[..]
        {
            return Ok(value.clone());
        }
        let value = HeaderValue::from_maybe_shared(text.clone())
            .map_err(|_| ApiError::Internal("a stored digest is not a valid header value"))?;
        values.insert(at, value.clone());
        Ok(value)
    })
}

/// Whether `If-None-Match` names `etag` (or is `*`), comparing weakly as RFC 9110 asks.
fn none_match(req: &HttpRequest, etag: &[u8]) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim())
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t).as_bytes() == etag)
}

/// `GET /v2/<name>/blobs/<digest>`, with single byte ranges.
fn blob(
    req: &HttpRequest,
    registry: &Registry,
    name: &str,
    digest: &str,
) -> Result<HttpResponse, ApiError> {
    let name: RepositoryName = name.parse()?;
    let digest: Digest = digest.parse()?;
    let blob = registry.repository(&name)?.blob(&digest)?;
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

fn with_blob_headers(
    builder: &mut actix_web::HttpResponseBuilder,
    blob: &chartreg_core::content::Blob,
) -> Result<(), ApiError> {
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

#[derive(Deserialize)]
struct ReferrersQuery {
    #[serde(rename = "artifactType")]
    artifact_type: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReferrersIndex<'a> {
    schema_version: u32,
    media_type: &'static str,
    manifests: Vec<&'a Descriptor>,
    #[serde(skip_serializing_if = "Annotations::is_empty")]
    annotations: Annotations,
}

/// `GET /v2/<name>/referrers/<digest>?artifactType=`: an image index of the manifests whose
/// subject is `<digest>` (empty when there are none).
fn referrers(
    req: &HttpRequest,
    registry: &Registry,
    name: &str,
    subject: &str,
) -> Result<HttpResponse, ApiError> {
    let name: RepositoryName = name.parse()?;
    let subject: Digest = subject.parse()?;
    let query: ReferrersQuery = serde_urlencoded::from_str(req.query_string())
        .map_err(|e| ApiError::Pagination(e.to_string()))?;
    let artifact_type = query.artifact_type.filter(|t| !t.is_empty());
    let repository = registry.repository(&name)?;
    let index = ReferrersIndex {
        schema_version: 2,
        media_type: media_type::OCI_INDEX,
        manifests: repository
            .referrers(&subject, artifact_type.as_deref())
            .collect(),
        annotations: Annotations::new(),
    };
    let mut response = json_response(StatusCode::OK, media_type::OCI_INDEX, &index);
    if artifact_type.is_some() {
        response
            .headers_mut()
            .insert(FILTERS_APPLIED, HeaderValue::from_static("artifactType"));
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_header_values_never_stand_for_other_text() {
        // Texts that take each other's place in memory (a registry dropped, another built) get
        // their own values.
        for round in 0..100 {
            let text = bytes::Bytes::from(format!("\"sha256:{round:064}\""));
            let value = shared_value(&text).unwrap();
            assert_eq!(value.as_bytes(), &text[..]);
            assert_eq!(shared_value(&text).unwrap(), value);
        }
        let bad = bytes::Bytes::from_static(b"line\nbreak");
        assert!(shared_value(&bad).is_err());
    }
}
