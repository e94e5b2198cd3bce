//! TLS of `chartreg serve`, against the binary: Helm 3.17 and 4.3 pull over HTTPS with
//! `--ca-file` (and fail without it); keys in PKCS#8, PKCS#1 and SEC1 and a certificate file
//! with a chain are served; TLS 1.3 and 1.2, ALPN h2 and http/1.1; start-up fails (before
//! listening) on every kind of bad file; a rotated Kubernetes secret (`..data` symlink swap) is
//! picked up without a failed connection, and a bad new pair is ignored with a warning; plain
//! HTTP sent to the HTTPS port gets a 400 saying so (Helm 3 and 4, curl); handshakes that fail
//! are counted by reason in `/metrics`, within one 3 s bound; the page's commands name the CA
//! file; the binary links no OpenSSL.
//!
//! Every certificate is made by the test (rcgen, plus the `openssl` CLI for the key formats
//! rcgen does not write), in its own temporary folder; every test runs its own chartreg.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;
mod files;
mod handshakes;
mod helm;
mod pages;
mod plain;
mod reload;
mod startup;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{Process, assert_same_bytes, describe, root};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rstest::rstest;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, ProtocolVersion, RootCertStore, StreamOwned};

/// The name every server certificate is made for (and Helm reaches the server by).
const NAME: &str = "chartreg.test";

// ---------------------------------------------------------------------------------------------
// Certificates
// ---------------------------------------------------------------------------------------------

/// A certificate authority made for one test.
struct Ca {
    cert: rcgen::Certificate,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn params(name: &str) -> CertificateParams {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.use_authority_key_identifier_extension = true;
        params
    }

    /// A self-signed root.
    fn root(name: &str) -> Ca {
        let params = Ca::params(name);
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("self-signed CA");
        Ca {
            cert,
            issuer: Issuer::new(params, key),
        }
    }

    /// An intermediate CA signed by this one.
    fn intermediate(&self, name: &str) -> Ca {
        let params = Ca::params(name);
        let key = KeyPair::generate().expect("intermediate CA key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("intermediate CA");
        Ca {
            cert,
            issuer: Issuer::new(params, key),
        }
    }

    fn pem(&self) -> String {
        self.cert.pem()
    }

    fn der(&self) -> CertificateDer<'static> {
        self.cert.der().clone()
    }

    /// A server certificate for [`NAME`] holding `key`'s public key.
    fn leaf_for(&self, key: &KeyPair) -> rcgen::Certificate {
        let mut params = CertificateParams::new(vec![NAME.to_owned()]).expect("leaf parameters");
        params.distinguished_name.push(DnType::CommonName, NAME);
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params
            .signed_by(key, &self.issuer)
            .expect("leaf certificate")
    }

    /// A new key (ECDSA P-256, PKCS#8) and a server certificate for it.
    fn pair(&self) -> Pair {
        let key = KeyPair::generate().expect("leaf key");
        let cert = self.leaf_for(&key);
        Pair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            leaf: cert.der().clone(),
        }
    }
}

/// The two files of a server: `cert_pem` (the chain, leaf first) and `key_pem`.
#[derive(Clone)]
struct Pair {
    cert_pem: String,
    key_pem: String,
    /// The leaf certificate, as a client sees it.
    leaf: CertificateDer<'static>,
}

impl Pair {
    /// Writes `tls.crt` and `tls.key` into `dir`; returns their paths.
    fn write(&self, dir: &Path) -> (PathBuf, PathBuf) {
        std::fs::create_dir_all(dir).expect("create folder");
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        write(&cert, &self.cert_pem);
        write(&key, &self.key_pem);
        (cert, key)
    }
}

fn write(path: &Path, data: impl AsRef<[u8]>) {
    std::fs::write(path, data).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn str_path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// Runs `openssl ARGS` and returns its stdout, failing the test unless it succeeds.
fn openssl(openssl: &Path, args: &[&str]) -> String {
    let out = common::output_of(Command::new(openssl).args(args), "openssl");
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        describe(&out)
    );
    String::from_utf8(out.stdout).expect("PEM is text")
}

// ---------------------------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------------------------

