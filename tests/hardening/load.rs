//! Load and resource bounds on the release binary, over real sockets: a mixed load over
//! HTTP/1.1 and HTTP/2 with TLS (every answer checked: status, and the digest of every body
//! that has one), idle connections that must not stop a normal client and are cut by the
//! header timeout, and connection churn (plain and TLS) that must leak nothing.
//!
//! Sizes are a tenth of the in `make test`; `CHARTREG_STRESS=10` (`make stress`) runs
//! the full ones. Each test prints its figures (`--nocapture` shows them) for RELIABILITY.md.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::common::{self, Process, TlsProcess};
use chartreg_core::oci::Reference;
use chartreg_core::oci::layout::ImageManifest;

pub fn scale() -> usize {
    std::env::var("CHARTREG_STRESS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// What an answer must be.
#[derive(Debug, Clone)]
enum Check {
    Status(u16),
    /// 200, and the body's sha256 is its `Docker-Content-Digest`.
    DigestHeader,
    /// 200, and the body's sha256 is this digest.
    Body(String),
}

/// Requests over every endpoint of the committed content, with their checks.
fn mix() -> Vec<(String, Check)> {
    let registry = common::assets_registry();
    let mut mix = vec![
        ("/v2/".to_owned(), Check::Status(200)),
        ("/v2/_catalog".to_owned(), Check::Status(200)),
        ("/v2/_catalog?n=2".to_owned(), Check::Status(200)),
        (
            "/v2/charts/hello/manifests/nope".to_owned(),
            Check::Status(404),
        ),
        ("/v2/Bad/tags/list".to_owned(), Check::Status(400)),
        ("/charts/index.yaml".to_owned(), Check::Status(200)),
        ("/".to_owned(), Check::Status(200)),
        ("/ui/images/sample".to_owned(), Check::Status(200)),
    ];
    for repository in registry.repositories() {
        let name = repository.name();
        mix.push((format!("/v2/{name}/tags/list"), Check::Status(200)));
        for tag in repository.tags() {
            mix.push((format!("/v2/{name}/manifests/{tag}"), Check::DigestHeader));
            let Some(digest) = repository.tag_digest(tag) else {
                continue;
            };
            mix.push((
                format!("/v2/{name}/manifests/{digest}"),
                Check::Body(digest.to_string()),
            ));
            mix.push((format!("/v2/{name}/referrers/{digest}"), Check::Status(200)));
            let Ok(manifest) = repository.manifest(&Reference::Digest(digest.clone())) else {
                continue;
            };
            if let Ok(m) = serde_json::from_slice::<ImageManifest>(&manifest.data) {
                for d in std::iter::once(&m.config).chain(&m.layers) {
                    mix.push((
                        format!("/v2/{name}/blobs/{}", d.digest),
                        Check::Body(d.digest.to_string()),
                    ));
                }
            }
        }
    }
    mix
}

const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// A request of the load that failed, naming its path.
#[derive(Debug)]
enum Failed {
    Request(String, reqwest::Error),
    Body(String, reqwest::Error),
    Answer {
        path: String,
        status: u16,
        digest: String,
        header: Option<String>,
        wanted: String,
    },
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Request(path, e) => write!(f, "{path}: {e}"),
            Failed::Body(path, e) => write!(f, "{path}: body: {e}"),
            Failed::Answer {
                path,
                status,
                digest,
                header,
                wanted,
            } => write!(
                f,
                "{path}: {status}, body {digest}, header {header:?}, wanted {wanted}"
            ),
        }
    }
}

async fn one(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    check: &Check,
) -> Result<(), Failed> {
    let response = client
        .get(format!("{base}{path}"))
        .header("Accept", ACCEPT)
        .send()
        .await
        .map_err(|e| Failed::Request(path.to_owned(), e))?;
    let status = response.status().as_u16();
    let header = response
        .headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response
        .bytes()
        .await
        .map_err(|e| Failed::Body(path.to_owned(), e))?;
    let digest = common::sha256(&body);
    match check {
        Check::Status(want) if status == *want => Ok(()),
        Check::DigestHeader if status == 200 && header.as_deref() == Some(digest.as_str()) => {
            Ok(())
        }
        Check::Body(want) if status == 200 && digest == *want => Ok(()),
        _ => Err(Failed::Answer {
            path: path.to_owned(),
            status,
            digest,
            header,
            wanted: format!("{check:?}"),
        }),
    }
}

