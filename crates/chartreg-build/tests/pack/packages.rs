//! Chart packages: the committed assets, determinism, Helm's annotations and metadata, and every
//! kind of bad package.

use super::*;

#[test]
fn committed_assets_are_what_the_content_file_packs_into() {
    let config = root().join("content.yaml");
    let out = tempfile::tempdir().unwrap();
    let result = pack(&[
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(result.status.success(), "{}", text(&result.stderr));
    // What is committed: the chart repositories (image layouts are rebuilt), and the record,
    // which `--check` compares below where it was written (it names the layout folders
    // relative to the output's folder).
    let committed = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        read_tree(dir, dir)
            .unwrap()
            .into_iter()
            .filter(|(path, _)| path.starts_with("charts/"))
            .collect()
    };
    let (packed, expected) = (committed(out.path()), committed(&root().join("assets")));
    let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&packed),
        names(&expected),
        "run `make assets` and commit assets/"
    );
    for (path, data) in &expected {
        assert!(
            packed[path] == *data,
            "{path} differs: run `make assets` and commit assets/"
        );
    }
    // And `--check` of the committed folder says so, writing nothing.
    let assets = root().join("assets");
    let check = pack(&[
        "--config",
        config.to_str().unwrap(),
        "--out",
        assets.to_str().unwrap(),
        "--check",
    ]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(
        text(&check.stdout).starts_with("up to date: "),
        "{}",
        text(&check.stdout)
    );
}

