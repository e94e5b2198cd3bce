//! What happens around every request: the header-size cap, the API version header, one access
//! log line, and metrics.
//!
//! 1. A request head larger than the cap is answered 431 before routing.
//! 2. The request runs; its route is the name of the resource that matched.
//! 3. The response body is wrapped so that when it has been sent (or the client went away) the
//!    bytes actually sent and the whole duration are known: then the access line is logged
//!    and the metrics recorded. Nothing is logged or counted for `/healthz`, `/readyz` and
//!    `/metrics`.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use actix_web::body::{BodySize, BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderValue;
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{Error, HttpRequest, web};

use super::{ApiError, Ops};
use crate::logging;
use crate::metrics::{Metrics, route_index};

/// Paths that are not registry traffic.
pub const OPERATIONS_PATHS: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// The size of a request head as it came in: request line and header lines.
fn head_bytes(req: &ServiceRequest) -> usize {
    let head = req.head();
    let target = head.uri.path_and_query().map_or(1, |pq| pq.as_str().len());
    let line = head.method.as_str().len() + target + 12;
    let headers: usize = head
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    line + headers + 2
}

/// Everything the access line and the metrics need once the body is done.
struct Record {
    metrics: Arc<Metrics>,
    route: usize,
    /// The request (a reference-counted handle): method, path and peer without copies.
    request: HttpRequest,
    status: u16,
    started: Instant,
}

impl Record {
    fn finish(self, bytes: u64) {
        let took = self.started.elapsed();
        let method = self.request.method().as_str();
        self.metrics
            .record(self.route, method, self.status, bytes, took);
        logging::access(&logging::Access {
            method,
            path: self.request.path(),
            status: self.status,
            bytes,
            duration_ms: took.as_secs_f64() * 1000.0,
            peer: self.request.peer_addr().map(|a| a.ip()),
        });
    }
}

/// A response body that counts what it sends and reports when it is dropped.
pub struct Observed {
    body: BoxBody,
    sent: u64,
    record: Option<Record>,
}

impl MessageBody for Observed {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_next(cx);
        if let Poll::Ready(Some(Ok(chunk))) = &polled {
            self.sent += chunk.len() as u64;
        }
        polled
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            record.finish(self.sent);
        }
    }
}

/// Every answer says which API it speaks (`Docker-Distribution-API-Version: registry/2.0`).
fn with_api_version<B>(mut response: ServiceResponse<B>) -> ServiceResponse<B> {
    response.headers_mut().insert(
        super::API_VERSION_HEADER,
        HeaderValue::from_static(super::API_VERSION),
    );
    response
}

/// The middleware (see the module doc).
pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<Observed, BoxBody>>, Error> {
    let path = req.path();
    if OPERATIONS_PATHS.contains(&path) {
        let response = with_api_version(next.call(req).await?);
        return Ok(response.map_into_boxed_body().map_into_right_body());
    }
    let started = Instant::now();
    let ops = req.app_data::<web::Data<Ops>>().cloned();
    let Some(ops) = ops else {
        let response = with_api_version(next.call(req).await?);
        return Ok(response.map_into_boxed_body().map_into_right_body());
    };
    let response = if head_bytes(&req) > ops.max_header_bytes {
        req.error_response(ApiError::HeadersTooLarge(ops.max_header_bytes))
    } else {
        next.call(req).await?.map_into_boxed_body()
    };
    let response = with_api_version(response);
    let request = response.request().clone();
    let record = Record {
        metrics: ops.metrics.clone(),
        route: route_index(super::routes::classify(request.path()).map(|r| r.label())),
        status: response.status().as_u16(),
        request,
        started,
    };
    Ok(response
        .map_body(|_, body| Observed {
            body,
            sent: 0,
            record: Some(record),
        })
        .map_into_left_body())
}
