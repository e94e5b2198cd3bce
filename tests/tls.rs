//! TLS of `chartreg serve`, against the binary: Helm 3.17 and 4.3 pull over HTTPS with
//! `--ca-file` (and fail without it); keys in PKCS#8, PKCS#1 and SEC1 and a certificate file
//! with a chain are served; TLS 1.3 and 1.2, ALPN h2 and http/1.1; start-up fails (before
//! listening) on every kind of bad file; a rotated Kubernetes secret (`..data` symlink swap) is
//! picked up without a failed connection, and a bad new pair is ignored with a warning; the
//! binary links no OpenSSL.
//!
//! Every certificate is made by the test (rcgen, plus the `openssl` CLI for the key formats
//! rcgen does not write), in its own temporary folder; every test runs its own chartreg.

mod common;

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

/// One TLS connection to chartreg, handshake done.
struct Tls {
    stream: StreamOwned<ClientConnection, TcpStream>,
}

impl Tls {
    /// A new TCP connection and a full handshake for [`NAME`].
    fn connect(addr: SocketAddr, config: &Arc<ClientConfig>) -> Result<Tls, String> {
        let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .map_err(|e| format!("connect to {addr}: {e}"))?;
        sock.set_read_timeout(Some(Duration::from_secs(5)))
            .and_then(|()| sock.set_write_timeout(Some(Duration::from_secs(5))))
            .map_err(|e| e.to_string())?;
        let name = ServerName::try_from(NAME).expect("a DNS name");
        let mut conn = ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock)
                .map_err(|e| format!("TLS handshake: {e}"))?;
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
    fn get_v2(&mut self) -> Result<(u16, Vec<u8>), String> {
        let request =
            format!("GET /v2/ HTTP/1.1\r\nHost: {NAME}\r\nUser-Agent: chartreg-tls-test\r\n\r\n");
        self.stream
            .write_all(request.as_bytes())
            .and_then(|()| self.stream.flush())
            .map_err(|e| format!("send request: {e}"))?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let n = self
                .stream
                .read(&mut chunk)
                .map_err(|e| format!("read response head: {e}"))?;
            if n == 0 {
                return Err(format!(
                    "connection closed before a response head: {:?}",
                    String::from_utf8_lossy(&buf)
                ));
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
            .ok_or_else(|| format!("no HTTP/1.1 status line: {head:?}"))?;
        let length: usize = lines
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .ok_or_else(|| format!("no Content-Length: {head:?}"))?;
        let mut body = buf[head_end..].to_vec();
        while body.len() < length {
            let n = self
                .stream
                .read(&mut chunk)
                .map_err(|e| format!("read response body: {e}"))?;
            if n == 0 {
                return Err(format!("connection closed in the body: {head:?}"));
            }
            body.extend_from_slice(&chunk[..n]);
        }
        Ok((status, body))
    }

    /// `GET /v2/` answers 200 `{}`.
    fn check_v2(&mut self) -> Result<(), String> {
        match self.get_v2()? {
            (200, body) if body == b"{}" => Ok(()),
            (status, body) => Err(format!(
                "GET /v2/: {status} {:?}",
                String::from_utf8_lossy(&body)
            )),
        }
    }

    /// Sends the HTTP/2 connection preface with an empty SETTINGS frame; the server's first
    /// frame must be its SETTINGS (type 4).
    fn check_h2(&mut self) -> Result<(), String> {
        let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        preface.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        self.stream
            .write_all(&preface)
            .and_then(|()| self.stream.flush())
            .map_err(|e| format!("send HTTP/2 preface: {e}"))?;
        let mut frame = [0u8; 9];
        self.stream
            .read_exact(&mut frame)
            .map_err(|e| format!("read the server's first HTTP/2 frame: {e}"))?;
        if frame[3] == 4 {
            Ok(())
        } else {
            Err(format!("first HTTP/2 frame is not SETTINGS: {frame:?}"))
        }
    }
}

/// A new connection, `GET /v2/` checked; the leaf certificate the server presented.
fn fetch(addr: SocketAddr, config: &Arc<ClientConfig>) -> Result<CertificateDer<'static>, String> {
    let mut tls = Tls::connect(addr, config)?;
    tls.check_v2()?;
    Ok(tls.leaf())
}

// ---------------------------------------------------------------------------------------------
// 1. Helm over HTTPS
// ---------------------------------------------------------------------------------------------

