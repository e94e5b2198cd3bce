//! TLS handshakes that fail are counted by reason in `/metrics`
//! (`chartreg_tls_handshake_failures_total{reason}`) and logged, with one warning at most per
//! 10 s: each reason made by a real client (curl, `openssl s_client`) or a socket that sends
//! nothing, garbage or closes.

use super::*;

/// `/metrics`' failed handshakes by reason.
fn failures(curl: &Path, ca: &Path, addr: SocketAddr) -> Vec<(String, u64)> {
    let out = Command::new(curl)
        .args(["--silent", "--fail", "--cacert", str_path(ca), "--resolve"])
        .arg(format!("{NAME}:{}:127.0.0.1", addr.port()))
        .arg(format!("https://{NAME}:{}/metrics", addr.port()))
        .output()
        .expect("curl");
    assert!(out.status.success(), "GET /metrics: {}", describe(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("chartreg_tls_handshake_failures_total{reason=\"")?;
            let (reason, value) = rest.split_once("\"} ")?;
            Some((reason.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

/// `openssl s_client ARGS` against the server, with nothing to send; whether it connected.
fn s_client(openssl: &Path, addr: SocketAddr, args: &[&str]) -> Output {
    common::output_of(
        Command::new(openssl)
            .args(["s_client", "-connect", &addr.to_string()])
            .args(args)
            .stdin(Stdio::null()),
        "openssl s_client",
    )
}

#[test]
fn failed_handshakes_are_counted_by_reason_and_logged_sparingly() {
    let (Some(curl), Some(openssl)) = (common::tool("curl"), common::tool("openssl")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let https = Trusted::start(dir.path(), "chartreg handshake test CA");
    let (server, ca_file) = (&https.server, &https.ca_file);
    let addr = server.addr;
    let url = format!("https://127.0.0.1:{}/v2/", addr.port());

    // Every reason is listed, at zero, from the start.
    let start = failures(&curl, ca_file, addr);
    assert_eq!(start.len(), 8, "{start:?}");
    assert!(start.iter().all(|(_, n)| *n == 0), "{start:?}");

    // A client refusing the certificate (it does not trust the CA).
    let out = Command::new(&curl)
        .args(["--silent", &url])
        .output()
        .expect("curl");
    assert!(!out.status.success(), "curl without the CA must fail");
    // No application protocol in common (ALPN), no cipher suite in common (TLS 1.2, RSA key
    // exchange, which rustls does not offer).
    s_client(&openssl, addr, &["-alpn", "spdy/3.1"]);
    s_client(&openssl, addr, &["-tls1_2", "-cipher", "AES128-SHA"]);
    // Plain HTTP to the HTTPS port.
    let out = Command::new(&curl)
        .args(["--silent", "--output", "/dev/null"])
        .arg(format!("http://127.0.0.1:{}/v2/", addr.port()))
        .output()
        .expect("curl");
    assert!(out.status.success(), "plain HTTP gets an answer (400)");
    // A TLS record whose handshake message is garbage.
    let mut garbage = TcpStream::connect(addr).expect("connect");
    garbage
        .write_all(b"\x16\x03\x01\x00\x06\x01\x00\x00\x02\xff\xff")
        .expect("write");
    let mut rest = Vec::new();
    let _ = garbage.read_to_end(&mut rest);
    // A client that connects and closes.
    drop(TcpStream::connect(addr).expect("connect"));
    // A client that says nothing: cut at the handshake bound (3 s from being accepted).
    let silent = TcpStream::connect(addr).expect("connect");
    let want = [
        ("timeout", 1),
        ("certificate_refused", 1),
        ("no_shared_cipher", 1),
        ("no_shared_protocol", 1),
        ("plain_http", 1),
        ("not_tls", 1),
        ("closed", 1),
        ("other", 0),
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got;
    loop {
        got = failures(&curl, ca_file, addr);
        let matches = want
            .iter()
            .all(|(reason, n)| got.iter().any(|(r, m)| r == reason && m == n));
        if matches {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "failed handshakes by reason: {got:?}, want {want:?}\n{}",
            server.log()
        );
        thread::sleep(Duration::from_millis(100));
    }
    drop(silent);
    // Seven failures within 10 s: one warning, saying how many failed and why.
    let log = server.log();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("TLS handshake with"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning per 10 s:\n{log}");
}

/// The first byte's wait and the handshake share one bound, 3 s from being accepted: a client
/// that sends its first byte after 2 s and then stalls mid-handshake is cut at 3 s (two bounds
/// of 3 s each would have held it 5 s).
#[test]
fn the_first_byte_and_the_handshake_share_one_bound() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::root("chartreg handshake bound CA");
    let (cert, key) = ca.pair().write(dir.path());
    let server = serve(&cert, &key, &[]);
    let accepted = Instant::now();
    let mut client = TcpStream::connect(server.addr).expect("connect");
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    thread::sleep(Duration::from_secs(2));
    // A TLS record header announcing a ClientHello that never comes.
    client.write_all(b"\x16\x03\x01\x02\x00").expect("write");
    let mut rest = Vec::new();
    let _ = client.read_to_end(&mut rest);
    let held = accepted.elapsed();
    assert!(
        held < Duration::from_millis(4500),
        "the connection was held {held:?}: the first byte's wait and the handshake have one 3 s bound"
    );
    assert!(
        held >= Duration::from_secs(3),
        "cut after {held:?}, before the bound"
    );
}
