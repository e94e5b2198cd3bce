//! The upstream sources the fetch tests take from, all on 127.0.0.1 and started by the tests:
//! a classic Helm repository whose files a test sets and breaks (404, other bytes, a reset
//! mid-download, any status and body), over HTTP or HTTPS with a private CA, with basic auth or
//! without (which also serves as a registry that lies: `/v2/...` are paths like any); and a
//! front that asks for bearer tokens (a `WWW-Authenticate: Bearer` challenge and a token
//! endpoint) before the chartreg library serving the committed content.
//!
//! (Debian's docker-registry, with htpasswd, is `common::Distribution`.)

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use actix_web::dev::Service as _;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine as _;

use super::common;

/// `Basic <base64 of user:password>`.
pub fn basic(user: &str, password: &str) -> String {
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

// ---------------------------------------------------------------------------------------------
// Certificates
// ---------------------------------------------------------------------------------------------

/// A private CA and a server certificate it signed for 127.0.0.1.
pub struct Tls {
    pub ca_pem: String,
    /// The server's private key (what a CA file must not be).
    pub key_pem: String,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

impl Tls {
    pub fn new() -> Tls {
        let cert = common::LoopbackCert::new("chartreg fetch test CA");
        Tls {
            ca_pem: cert.ca_pem,
            key_pem: cert.key_pem,
            cert_der: cert.cert_der,
            key_der: cert.key_der,
        }
    }

    /// A rustls server configuration with the certificate and its key.
    pub fn server_config(&self) -> rustls::ServerConfig {
        common::server_config(&self.cert_der, &self.key_der)
    }
}

// ---------------------------------------------------------------------------------------------
// A classic Helm repository
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct RepoState {
    files: BTreeMap<String, Vec<u8>>,
    /// How many more GETs of a path are cut off half-way.
    resets: BTreeMap<String, usize>,
    /// GETs of each path.
    hits: BTreeMap<String, usize>,
    /// The `Authorization` every request must carry, if any.
    required: Option<String>,
    /// Paths requested with an `Authorization` header.
    authorized: Vec<String>,
    /// Paths answered with another status than 200 (their files as the body).
    statuses: BTreeMap<String, u16>,
}

/// A classic Helm repository (any files, by path) on a real socket, stopped on drop.
pub struct HelmRepo {
    pub addr: SocketAddr,
    scheme: &'static str,
    state: Arc<Mutex<RepoState>>,
    _server: common::Background,
}

async fn answer(req: HttpRequest, state: web::Data<Arc<Mutex<RepoState>>>) -> HttpResponse {
    let path = req.path().trim_start_matches('/').to_owned();
    let mut state = state.lock().expect("repository state");
    *state.hits.entry(path.clone()).or_default() += 1;
    let given = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if given.is_some() {
        state.authorized.push(path.clone());
    }
    if let Some(required) = &state.required
        && given.as_ref() != Some(required)
    {
        return HttpResponse::Unauthorized()
            .insert_header(("WWW-Authenticate", "Basic realm=\"charts\""))
            .finish();
    }
    let Some(data) = state.files.get(&path).cloned() else {
        return HttpResponse::NotFound().body("not found");
    };
    if let Some(status) = state.statuses.get(&path) {
        let status = actix_web::http::StatusCode::from_u16(*status).expect("a status");
        return HttpResponse::build(status).body(data);
    }
    if let Some(left) = state.resets.get_mut(&path)
        && *left > 0
    {
        *left -= 1;
        // Half the bytes, then the connection is dropped: the length promised is never met.
        let half = bytes::Bytes::from(data[..data.len() / 2].to_vec());
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = vec![
            Ok(half),
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "cut off by the test",
            )),
        ];
        return HttpResponse::Ok()
            .no_chunking(data.len() as u64)
            .streaming(futures_util::stream::iter(chunks));
    }
    HttpResponse::Ok().body(data)
}

impl HelmRepo {
    /// Over plain HTTP.
    pub fn start() -> HelmRepo {
        HelmRepo::start_with(None)
    }

    /// Over HTTPS with `tls`'s certificate.
    pub fn start_tls(tls: &Tls) -> HelmRepo {
        HelmRepo::start_with(Some(tls.server_config()))
    }

    fn start_with(tls: Option<rustls::ServerConfig>) -> HelmRepo {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("bound address");
        let state = Arc::new(Mutex::new(RepoState::default()));
        let data = web::Data::new(state.clone());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let server = common::Background::spawn(move || {
            let server = HttpServer::new(move || {
                App::new()
                    .app_data(data.clone())
                    .default_service(web::to(answer))
            })
            .workers(1);
            match tls {
                Some(config) => server.listen_rustls_0_23(listener, config),
                None => server.listen(listener),
            }
            .expect("listen on the bound socket")
            .run()
        });
        HelmRepo {
            addr,
            scheme,
            state,
            _server: server,
        }
    }

