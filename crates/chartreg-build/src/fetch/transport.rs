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
//! - Timeouts, connection failures and 5xx answers are retried (4 tries, 0.5 s doubling between
//!   them); 404, 401 and 403 are not.

use std::future::Future;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
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
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| Problem::Invalid(format!("--ca-file: {e}")))?;
            builder = builder.tls_certs_merge(certs);
        }
        builder
            .build()
            .map_err(|e| Problem::Invalid(format!("cannot set up HTTPS: {e}")))
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

/// What a request's failure is: transient (retry) or final.
pub fn classify_http(e: &reqwest::Error) -> Failure {
    if let Some(status) = e.status() {
        return status_failure(status.as_u16(), e.to_string());
    }
    let text = error_chain(e);
    if text.contains("certificate") || text.contains("tls") || text.contains("TLS") {
        return Failure::Final(Problem::Tls(text));
    }
    Failure::Transient(Problem::Network(text))
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

/// A file being downloaded: written beside its target, renamed into place once checked.
pub struct Partial {
    temp: PathBuf,
    target: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    hasher: Sha256,
    size: u64,
}

impl Partial {
    pub fn create(target: &Path) -> Result<Partial, Problem> {
        let dir = target.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Problem::Io(format!("{}: {e}", dir.display())))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = dir.join(format!(".{name}.part-{}", std::process::id()));
        let file = std::fs::File::create(&temp)
            .map_err(|e| Problem::Io(format!("{}: {e}", temp.display())))?;
        Ok(Partial {
            temp,
            target: target.to_owned(),
            file: std::io::BufWriter::new(file),
            hasher: Sha256::new(),
            size: 0,
        })
    }

    pub fn write(&mut self, chunk: &[u8]) -> Result<(), Problem> {
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        self.file
            .write_all(chunk)
            .map_err(|e| Problem::Io(format!("{}: {e}", self.temp.display())))
    }

    /// Checks the bytes against `expected` (a sha256) and renames them into place; returns
    /// their size and sha256. On a mismatch the file is removed and nothing is replaced.
    pub fn finish(mut self, expected: Option<[u8; 32]>) -> Result<(u64, [u8; 32]), Problem> {
        let flushed = self.file.flush();
        let actual: [u8; 32] = std::mem::take(&mut self.hasher).finalize().into();
        if let Err(e) = flushed {
            return Err(Problem::Io(format!("{}: {e}", self.temp.display())));
        }
        if let Some(expected) = expected
            && expected != actual
        {
            return Err(Problem::DigestMismatch {
                expected: hex::encode(expected),
                actual: hex::encode(actual),
            });
        }
        std::fs::rename(&self.temp, &self.target)
            .map_err(|e| Problem::Io(format!("{}: {e}", self.target.display())))?;
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
        let mut partial = Partial::create(&target).unwrap();
        partial.write(b"new").unwrap();
        let e = partial.finish(Some([0; 32])).unwrap_err();
        assert!(matches!(e, Problem::DigestMismatch { .. }), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        let mut partial = Partial::create(&target).unwrap();
        partial.write(b"new").unwrap();
        drop(partial);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
    }
}
