//! Chart folders: what `chartreg-build pack` makes of a chart's source folder, served, is what
//! Helm makes of the folder itself: `helm template`, `helm show chart` and `helm lint` give the
//! same with Helm 3 and 4, and the package holds exactly the files `helm package` puts in its
//! own (same names; same bytes but for Chart.yaml, which Helm writes anew from the metadata).
//! The folder has what real charts have: a `.helmignore`, hidden templates, a vendored
//! subchart folder and a vendored subchart package, `Chart.lock`, `values.schema.json`.

use std::collections::BTreeMap;
use std::fs;

use super::*;
use common::{InProcess, chart_folder, packed};

/// A chart folder `rich` with everything `helm package` has to get right.
fn rich_chart(dir: &Path) -> PathBuf {
    let folder = chart_folder(dir, "rich", "0.3.0");
    let write = |path: &str, text: &[u8]| {
        let file = folder.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    };
    write(
        "Chart.yaml",
        b"apiVersion: v2\nname: rich\nversion: 0.3.0\nappVersion: \"3.0\"\ndescription: A chart with everything\nkeywords: [test]\ndependencies:\n  - name: sub\n    version: 0.1.0\n  - name: lib\n    version: 1.0.0\n    repository: https://charts.example\n",
    );
    write(
        "Chart.lock",
        b"dependencies:\n- name: sub\n  repository: \"\"\n  version: 0.1.0\n- name: lib\n  repository: https://charts.example\n  version: 1.0.0\ndigest: sha256:0000000000000000000000000000000000000000000000000000000000000000\ngenerated: \"2026-01-01T00:00:00Z\"\n",
    );
    write(".helmignore", b"# editor leftovers\n*.bak\ndocs/\n");
    write("notes.bak", b"ignored\n");
    write("docs/guide.md", b"ignored too\n");
    write("files/banner.txt", b"\xEF\xBB\xBFwelcome\n");
    write(
        "templates/.hidden.yaml",
        b"ignored by Helm's default rule\n",
    );
    write(
        "templates/_helpers.tpl",
        b"{{- define \"rich.name\" -}}{{ .Chart.Name }}{{- end -}}\n",
    );
    write(
        "templates/secret.yaml",
        b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ include \"rich.name\" . }}\nstringData:\n  banner: {{ .Files.Get \"files/banner.txt\" | quote }}\n",
    );
    write(
        "values.schema.json",
        br#"{"type":"object","properties":{"greeting":{"type":"string"}}}"#,
    );
    // A vendored subchart as a folder, and one as a package.
    chart_folder(&folder.join("charts"), "sub", "0.1.0");
    let lib_dir = tempfile::tempdir().unwrap();
    let lib = chart_folder(lib_dir.path(), "lib", "1.0.0");
    let packaged = common::chartreg_build(&[
        "pack",
        str_path(&lib),
        "--out",
        str_path(&lib_dir.path().join("out")),
    ]);
    drop(packaged);
    let lib_layer = std::fs::read_dir(lib_dir.path().join("out/charts/lib/blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let data = fs::read(p).unwrap();
            data.starts_with(&[0x1f, 0x8b])
        })
        .unwrap();
    write("charts/lib-1.0.0.tgz", &fs::read(lib_layer).unwrap());
    write("charts/.gitkeep", b"");
    folder
}

/// The files of a package: path -> bytes.
fn entries(package: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(package));
    let mut out = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        out.insert(path, data);
    }
    out
}

#[rstest]
fn a_served_chart_folder_is_what_helm_makes_of_the_folder(
    #[values("helm3", "helm4")] helm: &'static str,
) {
    let Some(helm) = Helm::new(helm) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let folder = rich_chart(dir.path());
    let (_out, registry) = packed(&[str_path(&folder)]);
    let server = InProcess::start(registry);
    let reference = format!("oci://{}/charts/rich", server.host());
    let from_registry = ["--version", "0.3.0", "--plain-http"];
    let same = |what: &[&str]| {
        let local = helm.ok(&[what, &[str_path(&folder)]].concat());
        let served = helm.ok(&[what, &[reference.as_str()], &from_registry].concat());
        assert_eq!(
            String::from_utf8_lossy(&served.stdout),
            String::from_utf8_lossy(&local.stdout),
            "{}: `helm {}` of the served chart is not that of the folder",
            helm.name,
            what.join(" ")
        );
    };
    same(&["template", "demo"]);
    same(&["show", "chart"]);
    same(&["show", "values"]);

    // The package itself, against `helm package` of the folder.
    let pulled = tempfile::tempdir().unwrap();
    helm.ok(&[
        &["pull", reference.as_str()],
        &from_registry[..],
        &["--destination", str_path(pulled.path())],
    ]
    .concat());
    let ours = common::read(&pulled.path().join("rich-0.3.0.tgz"));
    let theirs_dir = tempfile::tempdir().unwrap();
    helm.ok(&[
        "package",
        str_path(&folder),
        "--destination",
        str_path(theirs_dir.path()),
    ]);
    let theirs = common::read(&theirs_dir.path().join("rich-0.3.0.tgz"));
    let (ours, theirs) = (entries(&ours), entries(&theirs));
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "{}: the same files as `helm package`",
        helm.name
    );
    for (path, data) in &theirs {
        if path.ends_with("Chart.yaml") || path.ends_with("Chart.lock") {
            continue;
        }
        assert_eq!(
            &ours[path], data,
            "{}: {path} differs from `helm package`'s",
            helm.name
        );
    }
    // `helm lint` of the package finds what it finds in the folder.
    let package_path = pulled.path().join("rich-0.3.0.tgz");
    let lint = |path: &Path| {
        let out = helm.run(&["lint", str_path(path)]);
        let report: Vec<String> = text(&out)
            .lines()
            .filter(|l| l.starts_with('['))
            .map(str::to_owned)
            .collect();
        (out.status.success(), report)
    };
    assert_eq!(
        lint(&package_path),
        lint(&folder),
        "{}: helm lint",
        helm.name
    );
}

