//! Chart folders: packaged deterministically (two builds, new file times, a rewritten vendored
//! archive: the same bytes), `SOURCE_DATE_EPOCH` honoured, and every folder Helm would refuse
//! refused, naming the file, with the output left as it was.

use std::os::unix::fs::symlink;

use super::*;

/// A chart folder `<dir>/<name>` with a vendored subchart package in `charts/`.
fn folder(dir: &Path, name: &str, version: &str) -> PathBuf {
    let folder = dir.join(name);
    fs::create_dir_all(folder.join("templates")).unwrap();
    fs::create_dir_all(folder.join("charts")).unwrap();
    fs::write(
        folder.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: {version}\ndependencies:\n  - name: dep\n    version: 1.0.0\n"),
    )
    .unwrap();
    fs::write(folder.join("values.yaml"), "a: 1\n").unwrap();
    fs::write(folder.join("templates/cm.yaml"), "kind: ConfigMap\n").unwrap();
    fs::write(
        folder.join("charts/dep-1.0.0.tgz"),
        dep_package(1_700_000_000),
    )
    .unwrap();
    folder
}

/// The subchart `dep` as a package, its files stamped `mtime`.
fn dep_package(mtime: u64) -> Vec<u8> {
    targz(
        &[
            ("dep/Chart.yaml", chart_yaml("dep", "1.0.0").as_bytes()),
            ("dep/values.yaml", b"b: 2\n"),
        ],
        mtime,
    )
}

/// The chart layer of `charts/<name>` in `out`: its digest.
fn layer_digest(out: &Path, name: &str) -> String {
    let registry = chartreg_core::content::Registry::from_files(files_in(out)).unwrap();
    let repo = registry
        .repository(&format!("charts/{name}").parse().unwrap())
        .unwrap();
    let tag = repo.tags()[0].to_owned();
    let manifest = repo.manifest(&tag.parse().unwrap()).unwrap();
    let m: serde_json::Value = serde_json::from_slice(&manifest.data).unwrap();
    m["layers"][0]["digest"].as_str().unwrap().to_owned()
}

fn pack_folder(folder: &Path, out: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .args([
            "pack",
            folder.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env_remove("SOURCE_DATE_EPOCH")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn folders_pack_to_the_same_bytes_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let chart = folder(dir.path(), "det", "1.0.0");
    let digest = |env: &[(&str, &str)]| {
        let out = tempfile::tempdir().unwrap();
        let r = pack_folder(&chart, out.path(), env);
        assert!(r.status.success(), "{}", text(&r.stderr));
        layer_digest(out.path(), "det")
    };
    let first = digest(&[]);
    assert_eq!(digest(&[]), first, "two builds");
    // New file times everywhere, and the vendored archive rewritten (as `helm dependency
    // update` rewrites it): the same package.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for file in ["Chart.yaml", "values.yaml", "templates/cm.yaml"] {
        let data = fs::read(chart.join(file)).unwrap();
        fs::write(chart.join(file), data).unwrap();
    }
    fs::write(
        chart.join("charts/dep-1.0.0.tgz"),
        dep_package(1_800_000_000),
    )
    .unwrap();
    assert_eq!(digest(&[]), first, "a dependency update");
    // SOURCE_DATE_EPOCH sets the files' time, so the package and its `created`.
    assert_ne!(digest(&[("SOURCE_DATE_EPOCH", "1700000000")]), first);
    let out = tempfile::tempdir().unwrap();
    let r = pack_folder(&chart, out.path(), &[("SOURCE_DATE_EPOCH", "soon")]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("SOURCE_DATE_EPOCH"),
        "{}",
        text(&r.stderr)
    );
}

#[test]
fn a_folder_and_its_package_with_other_bytes_conflict() {
    let scene = Scene::new();
    let chart = folder(&scene.input, "same", "1.0.0");
    scene.add(
        "same-1.0.0.tgz",
        &chart_with_files(&[("same/Chart.yaml", chart_yaml("same", "1.0.0").as_bytes())]),
    );
    let r = scene.pack();
    assert_eq!(r.status.code(), Some(1));
    let stderr = text(&r.stderr);
    assert!(
        stderr.contains("same 1.0.0") && stderr.contains(chart.to_str().unwrap()),
        "{stderr}"
    );
}

fn chart_with_files(files: &[(&str, &[u8])]) -> Vec<u8> {
    targz(files, 0)
}

/// Each way a folder is refused: what to break, the file the message must name, and words it
/// must contain.
#[rstest]
#[case::bad_version(
    "Chart.yaml",
    "apiVersion: v2\nname: bad\nversion: one\n",
    "Chart.yaml",
    "not a version Helm accepts"
)]
#[case::bad_yaml(
    "Chart.yaml",
    "name: [bad\n",
    "Chart.yaml",
    "invalid YAML in Chart.yaml"
)]
#[case::missing_dependency("charts/dep-1.0.0.tgz", "", "Chart.yaml", "missing in charts/: dep")]
#[case::stray_file_in_charts(
    "charts/README.md",
    "hi\n",
    "charts/README.md",
    "holds only subcharts"
)]
#[case::bad_schema(
    "values.schema.json",
    "{not json",
    "values.schema.json",
    "not valid JSON"
)]
#[case::bad_helmignore(".helmignore", "ok\ndocs/**\n", ".helmignore", "line 2")]
fn bad_folders_are_refused_naming_the_file(
    #[case] file: &str,
    #[case] content: &str,
    #[case] named: &str,
    #[case] words: &str,
) {
    let scene = Scene::new();
    let chart = folder(&scene.input, "bad", "1.0.0");
    if content.is_empty() {
        fs::remove_file(chart.join(file)).unwrap();
    } else {
        fs::write(chart.join(file), content).unwrap();
    }
    let before = scene.output();
    let r = scene.pack();
    let stderr = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(chart.join(named).to_str().unwrap()),
        "names {named}: {stderr}"
    );
    assert!(stderr.contains(words), "says `{words}`: {stderr}");
    assert_eq!(scene.output(), before, "output untouched");
}

#[test]
fn symlinks_may_not_leave_the_folder() {
    let scene = Scene::new();
    let chart = folder(&scene.input, "linked", "1.0.0");
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "not the chart's\n").unwrap();
    symlink(outside.path().join("secret.txt"), chart.join("files.txt")).unwrap();
    let before = scene.output();
    let r = scene.pack();
    let stderr = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(chart.join("files.txt").to_str().unwrap())
            && stderr.contains("leaves the chart folder"),
        "{stderr}"
    );
    assert_eq!(scene.output(), before);

    // A link inside the folder is followed, as Helm follows it.
    fs::remove_file(chart.join("files.txt")).unwrap();
    symlink(chart.join("values.yaml"), chart.join("copy.yaml")).unwrap();
    let r = scene.pack();
    assert!(r.status.success(), "{}", text(&r.stderr));
}
