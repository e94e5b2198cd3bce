//! How fetch reaches sources: which hosts get plain HTTP, TLS with a private CA, credentials
//! only for the host they were given for, retries with back-off on transient failures, and
//! downloads that never leave a partial file.
//!
//! - Loopback hosts (127.0.0.0/8, `::1`, `localhost`) are reached over plain HTTP, as
//!   mindthegap's engine does, and so is every host given with `--plain-http`; others over
//!   HTTPS, verified against the system's roots and `--ca-file` (`tlsVerify: false` skips the
//!   verification).
//! - A download goes to a temporary file beside its target, is hashed as it arrives, checked
//!   against the digest it must have, and only then renamed into place: an interrupted or failed
//!   fetch leaves the previous file, or none, never a partial one.
//! - Every download is bounded ([`Bounded`]): a repository index at 256 MiB, a chart package at
//!   101 MiB, a `.prov` at 1 MiB, an OCI manifest, index or tag list at 4 MiB, a blob at the size
//!   its descriptor gives. A source that says it will send more (`Content-Length`) is refused
//!   before its body is read; one that sends more is cut off at the bound, and refused.
//! - What a source answers in an error (a body, a registry's message) is quoted [`quoted`]: its
//!   first 512 characters, on one line.
//! - Timeouts, connection failures and 5xx answers are retried (4 tries, 0.5 s doubling between
//!   them); 404, 401 and 403 are not.
//!
//! This module sets up clients, reads responses and retries; `bounds` says what each download
//! may weigh, `quoting` how a source's words are shown, `partial` how a download becomes a
//! file. None of them reaches back into this one.

pub(super) mod bounds;
mod partial;
pub(super) mod quoting;

use std::future::Future;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use bounds::Bounded;
pub use partial::{Partial, existing_sha256, sha256_of_hex};
pub use quoting::{QUOTED, error_chain, quoted};

use super::problem::{Failure, Problem};

/// What decides how hosts are reached.
#[derive(Debug, Clone, Default)]
pub struct Transport {
    /// PEM certificates to trust besides the system's.
    pub ca_pem: Option<Vec<u8>>,
    /// Hosts (`host` or `host:port`) reached over plain HTTP.
    pub plain_http: Vec<String>,
}

const TRIES: u32 = 4;
const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// Refuses a response whose `Content-Length` says it is larger than `bound`.
pub fn check_length(
    response: &reqwest::Response,
    bound: Bounded,
    from: &str,
) -> Result<(), Problem> {
    match response.content_length() {
        Some(length) if length > bound.bytes() => Err(Problem::TooLarge {
            from: from.to_owned(),
            bound,
        }),
        _ => Ok(()),
    }
}

/// The body of `response`, at most `bound`'s bytes of it: more is refused, the rest of the body
/// unread.
pub async fn read_bounded(
    mut response: reqwest::Response,
    bound: Bounded,
    from: &str,
) -> Result<Vec<u8>, Failure> {
    check_length(&response, bound, from).map_err(Failure::Final)?;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(classify_http)? {
        if (body.len() + chunk.len()) as u64 > bound.bytes() {
            return Err(Failure::Final(Problem::TooLarge {
                from: from.to_owned(),
                bound,
            }));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The first [`QUOTED`] characters' worth of an error answer's body, quoted (see [`quoted`]);
/// the rest is not read.
pub async fn error_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    // Four bytes a character at most.
    while body.len() < QUOTED * 4 {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    quoted(&String::from_utf8_lossy(&body))
}

/// The host of `host[:port]`, without brackets.
fn host_only(registry: &str) -> &str {
    // A bare IPv6 address (`::1`) has colons but no port.
    if registry.parse::<IpAddr>().is_ok() {
        return registry;
    }
    if let Some(rest) = registry.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match registry.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => registry,
    }
}

/// Whether `registry` (`host[:port]`) is this machine.
pub fn is_loopback(registry: &str) -> bool {
    let host = host_only(registry);
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Why a `--ca-file` cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum CaFileError {
    #[error("--ca-file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--ca-file {}: not PEM: {source}", path.display())]
    Pem {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error(
        "--ca-file {}: no PEM certificate in it{}: give the CA's certificate (-----BEGIN CERTIFICATE-----)",
        path.display(),
        if found.is_empty() { String::new() } else { format!(" (it holds {})", found.join(", ")) }
    )]
    NoCertificate { path: PathBuf, found: Vec<String> },
    #[error("--ca-file {}: certificate {number} cannot be trusted: {source}", path.display())]
    BadCertificate {
        path: PathBuf,
        number: usize,
        source: rustls::Error,
    },
}

impl Transport {
    /// The PEM certificates of the `--ca-file` at `path`, each checked to be one a TLS client
    /// can trust: a file with none (empty, text, a key) is refused here, naming it, rather
    /// than failing every HTTPS source later.
    pub fn read_ca_file(path: &Path) -> Result<Vec<u8>, CaFileError> {
        use rustls::pki_types::pem::{PemObject, SectionKind};
        let pem = std::fs::read(path).map_err(|source| CaFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut found = Vec::new();
        let mut roots = rustls::RootCertStore::empty();
        for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(&pem) {
            let (kind, der) = section.map_err(|source| CaFileError::Pem {
                path: path.to_owned(),
                source,
            })?;
            if kind == SectionKind::Certificate {
                roots
                    .add(der.into())
                    .map_err(|source| CaFileError::BadCertificate {
                        path: path.to_owned(),
                        number: roots.len() + 1,
                        source,
                    })?;
            } else {
                found.push(match kind {
                    SectionKind::PrivateKey
                    | SectionKind::RsaPrivateKey
                    | SectionKind::EcPrivateKey => "a private key".to_owned(),
                    SectionKind::PublicKey => "a public key".to_owned(),
                    SectionKind::Csr => "a certificate request".to_owned(),
                    SectionKind::Crl => "a revocation list".to_owned(),
                    other => format!("{other:?}"),
                });
            }
        }
        if roots.is_empty() {
            found.dedup();
            return Err(CaFileError::NoCertificate {
                path: path.to_owned(),
                found,
            });
        }
        Ok(pem)
    }

    /// Whether `registry` is reached over plain HTTP.
    pub fn plain_http(&self, registry: &str) -> bool {
        is_loopback(registry)
            || self
                .plain_http
                .iter()
                .any(|h| h == registry || h == host_only(registry))
    }

    /// An HTTP client for classic Helm repositories and chart URLs.
    pub fn http_client(&self, tls_verify: bool) -> Result<reqwest::Client, Problem> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(60))
            .user_agent(concat!("chartreg-build/", env!("CARGO_PKG_VERSION")))
            .tls_danger_accept_invalid_certs(!tls_verify);
        if let Some(pem) = &self.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| {
                Problem::CaCertificates {
                    source: Arc::new(e),
                }
            })?;
            builder = builder.tls_certs_merge(certs);
        }
        builder.build().map_err(|e| Problem::HttpsClient {
            source: Arc::new(e),
        })
    }
}

