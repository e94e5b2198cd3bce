//! The committed assets load; every kind of bad content is refused, naming the file.

use super::*;

#[test]
fn assets_hold_the_sample_charts() {
    let registry = common::assets_registry();
    assert_eq!(
        registry.catalog().names(),
        [
            "charts/chartreg",
            "charts/hello",
            "charts/motd",
            "images/sample"
        ]
    );
    let s = registry.summary();
    // Seven chart versions, and the sample image: its index and v1's attestation tagged, two
    // platform manifests, a signature and an SBOM by subject.
    assert_eq!((s.repositories, s.tags, s.manifests), (4, 9, 13));
    assert_eq!(
        s.blobs,
        7 * 2 + 1 + 9,
        "config and chart per version, one provenance; the image's configs and layers"
    );
    let hello = registry
        .repository(&"charts/hello".parse().unwrap())
        .unwrap();
    assert_eq!(
        hello.tags(),
        ["0.1.0", "0.2.0", "1.0.0", "1.0.1_build.7", "1.1.0-rc.1"]
    );
}

#[test]
fn valid_content_loads_and_looks_up() {
    let (files, d, m) = valid();
    let registry = load(files).unwrap();
    let repo = registry.repository(&"test/app".parse().unwrap()).unwrap();
    let by_tag = repo
        .manifest(&Reference::Tag("v1".parse().unwrap()))
        .unwrap();
    let by_digest = repo.manifest(&Reference::Digest(d.digest.clone())).unwrap();
    assert_eq!(by_tag.data, by_digest.data);
    assert_eq!(by_tag.media_type, media_type::OCI_MANIFEST);
    assert_eq!(Digest::sha256_of(&by_tag.data), d.digest);
    assert_eq!(
        &repo.blob(&m.layers[0].digest).unwrap().data[..],
        b"layer bytes"
    );
    assert!(repo.blob(&d.digest).is_err(), "manifests are not blobs");
    assert!(registry.repository(&"test/other".parse().unwrap()).is_err());
}

#[test]
fn embedded_hashes_are_trusted_and_checked() {
    let (files, _, m) = valid();
    let layer_path = blob_path(&m.layers[0]);
    let tampered = m.layers[0].digest.encoded().to_owned();
    // As rust-embed hands them over: each file with a sha256 computed at build time.
    let with_hashes = |wrong: bool| -> Vec<HeldFile> {
        files
            .clone()
            .into_iter()
            .map(|(path, data)| {
                let mut sha = hex_to_bytes(Digest::sha256_of(&data).encoded());
                if wrong && path.ends_with(&tampered) {
                    sha[0] ^= 1;
                }
                HeldFile::with_sha256(path, data, sha)
            })
            .collect()
    };
    assert!(Registry::from_files(with_hashes(false)).is_ok());
    let e = refusal(Registry::from_files(with_hashes(true))).unwrap_err();
    assert_eq!(e.path, layer_path);
    assert!(matches!(*e.problem, Problem::DigestMismatch { .. }), "{e}");
}

