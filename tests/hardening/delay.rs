//! Answers are not held back: 100 sequential requests on one connection, over HTTP/2 and over
//! HTTP/1.1 with TLS, each answered well within the 40 ms a delayed ACK costs (the median, so
//! a slow moment of a shared machine does not decide it); and every accepted socket, plain and
//! TLS, has `TCP_NODELAY` set, read off the server's own socket (`pidfd_getfd`).
//!
//! Without `TCP_NODELAY` an HTTP/2 answer's HEADERS and DATA frames went out as two writes,
//! and Nagle's algorithm held the second until the client's delayed ACK: every HTTP/2 answer
//! with a body took ~44 ms.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, PidfdGetfdFlags, pidfd_getfd, pidfd_open};

use super::common::{Process, TlsProcess};
use super::http2::{connect, get, ready, tls_server};

/// A small answer with a body: the sample chart's manifest.
const PATH: &str = "/v2/charts/hello/manifests/1.0.0";

/// Requests per connection.
const REQUESTS: usize = 100;

/// The median must be under this: a delayed ACK is 40 ms on Linux, loopback answers take
/// well under 1 ms.
const BOUND: Duration = Duration::from_millis(20);

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_http2_answers_are_not_held_back() {
    let tls = tls_server();
    let mut sender = connect(&tls, &h2::client::Builder::new()).await;
    let mut times = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        let start = Instant::now();
        assert!(ready(&mut sender).await, "the connection takes a stream");
        let (response, _) = sender.send_request(get(PATH), true).expect("request");
        let response = response.await.expect("answer");
        assert_eq!(response.status(), 200);
        let mut body = response.into_body();
        let mut read = 0;
        while let Some(chunk) = body.data().await {
            let chunk = chunk.expect("body");
            read += chunk.len();
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        assert!(read > 0, "the manifest has a body");
        times.push(start.elapsed());
    }
    let median = median(times);
    eprintln!("HTTP/2, {REQUESTS} sequential answers on one connection: median {median:?}");
    assert!(
        median < BOUND,
        "the median HTTP/2 answer took {median:?} (44 ms: held back for a delayed ACK)"
    );
}

/// A TLS client for the test server's certificate, offering `alpn`.
fn tls_config(server: &TlsProcess) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(
            server.cert.ca_der.clone(),
        ))
        .expect("CA");
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Reads one HTTP/1.1 answer (head, and a body of its Content-Length) off `stream`.
fn read_answer(stream: &mut impl Read) -> (u16, usize) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("answer head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("ASCII head");
    let status = head[9..12].parse().expect("status");
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .expect("Content-Length");
    let mut body = vec![0; length];
    stream.read_exact(&mut body).expect("body");
    (status, length)
}

#[test]
fn sequential_https_http1_answers_are_not_held_back() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = TlsProcess::start(&[], &[("RUST_LOG", "warn")]);
    let tcp = TcpStream::connect(server.process.addr).expect("connect");
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let connection = rustls::ClientConnection::new(tls_config(&server), name).expect("TLS");
    let mut stream = rustls::StreamOwned::new(connection, tcp);
    let mut times = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        let start = Instant::now();
        // One write: `write!` writes each piece as it comes, and each would be a TLS record
        // and a segment of its own, the later ones held back by this client's own Nagle.
        let request = format!("GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        stream.write_all(request.as_bytes()).expect("request");
        stream.flush().expect("request");
        let (status, length) = read_answer(&mut stream);
        assert_eq!(status, 200);
        assert!(length > 0);
        times.push(start.elapsed());
    }
    let median = median(times);
    eprintln!("HTTPS HTTP/1.1, {REQUESTS} sequential answers on one connection: median {median:?}");
    assert!(
        median < BOUND,
        "the median HTTPS HTTP/1.1 answer took {median:?}"
    );
}

/// The server's end of `client`'s connection, taken out of process `pid` (a copy of its file
/// descriptor, which `pidfd_getfd` makes; root may take it from any process).
fn server_end(pid: u32, client: &TcpStream) -> TcpStream {
    let ours = client.local_addr().expect("client address");
    let pidfd = pidfd_open(
        Pid::from_raw(pid as i32).expect("a pid"),
        PidfdFlags::empty(),
    )
    .expect("pidfd_open");
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).expect("/proc/PID/fd") {
        let entry = entry.expect("fd entry");
        let target = std::fs::read_link(entry.path()).unwrap_or_default();
        if !target.to_string_lossy().starts_with("socket:") {
            continue;
        }
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(copy) = pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()) else {
            continue;
        };
        let socket = TcpStream::from(copy);
        if socket.peer_addr().is_ok_and(|peer| peer == ours) {
            return socket;
        }
    }
    panic!("no socket of process {pid} is connected to {ours}");
}

/// Connects, sends `request`'s first bytes and waits for the server to have answered
/// something, so that its end of the connection went through the listener's steps.
fn connected(process: &Process, first: &[u8]) -> TcpStream {
    let mut client = TcpStream::connect(process.addr).expect("connect");
    client.write_all(first).expect("write");
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut byte = [0u8; 1];
    client.read_exact(&mut byte).expect("the server answers");
    client
}

#[test]
fn accepted_sockets_have_tcp_nodelay_plain_and_tls() {
    let plain = Process::start_args(&super::common::chartreg_bin(), &[], &[]);
    let client = connected(&plain, b"GET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        server_end(plain.pid(), &client)
            .nodelay()
            .expect("TCP_NODELAY"),
        "plain HTTP: the accepted socket has no TCP_NODELAY"
    );

    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = TlsProcess::start(&[], &[]);
    let mut client = TcpStream::connect(tls.process.addr).expect("connect");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let mut connection = rustls::ClientConnection::new(tls_config(&tls), name).expect("TLS client");
    while connection.is_handshaking() {
        connection.complete_io(&mut client).expect("handshake");
    }
    assert!(
        server_end(tls.process.pid(), &client)
            .nodelay()
            .expect("TCP_NODELAY"),
        "HTTPS: the accepted socket has no TCP_NODELAY"
    );
}
