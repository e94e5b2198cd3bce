//! Every endpoint, status, header and error code of the read API, in-process (actix's test
//! service) over the committed assets and over generated content; plus HEAD and Content-Length
//! on a real socket, where actix strips HEAD bodies.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use actix_web::dev::ServiceResponse;
use actix_web::http::{Method, StatusCode, header};
use actix_web::test::{self, TestRequest};
use actix_web::web;
use bytes::Bytes;
use chartreg_core::content::{ContentFile, Registry};
use chartreg_core::oci::layout::{Annotations, Descriptor, ImageManifest};
use chartreg_core::oci::media_type;
use chartreg_core::tree::LayoutBuilder;
use rstest::rstest;
use serde_json::{Value, json};

const HELLO: &str = "charts/hello";
const HELLO_TAGS: [&str; 5] = ["0.1.0", "0.2.0", "1.0.0", "1.0.1_build.7", "1.1.0-rc.1"];

/// Sends one request to the app over `registry` and returns status, headers and body.
async fn call(registry: Registry, method: Method, uri: &str, headers: &[(&str, &str)]) -> Reply {
    let app = test::init_service(chartreg::http::app(web::Data::new(registry))).await;
    let mut req = TestRequest::default().method(method).uri(uri);
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    let res: ServiceResponse<_> = test::call_service(&app, req.to_request()).await;
    let status = res.status();
    let headers = res.headers().clone();
    let body = test::read_body(res).await;
    Reply {
        status,
        headers,
        body,
    }
}

async fn get(uri: &str) -> Reply {
    call(common::assets_registry(), Method::GET, uri, &[]).await
}

struct Reply {
    status: StatusCode,
    headers: header::HeaderMap,
    body: Bytes,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts the spec's error envelope with `code`, and returns its message.
    fn assert_error(&self, status: StatusCode, code: &str) -> String {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.header("content-type"), Some("application/json"));
        assert_eq!(
            self.header("docker-distribution-api-version"),
            Some("registry/2.0")
        );
        let v = self.json();
        let errors = v["errors"].as_array().expect("errors array");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0]["code"], code, "{v}");
        let message = errors[0]["message"].as_str().expect("message").to_owned();
        assert!(!message.is_empty());
        message
    }
}

/// The index.json descriptor of `tag` in a committed layout.
fn tagged(repository: &str, tag: &str) -> Descriptor {
    let index = std::fs::read(
        common::root()
            .join("assets")
            .join(repository)
            .join("index.json"),
    )
    .unwrap();
    let index: chartreg_core::oci::layout::ImageIndex = serde_json::from_slice(&index).unwrap();
    index
        .manifests
        .into_iter()
        .find(|d| {
            d.annotations
                .get("org.opencontainers.image.ref.name")
                .map(String::as_str)
                == Some(tag)
        })
        .unwrap_or_else(|| panic!("{repository}:{tag} is in assets"))
}

fn blob_bytes(repository: &str, digest: &str) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").unwrap();
    std::fs::read(
        common::root()
            .join("assets")
            .join(repository)
            .join("blobs/sha256")
            .join(hex),
    )
    .unwrap()
}

fn manifest_of(repository: &str, tag: &str) -> ImageManifest {
    let d = tagged(repository, tag);
    serde_json::from_slice(&blob_bytes(repository, d.digest.as_str())).unwrap()
}

#[rstest]
#[case("/v2/")]
#[case("/v2")]
#[actix_web::test]
async fn base_answers_empty_json(#[case] uri: &str) {
    let r = get(uri).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.header("docker-distribution-api-version"),
        Some("registry/2.0")
    );
    assert_eq!(&r.body[..], b"{}");
}

