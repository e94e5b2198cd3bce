//! The main listener's server: the HTTP application behind plain HTTP, or behind TLS.
//!
//! Built from actix's parts (`actix-server`, `actix-http`, `actix-tls`) the way actix-web's
//! `HttpServer` builds them, with one step more for HTTPS: once a connection's handshake is
//! done (actix-tls: ALPN h2 and http/1.1, a handshake timeout, a bound on handshakes in
//! progress, raised to the connection cap: see [`server`]), its TLS send buffer is raised from
//! rustls's 64 KiB to [`TLS_SEND_BUFFER`]. `HttpServer` gives no way to reach the connection
//! for that.
//!
//! Why: the send buffer is how much encrypted data a connection queues before its writes wait,
//! so it is the most one write to the socket carries. 64 KiB of plaintext is four 16 KiB records
//! and their headers, just over loopback's 64 KiB segments: every write became a full segment
//! and a tiny one. Serving a 32 MiB blob over HTTPS to 4 clients (`make bench`, one CPU for the
//! server) the kernel's share fell from 0.29-0.45 to 0.15-0.25 s of CPU per GiB, and the
//! server's CPU per GiB by about a quarter, with 128 KiB to 1 MiB (0.44 s/GiB; nginx 0.65-0.70).
//! 512 KiB keeps what one download can hold in memory bounded (see the README, "Footprint").
//!
//! Before the handshake, each connection's first byte is peeked: plain HTTP sent to the HTTPS
//! port is answered `400 Bad Request` and closed there, and everything else goes on to the TLS
//! acceptor untouched (module `plain`).

use std::io;
use std::net::TcpListener;
use std::time::Duration;

use actix_http::{HttpService, Protocol};
use actix_server::{Server, ServerBuilder};
use actix_service::{IntoServiceFactory, ServiceFactoryExt, boxed, fn_service, map_config};
use actix_tls::accept::rustls_0_23::{Acceptor, TlsStream};
use actix_web::dev::AppConfig;
use actix_web::http::KeepAlive;
use actix_web::rt::net::TcpStream;
use actix_web::web;
use rustls::ServerConfig;

use crate::http::{self, Ops};
use chartreg_core::content::Registry;

mod plain;

/// Encrypted bytes one TLS connection may queue (see the module's documentation).
pub const TLS_SEND_BUFFER: usize = 512 * 1024;

/// How long a TLS handshake may take (actix-tls's default), and how long a new
/// connection on the HTTPS port may take to send its first byte (module `plain`).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

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
    // actix-tls lets a worker run 256 handshakes at once and stops taking connections while
    // they are all in progress: 256 clients that stall mid-handshake kept every new client
    // waiting for the handshake timeout (3 s; `make stress`, the `tls` figure). The connection
    // cap and the timeout already bound them, so handshakes may use every connection slot. Read
    // by each worker thread when it starts, so set before `run`.
    actix_tls::accept::max_concurrent_tls_connect(settings.max_connections);
    let builder: ServerBuilder = Server::build()
        .workers(settings.workers)
        .disable_signals()
        .shutdown_timeout(settings.shutdown_timeout.as_secs_f64().ceil() as u64)
        .max_concurrent_connections(settings.max_connections);
    let shutdown = builder.graceful_shutdown_signal();
    let keep_alive = KeepAlive::Timeout(settings.keep_alive);
    let request_timeout = settings.request_header_timeout;
    let secure = tls.is_some();
    let tls = tls.map(with_alpn);
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
                .finish(map_config(app, move |_| {
                    // What `HttpServer` gives the app: whether the connection is secure and
                    // the host to fall back on (the pages' commands use both). actix-web
                    // makes its constructor public only for actix-test, as this one.
                    AppConfig::__priv_test_new(secure, address.to_string(), address)
                }))
        }};
    }
    let builder = builder.listen("chartreg", listener, move || -> ConnectionService {
        match &tls {
            None => boxed::factory(http_service!(TcpStream).tcp().map_err(|_| ())),
            Some(config) => {
                let mut acceptor = Acceptor::new(config.clone());
                acceptor.set_handshake_timeout(HANDSHAKE_TIMEOUT);
                // Plain HTTP is answered, and ends, before the handshake (module `plain`).
                let service = fn_service(|io: TcpStream| plain::sort(io, HANDSHAKE_TIMEOUT))
                    .and_then(acceptor.map_init_err(|_| ()).map_err(|_| ()))
                    .and_then(|io: TlsStream<TcpStream>| async move { Ok(accepted(io)) })
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