/// Upstream's shape (projectcalico/calico): the tigera-operator chart's `crds/calico` links to
/// a folder beside the chart, inside the same repository.
fn linked_chart(repo: &Path) -> PathBuf {
    let crds = repo.join("libcalico-go/config/crd");
    fs::create_dir_all(&crds).unwrap();
    fs::write(
        crds.join("crd.projectcalico.org_ippools.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ippools.crd.projectcalico.org\n",
    )
    .unwrap();
    let folder = chart_folder(&repo.join("charts"), "tigera-operator", "3.26.4");
    fs::create_dir_all(folder.join("crds")).unwrap();
    std::os::unix::fs::symlink(
        "../../../libcalico-go/config/crd",
        folder.join("crds/calico"),
    )
    .unwrap();
    folder
}

#[rstest]
fn a_link_leaving_the_chart_but_not_the_content_repository_is_followed_as_helm_follows_it(
    #[values("helm3", "helm4")] helm: &'static str,
) {
    let Some(helm) = Helm::new(helm) else {
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    let folder = linked_chart(repo.path());
    let content = repo.path().join("content.yaml");
    fs::write(&content, "charts:\n  from: [charts/tigera-operator]\n").unwrap();
    let out = repo.path().join("assets");
    let packed = common::chartreg_build(&[
        "pack",
        "--config",
        str_path(&content),
        "--out",
        str_path(&out),
    ]);
    let warning = String::from_utf8_lossy(&packed.stderr);
    assert!(
        warning.contains(&format!(
            "warning: {}: a symbolic link that leaves the chart folder",
            folder.join("crds/calico").display()
        )),
        "{warning}"
    );
    let registry = chartreg_core::content::Registry::from_files(common::files_in(&out)).unwrap();
    let server = InProcess::start(registry);
    let pulled = tempfile::tempdir().unwrap();
    helm.ok(&[
        "pull",
        &format!("oci://{}/charts/tigera-operator", server.host()),
        "--version",
        "3.26.4",
        "--plain-http",
        "--destination",
        str_path(pulled.path()),
    ]);
    let ours = entries(&common::read(
        &pulled.path().join("tigera-operator-3.26.4.tgz"),
    ));
    let theirs_dir = tempfile::tempdir().unwrap();
    helm.ok(&[
        "package",
        str_path(&folder),
        "--destination",
        str_path(theirs_dir.path()),
    ]);
    let theirs = entries(&common::read(
        &theirs_dir.path().join("tigera-operator-3.26.4.tgz"),
    ));
    assert!(
        theirs.contains_key("tigera-operator/crds/calico/crd.projectcalico.org_ippools.yaml"),
        "{:?}",
        theirs.keys()
    );
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "{}: the same files as `helm package`",
        helm.name
    );
    for (path, data) in theirs.iter().filter(|(p, _)| !p.ends_with("Chart.yaml")) {
        assert_eq!(&ours[path], data, "{}: {path}", helm.name);
    }

    // A content file whose folder does not hold the link's target: refused, naming the link.
    let inner = repo.path().join("charts/content.yaml");
    fs::write(&inner, "charts:\n  from: [tigera-operator]\n").unwrap();
    let refused = common::output_of(
        Command::new(common::chartreg_build_bin()).args([
            "pack",
            "--config",
            str_path(&inner),
            "--out",
            str_path(&repo.path().join("other")),
        ]),
        "chartreg-build pack",
    );
    let e = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{e}");
    assert!(
        e.contains(&format!(
            "{}: a symbolic link that leaves the folder holding the content file",
            folder.join("crds/calico").display()
        )),
        "{e}"
    );
}
