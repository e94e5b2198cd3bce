//! The OCI distribution read API over a [`Registry`], with actix-web.
//!
//! How a request flows:
//! 1. The middleware ([`observe`]) caps the request head, parses the route once ([`routes`]:
//!    repository name, tag or digest validated; the endpoint metrics count it under), and hands
//!    the route to the handler through the request. On every response, errors included, it
//!    sets `Docker-Distribution-API-Version`; once the body is sent it logs one access line and
//!    records metrics.
//! 2. One default service ([`app`]) takes the route and calls the handler of its family:
//!    [`manifests`], [`blobs`], [`listings`] (base, catalog, tags), [`referrers`] and
//!    [`operations`] (health, readiness, metrics). No request walks a list of resource
//!    patterns. Only GET and HEAD reach handlers; other methods on `/v2/...` get 405
//!    UNSUPPORTED with `Allow: GET, HEAD`; unknown paths get a JSON 404.
//! 3. A handler parses what is its own (pagination, Range, the referrers query) into validated
//!    types, looks up the registry (hash maps) and answers with the stored bytes and their
//!    precomputed digest. HEAD runs the same handler; actix sends the headers (Content-Length
//!    included) without the body.
//! 4. Every error is an [`ApiError`], turned into the spec's JSON envelope in one place.
//!
//! Digest-addressed answers (blobs, manifests by digest) never change: they are marked
//! immutable for a year. Answers by tag carry the manifest digest as ETag and are revalidated;
//! a matching `If-None-Match` gets 304.
//!
//! Outside `/v2`: `/healthz` (alive), `/readyz` (serving and not shutting down) and, unless
//! metrics have a listener of their own, `/metrics`; the pages for people (`/`, `/ui/...`)
//! and the classic Helm repository (`/<prefix>/index.yaml`), in [`pages`].

// Requests and content reach this module: no arithmetic that can overflow or divide by zero
// (checked, saturating or widened instead), outside tests.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

/// The type of an application this module makes: actix-web's `App` over a service factory
/// whose type only the compiler can name (the main application and the metrics listener's).
macro_rules! application {
    () => {
        actix_web::App<
            impl actix_web::dev::ServiceFactory<
                actix_web::dev::ServiceRequest,
                Config = (),
                Response = actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>,
                Error = actix_web::Error,
                InitError = (),
            >,
        >
    };
}

mod blobs;
mod body;
mod error;
mod headers;
mod listings;
mod manifests;
mod observe;
mod operations;
mod pages;
mod pagination;
mod range;
mod referrers;
mod routes;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::http::header;
use actix_web::{App, HttpRequest, HttpResponse, web};

use crate::metrics::{BuildInfo, Metrics};
use chartreg_core::content::Registry;

pub use error::{ALLOWED_METHODS, ApiError, ErrorCode, error_body};
pub use operations::metrics_app;
pub use pagination::PageQuery;
pub use range::{RangeSpec, Selection};
pub use routes::{Endpoint, LABELS, Operation, Route, Routed, Target, WebRoute, route};

/// `Docker-Distribution-API-Version`, on every answer (see `observe`).
pub const API_VERSION_HEADER: header::HeaderName =
    header::HeaderName::from_static("docker-distribution-api-version");
pub const API_VERSION: &str = "registry/2.0";
/// `Docker-Content-Digest`, as a header name made once.
pub const DIGEST: header::HeaderName = header::HeaderName::from_static("docker-content-digest");
/// `OCI-Namespace`: the upstream registry (`?ns=`) a request was answered for.
pub const NAMESPACE: header::HeaderName = header::HeaderName::from_static("oci-namespace");
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

/// What a request knows of the listener its connection came through, as connection data
/// (`HttpRequest::conn_data`; the listener sets it).
#[derive(Debug, Clone, Copy)]
pub struct Listening {
    /// Whether the connection came through chartreg's own TLS.
    pub secure: bool,
    /// The address the server listens on.
    pub address: std::net::SocketAddr,
}

/// Server state beside the content: readiness, metrics, limits.
#[derive(Debug)]
pub struct Ops {
    ready: AtomicBool,
    pub metrics: Arc<Metrics>,
    pub max_header_bytes: usize,
    /// Whether `/metrics` is answered here (not when it has a listener of its own).
    pub serve_metrics: bool,
    /// The pages and the classic repository, made on the first request for them.
    pub web: crate::web::Lazy,
}

impl Ops {
    pub fn new(metrics: Arc<Metrics>, max_header_bytes: usize, serve_metrics: bool) -> Self {
        Ops {
            ready: AtomicBool::new(false),
            metrics,
            max_header_bytes,
            serve_metrics,
            web: crate::web::Lazy::default(),
        }
    }

    /// Defaults for tests and embedders: ready, metrics for `registry`, the default header cap.
    pub fn for_registry(registry: &Registry) -> Self {
        let ops = Ops::new(
            Arc::new(Metrics::new(
                &LABELS,
                registry.summary(),
                BuildInfo::of_this_build(),
            )),
            DEFAULT_MAX_HEADER_BYTES,
            true,
        );
        ops.set_ready(true);
        ops
    }

    /// The state of the application serving `req`.
    pub(crate) fn of(req: &HttpRequest) -> Result<&web::Data<Ops>, ApiError> {
        req.app_data::<web::Data<Ops>>().ok_or(ApiError::Internal(
            "the application has no operations state",
        ))
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}

/// [`app_with`] with default [`Ops`].
pub fn app(registry: Registered) -> application!() {
    let ops = web::Data::new(Ops::for_registry(&registry));
    app_with(registry, ops)
}

/// The whole application: middleware and route table. Used by the server and by tests.
pub fn app_with(registry: Registered, ops: web::Data<Ops>) -> application!() {
    App::new()
        .app_data(registry)
        .app_data(ops)
        .wrap(observe::Observe)
        .default_service(web::to(api))
}

/// Every request: the route the middleware parsed, answered by its family's handler. An
/// answer to a request scoped by `?ns=` says so in `OCI-Namespace`, errors included.
async fn api(req: HttpRequest, registry: Registered) -> Result<HttpResponse, ApiError> {
    let answer = |route| match route {
        Route::Base => Ok(listings::base()),
        Route::Catalog => listings::catalog(&req, &registry),
        Route::Tags(target) => listings::tags(&req, &registry, &target),
        Route::Manifest(target, reference) => manifests::get(&req, &registry, &target, &reference),
        Route::Blob(target, digest) => blobs::get(&req, &registry, &target, &digest),
        Route::Referrers(target, subject) => referrers::get(&req, &registry, &target, &subject),
        Route::Operation(operation) => operations::answer(&req, operation),
        Route::Web(route) => pages::get(&req, &registry, &route),
    };
    let (namespace, answered) = match routes::take(&req) {
        Ok(route) => match route.namespace().cloned() {
            None => return answer(route),
            Some(namespace) => (namespace, answer(route)),
        },
        // A name, tag or digest that did not parse, in a request that named a registry.
        Err(e) => match routes::asked_namespace(req.path(), req.query_string()) {
            None => return Err(e),
            Some(namespace) => (namespace, Err(e)),
        },
    };
    let mut response = answered.unwrap_or_else(HttpResponse::from_error);
    if let Ok(value) = header::HeaderValue::from_str(namespace.as_str()) {
        response.headers_mut().insert(NAMESPACE, value);
    }
    Ok(response)
}
