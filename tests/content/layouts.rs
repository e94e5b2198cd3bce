//! Nested indexes, several and nested layouts, shared blobs, large content, and which problem
//! is reported first.

use super::*;

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
        repo.pull_size(
            repo.manifest(&Reference::Digest(top.digest.clone()))
                .unwrap()
        )
        .unwrap(),
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
                .map(|(p, b)| HeldFile::new(p.clone(), b.clone())),
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
