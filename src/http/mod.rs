//! The OCI distribution read API over a [`Registry`], with actix-web.
//!
//! How a request flows:
//! 1. Middleware logs one access line and sets `Docker-Distribution-API-Version` on every
//!    response, errors included.
//! 2. The route table ([`app`]) picks an endpoint by path; only GET and HEAD reach handlers.
//!    Other methods on `/v2/...` get 405 UNSUPPORTED with `Allow: GET, HEAD`; unknown paths
//!    get a JSON 404.
//! 3. A handler parses the repository name, tag or digest, pagination or Range into validated
//!    types first (bad input becomes an [`ApiError`] before any lookup), then looks up the
//!    registry (hash maps) and answers with the stored bytes and their precomputed digest.
//!    HEAD runs the same handler; actix sends the headers (Content-Length included) without
//!    the body.
//! 4. Every error is an [`ApiError`], turned into the spec's JSON envelope in one place.

mod body;
mod error;
mod pagination;
mod range;

use std::io;
use std::net::TcpListener;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::{DefaultHeaders, Logger};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, Resource, web};
use serde::{Deserialize, Serialize};

use crate::content::Registry;
use crate::oci::layout::{Annotations, Descriptor};
use crate::oci::{Digest, Reference, RepositoryName, media_type};

pub use error::{ALLOWED_METHODS, ApiError, ErrorCode};
pub use pagination::Page;
pub use range::{RangeSpec, Selection};

pub const API_VERSION_HEADER: &str = "Docker-Distribution-API-Version";
pub const API_VERSION: &str = "registry/2.0";
pub const DIGEST_HEADER: &str = "Docker-Content-Digest";
pub const FILTERS_HEADER: &str = "OCI-Filters-Applied";

/// The access log line: request line, status, body bytes, duration.
const ACCESS_LOG_FORMAT: &str = "%a \"%r\" %s %b %Dms";

type Registered = web::Data<Registry>;

/// The whole application: middleware and route table. Used by [`serve`] and by tests.
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
    App::new()
        .app_data(registry)
        .wrap(DefaultHeaders::new().add((API_VERSION_HEADER, API_VERSION)))
        .wrap(Logger::new(ACCESS_LOG_FORMAT))
        .service(
            web::scope("/v2")
                .service(endpoint("", base))
                .service(endpoint("/", base))
                .service(endpoint("/_catalog", catalog))
                .service(endpoint("/{name:.+}/tags/list", tags_list))
                .service(endpoint("/{name:.+}/manifests/{reference}", manifest))
                .service(endpoint("/{name:.+}/blobs/{digest}", blob))
                .service(endpoint("/{name:.+}/referrers/{digest}", referrers))
                .default_service(web::to(unmatched)),
        )
        .default_service(web::to(unmatched))
}

/// Serves `registry` on `listener` until the server stops.
pub async fn serve(listener: TcpListener, registry: Registered) -> io::Result<()> {
    HttpServer::new(move || app(registry.clone()))
        .listen(listener)?
        .run()
        .await
}

/// A resource answering GET and HEAD with `handler`, and 405 to every other method.
fn endpoint<F, Args>(path: &str, handler: F) -> Resource
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::get().to(handler.clone()))
        .route(web::head().to(handler))
        .default_service(web::to(unmatched))
}

/// Whatever no endpoint answered: a write on `/v2` (405) or an unknown path (404).
async fn unmatched(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let path = req.path();
    Err(
        if matches!(*req.method(), Method::GET | Method::HEAD) || !path.starts_with("/v2") {
            ApiError::NoRoute(path.to_owned())
        } else {
            ApiError::MethodNotAllowed(req.method().to_string())
        },
    )
}

