//! Images kept per upstream registry: `?ns=` picks the registry and the answer says so in
//! `OCI-Namespace`; without `ns` a path one registry holds resolves to it, a path two hold is
//! `NAME_UNKNOWN` naming both; the full name (`/v2/quay.io/...`) always works; an unknown or
//! invalid `ns` is an OCI JSON error.

use super::*;

/// `127.0.0.1_5057/nutanix/demo-app` and `127.0.0.1_5058/nutanix/demo-app` (the same path in two
/// registries, different bytes), `quay.io/jetstack/cert-manager` (one registry) and
/// `charts/x` (no registry); each with one image tagged `v1`. Returns each repository's digest.
fn registry() -> (Registry, BTreeMap<&'static str, String>) {
    let mut files = Vec::new();
    let mut digests = BTreeMap::new();
    for name in [
        "127.0.0.1_5057/nutanix/demo-app",
        "127.0.0.1_5058/nutanix/demo-app",
        "quay.io/jetstack/cert-manager",
        "charts/x",
    ] {
        let mut layout = LayoutBuilder::new(name);
        let image = common::image(&mut layout, name.as_bytes());
        let d = layout.manifest(media_type::OCI_MANIFEST, &image);
        layout.list(d.clone(), Some("v1"));
        if name.starts_with("quay.io/") {
            layout.list(d.clone(), Some("v2"));
        }
        digests.insert(name, d.digest.to_string());
        files.extend(
            layout
                .into_files()
                .unwrap()
                .into_iter()
                .map(|(p, b)| HeldFile::new(p, b)),
        );
    }
    (Registry::from_files(files).unwrap(), digests)
}

async fn ask(uri: &str) -> Reply {
    call(registry().0, Method::GET, uri, &[]).await
}

#[rstest]
#[case(
    "/v2/nutanix/demo-app/manifests/v1?ns=127.0.0.1:5057",
    "127.0.0.1_5057/nutanix/demo-app",
    "127.0.0.1:5057"
)]
#[case(
    "/v2/nutanix/demo-app/manifests/v1?ns=127.0.0.1%3A5058",
    "127.0.0.1_5058/nutanix/demo-app",
    "127.0.0.1:5058"
)]
#[case(
    "/v2/jetstack/cert-manager/manifests/v1?ns=quay.io",
    "quay.io/jetstack/cert-manager",
    "quay.io"
)]
#[case(
    "/v2/jetstack/cert-manager/manifests/v1?ns=QUAY.IO",
    "quay.io/jetstack/cert-manager",
    "quay.io"
)]
#[case(
    "/v2/quay.io/jetstack/cert-manager/manifests/v1?ns=quay.io",
    "quay.io/jetstack/cert-manager",
    "quay.io"
)]
#[actix_web::test]
async fn ns_picks_the_registry_and_says_so(
    #[case] uri: &str,
    #[case] repository: &str,
    #[case] namespace: &str,
) {
    let (registry, digests) = registry();
    let r = call(registry, Method::GET, uri, &[]).await;
    assert_eq!(r.status, StatusCode::OK, "{uri}");
    assert_eq!(
        r.header("docker-content-digest"),
        Some(digests[repository].as_str())
    );
    assert_eq!(r.header("oci-namespace"), Some(namespace));
}

#[rstest]
#[case(
    "/v2/jetstack/cert-manager/manifests/v1",
    "quay.io/jetstack/cert-manager"
)]
#[case(
    "/v2/quay.io/jetstack/cert-manager/manifests/v1",
    "quay.io/jetstack/cert-manager"
)]
#[case(
    "/v2/127.0.0.1_5058/nutanix/demo-app/manifests/v1",
    "127.0.0.1_5058/nutanix/demo-app"
)]
#[case("/v2/charts/x/manifests/v1", "charts/x")]
#[actix_web::test]
async fn without_ns_a_name_or_a_path_one_registry_holds_resolves(
    #[case] uri: &str,
    #[case] repository: &str,
) {
    let (registry, digests) = registry();
    let r = call(registry, Method::GET, uri, &[]).await;
    assert_eq!(r.status, StatusCode::OK, "{uri}");
    assert_eq!(
        r.header("docker-content-digest"),
        Some(digests[repository].as_str())
    );
    assert_eq!(r.header("oci-namespace"), None);
}

