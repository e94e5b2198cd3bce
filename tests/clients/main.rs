//! Other OCI clients against chartreg:
//! - oci-client (the Rust crate) pulls charts from the binary, lists tags, reads digests with
//!   HEAD and reads blob ranges; and pulls generated multi-megabyte content from the library
//!   served in-process;
//! - skopeo (containers/image) inspects raw manifests, lists tags (an image's exactly as
//!   upstream has them) and copies a chart into an OCI layout, keeping its digests;
//! - both against the embedded multi-platform image with its signature and SBOM.
//!
//! Every check compares with the packages in `charts/` and the digests `assets/` tags.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;
mod generated;
mod images;
mod rust_client;
mod skopeo;

use chartreg_core::content::Registry;
use common::{InProcess, Process, Skopeo, assert_same_bytes, assets_tag_digest, root};
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
    // One crypto provider for rustls (ring, as the server and the build tool use).
    let _ = rustls::crypto::ring::default_provider().install_default();
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
