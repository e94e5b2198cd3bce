//! The main listener's server: the HTTP application behind plain HTTP, or behind TLS.
//!
//! Built from actix's parts (`actix-server`, `actix-http`) the way actix-web's `HttpServer`
//! builds them, with steps of its own:
//! - Every accepted socket, plain or TLS, gets `TCP_NODELAY`. Without it an HTTP/2 answer's
//!   HEADERS and DATA frames went out as two small writes, and Nagle's algorithm held the
//!   second until the client's delayed ACK: every HTTP/2 answer with a body took ~44 ms
//!   (22.5 req/s sequential with h2load; HTTP/1.1 writes an answer in one go and did not show
//!   it). actix-http sets it only through `HttpService::tcp()`'s or `rustls()`'s own chains.
//! - HTTPS: the connection's first byte is peeked (module `plain`), then tokio-rustls does the
//!   handshake (ALPN h2 and http/1.1), the two within one bound, [`HANDSHAKE_TIMEOUT`]; a
//!   connection that ends before its handshake does is counted by reason and logged (module
//!   `handshake`). Once done, its TLS send buffer is raised from rustls's 64 KiB to
//!   [`TLS_SEND_BUFFER`]. `HttpServer` gives no way to reach the connection for either.
//!
//! Why: the send buffer is how much encrypted data a connection queues before its writes wait,
//! so it is the most one write to the socket carries. 64 KiB of plaintext is four 16 KiB records
//! and their headers, just over loopback's 64 KiB segments: every write became a full segment
//! and a tiny one. Serving a 32 MiB blob over HTTPS to 4 clients (`make bench`, one CPU for the
//! server) the kernel's share fell from 0.29-0.45 to 0.15-0.25 s of CPU per GiB, and the
//! server's CPU per GiB by about a quarter, with 128 KiB to 1 MiB (0.44 s/GiB; nginx 0.65-0.70).
//! 512 KiB keeps what one download can hold in memory bounded (see docs/operations.md, "Footprint").
//!
//! Before the handshake, each connection's first byte is peeked: plain HTTP sent to the HTTPS
//! port is answered `400 Bad Request` and closed there, and everything else goes on to the TLS
//! acceptor untouched (module `plain`).
//!
//! The app is given actix-web's default `AppConfig` (what it says of the connection is not
//! used); whether a connection came through TLS reaches requests as connection data,
//! [`Listening`](crate::http::Listening), set by `on_connect_ext`, which actix-http supports for this.

use std::io;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_http::{HttpService, Protocol};
use actix_server::{Server, ServerBuilder};
use actix_service::{IntoServiceFactory, ServiceFactoryExt, boxed, fn_service, map_config};
use actix_tls::accept::rustls_0_23::TlsStream;
use actix_web::dev::AppConfig;
use actix_web::http::KeepAlive;
use actix_web::rt::net::TcpStream;
use actix_web::web;
use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::http::{self, Listening, Ops};
use chartreg_core::content::Registry;

mod handshake;
mod plain;

pub use handshake::Failure as HandshakeFailure;

/// Encrypted bytes one TLS connection may queue (see the module's documentation).
pub const TLS_SEND_BUFFER: usize = 512 * 1024;

/// How long a new connection on the HTTPS port may take from being accepted to the end of its
/// TLS handshake, its first byte's wait included (actix-tls's handshake timeout, which used to
/// come after a wait as long for the first byte).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

/// What the main listener's server is made with.
pub struct Settings {
    pub workers: usize,
    /// Per worker.
    pub max_connections: usize,
    pub shutdown_timeout: Duration,
    pub request_header_timeout: Duration,
    pub keep_alive: Duration,
}