fn tls_server() -> (TlsProcess, reqwest::Certificate) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = TlsProcess::start(&[], &[("RUST_LOG", "warn")]);
    let ca = reqwest::Certificate::from_pem(tls.cert.ca_pem.as_bytes()).expect("CA");
    (tls, ca)
}

/// `requests` requests from `tasks` tasks, half over HTTP/1.1 and half over HTTP/2; the
/// failures.
async fn run(
    base: &str,
    ca: &reqwest::Certificate,
    mix: &Arc<Vec<(String, Check)>>,
    tasks: usize,
    requests: usize,
) -> Vec<String> {
    let h1 = reqwest::Client::builder()
        .tls_certs_only([ca.clone()])
        .http1_only()
        .pool_max_idle_per_host(tasks)
        .build()
        .expect("HTTP/1.1 client");
    let h2 = reqwest::Client::builder()
        .tls_certs_only([ca.clone()])
        .http2_prior_knowledge()
        .build()
        .expect("HTTP/2 client");
    let next = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for task in 0..tasks {
        let client = if task % 2 == 0 {
            h1.clone()
        } else {
            h2.clone()
        };
        let (mix, next, base) = (mix.clone(), next.clone(), base.to_owned());
        handles.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= requests {
                    break;
                }
                let (path, check) = &mix[(i * 7919) % mix.len()];
                if let Err(e) = one(&client, &base, path, check).await {
                    failures.push(e.to_string());
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for handle in handles {
        failures.extend(handle.await.expect("a load task"));
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_load_over_http1_and_http2_with_tls_is_exact_and_bounded() {
    let (tls, ca) = tls_server();
    let server = &tls.process;
    let base = server.https_url();
    let mix = Arc::new(mix());
    assert!(mix.len() > 40, "the mix covers the content: {}", mix.len());
    // Warm-up: every connection of the pool opened and every answer made once, so that what
    // is measured afterwards is growth, not first use (about 1 MiB, whatever the run's size).
    let total = 20_000 * scale();
    for _ in 0..2 {
        let warm = run(&base, &ca, &mix, 256, total).await;
        assert!(warm.is_empty(), "warm-up: {:?}", &warm[..warm.len().min(5)]);
    }
    // Two measured runs: a leak grows the server's anonymous memory in each of them by about
    // the same amount; the allocator's settling (arenas, ±0.5-1.5 MiB run to run here at a tenth
    // of the size) moves it in one run and not the next. The smaller growth is held to the bound.
    let mut growths = Vec::new();
    for _ in 0..2 {
        let anon_before = server.status_kib("RssAnon");
        let started = Instant::now();
        let failures = run(&base, &ca, &mix, 256, total).await;
        let took = started.elapsed();
        let anon_after = server.status_kib("RssAnon");
        eprintln!(
            "load: {total} requests ({} paths), 256 tasks, HTTP/1.1 + HTTP/2 over TLS: {} failures in {:.1}s ({:.0}/s); RssAnon {anon_before} KiB before, {anon_after} KiB after",
            mix.len(),
            failures.len(),
            took.as_secs_f64(),
            total as f64 / took.as_secs_f64()
        );
        assert!(
            failures.is_empty(),
            "{} of {total} failed: {:?}",
            failures.len(),
            &failures[..failures.len().min(10)]
        );
        growths.push((anon_before, anon_after));
    }
    // Within 10% (the bound, which RELIABILITY.md reports at full size); at a tenth of
    // the size the allocator's settling is as large as 10% of 7 MiB, so 1 MiB is also allowed.
    let within = |(before, after): (u64, u64)| after * 10 <= before * 11 || after <= before + 1024;
    assert!(
        growths.iter().copied().any(within),
        "anonymous memory grew in both measured runs (KiB before, after): {growths:?}"
    );
    assert!(!server.log().contains("panicked"), "{}", server.log());
}

/// `GET /v2/` on a new connection: how long the 200 took, or `None` (no 200 within 10 s).
pub fn normal_request(addr: std::net::SocketAddr) -> Option<Duration> {
    let started = Instant::now();
    let mut client = TcpStream::connect(addr).ok()?;
    client
        .write_all(b"GET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    (status_of(&mut client)? == 200).then(|| started.elapsed())
}

/// How many of `streams` the server has closed (read to the end within 500 ms each).
pub fn closed_by_server(streams: &mut [TcpStream]) -> usize {
    let mut closed = 0;
    for stream in streams {
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        let mut rest = Vec::new();
        if stream.read_to_end(&mut rest).is_ok() {
            closed += 1;
        }
    }
    closed
}

/// Reads one answer's status off `stream` (an HTTP/1.1 GET just sent).
fn status_of(stream: &mut TcpStream) -> Option<u16> {
    let mut buffer = [0u8; 4096];
    let n = stream.read(&mut buffer).ok()?;
    String::from_utf8_lossy(&buffer[..n])
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[test]
fn idle_connections_do_not_stop_a_normal_client_and_are_cut_by_the_header_timeout() {
    let server = Process::start_args(
        &common::chartreg_bin(),
        &["--request-header-timeout", "2s"],
        &[("RUST_LOG", "warn")],
    );
    let idle_count = 100 * scale();
    let mut idle: Vec<TcpStream> = (0..idle_count)
        .map(|_| TcpStream::connect(server.addr).expect("connect"))
        .collect();
    // A half-sent request on some of them.
    for stream in idle.iter_mut().step_by(2) {
        let _ = stream.write_all(b"GET /v2/ HTTP/1.1\r\nHost: x\r\n");
    }
    let served_in = normal_request(server.addr)
        .unwrap_or_else(|| panic!("a normal client beside {idle_count} idle ones"));
    // After the header timeout every idle connection is closed (a 408, or nothing, then EOF).
    std::thread::sleep(Duration::from_millis(2_500));
    let closed = closed_by_server(&mut idle);
    eprintln!(
        "idle: {idle_count} idle connections; a normal request answered in {served_in:?}; {closed} closed by the 2 s header timeout"
    );
    assert_eq!(closed, idle_count, "every idle connection was cut");
}

#[test]
fn connection_churn_leaks_nothing() {
    let (tls, ca) = tls_server();
    let server = &tls.process;
    let plain = Process::start_args(&common::chartreg_bin(), &[], &[("RUST_LOG", "warn")]);
    let fds = |p: &Process| -> usize {
        let pid = p.status_kib("Pid");
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let (fds_before, anon_before) = (fds(&plain), plain.status_kib("RssAnon"));
    let count = 2_000 * scale();
    for _ in 0..count {
        let mut stream = TcpStream::connect(plain.addr).expect("connect");
        stream
            .write_all(b"GET /v2/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .expect("send");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        assert_eq!(status_of(&mut stream), Some(200));
    }
    std::thread::sleep(Duration::from_millis(300));
    let (fds_after, anon_after) = (fds(&plain), plain.status_kib("RssAnon"));

    let handshakes = 200 * scale();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (tls_fds_before, tls_anon_before) = (fds(server), server.status_kib("RssAnon"));
    runtime.block_on(async {
        for _ in 0..handshakes {
            // A new client each time: a fresh connection and TLS handshake.
            let client = reqwest::Client::builder()
                .tls_certs_only([ca.clone()])
                .pool_max_idle_per_host(0)
                .build()
                .expect("client");
            one(&client, &server.https_url(), "/v2/", &Check::Status(200))
                .await
                .expect("TLS request");
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    let (tls_fds_after, tls_anon_after) = (fds(server), server.status_kib("RssAnon"));
    eprintln!(
        "churn: {count} plain connections: fds {fds_before} -> {fds_after}, RssAnon {anon_before} -> {anon_after} KiB; {handshakes} TLS handshakes: fds {tls_fds_before} -> {tls_fds_after}, RssAnon {tls_anon_before} -> {tls_anon_after} KiB"
    );
    assert!(
        fds_after <= fds_before + 2,
        "plain: fds {fds_before} -> {fds_after}"
    );
    assert!(
        tls_fds_after <= tls_fds_before + 2,
        "TLS: fds {tls_fds_before} -> {tls_fds_after}"
    );
    // Allocator arenas settle after the first connections: allow 10% and 1 MiB.
    assert!(
        anon_after <= anon_before + anon_before / 10 + 1024,
        "plain: {anon_before} -> {anon_after} KiB"
    );
    assert!(
        tls_anon_after <= tls_anon_before + tls_anon_before / 10 + 1024,
        "TLS: {tls_anon_before} -> {tls_anon_after} KiB"
    );
}
