//! Blobs byte for byte, single ranges (206), unsatisfiable ranges (416), ranges ignored.

use super::*;

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
pub(crate) fn ranges_registry() -> (Registry, String, Vec<u8>) {
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
        .map(|(p, b)| HeldFile::new(p, b));
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