#[rstest]
#[case::by_tag("1.0.0")]
#[case::by_build_tag("1.0.1_build.7")]
#[case::by_prerelease_tag("1.1.0-rc.1")]
#[case::by_digest("digest")]
#[actix_web::test]
async fn manifest_is_served_byte_for_byte(#[case] reference: &str) {
    let d = tagged(
        HELLO,
        if reference == "digest" {
            "1.0.0"
        } else {
            reference
        },
    );
    let reference = if reference == "digest" {
        d.digest.to_string()
    } else {
        reference.to_owned()
    };
    let r = get(&format!("/v2/{HELLO}/manifests/{reference}")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some(media_type::OCI_MANIFEST));
    assert_eq!(r.header("docker-content-digest"), Some(d.digest.as_str()));
    assert_eq!(r.body.len() as u64, d.size);
    assert_eq!(&r.body[..], &blob_bytes(HELLO, d.digest.as_str())[..]);
    assert_eq!(common::sha256(&r.body), d.digest.as_str());
    assert_eq!(
        r.header("docker-distribution-api-version"),
        Some("registry/2.0")
    );
}

#[actix_web::test]
async fn manifest_accept_header_is_ignored() {
    let d = tagged(HELLO, "1.0.0");
    let r = call(
        common::assets_registry(),
        Method::GET,
        &format!("/v2/{HELLO}/manifests/1.0.0"),
        &[(
            "accept",
            "application/vnd.docker.distribution.manifest.v2+json",
        )],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("docker-content-digest"), Some(d.digest.as_str()));
}

#[rstest]
#[case::unknown_tag(
    "/v2/charts/hello/manifests/9.9.9",
    StatusCode::NOT_FOUND,
    "MANIFEST_UNKNOWN"
)]
#[case::invalid_tag(
    "/v2/charts/hello/manifests/.INVALID_MANIFEST_NAME",
    StatusCode::NOT_FOUND,
    "MANIFEST_UNKNOWN"
)]
#[case::plus_tag(
    "/v2/charts/hello/manifests/1.0.1+build.7",
    StatusCode::NOT_FOUND,
    "MANIFEST_UNKNOWN"
)]
#[case::unknown_digest(
    "/v2/charts/hello/manifests/sha256:0000000000000000000000000000000000000000000000000000000000000000",
    StatusCode::NOT_FOUND,
    "MANIFEST_UNKNOWN"
)]
#[case::malformed_digest(
    "/v2/charts/hello/manifests/sha256:xyz",
    StatusCode::BAD_REQUEST,
    "DIGEST_INVALID"
)]
#[case::unknown_repository(
    "/v2/charts/nope/manifests/1.0.0",
    StatusCode::NOT_FOUND,
    "NAME_UNKNOWN"
)]
#[case::uppercase_repository(
    "/v2/charts/Hello/manifests/1.0.0",
    StatusCode::BAD_REQUEST,
    "NAME_INVALID"
)]
#[case::bad_separator_repository(
    "/v2/charts/he..llo/tags/list",
    StatusCode::BAD_REQUEST,
    "NAME_INVALID"
)]
#[case::unknown_blob(
    "/v2/charts/hello/blobs/sha256:0000000000000000000000000000000000000000000000000000000000000000",
    StatusCode::NOT_FOUND,
    "BLOB_UNKNOWN"
)]
#[case::malformed_blob_digest(
    "/v2/charts/hello/blobs/notadigest",
    StatusCode::BAD_REQUEST,
    "DIGEST_INVALID"
)]
#[case::blob_of_repository_unknown(
    "/v2/charts/nope/blobs/sha256:0000000000000000000000000000000000000000000000000000000000000000",
    StatusCode::NOT_FOUND,
    "NAME_UNKNOWN"
)]
#[case::tags_unknown_repository("/v2/charts/nope/tags/list", StatusCode::NOT_FOUND, "NAME_UNKNOWN")]
#[case::tags_bad_n(
    "/v2/charts/hello/tags/list?n=abc",
    StatusCode::BAD_REQUEST,
    "PAGINATION_NUMBER_INVALID"
)]
#[case::tags_negative_n(
    "/v2/charts/hello/tags/list?n=-1",
    StatusCode::BAD_REQUEST,
    "PAGINATION_NUMBER_INVALID"
)]
#[case::catalog_bad_n(
    "/v2/_catalog?n=1x",
    StatusCode::BAD_REQUEST,
    "PAGINATION_NUMBER_INVALID"
)]
#[case::referrers_bad_digest(
    "/v2/charts/hello/referrers/sha256:abc",
    StatusCode::BAD_REQUEST,
    "DIGEST_INVALID"
)]
#[case::referrers_unknown_repository(
    "/v2/charts/nope/referrers/sha256:0000000000000000000000000000000000000000000000000000000000000000",
    StatusCode::NOT_FOUND,
    "NAME_UNKNOWN"
)]
#[case::unknown_endpoint("/v2/charts/hello/uploads", StatusCode::NOT_FOUND, "UNSUPPORTED")]
#[case::outside_api("/index.html", StatusCode::NOT_FOUND, "UNSUPPORTED")]
#[case::root("/", StatusCode::NOT_FOUND, "UNSUPPORTED")]
#[actix_web::test]
async fn errors_use_the_spec_envelope(
    #[case] uri: &str,
    #[case] status: StatusCode,
    #[case] code: &str,
) {
    get(uri).await.assert_error(status, code);
}

