//! skopeo inspects raw manifests, lists tags (an image's as upstream has them, a chart's `v`
//! tags with their unprefixed form) and copies a chart into an OCI layout.

use super::*;

/// The bytes of a blob of the committed layout `assets/<repo>`.
fn assets_blob(repo: &str, digest: &str) -> std::path::PathBuf {
    let hex = digest.strip_prefix("sha256:").expect("sha256 digest");
    root()
        .join("assets")
        .join(repo)
        .join("blobs/sha256")
        .join(hex)
}

/// `skopeo inspect --raw` prints exactly the manifest chartreg stores, with the digest it
/// announces.
#[test]
fn skopeo_inspect_raw_prints_the_exact_manifest() {
    let Some(skopeo) = Skopeo::new() else { return };
    if common::tool("curl").is_none() {
        return;
    }
    let server = Process::start();
    for (repo, tag) in [
        ("charts/hello", "1.0.0"),
        ("charts/hello", "1.0.1_build.7"),
        ("charts/hello", "1.1.0-rc.1"),
        ("charts/motd", "1.0.0"),
    ] {
        let out = skopeo.ok(&[
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{}/{repo}:{tag}", server.host()),
        ]);
        let digest = assets_tag_digest(repo, tag);
        assert_eq!(
            common::sha256(&out.stdout),
            digest,
            "{repo}:{tag}: the raw manifest's digest"
        );
        assert_eq!(
            served_manifest_digest(&server.url(), repo, tag),
            digest,
            "{repo}:{tag}: Docker-Content-Digest"
        );
        assert_same_bytes(
            &out.stdout,
            &assets_blob(repo, &digest),
            &format!("skopeo inspect --raw {repo}:{tag}"),
        );
    }
}

/// `skopeo list-tags` lists every tag.
#[test]
fn skopeo_lists_tags() {
    let Some(skopeo) = Skopeo::new() else { return };
    let server = Process::start();
    for (repo, tags) in [
        ("charts/hello", HELLO_TAGS.as_slice()),
        ("charts/motd", ["1.0.0"].as_slice()),
    ] {
        let out = skopeo.ok(&[
            "list-tags",
            "--tls-verify=false",
            &format!("docker://{}/{repo}", server.host()),
        ]);
        let list: Value = serde_json::from_slice(&out.stdout).expect("list-tags prints JSON");
        assert_eq!(list["Tags"], serde_json::json!(tags), "tags of {repo}");
        assert_eq!(
            list["Repository"],
            format!("{}/{repo}", server.host()),
            "repository of {repo}"
        );
    }
}

