//! Writes, odd and hostile requests, and what only a real socket shows (HEAD, large bodies).

use super::*;
use crate::blobs::ranges_registry;

#[rstest]
#[case(Method::POST, "/v2/charts/hello/blobs/uploads/")]
#[case(Method::PUT, "/v2/charts/hello/manifests/1.0.0")]
#[case(Method::PATCH, "/v2/charts/hello/blobs/uploads/abc")]
#[case(Method::DELETE, "/v2/charts/hello/manifests/1.0.0")]
#[case(
    Method::DELETE,
    "/v2/charts/hello/blobs/sha256:0000000000000000000000000000000000000000000000000000000000000000"
)]
#[case(Method::POST, "/v2/")]
#[case(Method::PUT, "/v2/charts/hello/tags/list")]
#[case(Method::OPTIONS, "/v2/_catalog")]
#[actix_web::test]
async fn writes_are_not_allowed(#[case] method: Method, #[case] uri: &str) {
    let registry = common::assets_registry();
    let r = call(registry, method, uri, &[]).await;
    let message = r.assert_error(StatusCode::METHOD_NOT_ALLOWED, "UNSUPPORTED");
    assert!(message.contains("read-only"), "{message}");
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    // Nothing changed.
    let after = get("/v2/charts/hello/manifests/1.0.0").await;
    assert_eq!(after.status, StatusCode::OK);
}

#[rstest]
#[case("/v2/%2e%2e/%2e%2e/etc/passwd")]
#[case("/v2/charts/hello/manifests/%00")]
#[case("/v2/charts/hello/blobs/sha256:%ff%fe")]
#[case("/v2/charts/hello/tags/list?n=%ff")]
#[case("/v2/a/manifests/b/manifests/c")]
#[case("/v2//manifests/x")]
#[case("/v2/charts/hello/manifests/")]
#[actix_web::test]
async fn odd_requests_get_client_errors(#[case] uri: &str) {
    let r = get(uri).await;
    assert!(r.status.is_client_error(), "{uri}: {}", r.status);
    assert_eq!(r.header("content-type"), Some("application/json"), "{uri}");
    r.json();
}

#[rstest]
#[case("/v2/_catalog?last=%ff%fe&n=1")]
#[case(
    "/v2/charts/hello/referrers/sha256:0000000000000000000000000000000000000000000000000000000000000000?artifactType=%ff"
)]
#[actix_web::test]
async fn undecodable_query_values_match_nothing(#[case] uri: &str) {
    let r = get(uri).await;
    assert_eq!(r.status, StatusCode::OK, "{uri}");
    let v = r.json();
    assert!(
        v["repositories"] == json!([]) || v["manifests"] == json!([]),
        "{v}"
    );
}

#[actix_web::test]
async fn long_names_are_rejected_not_crashed_on() {
    let name = vec!["a"; 300].join("/");
    get(&format!("/v2/{name}/tags/list"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "NAME_INVALID");
    let tag = "a".repeat(129);
    get(&format!("/v2/charts/hello/manifests/{tag}"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "MANIFEST_UNKNOWN");
}

/// A raw HTTP/1.1 exchange on a real socket: status line and headers, and the body bytes read
/// until the server closes.
fn raw(addr: std::net::SocketAddr, method: &str, path: &str) -> (String, Vec<u8>) {
    raw_with(addr, method, path, "")
}

fn raw_with(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: test\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8(response[..split].to_vec())
        .unwrap()
        .to_ascii_lowercase();
    (head, response[split + 4..].to_vec())
}

#[test]
fn head_sends_headers_with_content_length_and_no_body() {
    let (registry, blob_uri, data) = ranges_registry();
    let server = common::InProcess::start(registry);
    let d = {
        let (_, body) = raw(server.addr, "GET", "/v2/test/ranges/manifests/v1");
        body
    };
    for (path, length) in [
        ("/v2/test/ranges/manifests/v1", d.len()),
        (blob_uri.as_str(), data.len()),
        ("/v2/", 2),
    ] {
        let (head, body) = raw(server.addr, "HEAD", path);
        assert!(head.starts_with("http/1.1 200"), "{path}: {head}");
        assert!(
            head.contains(&format!("content-length: {length}\r\n")),
            "{path}: {head}"
        );
        assert!(
            head.contains("docker-distribution-api-version: registry/2.0"),
            "{head}"
        );
        assert!(body.is_empty(), "HEAD {path} sent a body");
    }
    for (path, length) in [
        ("/v2/test/ranges/manifests/v1", d.len()),
        (blob_uri.as_str(), data.len()),
    ] {
        let (head, body) = raw(server.addr, "GET", path);
        assert!(
            head.contains(&format!("content-length: {length}\r\n")),
            "{path}: {head}"
        );
        assert_eq!(body.len(), length);
    }
    let (head, body) = raw_with(server.addr, "GET", &blob_uri, "Range: bytes=500-1499\r\n");
    assert!(head.starts_with("http/1.1 206"), "{head}");
    assert!(head.contains("content-length: 1000\r\n"), "{head}");
    assert!(
        head.contains("content-range: bytes 500-1499/2048\r\n"),
        "{head}"
    );
    assert_eq!(body, &data[500..1500]);
    let (head, body) = raw(server.addr, "HEAD", "/v2/test/ranges/manifests/nope");
    assert!(head.starts_with("http/1.1 404"), "{head}");
    assert!(body.is_empty());
    let (head, _) = raw(server.addr, "HEAD", "/v2/test/ranges/manifests/v1");
    assert!(head.contains("docker-content-digest: sha256:"), "{head}");
}

#[test]
fn large_blobs_stream_intact_over_a_socket() {
    let data: Vec<u8> = (0..(5 * 1024 * 1024 + 123u32))
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let mut layout = LayoutBuilder::new("test/large");
    let layer = layout.blob("application/octet-stream", data.clone());
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let manifest = ImageManifest::new(config, vec![layer.clone()]);
    let d = layout.manifest(media_type::OCI_MANIFEST, &manifest);
    layout.list(d, Some("v1"));
    let files = layout
        .into_files()
        .unwrap()
        .into_iter()
        .map(|(p, b)| HeldFile::new(p, b));
    let server = common::InProcess::start(Registry::from_files(files).unwrap());
    let (head, body) = raw(
        server.addr,
        "GET",
        &format!("/v2/test/large/blobs/{}", layer.digest),
    );
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}\r\n", data.len())),
        "{head}"
    );
    assert_eq!(body.len(), data.len());
    assert_eq!(common::sha256(&body), layer.digest.as_str());

    let (head, body) = raw(
        server.addr,
        "HEAD",
        &format!("/v2/test/large/blobs/{}", layer.digest),
    );
    assert!(
        head.contains(&format!("content-length: {}\r\n", data.len())),
        "{head}"
    );
    assert!(body.is_empty());

    let tail = format!("Range: bytes={}-\r\n", data.len() - 300_000);
    let (head, body) = raw_with(
        server.addr,
        "GET",
        &format!("/v2/test/large/blobs/{}", layer.digest),
        &tail,
    );
    assert!(head.starts_with("http/1.1 206"), "{head}");
    assert_eq!(body, &data[data.len() - 300_000..]);
}
