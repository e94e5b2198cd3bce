//! Prometheus metrics, kept and rendered by `prometheus-client` (the Prometheus project's Rust
//! client) in the Prometheus text exposition format, version 0.0.4 ([`CONTENT_TYPE`]).
//!
//! - `chartreg_http_requests_total{route,method,status}`
//! - `chartreg_http_response_bytes_total{route}`: body bytes sent
//! - `chartreg_http_request_duration_seconds{route}`: histogram, request start to body sent
//! - `chartreg_content_{repositories,tags,manifests,blobs,bytes}`: what the binary serves
//! - `chartreg_build_info{version,revision,content_digest,created,signer}` 1: `created` is
//!   the build's `SOURCE_DATE_EPOCH` in RFC 3339, `signer` the fingerprint of the key its image
//!   is signed with (`none`)
//! - `chartreg_tls_handshake_failures_total{reason}`: connections on the HTTPS port that ended
//!   before their handshake did (the reasons are the listener's)
//! - `chartreg_log_lines_dropped_total`: log lines dropped while the log output was not read
//!
//! Health, readiness and metrics requests are not registry traffic and are not counted. The
//! routes counted are the route table's (`http::LABELS`), given at construction. Methods other
//! than GET and HEAD count as `other`, and so do statuses chartreg does not answer with.
//!
//! 1. [`Metrics::new`] registers the families in a `Registry` and makes each route's bytes
//!    counter and histogram (so every route shows, zero or not), keeping handles to them by
//!    route index, and one empty slot per (route, method, status) requests counter.
//! 2. [`Metrics::record`], on the request path, finds everything by index: the first request
//!    of a (route, method, status) takes its counter from the requests family (so series that
//!    never counted are not shown) into its slot; then it is a few atomic adds and the
//!    histogram's lock, with no label hashing.
//! 3. [`Metrics::render`], on a scrape, has the crate write the registry.
//!
//! The crate names a counter's series with `_total` itself: counters are registered without it.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use chartreg_core::content::Summary;

/// The `Content-Type` of what [`Metrics::render`] writes.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

const METHODS: [&str; 3] = ["GET", "HEAD", "other"];
/// Statuses chartreg answers with; anything else is counted as `other`.
const STATUSES: [u16; 11] = [200, 206, 304, 400, 404, 405, 408, 416, 431, 500, 503];
/// Request counters a route can have: each method with each status and `other`.
const PER_ROUTE: usize = METHODS.len() * (STATUSES.len() + 1);
/// Histogram bucket bounds in seconds.
const BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

fn method_index(method: &str) -> usize {
    match method {
        "GET" => 0,
        "HEAD" => 1,
        _ => 2,
    }
}

/// Where `status` is in [`STATUSES`]; past its end for `other`.
fn status_index(status: u16) -> usize {
    STATUSES
        .iter()
        .position(|s| *s == status)
        .unwrap_or(STATUSES.len())
}

/// A response status's label: one of [`STATUSES`], or `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Status {
    Known(u16),
    Other,
}

impl EncodeLabelValue for Status {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        match self {
            Status::Known(status) => status.encode(encoder),
            Status::Other => "other".encode(encoder),
        }
    }
}

/// The labels of `chartreg_http_requests_total`, in the order they are written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    method: &'static str,
    status: Status,
}

/// The label of `chartreg_tls_handshake_failures_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct HandshakeLabels {
    reason: &'static str,
}

/// The label of the per-route metrics.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

/// One route's own series, shared with the registry's families.
#[derive(Debug)]
struct RouteMetrics {
    label: &'static str,
    bytes: Counter,
    durations: Histogram,
}

/// Build identity, shown as `chartreg_build_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    pub version: String,
    pub revision: String,
    /// `sha256:<hex>`, or `unknown`.
    pub content_digest: String,
    /// RFC 3339.
    pub created: String,
    /// The signing key's fingerprint, or `none`.
    pub signer: String,
}

