//! Clients that hold connections without finishing anything: slow clients trickling a request
//! head, and TLS clients that send garbage or stop in the middle of a handshake. A normal client
//! must still be served, and the header timeout must cut the slow ones.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::common::{self, Process, TlsProcess};
use super::load::{closed_by_server, normal_request, scale};

#[test]
fn slow_clients_are_cut_by_the_header_timeout_and_a_normal_client_gets_through() {
    let server = Process::start_args(
        &common::chartreg_bin(),
        &["--request-header-timeout", "2s"],
        &[("RUST_LOG", "warn")],
    );
    let count = 410 * scale();
    let mut slow: Vec<TcpStream> = (0..count)
        .map(|_| TcpStream::connect(server.addr).expect("connect"))
        .collect();
    let head = b"GET /v2/ HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    // Trickle a byte per connection every 100 ms for 3 s: longer than the header timeout.
    let started = Instant::now();
    let mut served_in = None;
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(3) {
        for stream in &mut slow {
            let _ = stream.write_all(&[head[i % head.len()]]);
        }
        i += 1;
        if served_in.is_none() {
            served_in = normal_request(server.addr);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let cut = closed_by_server(&mut slow);
    eprintln!(
        "slow: {count} clients trickling a request head; a normal request answered in {served_in:?}; {cut} cut by the 2 s header timeout"
    );
    assert!(
        served_in.is_some(),
        "a normal client was served beside {count} slow ones"
    );
    assert_eq!(cut, count, "every slow client was cut");
    assert!(normal_request(server.addr).is_some(), "still serving");
}

#[test]
fn tls_clients_that_send_garbage_or_stop_mid_handshake_hold_no_worker() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = TlsProcess::start(&["--workers", "1"], &[("RUST_LOG", "warn")]);
    let (server, cert) = (&tls.process, &tls.cert);
    // A ClientHello cut off after its record header, and garbage that is no TLS at all.
    let partial_hello = [
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ];
    let count = 100 * scale();
    let mut held = Vec::new();
    for i in 0..count {
        let mut stream = TcpStream::connect(server.addr).expect("connect");
        let _ = if i % 2 == 0 {
            stream.write_all(&partial_hello)
        } else {
            stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff garbage")
        };
        held.push(stream);
    }
    // One worker: a normal TLS client is answered while every one of those is held open.
    let ca = reqwest::Certificate::from_pem(cert.ca_pem.as_bytes()).expect("CA");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let started = Instant::now();
    let status = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .tls_certs_only([ca])
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client");
        client
            .get(format!("{}/v2/", server.https_url()))
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    let took = started.elapsed();
    eprintln!(
        "tls: {count} connections with a cut-off ClientHello or garbage held open; a normal TLS request on one worker answered {status:?} in {took:?}"
    );
    assert_eq!(status.ok(), Some(200));
    assert!(!server.log().contains("panicked"), "{}", server.log());
    drop(held);
}
