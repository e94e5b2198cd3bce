//! `chartreg serve`: the server around the HTTP application.
//!
//! Start-up, in order: load TLS files (if any) and the content, bind the listeners, build the
//! servers (the main one in `listener`), mark ready, log one summary line. Any failure before
//! that is an error naming what failed, and nothing listens.
//!
//! Shutdown, on SIGTERM or SIGINT (handled here; actix's own handling is off because its SIGINT
//! is a forced stop): `/readyz` answers 503 at once; requests are served for `shutdown_delay`
//! so that endpoints and load balancers stop routing here; then the listeners close and
//! in-flight requests (a large download included) get up to `shutdown_timeout` to finish.
//! A second signal stops at once.

use std::io;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use actix_web::{HttpServer, web};

use crate::http::{self, Ops};
use crate::listener;
use crate::metrics::{BuildInfo, Metrics};
use crate::tls::{self, Reloading, TlsError, TlsFiles};
use chartreg_core::content::{Registry, Unservable};

/// Why the server did not start; nothing listens then.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("the embedded content cannot be served: {0}")]
    Content(#[from] Unservable),
    #[error("cannot listen on {address}: {source}")]
    Bind { address: String, source: io::Error },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("cannot handle {signal}: {source}")]
    Signal {
        signal: &'static str,
        source: io::Error,
    },
}

/// Why a running server stopped other than by being told to.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("server failed: {0}")]
    Server(io::Error),
}

/// What `run` can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// Everything `serve` can be told.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: String,
    pub tls: Option<TlsFiles>,
    pub tls_reload_interval: Duration,
    pub metrics_listen: Option<String>,
    pub workers: usize,
    pub shutdown_delay: Duration,
    pub shutdown_timeout: Duration,
    pub request_header_timeout: Duration,
    pub keep_alive: Duration,
    pub max_connections: usize,
    pub max_header_bytes: usize,
}

/// A listener on `address` whose backlog holds `backlog` connections (the kernel caps it at
/// `net.core.somaxconn`). Connections past `--max-connections` wait there for a free slot;
/// std's `TcpListener::bind` gives 128, past which the kernel drops a new connection's
/// handshake and its client retries a second or more later. The first address that binds wins,
/// as with std.
fn bind(address: &str, backlog: usize) -> Result<TcpListener, StartupError> {
    use socket2::{Domain, Socket, Type};
    use std::net::ToSocketAddrs;
    let failed = |source| StartupError::Bind {
        address: address.to_owned(),
        source,
    };
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to bind to");
    for resolved in address.to_socket_addrs().map_err(failed)? {
        let listener =
            Socket::new(Domain::for_address(resolved), Type::STREAM, None).and_then(|socket| {
                // As std does: a restarted server binds at once despite connections in
                // TIME_WAIT.
                socket.set_reuse_address(true)?;
                socket.bind(&resolved.into())?;
                socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
                Ok(socket)
            });
        match listener {
            Ok(socket) => return Ok(socket.into()),
            Err(e) => last = e,
        }
    }
    Err(failed(last))
}

/// The error of a listener that cannot be set up at `address`.
fn cannot_listen(address: impl ToString) -> impl FnOnce(io::Error) -> StartupError {
    move |source| StartupError::Bind {
        address: address.to_string(),
        source,
    }
}