#[test]
fn packing_is_deterministic_and_idempotent() {
    let charts = root().join("charts");
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for out in [&a, &b] {
        let r = pack(&[
            charts.to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{}", text(&r.stderr));
        assert!(text(&r.stdout).starts_with("wrote "), "{}", text(&r.stdout));
    }
    assert_eq!(
        read_tree(a.path(), a.path()).unwrap(),
        read_tree(b.path(), b.path()).unwrap()
    );

    let index = a.path().join("charts/hello/index.json");
    let before = fs::metadata(&index).unwrap().modified().unwrap();
    let again = pack(&[
        charts.to_str().unwrap(),
        "--out",
        a.path().to_str().unwrap(),
    ]);
    assert!(again.status.success());
    assert!(
        text(&again.stdout).starts_with("unchanged: "),
        "{}",
        text(&again.stdout)
    );
    assert_eq!(
        fs::metadata(&index).unwrap().modified().unwrap(),
        before,
        "nothing rewritten"
    );
}

#[test]
fn files_and_folders_mix_and_prefix_is_honoured() {
    let scene = Scene::new();
    let other = tempfile::tempdir().unwrap();
    let single = other.path().join("a.tgz");
    fs::write(&single, chart(&chart_yaml("alpha", "1.0.0"))).unwrap();
    scene.add("beta-2.0.0.tgz", &chart(&chart_yaml("beta", "2.0.0")));
    let r = pack(&[
        single.to_str().unwrap(),
        scene.input.to_str().unwrap(),
        "--out",
        scene.out.to_str().unwrap(),
        "--prefix",
        "addons/stable",
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let tree = scene.output();
    assert!(tree.contains_key("addons/stable/alpha/index.json"));
    assert!(tree.contains_key("addons/stable/beta/index.json"));
    assert!(
        tree.contains_key("charts/hello/index.json"),
        "other prefixes are left alone"
    );
}

#[test]
fn same_package_twice_is_fine() {
    let scene = Scene::new();
    let package = chart(&chart_yaml("twice", "1.0.0"));
    scene.add("twice-1.0.0.tgz", &package);
    scene.add("copy-of-twice.tgz", &package);
    let r = scene.pack();
    assert!(r.status.success(), "{}", text(&r.stderr));
    let index = fs::read(scene.out.join("charts/twice/index.json")).unwrap();
    let index: serde_json::Value = serde_json::from_slice(&index).unwrap();
    assert_eq!(index["manifests"].as_array().unwrap().len(), 1);
}

#[test]
fn created_comes_from_the_package_and_helm_annotations_are_set() {
    let scene = Scene::new();
    let yaml = "apiVersion: v2\nname: annotated\nversion: 1.2.3+b.4\ndescription: Says <hi> & bye\nhome: https://h.example\nsources: [https://s1.example, https://s2.example]\nmaintainers:\n  - name: Ann\n    email: ann@example.com\n  - name: Bob\nannotations:\n  org.opencontainers.image.title: ignored\n  custom: kept\n";
    scene.add("annotated.tgz", &chart(yaml));
    let r = scene.pack();
    assert!(r.status.success(), "{}", text(&r.stderr));
    let registry = chartreg_core::content::Registry::from_files(files_in(&scene.out)).unwrap();
    let repo = registry
        .repository(&"charts/annotated".parse().unwrap())
        .unwrap();
    assert_eq!(repo.tags(), ["1.2.3_b.4"]);
    let manifest = repo.manifest(&"1.2.3_b.4".parse().unwrap()).unwrap();
    let m: serde_json::Value = serde_json::from_slice(&manifest.data).unwrap();
    let a = &m["annotations"];
    assert_eq!(
        a["org.opencontainers.image.created"],
        "2023-11-14T22:13:20Z"
    );
    assert_eq!(a["org.opencontainers.image.title"], "annotated");
    assert_eq!(a["org.opencontainers.image.version"], "1.2.3+b.4");
    assert_eq!(a["org.opencontainers.image.description"], "Says <hi> & bye");
    assert_eq!(a["org.opencontainers.image.url"], "https://h.example");
    assert_eq!(a["org.opencontainers.image.source"], "https://s1.example");
    assert_eq!(
        a["org.opencontainers.image.authors"],
        "Ann (ann@example.com), Bob"
    );
    assert_eq!(a["custom"], "kept");
    let text = String::from_utf8(manifest.data.to_vec()).unwrap();
    assert!(
        text.contains(r"Says \u003chi\u003e \u0026 bye"),
        "Go escaping: {text}"
    );
    let config = repo
        .blob(&serde_json::from_value(m["config"]["digest"].clone()).unwrap())
        .unwrap();
    assert_eq!(
        String::from_utf8(config.data.to_vec()).unwrap(),
        r#"{"name":"annotated","home":"https://h.example","sources":["https://s1.example","https://s2.example"],"version":"1.2.3+b.4","description":"Says \u003chi\u003e \u0026 bye","maintainers":[{"name":"Ann","email":"ann@example.com"},{"name":"Bob"}],"apiVersion":"v2","annotations":{"custom":"kept","org.opencontainers.image.title":"ignored"}}"#
    );
}

#[test]
fn helm_v1_charts_and_yaml_scalars_follow_helm() {
    let scene = Scene::new();
    let package = targz(
        &[
            ("old/Chart.yaml", b"name: old\nversion: 0.1.0\nappVersion: 1.10\ndescription: \"two\\nlines\\ttab\"\n"),
            ("old/requirements.yaml", b"dependencies:\n- name: db\n  version: 1.x\n  repository: https://r.example\n"),
        ],
        0,
    );
    scene.add("old-0.1.0.tgz", &package);
    let r = scene.pack();
    assert!(r.status.success(), "{}", text(&r.stderr));
    let registry = chartreg_core::content::Registry::from_files(files_in(&scene.out)).unwrap();
    let repo = registry.repository(&"charts/old".parse().unwrap()).unwrap();
    let manifest = repo.manifest(&"0.1.0".parse().unwrap()).unwrap();
    let m: serde_json::Value = serde_json::from_slice(&manifest.data).unwrap();
    let config = repo
        .blob(&serde_json::from_value(m["config"]["digest"].clone()).unwrap())
        .unwrap();
    assert_eq!(
        String::from_utf8(config.data.to_vec()).unwrap(),
        r#"{"name":"old","version":"0.1.0","description":"two lines tab","apiVersion":"v1","appVersion":"1.1","dependencies":[{"name":"db","version":"1.x","repository":"https://r.example"}]}"#
    );
    assert_eq!(
        m["annotations"]["org.opencontainers.image.created"],
        "1970-01-01T00:00:00Z"
    );
}

fn long_version() -> String {
    format!("1.0.0-{}", "a".repeat(130))
}

/// A chart package whose entries are written from raw GNU headers (the tar crate's builder
/// refuses `..` and absolute names): each a name, a type flag, a link target and bytes,
/// after a valid `x/Chart.yaml`.
fn raw_package(entries: &[(&str, u8, &str, &[u8])]) -> Vec<u8> {
    let chart = chart_yaml("x", "1.0.0");
    let mut tar = Vec::new();
    for (name, kind, link, data) in [("x/Chart.yaml", b'0', "", chart.as_bytes())]
        .iter()
        .chain(entries)
    {
        let mut header = tar::Header::new_gnu();
        let gnu = header.as_gnu_mut().unwrap();
        gnu.name[..name.len()].copy_from_slice(name.as_bytes());
        gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        header.set_entry_type(tar::EntryType::new(*kind));
        header.set_cksum();
        tar.extend_from_slice(header.as_bytes());
        tar.extend_from_slice(data);
        tar.resize(tar.len().next_multiple_of(512), 0);
    }
    tar.extend_from_slice(&[0; 1024]);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// Nine levels of nine aliases.
fn alias_bomb() -> String {
    (1..10).fold("a0: &a0 [l, l, l, l, l, l, l, l, l]\n".to_owned(), |text, i| {
        let p = i - 1;
        format!("{text}a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n")
    })
}

/// Each bad input, the file the message must name, and words it must contain.
#[rstest]
#[case::not_gzip("bad.tgz", b"just some text".to_vec(), "not a gzip file")]
#[case::corrupt_gzip("bad.tgz", { let mut g = chart(&chart_yaml("x", "1.0.0")); g.truncate(40); g }, "corrupt gzip")]
#[case::not_tar("bad.tgz", { let mut e = GzEncoder::new(Vec::new(), Compression::default()); e.write_all(&[b'x'; 1000]).unwrap(); e.finish().unwrap() }, "not a valid tar archive")]
#[case::no_chart_yaml("bad.tgz", targz(&[("x/values.yaml", b"a: 1\n")], 0), "no Chart.yaml")]
#[case::chart_yaml_too_deep("bad.tgz", targz(&[("x/sub/Chart.yaml", chart_yaml("x", "1.0.0").as_bytes())], 0), "no Chart.yaml")]
#[case::chart_yaml_at_top("bad.tgz", targz(&[("Chart.yaml", chart_yaml("x", "1.0.0").as_bytes())], 0), "top of the archive")]
#[case::invalid_yaml(
    "bad.tgz",
    chart("name: [unclosed\nversion: 1.0.0\n"),
    "invalid YAML in Chart.yaml"
)]
#[case::yaml_not_a_mapping("bad.tgz", chart("- a\n- b\n"), "not a mapping")]
#[case::wrong_field_type(
    "bad.tgz",
    chart("name: x\nversion: 1.0.0\nkeywords: {a: b}\n"),
    "invalid chart metadata"
)]
#[case::missing_name("bad.tgz", chart("version: 1.0.0\n"), "no `name`")]
#[case::missing_version("bad.tgz", chart("apiVersion: v2\nname: x\n"), "no `version`")]
#[case::not_a_version("bad.tgz", chart(&chart_yaml("x", "latest")), "not a version Helm accepts")]
#[case::four_numbers("bad.tgz", chart(&chart_yaml("x", "1.0.0.0")), "not a version Helm accepts")]
#[case::prerelease_leading_zero("bad.tgz", chart(&chart_yaml("x", "1.0.0-01")), "leading zero")]
#[case::tag_too_long("bad.tgz", chart(&chart_yaml("x", &long_version())), "at most 128")]
#[case::uppercase_name("bad.tgz", chart(&chart_yaml("Hello", "1.0.0")), "uppercase letters")]
#[case::bad_name_edge("bad.tgz", chart(&chart_yaml("my-chart-", "1.0.0")), "start and end with a letter or digit")]
#[case::path_in_name("bad.tgz", chart(&chart_yaml("a/b", "1.0.0")), "invalid chart name")]
#[case::bad_type(
    "bad.tgz",
    chart("apiVersion: v2\nname: x\nversion: 1.0.0\ntype: plugin\n"),
    "must be `application` or `library`"
)]
#[case::parent_entry("bad.tgz", raw_package(&[("x/../../../tmp/pwned", b'0', "", b"x")]), "archive entry \"x/../../../tmp/pwned\" references the parent directory")]
#[case::absolute_entry("bad.tgz", raw_package(&[("/tmp/pwned", b'0', "", b"x")]), "archive entry \"/tmp/pwned\" is an absolute path")]
#[case::entry_beside_the_folder("bad.tgz", raw_package(&[("README.md", b'0', "", b"x")]), "archive entry \"README.md\" lies outside the chart's folder")]
#[case::symlink_entry("bad.tgz", raw_package(&[("x/templates/a.yaml", b'2', "/etc/shadow", b"")]), "archive entry \"x/templates/a.yaml\" is a symbolic link to \"/etc/shadow\"")]
#[case::fifo_entry("bad.tgz", raw_package(&[("x/templates/a.yaml", b'6', "", b"")]), "archive entry \"x/templates/a.yaml\" is a FIFO")]
#[case::chart_yaml_twice("bad.tgz", raw_package(&[("x/Chart.yaml", b'0', "", b"name: other\nversion: 9.9.9\n")]), "archive entries \"x/Chart.yaml\" and \"x/Chart.yaml\" are both the chart's \"Chart.yaml\"")]
#[case::alias_bomb("bad.tgz", chart(&format!("{}{}", chart_yaml("x", "1.0.0"), alias_bomb())), "invalid YAML in Chart.yaml: holds more than 65536 values")]
#[case::deep_yaml("bad.tgz", chart(&format!("{}deep: {}{}\n", chart_yaml("x", "1.0.0"), "[".repeat(100_000), "]".repeat(100_000))), "invalid YAML in Chart.yaml: nests flow collections")]
fn bad_packages_are_refused_and_nothing_changes(
    #[case] file: &str,
    #[case] data: Vec<u8>,
    #[case] words: &str,
) {
    let scene = Scene::new();
    scene.add("good-1.0.0.tgz", &chart(&chart_yaml("good", "1.0.0")));
    let path = scene.add(file, &data);
    let before = scene.output();
    let r = scene.pack();
    let stderr = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(path.to_str().unwrap()),
        "names the file: {stderr}"
    );
    assert!(stderr.contains(words), "says `{words}`: {stderr}");
    assert_eq!(scene.output(), before, "output untouched");
    assert!(!scene.out.join("charts/good").exists());
}

