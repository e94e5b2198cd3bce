//! Plain HTTP sent to the HTTPS port: told apart from TLS before the handshake, answered
//! `400 Bad Request` saying that the port speaks HTTPS (as nginx answers it), logged once per
//! connection, and closed. Helm 3 (containerd's resolver) speaks plain HTTP to `localhost` and
//! `127.0.0.1` whatever the server speaks; a TLS acceptor answers it with an alert, which such a
//! client reports as `malformed HTTP response "\x15\x03\x03..."`.
//!
//! What [`sort`] does with each connection accepted on the HTTPS port:
//! 1. Peeks at its first byte (`MSG_PEEK`: the bytes stay in the socket, and the TLS acceptor
//!    reads them untouched), waiting at most the handshake timeout: a client that sends nothing
//!    is cut then, as the handshake timeout cut it before.
//! 2. A byte that is not an ASCII letter (0x16 starts a TLS handshake record) goes on to the TLS
//!    acceptor, which refuses what is not TLS as it always has.
//! 3. An ASCII letter cannot start TLS (record types are 0x14-0x18, an SSLv2 hello has its top
//!    bit set), so the connection is this module's: it reads the request head (at most
//!    [`HEAD_LIMIT`] bytes, within the same deadline). If it starts as an HTTP request line
//!    does (ASCII letters, then a space), it is answered (see [`answer`]) and a warning names
//!    the peer; anything else is closed unanswered, as the TLS acceptor would have closed it.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use actix_web::rt::net::TcpStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, timeout, timeout_at};

use crate::http::{API_VERSION, ErrorCode, error_body};

/// The most of a plain HTTP request head read before answering (Helm's are under 1 KiB).
pub const HEAD_LIMIT: usize = 4 * 1024;

/// The longest method taken for one (`PROPFIND`, `MKCALENDAR`: 10 letters; longer is no HTTP).
const METHOD_LIMIT: usize = 16;

/// How long the answer may take to write, and the client to close after it.
const CLOSING: Duration = Duration::from_secs(1);

/// The most read (and dropped) after the answer, while waiting for the client to close.
const DRAIN_LIMIT: usize = 64 * 1024;

/// Why a connection on the HTTPS port ended before the TLS handshake.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("sent nothing in time")]
    Silent,
    #[error("closed before sending anything")]
    Closed,
    #[error("cannot read from the connection: {0}")]
    Read(io::Error),
    #[error("sent {0} bytes that are neither TLS nor an HTTP request")]
    NotHttp(usize),
    #[error("plain HTTP: answered 400")]
    PlainHttp,
    #[error("plain HTTP: the 400 could not be sent: {0}")]
    Write(io::Error),
}

/// What the first byte of a connection says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    /// TLS, or something that is neither TLS nor HTTP: the TLS acceptor's to handle.
    Tls,
    /// Not TLS: possibly plain HTTP.
    NotTls,
}

impl First {
    pub fn of(byte: u8) -> First {
        if byte.is_ascii_alphabetic() {
            First::NotTls
        } else {
            First::Tls
        }
    }
}

/// Passes a TLS connection on, untouched; answers and ends a plain HTTP one (step by step in
/// the module's documentation). `deadline`: when the client must have sent its first byte, and
/// its request head; why a connection ended here.
pub async fn sort(mut io: TcpStream, deadline: Instant) -> Result<TcpStream, Refused> {
    let mut first = [0u8; 1];
    let peeked = timeout_at(deadline, io.peek(&mut first)).await;
    let peer = io.peer_addr().ok();
    match peeked {
        Err(_) => return Err(Refused::Silent),
        Ok(Err(e)) => return Err(Refused::Read(e)),
        Ok(Ok(0)) => return Err(Refused::Closed),
        Ok(Ok(_)) => {}
    }
    if First::of(first[0]) == First::Tls {
        return Ok(io);
    }
    let head = read_head(&mut io, deadline).await;
    let Some(request) = Request::parse(&head) else {
        return Err(Refused::NotHttp(head.len()));
    };
    let fallback = io.local_addr().ok();
    log::warn!(
        peer = Peer(peer).to_string().as_str(),
        method = request.method,
        path = request.logged_target().to_string().as_str();
        "plain HTTP request to the HTTPS port from {}: {} {}; answered 400 (this port speaks HTTPS)",
        Peer(peer),
        request.method,
        request.logged_target(),
    );
    let response = answer(&request, fallback);
    let written = timeout(CLOSING, async {
        io.write_all(&response).await?;
        io.shutdown().await
    })
    .await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(Refused::Write(e)),
        Err(_) => {
            let late = io::Error::new(io::ErrorKind::TimedOut, "the client did not read it");
            return Err(Refused::Write(late));
        }
    }
    // Closing with unread bytes would reset the connection, and the client could lose the
    // answer: read what else it sends until it closes (bounded in bytes and time).
    let _ = timeout(CLOSING, drain(&mut io)).await;
    Err(Refused::PlainHttp)
}

