//! `/v2/`, manifests by tag and digest, and the spec's error envelope.

use super::*;

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
#[case::plus_tag_unknown(
    "/v2/charts/hello/manifests/9.9.9+build.7",
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
#[case::unknown_page("/ui/charts/nope", StatusCode::NOT_FOUND, "NAME_UNKNOWN")]
#[case::bad_page_name("/ui/Charts/Hello", StatusCode::BAD_REQUEST, "NAME_INVALID")]
#[case::unknown_classic_index("/nope/index.yaml", StatusCode::NOT_FOUND, "UNSUPPORTED")]
#[case::unknown_package("/charts/hello-9.9.9.tgz", StatusCode::NOT_FOUND, "UNSUPPORTED")]
#[case::bad_classic_prefix("/Charts/index.yaml", StatusCode::BAD_REQUEST, "NAME_INVALID")]
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