    /// `http(s)://127.0.0.1:PORT/` and `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}/{path}", self.scheme, self.addr)
    }

    pub fn put(&self, path: &str, data: &[u8]) {
        let mut state = self.state.lock().expect("repository state");
        state.files.insert(path.to_owned(), data.to_vec());
    }

    /// `path` is answered with `status`, `data` as the body.
    pub fn answer(&self, path: &str, status: u16, data: &[u8]) {
        let mut state = self.state.lock().expect("repository state");
        state.files.insert(path.to_owned(), data.to_vec());
        state.statuses.insert(path.to_owned(), status);
    }

    pub fn remove(&self, path: &str) {
        self.state
            .lock()
            .expect("repository state")
            .files
            .remove(path);
    }

    /// The next `times` GETs of `path` are cut off half-way.
    pub fn reset(&self, path: &str, times: usize) {
        let mut state = self.state.lock().expect("repository state");
        state.resets.insert(path.to_owned(), times);
    }

    /// Every request must carry this user's basic auth.
    pub fn require(&self, user: &str, password: &str) {
        self.state.lock().expect("repository state").required = Some(basic(user, password));
    }

    pub fn hits(&self, path: &str) -> usize {
        let state = self.state.lock().expect("repository state");
        state.hits.get(path).copied().unwrap_or(0)
    }

    /// The paths requested with credentials.
    pub fn authorized(&self) -> Vec<String> {
        self.state
            .lock()
            .expect("repository state")
            .authorized
            .clone()
    }

    /// Serves `packages` (`(path, bytes)`) and an `index.yaml` listing each (its URL as
    /// `urls(path)` gives it, its digest as `digest(path, bytes)` gives it).
    pub fn publish(
        &self,
        packages: &[(&str, &[u8])],
        urls: impl Fn(&str) -> String,
        digest: impl Fn(&str, &[u8]) -> String,
    ) {
        let mut entries: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (path, data) in packages {
            let file = path.rsplit('/').next().unwrap_or(path);
            let stem = file.trim_end_matches(".tgz");
            let (name, version) = stem.split_once('-').expect("NAME-VERSION.tgz");
            entries.entry(name.to_owned()).or_default().push(format!(
                "  - apiVersion: v2\n    name: {name}\n    version: {version}\n    digest: {}\n    urls:\n    - {}\n",
                digest(path, data),
                urls(path)
            ));
            self.put(path, data);
        }
        let mut index = String::from("apiVersion: v1\nentries:\n");
        for (name, versions) in entries {
            index.push_str(&format!("  {name}:\n"));
            for v in versions {
                index.push_str(&v);
            }
        }
        index.push_str("generated: \"2026-01-01T00:00:00Z\"\n");
        self.put("index.yaml", index.as_bytes());
    }
}

// ---------------------------------------------------------------------------------------------
// A registry behind bearer tokens
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct FrontState {
    /// Token requests, with whether their credentials were right.
    token_requests: Vec<bool>,
    /// Registry requests refused for want of the token.
    challenged: usize,
}

/// The chartreg library serving the committed content behind a bearer-token challenge:
/// `/v2/...` needs `Authorization: Bearer <token>`, which the token endpoint (on its own port,
/// named by the challenge's `realm`) hands out for the right basic auth.
pub struct BearerFront {
    pub addr: SocketAddr,
    state: Arc<Mutex<FrontState>>,
    /// The registry behind the challenge, and the token endpoint: each on its own thread,
    /// stopped when the front is dropped.
    _servers: [common::Background; 2],
}

const TOKEN: &str = "chartreg-test-token";

impl BearerFront {
    pub fn start(user: &str, password: &str) -> BearerFront {
        let registry_listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let token_listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = registry_listener.local_addr().expect("bound address");
        let token_addr = token_listener.local_addr().expect("bound address");
        let state = Arc::new(Mutex::new(FrontState::default()));
        let expected = basic(user, password);
        let front_state = state.clone();
        let front = common::Background::spawn(move || {
            let registry = web::Data::new(common::assets_registry());
            let challenge =
                format!("Bearer realm=\"http://{token_addr}/token\",service=\"chartreg-test\"");
            HttpServer::new(move || {
                let challenge = challenge.clone();
                let state = front_state.clone();
                chartreg::http::app(registry.clone()).wrap_fn(move |req, srv| {
                    use futures_util::future::{Either, ready};
                    let allowed = req
                        .headers()
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        == Some(&format!("Bearer {TOKEN}"));
                    if allowed {
                        let call = srv.call(req);
                        Either::Left(async move { Ok(call.await?.map_into_left_body()) })
                    } else {
                        state.lock().expect("front state").challenged += 1;
                        let refused = HttpResponse::Unauthorized()
                            .insert_header(("WWW-Authenticate", challenge.clone()))
                            .insert_header(("Content-Type", "application/json"))
                            .body(r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#);
                        Either::Right(ready(Ok(req.into_response(refused).map_into_right_body())))
                    }
                })
            })
            .workers(1)
            .listen(registry_listener)
            .expect("listen")
            .run()
        });
        let token_state = state.clone();
        let tokens = common::Background::spawn(move || {
            HttpServer::new(move || {
                let expected = expected.clone();
                let state = token_state.clone();
                App::new().route(
                    "/token",
                    web::get().to(move |req: HttpRequest| {
                        let ok = req
                            .headers()
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            == Some(expected.as_str());
                        state.lock().expect("front state").token_requests.push(ok);
                        async move {
                            if ok {
                                HttpResponse::Ok().json(serde_json::json!({
                                    "token": TOKEN,
                                    "access_token": TOKEN,
                                    "expires_in": 300
                                }))
                            } else {
                                HttpResponse::Unauthorized().finish()
                            }
                        }
                    }),
                )
            })
            .workers(1)
            .listen(token_listener)
            .expect("listen")
            .run()
        });
        BearerFront {
            addr,
            state,
            _servers: [front, tokens],
        }
    }

    /// Token requests so far, each with whether its credentials were right.
    pub fn token_requests(&self) -> Vec<bool> {
        self.state
            .lock()
            .expect("front state")
            .token_requests
            .clone()
    }

    /// Registry requests answered with the challenge.
    pub fn challenged(&self) -> usize {
        self.state.lock().expect("front state").challenged
    }
}