impl BuildInfo {
    /// This binary's: the package version, the git revision its build found, its content's
    /// digest and its build's time (`unknown` for what was not recorded; see
    /// [`crate::this_build`]).
    pub fn of_this_build() -> Self {
        let this = crate::this_build::get();
        BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            revision: this.revision.unwrap_or("unknown").to_owned(),
            content_digest: this.content_digest.unwrap_or("unknown").to_owned(),
            created: this
                .created_rfc3339()
                .unwrap_or_else(|| "unknown".to_owned()),
            signer: this.signer.unwrap_or("none").to_owned(),
        }
    }
}

/// Every metric chartreg exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    /// The requests family's counters, [`PER_ROUTE`] per route (by method, then status), each
    /// taken from the family on its first request and counted through directly after that.
    request_counters: Vec<OnceLock<Counter>>,
    /// By route index; the last counts every unknown index.
    routes: Vec<RouteMetrics>,
    handshake_failures: Family<HandshakeLabels, Counter>,
}

/// A histogram with [`BUCKETS`], for the durations family.
fn duration_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

impl Metrics {
    /// Metrics for `routes` (labels by index: the last one counts every unknown index).
    pub fn new(routes: &'static [&'static str], content: Summary, build: BuildInfo) -> Self {
        let mut registry = Registry::default();
        // The crate ends every help text with a full stop.
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "chartreg_http_requests",
            "Requests answered, by route, method and status",
            requests.clone(),
        );
        let bytes = Family::<RouteLabels, Counter>::default();
        registry.register(
            "chartreg_http_response_bytes",
            "Response body bytes sent, by route",
            bytes.clone(),
        );
        let durations = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        registry.register(
            "chartreg_http_request_duration_seconds",
            "Time from request to the last body byte, by route",
            durations.clone(),
        );
        let routes: Vec<RouteMetrics> = routes
            .iter()
            .map(|&label| {
                let labels = RouteLabels { route: label };
                RouteMetrics {
                    label,
                    bytes: bytes.get_or_create_owned(&labels),
                    durations: durations.get_or_create_owned(&labels),
                }
            })
            .collect();
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        for (name, help, value) in [
            (
                "repositories",
                "Repositories served",
                as_u64(content.repositories),
            ),
            ("tags", "Tags served", as_u64(content.tags)),
            ("manifests", "Manifests served", as_u64(content.manifests)),
            (
                "blobs",
                "Blobs served (counted once per repository)",
                as_u64(content.blobs),
            ),
            (
                "bytes",
                "Bytes of distinct manifests and blobs served",
                content.bytes,
            ),
        ] {
            registry.register(
                format!("chartreg_content_{name}"),
                help,
                ConstGauge::<u64>::new(value),
            );
        }
        // An info metric: written as a gauge named `_info`, valued 1.
        registry.register(
            "chartreg_build",
            "The running build",
            Info::new([
                ("version", build.version),
                ("revision", build.revision),
                ("content_digest", build.content_digest),
                ("created", build.created),
                ("signer", build.signer),
            ]),
        );
        let handshake_failures = Family::<HandshakeLabels, Counter>::default();
        registry.register(
            "chartreg_tls_handshake_failures",
            "Connections on the HTTPS port that ended before their TLS handshake did, by reason",
            handshake_failures.clone(),
        );
        registry.register(
            "chartreg_log_lines_dropped",
            "Log lines dropped because the log output was not being read",
            crate::logging::dropped().clone(),
        );
        Metrics {
            registry,
            handshake_failures,
            requests,
            request_counters: (0..routes.len() * PER_ROUTE)
                .map(|_| OnceLock::new())
                .collect(),
            routes,
        }
    }

    /// Records one finished request.
    ///
    /// The requests counter is kept in its slot rather than found by its labels in the family
    /// on every request (`Family::get_or_create`: a read lock and a SipHash of the labels),
    /// which took 570 of the 645 instructions a family lookup added to a manifest request
    /// (13,471 -> 14,117, +4.8%); with the slot the crate adds 15 (13,486, +0.1%). Counted by
    /// callgrind in process, as `bench/lookup-flatness.sh` does: `valgrind --tool=callgrind
    /// --toggle-collect='*serve_requests*' target/release/examples/lookup_cost --tags 10
    /// --requests 2000`, the hand-written atomics (git f9b6695) against this.
    pub fn record(&self, route: usize, method: &str, status: u16, bytes: u64, took: Duration) {
        let route = route.min(self.routes.len().saturating_sub(1));
        let (m, s) = (method_index(method), status_index(status));
        let at = route * PER_ROUTE + m * (STATUSES.len() + 1) + s;
        let (Some(metrics), Some(counter)) =
            (self.routes.get(route), self.request_counters.get(at))
        else {
            return;
        };
        counter
            .get_or_init(|| {
                self.requests.get_or_create_owned(&RequestLabels {
                    route: metrics.label,
                    method: METHODS.get(m).copied().unwrap_or("other"),
                    status: STATUSES.get(s).map_or(Status::Other, |s| Status::Known(*s)),
                })
            })
            .inc();
        metrics.bytes.inc_by(bytes);
        metrics.durations.observe(took.as_secs_f64());
    }

    /// Shows `reasons` of `chartreg_tls_handshake_failures_total`, at zero until they count.
    pub fn tls_handshake_reasons(&self, reasons: impl IntoIterator<Item = &'static str>) {
        for reason in reasons {
            drop(
                self.handshake_failures
                    .get_or_create(&HandshakeLabels { reason }),
            );
        }
    }

    /// Counts a connection on the HTTPS port that ended before its handshake did.
    pub fn tls_handshake_failed(&self, reason: &'static str) {
        self.handshake_failures
            .get_or_create(&HandshakeLabels { reason })
            .inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_histogram_render() {
        let m = Metrics::new(
            &["base", "manifests", "other"],
            Summary {
                repositories: 2,
                tags: 6,
                manifests: 6,
                blobs: 13,
                bytes: 100,
            },
            BuildInfo {
                version: "1.2.3".into(),
                revision: "abc\"d".into(),
                content_digest: "sha256:00".into(),
                created: "1970-01-01T00:00:00Z".into(),
                signer: "none".into(),
            },
        );
        let manifests = 1;
        m.record(manifests, "GET", 200, 10, Duration::from_micros(50));
        m.record(manifests, "GET", 200, 10, Duration::from_millis(2));
        m.record(manifests, "HEAD", 404, 0, Duration::from_secs(20));
        m.record(
            7, // beyond the labels: counted as the last, "other"
            "DELETE",
            418,
            5,
            Duration::ZERO,
        );
        let text = m.render();
        for line in [
            r#"chartreg_http_requests_total{route="manifests",method="GET",status="200"} 2"#,
            r#"chartreg_http_requests_total{route="manifests",method="HEAD",status="404"} 1"#,
            r#"chartreg_http_requests_total{route="other",method="other",status="other"} 1"#,
            r#"chartreg_http_response_bytes_total{route="manifests"} 20"#,
            r#"chartreg_http_request_duration_seconds_bucket{route="manifests",le="0.0001"} 1"#,
            r#"chartreg_http_request_duration_seconds_bucket{route="manifests",le="0.0025"} 2"#,
            r#"chartreg_http_request_duration_seconds_bucket{route="manifests",le="10"} 2"#,
            r#"chartreg_http_request_duration_seconds_bucket{route="manifests",le="+Inf"} 3"#,
            r#"chartreg_http_request_duration_seconds_count{route="manifests"} 3"#,
            "chartreg_content_tags 6",
            r#"chartreg_build_info{version="1.2.3",revision="abc\"d",content_digest="sha256:00",created="1970-01-01T00:00:00Z",signer="none"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
        assert!(
            !text.contains(r#"route="base",method"#),
            "zero counters are left out"
        );
        for line in [
            "# HELP chartreg_http_requests_total Requests answered, by route, method and status.",
            "# TYPE chartreg_http_requests_total counter",
            "# HELP chartreg_http_response_bytes_total Response body bytes sent, by route.",
            "# TYPE chartreg_http_response_bytes_total counter",
            "# TYPE chartreg_http_request_duration_seconds histogram",
            "# HELP chartreg_content_blobs Blobs served (counted once per repository).",
            "# TYPE chartreg_content_bytes gauge",
            "# HELP chartreg_build_info The running build.",
            "# TYPE chartreg_build_info gauge",
            r#"chartreg_http_response_bytes_total{route="base"} 0"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
    }
}