#[actix_web::test]
async fn blobs_tags_and_referrers_resolve_by_ns_too() {
    let (registry, digests) = registry();
    let digest = &digests["127.0.0.1_5058/nutanix/demo-app"];
    let manifest = call(
        registry,
        Method::GET,
        &format!("/v2/nutanix/demo-app/manifests/{digest}?ns=127.0.0.1:5058"),
        &[],
    )
    .await;
    let layer = manifest.json()["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let blob = ask(&format!(
        "/v2/nutanix/demo-app/blobs/{layer}?ns=127.0.0.1:5058"
    ))
    .await;
    assert_eq!(blob.status, StatusCode::OK);
    assert_eq!(&blob.body[..], b"127.0.0.1_5058/nutanix/demo-app");
    assert_eq!(blob.header("oci-namespace"), Some("127.0.0.1:5058"));
    // The other registry's repository does not hold that layer.
    let other = ask(&format!(
        "/v2/nutanix/demo-app/blobs/{layer}?ns=127.0.0.1:5057"
    ))
    .await;
    other.assert_error(StatusCode::NOT_FOUND, "BLOB_UNKNOWN");
    assert_eq!(other.header("oci-namespace"), Some("127.0.0.1:5057"));

    let tags = ask("/v2/nutanix/demo-app/tags/list?ns=127.0.0.1:5057").await;
    assert_eq!(tags.status, StatusCode::OK);
    assert_eq!(
        tags.json(),
        json!({"name": "127.0.0.1_5057/nutanix/demo-app", "tags": ["v1"]})
    );
    // A page of the list: the link to the next one keeps the namespace.
    let page = ask("/v2/jetstack/cert-manager/tags/list?ns=quay.io&n=1").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.json()["tags"], json!(["v1"]));
    assert_eq!(
        page.header("link"),
        Some("</v2/jetstack/cert-manager/tags/list?n=1&last=v1&ns=quay.io>; rel=\"next\"")
    );
    let next = ask("/v2/jetstack/cert-manager/tags/list?n=1&last=v1&ns=quay.io").await;
    assert_eq!(next.json()["tags"], json!(["v2"]));
    let referrers = ask(&format!(
        "/v2/nutanix/demo-app/referrers/{digest}?ns=127.0.0.1:5058"
    ))
    .await;
    assert_eq!(referrers.status, StatusCode::OK);
    assert_eq!(referrers.header("oci-namespace"), Some("127.0.0.1:5058"));
}

#[actix_web::test]
async fn a_path_two_registries_hold_is_name_unknown_naming_both() {
    let r = ask("/v2/nutanix/demo-app/manifests/v1").await;
    let message = r.assert_error(StatusCode::NOT_FOUND, "NAME_UNKNOWN");
    for candidate in [
        "127.0.0.1:5057",
        "127.0.0.1_5057/nutanix/demo-app",
        "127.0.0.1:5058",
        "127.0.0.1_5058/nutanix/demo-app",
        "?ns=",
    ] {
        assert!(message.contains(candidate), "{candidate} in {message}");
    }
}