/// `skopeo copy` of the signed chart into an OCI layout, with `--preserve-digests` (skopeo
/// would fail rather than rewrite the manifest): the layout tags the served manifest digest,
/// and its blobs are the manifest, the config and the packaged chart and provenance files.
#[test]
fn skopeo_copies_a_chart_into_an_oci_layout() {
    let Some(skopeo) = Skopeo::new() else { return };
    if common::tool("curl").is_none() {
        return;
    }
    let server = Process::start();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let layout = out_dir.path().join("motd");
    skopeo.ok(&[
        "copy",
        "--src-tls-verify=false",
        "--preserve-digests",
        &format!("docker://{}/charts/motd:1.0.0", server.host()),
        &format!("oci:{}:1.0.0", layout.to_str().expect("UTF-8 path")),
    ]);

    let served = served_manifest_digest(&server.url(), "charts/motd", "1.0.0");
    assert_eq!(
        served,
        assets_tag_digest("charts/motd", "1.0.0"),
        "chartreg serves another charts/motd:1.0.0 than assets/ tags"
    );
    let index: Value =
        serde_json::from_slice(&common::read(&layout.join("index.json"))).expect("index.json");
    let manifests = index["manifests"].as_array().expect("manifests");
    assert_eq!(manifests.len(), 1, "{index}");
    assert_eq!(
        manifests[0]["digest"],
        served.as_str(),
        "copied manifest digest"
    );
    assert_eq!(manifests[0]["mediaType"], OCI_MANIFEST);
    assert_eq!(
        manifests[0]["annotations"]["org.opencontainers.image.ref.name"],
        "1.0.0"
    );

    let blob = |digest: &str| -> std::path::PathBuf {
        layout
            .join("blobs/sha256")
            .join(digest.strip_prefix("sha256:").expect("sha256"))
    };
    let manifest_bytes = common::read(&blob(&served));
    assert_same_bytes(
        &manifest_bytes,
        &assets_blob("charts/motd", &served),
        "copied manifest",
    );
    let manifest: Value = serde_json::from_slice(&manifest_bytes).expect("manifest JSON");
    let config = manifest["config"]["digest"]
        .as_str()
        .expect("config digest");
    assert_same_bytes(
        &common::read(&blob(config)),
        &assets_blob("charts/motd", config),
        "copied config",
    );
    let chart_layer = common::sha256(&common::read(&chart("motd-1.0.0.tgz")));
    let prov_layer = common::sha256(&common::read(&chart("motd-1.0.0.tgz.prov")));
    assert_same_bytes(
        &common::read(&blob(&chart_layer)),
        &chart("motd-1.0.0.tgz"),
        "copied chart layer",
    );
    assert_same_bytes(
        &common::read(&blob(&prov_layer)),
        &chart("motd-1.0.0.tgz.prov"),
        "copied provenance layer",
    );
    let mut blobs: Vec<String> = std::fs::read_dir(layout.join("blobs/sha256"))
        .expect("blobs")
        .map(|e| format!("sha256:{}", e.expect("entry").file_name().to_string_lossy()))
        .collect();
    blobs.sort();
    let mut want = vec![served, config.to_owned(), chart_layer, prov_layer];
    want.sort();
    assert_eq!(blobs, want, "blobs of the copied layout");
}

/// `skopeo list-tags` of an image lists exactly upstream's tags (`v1.0.0`, no `1.0.0` beside
/// it); of a chart tagged `v1.0.0`, both forms (Helm resolves ranges against the unprefixed
/// one). The image is still found by `1.0.0`. Served in-process from a registry built as the
/// binary builds its own (`from_files`: from the build-time facts of the files).
#[test]
fn skopeo_lists_an_images_tags_as_upstream_has_them() {
    let Some(skopeo) = Skopeo::new() else { return };
    let image = common::generated_layout(
        "images/app",
        "v1.0.0",
        (
            "application/vnd.oci.image.config.v1+json",
            br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#,
        ),
        &[("application/vnd.oci.image.layer.v1.tar", b"image layer")],
    );
    let chart = common::generated_layout(
        "charts/app",
        "v1.0.0",
        (
            HELM_CONFIG,
            br#"{"name":"app","version":"v1.0.0","apiVersion":"v2"}"#,
        ),
        &[(HELM_CHART, b"chart package")],
    );
    let files = image.files.into_iter().chain(chart.files);
    let registry = Registry::from_files(files).expect("generated layouts load");
    let server = InProcess::start(registry);

    for (repo, tags) in [
        ("images/app", ["v1.0.0"].as_slice()),
        ("charts/app", ["1.0.0", "v1.0.0"].as_slice()),
    ] {
        let out = skopeo.ok(&[
            "list-tags",
            "--tls-verify=false",
            &format!("docker://{}/{repo}", server.host()),
        ]);
        let list: Value = serde_json::from_slice(&out.stdout).expect("list-tags prints JSON");
        assert_eq!(list["Tags"], serde_json::json!(tags), "tags of {repo}");
    }

    let out = skopeo.ok(&[
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{}/images/app:1.0.0", server.host()),
    ]);
    assert_eq!(
        common::sha256(&out.stdout),
        image.manifest_digest,
        "images/app:1.0.0 finds v1.0.0"
    );
}
