//! Plain HTTP sent to the HTTPS port: Helm 3 and 4 and curl get a 400 that says the port speaks
//! HTTPS (Helm prints it), each such connection is logged once, HTTPS on the same port still
//! works over HTTP/1.1 and HTTP/2, and a client that sends nothing or half a method is still
//! cut.

use super::*;
use common::TlsProcess;

/// What the server logs once per plain HTTP connection.
const WARNING: &str = "plain HTTP request to the HTTPS port from 127.0.0.1:";

/// The warnings logged so far.
fn warnings(server: &Process) -> usize {
    server.log().matches(WARNING).count()
}

/// Polls the log until it holds `count` warnings (lines are written out every 20 ms), for up
/// to 10 s; then the number it holds.
fn wait_for_warnings(server: &Process, count: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    while warnings(server) < count && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    warnings(server)
}

/// Helm 3 resolves `--version 1.0.0` with a plain HTTP HEAD to 127.0.0.1 whatever the server
/// speaks, and prints the reason phrase; asked for a range with `--plain-http` (Helm 3 and
/// 4), it lists tags with GET and prints the error envelope's message. Before, Helm printed
/// `malformed HTTP response "\x15\x03\x03..."` (the TLS alert). Nothing is written.
#[rstest]
#[case::helm3_resolves_with_head("helm3", &[], "1.0.0", "unexpected status from HEAD request to http://127.0.0.1:{port}/v2/charts/hello/manifests/1.0.0: 400 Bad Request (this port speaks HTTPS: use https://127.0.0.1:{port}/)")]
#[case::helm3_lists_tags(
    "helm3",
    &["--plain-http"],
    "^1",
    "GET \"http://127.0.0.1:{port}/v2/charts/hello/tags/list\": unexpected status code 400: unsupported: This port speaks HTTPS: use https://127.0.0.1:{port}/ (the plain HTTP request was sent to an HTTPS port)"
)]
#[case::helm4_lists_tags(
    "helm4",
    &["--plain-http"],
    "^1",
    "GET \"http://127.0.0.1:{port}/v2/charts/hello/tags/list\": response status code 400: unsupported: This port speaks HTTPS: use https://127.0.0.1:{port}/ (the plain HTTP request was sent to an HTTPS port)"
)]
#[case::helm4_fetches_with_get(
    "helm4",
    &["--plain-http"],
    "1.0.0",
    "GET \"http://127.0.0.1:{port}/v2/charts/hello/manifests/1.0.0\": response status code 400: unsupported: This port speaks HTTPS: use https://127.0.0.1:{port}/ (the plain HTTP request was sent to an HTTPS port)"
)]
fn helm_over_plain_http_is_told_the_port_speaks_https(
    #[case] helm: &'static str,
    #[case] flags: &[&str],
    #[case] version: &str,
    #[case] expected: &str,
) {
    let Some(helm) = common::Helm::new(helm) else {
        return;
    };
    let tls = TlsProcess::start(&[], &[]);
    let server = &tls.process;
    let port = server.addr.port();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://127.0.0.1:{port}/charts/hello");
    let mut args = vec![
        "pull",
        reference.as_str(),
        "--version",
        version,
        "-d",
        str_path(out_dir.path()),
    ];
    args.extend_from_slice(flags);
    let out = helm.fails(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = expected.replace("{port}", &port.to_string());
    assert!(
        stderr.contains(&expected),
        "{} {}: should print\n  {expected}\n{}",
        helm.name,
        args.join(" "),
        describe(&out)
    );
    assert!(!stderr.contains("malformed HTTP response"), "{stderr}");
    assert_eq!(common::file_names(out_dir.path()), Vec::<String>::new());
    assert!(
        wait_for_warnings(server, 1) >= 1,
        "no warning logged:\n{}",
        server.log()
    );
}

/// curl over plain HTTP gets the 400 and its body (the error envelope under `/v2`, text
/// elsewhere; HEAD the advice in its reason phrase), each connection logged once; the same
/// port then answers HTTPS over HTTP/1.1 and HTTP/2 (ALPN), and those log no warning.
#[test]
fn curl_over_plain_http_gets_a_400_and_https_still_works() {
    let Some(curl) = common::tool("curl") else {
        return;
    };
    let tls = TlsProcess::start(&[], &[]);
    let server = &tls.process;
    let port = server.addr.port();
    let advice = format!("This port speaks HTTPS: use https://127.0.0.1:{port}/");
    let message = format!("{advice} (the plain HTTP request was sent to an HTTPS port)");

    let api = common::curl(&curl, "GET", &format!("http://{}/v2/", server.addr), &[]);
    assert_eq!(api.status, 400, "{api:?}");
    assert_eq!(api.header("content-type"), Some("application/json"));
    assert_eq!(api.header("connection"), Some("close"));
    assert_eq!(
        api.header("docker-distribution-api-version"),
        Some("registry/2.0")
    );
    let body: serde_json::Value = serde_json::from_slice(&api.body).expect("a JSON body");
    assert_eq!(
        body,
        serde_json::json!({"errors": [{"code": "UNSUPPORTED", "message": message}]})
    );

    let page = common::curl(&curl, "GET", &format!("http://{}/", server.addr), &[]);
    assert_eq!(page.status, 400, "{page:?}");
    assert_eq!(
        page.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(page.body_text(), format!("{message}\n"));

    let head = common::output_of(
        Command::new(&curl)
            .args(["--silent", "--show-error", "--max-time", "30", "--head"])
            .arg(format!(
                "http://{}/v2/charts/hello/manifests/1.0.0",
                server.addr
            )),
        "curl --head",
    );
    let status_line = String::from_utf8_lossy(&head.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        status_line.trim_end(),
        format!("HTTP/1.1 400 Bad Request (this port speaks HTTPS: use https://127.0.0.1:{port}/)"),
        "{}",
        describe(&head)
    );
    assert_eq!(
        wait_for_warnings(server, 3),
        3,
        "one warning per plain HTTP connection:\n{}",
        server.log()
    );

    for (flag, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
        let out = common::output_of(
            Command::new(&curl)
                .args(["--silent", "--show-error", "--max-time", "30", flag])
                .arg("--cacert")
                .arg(tls.ca_file())
                .args(["--write-out", " %{http_code} %{http_version}"])
                .arg(format!("{}/v2/", server.https_url())),
            "curl",
        );
        assert!(out.status.success(), "curl {flag}: {}", describe(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{{}} 200 {version}"),
            "curl {flag} over HTTPS: body, status and HTTP version"
        );
    }
    // The HTTPS requests' access lines are written with any warning they could have caused.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.log().matches("GET /v2/ 200").count() < 2 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        warnings(server),
        3,
        "one warning per plain HTTP connection, none for HTTPS:\n{}",
        server.log()
    );
}

/// A plain HTTP request followed by more bytes than its head gets the whole answer, then the
/// end of the connection (the server reads what follows before closing, so the client is not
/// reset before it reads the answer); a client that sends nothing, or half a method, is cut
/// by the server (before: by the handshake timeout; now: by the same wait for a first byte and
/// a request head).
#[test]
fn raw_clients_get_the_whole_answer_or_are_cut() {
    let tls = TlsProcess::start(&[], &[]);
    let server = &tls.process;
    let connect = || {
        let stream = TcpStream::connect(server.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("read timeout");
        stream
    };

    let mut plain = connect();
    let mut request = b"GET /v2/ HTTP/1.1\r\nHost: registry.example:5000\r\n\r\n".to_vec();
    request.extend(std::iter::repeat_n(b'x', 16 * 1024));
    plain.write_all(&request).expect("send");
    let mut answer = Vec::new();
    plain
        .read_to_end(&mut answer)
        .expect("the whole answer, then the end of the connection");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer}"
    );
    assert!(
        answer.ends_with("use https://registry.example:5000/ (the plain HTTP request was sent to an HTTPS port)\"}]}"),
        "{answer}"
    );

    for (what, sent) in [("nothing", &b""[..]), ("half a method", b"GE")] {
        let mut stream = connect();
        stream.write_all(sent).expect("send");
        let mut rest = Vec::new();
        let read = stream.read_to_end(&mut rest);
        assert!(
            read.is_ok()
                || read
                    .as_ref()
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "a client that sent {what} should be cut by the server, not kept: {read:?}"
        );
        assert!(rest.is_empty(), "a client that sent {what} got {rest:?}");
    }
    assert!(
        server.log().contains(WARNING),
        "the plain request was logged"
    );
}