/// The server answering `registry` on `listener`, over TLS with `tls` when given.
pub fn server(
    listener: TcpListener,
    tls: Option<ServerConfig>,
    registry: web::Data<Registry>,
    ops: web::Data<Ops>,
    settings: &Settings,
) -> io::Result<Server> {
    let address = listener.local_addr()?;
    // Handshakes in progress are bounded by the connection cap and the handshake timeout only
    // (actix-tls's acceptor allowed 256 per worker and stopped taking connections while they
    // were all in progress: 256 clients that stalled mid-handshake kept every new client
    // waiting 3 s; `make stress`, the `tls` figure).
    let builder: ServerBuilder = Server::build()
        .workers(settings.workers)
        .disable_signals()
        .shutdown_timeout(settings.shutdown_timeout.as_secs_f64().ceil() as u64)
        .max_concurrent_connections(settings.max_connections);
    let shutdown = builder.graceful_shutdown_signal();
    let keep_alive = KeepAlive::Timeout(settings.keep_alive);
    let request_timeout = settings.request_header_timeout;
    let listening = Listening {
        secure: tls.is_some(),
        address,
    };
    let tls = tls.map(|config| TlsAcceptor::from(Arc::new(with_alpn(config))));
    let reporter = Arc::new(handshake::Reporter::default());
    if tls.is_some() {
        ops.metrics
            .tls_handshake_reasons(handshake::Failure::ALL.map(handshake::Failure::label));
    }
    // The HTTP service for one worker, over connections of type `$io` (the TCP stream, or the
    // TLS stream on it): a macro, as the two differ in type.
    macro_rules! http_service {
        ($io:ty) => {{
            let shutdown = shutdown.clone();
            let app = http::app_with(registry.clone(), ops.clone())
                .into_factory()
                .map_err(|e| e.error_response());
            HttpService::<$io, _, _>::build()
                .graceful_shutdown_signal(move || {
                    let signal = shutdown.clone();
                    async move { signal.notified().await }
                })
                .keep_alive(keep_alive)
                .client_request_timeout(request_timeout)
                // `HttpServer`'s: a closing client gets a second to read the rest.
                .client_disconnect_timeout(Duration::from_secs(1))
                .local_addr(address)
                .on_connect_ext(move |_: &$io, data: &mut actix_http::Extensions| {
                    data.insert(listening);
                })
                .finish(map_config(app, |_| AppConfig::default()))
        }};
    }
    let builder = builder.listen("chartreg", listener, move || -> ConnectionService {
        match &tls {
            None => boxed::factory(
                fn_service(|io: TcpStream| async move { Ok::<_, ()>(without_delay(io)) })
                    .and_then(http_service!(TcpStream).tcp().map_err(|_| ())),
            ),
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                let reporter = reporter.clone();
                let ops = ops.clone();
                let service = fn_service(move |io: TcpStream| {
                    let (acceptor, reporter, ops) =
                        (acceptor.clone(), reporter.clone(), ops.clone());
                    async move {
                        let peer = io.peer_addr().ok();
                        match handshake(without_delay(io), &acceptor).await {
                            Ok(io) => Ok(accepted(io)),
                            Err((failure, detail)) => {
                                reporter.failed(&ops.metrics, failure, peer, &detail);
                                Err(())
                            }
                        }
                    }
                })
                .and_then(
                    http_service!(TlsStream<TcpStream>)
                        .map_err(|_| ())
                        .map_init_err(|_| ()),
                );
                boxed::factory(service)
            }
        }
    })?;
    Ok(builder.run())
}

/// `io` with `TCP_NODELAY` set (see the module's documentation); a socket that refuses it is
/// served as it is.
fn without_delay(io: TcpStream) -> TcpStream {
    if let Err(e) = io.set_nodelay(true) {
        log::debug!("cannot set TCP_NODELAY: {e}");
    }
    io
}

/// Plain HTTP sorted out, then the TLS handshake, the two within [`HANDSHAKE_TIMEOUT`]; why
/// the connection ended when it did.
async fn handshake(
    io: TcpStream,
    acceptor: &TlsAcceptor,
) -> Result<TlsStream<TcpStream>, (handshake::Failure, String)> {
    use handshake::Failure;
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let io = plain::sort(io, deadline)
        .await
        .map_err(|refused| (Failure::of_refused(&refused), refused.to_string()))?;
    match tokio::time::timeout_at(deadline, acceptor.accept(io)).await {
        Ok(Ok(stream)) => Ok(TlsStream::from(stream)),
        Ok(Err(e)) => Err((Failure::of(&e), e.to_string())),
        Err(_) => Err((
            Failure::Timeout,
            format!("not done within {HANDSHAKE_TIMEOUT:?}"),
        )),
    }
}

/// What a worker answers each connection with, plain or TLS (errors are the connection's own
/// and end it; actix logs nothing more of them than before).
type ConnectionService = boxed::BoxServiceFactory<(), TcpStream, (), (), ()>;

/// The application protocols HTTPS offers, as actix-web offers them.
fn with_alpn(mut config: ServerConfig) -> ServerConfig {
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config
}

/// A connection whose handshake is done: its send buffer raised, its protocol and peer.
fn accepted(
    mut io: TlsStream<TcpStream>,
) -> (TlsStream<TcpStream>, Protocol, Option<std::net::SocketAddr>) {
    let (tcp, connection) = io.get_mut();
    widen_send_buffer(connection);
    let peer = tcp.peer_addr().ok();
    let protocol = match connection.alpn_protocol() {
        Some(b"h2") => Protocol::Http2,
        _ => Protocol::Http1,
    };
    (io, protocol, peer)
}

/// Lets `connection` queue [`TLS_SEND_BUFFER`] bytes of encrypted data.
fn widen_send_buffer(connection: &mut rustls::ServerConnection) {
    connection.set_buffer_limit(Some(TLS_SEND_BUFFER));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    /// Plaintext a connection takes in before it must write to the socket.
    fn taken(widen: bool) -> usize {
        let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let config = ServerConfig::builder_with_provider(crate::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![key.cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.signing_key.serialize_der().into()),
            )
            .unwrap();
        let mut connection = rustls::ServerConnection::new(Arc::new(config)).unwrap();
        if widen {
            widen_send_buffer(&mut connection);
        }
        connection
            .writer()
            .write(&vec![0; 4 * TLS_SEND_BUFFER])
            .unwrap()
    }

    #[test]
    fn a_connection_queues_the_widened_send_buffer() {
        assert_eq!(taken(false), 64 * 1024, "rustls's default");
        assert_eq!(taken(true), TLS_SEND_BUFFER);
    }
}