#[test]
fn different_packages_with_the_same_version_conflict() {
    let scene = Scene::new();
    let first = scene.add("a.tgz", &chart(&chart_yaml("dup", "1.0.0")));
    let second = scene.add(
        "b.tgz",
        &chart("apiVersion: v2\nname: dup\nversion: 1.0.0\ndescription: other\n"),
    );
    let before = scene.output();
    let r = scene.pack();
    let stderr = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        stderr.contains(second.to_str().unwrap()) && stderr.contains(first.to_str().unwrap()),
        "{stderr}"
    );
    assert!(stderr.contains("dup 1.0.0"), "{stderr}");
    assert_eq!(scene.output(), before);
}

#[test]
fn provenance_must_match_its_package() {
    let charts = root().join("charts");
    let prov = fs::read(charts.join("motd-1.0.0.tgz.prov")).unwrap();
    let motd = fs::read(charts.join("motd-1.0.0.tgz")).unwrap();

    // The signed package with its .prov: a provenance layer.
    let scene = Scene::new();
    scene.add("motd-1.0.0.tgz", &motd);
    scene.add("motd-1.0.0.tgz.prov", &prov);
    assert!(scene.pack().status.success());

    // Another package under the signed name: the checksum does not match.
    let scene = Scene::new();
    scene.add("motd-1.0.0.tgz", &chart(&chart_yaml("motd", "1.0.0")));
    let prov_path = scene.add("motd-1.0.0.tgz.prov", &prov);
    let before = scene.output();
    let r = scene.pack();
    let stderr = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        stderr.contains(prov_path.to_str().unwrap())
            && stderr.contains("says the package is sha256:"),
        "{stderr}"
    );
    assert_eq!(scene.output(), before);

    // A .prov signed for another chart.
    let scene = Scene::new();
    scene.add("x-1.0.0.tgz", &chart(&chart_yaml("x", "1.0.0")));
    scene.add("x-1.0.0.tgz.prov", &prov);
    let stderr = text(&scene.pack().stderr);
    assert!(stderr.contains("no checksum for `x-1.0.0.tgz`"), "{stderr}");

    // Not a provenance file at all.
    let scene = Scene::new();
    scene.add("x-1.0.0.tgz", &chart(&chart_yaml("x", "1.0.0")));
    scene.add("x-1.0.0.tgz.prov", b"hello");
    let stderr = text(&scene.pack().stderr);
    assert!(stderr.contains("invalid provenance file"), "{stderr}");

    // A .prov with no package.
    let scene = Scene::new();
    scene.add("x-1.0.0.tgz", &chart(&chart_yaml("x", "1.0.0")));
    let orphan = scene.add("y-1.0.0.tgz.prov", &prov);
    let r = scene.pack();
    assert_eq!(r.status.code(), Some(1));
    let stderr = text(&r.stderr);
    assert!(
        stderr.contains(orphan.to_str().unwrap()) && stderr.contains("no package beside it"),
        "{stderr}"
    );
}

