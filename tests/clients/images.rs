//! The embedded multi-platform image (`images/sample`, packed from the committed layout):
//! `skopeo copy --all` out of the binary gives the input's digests for the index and every
//! platform, `skopeo inspect --raw` prints the input's bytes, and oci-client lists the
//! image's referrers, with and without the `artifactType` filter.

use super::*;

/// The committed input layout of `images/sample`, and its index.json.
fn input() -> (std::path::PathBuf, Value) {
    let dir = root().join("images/sample");
    let index = serde_json::from_slice(&common::read(&dir.join("index.json"))).expect("index.json");
    (dir, index)
}

/// The digest of the input's `v1`.
fn v1_digest(index: &Value) -> String {
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == "v1")
        .expect("v1 in the input")["digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn embedded_sample() -> bool {
    let present = root().join("assets/images/sample/index.json").is_file();
    assert!(
        present || std::env::var_os("CI").is_none(),
        "assets/images/sample is missing: `make assets` (make test does) packs it before the build"
    );
    present
}

#[test]
fn skopeo_copies_every_platform_with_the_input_digests() {
    let Some(skopeo) = Skopeo::new() else { return };
    if !embedded_sample() {
        return;
    }
    let (dir, index) = input();
    let server = Process::start();
    let out = tempfile::tempdir().unwrap();
    let layout = out.path().join("copy");
    skopeo.ok(&[
        "copy",
        "--all",
        "--preserve-digests",
        "--src-tls-verify=false",
        &format!("docker://{}/images/sample:v1", server.host()),
        &format!("oci:{}:v1", layout.to_str().unwrap()),
    ]);
    let copied: Value = serde_json::from_slice(&common::read(&layout.join("index.json"))).unwrap();
    let v1 = v1_digest(&index);
    assert_eq!(
        copied["manifests"][0]["digest"],
        v1.as_str(),
        "the index keeps its digest"
    );
    let blob = |root: &std::path::Path, digest: &str| {
        root.join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    };
    let top: Value = serde_json::from_slice(&common::read(&blob(&dir, &v1))).unwrap();
    let platforms = top["manifests"].as_array().unwrap();
    assert_eq!(platforms.len(), 2);
    for platform in platforms {
        let digest = platform["digest"].as_str().unwrap();
        assert_same_bytes(
            &common::read(&blob(&layout, digest)),
            &blob(&dir, digest),
            &format!("{} manifest", platform["platform"]),
        );
        let manifest: Value = serde_json::from_slice(&common::read(&blob(&dir, digest))).unwrap();
        for layer in manifest["layers"].as_array().unwrap() {
            let d = layer["digest"].as_str().unwrap();
            assert_same_bytes(&common::read(&blob(&layout, d)), &blob(&dir, d), "layer");
        }
    }
}

#[test]
fn skopeo_inspect_raw_prints_the_input_bytes() {
    let Some(skopeo) = Skopeo::new() else { return };
    if !embedded_sample() {
        return;
    }
    let (dir, index) = input();
    let server = Process::start();
    let v1 = v1_digest(&index);
    let raw = skopeo.ok(&[
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{}/images/sample:v1", server.host()),
    ]);
    assert_same_bytes(
        &raw.stdout,
        &dir.join("blobs/sha256")
            .join(v1.trim_start_matches("sha256:")),
        "skopeo inspect --raw images/sample:v1",
    );
}

#[tokio::test]
async fn oci_client_lists_referrers_and_filters_them() {
    if !embedded_sample() {
        return;
    }
    let (_, index) = input();
    let server = Process::start();
    let client = client();
    let v1 = v1_digest(&index);
    let image = reference(&format!("{}/images/sample@{v1}", server.host()));
    let all = client
        .pull_referrers(&image, None)
        .await
        .expect("the referrers API answers");
    let mut types: Vec<String> = all
        .manifests
        .iter()
        .map(|d| d.artifact_type.clone().unwrap_or_default())
        .collect();
    types.sort();
    assert_eq!(
        types,
        [
            "application/spdx+json",
            "application/vnd.dev.cosign.artifact.sig.v1+json"
        ]
    );
    let sboms = client
        .pull_referrers(&image, Some("application/spdx+json"))
        .await
        .expect("the filtered referrers API answers");
    assert_eq!(sboms.manifests.len(), 1);
    assert_eq!(
        sboms.manifests[0].artifact_type.as_deref(),
        Some("application/spdx+json")
    );
}