#[actix_web::test]
async fn blob_of_another_repository_is_unknown_here() {
    let motd = manifest_of("charts/motd", "1.0.0");
    let r = get(&format!("/v2/{HELLO}/blobs/{}", motd.config.digest)).await;
    r.assert_error(StatusCode::NOT_FOUND, "BLOB_UNKNOWN");
    let r = get(&format!("/v2/charts/motd/blobs/{}", motd.config.digest)).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[actix_web::test]
async fn blobs_are_served_byte_for_byte() {
    let m = manifest_of("charts/motd", "1.0.0");
    assert_eq!(m.layers.len(), 2, "chart and provenance layers");
    for d in std::iter::once(&m.config).chain(&m.layers) {
        let r = get(&format!("/v2/charts/motd/blobs/{}", d.digest)).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), Some("application/octet-stream"));
        assert_eq!(r.header("docker-content-digest"), Some(d.digest.as_str()));
        assert_eq!(r.header("accept-ranges"), Some("bytes"));
        assert_eq!(r.body.len() as u64, d.size);
        assert_eq!(common::sha256(&r.body), d.digest.as_str());
    }
    let chart = m
        .layers
        .iter()
        .find(|l| l.media_type == media_type::HELM_CHART)
        .unwrap();
    let package = std::fs::read(common::root().join("charts/motd-1.0.0.tgz")).unwrap();
    let r = get(&format!("/v2/charts/motd/blobs/{}", chart.digest)).await;
    assert_eq!(&r.body[..], &package[..]);
}

/// A registry with one 2048-byte blob (and a large one) in `test/ranges`.
fn ranges_registry() -> (Registry, String, Vec<u8>) {
    let data: Vec<u8> = (0..2048u32).map(|i| (i * 7 % 256) as u8).collect();
    let mut layout = LayoutBuilder::new("test/ranges");
    let layer = layout.blob("application/octet-stream", data.clone());
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let manifest = ImageManifest::new(config, vec![layer.clone()]);
    let d = layout.manifest(media_type::OCI_MANIFEST, &manifest);
    layout.list(d, Some("v1"));
    let files = layout
        .into_files()
        .unwrap()
        .into_iter()
        .map(|(p, b)| ContentFile::new(p, b));
    (
        Registry::from_files(files).unwrap(),
        format!("/v2/test/ranges/blobs/{}", layer.digest),
        data,
    )
}

#[rstest]
#[case::bounded("bytes=500-1499", 500, 1499)]
#[case::open("bytes=500-", 500, 2047)]
#[case::suffix("bytes=-500", 1548, 2047)]
#[case::clamped("bytes=2000-5000", 2000, 2047)]
#[case::single_byte("bytes=0-0", 0, 0)]
#[actix_web::test]
async fn single_ranges_get_206(#[case] range: &str, #[case] start: usize, #[case] end: usize) {
    let (registry, uri, data) = ranges_registry();
    let r = call(registry, Method::GET, &uri, &[("range", range)]).await;
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes {start}-{end}/2048").as_str())
    );
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    assert!(r.header("docker-content-digest").is_some());
    assert_eq!(&r.body[..], &data[start..=end]);
}

