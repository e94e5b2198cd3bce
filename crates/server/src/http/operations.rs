//! The operations endpoints, outside `/v2` and not registry traffic: `/healthz` (alive),
//! `/readyz` (content loaded, listening, not shutting down) and `/metrics` (Prometheus text),
//! on the main listener unless metrics have a listener of their own ([`metrics_app`]).

use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{App, HttpRequest, HttpResponse, web};

use super::routes::{self, Operation, Route};
use super::{ApiError, Ops};
use crate::metrics::{self, Metrics};

fn text(mut response: actix_web::HttpResponseBuilder, body: &'static str) -> HttpResponse {
    response
        .insert_header((header::CONTENT_TYPE, HeaderValue::from_static("text/plain")))
        .body(body)
}

/// The Prometheus scrape response.
fn metrics_response(metrics: &Metrics) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static(metrics::CONTENT_TYPE),
        ))
        .body(metrics.render())
}

/// `GET /healthz`, `/readyz`, `/metrics` on the main listener.
pub(super) fn answer(req: &HttpRequest, operation: Operation) -> Result<HttpResponse, ApiError> {
    let ops = Ops::of(req)?;
    Ok(match operation {
        Operation::Healthz => text(HttpResponse::Ok(), "ok\n"),
        Operation::Readyz if ops.is_ready() => text(HttpResponse::Ok(), "ready\n"),
        Operation::Readyz => text(HttpResponse::ServiceUnavailable(), "not ready\n"),
        Operation::Metrics if ops.serve_metrics => metrics_response(&ops.metrics),
        Operation::Metrics => return Err(ApiError::NoRoute(req.path().to_owned())),
    })
}

/// The application of a metrics listener of its own: `GET /metrics`, every other path a JSON
/// 404, routed by the same table as the main application.
pub fn metrics_app(metrics: Arc<Metrics>) -> application!() {
    App::new()
        .app_data(web::Data::from(metrics))
        .default_service(web::to(only_metrics))
}

async fn only_metrics(
    req: HttpRequest,
    metrics: web::Data<Metrics>,
) -> Result<HttpResponse, ApiError> {
    match routes::route(req.method(), req.path(), "").route {
        Ok(Route::Operation(Operation::Metrics)) => Ok(metrics_response(&metrics)),
        _ => Err(ApiError::NoRoute(req.path().to_owned())),
    }
}
