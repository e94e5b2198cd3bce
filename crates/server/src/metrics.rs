//! Prometheus metrics, kept in fixed arrays of atomic counters so that recording a request is a
//! few relaxed atomic adds (no locks, no allocation, no label lookups on the request path), and
//! rendered by hand in the Prometheus text exposition format (version 0.0.4) when scraped.
//!
//! - `chartreg_http_requests_total{route,method,status}`
//! - `chartreg_http_response_bytes_total{route}`: body bytes sent
//! - `chartreg_http_request_duration_seconds{route}`: histogram, request start to body sent
//! - `chartreg_content_{repositories,tags,manifests,blobs,bytes}`: what the binary serves
//! - `chartreg_build_info{version,revision}` 1
//!
//! Health, readiness and metrics requests are not registry traffic and are not counted. The
//! routes counted are the route table's (`http::LABELS`), given at construction: a request is
//! recorded by its route's index there.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chartreg_core::content::Summary;

const METHODS: [&str; 3] = ["GET", "HEAD", "other"];
/// Statuses chartreg answers with; anything else is counted as `other`.
const STATUSES: [u16; 12] = [200, 206, 304, 400, 404, 405, 408, 416, 431, 500, 503, 0];
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

fn status_index(status: u16) -> usize {
    STATUSES
        .iter()
        .position(|s| *s == status)
        .unwrap_or(STATUSES.len() - 1)
}

#[derive(Debug, Default)]
struct Histogram {
    /// Observations per bucket (not cumulative), plus the overflow above the last bound.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let seconds = d.as_secs_f64();
        let bucket = BUCKETS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BUCKETS.len());
        if let Some(counter) = self.buckets.get(bucket) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// Build identity, shown as `chartreg_build_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    pub version: String,
    pub revision: String,
}

/// The git revision the binary was built from, as its build script found it: set once by the
/// binary (`main.rs`) before the command runs.
static REVISION: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

impl BuildInfo {
    /// Records the binary's git revision for [`BuildInfo::of_this_build`]; the first call wins.
    pub fn set_revision(revision: &'static str) {
        let _ = REVISION.set(revision);
    }

    /// This binary's: the package version, and the git revision its build found (`unknown`
    /// when it found none).
    pub fn of_this_build() -> Self {
        BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            revision: REVISION.get().copied().unwrap_or("unknown").to_owned(),
        }
    }
}

/// Every metric chartreg exports.
#[derive(Debug)]
pub struct Metrics {
    /// The routes' labels, by index; the last counts everything else.
    routes: &'static [&'static str],
    requests: Vec<AtomicU64>,
    bytes: Vec<AtomicU64>,
    durations: Vec<Histogram>,
    content: Summary,
    build: BuildInfo,
}

impl Metrics {
    /// Counters for `routes` (labels by index: the last one counts every unknown index).
    pub fn new(routes: &'static [&'static str], content: Summary, build: BuildInfo) -> Self {
        Metrics {
            routes,
            requests: (0..routes.len() * METHODS.len() * STATUSES.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            bytes: (0..routes.len()).map(|_| AtomicU64::new(0)).collect(),
            durations: (0..routes.len()).map(|_| Histogram::default()).collect(),
            content,
            build,
        }
    }

    /// Records one finished request.
    pub fn record(&self, route: usize, method: &str, status: u16, bytes: u64, took: Duration) {
        let route = route.min(self.routes.len().saturating_sub(1));
        let index =
            (route * METHODS.len() + method_index(method)) * STATUSES.len() + status_index(status);
        if let (Some(requests), Some(sent), Some(durations)) = (
            self.requests.get(index),
            self.bytes.get(route),
            self.durations.get(route),
        ) {
            requests.fetch_add(1, Ordering::Relaxed);
            sent.fetch_add(bytes, Ordering::Relaxed);
            durations.observe(took);
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing to a String cannot fail.
        let _ = self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) -> std::fmt::Result {
        writeln!(
            out,
            "# HELP chartreg_http_requests_total Requests answered, by route, method and status."
        )?;
        writeln!(out, "# TYPE chartreg_http_requests_total counter")?;
        for (r, route) in self.routes.iter().enumerate() {
            for (m, method) in METHODS.iter().enumerate() {
                for (s, status) in STATUSES.iter().enumerate() {
                    let at = (r * METHODS.len() + m) * STATUSES.len() + s;
                    let n = self
                        .requests
                        .get(at)
                        .map_or(0, |c| c.load(Ordering::Relaxed));
                    if n > 0 {
                        let status = if *status == 0 {
                            "other".to_owned()
                        } else {
                            status.to_string()
                        };
                        writeln!(
                            out,
                            "chartreg_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}} {n}"
                        )?;
                    }
                }
            }
        }
        writeln!(
            out,
            "# HELP chartreg_http_response_bytes_total Response body bytes sent, by route."
        )?;
        writeln!(out, "# TYPE chartreg_http_response_bytes_total counter")?;
        for (r, route) in self.routes.iter().enumerate() {
            let n = self.bytes.get(r).map_or(0, |c| c.load(Ordering::Relaxed));
            writeln!(
                out,
                "chartreg_http_response_bytes_total{{route=\"{route}\"}} {n}"
            )?;
        }
        writeln!(
            out,
            "# HELP chartreg_http_request_duration_seconds Time from request to the last body byte, by route."
        )?;
        writeln!(
            out,
            "# TYPE chartreg_http_request_duration_seconds histogram"
        )?;
        for (r, route) in self.routes.iter().enumerate() {
            let Some(h) = self.durations.get(r) else {
                continue;
            };
            let count = |b: usize| h.buckets.get(b).map_or(0, |c| c.load(Ordering::Relaxed));
            let mut cumulative = 0;
            for (b, bound) in BUCKETS.iter().enumerate() {
                cumulative += count(b);
                writeln!(
                    out,
                    "chartreg_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {cumulative}"
                )?;
            }
            cumulative += count(BUCKETS.len());
            writeln!(
                out,
                "chartreg_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {cumulative}"
            )?;
            let sum = h.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
            writeln!(
                out,
                "chartreg_http_request_duration_seconds_sum{{route=\"{route}\"}} {sum}"
            )?;
            writeln!(
                out,
                "chartreg_http_request_duration_seconds_count{{route=\"{route}\"}} {cumulative}"
            )?;
        }
        let c = &self.content;
        for (name, help, value) in [
            (
                "repositories",
                "Repositories served.",
                c.repositories as u64,
            ),
            ("tags", "Tags served.", c.tags as u64),
            ("manifests", "Manifests served.", c.manifests as u64),
            (
                "blobs",
                "Blobs served (counted once per repository).",
                c.blobs as u64,
            ),
            (
                "bytes",
                "Bytes of distinct manifests and blobs served.",
                c.bytes,
            ),
        ] {
            writeln!(out, "# HELP chartreg_content_{name} {help}")?;
            writeln!(out, "# TYPE chartreg_content_{name} gauge")?;
            writeln!(out, "chartreg_content_{name} {value}")?;
        }
        writeln!(out, "# HELP chartreg_build_info The running build.")?;
        writeln!(out, "# TYPE chartreg_build_info gauge")?;
        writeln!(
            out,
            "chartreg_build_info{{version=\"{}\",revision=\"{}\"}} 1",
            escape(&self.build.version),
            escape(&self.build.revision)
        )
    }
}

/// Escapes a label value (`\`, `"` and newlines).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
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
            r#"chartreg_build_info{version="1.2.3",revision="abc\"d"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
        assert!(
            !text.contains(r#"route="base",method"#),
            "zero counters are left out"
        );
    }
}