/// chartreg serving HTTPS with the two files given through the environment, plus `args`.
fn serve(cert: &Path, key: &Path, args: &[&str]) -> Process {
    let server = Process::start_args(
        &common::chartreg_bin(),
        args,
        &[
            ("CHARTREG_TLS_CERT_FILE", str_path(cert)),
            ("CHARTREG_TLS_PRIVATE_KEY_FILE", str_path(key)),
        ],
    );
    assert!(
        server
            .log()
            .contains(&format!("on https://{}", server.addr)),
        "the summary line should name the HTTPS address:\n{}",
        server.log()
    );
    server
}

/// chartreg serving HTTPS with a pair a new CA (`ca_name`) issued for [`NAME`], as a client
/// with a CA file sees it; everything in `dir`.
struct Trusted {
    server: Process,
    /// The CA's certificate, PEM (`ca.crt`), for `--cacert`, `--ca-file`, `-CAfile`.
    ca_file: PathBuf,
}

impl Trusted {
    fn start(dir: &Path, ca_name: &str) -> Trusted {
        let ca = Ca::root(ca_name);
        let (cert, key) = ca.pair().write(&dir.join("secret"));
        let ca_file = dir.join("ca.crt");
        write(&ca_file, ca.pem());
        Trusted {
            server: serve(&cert, &key, &[]),
            ca_file,
        }
    }

    /// curl's `--resolve` value that sends [`NAME`] at the server's port to loopback.
    fn resolve(&self) -> String {
        format!("{NAME}:{}:127.0.0.1", self.server.addr.port())
    }
}

// ---------------------------------------------------------------------------------------------
// A rustls client (ring), one TLS connection at a time
// ---------------------------------------------------------------------------------------------

const TLS13: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];
const TLS12: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS12];
const BOTH: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];
const HTTP1: &[&[u8]] = &[b"http/1.1"];
const H2_AND_HTTP1: &[&[u8]] = &[b"h2", b"http/1.1"];

/// A client trusting `roots` only, speaking `versions`, offering `alpn`. It resumes no
/// sessions: every connection is a full handshake in which the server presents its current
/// certificate, as for a new Helm process (a resumed session would report the certificate of
/// the session it resumes).
fn client(
    roots: &[CertificateDer<'static>],
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Arc<ClientConfig> {
    let mut store = RootCertStore::empty();
    for root in roots {
        store.add(root.clone()).expect("a usable trust anchor");
    }
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(versions)
            .expect("protocol versions")
            .with_root_certificates(store)
            .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.resumption = rustls::client::Resumption::disabled();
    Arc::new(config)
}

/// Why a TLS connection, or a check on it, failed.
#[derive(Debug)]
enum TlsFailure {
    Connect(SocketAddr, std::io::Error),
    Timeouts(std::io::Error),
    Client(rustls::Error),
    Handshake(std::io::Error),
    /// An exchange that failed, and which step.
    Io(&'static str, std::io::Error),
    ClosedBeforeHead(Vec<u8>),
    NoStatus(String),
    NoLength(String),
    ClosedInBody(String),
    V2 {
        status: u16,
        body: Vec<u8>,
    },
    NotSettings([u8; 9]),
}

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsFailure::Connect(addr, e) => write!(f, "connect to {addr}: {e}"),
            TlsFailure::Timeouts(e) => write!(f, "{e}"),
            TlsFailure::Client(e) => write!(f, "{e}"),
            TlsFailure::Handshake(e) => write!(f, "TLS handshake: {e}"),
            TlsFailure::Io(step, e) => write!(f, "{step}: {e}"),
            TlsFailure::ClosedBeforeHead(buf) => write!(
                f,
                "connection closed before a response head: {:?}",
                String::from_utf8_lossy(buf)
            ),
            TlsFailure::NoStatus(head) => write!(f, "no HTTP/1.1 status line: {head:?}"),
            TlsFailure::NoLength(head) => write!(f, "no Content-Length: {head:?}"),
            TlsFailure::ClosedInBody(head) => {
                write!(f, "connection closed in the body: {head:?}")
            }
            TlsFailure::V2 { status, body } => {
                write!(f, "GET /v2/: {status} {:?}", String::from_utf8_lossy(body))
            }
            TlsFailure::NotSettings(frame) => {
                write!(f, "first HTTP/2 frame is not SETTINGS: {frame:?}")
            }
        }
    }
}

/// One TLS connection to chartreg, handshake done.
struct Tls {
    stream: StreamOwned<ClientConnection, TcpStream>,
}

