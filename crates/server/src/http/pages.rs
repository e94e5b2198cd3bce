//! The pages for people (`/`, `/ui/<repository>`, `/ui/style.css`), the SBOM
//! (`/sbom.spdx.json`, `/sbom.cdx.json`) and the classic Helm
//! repository (`/<prefix>/index.yaml` and its packages), answered from what `web` made on the
//! first request (kept in [`Ops`]).
//!
//! Pages are HTML unless the request asks for JSON (`Accept: application/json` without
//! `text/html`), so they carry `Vary: Accept`; the host the command text shows is the one the
//! request used (escaped: it is never trusted into anything but text), and the commands take
//! the flags the connection calls for (`--plain-http`, or over chartreg's own TLS the CA
//! file; see `web::page`). A strict
//! Content-Security-Policy allows nothing but the stylesheet from here: no scripts, frames,
//! forms or anything fetched from elsewhere.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};

use super::headers::none_match;
use super::routes::WebRoute;
use super::{ApiError, Listening, Ops, REVALIDATE};
use crate::web::{Origin, Page, STYLE};
use chartreg_core::content::Registry;

const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; \
                   form-action 'none'; frame-ancestors 'none'";

pub(super) fn get(
    req: &HttpRequest,
    registry: &Registry,
    route: &WebRoute,
) -> Result<HttpResponse, ApiError> {
    let ops = Ops::of(req)?;
    let web = ops.web.get(registry).map_err(ApiError::Pages)?;
    match route {
        WebRoute::Home => Ok(page(req, &web.overview)),
        WebRoute::Repository(name) => {
            registry.repository(name)?;
            let page_of = web
                .repository(name.as_str())
                .ok_or_else(|| ApiError::NoRoute(req.path().to_owned()))?;
            Ok(page(req, page_of))
        }
        WebRoute::Style => Ok(HttpResponse::Ok()
            .insert_header((header::CONTENT_TYPE, "text/css; charset=utf-8"))
            .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .body(STYLE)),
        WebRoute::Sbom(format) => Ok(HttpResponse::Ok()
            .insert_header((header::CONTENT_TYPE, format.media_type()))
            .insert_header((header::CACHE_CONTROL, REVALIDATE))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .body(match format {
                crate::web::sbom::Format::Spdx => web.sbom.clone(),
                crate::web::sbom::Format::CycloneDx => web.cyclonedx.clone(),
            })),
        WebRoute::Classic(path) => {
            let file = web
                .classic
                .file(path)
                .ok_or_else(|| ApiError::NoRoute(req.path().to_owned()))?;
            let not_modified = none_match(req, file.etag.as_bytes());
            let mut response = if not_modified {
                HttpResponse::NotModified()
            } else {
                HttpResponse::Ok()
            };
            response
                .insert_header((header::CONTENT_TYPE, file.content_type))
                .insert_header((header::CACHE_CONTROL, REVALIDATE))
                .insert_header((header::ETAG, file.etag.as_str()));
            if not_modified {
                return Ok(response.finish());
            }
            Ok(response.body(file.data.clone()))
        }
    }
}

/// Whether the request asks for JSON rather than HTML.
fn wants_json(req: &HttpRequest) -> bool {
    let accept = req
        .headers()
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    accept.contains("application/json") && !accept.contains("text/html")
}

fn page(req: &HttpRequest, page: &Page) -> HttpResponse {
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::VARY, HeaderValue::from_static("Accept")))
        .insert_header((header::CACHE_CONTROL, REVALIDATE))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if wants_json(req) {
        return response
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .body(page.json.clone());
    }
    let info = req.connection_info();
    // What the listener says of the connection (not a header): whether it came through
    // chartreg's own TLS, and the address to name when the request names no host (HTTP/1.0).
    let listening = req.conn_data::<Listening>();
    let tls = listening.is_some_and(|l| l.secure);
    let named = req.uri().authority().is_some()
        || [
            header::HOST,
            header::FORWARDED,
            header::HeaderName::from_static("x-forwarded-host"),
        ]
        .iter()
        .any(|name| req.headers().contains_key(name));
    let fallback = listening.filter(|_| !named).map(|l| l.address.to_string());
    let origin = Origin {
        host: fallback.as_deref().unwrap_or_else(|| info.host()),
        https: tls || info.scheme() == "https",
        tls,
    };
    response
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .body(page.html.join(&origin))
}
