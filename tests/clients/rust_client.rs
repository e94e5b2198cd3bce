//! oci-client (the Rust crate) against the binary: pulls, manifests, tags, digests, ranges.

use super::*;

/// `Client::pull` of a Helm chart from the binary: the chart (and provenance) layers are the
/// packaged files, the config is what the manifest names, and the digest is the one assets/
/// tags and chartreg announces.
#[tokio::test]
async fn oci_client_pulls_charts_from_the_binary() {
    if common::tool("curl").is_none() {
        return;
    }
    let server = Process::start();
    let client = client();

    let image = reference(&format!("{}/charts/hello:1.0.0", server.host()));
    let data = client
        .pull(
            &image,
            &RegistryAuth::Anonymous,
            vec![HELM_CHART, HELM_PROVENANCE],
        )
        .await
        .expect("pull charts/hello:1.0.0");
    let expected = assets_tag_digest("charts/hello", "1.0.0");
    assert_eq!(
        data.digest.as_deref(),
        Some(expected.as_str()),
        "pulled digest"
    );
    assert_eq!(
        served_manifest_digest(&server.url(), "charts/hello", "1.0.0"),
        expected,
        "Docker-Content-Digest"
    );
    assert_eq!(data.layers.len(), 1, "hello has one layer");
    assert_eq!(
        data.layers[0].media_type, HELM_CHART,
        "hello:1.0.0 layer type"
    );
    assert_same_bytes(
        &data.layers[0].data,
        &chart("hello-1.0.0.tgz"),
        "chart layer of hello:1.0.0",
    );
    let manifest = data.manifest.expect("pull returns the manifest");
    assert_eq!(
        data.config.media_type, HELM_CONFIG,
        "hello:1.0.0 config type"
    );
    assert_eq!(
        manifest.config.digest,
        common::sha256(&data.config.data),
        "hello:1.0.0 config digest"
    );
    assert_eq!(
        manifest.config.size,
        data.config.data.len() as i64,
        "hello:1.0.0 config size"
    );
    let config: Value = serde_json::from_slice(&data.config.data).expect("config is JSON");
    assert_eq!(config["name"], "hello");
    assert_eq!(config["version"], "1.0.0");

    // The signed chart: chart and provenance layers, in the manifest's order.
    let image = reference(&format!("{}/charts/motd:1.0.0", server.host()));
    let data = client
        .pull(
            &image,
            &RegistryAuth::Anonymous,
            vec![HELM_CHART, HELM_PROVENANCE],
        )
        .await
        .expect("pull charts/motd:1.0.0");
    assert_eq!(
        data.digest.as_deref(),
        Some(assets_tag_digest("charts/motd", "1.0.0").as_str())
    );
    let manifest = data.manifest.expect("pull returns the manifest");
    assert_eq!(
        data.layers.len(),
        2,
        "motd has a chart and a provenance layer"
    );
    // `pull` returns layers in the order their downloads finished: match them by type.
    for (media_type, file) in [
        (HELM_CHART, "motd-1.0.0.tgz"),
        (HELM_PROVENANCE, "motd-1.0.0.tgz.prov"),
    ] {
        let descriptor = manifest
            .layers
            .iter()
            .find(|d| d.media_type == media_type)
            .unwrap_or_else(|| panic!("motd's manifest has no {media_type} layer"));
        let layer = data
            .layers
            .iter()
            .find(|l| l.media_type == media_type)
            .unwrap_or_else(|| panic!("no {media_type} layer pulled"));
        assert_eq!(
            descriptor.digest,
            common::sha256(&layer.data),
            "digest of motd's {media_type} layer"
        );
        assert_same_bytes(&layer.data, &chart(file), &format!("{file} layer of motd"));
    }

    // Only the accepted layer types are pulled.
    let refused = client
        .pull(&image, &RegistryAuth::Anonymous, vec![HELM_CHART])
        .await;
    assert!(refused.is_err(), "a provenance layer was accepted unasked");
}

