//! TLS for `chartreg serve`: the certificate and key files (PEM, as cert-manager writes them:
//! `tls.crt` with the chain, `tls.key` in PKCS#8, PKCS#1 or SEC1), a rustls server
//! configuration (TLS 1.2 and 1.3, ALPN h2 and http/1.1 added by actix), and hot reload.
//!
//! Reload: the kubelet updates a mounted secret by pointing a `..data` symlink at a new folder,
//! so the files are re-read by path (following the links) every `interval`, not watched by
//! inode. When their bytes change, the new pair is parsed and its key checked against the
//! certificate; only a good pair replaces the one in use, so a half-written or mismatched
//! update is logged (once) and the old pair keeps serving. New handshakes ask the
//! [`Reloading`] resolver, so new connections get the new certificate and open ones are not
//! disturbed.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::thread;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Where the certificate chain and the private key are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no PEM certificate found", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{}: invalid PEM certificate: {source}", path.display())]
    Certificate {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{}: no PEM private key (PKCS#8, PKCS#1 or SEC1) found: {source}", path.display())]
    Key {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{} and {} do not make a pair: {}", cert.display(), key.display(), why_not_a_pair(source))]
    Pair {
        cert: PathBuf,
        key: PathBuf,
        source: rustls::Error,
    },
    #[error("TLS configuration: {0}")]
    Config(#[source] rustls::Error),
}

/// Why a certificate and a key do not make a pair, in words a person acts on.
fn why_not_a_pair(error: &rustls::Error) -> String {
    match error {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
            "the private key does not belong to the certificate".to_owned()
        }
        other => other.to_string(),
    }
}

/// The crypto chartreg uses: ring's, named explicitly so that no other provider compiled into
/// the same program (tests link aws-lc through their HTTP client) changes it.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Parses and checks a certificate chain and key from their PEM bytes.
fn certified_key(
    files: &TlsFiles,
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Certificate {
            path: files.cert.clone(),
            source,
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: files.cert.clone(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|source| TlsError::Key {
        path: files.key.clone(),
        source,
    })?;
    let pair_error = |source| TlsError::Pair {
        cert: files.cert.clone(),
        key: files.key.clone(),
        source,
    };
    let certified = CertifiedKey::from_der(chain, key, &provider()).map_err(pair_error)?;
    // `from_der` lets "cannot tell" pass; chartreg wants a definite match.
    certified.keys_match().map_err(pair_error)?;
    Ok(certified)
}

/// The bytes last read from the two files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Seen {
    cert: Vec<u8>,
    key: Vec<u8>,
}

fn read_both(files: &TlsFiles) -> Result<Seen, TlsError> {
    Ok(Seen {
        cert: read(&files.cert)?,
        key: read(&files.key)?,
    })
}

/// The certificate resolver: always answers with the last good pair.
pub struct Reloading {
    files: TlsFiles,
    current: RwLock<Arc<CertifiedKey>>,
    /// The bytes of the pair in use, and the last problem reported (each is reported once).
    seen: Mutex<(Seen, Option<Problem>)>,
}

/// A reload that did not happen: unreadable files, or a bad pair (with its bytes, so that it
/// is not parsed again until the files change).
#[derive(Debug, PartialEq, Eq)]
enum Problem {
    Unreadable(String),
    BadPair(Seen),
}

impl fmt::Debug for Reloading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reloading")
            .field("files", &self.files)
            .finish()
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

impl Reloading {
    /// Loads the pair once; errors here stop start-up.
    pub fn load(files: TlsFiles) -> Result<Arc<Reloading>, TlsError> {
        let seen = read_both(&files)?;
        let key = certified_key(&files, &seen.cert, &seen.key)?;
        Ok(Arc::new(Reloading {
            files,
            current: RwLock::new(Arc::new(key)),
            seen: Mutex::new((seen, None)),
        }))
    }

    /// The pair new handshakes get.
    pub fn current(&self) -> Arc<CertifiedKey> {
        match self.current.read() {
            Ok(current) => current.clone(),
            // Writers only swap an Arc: a poisoned lock still holds a valid pair.
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Re-reads the files and installs the pair when their bytes changed and they are good.
    /// Returns whether a new pair was installed. A problem (unreadable files, a bad pair) is
    /// logged once, not at every poll, until it changes.
    pub fn refresh(&self) -> bool {
        let mut seen = match self.seen.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (last, reported) = &mut *seen;
        let report = |reported: &mut Option<Problem>, problem: Problem, message: String| {
            if reported.as_ref() != Some(&problem) {
                log::warn!("TLS reload: {message}; still serving the previous certificate");
                *reported = Some(problem);
            }
        };
        let read = match read_both(&self.files) {
            Ok(read) => read,
            Err(e) => {
                report(reported, Problem::Unreadable(e.to_string()), e.to_string());
                return false;
            }
        };
        if read == *last {
            *reported = None;
            return false;
        }
        if *reported == Some(Problem::BadPair(read.clone())) {
            return false;
        }
        match certified_key(&self.files, &read.cert, &read.key) {
            Ok(key) => {
                match self.current.write() {
                    Ok(mut current) => *current = Arc::new(key),
                    Err(poisoned) => *poisoned.into_inner() = Arc::new(key),
                }
                *last = read;
                *reported = None;
                log::info!(
                    "TLS reload: now serving the certificate in {}",
                    self.files.cert.display()
                );
                true
            }
            Err(e) => {
                report(reported, Problem::BadPair(read), e.to_string());
                false
            }
        }
    }

    /// Polls the files every `interval` for as long as the process runs.
    pub fn watch(self: &Arc<Self>, interval: Duration) {
        let resolver = Arc::clone(self);
        let spawned = thread::Builder::new()
            .name("tls-reload".into())
            .spawn(move || {
                loop {
                    thread::sleep(interval);
                    resolver.refresh();
                }
            });
        if let Err(e) = spawned {
            log::error!("TLS reload is off: cannot start its thread: {e}");
        }
    }
}

/// A rustls server configuration (TLS 1.2 and 1.3) answering with `resolver`'s pair.
pub fn server_config(resolver: Arc<Reloading>) -> Result<ServerConfig, TlsError> {
    Ok(ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_cert_resolver(resolver))
}
