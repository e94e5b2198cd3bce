//! Versions as people write them: a chart whose version has a `v` prefix is packed and tagged as
//! `helm push` tags it (`v0.14.5`), and Helm pulls it by `--version v0.14.5`, `0.14.5` and
//! `^0.14`; a chart tagged `1.0.0` is pulled by `--version v1.0.0`; `+` asked as `+` (curl) finds
//! the `_` tag. Served by the library in this process from what `chartreg-build pack` made.

use super::*;
use common::{InProcess, chart_folder, packed};

#[rstest]
fn helm_pulls_versions_as_people_write_them(#[values("helm3", "helm4")] helm: &'static str) {
    let Some(helm) = Helm::new(helm) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let prefixed = chart_folder(dir.path(), "metallb", "v0.14.5");
    let plain = chart_folder(dir.path(), "plain", "1.0.0");
    let (_out, registry) = packed(&[str_path(&prefixed), str_path(&plain)]);
    let metallb = registry
        .repository(&"charts/metallb".parse().unwrap())
        .unwrap();
    assert_eq!(metallb.tags(), ["v0.14.5"], "tagged as helm push tags it");
    let layer = |repo: &str, tag: &str| {
        let repository = registry.repository(&repo.parse().unwrap()).unwrap();
        let manifest = repository
            .manifest(&chartreg_core::oci::Reference::Tag(tag.parse().unwrap()))
            .unwrap();
        let m: Value = serde_json::from_slice(&manifest.data).unwrap();
        m["layers"][0]["digest"].as_str().unwrap().to_owned()
    };
    let want_metallb = layer("charts/metallb", "v0.14.5");
    let want_plain = layer("charts/plain", "1.0.0");
    let server = InProcess::start(registry);

    let cases = [
        ("metallb", "v0.14.5", "metallb-v0.14.5.tgz", &want_metallb),
        ("metallb", "0.14.5", "metallb-0.14.5.tgz", &want_metallb),
        ("metallb", "^0.14", "metallb-0.14.5.tgz", &want_metallb),
        ("plain", "v1.0.0", "plain-v1.0.0.tgz", &want_plain),
    ];
    for (chart, version, file, digest) in cases {
        let out = tempfile::tempdir().unwrap();
        helm.pull(&server.host(), chart, version, out.path());
        // Helm names the file after the version it asked for.
        let files = common::file_names(out.path());
        assert_eq!(files, [file], "{}: {chart} --version {version}", helm.name);
        let pulled = common::read(&out.path().join(file));
        assert_eq!(
            &common::sha256(&pulled),
            digest,
            "{}: {chart} --version {version} pulled another package",
            helm.name
        );
    }
}

/// Tag requests: only exact misses are aliased, aliases are not listed (only the unprefixed
/// form of a `v` tag, which Helm resolves ranges against), and answers carry the real digest.
#[test]
fn tags_alias_on_exact_misses_only() {
    let Some(curl) = common::tool("curl") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let both_a = chart_folder(dir.path(), "both", "v2.0.0");
    let both_b_dir = dir.path().join("b");
    let both_b = chart_folder(&both_b_dir, "both", "2.0.0");
    std::fs::write(both_b.join("values.yaml"), "greeting: other\n").unwrap();
    let build = chart_folder(dir.path(), "build", "1.2.3+build.7");
    let (_out, registry) = packed(&[str_path(&both_a), str_path(&both_b), str_path(&build)]);
    let server = InProcess::start(registry);
    let get = |path: &str| common::curl(&curl, "GET", &format!("{}{path}", server.url()), &[]);

    let tags = get("/v2/charts/both/tags/list");
    assert_eq!(
        tags.body_text(),
        r#"{"name":"charts/both","tags":["2.0.0","v2.0.0"]}"#
    );
    let exact_v = get("/v2/charts/both/manifests/v2.0.0");
    let exact = get("/v2/charts/both/manifests/2.0.0");
    assert_eq!(exact_v.status, 200);
    assert_ne!(
        exact_v.header("docker-content-digest"),
        exact.header("docker-content-digest"),
        "both tags exist: neither is an alias of the other"
    );
    let plus = get("/v2/charts/build/manifests/1.2.3+build.7");
    let underscore = get("/v2/charts/build/manifests/1.2.3_build.7");
    assert_eq!(plus.status, 200, "`+` finds the `_` tag");
    assert_eq!(
        plus.header("docker-content-digest"),
        underscore.header("docker-content-digest")
    );
    let prefixed = get("/v2/charts/build/manifests/v1.2.3+build.7");
    assert_eq!(prefixed.status, 200, "a `v` miss finds the unprefixed tag");
    assert_eq!(
        prefixed.header("docker-content-digest"),
        underscore.header("docker-content-digest")
    );
    let listed = get("/v2/charts/build/tags/list");
    assert_eq!(
        listed.body_text(),
        r#"{"name":"charts/build","tags":["1.2.3_build.7"]}"#,
        "aliases are not listed"
    );
    assert_eq!(
        get("/v2/charts/build/manifests/vv1.2.3_build.7").status,
        404
    );
}