/// Reads until the end of the request head, [`HEAD_LIMIT`] bytes, the client's end, an error
/// or `deadline`: what came is answered.
async fn read_head(io: &mut TcpStream, deadline: Instant) -> Vec<u8> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while head.len() < HEAD_LIMIT && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let room = HEAD_LIMIT.saturating_sub(head.len()).min(chunk.len());
        let Some(buffer) = chunk.get_mut(..room) else {
            break;
        };
        match timeout_at(deadline, io.read(buffer)).await {
            Ok(Ok(n)) if n > 0 => head.extend_from_slice(buffer.get(..n).unwrap_or_default()),
            _ => break,
        }
    }
    head
}

async fn drain(io: &mut TcpStream) {
    let mut chunk = [0u8; 4096];
    let mut read = 0usize;
    while read < DRAIN_LIMIT {
        match io.read(&mut chunk).await {
            Ok(n) if n > 0 => read = read.saturating_add(n),
            _ => return,
        }
    }
}

/// A peer address for a log line (empty when unknown).
struct Peer(Option<SocketAddr>);

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(addr) => addr.fmt(f),
            None => f.write_str("an unknown peer"),
        }
    }
}

/// What the answer needs of a plain HTTP request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The request target as sent (up to the next space or line end), or empty.
    pub target: &'a [u8],
    /// The `Host` header, when it is a host name or address with an optional port.
    pub host: Option<&'a str>,
}

impl<'a> Request<'a> {
    /// The request line's method and target and the `Host` header of `head`, if it starts as
    /// an HTTP request does: 1 to [`METHOD_LIMIT`] ASCII letters, then a space.
    pub fn parse(head: &'a [u8]) -> Option<Request<'a>> {
        let space = head.iter().position(|&b| b == b' ')?;
        let method = head.get(..space)?;
        if method.is_empty()
            || method.len() > METHOD_LIMIT
            || !method.iter().all(u8::is_ascii_alphabetic)
        {
            return None;
        }
        let rest = head.get(space.saturating_add(1)..).unwrap_or_default();
        let end = rest
            .iter()
            .position(|&b| matches!(b, b' ' | b'\r' | b'\n'))
            .unwrap_or(rest.len());
        let target = rest.get(..end).unwrap_or_default();
        let host = head
            .split(|&b| b == b'\n')
            .skip(1)
            .find_map(|line| {
                let (name, value) = line.split_at(line.iter().position(|&b| b == b':')?);
                name.eq_ignore_ascii_case(b"host")
                    .then(|| value.get(1..).unwrap_or_default().trim_ascii())
            })
            .and_then(|value| std::str::from_utf8(value).ok())
            .filter(|host| valid_host(host));
        Some(Request {
            method: std::str::from_utf8(method).ok()?,
            target,
            host,
        })
    }

    /// Whether the request is for the registry API (`/v2`, `/v2/...`).
    fn under_v2(&self) -> bool {
        self.target == b"/v2" || self.target.starts_with(b"/v2/")
    }

    /// The target for a log line: escaped, and cut at 256 bytes.
    fn logged_target(&self) -> impl std::fmt::Display + '_ {
        self.target.get(..256).unwrap_or(self.target).escape_ascii()
    }
}

/// A name, an IPv4 address or a bracketed IPv6 address, with an optional port: safe to put
/// in a URL and a JSON or text body.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 261
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:[]".contains(&b))
}