/// Runs Helm with private home folders, in a private mount namespace whose `/etc/hosts` is
/// `hosts` (so that [`NAME`] is 127.0.0.1 for Helm only).
fn helm_with_hosts(
    unshare: &Path,
    helm: &Path,
    hosts: &Path,
    home: &Path,
    args: &[&str],
) -> Output {
    let mut cmd = Command::new(unshare);
    cmd.args([
        "-m",
        "sh",
        "-c",
        r#"mount --bind "$0" /etc/hosts && exec "$@""#,
    ])
    .arg(hosts)
    .arg(helm)
    .args(args);
    common::isolate_helm(&mut cmd, home);
    common::output_of(&mut cmd, "helm in a mount namespace")
}

/// `helm pull oci://chartreg.test:PORT/charts/hello --version 1.0.0 --ca-file CA` gets the
/// committed package byte for byte; without `--ca-file` the same pull fails on the
/// certificate and writes nothing.
#[rstest]
fn helm_pulls_over_https_with_its_ca_file(#[values("helm3", "helm4")] helm: &str) {
    let Some(helm_bin) = common::tool(helm) else {
        return;
    };
    let (Some(unshare), Some(_mount)) = (common::tool("unshare"), common::tool("mount")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::root("chartreg test CA");
    let (cert, key) = ca.pair().write(dir.path());
    let ca_file = dir.path().join("ca.crt");
    write(&ca_file, ca.pem());
    let hosts = dir.path().join("hosts");
    write(
        &hosts,
        format!(
            "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.0.0.1 {NAME}\n"
        ),
    );
    let server = serve(&cert, &key, &[]);
    let reference = format!("oci://{NAME}:{}/charts/hello", server.addr.port());
    let package = root().join("charts/hello-1.0.0.tgz");

    let home = tempfile::tempdir().expect("temp dir");
    let out_dir = tempfile::tempdir().expect("temp dir");
    let args = [
        "pull",
        reference.as_str(),
        "--version",
        "1.0.0",
        "--ca-file",
        str_path(&ca_file),
        "-d",
        str_path(out_dir.path()),
    ];
    let out = helm_with_hosts(&unshare, &helm_bin, &hosts, home.path(), &args);
    let context = format!("{helm} {}", args.join(" "));
    assert!(out.status.success(), "{context}: {}", describe(&out));
    assert_eq!(
        common::file_names(out_dir.path()),
        ["hello-1.0.0.tgz"],
        "{context}: files written"
    );
    assert_same_bytes(
        &common::read(&out_dir.path().join("hello-1.0.0.tgz")),
        &package,
        &context,
    );

    let home = tempfile::tempdir().expect("temp dir");
    let out_dir = tempfile::tempdir().expect("temp dir");
    let args = [
        "pull",
        reference.as_str(),
        "--version",
        "1.0.0",
        "-d",
        str_path(out_dir.path()),
    ];
    let out = helm_with_hosts(&unshare, &helm_bin, &hosts, home.path(), &args);
    let context = format!("{helm} {}", args.join(" "));
    assert!(
        !out.status.success(),
        "{context}: should fail without the CA: {}",
        describe(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("certificate signed by unknown authority"),
        "{context}: should fail on the certificate: {}",
        describe(&out)
    );
    assert_eq!(
        common::file_names(out_dir.path()),
        Vec::<String>::new(),
        "{context}: a failed pull wrote files"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Key formats, chains, protocol versions, ALPN
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum KeyFormat {
    /// rcgen's own: ECDSA P-256 in PKCS#8 (`BEGIN PRIVATE KEY`).
    Pkcs8Ecdsa,
    /// Ed25519 in PKCS#8.
    Pkcs8Ed25519,
    /// RSA 2048 in PKCS#8, from `openssl genpkey`.
    Pkcs8Rsa,
    /// The same kind of RSA key in PKCS#1 (`BEGIN RSA PRIVATE KEY`), via `openssl pkey
    /// -traditional`.
    Pkcs1Rsa,
    /// ECDSA P-256 in SEC1 (`BEGIN EC PRIVATE KEY`), via `openssl ec`.
    Sec1Ec,
}

/// A pair whose key file is in `format`; `None` when openssl is needed and missing.
fn pair_with_key_format(ca: &Ca, format: KeyFormat, dir: &Path) -> Option<Pair> {
    let (key, key_pem, marker) = match format {
        KeyFormat::Pkcs8Ecdsa => {
            let key = KeyPair::generate().expect("P-256 key");
            let pem = key.serialize_pem();
            (key, pem, "-----BEGIN PRIVATE KEY-----")
        }
        KeyFormat::Pkcs8Ed25519 => {
            let key = KeyPair::generate_for(&rcgen::PKCS_ED25519).expect("Ed25519 key");
            let pem = key.serialize_pem();
            (key, pem, "-----BEGIN PRIVATE KEY-----")
        }
        KeyFormat::Pkcs8Rsa | KeyFormat::Pkcs1Rsa => {
            let bin = common::tool("openssl")?;
            let pkcs8 = openssl(
                &bin,
                &[
                    "genpkey",
                    "-algorithm",
                    "RSA",
                    "-pkeyopt",
                    "rsa_keygen_bits:2048",
                ],
            );
            let key = KeyPair::from_pem_and_sign_algo(&pkcs8, &rcgen::PKCS_RSA_SHA256)
                .expect("rcgen reads openssl's PKCS#8 RSA key");
            if let KeyFormat::Pkcs8Rsa = format {
                (key, pkcs8, "-----BEGIN PRIVATE KEY-----")
            } else {
                let path = dir.join("pkcs8.key");
                write(&path, &pkcs8);
                let pkcs1 = openssl(&bin, &["pkey", "-traditional", "-in", str_path(&path)]);
                (key, pkcs1, "-----BEGIN RSA PRIVATE KEY-----")
            }
        }
        KeyFormat::Sec1Ec => {
            let bin = common::tool("openssl")?;
            let key = KeyPair::generate().expect("P-256 key");
            let path = dir.join("pkcs8.key");
            write(&path, key.serialize_pem());
            let sec1 = openssl(&bin, &["ec", "-in", str_path(&path)]);
            (key, sec1, "-----BEGIN EC PRIVATE KEY-----")
        }
    };
    assert!(
        key_pem.starts_with(marker),
        "{format:?}: the key file should start with {marker}:\n{key_pem}"
    );
    let cert = ca.leaf_for(&key);
    Some(Pair {
        cert_pem: cert.pem(),
        key_pem,
        leaf: cert.der().clone(),
    })
}

/// The server starts with a key in each format chartreg reads and serves it: TLS 1.3 and
/// TLS 1.2 each give `GET /v2/` -> `{}` with the test's certificate; ALPN picks h2 when the
/// client offers h2 and http/1.1 (and the server then speaks HTTP/2), http/1.1 when only
/// that is offered.
#[rstest]
#[case::pkcs8_ecdsa(KeyFormat::Pkcs8Ecdsa)]
#[case::pkcs8_ed25519(KeyFormat::Pkcs8Ed25519)]
#[case::pkcs8_rsa(KeyFormat::Pkcs8Rsa)]
#[case::pkcs1_rsa(KeyFormat::Pkcs1Rsa)]
#[case::sec1_ec(KeyFormat::Sec1Ec)]
fn serves_keys_in_every_pem_format(#[case] format: KeyFormat) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::root("chartreg test CA");
    let Some(pair) = pair_with_key_format(&ca, format, dir.path()) else {
        return;
    };
    let (cert, key) = pair.write(&dir.path().join("secret"));
    let server = serve(&cert, &key, &[]);
    let roots = [ca.der()];

    for (versions, want) in [
        (TLS13, ProtocolVersion::TLSv1_3),
        (TLS12, ProtocolVersion::TLSv1_2),
    ] {
        let context = format!("{format:?}, {want:?}");
        let mut tls = Tls::connect(server.addr, &client(&roots, versions, HTTP1))
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(tls.version(), Some(want), "{context}: protocol version");
        assert_eq!(
            tls.alpn().as_deref(),
            Some("http/1.1"),
            "{context}: ALPN with only http/1.1 offered"
        );
        assert_eq!(tls.leaf(), pair.leaf, "{context}: the leaf certificate");
        tls.check_v2().unwrap_or_else(|e| panic!("{context}: {e}"));
        // Kept alive: a second request on the same connection.
        tls.check_v2()
            .unwrap_or_else(|e| panic!("{context}, second request: {e}"));

        let mut tls = Tls::connect(server.addr, &client(&roots, versions, H2_AND_HTTP1))
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(tls.version(), Some(want), "{context}: protocol version");
        assert_eq!(
            tls.alpn().as_deref(),
            Some("h2"),
            "{context}: ALPN with h2 and http/1.1 offered"
        );
        tls.check_h2()
            .unwrap_or_else(|e| panic!("{context}, ALPN h2: {e}"));

        // No ALPN at all: HTTP/1.1.
        let mut tls = Tls::connect(server.addr, &client(&roots, versions, &[]))
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(tls.alpn(), None, "{context}: no ALPN offered");
        tls.check_v2()
            .unwrap_or_else(|e| panic!("{context}, no ALPN: {e}"));
    }
}

/// A certificate file holding the chain (leaf, then the intermediate CA that signed it) is
/// sent whole: a client trusting only the root verifies it.
#[test]
fn serves_the_whole_chain_of_the_certificate_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root_ca = Ca::root("chartreg test root CA");
    let intermediate = root_ca.intermediate("chartreg test intermediate CA");
    let mut pair = intermediate.pair();
    pair.cert_pem.push_str(&intermediate.pem());
    let (cert, key) = pair.write(dir.path());
    let server = serve(&cert, &key, &[]);

    for versions in [TLS13, TLS12] {
        let mut tls = Tls::connect(server.addr, &client(&[root_ca.der()], versions, HTTP1))
            .unwrap_or_else(|e| panic!("{versions:?}: {e}"));
        assert_eq!(
            tls.chain(),
            [pair.leaf.clone(), intermediate.der()],
            "{versions:?}: the chain sent, leaf first"
        );
        tls.check_v2()
            .unwrap_or_else(|e| panic!("{versions:?}: {e}"));
    }
    // Trusting only the intermediate works too; trusting another root does not.
    fetch(server.addr, &client(&[intermediate.der()], BOTH, HTTP1))
        .expect("a client trusting the intermediate");
    let other = Ca::root("another CA");
    let refused = fetch(server.addr, &client(&[other.der()], BOTH, HTTP1));
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("certificate")),
        "a client trusting another CA should refuse the server: {refused:?}"
    );
}

/// curl (OpenSSL, nghttp2) with `--http2` gets `{}` over HTTP/2, with `--http1.1` over
/// HTTP/1.1, and refuses the server without `--cacert`.
#[test]
fn curl_speaks_http2_and_http1_over_tls() {
    let Some(curl) = common::tool("curl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::root("chartreg test CA");
    let (cert, key) = ca.pair().write(&dir.path().join("secret"));
    let ca_file = dir.path().join("ca.crt");
    write(&ca_file, ca.pem());
    let server = serve(&cert, &key, &[]);
    let port = server.addr.port();
    let url = format!("https://{NAME}:{port}/v2/");
    let resolve = format!("{NAME}:{port}:127.0.0.1");

    let run = |extra: &[&str]| {
        let body = dir.path().join("body");
        let _ = std::fs::remove_file(&body);
        let out = common::output_of(
            Command::new(&curl)
                .args(["--silent", "--show-error", "--max-time", "30"])
                .args(["--resolve", &resolve, "--output"])
                .arg(&body)
                .args(["--write-out", "%{http_code} %{http_version}"])
                .args(extra)
                .arg(&url),
            "curl",
        );
        let body = std::fs::read(&body).unwrap_or_default();
        (out, body)
    };

    for (flag, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
        let (out, body) = run(&[flag, "--cacert", str_path(&ca_file)]);
        assert!(out.status.success(), "curl {flag}: {}", describe(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("200 {version}"),
            "curl {flag}: status and HTTP version"
        );
        assert_eq!(body, b"{}", "curl {flag}: body");
    }

    let (out, _) = run(&["--http2"]);
    // 60: the peer certificate cannot be authenticated with the known CA certificates.
    assert_eq!(
        out.status.code(),
        Some(60),
        "curl without --cacert should refuse the certificate: {}",
        describe(&out)
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Start-up failures
// ---------------------------------------------------------------------------------------------

/// Runs `chartreg serve --listen ADDR ARGS` with `env` on a loopback address this test holds
/// (so that a server which bound before checking its files would fail with "cannot listen"
/// instead), requires it to exit by itself within 10 s, and returns its exit code and stderr.
fn start_up(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let held = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = held.local_addr().expect("bound address").to_string();
    let mut child = Command::new(common::chartreg_bin())
        .args(["serve", "--listen", &addr])
        .args(args)
        .env_remove("CHARTREG_TLS_CERT_FILE")
        .env_remove("CHARTREG_TLS_PRIVATE_KEY_FILE")
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chartreg starts");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll chartreg") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chartreg {args:?} {env:?} did not exit within 10 s:\n{}",
                reader.join().unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.join().expect("stderr reader");
    assert!(
        !stderr.contains("cannot listen") && !stderr.contains(" on https://"),
        "chartreg {args:?} {env:?} went as far as listening: {stderr}"
    );
    drop(held);
    (status.code(), stderr)
}

#[derive(Debug, Clone, Copy)]
enum Broken {
    CertMissing,
    KeyMissing,
    /// Text that is no PEM at all.
    CertNotPem,
    /// The certificate in DER (binary), not PEM.
    CertDer,
    /// The key file holds only the certificate.
    KeyFileHoldsNoKey,
    KeyFileEmpty,
    /// The key of another pair.
    KeyDoesNotMatch,
}

/// Each kind of bad file stops start-up: exit code 1, `chartreg: ...` on stderr naming the
/// file and what is wrong with it, before anything listens.
#[rstest]
#[case::cert_file_missing(Broken::CertMissing)]
#[case::key_file_missing(Broken::KeyMissing)]
#[case::cert_file_not_pem(Broken::CertNotPem)]
#[case::cert_file_der(Broken::CertDer)]
#[case::key_file_holds_no_key(Broken::KeyFileHoldsNoKey)]
#[case::key_file_empty(Broken::KeyFileEmpty)]
#[case::key_does_not_match(Broken::KeyDoesNotMatch)]
fn start_up_fails_on_bad_tls_files(#[case] broken: Broken) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::root("chartreg test CA");
    let pair = ca.pair();
    let (mut cert, mut key) = pair.write(dir.path());
    let cert_s = |c: &Path| str_path(c).to_owned();
    let expected: Vec<String> = match broken {
        Broken::CertMissing => {
            cert = dir.path().join("missing.crt");
            vec![
                format!("cannot read {}", cert_s(&cert)),
                "No such file".into(),
            ]
        }
        Broken::KeyMissing => {
            key = dir.path().join("missing.key");
            vec![
                format!("cannot read {}", cert_s(&key)),
                "No such file".into(),
            ]
        }
        Broken::CertNotPem => {
            write(&cert, "this is not a certificate\n");
            vec![cert_s(&cert), "PEM certificate".into()]
        }
        Broken::CertDer => {
            write(&cert, pair.leaf.as_ref());
            vec![cert_s(&cert), "PEM certificate".into()]
        }
        Broken::KeyFileHoldsNoKey => {
            write(&key, &pair.cert_pem);
            vec![cert_s(&key), "no PEM private key".into()]
        }
        Broken::KeyFileEmpty => {
            write(&key, "");
            vec![cert_s(&key), "no PEM private key".into()]
        }
        Broken::KeyDoesNotMatch => {
            write(&key, KeyPair::generate().expect("key").serialize_pem());
            vec![cert_s(&cert), cert_s(&key), "do not make a pair".into()]
        }
    };
    let (code, stderr) = start_up(
        &[
            "--tls-cert-file",
            str_path(&cert),
            "--tls-private-key-file",
            str_path(&key),
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{broken:?}: exit code; stderr: {stderr}");
    assert!(
        stderr.starts_with("chartreg: ") || stderr.contains("\nchartreg: "),
        "{broken:?}: the error should be a `chartreg: ...` line: {stderr}"
    );
    for fragment in &expected {
        assert!(
            stderr.contains(fragment.as_str()),
            "{broken:?}: stderr should contain {fragment:?}: {stderr}"
        );
    }
}

/// One of the two files without the other is a usage error (exit code 2) naming the missing
/// one, whether given as a flag or through the environment.
#[test]
fn one_tls_file_without_the_other_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key) = Ca::root("chartreg test CA").pair().write(dir.path());
    let (cert, key) = (str_path(&cert), str_path(&key));
    /// A start missing one file: how, its arguments and environment, and the flag it lacks.
    struct Case<'a> {
        what: &'a str,
        args: &'a [&'a str],
        env: &'a [(&'a str, &'a str)],
        missing: &'a str,
    }
    let cases = [
        Case {
            what: "--tls-cert-file only",
            args: &["--tls-cert-file", cert],
            env: &[],
            missing: "--tls-private-key-file",
        },
        Case {
            what: "--tls-private-key-file only",
            args: &["--tls-private-key-file", key],
            env: &[],
            missing: "--tls-cert-file",
        },
        Case {
            what: "CHARTREG_TLS_CERT_FILE only",
            args: &[],
            env: &[("CHARTREG_TLS_CERT_FILE", cert)],
            missing: "--tls-private-key-file",
        },
        Case {
            what: "CHARTREG_TLS_PRIVATE_KEY_FILE only",
            args: &[],
            env: &[("CHARTREG_TLS_PRIVATE_KEY_FILE", key)],
            missing: "--tls-cert-file",
        },
    ];
    for Case {
        what,
        args,
        env,
        missing,
    } in cases
    {
        let (code, stderr) = start_up(args, env);
        assert_eq!(code, Some(2), "{what}: exit code; stderr: {stderr}");
        assert!(
            stderr.contains(missing),
            "{what}: stderr should name {missing}: {stderr}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4, 5. Rotation of a mounted secret
// ---------------------------------------------------------------------------------------------

const RELOAD: Duration = Duration::from_millis(200);
/// How soon after a swap new connections must get the new certificate.
const PICKUP: Duration = Duration::from_secs(5);

/// A folder laid out as the kubelet mounts a secret: `..<version>/tls.{crt,key}`, `..data`
/// pointing at the current version, `tls.crt -> ..data/tls.crt`, `tls.key -> ..data/tls.key`.
struct Secret {
    dir: tempfile::TempDir,
}

impl Secret {
    fn new(first_version: &str, cert_pem: &str, key_pem: &str) -> Secret {
        let secret = Secret {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        let d = secret.dir.path();
        secret.write_version(first_version, cert_pem, key_pem);
        symlink(first_version, d.join("..data")).expect("..data symlink");
        symlink("..data/tls.crt", d.join("tls.crt")).expect("tls.crt symlink");
        symlink("..data/tls.key", d.join("tls.key")).expect("tls.key symlink");
        secret
    }

    fn write_version(&self, version: &str, cert_pem: &str, key_pem: &str) {
        let v = self.dir.path().join(version);
        std::fs::create_dir(&v).expect("create version folder");
        write(&v.join("tls.crt"), cert_pem);
        write(&v.join("tls.key"), key_pem);
    }

    /// What the kubelet does: write the new version, point `..data_tmp` at it and rename that
    /// over `..data` (atomic), then remove the old version.
    fn swap(&self, old_version: &str, new_version: &str, cert_pem: &str, key_pem: &str) {
        let d = self.dir.path();
        self.write_version(new_version, cert_pem, key_pem);
        symlink(new_version, d.join("..data_tmp")).expect("..data_tmp symlink");
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).expect("rename over ..data");
        std::fs::remove_dir_all(d.join(old_version)).expect("remove the old version");
    }

    fn cert(&self) -> PathBuf {
        self.dir.path().join("tls.crt")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("tls.key")
    }
}

/// One connection of the probe loop: when its handshake started, and the leaf certificate
/// it saw (or why it failed).
struct Probe {
    at: Instant,
    result: Result<CertificateDer<'static>, String>,
}

/// A thread making fresh connections (new TCP, full handshake, `GET /v2/`) back to back until
/// stopped, recording each.
struct Prober {
    probes: Arc<Mutex<Vec<Probe>>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Prober {
    fn start(addr: SocketAddr, config: Arc<ClientConfig>) -> Prober {
        let probes = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (probes.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let at = Instant::now();
                let result = fetch(addr, &config);
                p.lock().unwrap().push(Probe { at, result });
                thread::sleep(Duration::from_millis(5));
            }
        });
        Prober {
            probes,
            stop,
            thread: Some(thread),
        }
    }

    /// Waits (up to `within`) until a probe that started at or after `since` satisfies
    /// `want`; returns when that probe started.
    fn wait_for(
        &self,
        since: Instant,
        within: Duration,
        want: impl Fn(&Probe) -> bool,
    ) -> Option<Instant> {
        let deadline = since + within;
        loop {
            let found = self
                .probes
                .lock()
                .unwrap()
                .iter()
                .find(|p| p.at >= since && want(p))
                .map(|p| p.at);
            if found.is_some() || Instant::now() > deadline {
                return found;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until at least `n` probes started at or after `since` (up to 10 s).
    fn wait_count(&self, since: Instant, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self
            .probes
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.at >= since)
            .count()
            < n
        {
            assert!(Instant::now() < deadline, "the probe loop is stuck");
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn finish(mut self) -> Vec<Probe> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("probe thread");
        }
        std::mem::take(&mut *self.probes.lock().unwrap())
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Names a leaf certificate for messages.
fn which(leaf: &CertificateDer<'_>, known: &[(&str, &CertificateDer<'_>)]) -> String {
    known.iter().find(|(_, c)| *c == leaf).map_or_else(
        || "an unknown certificate".to_owned(),
        |(n, _)| n.to_string(),
    )
}

/// Panics listing every failed probe.
fn assert_no_failures(probes: &[Probe], start: Instant) {
    let failures: Vec<String> = probes
        .iter()
        .filter_map(|p| {
            p.result
                .as_ref()
                .err()
                .map(|e| format!("at {:?}: {e}", p.at - start))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} connections failed:\n{}",
        failures.len(),
        probes.len(),
        failures.join("\n")
    );
}

/// The kubelet's update of a mounted secret (to a pair from another CA) is picked up: a
/// client making new connections back to back sees no failure, gets the new certificate
/// within 5 s of the swap and never the old one after that; a connection opened before the
/// swap keeps working.
#[test]
fn a_rotated_secret_is_picked_up_without_failed_connections() {
    let old_ca = Ca::root("chartreg old CA");
    let new_ca = Ca::root("chartreg new CA");
    let (old, new) = (old_ca.pair(), new_ca.pair());
    let secret = Secret::new("..2026_a", &old.cert_pem, &old.key_pem);
    let server = serve(
        &secret.cert(),
        &secret.key(),
        &["--tls-reload-interval", "200ms"],
    );
    let config = client(&[old_ca.der(), new_ca.der()], BOTH, HTTP1);
    let known = [
        ("the old certificate", &old.leaf),
        ("the new certificate", &new.leaf),
    ];

    let start = Instant::now();
    let mut open = Tls::connect(server.addr, &config).expect("a connection before the swap");
    open.check_v2().expect("GET /v2/ before the swap");
    let prober = Prober::start(server.addr, config.clone());
    // Several reload intervals with nothing changed first.
    prober.wait_count(start, 20);
    thread::sleep(RELOAD * 3);

    let swapped = Instant::now();
    secret.swap("..2026_a", "..2026_b", &new.cert_pem, &new.key_pem);
    let picked = prober.wait_for(swapped, PICKUP, |p| p.result.as_ref() == Ok(&new.leaf));
    // Keep probing for a while (many reload intervals) after the new certificate came.
    let after = picked.unwrap_or(swapped);
    thread::sleep(RELOAD * 5);
    prober.wait_count(after, 20);
    let probes = prober.finish();

    assert_no_failures(&probes, start);
    let picked = picked.unwrap_or_else(|| {
        panic!(
            "no connection got the new certificate within {PICKUP:?} of the swap:\n{}",
            server.log()
        )
    });
    for p in &probes {
        let leaf = p.result.as_ref().expect("no failures");
        let expected = if p.at < swapped {
            &old.leaf
        } else if p.at >= picked {
            &new.leaf
        } else {
            continue; // between the swap and the first new certificate: either
        };
        assert!(
            leaf == expected,
            "a connection {:?} after the start ({:?} after the swap, new certificate first seen {:?} after it) got {}",
            p.at - start,
            p.at.checked_duration_since(swapped),
            picked - swapped,
            which(leaf, &known)
        );
    }
    assert!(
        probes.iter().filter(|p| p.at < swapped).count() >= 20
            && probes.iter().filter(|p| p.at >= picked).count() >= 20,
        "too few connections around the swap to tell"
    );

    // The connection opened before the swap was not disturbed.
    open.check_v2()
        .expect("GET /v2/ on the connection opened before the swap");
    assert_eq!(
        open.leaf(),
        old.leaf,
        "the open connection keeps its session"
    );
    let log = server.log();
    assert!(
        log.contains("TLS reload: now serving the certificate in"),
        "the reload should be logged:\n{log}"
    );
    eprintln!(
        "new certificate first seen {:?} after the swap; {} connections",
        picked - swapped,
        probes.len()
    );
}

/// A new pair whose key does not match its certificate is not installed: the old certificate
/// keeps being served (for many reload intervals) with a warning logged once; the next good
/// pair is picked up.
#[test]
fn a_bad_new_pair_is_ignored_until_a_good_one_comes() {
    let ca = Ca::root("chartreg test CA");
    let (first, next) = (ca.pair(), ca.pair());
    let mismatched_key = KeyPair::generate().expect("key").serialize_pem();
    let bad_cert = ca.pair();
    let secret = Secret::new("..2026_a", &first.cert_pem, &first.key_pem);
    let server = serve(
        &secret.cert(),
        &secret.key(),
        &["--tls-reload-interval", "200ms"],
    );
    let config = client(&[ca.der()], BOTH, HTTP1);
    let known = [
        ("the first certificate", &first.leaf),
        ("the bad pair's certificate", &bad_cert.leaf),
        ("the next certificate", &next.leaf),
    ];

    let start = Instant::now();
    let prober = Prober::start(server.addr, config);
    prober.wait_count(start, 20);

    let bad_swap = Instant::now();
    secret.swap("..2026_a", "..2026_b", &bad_cert.cert_pem, &mismatched_key);
    let warned_deadline = bad_swap + PICKUP;
    let warning = |log: &str| {
        log.lines()
            .filter(|l| l.contains("WARN") && l.contains("do not make a pair"))
            .count()
    };
    while warning(&server.log()) == 0 && Instant::now() < warned_deadline {
        thread::sleep(Duration::from_millis(20));
    }
    // Then at least 5 more reload intervals with the bad pair in place.
    thread::sleep(RELOAD * 5);
    let good_swap = Instant::now();
    let log_before_good_swap = server.log();
    secret.swap("..2026_b", "..2026_c", &next.cert_pem, &next.key_pem);
    let picked = prober.wait_for(good_swap, PICKUP, |p| p.result.as_ref() == Ok(&next.leaf));
    let after = picked.unwrap_or(good_swap);
    thread::sleep(RELOAD * 3);
    prober.wait_count(after, 20);
    let probes = prober.finish();

    assert_no_failures(&probes, start);
    let warnings: Vec<&str> = log_before_good_swap
        .lines()
        .filter(|l| l.contains("do not make a pair"))
        .collect();
    assert!(
        warnings.len() == 1
            && warnings[0].contains("WARN")
            && warnings[0].contains("still serving the previous certificate"),
        "one warning about the mismatched pair expected, got {warnings:?}:\n{log_before_good_swap}"
    );
    let with_bad_pair: Vec<&Probe> = probes.iter().filter(|p| p.at < good_swap).collect();
    for p in &with_bad_pair {
        let leaf = p.result.as_ref().expect("no failures");
        assert!(
            *leaf == first.leaf,
            "a connection {:?} after the bad swap got {}",
            p.at.checked_duration_since(bad_swap),
            which(leaf, &known)
        );
    }
    let last_old = with_bad_pair.last().map(|p| p.at).expect("probes");
    assert!(
        last_old - bad_swap >= RELOAD * 3
            && with_bad_pair.iter().filter(|p| p.at >= bad_swap).count() >= 20,
        "too few connections with the bad pair in place to tell"
    );

    let picked = picked.unwrap_or_else(|| {
        panic!(
            "no connection got the next good certificate within {PICKUP:?} of its swap:\n{}",
            server.log()
        )
    });
    for p in probes.iter().filter(|p| p.at >= picked) {
        let leaf = p.result.as_ref().expect("no failures");
        assert!(
            *leaf == next.leaf,
            "a connection {:?} after the good swap (picked up after {:?}) got {}",
            p.at - good_swap,
            picked - good_swap,
            which(leaf, &known)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 6. No OpenSSL in the binary
// ---------------------------------------------------------------------------------------------

/// The binary does not link libssl or libcrypto (its TLS is rustls with ring).
#[test]
fn the_binary_links_no_openssl() {
    let Some(ldd) = common::tool("ldd") else {
        return;
    };
    let bin = common::chartreg_bin();
    let out = common::output_of(Command::new(ldd).arg(&bin), "ldd");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // A static binary makes ldd say "not a dynamic executable" (and exit 1): nothing linked.
    assert!(
        out.status.success() || text.contains("not a dynamic executable"),
        "ldd {}: {}",
        bin.display(),
        describe(&out)
    );
    let linked: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("libssl") || l.contains("libcrypto"))
        .collect();
    assert!(
        linked.is_empty(),
        "{} links OpenSSL: {linked:?}",
        bin.display()
    );
}