#[test]
fn missing_or_empty_inputs_are_errors() {
    let scene = Scene::new();
    let r = scene.pack();
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("no chart packages"),
        "{}",
        text(&r.stderr)
    );

    let r = pack(&["/nonexistent/charts", "--out", scene.out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("/nonexistent/charts"),
        "{}",
        text(&r.stderr)
    );

    scene.add("a-1.0.0.tgz", &chart(&chart_yaml("a", "1.0.0")));
    let r = pack(&[
        scene.input.to_str().unwrap(),
        "--out",
        scene.out.to_str().unwrap(),
        "--prefix",
        "Bad",
    ]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("invalid --prefix"),
        "{}",
        text(&r.stderr)
    );
    // A prefix that reads as a registry host would put charts in its namespace.
    let r = pack(&[
        scene.input.to_str().unwrap(),
        "--out",
        scene.out.to_str().unwrap(),
        "--prefix",
        "charts.example.com",
    ]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("invalid --prefix `charts.example.com`")
            && text(&r.stderr).contains("registry host"),
        "{}",
        text(&r.stderr)
    );
}

#[test]
fn help_names_the_command_and_its_flags() {
    let out = chartreg_build(&["--help"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("pack"), "{}", text(&out.stdout));
    let out = chartreg_build(&["pack", "--help"]);
    let help = text(&out.stdout);
    for word in ["--out", "--prefix", "[INPUTS]", "CHARTREG_PACK_OUT"] {
        assert!(help.contains(word), "{word} in {help}");
    }
    let out = chartreg_build(&["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    // Content is made here only: the server has no `pack`.
    let out = chartreg_build(&[]);
    assert_eq!(out.status.code(), Some(2), "a command is required");
}
