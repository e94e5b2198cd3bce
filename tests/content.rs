//! Building the registry: what it holds from the committed assets, and refusing (with the
//! file named) every kind of content that could make it serve wrong bytes.

mod common;

use chartreg_core::content::{ContentFile, LoadError, Problem, Registry};
use chartreg_core::oci::layout::{Annotations, Descriptor, ImageIndex, ImageManifest};
use chartreg_core::oci::{Digest, Reference, media_type};
use chartreg_core::tree::{Files, LayoutBuilder};

/// A valid layout `test/app` with tag `v1`, and the manifest's descriptor.
fn valid() -> (Files, Descriptor, ImageManifest) {
    let mut layout = LayoutBuilder::new("test/app");
    let m = common::image(&mut layout, b"layer bytes");
    let d = layout.manifest(media_type::OCI_MANIFEST, &m);
    layout.list(d.clone(), Some("v1"));
    (layout.into_files().unwrap(), d, m)
}

fn load(files: Files) -> Result<Registry, LoadError> {
    Registry::from_files(files.into_iter().map(|(p, b)| ContentFile::new(p, b)))
}

fn blob_path(d: &Descriptor) -> String {
    format!("test/app/blobs/sha256/{}", d.digest.encoded())
}

fn refused(files: Files, path: &str) -> Problem {
    match load(files) {
        Ok(_) => panic!("content with a problem in {path} was accepted"),
        Err(e) => {
            assert_eq!(e.path, path, "{e}");
            assert!(
                e.to_string().starts_with(path),
                "the message names the file: {e}"
            );
            e.problem
        }
    }
}

