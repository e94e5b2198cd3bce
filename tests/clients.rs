//! Other OCI clients against chartreg:
//! - oci-client (the Rust crate) pulls charts from the binary, lists tags, reads digests with
//!   HEAD and reads blob ranges; and pulls generated multi-megabyte content from the library
//!   served in-process;
//! - skopeo (containers/image) inspects raw manifests, lists tags and copies a chart into an
//!   OCI layout, keeping its digests.
//!
//! Every check compares with the packages in `charts/` and the digests `assets/` tags.

mod common;

use std::process::Command;

use common::{InProcess, Process, assert_same_bytes, assets_tag_digest, describe, root};
use futures_util::TryStreamExt;
use oci_client::client::{BlobResponse, ClientConfig, ClientProtocol, SizedStream};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde_json::Value;

const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
const HELM_CHART: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
const HELM_PROVENANCE: &str = "application/vnd.cncf.helm.chart.provenance.v1.prov";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const HELLO_TAGS: [&str; 5] = ["0.1.0", "0.2.0", "1.0.0", "1.0.1_build.7", "1.1.0-rc.1"];

fn client() -> Client {
    Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..Default::default()
    })
}

fn reference(s: &str) -> Reference {
    s.parse()
        .unwrap_or_else(|e| panic!("`{s}` is a reference: {e}"))
}

fn chart(name: &str) -> std::path::PathBuf {
    root().join("charts").join(name)
}

/// The manifest digest chartreg announces in `Docker-Content-Digest` for a GET of
/// `<repo>:<tag>`, after checking it is the digest of the body.
fn served_manifest_digest(url: &str, repo: &str, tag: &str) -> String {
    let curl = common::tool("curl").expect("curl is needed to read response headers");
    let r = common::curl(
        &curl,
        "GET",
        &format!("{url}/v2/{repo}/manifests/{tag}"),
        &[],
    );
    assert_eq!(r.status, 200, "GET manifest {repo}:{tag}: {r:?}");
    let digest = r
        .header("docker-content-digest")
        .unwrap_or_else(|| panic!("no Docker-Content-Digest for {repo}:{tag}"))
        .to_owned();
    assert_eq!(
        digest,
        common::sha256(&r.body),
        "Docker-Content-Digest of {repo}:{tag} is not the digest of the body"
    );
    digest
}

async fn collect(stream: SizedStream) -> Vec<u8> {
    let chunks: Vec<bytes::Bytes> = stream.try_collect().await.expect("blob stream reads");
    chunks.concat()
}

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

/// Reads `layer` of `image` whole and in ranges, comparing with `expected`.
async fn check_ranges(client: &Client, image: &Reference, layer: &OciDescriptor, expected: &[u8]) {
    let len = expected.len() as u64;
    let full = client
        .pull_blob_stream(image, layer)
        .await
        .expect("pull_blob_stream");
    assert_eq!(full.content_length, Some(len), "Content-Length of the blob");
    assert!(
        collect(full).await == expected,
        "the streamed blob differs from the expected bytes"
    );

    let mid = len / 2;
    for (offset, length) in [
        (0, Some(1)),
        (100, Some(1000)),
        (mid - 7, Some(len / 3)),
        (len - 1, Some(1)),
        (mid, None),
        (1, None),
    ] {
        let what = format!("offset {offset} length {length:?} of {len}");
        let response = client
            .pull_blob_stream_partial(image, layer, offset, length)
            .await
            .unwrap_or_else(|e| panic!("range {what}: {e}"));
        let BlobResponse::Partial(stream) = response else {
            panic!("range {what}: a full response instead of 206");
        };
        let end = length.map_or(len, |l| offset + l) as usize;
        let want = &expected[offset as usize..end];
        assert_eq!(
            stream.content_length,
            Some(want.len() as u64),
            "Content-Length of range {what}"
        );
        let got = collect(stream).await;
        assert!(
            got == want,
            "range {what}: got {} bytes {}, want {} bytes {}",
            got.len(),
            common::sha256(&got),
            want.len(),
            common::sha256(want)
        );
    }
}