#[rstest]
#[case::past_end("bytes=5000-10000")]
#[case::reversed("bytes=500-0")]
#[case::empty_suffix("bytes=-0")]
#[actix_web::test]
async fn unsatisfiable_ranges_get_416(#[case] range: &str) {
    let (registry, uri, _) = ranges_registry();
    let r = call(registry, Method::GET, &uri, &[("range", range)]).await;
    r.assert_error(StatusCode::RANGE_NOT_SATISFIABLE, "RANGE_INVALID");
    assert_eq!(r.header("content-range"), Some("bytes */2048"));
}

#[rstest]
#[case::several("bytes=0-1,5-6")]
#[case::other_unit("lines=1-2")]
#[case::garbage("bytes=x-y")]
#[actix_web::test]
async fn other_ranges_get_the_whole_blob(#[case] range: &str) {
    let (registry, uri, data) = ranges_registry();
    let r = call(registry, Method::GET, &uri, &[("range", range)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(&r.body[..], &data[..]);
}

#[actix_web::test]
async fn tags_list_is_complete_and_sorted() {
    let r = get("/v2/charts/hello/tags/list").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.header("link").is_none());
    assert_eq!(r.json(), json!({"name": HELLO, "tags": HELLO_TAGS}));
}

#[rstest]
#[case::first_page("n=2", &["0.1.0", "0.2.0"], Some("</v2/charts/hello/tags/list?n=2&last=0.2.0>; rel=\"next\""))]
#[case::middle_page("n=2&last=0.2.0", &["1.0.0", "1.0.1_build.7"], Some("</v2/charts/hello/tags/list?n=2&last=1.0.1_build.7>; rel=\"next\""))]
#[case::last_page_exact("n=1&last=1.0.1_build.7", &["1.1.0-rc.1"], None)]
#[case::last_page_short("n=2&last=1.0.1_build.7", &["1.1.0-rc.1"], None)]
#[case::exact_size("n=5", &HELLO_TAGS, None)]
#[case::zero("n=0", &[], None)]
#[case::last_past_end("last=9", &[], None)]
#[case::last_past_end_with_n("n=3&last=zzz", &[], None)]
#[case::empty_last("n=1&last=", &["0.1.0"], Some("</v2/charts/hello/tags/list?n=1&last=0.1.0>; rel=\"next\""))]
#[case::last_only("last=1.0.0", &["1.0.1_build.7", "1.1.0-rc.1"], None)]
#[case::last_between("last=0.15", &["0.2.0", "1.0.0", "1.0.1_build.7", "1.1.0-rc.1"], None)]
#[actix_web::test]
async fn tags_list_pages(#[case] query: &str, #[case] tags: &[&str], #[case] link: Option<&str>) {
    let r = get(&format!("/v2/charts/hello/tags/list?{query}")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json(), json!({"name": HELLO, "tags": tags}));
    assert_eq!(r.header("link"), link);
}

#[actix_web::test]
async fn following_links_visits_every_tag_once() {
    let mut uri = "/v2/charts/hello/tags/list?n=2".to_owned();
    let mut seen = Vec::new();
    loop {
        let r = get(&uri).await;
        assert_eq!(r.status, StatusCode::OK);
        let page: Vec<String> = serde_json::from_value(r.json()["tags"].clone()).unwrap();
        assert!(!page.is_empty(), "a Link never points at an empty page");
        seen.extend(page);
        match r.header("link") {
            Some(link) => {
                uri = link
                    .trim_start_matches('<')
                    .split('>')
                    .next()
                    .unwrap()
                    .to_owned()
            }
            None => break,
        }
    }
    assert_eq!(seen, HELLO_TAGS);
}

#[rstest]
#[case::all("", &["charts/hello", "charts/motd"], None)]
#[case::first("n=1", &["charts/hello"], Some("</v2/_catalog?n=1&last=charts/hello>; rel=\"next\""))]
#[case::second("n=1&last=charts/hello", &["charts/motd"], None)]
#[case::zero("n=0", &[], None)]
#[case::past_end("last=charts/zzz", &[], None)]
#[case::empty_last("last=", &["charts/hello", "charts/motd"], None)]
#[actix_web::test]
async fn catalog_lists_repositories(
    #[case] query: &str,
    #[case] repositories: &[&str],
    #[case] link: Option<&str>,
) {
    let r = get(&format!("/v2/_catalog?{query}")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json(), json!({ "repositories": repositories }));
    assert_eq!(r.header("link"), link);
}

/// `test/refs`: an image `v1`, an SBOM and a signature whose subject is `v1`, and a chart-like
/// artifact with no artifactType (its config media type stands in).
fn referrers_registry() -> (Registry, Descriptor, Vec<Descriptor>) {
    let mut layout = LayoutBuilder::new("test/refs");
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/vnd.oci.image.layer.v1.tar", b"layer".to_vec());
    let image = ImageManifest::new(config.clone(), vec![layer]);
    let subject = layout.manifest(media_type::OCI_MANIFEST, &image);
    layout.list(subject.clone(), Some("v1"));
    let mut referrers = Vec::new();
    for (artifact_type, config_type) in [
        (
            Some("application/vnd.example.sbom"),
            "application/vnd.oci.empty.v1+json",
        ),
        (
            Some("application/vnd.example.signature"),
            "application/vnd.oci.empty.v1+json",
        ),
        (None, "application/vnd.example.config.v1+json"),
    ] {
        let config = layout.blob(config_type, b"{}".to_vec());
        let payload = layout.blob("text/plain", format!("{artifact_type:?}").into_bytes());
        let mut annotations = Annotations::new();
        annotations.insert("org.example.kind".into(), config_type.into());
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: Some(media_type::OCI_MANIFEST.into()),
            artifact_type: artifact_type.map(str::to_owned),
            config,
            layers: vec![payload],
            subject: Some(subject.clone()),
            annotations: annotations.clone(),
        };
        let mut d = layout.manifest(media_type::OCI_MANIFEST, &manifest);
        layout.list(d.clone(), None);
        d.annotations = annotations;
        d.artifact_type = Some(artifact_type.unwrap_or(config_type).to_owned());
        referrers.push(d);
    }
    referrers.sort_by(|a, b| a.digest.cmp(&b.digest));
    let files = layout
        .into_files()
        .unwrap()
        .into_iter()
        .map(|(p, b)| ContentFile::new(p, b));
    (Registry::from_files(files).unwrap(), subject, referrers)
}

