//! OCI image layouts (`--layout DIR=REPOSITORY[:TAG]`): kept byte for byte with every platform
//! and referrer, one tag picked when asked, and every broken layout refused naming the file.

use super::*;

/// A copy of the committed sample layout (`images/sample`), to break.
fn sample(dir: &Path) -> PathBuf {
    let copy = dir.join("sample");
    for (path, data) in
        read_tree(&root().join("images/sample"), &root().join("images/sample")).unwrap()
    {
        let target = copy.join(&path);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(target, data).unwrap();
    }
    copy
}

fn index_of(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(dir.join("index.json")).unwrap()).unwrap()
}

fn pack_layout(layout: &str, out: &Path) -> Output {
    pack(&["--layout", layout, "--out", out.to_str().unwrap()])
}

#[test]
fn a_layout_is_kept_byte_for_byte() {
    let input = root().join("images/sample");
    let out = tempfile::tempdir().unwrap();
    let r = pack_layout(&format!("{}=mirror/sample", input.display()), out.path());
    assert!(r.status.success(), "{}", text(&r.stderr));
    let served = out.path().join("mirror/sample");
    // Every blob of the input, under the same name, with the same bytes.
    let blobs = |dir: &Path| read_tree(&dir.join("blobs"), dir).unwrap();
    assert_eq!(blobs(&served), blobs(&input));
    // The same entries, the same tags.
    let tags = |index: &serde_json::Value| -> Vec<(String, Option<String>)> {
        let mut tags: Vec<_> = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let tag = d["annotations"]["org.opencontainers.image.ref.name"]
                    .as_str()
                    .map(str::to_owned);
                (d["digest"].as_str().unwrap().to_owned(), tag)
            })
            .collect();
        tags.sort();
        tags
    };
    assert_eq!(tags(&index_of(&served)), tags(&index_of(&input)));
    let registry = chartreg_core::content::Registry::from_files(files_in(out.path())).unwrap();
    let repo = registry
        .repository(&"mirror/sample".parse().unwrap())
        .unwrap();
    assert_eq!(
        repo.tags().len(),
        2,
        "v1 and the attestation's tag-schema tag"
    );
}

#[test]
fn one_tag_is_taken_with_its_referrers() {
    let dir = tempfile::tempdir().unwrap();
    let layout = sample(dir.path());
    // A second image tagged `v2` that the pick must leave out.
    let mut index = index_of(&layout);
    let mut v2 = index["manifests"][0].clone();
    v2["annotations"]["org.opencontainers.image.ref.name"] = "v2".into();
    let platform_manifest = fs::read(
        layout.join("blobs/sha256").join(
            index_of(&layout)["manifests"][0]["digest"]
                .as_str()
                .unwrap()
                .trim_start_matches("sha256:"),
        ),
    )
    .unwrap();
    let first_child: serde_json::Value = serde_json::from_slice(&platform_manifest).unwrap();
    let child = &first_child["manifests"][0];
    v2["digest"] = child["digest"].clone();
    v2["size"] = child["size"].clone();
    v2["mediaType"] = child["mediaType"].clone();
    index["manifests"].as_array_mut().unwrap().push(v2);
    fs::write(
        layout.join("index.json"),
        serde_json::to_vec(&index).unwrap(),
    )
    .unwrap();

    let out = tempfile::tempdir().unwrap();
    let r = pack_layout(
        &format!("{}=images/picked:v1", layout.display()),
        out.path(),
    );
    assert!(r.status.success(), "{}", text(&r.stderr));
    let registry = chartreg_core::content::Registry::from_files(files_in(out.path())).unwrap();
    let repo = registry
        .repository(&"images/picked".parse().unwrap())
        .unwrap();
    let tags = repo.tags();
    assert!(tags.contains(&"v1") && !tags.contains(&"v2"), "{tags:?}");
    assert!(
        tags.iter().any(|t| t.ends_with(".att")),
        "the tag-schema attestation of v1 comes along: {tags:?}"
    );
    let v1 = repo.tag_digest("v1").unwrap().clone();
    assert_eq!(
        repo.referrers(&v1, None).count(),
        2,
        "the signature and the SBOM"
    );
    assert_eq!(
        repo.referrers(&v1, Some("application/spdx+json")).count(),
        1
    );
}

/// Each way a layout is refused: how to break it, the file named, words said.
#[rstest]
#[case::no_layout_file("oci-layout", "", "oci-layout", "No such file")]
#[case::wrong_version(
    "oci-layout",
    r#"{"imageLayoutVersion":"2.0.0"}"#,
    "oci-layout",
    "unsupported image layout version"
)]
#[case::bad_index("index.json", "{not json", "index.json", "invalid JSON")]
#[case::untagged(
    "index.json",
    r#"{"schemaVersion":2,"manifests":[]}"#,
    "index.json",
    "names no manifest by tag"
)]
fn broken_layouts_are_refused(
    #[case] file: &str,
    #[case] content: &str,
    #[case] named: &str,
    #[case] words: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let layout = sample(dir.path());
    if content.is_empty() {
        fs::remove_file(layout.join(file)).unwrap();
    } else {
        fs::write(layout.join(file), content).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let r = pack_layout(&format!("{}=images/broken", layout.display()), out.path());
    let stderr = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(layout.join(named).to_str().unwrap()) && stderr.contains(words),
        "{stderr}"
    );
    assert!(!out.path().join("images/broken").exists());
}