/// Runs the server until it is told to stop; returns once it has.
pub fn run(registry: Registry, options: &ServeOptions, started: Instant) -> Result<(), Error> {
    let resolver = match &options.tls {
        Some(files) => Some(Reloading::load(files.clone()).map_err(StartupError::from)?),
        None => None,
    };
    let listener = bind(&options.listen, options.max_connections.max(1024))?;
    // Scrapes come one at a time.
    let metrics_listener = options
        .metrics_listen
        .as_deref()
        .map(|address| bind(address, 128))
        .transpose()?;
    let address = listener
        .local_addr()
        .map_err(cannot_listen(&options.listen))?;

    let summary = registry.summary();
    let metrics = Arc::new(Metrics::new(
        &http::LABELS,
        summary,
        BuildInfo::of_this_build(),
    ));
    let ops = web::Data::new(Ops::new(
        metrics.clone(),
        options.max_header_bytes,
        metrics_listener.is_none(),
    ));
    let registry = web::Data::new(registry);
    let workers = options.workers.max(1);

    actix_web::rt::System::new().block_on(async move {
        let tls = match &resolver {
            Some(resolver) => {
                let config = tls::server_config(resolver.clone()).map_err(StartupError::from)?;
                resolver.watch(options.tls_reload_interval);
                Some(config)
            }
            None => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let settings = listener::Settings {
            workers,
            max_connections: options.max_connections.div_ceil(workers).max(1),
            shutdown_timeout: options.shutdown_timeout,
            request_header_timeout: options.request_header_timeout,
            keep_alive: options.keep_alive,
        };
        let server = listener::server(listener, tls, registry, ops.clone(), &settings)
            .map_err(cannot_listen(address))?;
        let mut handles = vec![server.handle()];

        let mut metrics_server = None;
        let mut metrics_note = String::new();
        if let Some(listener) = metrics_listener {
            let metrics_address = listener
                .local_addr()
                .map_err(cannot_listen(options.metrics_listen.as_deref().unwrap_or_default()))?;
            let metrics = metrics.clone();
            let s = HttpServer::new(move || http::metrics_app(metrics.clone()))
                .workers(1)
                .disable_signals()
                .listen(listener)
                .map_err(cannot_listen(metrics_address))?
                .run();
            handles.push(s.handle());
            metrics_server = Some(s);
            metrics_note = format!(", metrics on http://{metrics_address}/metrics");
        }

        // Listen for signals before saying we are ready, so that no signal finds the default
        // action (terminate) in place.
        let signals = Signals::listen()?;
        ops.set_ready(true);
        log::info!(
            "serving {} repositories, {} tags, {} manifests, {} blobs ({} bytes) on {scheme}://{address}{metrics_note} (ready in {} ms; content checked at build time)",
            summary.repositories,
            summary.tags,
            summary.manifests,
            summary.blobs,
            summary.bytes,
            started.elapsed().as_millis(),
        );
        actix_web::rt::spawn(stop_on_signal(signals, ops.clone(), handles, options.shutdown_delay));
        if let Some(s) = metrics_server {
            actix_web::rt::spawn(s);
        }
        server.await.map_err(RuntimeError::Server)?;
        log::info!("stopped");
        Ok(())
    })
}

/// SIGTERM and SIGINT, taken over from their default action.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> Result<Signals, StartupError> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind, signal_name| {
            signal(kind).map_err(|source| StartupError::Signal {
                signal: signal_name,
                source,
            })
        };
        Ok(Signals {
            term: listen(SignalKind::terminate(), "SIGTERM")?,
            int: listen(SignalKind::interrupt(), "SIGINT")?,
        })
    }

    /// The name of the next signal to arrive.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

/// Waits for SIGTERM or SIGINT, then shuts down as the module doc describes.
async fn stop_on_signal(
    mut signals: Signals,
    ops: web::Data<Ops>,
    handles: Vec<ServerHandle>,
    delay: Duration,
) {
    let first = signals.next().await;
    ops.set_ready(false);
    log::info!(
        "{first}: not ready; serving for {} more, then draining",
        humantime::format_duration(delay)
    );
    let graceful = async {
        actix_web::rt::time::sleep(delay).await;
        log::info!("closing listeners; waiting for requests in flight");
        for handle in &handles {
            handle.stop(true).await;
        }
    };
    tokio::select! {
        _ = graceful => {}
        _ = signals.next() => force(&handles).await,
    }
}

async fn force(handles: &[ServerHandle]) {
    log::warn!("second signal: stopping now");
    for handle in handles {
        handle.stop(false).await;
    }
}