#[actix_web::test]
async fn referrers_list_manifests_with_a_subject() {
    let (registry, subject, referrers) = referrers_registry();
    let r = call(
        registry,
        Method::GET,
        &format!("/v2/test/refs/referrers/{}", subject.digest),
        &[],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some(media_type::OCI_INDEX));
    assert!(r.header("oci-filters-applied").is_none());
    let index = r.json();
    assert_eq!(index["schemaVersion"], 2);
    assert_eq!(index["mediaType"], media_type::OCI_INDEX);
    let got: Vec<Descriptor> = serde_json::from_value(index["manifests"].clone()).unwrap();
    assert_eq!(got, referrers);
}

#[actix_web::test]
async fn referrers_filter_by_artifact_type() {
    let (registry, subject, referrers) = referrers_registry();
    let uri = format!(
        "/v2/test/refs/referrers/{}?artifactType=application/vnd.example.sbom",
        subject.digest
    );
    let r = call(registry, Method::GET, &uri, &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("oci-filters-applied"), Some("artifactType"));
    let got: Vec<Descriptor> = serde_json::from_value(r.json()["manifests"].clone()).unwrap();
    let expected: Vec<Descriptor> = referrers
        .into_iter()
        .filter(|d| d.artifact_type.as_deref() == Some("application/vnd.example.sbom"))
        .collect();
    assert_eq!(got.len(), 1);
    assert_eq!(got, expected);
}

#[rstest]
#[case::charts_have_no_referrers(HELLO)]
#[actix_web::test]
async fn referrers_of_unknown_subject_are_empty(#[case] repository: &str) {
    let subject = tagged(repository, "1.0.0").digest;
    for digest in [subject.to_string(), format!("sha256:{}", "1".repeat(64))] {
        let r = get(&format!("/v2/{repository}/referrers/{digest}")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.header("content-type"), Some(media_type::OCI_INDEX));
        assert_eq!(
            r.json(),
            json!({"schemaVersion": 2, "mediaType": media_type::OCI_INDEX, "manifests": []})
        );
    }
}

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
        .map(|(p, b)| ContentFile::new(p, b));
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