/// Manifest and config, tag listing (whole and paginated), HEAD digests and lookups by digest.
#[tokio::test]
async fn oci_client_reads_manifests_tags_and_digests() {
    let server = Process::start();
    let client = client();
    let auth = RegistryAuth::Anonymous;
    let host = server.host();

    let image = reference(&format!("{host}/charts/hello:1.0.1_build.7"));
    let (manifest, digest, config) = client
        .pull_manifest_and_config(&image, &auth)
        .await
        .expect("pull_manifest_and_config");
    let expected = assets_tag_digest("charts/hello", "1.0.1_build.7");
    assert_eq!(digest, expected, "digest of hello:1.0.1_build.7");
    assert_eq!(manifest.media_type.as_deref(), Some(OCI_MANIFEST));
    assert_eq!(manifest.config.media_type, HELM_CONFIG);
    assert_eq!(
        manifest.config.digest,
        common::sha256(config.as_bytes()),
        "config digest of hello:1.0.1_build.7"
    );
    let config: Value = serde_json::from_str(&config).expect("config is JSON");
    assert_eq!(config["name"], "hello");
    assert_eq!(config["version"], "1.0.1+build.7");
    let package = std::fs::read(chart("hello-1.0.1+build.7.tgz")).expect("package");
    assert_eq!(manifest.layers.len(), 1, "layers of hello:1.0.1_build.7");
    assert_eq!(
        (manifest.layers[0].digest.as_str(), manifest.layers[0].size),
        (common::sha256(&package).as_str(), package.len() as i64),
        "the chart layer of hello:1.0.1_build.7 is not the package"
    );

    // HEAD gives the same digest.
    let head = client
        .fetch_manifest_digest(&image, &auth)
        .await
        .expect("fetch_manifest_digest");
    assert_eq!(head, expected, "digest from HEAD");

    // By digest.
    let by_digest = reference(&format!("{host}/charts/hello@{expected}"));
    let (raw, digest) = client
        .pull_manifest_raw(&by_digest, &auth, &[OCI_MANIFEST])
        .await
        .expect("pull manifest by digest");
    assert_eq!(digest, expected, "digest of the manifest pulled by digest");
    assert_eq!(
        common::sha256(&raw),
        expected,
        "bytes of the manifest pulled by digest"
    );
    assert_eq!(
        client.fetch_manifest_digest(&by_digest, &auth).await.ok(),
        Some(expected.clone())
    );

    // Tags: all, and page by page.
    let list = client
        .list_tags(&image, &auth, None, None)
        .await
        .expect("list_tags");
    assert_eq!(list.name, "charts/hello");
    assert_eq!(list.tags, HELLO_TAGS, "tags of charts/hello");
    let mut paged = Vec::new();
    let mut last: Option<String> = None;
    loop {
        let page = client
            .list_tags(&image, &auth, Some(2), last.as_deref())
            .await
            .expect("list_tags page");
        assert!(
            page.tags.len() <= 2,
            "page larger than n=2: {:?}",
            page.tags
        );
        if page.tags.is_empty() {
            break;
        }
        last = page.tags.last().cloned();
        paged.extend(page.tags);
    }
    assert_eq!(paged, HELLO_TAGS, "tags read two at a time");
    let motd = reference(&format!("{host}/charts/motd:1.0.0"));
    let list = client
        .list_tags(&motd, &auth, None, None)
        .await
        .expect("list_tags motd");
    assert_eq!(list.tags, ["1.0.0"], "tags of charts/motd");

    // What is not there.
    for missing in [
        format!("{host}/charts/hello:9.9.9"),
        format!("{host}/charts/nope:1.0.0"),
    ] {
        let r = client.pull_manifest(&reference(&missing), &auth).await;
        assert!(r.is_err(), "{missing} should not be found");
    }
}

/// Blob ranges through `pull_blob_stream_partial` (`Range: bytes=a-b` and `bytes=a-`), and the
/// full stream with its length.
#[tokio::test]
async fn oci_client_reads_blob_ranges() {
    let server = Process::start();
    let client = client();
    let image = reference(&format!("{}/charts/hello:1.0.0", server.host()));
    let (manifest, _) = client
        .pull_image_manifest(&image, &RegistryAuth::Anonymous)
        .await
        .expect("pull manifest");
    let layer: &OciDescriptor = &manifest.layers[0];
    let package = std::fs::read(chart("hello-1.0.0.tgz")).expect("package");

    check_ranges(&client, &image, layer, &package).await;
}
