//! Against the binary: a metrics listener of its own, JSON logs, slow and idle clients, the
//! connection cap, signals.

use super::*;

/// `chartreg serve` with these flags, its log gathered (see `common::Process`).
fn serve_with(args: &[&str]) -> common::Process {
    common::Process::start_args(&common::chartreg_bin(), args, &[])
}

fn http_get(addr: SocketAddr, path: &str, extra: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    let _ = s.read_to_end(&mut response);
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(response.len());
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let body = response.get(split + 4..).unwrap_or_default().to_vec();
    (head, body)
}

#[test]
fn metrics_can_have_their_own_listener() {
    let served = serve_with(&["--metrics-listen", "127.0.0.1:0"]);
    let log = served.log();
    let metrics_addr = log
        .split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("the summary line names the metrics address: {log}"))
        .to_owned();
    // The pages and the classic repository count under labels of their own.
    for path in ["/v2/charts/hello/tags/list", "/", "/charts/index.yaml"] {
        let (head, _) = http_get(served.addr, path, "");
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    }
    let (head, _) = http_get(served.addr, "/metrics", "");
    assert!(
        head.starts_with("HTTP/1.1 404"),
        "metrics are not on the main listener: {head}"
    );
    let mut text = String::new();
    for _ in 0..100 {
        let (head, body) = http_get(metrics_addr.parse().unwrap(), "/metrics", "");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        text = String::from_utf8(body).unwrap();
        if text.contains(r#"route="classic",method="GET",status="200"} 1"#) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for route in ["tags", "pages", "classic"] {
        assert!(
            text.contains(&format!(
                r#"chartreg_http_requests_total{{route="{route}",method="GET",status="200"}} 1"#
            )),
            "{route}: {text}"
        );
    }
    assert!(
        !text.contains(r#"status="404"} "#),
        "the 404 for /metrics is not registry traffic: {text}"
    );
    // Which build is running: the content digest the binary prints, and the build's time.
    let digest = common::content_digest_of(&common::chartreg_bin());
    let info = text
        .lines()
        .find(|l| l.starts_with("chartreg_build_info{"))
        .unwrap_or_else(|| panic!("no build info: {text}"));
    assert!(
        info.contains(&format!(r#"content_digest="{digest}""#)) && info.contains(r#"created=""#),
        "{info}"
    );
    let (_, page) = http_get(served.addr, "/", "");
    let page = String::from_utf8(page).unwrap();
    let footer = page.split("<footer>").nth(1).expect("a footer");
    assert!(
        footer.contains(&format!(
            "content <code class=\"content-digest\">{digest}</code>"
        )) && footer.contains(r#"href="/sbom.spdx.json""#)
            && footer.contains("built <time datetime="),
        "{footer}"
    );
}

#[test]
fn json_logs_carry_access_fields() {
    let served = serve_with(&["--log-format", "json"]);
    let (head, body) = http_get(served.addr, "/v2/charts/hello/tags/list", "");
    assert!(head.starts_with("HTTP/1.1 200"));
    let mut access = None;
    for _ in 0..100 {
        access = served
            .log()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["target"] == "chartreg::access");
        if access.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let access = access.unwrap_or_else(|| panic!("no JSON access line in:\n{}", served.log()));
    assert_eq!(access["method"], "GET");
    assert_eq!(access["path"], "/v2/charts/hello/tags/list");
    assert_eq!(access["status"], 200);
    assert_eq!(access["bytes"], body.len());
    assert_eq!(access["peer"], "127.0.0.1");
    assert!(access["duration_ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(access["level"], "INFO");
    for line in served.log().lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["message"].is_string(), "{line}");
    }
}

#[test]
fn a_slow_client_is_cut_off_while_others_are_served() {
    let served = serve_with(&["--request-header-timeout", "2s", "--workers", "1"]);
    let addr = served.addr;
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let started = Instant::now();
        let request = b"GET /v2/charts/hello/tags/list HTTP/1.1\r\nHost: slow\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
        for byte in request {
            if s.write_all(&[*byte]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
            if started.elapsed() > Duration::from_secs(15) {
                break;
            }
        }
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        (
            started.elapsed(),
            String::from_utf8_lossy(&answer).into_owned(),
        )
    });
    // Meanwhile, with a single worker, everyone else is served promptly.
    for _ in 0..10 {
        let started = Instant::now();
        let (head, _) = http_get(addr, "/v2/charts/hello/tags/list", "");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (took, answer) = slow.join().unwrap();
    assert!(
        took < Duration::from_secs(6),
        "cut off near the 2 s deadline, not after {took:?}"
    );
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
}

#[test]
fn oversized_header_block_gets_431_from_the_server() {
    let served = serve_with(&[]);
    let (head, body) = http_get(
        served.addr,
        "/v2/",
        &format!("X-Big: {}\r\n", "b".repeat(20 * 1024)),
    );
    assert!(head.starts_with("HTTP/1.1 431"), "{head}");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["errors"][0]["code"], "REQUEST_HEADER_FIELDS_TOO_LARGE");
    let (head, _) = http_get(
        served.addr,
        "/v2/",
        &format!("X-Ok: {}\r\n", "b".repeat(8 * 1024)),
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (head, _) = http_get(
        served.addr,
        "/v2/",
        &format!("X-Huge: {}\r\n", "b".repeat(64 * 1024)),
    );
    assert!(
        head.starts_with("HTTP/1.1 431"),
        "even above actix's own limit: {head}"
    );
}

#[test]
fn durations_need_units() {
    let out = Command::new(common::chartreg_bin())
        .args(["serve", "--shutdown-delay", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("with a unit"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sigint_is_a_graceful_stop_too() {
    let mut served = serve_with(&["--shutdown-delay", "300ms"]);
    served.signal("INT");
    let started = Instant::now();
    let mut readyz = String::new();
    for _ in 0..20 {
        readyz = http_get(served.addr, "/readyz", "").0;
        if readyz.starts_with("HTTP/1.1 503") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(readyz.starts_with("HTTP/1.1 503"), "{readyz}");
    let status = served.wait();
    assert_eq!(status.code(), Some(0), "{}", served.log());
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert!(
        served.log().contains("SIGINT: not ready"),
        "{}",
        served.log()
    );
}

/// Sends one keep-alive request on `stream` and reads its response (Content-Length framed).
fn keep_alive_get(stream: &mut TcpStream, path: &str) -> std::io::Result<String> {
    write!(stream, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body)?;
    Ok(head)
}

#[test]
fn idle_keep_alive_connections_are_closed() {
    let served = serve_with(&["--keep-alive", "1s"]);
    let mut stream = TcpStream::connect(served.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert!(
        keep_alive_get(&mut stream, "/v2/")
            .unwrap()
            .starts_with("HTTP/1.1 200")
    );
    assert!(
        keep_alive_get(&mut stream, "/v2/")
            .unwrap()
            .starts_with("HTTP/1.1 200"),
        "kept alive"
    );
    let idle = Instant::now();
    let mut rest = Vec::new();
    let closed = stream.read_to_end(&mut rest);
    assert!(closed.is_ok() && rest.is_empty(), "{closed:?} {rest:?}");
    let waited = idle.elapsed();
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
}

#[test]
fn connections_beyond_the_cap_wait_their_turn() {
    let served = serve_with(&[
        "--max-connections",
        "2",
        "--workers",
        "1",
        "--keep-alive",
        "30s",
    ]);
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(served.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            assert!(
                keep_alive_get(&mut s, "/v2/")
                    .unwrap()
                    .starts_with("HTTP/1.1 200")
            );
            s
        })
        .collect();
    let mut third = TcpStream::connect(served.addr).unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    write!(third, "GET /v2/ HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut byte = [0u8; 1];
    let waiting = third.read(&mut byte);
    assert!(
        waiting.is_err(),
        "the third connection was served beyond the cap: {waiting:?}"
    );
    held.pop();
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = vec![byte[0]; 0];
    let mut buf = [0u8; 512];
    let n = third.read(&mut buf).unwrap();
    answer.extend_from_slice(&buf[..n]);
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

#[test]
fn a_second_signal_stops_at_once() {
    let mut served = serve_with(&["--shutdown-delay", "60s"]);
    served.signal("TERM");
    for _ in 0..100 {
        if served.log().contains("SIGTERM: not ready") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    served.signal("TERM");
    let status = served.wait();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(status.code(), Some(0), "{}", served.log());
    assert!(served.log().contains("second signal"), "{}", served.log());
}