/// Pseudo-random bytes (xorshift64*), enough to defeat any compression or patterns.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        out.extend_from_slice(&seed.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Content that is not from assets/: an image-like manifest with a 5 MiB random layer (far
/// beyond the size chartreg streams in slices), served by the library in-process, pulled
/// whole and in ranges that straddle slice boundaries.
#[tokio::test]
async fn oci_client_pulls_generated_content_in_process() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as u64
        | 1;
    eprintln!("noise seed {seed}");
    let layer_bytes = noise(5 * 1024 * 1024 + 12345, seed);
    let small_layer = noise(1000, seed.rotate_left(17) | 1);
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    const LAYER: &str = "application/vnd.oci.image.layer.v1.tar";
    let layout = common::generated_layout(
        "generated/big",
        "v1",
        ("application/vnd.oci.image.config.v1+json", config),
        &[(LAYER, &layer_bytes), (LAYER, &small_layer)],
    );
    let registry =
        chartreg_core::content::Registry::from_files(layout.files).expect("generated layout loads");
    let server = InProcess::start(registry);
    let client = client();
    let image = reference(&format!("{}/generated/big:v1", server.host()));

    let data = client
        .pull(&image, &RegistryAuth::Anonymous, vec![LAYER])
        .await
        .expect("pull generated/big:v1");
    assert_eq!(
        data.digest.as_deref(),
        Some(layout.manifest_digest.as_str())
    );
    assert_eq!(data.config.data.as_ref(), config.as_slice(), "config bytes");
    // `pull` returns layers in the order their downloads finished: compare as sorted sets.
    let mut got: Vec<(usize, String)> = data
        .layers
        .iter()
        .map(|l| (l.data.len(), common::sha256(&l.data)))
        .collect();
    got.sort();
    let mut want: Vec<(usize, String)> = [&small_layer, &layer_bytes]
        .iter()
        .map(|d| (d.len(), common::sha256(d)))
        .collect();
    want.sort();
    assert_eq!(got, want, "pulled layers (size, digest)");

    let (raw, digest) = client
        .pull_manifest_raw(&image, &RegistryAuth::Anonymous, &[OCI_MANIFEST])
        .await
        .expect("pull manifest");
    assert_eq!(raw.as_ref(), layout.manifest.as_slice(), "manifest bytes");
    assert_eq!(digest, layout.manifest_digest, "manifest digest");

    let manifest = data.manifest.expect("pull returns the manifest");
    check_ranges(&client, &image, &manifest.layers[0], &layer_bytes).await;
    // Ranges around the boundaries a sliced body may use (it uses 1 MiB slices).
    for boundary in [
        64 * 1024u64,
        128 * 1024,
        256 * 1024,
        1024 * 1024,
        2 * 1024 * 1024,
        4 * 1024 * 1024,
    ] {
        let offset = boundary - 3;
        let length = (boundary + 6).min(layer_bytes.len() as u64 - offset);
        let BlobResponse::Partial(stream) = client
            .pull_blob_stream_partial(&image, &manifest.layers[0], offset, Some(length))
            .await
            .expect("range")
        else {
            panic!("range at {boundary}: a full response instead of 206");
        };
        let got = collect(stream).await;
        let want = &layer_bytes[offset as usize..(offset + length) as usize];
        assert!(got == want, "range {offset}+{length} differs");
    }
}

// ---------------------------------------------------------------------------------------------
// skopeo
// ---------------------------------------------------------------------------------------------

/// skopeo with a private HOME, runtime and temp folders and an accept-anything policy file.
struct Skopeo {
    bin: std::path::PathBuf,
    dir: tempfile::TempDir,
}

impl Skopeo {
    fn new() -> Option<Skopeo> {
        let bin = common::tool("skopeo")?;
        let dir = tempfile::tempdir().expect("temp dir");
        for sub in ["home", "run", "tmp"] {
            std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
        }
        std::fs::write(
            dir.path().join("policy.json"),
            r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
        )
        .expect("write policy");
        Some(Skopeo { bin, dir })
    }

    fn ok(&self, args: &[&str]) -> std::process::Output {
        let d = self.dir.path();
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--policy")
            .arg(d.join("policy.json"))
            .args(args)
            .env("HOME", d.join("home"))
            .env("XDG_RUNTIME_DIR", d.join("run"))
            .env("XDG_CONFIG_HOME", d.join("home/.config"))
            .env("TMPDIR", d.join("tmp"))
            .env_remove("REGISTRY_AUTH_FILE");
        let out = common::output_of(&mut cmd, "skopeo");
        assert!(
            out.status.success(),
            "skopeo {} failed: {}",
            args.join(" "),
            describe(&out)
        );
        out
    }
}

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
