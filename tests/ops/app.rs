//! In-process: health and readiness, metrics, caching headers and conditional requests, the
//! request-head cap.

use super::*;

#[actix_web::test]
async fn health_and_readiness() {
    let (r, _) = exchange(true, vec![get("/healthz"), get("/readyz")]).await;
    assert_eq!(
        (r[0].status, &r[0].body[..]),
        (StatusCode::OK, &b"ok\n"[..])
    );
    assert_eq!(
        (r[1].status, &r[1].body[..]),
        (StatusCode::OK, &b"ready\n"[..])
    );
    let (r, _) = exchange(false, vec![get("/healthz"), get("/readyz"), get("/v2/")]).await;
    assert_eq!(r[0].status, StatusCode::OK, "alive while not ready");
    assert_eq!(r[1].status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r[2].status, StatusCode::OK, "still serving while not ready");
}

#[actix_web::test]
async fn metrics_count_registry_traffic_only() {
    let manifest = digest_of("charts/hello", "1.0.0");
    let (r, metrics) = exchange(
        true,
        vec![
            get("/v2/"),
            get("/v2/charts/hello/manifests/1.0.0"),
            get("/v2/charts/hello/manifests/1.0.0"),
            TestRequest::default()
                .method(Method::HEAD)
                .uri(&format!("/v2/charts/hello/manifests/{manifest}")),
            get("/v2/charts/hello/manifests/9.9.9"),
            get(&format!("/v2/charts/hello/blobs/{}", chart_layer("1.0.0"))),
            TestRequest::delete().uri("/v2/charts/hello/manifests/1.0.0"),
            get("/v2/charts/hello/tags/list"),
            get("/healthz"),
            get("/readyz"),
            get("/metrics"),
        ],
    )
    .await;
    let scrape = &r.last().unwrap();
    assert_eq!(scrape.status, StatusCode::OK);
    assert_eq!(
        scrape.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    // The scrape above was rendered before its own (uncounted) request finished; render again
    // now that every body has been dropped.
    let text = metrics.render();
    let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("Prometheus text");
    let value = |name: &str, labels: &[(&str, &str)]| -> Option<f64> {
        parsed
            .samples
            .iter()
            .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    };
    let requests = "chartreg_http_requests_total";
    assert_eq!(
        value(
            requests,
            &[("route", "base"), ("method", "GET"), ("status", "200")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            requests,
            &[("route", "manifests"), ("method", "GET"), ("status", "200")]
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            requests,
            &[
                ("route", "manifests"),
                ("method", "HEAD"),
                ("status", "200")
            ]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            requests,
            &[("route", "manifests"), ("method", "GET"), ("status", "404")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            requests,
            &[
                ("route", "manifests"),
                ("method", "other"),
                ("status", "405")
            ]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            requests,
            &[("route", "blobs"), ("method", "GET"), ("status", "200")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            requests,
            &[("route", "tags"), ("method", "GET"), ("status", "200")]
        ),
        Some(1.0)
    );
    let total: f64 = parsed
        .samples
        .iter()
        .filter(|s| s.metric == requests)
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) => v,
            _ => 0.0,
        })
        .sum();
    assert_eq!(total, 8.0, "health, readiness and metrics are not counted");

    // Bytes actually sent under the route: two GETs, the HEAD (the in-process test service
    // reads a HEAD body; a real connection sends none), the 404 and the 405.
    let manifest_bytes: usize = [1, 2, 3, 4, 6].iter().map(|&i| r[i].body.len()).sum();
    assert_eq!(
        value(
            "chartreg_http_response_bytes_total",
            &[("route", "manifests")]
        ),
        Some(manifest_bytes as f64)
    );
    let blob_bytes = value("chartreg_http_response_bytes_total", &[("route", "blobs")]).unwrap();
    assert_eq!(blob_bytes, r[5].body.len() as f64);
    let count = parsed
        .samples
        .iter()
        .find(|s| {
            s.metric == "chartreg_http_request_duration_seconds"
                && s.labels.get("route") == Some("manifests")
        })
        .map(|s| match &s.value {
            prometheus_parse::Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            _ => 0.0,
        });
    assert_eq!(count, Some(5.0), "histogram counts every manifests request");
    assert_eq!(value("chartreg_content_repositories", &[]), Some(4.0));
    assert_eq!(value("chartreg_content_tags", &[]), Some(9.0));
    assert_eq!(
        value(
            "chartreg_build_info",
            &[
                ("version", "test"),
                ("revision", "r1"),
                ("content_digest", "sha256:c0"),
                ("created", "2026-12-06T00:00:00Z"),
                ("signer", "none")
            ]
        ),
        Some(1.0)
    );
}

#[rstest]
#[case::manifest_by_digest("manifest-digest", IMMUTABLE)]
#[case::manifest_by_tag("manifest-tag", REVALIDATE)]
#[case::blob("blob", IMMUTABLE)]
#[actix_web::test]
async fn caching_headers_and_conditional_requests(#[case] what: &str, #[case] cache_control: &str) {
    let manifest = digest_of("charts/hello", "1.0.0");
    let layer = chart_layer("1.0.0");
    let (uri, digest) = match what {
        "manifest-digest" => (
            format!("/v2/charts/hello/manifests/{manifest}"),
            manifest.clone(),
        ),
        "manifest-tag" => (
            "/v2/charts/hello/manifests/1.0.0".to_owned(),
            manifest.clone(),
        ),
        _ => (format!("/v2/charts/hello/blobs/{layer}"), layer.clone()),
    };
    let etag = format!("\"{digest}\"");
    let other = format!("\"sha256:{}\"", "0".repeat(64));
    let (r, _) = exchange(
        true,
        vec![
            get(&uri),
            get(&uri).insert_header(("if-none-match", etag.as_str())),
            get(&uri).insert_header(("if-none-match", format!("{other}, W/{etag}"))),
            get(&uri).insert_header(("if-none-match", "*")),
            get(&uri).insert_header(("if-none-match", other.as_str())),
            TestRequest::default()
                .method(Method::HEAD)
                .uri(&uri)
                .insert_header(("if-none-match", etag.as_str())),
        ],
    )
    .await;
    assert_eq!(r[0].status, StatusCode::OK);
    assert_eq!(r[0].header("etag"), Some(etag.as_str()));
    assert_eq!(r[0].header("cache-control"), Some(cache_control));
    for (i, reply) in r[1..4].iter().chain([&r[5]]).enumerate() {
        assert_eq!(
            reply.status,
            StatusCode::NOT_MODIFIED,
            "conditional request {i}"
        );
        assert!(reply.body.is_empty());
        assert_eq!(reply.header("etag"), Some(etag.as_str()));
        assert_eq!(reply.header("cache-control"), Some(cache_control));
        assert_eq!(reply.header("docker-content-digest"), Some(digest.as_str()));
    }
    assert_eq!(r[4].status, StatusCode::OK, "another ETag does not match");
    assert_eq!(r[4].body, r[0].body);
}

#[actix_web::test]
async fn if_range_with_another_validator_gets_the_whole_blob() {
    let layer = chart_layer("1.0.0");
    let uri = format!("/v2/charts/hello/blobs/{layer}");
    let (r, _) = exchange(
        true,
        vec![
            get(&uri),
            get(&uri)
                .insert_header(("range", "bytes=0-9"))
                .insert_header(("if-range", format!("\"{layer}\""))),
            get(&uri)
                .insert_header(("range", "bytes=0-9"))
                .insert_header(("if-range", "\"something-else\"")),
        ],
    )
    .await;
    assert_eq!(r[1].status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(r[1].body, r[0].body[..10]);
    assert_eq!(r[2].status, StatusCode::OK);
    assert_eq!(r[2].body, r[0].body);
}

#[actix_web::test]
async fn oversized_request_heads_get_431() {
    // The test app caps heads at 1024 bytes.
    let (r, _) = exchange(
        true,
        vec![
            get("/v2/").insert_header(("x-padding", "a".repeat(900))),
            get("/v2/").insert_header(("x-padding", "a".repeat(1100))),
            get(&format!(
                "/v2/charts/hello/tags/list?last={}",
                "a".repeat(1100)
            )),
        ],
    )
    .await;
    assert_eq!(r[0].status, StatusCode::OK);
    for reply in &r[1..] {
        assert_eq!(reply.status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(v["errors"][0]["code"], "REQUEST_HEADER_FIELDS_TOO_LARGE");
    }
}