fn name_of(req: &HttpRequest) -> Result<RepositoryName, ApiError> {
    Ok(req.match_info().query("name").parse()?)
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
async fn base() -> HttpResponse {
    json_response(StatusCode::OK, "application/json", &serde_json::json!({}))
}

/// Applies `page` to `items`, adding a `Link` to the next page when there is one.
fn paged<'a>(
    req: &HttpRequest,
    items: &'a [String],
) -> Result<(&'a [String], Option<String>), ApiError> {
    let page = Page::parse(req.query_string()).map_err(ApiError::Pagination)?;
    let (items, more) = page.apply(items);
    let link = match (more, page.n, items.last()) {
        (true, Some(n), Some(last)) => Some(pagination::next_link(req.path(), n, last)),
        _ => None,
    };
    Ok((items, link))
}

fn with_link(mut response: HttpResponse, link: Option<String>) -> HttpResponse {
    if let Some(link) = link
        && let Ok(value) = HeaderValue::from_str(&link)
    {
        response.headers_mut().insert(header::LINK, value);
    }
    response
}

#[derive(Serialize)]
struct Catalog<'a> {
    repositories: &'a [String],
}

/// `GET /v2/_catalog?n=&last=`
async fn catalog(req: HttpRequest, registry: Registered) -> Result<HttpResponse, ApiError> {
    let (repositories, link) = paged(&req, registry.catalog())?;
    let response = json_response(
        StatusCode::OK,
        "application/json",
        &Catalog { repositories },
    );
    Ok(with_link(response, link))
}

#[derive(Serialize)]
struct TagList<'a> {
    name: &'a str,
    tags: &'a [String],
}

/// `GET /v2/<name>/tags/list?n=&last=`
async fn tags_list(req: HttpRequest, registry: Registered) -> Result<HttpResponse, ApiError> {
    let name = name_of(&req)?;
    let repository = registry.repository(&name)?;
    let (tags, link) = paged(&req, repository.tags())?;
    let body = TagList {
        name: repository.name(),
        tags,
    };
    Ok(with_link(
        json_response(StatusCode::OK, "application/json", &body),
        link,
    ))
}

/// `GET /v2/<name>/manifests/<tag or digest>`: the stored bytes, with the media type the
/// layout's descriptor gave.
async fn manifest(req: HttpRequest, registry: Registered) -> Result<HttpResponse, ApiError> {
    let name = name_of(&req)?;
    let reference: Reference = req.match_info().query("reference").parse()?;
    let manifest = registry.repository(&name)?.manifest(&reference)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, manifest.media_type.as_str()))
        .insert_header((DIGEST_HEADER, manifest.digest.as_str()))
        .body(manifest.data.clone()))
}

/// `GET /v2/<name>/blobs/<digest>`, with single byte ranges.
async fn blob(req: HttpRequest, registry: Registered) -> Result<HttpResponse, ApiError> {
    let name = name_of(&req)?;
    let digest: Digest = req.match_info().query("digest").parse()?;
    let blob = registry.repository(&name)?.blob(&digest)?;
    let size = blob.data.len() as u64;
    let range = req
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok());
    Ok(match range::select(range, size) {
        Selection::Full => blob_response(HttpResponse::Ok(), &digest, blob.data.clone()),
        Selection::Unsatisfiable => return Err(ApiError::RangeNotSatisfiable { size }),
        Selection::Partial { start, end } => {
            let mut partial = HttpResponse::PartialContent();
            partial.insert_header((header::CONTENT_RANGE, format!("bytes {start}-{end}/{size}")));
            let data = blob.data.slice(start as usize..=end as usize);
            blob_response(partial, &digest, data)
        }
    })
}

fn blob_response(
    mut builder: actix_web::HttpResponseBuilder,
    digest: &Digest,
    data: bytes::Bytes,
) -> HttpResponse {
    builder
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        ))
        .insert_header((DIGEST_HEADER, digest.as_str()))
        .insert_header((header::ACCEPT_RANGES, HeaderValue::from_static("bytes")))
        .body(body::from_bytes(data))
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
async fn referrers(req: HttpRequest, registry: Registered) -> Result<HttpResponse, ApiError> {
    let name = name_of(&req)?;
    let subject: Digest = req.match_info().query("digest").parse()?;
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
        response.headers_mut().insert(
            header::HeaderName::from_static("oci-filters-applied"),
            HeaderValue::from_static("artifactType"),
        );
    }
    Ok(response)
}