#[test]
fn missing_short_and_tampered_blobs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let layout = sample(dir.path());
    let index = index_of(&layout);
    let top = index["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_owned();
    let top_path = layout.join("blobs/sha256").join(&top);
    let children: serde_json::Value =
        serde_json::from_slice(&fs::read(&top_path).unwrap()).unwrap();
    let child = children["manifests"][1]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_owned();
    let child_path = layout.join("blobs/sha256").join(&child);
    let child_manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(&child_path).unwrap()).unwrap();
    let layer = child_manifest["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_owned();
    let layer_path = layout.join("blobs/sha256").join(&layer);
    let out = tempfile::tempdir().unwrap();
    let spec = format!("{}=images/x", layout.display());

    // A missing platform manifest.
    let saved = fs::read(&child_path).unwrap();
    fs::remove_file(&child_path).unwrap();
    let r = pack_layout(&spec, out.path());
    assert!(
        text(&r.stderr).contains(child_path.to_str().unwrap())
            && text(&r.stderr).contains("has no blob"),
        "{}",
        text(&r.stderr)
    );
    fs::write(&child_path, &saved).unwrap();

    // A layer shorter than its descriptor says.
    let layer_bytes = fs::read(&layer_path).unwrap();
    fs::write(&layer_path, &layer_bytes[1..]).unwrap();
    let r = pack_layout(&spec, out.path());
    assert!(
        text(&r.stderr).contains(layer_path.to_str().unwrap())
            && text(&r.stderr).contains("bytes, but its descriptor says"),
        "{}",
        text(&r.stderr)
    );

    // A layer of the right size with other bytes: refused while it is copied, nothing written.
    let mut other = layer_bytes.clone();
    other[0] ^= 1;
    fs::write(&layer_path, &other).unwrap();
    let r = pack_layout(&spec, out.path());
    let stderr = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(layer_path.to_str().unwrap()) && stderr.contains("do not have the digest"),
        "{stderr}"
    );
    assert!(!out.path().join("images/x").exists());

    // An unknown tag names the tags there are.
    fs::write(&layer_path, &layer_bytes).unwrap();
    let r = pack_layout(&format!("{spec}:v9"), out.path());
    assert!(
        text(&r.stderr).contains("names no manifest `v9` (it names: v1"),
        "{}",
        text(&r.stderr)
    );
}

#[test]
fn a_blob_that_links_out_of_the_layout_is_refused_though_its_bytes_are_right() {
    let dir = tempfile::tempdir().unwrap();
    let layout = sample(dir.path());
    let index = index_of(&layout);
    let blobs = layout.join("blobs/sha256");
    let top = index["manifests"][0]["digest"].as_str().unwrap();
    let children: serde_json::Value =
        serde_json::from_slice(&fs::read(blobs.join(&top[7..])).unwrap()).unwrap();
    let child = children["manifests"][0]["digest"].as_str().unwrap();
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(blobs.join(&child[7..])).unwrap()).unwrap();
    let layer = blobs.join(&manifest["layers"][0]["digest"].as_str().unwrap()[7..]);
    // The same bytes, kept outside the layout and linked to: size and digest still match.
    let outside = dir.path().join("outside");
    fs::rename(&layer, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &layer).unwrap();
    let out = tempfile::tempdir().unwrap();
    let r = pack_layout(&format!("{}=images/x", layout.display()), out.path());
    let stderr = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: is a symbolic link that leaves the layout (to {})",
            layer.display(),
            outside.canonicalize().unwrap().display()
        )),
        "{stderr}"
    );
    assert!(!out.path().join("images/x").exists());
}

/// The files pack keeps beside the repositories are never a repository's name: a layout
/// named as one is refused, naming the file, and nothing is written.
#[test]
fn a_layout_named_as_a_file_pack_keeps_is_refused_naming_it() {
    let input = root().join("images/sample");
    for (name, says) in [
        ("chart-images.json", "the images the charts need"),
        ("verification.json", "what verified"),
        ("origins.json", "where charts came from"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let r = pack_layout(&format!("{}={name}", input.display()), out.path());
        let stderr = text(&r.stderr);
        assert!(!r.status.success(), "{name} was packed");
        assert!(
            stderr.contains(&format!(
                "{}: a repository is named `{name}`",
                out.path().join(name).display()
            )) && stderr.contains(says),
            "{name}: {stderr}"
        );
        assert_eq!(
            fs::read_dir(out.path()).unwrap().count(),
            0,
            "{name}: wrote something"
        );
    }
}