#[test]
fn assets_hold_the_sample_charts() {
    let registry = common::assets_registry();
    assert_eq!(registry.catalog().names(), ["charts/hello", "charts/motd"]);
    let s = registry.summary();
    assert_eq!((s.repositories, s.tags, s.manifests), (2, 6, 6));
    assert_eq!(
        s.blobs,
        6 * 2 + 1,
        "config and chart per version, one provenance"
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
    let with_hashes = |wrong: bool| -> Vec<ContentFile> {
        files
            .clone()
            .into_iter()
            .map(|(path, data)| {
                let mut sha = hex_to_bytes(Digest::sha256_of(&data).encoded());
                if wrong && path.ends_with(&tampered) {
                    sha[0] ^= 1;
                }
                ContentFile {
                    path: path.into(),
                    data: data.into(),
                    sha256: Some(sha),
                }
            })
            .collect()
    };
    assert!(Registry::from_files(with_hashes(false)).is_ok());
    let e = Registry::from_files(with_hashes(true)).unwrap_err();
    assert_eq!(e.path, layer_path);
    assert!(matches!(e.problem, Problem::DigestMismatch { .. }), "{e}");
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

#[test]
fn nested_indexes_serve_every_child_by_digest() {
    let mut layout = LayoutBuilder::new("test/multi");
    let amd = common::image(&mut layout, b"amd64");
    let amd = layout.manifest(media_type::OCI_MANIFEST, &amd);
    let arm = common::image(&mut layout, b"arm64");
    let arm = layout.manifest(media_type::OCI_MANIFEST, &arm);
    let index = ImageIndex {
        schema_version: 2,
        media_type: Some(media_type::OCI_INDEX.into()),
        artifact_type: None,
        manifests: vec![amd.clone(), arm.clone()],
        subject: None,
        annotations: Annotations::new(),
    };
    let top = layout.manifest(media_type::OCI_INDEX, &index);
    layout.list(top.clone(), Some("latest"));
    let registry = load(layout.into_files().unwrap()).unwrap();
    let repo = registry.repository(&"test/multi".parse().unwrap()).unwrap();
    assert_eq!(
        repo.manifest(&Reference::Tag("latest".parse().unwrap()))
            .unwrap()
            .media_type,
        media_type::OCI_INDEX
    );
    for child in [&amd, &arm] {
        assert_eq!(
            repo.manifest(&Reference::Digest(child.digest.clone()))
                .unwrap()
                .digest,
            child.digest
        );
    }
    assert_eq!(registry.summary().manifests, 3);
    assert_eq!(
        repo.pull_size(&top.digest),
        top.size + amd.size + arm.size + 2 * 2 + 5 * 2
    );
}

#[test]
fn several_layouts_share_nothing_but_bytes() {
    let (files, _, _) = valid();
    let mut both = files.clone();
    both.extend(
        files
            .into_iter()
            .map(|(p, b)| (p.replacen("test/app", "test/copy", 1), b)),
    );
    let registry = load(both).unwrap();
    assert_eq!(registry.catalog().names(), ["test/app", "test/copy"]);
    assert_eq!(registry.summary().repositories, 2);
}

#[test]
fn nested_layouts_are_separate_repositories() {
    // `test/app` and `test/app/sub` are both valid names; files in the inner folder belong to
    // the inner layout, whatever order the files come in.
    let mut outer = LayoutBuilder::new("test/app");
    let m = common::image(&mut outer, b"outer layer");
    let d = outer.manifest(media_type::OCI_MANIFEST, &m);
    outer.list(d, Some("v1"));
    let mut inner = LayoutBuilder::new("test/app/sub");
    let m = common::image(&mut inner, b"inner layer");
    let d = inner.manifest(media_type::OCI_MANIFEST, &m);
    inner.list(d, Some("v2"));
    let mut files: Vec<(String, Vec<u8>)> = outer.into_files().unwrap().into_iter().collect();
    files.extend(inner.into_files().unwrap());
    for order in [false, true] {
        if order {
            files.reverse();
        }
        let registry = Registry::from_files(
            files
                .iter()
                .map(|(p, b)| ContentFile::new(p.clone(), b.clone())),
        )
        .unwrap();
        assert_eq!(registry.catalog().names(), ["test/app", "test/app/sub"]);
        let tags = |name: &str| {
            let name = name.parse().unwrap();
            registry.repository(&name).unwrap().tags().to_vec()
        };
        assert_eq!(tags("test/app"), ["v1"]);
        assert_eq!(tags("test/app/sub"), ["v2"]);
    }
}

#[test]
fn a_manifest_also_referenced_as_a_blob_is_counted_once() {
    let (first, d, _) = valid();
    // One layout: the valid manifest (tag v1), and a second manifest (tag v2) whose layer is
    // the first manifest's bytes.
    let mut layout = LayoutBuilder::new("test/app");
    let m1 = common::image(&mut layout, b"layer bytes");
    let d1 = layout.manifest(media_type::OCI_MANIFEST, &m1);
    assert_eq!(d1.digest, d.digest);
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob(media_type::OCI_MANIFEST, first[&blob_path(&d)].clone());
    let d2 = layout.manifest(
        media_type::OCI_MANIFEST,
        &ImageManifest::new(config, vec![layer]),
    );
    layout.list(d1, Some("v1"));
    layout.list(d2, Some("v2"));
    let files = layout.into_files().unwrap();
    let distinct: u64 = files
        .iter()
        .filter(|(p, _)| p.contains("/blobs/"))
        .map(|(_, b)| b.len() as u64)
        .sum();
    let registry = load(files).unwrap();
    assert_eq!(registry.summary().tags, 2);
    assert_eq!(registry.summary().bytes, distinct);
}

/// Two layouts of `versions` tagged image manifests each: enough files and manifests that
/// loading spreads them over several chunks and threads.
fn two_large_layouts(versions: usize) -> (Files, Vec<ImageManifest>) {
    let mut files = Files::new();
    let mut first = Vec::new();
    for name in ["test/a", "test/b"] {
        let mut layout = LayoutBuilder::new(name);
        for v in 0..versions {
            let config = format!("{{\"version\":{v}}}").into_bytes();
            let config = layout.blob("application/vnd.oci.image.config.v1+json", config);
            let layer = format!("{name} layer {v}").into_bytes();
            let layer = layout.blob("application/vnd.oci.image.layer.v1.tar", layer);
            let m = ImageManifest::new(config, vec![layer]);
            let d = layout.manifest(media_type::OCI_MANIFEST, &m);
            layout.list(d, Some(&format!("1.0.{v}")));
            if name == "test/a" {
                first.push(m);
            }
        }
        files.extend(layout.into_files().unwrap());
    }
    (files, first)
}

#[test]
fn large_content_loads_whole() {
    let (files, manifests) = two_large_layouts(700);
    assert!(files.len() > 4000, "several chunks of files");
    let registry = load(files).unwrap();
    let s = registry.summary();
    assert_eq!(
        (s.repositories, s.tags, s.manifests, s.blobs),
        (2, 1400, 1400, 2800)
    );
    let a = registry.repository(&"test/a".parse().unwrap()).unwrap();
    for (v, m) in manifests.iter().enumerate() {
        let by_tag = a
            .manifest(&Reference::Tag(format!("1.0.{v}").parse().unwrap()))
            .unwrap();
        let layer = a.blob(&m.layers[0].digest).unwrap();
        assert_eq!(&layer.data[..], format!("test/a layer {v}").as_bytes());
        assert_eq!(by_tag.media_type, media_type::OCI_MANIFEST);
        assert_eq!(
            &by_tag.quoted_digest[..],
            format!("\"{}\"", by_tag.digest).as_bytes()
        );
    }
}

#[test]
fn the_problem_reported_is_the_first_in_load_order_however_the_work_is_split() {
    // Loading reads files and manifests on several threads; what it reports is still the first
    // problem a one-pass load meets: layouts by name, in a layout its files, then its
    // manifests in index order, then its tags.
    let (files, manifests) = two_large_layouts(700);
    let config = |v: usize| {
        format!(
            "test/a/blobs/sha256/{}",
            manifests[v].config.digest.encoded()
        )
    };

    // Missing blobs of manifests 650 and 20 of test/a, and a stray file in test/b: the blob of
    // manifest 20 is the first problem.
    let mut broken = files.clone();
    broken.remove(&config(650));
    broken.remove(&config(20));
    broken.insert("test/b/stray".into(), b"x".to_vec());
    assert!(matches!(
        refused(broken, &config(20)),
        Problem::MissingBlob(_)
    ));

    // A stray file in test/a comes before every manifest problem in it.
    let mut broken = files.clone();
    broken.remove(&config(5));
    broken.insert("test/a/zz-stray".into(), b"x".to_vec());
    assert!(matches!(
        refused(broken, "test/a/zz-stray"),
        Problem::UnexpectedFile
    ));

    // A problem in test/b only is found in test/b.
    let mut broken = files;
    let b_manifest = broken
        .keys()
        .filter(|p| p.starts_with("test/b/blobs/"))
        .nth(900)
        .cloned()
        .unwrap();
    broken.insert(b_manifest.clone(), b"tampered".to_vec());
    assert!(matches!(
        refused(broken, &b_manifest),
        Problem::DigestMismatch { .. }
    ));
}