#[rstest]
// A registry the content holds nothing of: the error names the ones it holds.
#[case(
    "/v2/nutanix/demo-app/manifests/v1?ns=docker.io",
    "NAME_UNKNOWN",
    StatusCode::NOT_FOUND,
    "quay.io"
)]
// A registry it holds, but not this path there: never another registry's image.
#[case(
    "/v2/jetstack/cert-manager/manifests/v1?ns=127.0.0.1:5057",
    "NAME_UNKNOWN",
    StatusCode::NOT_FOUND,
    "jetstack/cert-manager"
)]
#[case(
    "/v2/charts/x/manifests/v1?ns=quay.io",
    "NAME_UNKNOWN",
    StatusCode::NOT_FOUND,
    "charts/x"
)]
// The full name of one registry's repository, asked for in another registry.
#[case(
    "/v2/quay.io/jetstack/cert-manager/manifests/v1?ns=127.0.0.1:5057",
    "NAME_UNKNOWN",
    StatusCode::NOT_FOUND,
    "quay.io/jetstack/cert-manager"
)]
#[case(
    "/v2/nutanix/demo-app/manifests/v1?ns=not..a.host",
    "QUERY_INVALID",
    StatusCode::BAD_REQUEST,
    "not..a.host"
)]
#[case(
    "/v2/nutanix/demo-app/manifests/v1?ns=a.io:99999",
    "QUERY_INVALID",
    StatusCode::BAD_REQUEST,
    "99999"
)]
#[actix_web::test]
async fn unknown_and_invalid_ns_are_oci_errors(
    #[case] uri: &str,
    #[case] code: &str,
    #[case] status: StatusCode,
    #[case] named: &str,
) {
    let r = ask(uri).await;
    let message = r.assert_error(status, code);
    assert!(message.contains(named), "{named} in {message}");
}

#[actix_web::test]
async fn the_catalog_lists_full_names() {
    let r = ask("/v2/_catalog").await;
    assert_eq!(
        r.json()["repositories"],
        json!([
            "127.0.0.1_5057/nutanix/demo-app",
            "127.0.0.1_5058/nutanix/demo-app",
            "charts/x",
            "quay.io/jetstack/cert-manager"
        ])
    );
}

#[actix_web::test]
async fn pages_show_the_registry_a_repository_came_from() {
    let overview = String::from_utf8(ask("/").await.body.to_vec()).unwrap();
    assert!(overview.contains("from quay.io"), "{overview}");
    assert!(overview.contains("from 127.0.0.1:5058"), "{overview}");
    let page = ask("/ui/127.0.0.1_5057/nutanix/demo-app").await;
    assert_eq!(page.status, StatusCode::OK);
    let html = String::from_utf8(page.body.to_vec()).unwrap();
    assert!(
        html.contains("images of 127.0.0.1:5057")
            && html.contains("Nodes pull it as <code>127.0.0.1:5057/nutanix/demo-app:v1</code>"),
        "{html}"
    );
    let charts = String::from_utf8(ask("/ui/charts/x").await.body.to_vec()).unwrap();
    assert!(!charts.contains("Nodes pull it as"), "{charts}");
    let json = call(
        registry().0,
        Method::GET,
        "/",
        &[("Accept", "application/json")],
    )
    .await
    .json();
    let quay = json["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "quay.io/jetstack/cert-manager")
        .unwrap()
        .clone();
    assert_eq!(
        quay["upstream"],
        json!({"registry": "quay.io", "path": "jetstack/cert-manager"})
    );
}

/// A request whose name or digest does not parse, in a registry it names, says which registry
/// it was answered for too.
#[actix_web::test]
async fn errors_before_the_lookup_carry_the_namespace_too() {
    let r = ask("/v2/nutanix/demo-app/blobs/nope?ns=quay.io").await;
    r.assert_error(StatusCode::BAD_REQUEST, "DIGEST_INVALID");
    assert_eq!(r.header("oci-namespace"), Some("quay.io"));
    let r = ask("/v2/Nutanix/demo-app/manifests/v1?ns=quay.io").await;
    r.assert_error(StatusCode::BAD_REQUEST, "NAME_INVALID");
    assert_eq!(r.header("oci-namespace"), Some("quay.io"));
    // Without a valid ns there is none to name.
    let r = ask("/v2/nutanix/demo-app/blobs/nope?ns=not..a.host").await;
    assert_eq!(r.header("oci-namespace"), None);
    let r = ask("/v2/nutanix/demo-app/blobs/nope").await;
    assert_eq!(r.header("oci-namespace"), None);
}