/// Runs `attempt` until it succeeds, fails for good, or has been tried [`TRIES`] times.
pub async fn with_retries<T, F, Fut>(mut attempt: F) -> Result<T, Problem>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut pause = FIRST_PAUSE;
    let mut tries = 1;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(Failure::Transient(problem)) if tries < TRIES => {
                log::debug!("{problem}; trying again in {pause:?}");
                tokio::time::sleep(pause).await;
                pause *= 2;
                tries += 1;
            }
            Err(Failure::Transient(problem) | Failure::Final(problem)) => return Err(problem),
        }
    }
}

/// What a request's failure is: transient (retry) or final (the problems show what it says
/// quoted, bounded: a server's certificate names what it likes).
pub fn classify_http(e: reqwest::Error) -> Failure {
    if let Some(status) = e.status() {
        return status_failure(status.as_u16(), quoted(&e.to_string()));
    }
    let text = error_chain(&e);
    if text.contains("certificate") || text.contains("tls") || text.contains("TLS") {
        return Failure::Final(Problem::tls(e));
    }
    Failure::Transient(Problem::network(e))
}

/// The failure an HTTP status stands for.
pub fn status_failure(status: u16, text: String) -> Failure {
    match status {
        404 => Failure::Final(Problem::NotFound),
        401 | 403 => Failure::Final(Problem::AuthRefused(status)),
        408 | 429 | 500..=599 => Failure::Transient(Problem::Http(status, text)),
        _ => Failure::Final(Problem::Http(status, text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_plain_http_hosts() {
        for host in [
            "localhost",
            "localhost:5000",
            "127.0.0.1:5000",
            "127.9.9.9",
            "[::1]:5000",
            "::1",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["quay.io", "10.0.0.1:5000", "registry.local"] {
            assert!(!is_loopback(host), "{host}");
        }
        let t = Transport {
            plain_http: vec!["registry.local".into()],
            ..Transport::default()
        };
        assert!(t.plain_http("registry.local:5000"));
        assert!(!t.plain_http("quay.io"));
    }

    /// A server on 127.0.0.1 that answers one request with `head` and `body` (written in
    /// pieces until the client stops reading), then closes.
    fn answer_once(head: String, body: Vec<u8>) -> String {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(head.as_bytes());
            for piece in body.chunks(64 << 10) {
                if stream.write_all(piece).is_err() {
                    break;
                }
            }
        });
        format!("http://{addr}/x")
    }

    fn get(url: &str, bound: Bounded) -> Result<Vec<u8>, Problem> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let response = Transport::default()
                .http_client(true)?
                .get(url)
                .send()
                .await
                .map_err(Problem::network)?;
            read_bounded(response, bound, url)
                .await
                .map_err(|(Failure::Final(p) | Failure::Transient(p))| p)
        })
    }

    #[test]
    fn a_body_is_read_within_its_bound() {
        let url = answer_once(
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n".into(),
            b"hello".to_vec(),
        );
        assert_eq!(get(&url, Bounded::Manifest).unwrap(), b"hello");
    }

    #[test]
    fn a_body_said_to_be_larger_than_its_bound_is_not_read() {
        let url = answer_once(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                Bounded::Manifest.bytes() + 1
            ),
            Vec::new(),
        );
        let e = get(&url, Bounded::Manifest).unwrap_err();
        assert!(matches!(e, Problem::TooLarge { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("{url}: larger than 4 MiB")),
            "{e}"
        );
    }

    #[test]
    fn a_body_that_goes_on_past_its_bound_is_cut_off() {
        // No length said: read until the bound, then refused.
        let url = answer_once(
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".into(),
            vec![b'x'; (Bounded::Manifest.bytes() + (1 << 20)) as usize],
        );
        let e = get(&url, Bounded::Manifest).unwrap_err();
        assert!(matches!(e, Problem::TooLarge { .. }), "{e}");
    }
}
