//! Keys in PKCS#8, PKCS#1 and SEC1, a certificate file with a chain, TLS 1.3 and 1.2, ALPN h2
//! and http/1.1.

use super::*;

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
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("certificate")),
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
    let https = Trusted::start(dir.path(), "chartreg test CA");
    let (ca_file, resolve) = (&https.ca_file, https.resolve());
    let url = format!("https://{NAME}:{}/v2/", https.server.addr.port());

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
        let (out, body) = run(&[flag, "--cacert", str_path(ca_file)]);
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
