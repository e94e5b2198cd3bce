//! HTTP/2 abuse over TLS, with the h2 crate as a client that misbehaves on purpose: streams
//! opened and reset in a loop (rapid reset), a thousand concurrent streams on one connection,
//! a 1 MiB header block, and a client that never opens its receive window. Each must leave the
//! server bounded (anonymous memory) and serving a normal client; none may panic it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::common::{self, TlsProcess};
use super::load::scale;

pub struct Tls {
    server: TlsProcess,
    config: Arc<rustls::ClientConfig>,
}

pub fn tls_server() -> Tls {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = TlsProcess::start(&[], &[("RUST_LOG", "warn")]);
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(
            server.cert.ca_der.clone(),
        ))
        .expect("CA");
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Tls {
        server,
        config: Arc::new(config),
    }
}

type Sender = h2::client::SendRequest<bytes::Bytes>;

/// Waits (at most 5 s) until `sender` may open another stream.
pub async fn ready(sender: &mut Sender) -> bool {
    matches!(
        tokio::time::timeout(
            Duration::from_secs(5),
            std::future::poll_fn(|cx| sender.poll_ready(cx))
        )
        .await,
        Ok(Ok(()))
    )
}

/// An h2 connection to the server (TLS, ALPN h2), with `builder`'s settings.
pub async fn connect(tls: &Tls, builder: &h2::client::Builder) -> Sender {
    let tcp = tokio::net::TcpStream::connect(tls.server.process.addr)
        .await
        .expect("connect");
    let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let stream = connector.connect(name, tcp).await.expect("TLS");
    let (sender, connection) = builder.handshake(stream).await.expect("h2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    sender
}

pub fn get(path: &str) -> http::Request<()> {
    http::Request::get(format!("https://127.0.0.1{path}"))
        .body(())
        .expect("request")
}

/// A normal client (a fresh connection) gets `/v2/`.
async fn normal(tls: &Tls) -> bool {
    let mut sender = connect(tls, &h2::client::Builder::new()).await;
    if !ready(&mut sender).await {
        return false;
    }
    let Ok((response, _)) = sender.send_request(get("/v2/"), true) else {
        return false;
    };
    matches!(tokio::time::timeout(Duration::from_secs(5), response).await, Ok(Ok(r)) if r.status() == 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_abuse_leaves_the_server_bounded_and_serving() {
    let tls = tls_server();
    assert!(normal(&tls).await, "a normal client first");
    let anon_before = tls.server.process.status_kib("RssAnon");

    // Rapid reset: open a stream and reset it at once, over and over.
    let resets = 10_000 * scale();
    let mut sender = connect(&tls, &h2::client::Builder::new()).await;
    let started = Instant::now();
    let cpu = tls.server.process.cpu();
    let mut sent = 0;
    for _ in 0..resets {
        if !ready(&mut sender).await {
            break;
        }
        match sender.send_request(get("/v2/charts/hello/tags/list"), false) {
            Ok((_, mut stream)) => {
                stream.send_reset(h2::Reason::CANCEL);
                sent += 1;
            }
            Err(_) => break,
        }
    }
    let reset_took = started.elapsed();
    let reset_cpu = tls.server.process.cpu() - cpu;
    assert!(normal(&tls).await, "a normal client after {sent} resets");

    // A thousand streams at once on one connection.
    let streams = 1_000 * scale().min(2);
    // With room to receive every answer at once, as real clients (Go's) give themselves.
    let mut roomy = h2::client::Builder::new();
    roomy.initial_connection_window_size(16 << 20);
    let mut sender = connect(&tls, &roomy).await;
    let cpu = tls.server.process.cpu();
    let mut pending = Vec::new();
    for _ in 0..streams {
        if !ready(&mut sender).await {
            break;
        }
        if let Ok((response, _)) =
            sender.send_request(get("/v2/charts/hello/manifests/1.0.0"), true)
        {
            pending.push(response);
        }
    }
    let mut ok = 0;
    for response in pending {
        if let Ok(Ok(mut r)) = tokio::time::timeout(Duration::from_secs(20), response).await {
            let body = r.body_mut();
            let mut data = Vec::new();
            while let Ok(Some(Ok(chunk))) =
                tokio::time::timeout(Duration::from_secs(5), body.data()).await
            {
                let _ = body.flow_control().release_capacity(chunk.len());
                data.extend_from_slice(&chunk);
            }
            if r.status() == 200
                && common::sha256(&data) == common::assets_tag_digest("charts/hello", "1.0.0")
            {
                ok += 1;
            }
        }
    }
    let streams_cpu = tls.server.process.cpu() - cpu;
    assert!(
        normal(&tls).await,
        "a normal client after {streams} concurrent streams"
    );

    // A 1 MiB header block.
    let mut sender = connect(&tls, &h2::client::Builder::new()).await;
    let cpu = tls.server.process.cpu();
    let mut big = get("/v2/");
    big.headers_mut().insert(
        "x-big",
        http::HeaderValue::from_str(&"a".repeat(1 << 20)).expect("value"),
    );
    let big_status = match ready(&mut sender).await {
        true => match sender.send_request(big, true) {
            Ok((response, _)) => {
                match tokio::time::timeout(Duration::from_secs(10), response).await {
                    Ok(Ok(r)) => format!("{}", r.status()),
                    Ok(Err(e)) => format!("refused: {e}"),
                    Err(_) => "no answer in 10 s".to_owned(),
                }
            }
            Err(e) => format!("not sent: {e}"),
        },
        false => "connection not ready".to_owned(),
    };
    let big_cpu = tls.server.process.cpu() - cpu;
    assert!(
        !big_status.starts_with('2'),
        "a 1 MiB header block is not served: {big_status}"
    );
    assert!(
        normal(&tls).await,
        "a normal client after the 1 MiB header block"
    );

    // A client that never opens its window: the server may send nothing, and must not hold more.
    let mut builder = h2::client::Builder::new();
    builder
        .initial_window_size(0)
        .initial_connection_window_size(65_535);
    let mut sender = connect(&tls, &builder).await;
    let cpu = tls.server.process.cpu();
    let mut stalled = Vec::new();
    for _ in 0..100 {
        if !ready(&mut sender).await {
            break;
        }
        if let Ok((response, _)) = sender.send_request(get("/"), true) {
            stalled.push(response);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stalled_cpu = tls.server.process.cpu() - cpu;
    assert!(
        normal(&tls).await,
        "a normal client beside 100 stalled streams"
    );

    let anon_after = tls.server.process.status_kib("RssAnon");
    eprintln!(
        "h2: {sent} streams reset in {reset_took:?} (server CPU {reset_cpu:?}); {ok} of {streams} concurrent streams answered exactly (server CPU {streams_cpu:?}); 1 MiB header block: {big_status} (server CPU {big_cpu:?}); 100 streams with a closed window held for 0.5 s (server CPU {stalled_cpu:?}); RssAnon {anon_before} -> {anon_after} KiB"
    );
    // CPU bounded: a reset costs the server no more than a request would (a generous 1 ms of
    // CPU each; tens of microseconds here), and a stalled client costs it nothing while it
    // waits.
    assert!(
        reset_cpu <= Duration::from_millis(sent as u64) + Duration::from_secs(1),
        "{sent} resets took {reset_cpu:?} of server CPU"
    );
    assert!(
        stalled_cpu <= Duration::from_millis(300),
        "stalled streams took {stalled_cpu:?} of server CPU"
    );
    assert_eq!(
        ok, streams,
        "every concurrent stream was answered with the right bytes"
    );
    assert!(
        anon_after <= anon_before + 16 * 1024,
        "memory stayed bounded: {anon_before} -> {anon_after} KiB"
    );
    assert!(
        !tls.server.process.log().contains("panicked"),
        "{}",
        tls.server.process.log()
    );
    drop(stalled);
}