fn hex_to_bytes(hex: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

#[test]
fn tampered_blob_is_refused() {
    let (mut files, _, m) = valid();
    let path = blob_path(&m.layers[0]);
    files.insert(path.clone(), b"layer bytez".to_vec());
    assert!(matches!(
        refused(files, &path),
        Problem::DigestMismatch { .. }
    ));
}

#[test]
fn missing_blob_is_refused() {
    let (mut files, _, m) = valid();
    let path = blob_path(&m.config);
    files.remove(&path);
    assert!(matches!(refused(files, &path), Problem::MissingBlob(_)));
}

#[test]
fn missing_manifest_is_refused() {
    let (mut files, d, _) = valid();
    let path = blob_path(&d);
    files.remove(&path);
    assert!(matches!(refused(files, &path), Problem::MissingBlob(_)));
}

#[test]
fn wrong_size_is_refused() {
    let mut layout = LayoutBuilder::new("test/app");
    let mut m = common::image(&mut layout, b"layer bytes");
    m.layers[0].size += 1;
    let d = layout.manifest(media_type::OCI_MANIFEST, &m);
    layout.list(d, Some("v1"));
    let path = blob_path(&m.layers[0]);
    assert!(matches!(
        refused(layout.into_files().unwrap(), &path),
        Problem::Size { .. }
    ));
}

#[test]
fn manifest_media_type_must_agree_with_its_descriptor() {
    let mut layout = LayoutBuilder::new("test/app");
    let m = common::image(&mut layout, b"x");
    let d = layout.manifest(media_type::DOCKER_MANIFEST, &m);
    layout.list(d.clone(), Some("v1"));
    assert!(matches!(
        refused(layout.into_files().unwrap(), &blob_path(&d)),
        Problem::MediaTypeMismatch { .. }
    ));
}

#[test]
fn media_types_must_be_safe_to_send() {
    let mut layout = LayoutBuilder::new("test/app");
    let m = common::image(&mut layout, b"x");
    let mut d = layout.manifest(media_type::OCI_MANIFEST, &m);
    d.media_type = "application/vnd.oci.image.manifest.v1+json\r\nX-Evil: 1".into();
    layout.list(d.clone(), Some("v1"));
    assert!(matches!(
        refused(layout.into_files().unwrap(), &blob_path(&d)),
        Problem::MediaType(_)
    ));
}

#[test]
fn non_manifest_in_index_is_refused() {
    let mut layout = LayoutBuilder::new("test/app");
    let d = layout.blob("application/octet-stream", b"{}".to_vec());
    layout.list(d.clone(), Some("v1"));
    assert!(matches!(
        refused(layout.into_files().unwrap(), &blob_path(&d)),
        Problem::NotManifest(_)
    ));
}

#[test]
fn unparsable_manifest_is_refused() {
    let mut layout = LayoutBuilder::new("test/app");
    let d = layout.blob(media_type::OCI_MANIFEST, b"{\"schemaVersion\":2}".to_vec());
    layout.list(d.clone(), Some("v1"));
    assert!(matches!(
        refused(layout.into_files().unwrap(), &blob_path(&d)),
        Problem::Manifest { .. }
    ));
}

#[test]
fn old_schema_version_is_refused() {
    let mut layout = LayoutBuilder::new("test/app");
    let mut m = common::image(&mut layout, b"x");
    m.schema_version = 1;
    let d = layout.manifest(media_type::OCI_MANIFEST, &m);
    layout.list(d.clone(), Some("v1"));
    assert!(matches!(
        refused(layout.into_files().unwrap(), &blob_path(&d)),
        Problem::SchemaVersion(_)
    ));
}

#[test]
fn invalid_and_duplicate_tags_are_refused() {
    let mut layout = LayoutBuilder::new("test/app");
    let m = common::image(&mut layout, b"x");
    let d = layout.manifest(media_type::OCI_MANIFEST, &m);
    layout.list(d, Some("not a tag"));
    assert!(matches!(
        refused(layout.into_files().unwrap(), "test/app/index.json"),
        Problem::Tag(_)
    ));

    let mut layout = LayoutBuilder::new("test/app");
    let a = common::image(&mut layout, b"a");
    let a = layout.manifest(media_type::OCI_MANIFEST, &a);
    let b = common::image(&mut layout, b"b");
    let b = layout.manifest(media_type::OCI_MANIFEST, &b);
    layout.list(a.clone(), Some("v1"));
    layout.list(a, Some("v1"));
    layout.list(b, Some("v1"));
    assert!(matches!(
        refused(layout.into_files().unwrap(), "test/app/index.json"),
        Problem::DuplicateTag { .. }
    ));
}

#[test]
fn layout_files_are_checked() {
    let (files, _, _) = valid();

    let mut f = files.clone();
    f.insert("test/app/index.json".into(), b"{not json".to_vec());
    assert!(matches!(
        refused(f, "test/app/index.json"),
        Problem::Json(_)
    ));

    let mut f = files.clone();
    f.remove("test/app/index.json");
    assert!(matches!(
        refused(f, "test/app/index.json"),
        Problem::MissingIndex
    ));

    let mut f = files.clone();
    f.insert(
        "test/app/oci-layout".into(),
        br#"{"imageLayoutVersion":"2.0.0"}"#.to_vec(),
    );
    assert!(matches!(
        refused(f, "test/app/oci-layout"),
        Problem::LayoutVersion(_)
    ));

    let mut f = files.clone();
    f.insert("test/app/README.md".into(), b"hi".to_vec());
    assert!(matches!(
        refused(f, "test/app/README.md"),
        Problem::UnexpectedFile
    ));

    let mut f = files.clone();
    f.insert("stray.txt".into(), b"hi".to_vec());
    assert!(matches!(refused(f, "stray.txt"), Problem::OutsideLayout));

    let mut f = files.clone();
    f.insert(
        "oci-layout".into(),
        br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec(),
    );
    assert!(matches!(refused(f, "oci-layout"), Problem::UnnamedLayout));

    let mut f = files.clone();
    f.insert("test/app/blobs/sha512/abc".into(), b"x".to_vec());
    assert!(matches!(
        refused(f, "test/app/blobs/sha512/abc"),
        Problem::Algorithm(_)
    ));

    let mut f = files.clone();
    f.insert("test/app/blobs/sha256/XYZ".into(), b"x".to_vec());
    assert!(matches!(
        refused(f, "test/app/blobs/sha256/XYZ"),
        Problem::BlobName(_)
    ));

    let renamed: Files = files
        .into_iter()
        .map(|(p, b)| (p.replacen("test/app", "Test/App", 1), b))
        .collect();
    assert!(matches!(
        refused(renamed, "Test/App/oci-layout"),
        Problem::Name(_)
    ));
}