impl Tls {
    /// A new TCP connection and a full handshake for [`NAME`].
    fn connect(addr: SocketAddr, config: &Arc<ClientConfig>) -> Result<Tls, TlsFailure> {
        let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .map_err(|e| TlsFailure::Connect(addr, e))?;
        sock.set_read_timeout(Some(Duration::from_secs(5)))
            .and_then(|()| sock.set_write_timeout(Some(Duration::from_secs(5))))
            .map_err(TlsFailure::Timeouts)?;
        let name = ServerName::try_from(NAME).expect("a DNS name");
        let mut conn = ClientConnection::new(config.clone(), name).map_err(TlsFailure::Client)?;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).map_err(TlsFailure::Handshake)?;
        }
        Ok(Tls {
            stream: StreamOwned::new(conn, sock),
        })
    }

    fn version(&self) -> Option<ProtocolVersion> {
        self.stream.conn.protocol_version()
    }

    fn alpn(&self) -> Option<String> {
        self.stream
            .conn
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned())
    }

    /// The certificates the server sent, leaf first.
    fn chain(&self) -> Vec<CertificateDer<'static>> {
        self.stream
            .conn
            .peer_certificates()
            .unwrap_or_default()
            .iter()
            .map(|c| c.clone().into_owned())
            .collect()
    }

    fn leaf(&self) -> CertificateDer<'static> {
        self.chain()
            .into_iter()
            .next()
            .expect("the server sent a certificate")
    }

    /// `GET /v2/` over HTTP/1.1 on this connection (kept open): the status and body.
    fn get_v2(&mut self) -> Result<(u16, Vec<u8>), TlsFailure> {
        let request =
            format!("GET /v2/ HTTP/1.1\r\nHost: {NAME}\r\nUser-Agent: chartreg-tls-test\r\n\r\n");
        self.stream
            .write_all(request.as_bytes())
            .and_then(|()| self.stream.flush())
            .map_err(|e| TlsFailure::Io("send request", e))?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let n = self
                .stream
                .read(&mut chunk)
                .map_err(|e| TlsFailure::Io("read response head", e))?;
            if n == 0 {
                return Err(TlsFailure::ClosedBeforeHead(buf));
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.strip_prefix("HTTP/1.1 "))
            .and_then(|l| l.get(..3))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| TlsFailure::NoStatus(head.clone()))?;
        let length: usize = lines
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .ok_or_else(|| TlsFailure::NoLength(head.clone()))?;
        let mut body = buf[head_end..].to_vec();
        while body.len() < length {
            let n = self
                .stream
                .read(&mut chunk)
                .map_err(|e| TlsFailure::Io("read response body", e))?;
            if n == 0 {
                return Err(TlsFailure::ClosedInBody(head));
            }
            body.extend_from_slice(&chunk[..n]);
        }
        Ok((status, body))
    }

    /// `GET /v2/` answers 200 `{}`.
    fn check_v2(&mut self) -> Result<(), TlsFailure> {
        match self.get_v2()? {
            (200, body) if body == b"{}" => Ok(()),
            (status, body) => Err(TlsFailure::V2 { status, body }),
        }
    }

    /// Sends the HTTP/2 connection preface with an empty SETTINGS frame; the server's first
    /// frame must be its SETTINGS (type 4).
    fn check_h2(&mut self) -> Result<(), TlsFailure> {
        let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        preface.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        self.stream
            .write_all(&preface)
            .and_then(|()| self.stream.flush())
            .map_err(|e| TlsFailure::Io("send HTTP/2 preface", e))?;
        let mut frame = [0u8; 9];
        self.stream
            .read_exact(&mut frame)
            .map_err(|e| TlsFailure::Io("read the server's first HTTP/2 frame", e))?;
        if frame[3] == 4 {
            Ok(())
        } else {
            Err(TlsFailure::NotSettings(frame))
        }
    }
}

/// A new connection, `GET /v2/` checked; the leaf certificate the server presented.
fn fetch(
    addr: SocketAddr,
    config: &Arc<ClientConfig>,
) -> Result<CertificateDer<'static>, TlsFailure> {
    let mut tls = Tls::connect(addr, config)?;
    tls.check_v2()?;
    Ok(tls.leaf())
}
