//! Who owns what in the output folder: chart repositories of a prefix are replaced and removed
//! by runs with charts for that prefix; layouts of earlier runs stay; what pack did not write is
//! never touched; the record and the `.gitignore` say what was written; `--check` finds what
//! is stale without writing.

use super::*;

fn record(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(out.join(".chartreg-pack.json")).unwrap()).unwrap()
}

fn run(args: &[&str], out: &Path) -> Output {
    let mut all = vec!["--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    pack(&all)
}

#[test]
fn each_run_keeps_to_what_it_owns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("assets");
    let sample = root().join("images/sample");
    let a = dir.path().join("a");
    fs::create_dir_all(&a).unwrap();
    fs::write(a.join("one-1.0.0.tgz"), chart(&chart_yaml("one", "1.0.0"))).unwrap();
    fs::write(a.join("two-1.0.0.tgz"), chart(&chart_yaml("two", "1.0.0"))).unwrap();

    let r = run(
        &[
            a.to_str().unwrap(),
            "--layout",
            &format!("{}=images/sample", sample.display()),
        ],
        &out,
    );
    assert!(r.status.success(), "{}", text(&r.stderr));
    let rec = record(&out);
    assert_eq!(rec["repositories"]["charts/one"]["kind"], "chart");
    assert_eq!(rec["repositories"]["images/sample"]["kind"], "layout");
    assert_eq!(
        fs::read_to_string(out.join(".gitignore"))
            .unwrap()
            .lines()
            .last(),
        Some("/images/sample/")
    );

    // Something pack did not write.
    fs::create_dir_all(out.join("imported/thing")).unwrap();
    fs::write(out.join("imported/thing/oci-layout"), "{}").unwrap();

    // Charts without `two` and no layout: `two` goes, the layout and the import stay.
    fs::remove_file(a.join("two-1.0.0.tgz")).unwrap();
    let r = run(&[a.to_str().unwrap()], &out);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(
        text(&r.stdout).contains("removed charts/two"),
        "{}",
        text(&r.stdout)
    );
    assert!(!out.join("charts/two").exists());
    assert!(out.join("charts/one/index.json").is_file());
    assert!(
        out.join("images/sample/index.json").is_file(),
        "an earlier layout stays"
    );
    assert!(
        out.join("imported/thing/oci-layout").is_file(),
        "what pack did not write stays"
    );

    // Charts of another prefix leave these alone.
    let r = run(&[a.to_str().unwrap(), "--prefix", "addons"], &out);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(
        out.join("charts/one/index.json").is_file() && out.join("addons/one/index.json").is_file()
    );

    // A layout may not take a repository pack did not write, nor lie inside another.
    let r = run(
        &["--layout", &format!("{}=imported/thing", sample.display())],
        &out,
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("was not written by pack"),
        "{}",
        text(&r.stderr)
    );
    let r = run(
        &["--layout", &format!("{}=charts/one/sig", sample.display())],
        &out,
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("would lie inside repository `charts/one`"),
        "{}",
        text(&r.stderr)
    );
    // Two inputs for one repository.
    let r = run(
        &[
            a.to_str().unwrap(),
            "--layout",
            &format!("{}=charts/one", sample.display()),
        ],
        &out,
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("is also written from"),
        "{}",
        text(&r.stderr)
    );
}

#[test]
fn check_finds_what_is_stale_and_writes_nothing() {
    let scene = Scene::new();
    scene.add("new-1.0.0.tgz", &chart(&chart_yaml("new", "1.0.0")));
    let check = |scene: &Scene| {
        pack(&[
            scene.input.to_str().unwrap(),
            "--out",
            scene.out.to_str().unwrap(),
            "--check",
        ])
    };
    let before = scene.output();
    let r = check(&scene);
    assert_eq!(r.status.code(), Some(1));
    let stderr = text(&r.stderr);
    assert!(
        stderr.contains("out of date") && stderr.contains("charts/new"),
        "{stderr}"
    );
    assert!(
        stderr.contains("charts/hello (no longer packed)"),
        "{stderr}"
    );
    assert_eq!(scene.output(), before, "--check writes nothing");
    assert!(scene.pack().status.success());
    let r = check(&scene);
    assert!(r.status.success(), "{}", text(&r.stderr));
}

/// What an interrupted run of an earlier chartreg-build left in the output folder (a
/// repository's old or staged folder, a record's staged copy, import-bundle's staging) and what
/// a killed run leaves beside it (the new folder it was filling): `--check` names each as a
/// difference, and the next pack removes them all, its own repositories unchanged.
#[test]
fn what_interrupted_runs_left_is_a_difference_and_the_next_run_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("assets");
    let a = dir.path().join("a");
    fs::create_dir_all(&a).unwrap();
    fs::write(a.join("one-1.0.0.tgz"), chart(&chart_yaml("one", "1.0.0"))).unwrap();
    let r = run(&[a.to_str().unwrap()], &out);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let files = |dir: &Path| chartreg_core::tree::read_dir(dir, dir).unwrap();
    let packed = files(&out);
    let left = [
        "charts/.one.pack-old/index.json",
        "charts/.one.pack-new/blobs/sha256/x",
        "..chartreg-pack.json.new",
        ".chartreg-import/blobs/x",
    ];
    for file in left {
        let path = out.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "left").unwrap();
    }
    let beside = dir.path().join(".assets.pack-new");
    fs::create_dir_all(beside.join("charts")).unwrap();

    let r = run(&[a.to_str().unwrap(), "--check"], &out);
    assert!(!r.status.success(), "--check took leftovers as up to date");
    let e = text(&r.stderr);
    for name in [
        "charts/.one.pack-old",
        "charts/.one.pack-new",
        "..chartreg-pack.json.new",
        ".chartreg-import",
        ".assets.pack-new",
    ] {
        assert!(e.contains(name), "--check does not name {name}: {e}");
    }
    assert!(e.contains("left by an interrupted run"), "{e}");

    let r = run(&[a.to_str().unwrap()], &out);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(text(&r.stdout).starts_with("wrote "), "{}", text(&r.stdout));
    assert!(
        files(&out) == packed,
        "leftovers stayed, or the content changed"
    );
    assert_eq!(common_names(dir.path()), ["a", "assets"]);
    let r = run(&[a.to_str().unwrap(), "--check"], &out);
    assert!(r.status.success(), "{}", text(&r.stderr));
}

fn common_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
