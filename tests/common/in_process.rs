//! The chartreg library serving any registry on a real socket in this process: a listener bound
//! to 127.0.0.1:0 and kept, handed to the server; plain HTTP, or HTTPS with a given rustls
//! configuration. Stopped on drop. [`Background`] is the mechanism under it: any actix server
//! on a thread of its own, stopped and joined on drop (the build tool's test upstreams use it
//! too).
//!
//! Shared by the server's tests (`tests/common`) and the build tool's (`crates/chartreg-build/tests/common`,
//! which includes this file by path).

use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc;
use std::thread;

use actix_web::{HttpServer, web};
use chartreg_core::content::Registry;

/// The library serving `registry` on a real socket in this process (a listener bound to
/// 127.0.0.1:0 and kept), stopped on drop.
pub struct InProcess {
    pub addr: SocketAddr,
    scheme: &'static str,
    _server: Background,
}

/// An actix server running on a thread of its own (in its own actix system), stopped and
/// joined on drop.
pub struct Background {
    handle: actix_web::dev::ServerHandle,
    thread: Option<thread::JoinHandle<()>>,
}

impl Background {
    /// Runs the server `start` makes (called on the new thread, inside its actix system, where
    /// `HttpServer::run` needs to be) until dropped.
    pub fn spawn(start: impl FnOnce() -> actix_web::dev::Server + Send + 'static) -> Background {
        let (tx, rx) = mpsc::channel();
        let thread = thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = start();
                tx.send(server.handle()).expect("test is waiting");
                server.await.expect("server runs");
            })
        });
        let handle = rx.recv().expect("server started");
        Background {
            handle,
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let stop = self.handle.stop(false);
        // The server's own runtime is on its thread; waiting for the stop needs none here.
        futures_util::FutureExt::now_or_never(stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl InProcess {
    /// Over plain HTTP.
    pub fn start(registry: Registry) -> InProcess {
        InProcess::start_with(registry, None)
    }

    /// Over HTTPS with `tls`.
    pub fn start_tls(registry: Registry, tls: rustls::ServerConfig) -> InProcess {
        InProcess::start_with(registry, Some(tls))
    }

    fn start_with(registry: Registry, tls: Option<rustls::ServerConfig>) -> InProcess {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("bound address");
        let data = web::Data::new(registry);
        let server = Background::spawn(move || {
            let server = HttpServer::new(move || chartreg::http::app(data.clone())).workers(2);
            match tls {
                Some(config) => server.listen_rustls_0_23(listener, config),
                None => server.listen(listener),
            }
            .expect("listen on the bound socket")
            .run()
        });
        InProcess {
            addr,
            scheme,
            _server: server,
        }
    }

    /// `http(s)://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}
