//! What happens around every request: the header-size cap, the API version header, one access
//! log line, and metrics.
//!
//! 1. The route is parsed ([`routes::route`]), once: the endpoint is kept for the metrics, the
//!    route goes to the handler with the request.
//! 2. A request head larger than the cap is answered 431 before the handler runs.
//! 3. The response body is wrapped so that when it has been sent (or the client went away) the
//!    bytes actually sent and the whole duration are known: then the access line is logged
//!    and the metrics recorded. Nothing is logged or counted for `/healthz`, `/readyz` and
//!    `/metrics`.

use std::future::{Future, Ready, ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use actix_web::body::{BodySize, BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::HeaderValue;
use actix_web::web::Bytes;
use actix_web::{Error, HttpRequest, web};

use super::routes::{self, Endpoint};
use super::{ApiError, Ops};
use crate::logging;
use crate::metrics::Metrics;

/// The size of a request head as it came in: request line and header lines.
fn head_bytes(req: &ServiceRequest) -> usize {
    let head = req.head();
    let target = head.uri.path_and_query().map_or(1, |pq| pq.as_str().len());
    // `METHOD TARGET HTTP/1.1\r\n`, each `name: value\r\n`, the blank line.
    let line = head
        .method
        .as_str()
        .len()
        .saturating_add(target)
        .saturating_add(12);
    head.headers()
        .iter()
        .fold(line.saturating_add(2), |size, (name, value)| {
            size.saturating_add(name.as_str().len())
                .saturating_add(value.len())
                .saturating_add(4)
        })
}

/// Everything the access line and the metrics need once the body is done.
struct Record {
    metrics: Arc<Metrics>,
    endpoint: Endpoint,
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
            .record(self.endpoint.index(), method, self.status, bytes, took);
        logging::access(&logging::Access {
            method,
            path: self.request.path(),
            status: self.status,
            bytes,
            duration: took,
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
            self.sent = self.sent.saturating_add(chunk.len() as u64);
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

/// The middleware (see the module doc), as a transform over the application's service: a
/// hand-written one rather than `from_fn`, which boxes the inner service and its future for
/// every request.
pub struct Observe;

impl<S, B> Transform<S, ServiceRequest> for Observe
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<EitherBody<Observed, BoxBody>>;
    type Error = Error;
    type Transform = ObserveService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(ObserveService { service }))
    }
}

pub struct ObserveService<S> {
    service: S,
}

/// What is known of a request before its answer: when it started, the state to record it in
/// and where (none for the operations endpoints, which are not registry traffic).
struct Started {
    at: Instant,
    ops: web::Data<Ops>,
    endpoint: Endpoint,
}

impl<S, B> Service<ServiceRequest> for ObserveService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<EitherBody<Observed, BoxBody>>;
    type Error = Error;
    type Future = Observing<S::Future>;

    actix_web::dev::forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        let at = Instant::now();
        let endpoint =
            routes::route(req.method(), req.path(), req.query_string()).carry(req.request());
        let ops = endpoint.and_then(|e| Some((e, req.app_data::<web::Data<Ops>>()?.clone())));
        let Some((endpoint, ops)) = ops else {
            return Observing {
                started: None,
                state: State::Waiting {
                    answer: self.service.call(req),
                },
            };
        };
        let max_header_bytes = ops.max_header_bytes;
        let started = Some(Started { at, ops, endpoint });
        if head_bytes(&req) > max_header_bytes {
            let refused = req.error_response(ApiError::HeadersTooLarge(max_header_bytes));
            return Observing {
                started,
                state: State::Refused {
                    answer: Some(refused),
                },
            };
        }
        Observing {
            started,
            state: State::Waiting {
                answer: self.service.call(req),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of [`ObserveService`]: the application's, with the API version header and,
    /// for registry traffic, a body that records the request once sent.
    pub struct Observing<F> {
        started: Option<Started>,
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProjection]
    enum State<F> {
        Waiting { #[pin] answer: F },
        /// Refused before reaching the application (the request head is too large).
        Refused { answer: Option<ServiceResponse<BoxBody>> },
    }
}

impl<F, B> Future for Observing<F>
where
    F: Future<Output = Result<ServiceResponse<B>, Error>>,
    B: MessageBody + 'static,
{
    type Output = Result<ServiceResponse<EitherBody<Observed, BoxBody>>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = match this.state.project() {
            StateProjection::Waiting { answer } => match answer.poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(answer) => answer?.map_into_boxed_body(),
            },
            StateProjection::Refused { answer } => match answer.take() {
                Some(answer) => answer,
                None => return Poll::Pending,
            },
        };
        let response = with_api_version(response);
        let Some(started) = this.started.take() else {
            return Poll::Ready(Ok(response.map_into_right_body()));
        };
        let request = response.request().clone();
        let record = Record {
            metrics: started.ops.metrics.clone(),
            endpoint: started.endpoint,
            status: response.status().as_u16(),
            request,
            started: started.at,
        };
        Poll::Ready(Ok(response
            .map_body(|_, body| Observed {
                body,
                sent: 0,
                record: Some(record),
            })
            .map_into_left_body()))
    }
}
