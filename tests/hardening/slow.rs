//! Clients that hold connections without finishing anything: slow clients trickling a request
//! head, and TLS clients that send garbage or stop in the middle of a handshake. A normal client
//! must still be served, and the header timeout must cut the slow ones.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::common::{self, Process, TlsProcess};
use super::load::{closed_by_server, normal_request, scale};

/// More slow clients than `--max-connections` (4,100 against 4,096 at full size): the server
/// holds as many as it may, the rest and a normal client wait in the listen backlog, and the
/// header timeout frees slots, so the normal client is served within the timeout and a second.
#[test]
fn slow_clients_are_cut_by_the_header_timeout_and_a_normal_client_gets_through() {
    let count = 410 * scale();
    let cap = count - 4;
    let timeout = Duration::from_secs(2);
    let server = Process::start_args(
        &common::chartreg_bin(),
        &[
            "--request-header-timeout",
            "2s",
            "--max-connections",
            &cap.to_string(),
        ],
        &[("RUST_LOG", "warn")],
    );
    let mut slow: Vec<TcpStream> = (0..count)
        .map(|_| TcpStream::connect(server.addr).expect("connect"))
        .collect();
    // The server holds `cap` of them (a listen backlog that dropped handshakes would leave it
    // holding fewer, and the rest in limbo on the client's side).
    std::thread::sleep(Duration::from_millis(200));
    let held = std::fs::read_dir(format!("/proc/{}/fd", server.pid()))
        .expect("/proc/PID/fd")
        .count();
    let head = b"GET /v2/ HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    // Trickle a byte per connection every 100 ms for twice the header timeout and a second:
    // the ones that waited in the backlog are cut too.
    let started = Instant::now();
    let mut served_in = None;
    let mut i = 0;
    while started.elapsed() < timeout * 2 + Duration::from_secs(1) {
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
        "slow: {count} clients trickling a request head, --max-connections {cap}; {held} file descriptors open in the server; a normal request answered in {served_in:?}, after waiting in the backlog for a slot; {cut} cut by the 2 s header timeout"
    );
    assert!(
        held >= cap,
        "the server holds {held} descriptors, not the {cap} connections"
    );
    let served_in = served_in.expect("a normal client was served");
    assert!(
        served_in <= timeout + Duration::from_secs(1),
        "the normal client waited {served_in:?}"
    );
    assert!(
        served_in >= timeout / 4,
        "the normal client was served in {served_in:?}: no slot was full"
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
    // More than actix-tls's default of 256 handshakes in progress per worker, even at a tenth.
    let count = (100 * scale()).max(300);
    let anon_before = server.status_kib("RssAnon");
    let mut held = Vec::new();
    let first_held = Instant::now();
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
    // Let the server take them all in before looking at its memory.
    std::thread::sleep(Duration::from_millis(200));
    let anon_held = server.status_kib("RssAnon");
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
        "tls: {count} connections with a cut-off ClientHello or garbage held open; a normal TLS request on one worker answered {status:?} in {took:?}; RssAnon {anon_before} -> {anon_held} KiB while held"
    );
    assert_eq!(status.ok(), Some(200));
    // Not a timing assert: answered before the first held handshake could time out (the
    // server's handshake timeout is 3 s), so no slot had to be freed for it.
    assert!(
        first_held.elapsed() < Duration::from_secs(3),
        "the normal client waited for held handshakes to time out ({took:?})"
    );
    assert!(!server.log().contains("panicked"), "{}", server.log());
    drop(held);
}
