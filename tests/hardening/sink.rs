//! A log sink that stops reading never stops serving: the binary with stdout and stderr on
//! pipes nobody reads once it has started (as a container's output on a FIFO whose reader,
//! containerd's shim or a log shipper, went away), under load past the point where its 8 MiB
//! of pending lines are full. Every request is answered, `/readyz` answers 200, the dropped
//! lines are counted in `/metrics`, and SIGTERM ends it within the chart's grace period
//! (shutdown delay + shutdown timeout + 5 s) though its last lines cannot be written. Then,
//! with the pipe read again, one line says how many were dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::common::chartreg_bin;

/// Shutdown flags the test starts the server with, and the grace period they make in the
/// chart (their sum and 5 s).
const SHUTDOWN: [&str; 4] = ["--shutdown-delay", "1s", "--shutdown-timeout", "5s"];
const GRACE: Duration = Duration::from_secs(1 + 5 + 5);

/// Clients at once, each on its own keep-alive connection.
const CLIENTS: usize = 4;

/// The most requests sent before the dropped-lines counter must have moved (each answer is
/// a ~150-byte access line: 8 MiB is ~60,000).
const MOST: usize = 400_000;

/// One request on a keep-alive connection; the status, body read.
fn request(stream: &mut TcpStream, path: &str) -> u16 {
    // One write: `write!` writes each piece as it comes, the later ones held back by Nagle.
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("request");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("answer head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("ASCII head");
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).expect("body");
    head[9..12].parse().expect("status")
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("TCP_NODELAY");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream
}

/// `/metrics`' value of `name` (a series without labels).
fn metric(addr: SocketAddr, name: &str) -> u64 {
    let mut stream = connect(addr);
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("GET");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("metrics");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in /metrics:\n{text}"))
}

/// The server started with its output on pipes; its address, read off stderr until the
/// summary line, after which nobody reads either pipe.
#[allow(
    clippy::zombie_processes,
    reason = "returned to the test, which waits for it (terminate); killed where it fails here"
)]
fn start() -> (Child, SocketAddr, BufReader<std::process::ChildStderr>) {
    let mut child = Command::new(chartreg_bin())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(SHUTDOWN)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chartreg starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    loop {
        line.clear();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no summary line");
        }
        if let Some(at) = line.find(" on http://") {
            let addr = line[at + 11..]
                .split(|c: char| c.is_whitespace() || c == ',')
                .next()
                .and_then(|a| a.parse().ok())
                .expect("address");
            return (child, addr, stderr);
        }
    }
}

/// Loads the server until log lines have been dropped (its pending buffer is full), then as
/// much again; every answer must be 200. The requests sent and the lines dropped.
fn fill(addr: SocketAddr) -> (usize, u64) {
    let sent = Arc::new(AtomicUsize::new(0));
    let mut loaded_past = None;
    while loaded_past.is_none_or(|n| sent.load(Ordering::Relaxed) < n) {
        let threads: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let sent = sent.clone();
                std::thread::spawn(move || {
                    let mut stream = connect(addr);
                    for _ in 0..2_000 {
                        assert_eq!(request(&mut stream, "/v2/charts/hello/tags/list"), 200);
                        sent.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("every request answered 200");
        }
        let total = sent.load(Ordering::Relaxed);
        if loaded_past.is_none() && metric(addr, "chartreg_log_lines_dropped_total") > 0 {
            loaded_past = Some(total * 2);
        }
        assert!(
            total < MOST || loaded_past.is_some(),
            "{total} requests and no log line dropped"
        );
    }
    (
        sent.load(Ordering::Relaxed),
        metric(addr, "chartreg_log_lines_dropped_total"),
    )
}

/// Sends SIGTERM; how long the process took to exit, failing past [`GRACE`].
fn terminate(child: &mut Child) -> Duration {
    let term = Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if term.elapsed() > GRACE {
            let _ = child.kill();
            panic!("still running {GRACE:?} after SIGTERM (the kubelet would kill it)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status}");
    term.elapsed()
}

#[test]
fn a_log_sink_that_stops_reading_never_stops_serving_nor_holds_shutdown() {
    let (mut child, addr, _stderr) = start();
    let _stdout = child.stdout.take();
    let started = Instant::now();
    let (sent, dropped) = fill(addr);
    let mut stream = connect(addr);
    assert_eq!(
        request(&mut stream, "/readyz"),
        200,
        "ready with a blocked log"
    );
    drop(stream);
    let took = started.elapsed();
    let exit = terminate(&mut child);
    eprintln!(
        "{sent} requests answered in {took:.1?} with the log unread, {dropped} lines dropped; exited {exit:.1?} after SIGTERM"
    );
}

#[test]
fn lines_dropped_are_counted_in_the_log_once_it_is_read_again() {
    let (mut child, addr, stderr) = start();
    let _stdout = child.stdout.take();
    let (_, dropped) = fill(addr);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains("log lines were dropped") && tx.send(line).is_err() {
                return;
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a line saying how many log lines were dropped");
    // Lines logged after the count was read (the /metrics request's own) may be dropped too.
    let said: u64 = line
        .split(" log lines were dropped")
        .next()
        .and_then(|before| before.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no count in: {line}"));
    assert!(said >= dropped, "{dropped} dropped, the line says: {line}");
    terminate(&mut child);
}
