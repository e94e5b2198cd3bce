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

use std::future::Future;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest as _, Sha256};

use super::{Failure, Problem};

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

/// What a download is, which bounds how many bytes of it are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounded {
    /// A classic repository's `index.yaml`: 256 MiB (the largest public ones, bitnami's among
    /// them, are tens of MiB).
    Index,
    /// A chart package: Helm loads no chart that decompresses to more than 100 MiB, and
    /// deflate adds at most a few bytes per 64 KiB block; 1 MiB over that.
    Package,
    /// A `.prov` (a signed Chart.yaml and the package's digest): 1 MiB.
    Provenance,
    /// An OCI manifest or index (a referrers index, a tag list too): 4 MiB, the most
    /// registries take (distribution refuses larger ones).
    Manifest,
    /// A blob: exactly the size its descriptor gives.
    Blob(u64),
}

impl Bounded {
    /// The most bytes read of it.
    pub fn bytes(self) -> u64 {
        match self {
            Bounded::Index => 256 << 20,
            Bounded::Package => crate::pack::MAX_DECOMPRESSED + (1 << 20),
            Bounded::Provenance => 1 << 20,
            Bounded::Manifest => 4 << 20,
            Bounded::Blob(size) => size,
        }
    }

    /// Why more than [`Bounded::bytes`] is refused.
    pub fn exceeded(self) -> String {
        let mib = self.bytes() >> 20;
        match self {
            Bounded::Index => {
                format!("larger than {mib} MiB, the most fetch reads of a repository index")
            }
            Bounded::Package => format!(
                "larger than {mib} MiB, the most fetch downloads of a chart package (Helm loads \
                 no chart larger than {} MiB decompressed)",
                crate::pack::MAX_DECOMPRESSED >> 20
            ),
            Bounded::Provenance => {
                format!("larger than {mib} MiB, the most fetch downloads of a provenance file")
            }
            Bounded::Manifest => format!(
                "larger than {mib} MiB, the most fetch reads of a manifest, index or tag list \
                 (registries take none larger)"
            ),
            Bounded::Blob(size) => {
                format!("more than the {size} bytes its descriptor gives")
            }
        }
    }
}

/// How many characters of a source's own words (an error body, a registry's message) a
/// message quotes.
pub const QUOTED: usize = 512;

/// `text`, a source's own words, as a message quotes them: its first [`QUOTED`] characters,
/// trimmed, on one line (line breaks as spaces), ` [...]` where it was cut. (Control characters
/// are escaped where messages are printed.)
pub fn quoted(text: &str) -> String {
    let text = text.trim();
    let mut out: String = text
        .chars()
        .take(QUOTED)
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if text.chars().nth(QUOTED).is_some() {
        out.push_str(" [...]");
    }
    out
}

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

/// An error with its causes, as one line.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A file being downloaded: written beside its target, at most its bound's bytes of it,
/// renamed into place once checked.
pub struct Partial {
    temp: PathBuf,
    target: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    hasher: Sha256,
    size: u64,
    bound: Bounded,
    /// Where the bytes come from (a URL, a digest), for the error that refuses more of them.
    from: String,
}