/// The whole answer to `request`: `400 Bad Request`, `Connection: close`, and a body saying
/// to use `https://HOST/` (HOST from the `Host` header, else `fallback`, the address the
/// client connected to).
///
/// HEAD gets the headers alone, and the advice in the reason phrase (`400 Bad Request (this
/// port speaks HTTPS: use https://HOST/)`), the one part of a HEAD answer a client shows:
/// Helm 3.17 resolves a chart version with HEAD, and prints `unexpected status from HEAD
/// request to URL: STATUS` (containerd's resolver). Any reason phrase is valid HTTP, and
/// clients act on the code alone.
///
/// The body: under `/v2` it is the distribution spec's error envelope (code `UNSUPPORTED`,
/// "the operation is unsupported"), because that is what OCI clients read from an error
/// answer and print (Helm and oras print `unsupported: <message>`, containerd the body);
/// elsewhere (a browser, curl on a page) it is the same message as plain text. nginx answers
/// HTML, which an OCI client would print as markup or not at all.
pub fn answer(request: &Request<'_>, fallback: Option<SocketAddr>) -> Vec<u8> {
    let host = match (request.host, fallback) {
        (Some(host), _) => host.to_owned(),
        (None, Some(addr)) => addr.to_string(),
        (None, None) => "HOST:PORT".to_owned(),
    };
    let message = format!(
        "This port speaks HTTPS: use https://{host}/ (the plain HTTP request was sent to an HTTPS port)"
    );
    let (content_type, body) = if request.under_v2() {
        (
            "application/json",
            error_body(ErrorCode::Unsupported, &message),
        )
    } else {
        (
            "text/plain; charset=utf-8",
            format!("{message}\n").into_bytes(),
        )
    };
    let head = request.method == "HEAD";
    let reason = if head {
        format!("Bad Request (this port speaks HTTPS: use https://{host}/)")
    } else {
        "Bad Request".to_owned()
    };
    let mut response = format!(
        "HTTP/1.1 400 {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\nDocker-Distribution-API-Version: {API_VERSION}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        response.extend_from_slice(&body);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::tls_handshake(0x16, First::Tls)]
    #[case::tls_alert(0x15, First::Tls)]
    #[case::sslv2_hello(0x80, First::Tls)]
    #[case::nul(0x00, First::Tls)]
    #[case::space(b' ', First::Tls)]
    #[case::digit(b'1', First::Tls)]
    #[case::get(b'G', First::NotTls)]
    #[case::post(b'P', First::NotTls)]
    #[case::lowercase(b'g', First::NotTls)]
    fn the_first_byte_tells_tls_from_plain(#[case] byte: u8, #[case] want: First) {
        assert_eq!(First::of(byte), want);
    }

    #[rstest]
    #[case::helm(b"GET /v2/charts/hello/manifests/1.0.0 HTTP/1.1\r\nHost: 127.0.0.1:5000\r\nUser-Agent: Helm/3.17.1\r\n\r\n", Some(("GET", &b"/v2/charts/hello/manifests/1.0.0"[..], Some("127.0.0.1:5000"))))]
    #[case::head(b"HEAD /v2/ HTTP/1.1\r\nhost: [::1]:8443\r\n\r\n", Some(("HEAD", &b"/v2/"[..], Some("[::1]:8443"))))]
    #[case::host_spaced(b"GET / HTTP/1.1\r\nX-A: b\r\nHOST:   registry.example \r\n\r\n", Some(("GET", &b"/"[..], Some("registry.example"))))]
    #[case::no_host(b"GET / HTTP/1.0\r\n\r\n", Some(("GET", &b"/"[..], None)))]
    #[case::bad_host(b"GET / HTTP/1.1\r\nHost: a\"b<c>\r\n\r\n", Some(("GET", &b"/"[..], None)))]
    #[case::empty_host(b"GET / HTTP/1.1\r\nHost:\r\n\r\n", Some(("GET", &b"/"[..], None)))]
    #[case::host_in_the_request_line(b"GET /Host:x HTTP/1.1\r\n\r\n", Some(("GET", &b"/Host:x"[..], None)))]
    #[case::cut_after_the_method(b"GET ", Some(("GET", &b""[..], None)))]
    #[case::h2_preface(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Some(("PRI", &b"*"[..], None)))]
    #[case::no_space(b"GET", None)]
    #[case::digit_in_method(b"G3T / HTTP/1.1\r\n\r\n", None)]
    #[case::space_first(b" GET / HTTP/1.1\r\n\r\n", None)]
    #[case::method_too_long(b"ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\n\r\n", None)]
    #[case::words(b"hello\r\nworld here", None)]
    #[case::empty(b"", None)]
    fn request_heads_are_read_as_http(
        #[case] head: &[u8],
        #[case] want: Option<(&str, &[u8], Option<&str>)>,
    ) {
        let got = Request::parse(head).map(|r| (r.method, r.target, r.host));
        assert_eq!(got, want, "{}", head.escape_ascii());
    }

    /// The head and body of an answer.
    fn split(answer: &[u8]) -> (String, Vec<u8>) {
        let end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = String::from_utf8(answer[..end].to_vec()).unwrap();
        (head, answer[end..].to_vec())
    }

    fn parsed(head: &'static [u8]) -> Request<'static> {
        Request::parse(head).unwrap()
    }

    #[test]
    fn under_v2_the_answer_is_the_error_envelope() {
        let request =
            parsed(b"GET /v2/charts/hello/tags/list HTTP/1.1\r\nHost: reg.example:5000\r\n\r\n");
        let (head, body) = split(&answer(&request, None));
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");
        assert!(
            head.contains("\r\nContent-Type: application/json\r\n"),
            "{head}"
        );
        assert!(
            head.contains(&format!("\r\nContent-Length: {}\r\n", body.len())),
            "{head}"
        );
        assert!(head.contains("\r\nConnection: close\r\n"), "{head}");
        assert!(
            head.contains("\r\nDocker-Distribution-API-Version: registry/2.0\r\n"),
            "{head}"
        );
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"errors": [{
                "code": "UNSUPPORTED",
                "message": "This port speaks HTTPS: use https://reg.example:5000/ (the plain HTTP request was sent to an HTTPS port)",
            }]})
        );
    }

    #[rstest]
    #[case::root(&b"GET / HTTP/1.1\r\nHost: reg.example\r\n\r\n"[..], "https://reg.example/")]
    #[case::page(&b"GET /ui/charts/hello HTTP/1.1\r\nHost: reg.example\r\n\r\n"[..], "https://reg.example/")]
    #[case::v2_lookalike(&b"GET /v2x HTTP/1.1\r\nHost: reg.example\r\n\r\n"[..], "https://reg.example/")]
    #[case::no_host(&b"GET / HTTP/1.0\r\n\r\n"[..], "https://10.0.0.7:5000/")]
    fn elsewhere_the_answer_is_text(#[case] head: &'static [u8], #[case] url: &str) {
        let request = parsed(head);
        let fallback = Some("10.0.0.7:5000".parse().unwrap());
        let (head, body) = split(&answer(&request, fallback));
        assert!(
            head.contains("\r\nContent-Type: text/plain; charset=utf-8\r\n"),
            "{head}"
        );
        assert_eq!(
            String::from_utf8(body).unwrap(),
            format!(
                "This port speaks HTTPS: use {url} (the plain HTTP request was sent to an HTTPS port)\n"
            )
        );
    }

    #[test]
    fn head_gets_the_headers_alone_with_the_advice_as_reason() {
        let get = answer(&parsed(b"GET /v2/ HTTP/1.1\r\nHost: x:1\r\n\r\n"), None);
        let head = answer(&parsed(b"HEAD /v2/ HTTP/1.1\r\nHost: x:1\r\n\r\n"), None);
        let (get_head, get_body) = split(&get);
        assert!(!get_body.is_empty());
        let head = String::from_utf8(head).unwrap();
        assert_eq!(
            head,
            get_head.replace(
                "400 Bad Request\r\n",
                "400 Bad Request (this port speaks HTTPS: use https://x:1/)\r\n"
            ),
            "the same headers, Content-Length included"
        );
    }

    #[test]
    fn the_logged_target_is_escaped_and_cut() {
        let mut head = b"GET /\x1b[31m".to_vec();
        head.extend(std::iter::repeat_n(b'a', 400));
        head.extend_from_slice(b" HTTP/1.1\r\n\r\n");
        let request = Request::parse(&head).unwrap();
        let logged = request.logged_target().to_string();
        assert!(logged.starts_with("/\\x1b[31maaa"), "{logged}");
        assert_eq!(
            logged.len(),
            256 + 3,
            "256 bytes, the escape taking 4 for 1"
        );
    }
}
