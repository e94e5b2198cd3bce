//! oci-client pulls generated multi-megabyte content from the library served in-process.

use super::*;

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