impl Partial {
    /// A download from `from` (a URL, a digest) of what `bound` says, to `target`.
    pub fn create(target: &Path, bound: Bounded, from: &str) -> Result<Partial, Problem> {
        let dir = target.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Problem::file(dir, e))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Downloads at once each write their own (two entries may name one file).
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.part-{}-{n}", std::process::id()));
        let file = std::fs::File::create(&temp).map_err(|e| Problem::file(&temp, e))?;
        Ok(Partial {
            temp,
            target: target.to_owned(),
            file: std::io::BufWriter::new(file),
            hasher: Sha256::new(),
            size: 0,
            bound,
            from: from.to_owned(),
        })
    }

    /// Appends `chunk`; refused (and nothing of it written) when it would pass the bound.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), Problem> {
        if self.size + chunk.len() as u64 > self.bound.bytes() {
            return Err(Problem::TooLarge {
                from: self.from.clone(),
                bound: self.bound,
            });
        }
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        self.file
            .write_all(chunk)
            .map_err(|e| Problem::file(&self.temp, e))
    }

    /// Checks the bytes against `expected` (a sha256) and renames them into place; returns
    /// their size and sha256. On a mismatch the file is removed and nothing is replaced.
    pub fn finish(mut self, expected: Option<[u8; 32]>) -> Result<(u64, [u8; 32]), Problem> {
        let flushed = self.file.flush();
        let actual: [u8; 32] = std::mem::take(&mut self.hasher).finalize().into();
        if let Err(e) = flushed {
            return Err(Problem::file(&self.temp, e));
        }
        if let Some(expected) = expected
            && expected != actual
        {
            return Err(Problem::DigestMismatch {
                expected: hex::encode(expected),
                actual: hex::encode(actual),
            });
        }
        std::fs::rename(&self.temp, &self.target).map_err(|e| Problem::file(&self.target, e))?;
        Ok((self.size, actual))
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        // Renamed away when finished; otherwise nothing partial stays behind.
        let _ = std::fs::remove_file(&self.temp);
    }
}

/// The sha256 of a file already there, if it is (to skip downloading it again).
pub fn existing_sha256(path: &Path) -> Option<[u8; 32]> {
    chartreg_core::tree::BlobFile::hash(path)
        .ok()?
        .digest
        .sha256()
}

/// `hex` as 32 bytes, if it is a sha256 in hex (with or without `sha256:`).
pub fn sha256_of_hex(hex: &str) -> Option<[u8; 32]> {
    let hex = hex
        .strip_prefix("sha256:")
        .unwrap_or(hex)
        .to_ascii_lowercase();
    chartreg_core::oci::decode_sha256(hex.as_bytes())
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

    #[test]
    fn a_partial_download_never_replaces_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.tgz");
        std::fs::write(&target, b"old").unwrap();
        let mut partial = Partial::create(&target, Bounded::Package, "test").unwrap();
        partial.write(b"new").unwrap();
        let e = partial.finish(Some([0; 32])).unwrap_err();
        assert!(matches!(e, Problem::DigestMismatch { .. }), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        let mut partial = Partial::create(&target, Bounded::Package, "test").unwrap();
        partial.write(b"new").unwrap();
        drop(partial);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
    }

    #[test]
    fn a_download_past_its_bound_is_refused_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("blob");
        let mut partial = Partial::create(&target, Bounded::Blob(4), "sha256:abc").unwrap();
        partial.write(b"abc").unwrap();
        let e = partial.write(b"de").unwrap_err();
        assert_eq!(
            e.to_string(),
            "sha256:abc: more than the 4 bytes its descriptor gives"
        );
        drop(partial);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn each_bound_says_what_it_bounds() {
        assert_eq!(Bounded::Index.bytes(), 256 << 20);
        assert_eq!(Bounded::Package.bytes(), 101 << 20);
        assert_eq!(Bounded::Provenance.bytes(), 1 << 20);
        assert_eq!(Bounded::Manifest.bytes(), 4 << 20);
        for (bound, says) in [
            (
                Bounded::Index,
                "larger than 256 MiB, the most fetch reads of a repository index",
            ),
            (
                Bounded::Manifest,
                "larger than 4 MiB, the most fetch reads of a manifest, index or tag list \
                 (registries take none larger)",
            ),
            (
                Bounded::Provenance,
                "larger than 1 MiB, the most fetch downloads of a provenance file",
            ),
        ] {
            assert_eq!(bound.exceeded(), says);
        }
    }

    #[test]
    fn a_sources_words_are_quoted_on_one_line_and_bounded() {
        assert_eq!(quoted("  not found\r\n"), "not found");
        assert_eq!(quoted("a\nb"), "a b");
        let long = "é".repeat(QUOTED + 1);
        let shown = quoted(&long);
        assert_eq!(shown.chars().count(), QUOTED + " [...]".len());
        assert!(shown.ends_with(" [...]"));
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
