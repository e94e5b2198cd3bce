//! Bad input over a real socket: a corpus of raw HTTP requests sent to the release binary over
//! TCP, each with its expected outcome written beside it. Invalid requests get a 4xx (the OCI
//! JSON envelope where they reach the application) or a closed connection; unusual but valid
//! ones get the right 2xx. None gets a 5xx, and a normal request right after each one, on a
//! new connection, still gets the right bytes.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;

mod corpus;
mod delay;
mod http2;
mod load;
mod sink;
mod slow;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::Process;
use corpus::{Expect, cases};

/// One answer as read off the socket.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

/// What the server did with a request: the answers it sent, and whether it then closed.
#[derive(Debug)]
struct Outcome {
    answers: Vec<Answer>,
    closed: bool,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Sends `request` and reads answers until `want` are complete, the server closes, or 3 s
/// pass.
fn exchange(addr: SocketAddr, request: &[u8], want: usize) -> Outcome {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    // A server may answer and close before it has read everything: that is an outcome too.
    let _ = stream.write_all(request);
    let mut buffer = Vec::new();
    let mut answers = Vec::new();
    let mut closed = false;
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut chunk = [0u8; 64 * 1024];
    while answers.len() < want && Instant::now() < deadline {
        // Take every complete answer in the buffer.
        while let Some(end) = find(&buffer, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
            let length = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())
                        .flatten()
                })
                .unwrap_or(0);
            let head_only = request.starts_with(b"HEAD ")
                || head.starts_with("HTTP/1.1 304")
                || head.starts_with("HTTP/1.0 304");
            let body_len = if head_only { 0 } else { length };
            if buffer.len() < end + 4 + body_len {
                break;
            }
            let status = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let body = buffer[end + 4..end + 4 + body_len].to_vec();
            buffer.drain(..end + 4 + body_len);
            // An interim answer (100 Continue) precedes the real one.
            if (100..200).contains(&status) {
                continue;
            }
            answers.push(Answer { status, head, body });
        }
        if answers.len() >= want {
            break;
        }
        match stream.read(&mut chunk) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => {
                closed = true;
                break;
            }
        }
    }
    Outcome { answers, closed }
}

/// How an outcome differs from what its case expects.
#[derive(Debug)]
enum Miss<'a> {
    /// A 5xx, or no status at all.
    ServerError(&'a Answer),
    NotEnvelope(serde_json::Error, &'a Answer),
    Code {
        got: Option<String>,
        want: &'static str,
    },
    NotRejected(Option<&'a Answer>),
    NotError {
        status: u16,
        code: &'static str,
        got: Option<&'a Answer>,
    },
    NotStatus {
        status: u16,
        got: Option<&'a Answer>,
    },
    NotAll {
        status: u16,
        n: usize,
        got: Vec<u16>,
    },
}

impl std::fmt::Display for Miss<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::ServerError(a) => write!(f, "answered {}:\n{}", a.status, a.head),
            Miss::NotEnvelope(e, a) => write!(
                f,
                "not the JSON envelope ({e}): {}",
                String::from_utf8_lossy(&a.body)
            ),
            Miss::Code { got, want } => write!(f, "error code {got:?}, not {want}"),
            Miss::NotRejected(other) => write!(f, "not rejected: {other:?}"),
            Miss::NotError { status, code, got } => {
                write!(f, "wanted {status} {code}: {got:?}")
            }
            Miss::NotStatus { status, got } => write!(f, "wanted {status}: {got:?}"),
            Miss::NotAll { status, n, got } => write!(f, "wanted {n} x {status}: {got:?}"),
        }
    }
}

/// Whether `outcome` is what `expect` says; `Err` says why not.
fn check<'a>(expect: &Expect, outcome: &'a Outcome) -> Result<(), Miss<'a>> {
    for a in &outcome.answers {
        if a.status >= 500 || a.status == 0 {
            return Err(Miss::ServerError(a));
        }
    }
    let first = outcome.answers.first();
    let envelope = |a: &'a Answer, code: &'static str| -> Result<(), Miss<'a>> {
        let v: serde_json::Value =
            serde_json::from_slice(&a.body).map_err(|e| Miss::NotEnvelope(e, a))?;
        match v["errors"][0]["code"].as_str() {
            Some(c) if c == code => Ok(()),
            other => Err(Miss::Code {
                got: other.map(str::to_owned),
                want: code,
            }),
        }
    };
    match expect {
        Expect::Rejected => match first {
            None if outcome.closed => Ok(()),
            Some(a) if (400..500).contains(&a.status) => Ok(()),
            other => Err(Miss::NotRejected(other)),
        },
        Expect::Error(status, code) => match first {
            Some(a) if a.status == *status => envelope(a, code),
            other => Err(Miss::NotError {
                status: *status,
                code,
                got: other,
            }),
        },
        Expect::Status(status) => match first {
            Some(a) if a.status == *status => Ok(()),
            other => Err(Miss::NotStatus {
                status: *status,
                got: other,
            }),
        },
        Expect::All(status, n) => {
            let statuses: Vec<u16> = outcome.answers.iter().map(|a| a.status).collect();
            if statuses.len() == *n && statuses.iter().all(|s| s == status) {
                Ok(())
            } else {
                Err(Miss::NotAll {
                    status: *status,
                    n: *n,
                    got: statuses,
                })
            }
        }
    }
}

/// The next normal request did not get the committed manifest: what it got instead.
#[derive(Debug)]
struct NotServing(Option<Answer>);

impl std::fmt::Display for NotServing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the next normal request failed: {:?}", self.0.as_ref())
    }
}

/// A normal request on a new connection gets the committed manifest, byte for byte.
fn still_serves(addr: SocketAddr, want: &str) -> Result<(), NotServing> {
    let request = b"GET /v2/charts/hello/manifests/1.0.0 HTTP/1.1\r\nHost: x\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\n\r\n";
    let outcome = exchange(addr, request, 1);
    match outcome.answers.into_iter().next() {
        Some(a) if a.status == 200 && common::sha256(&a.body) == want => Ok(()),
        other => Err(NotServing(other)),
    }
}

#[test]
fn bad_input_gets_4xx_or_a_closed_connection_and_never_stops_the_server() {
    let server = Process::start();
    let want = common::assets_tag_digest("charts/hello", "1.0.0");
    let cases = cases();
    assert!(cases.len() >= 150, "the corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = exchange(server.addr, &case.request, case.expect.answers());
        if let Err(why) = check(&case.expect, &outcome) {
            failures.push(format!("{}: {why}", case.name));
        }
        if let Err(why) = still_serves(server.addr, &want) {
            failures.push(format!("after {}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}\n--- server log ---\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n"),
        server
            .log()
            .lines()
            .filter(|l| l.contains("panick"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(!server.log().contains("panicked"), "{}", server.log());
}
