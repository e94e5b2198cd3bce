//! What people and fetch read: the table (an image a line, its charts and ways), `--why` (a
//! line under it per place it was found), the images file in mindthegap's format; and the
//! `PATH...` forms (chart folders, a folder of them, packages) with `--values CHART=FILE`,
//! and a registry with a port.

use serde_yaml_ng::Value;

use super::*;

/// The line of the table naming `image` (not indented), and the indented lines under it.
fn table_entry<'a>(stdout: &'a str, image: &str) -> (&'a str, Vec<&'a str>) {
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            !l.starts_with(char::is_whitespace) && l.split_whitespace().any(|w| w == image)
        })
        .unwrap_or_else(|| panic!("no line of the table names {image}:\n{stdout}"));
    let under = lines[at + 1..]
        .iter()
        .take_while(|l| l.starts_with(char::is_whitespace))
        .copied()
        .collect();
    (lines[at], under)
}

#[test]
fn the_table_and_why() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    let config = work.content(true);
    let (table, _) = work.images_ok(&helm, &["--config", arg(&config)]);
    for w in everything(true) {
        let (line, under) = table_entry(&table, w.image);
        for (chart, from) in &w.found {
            let name = chart.split(':').next().unwrap();
            assert!(
                line.contains(name) && line.contains(from),
                "{}: the line names {chart} and {from}: {line}",
                w.image
            );
        }
        assert!(
            under.iter().all(|l| l.trim().is_empty()),
            "no --why, no lines under {}: {under:?}",
            w.image
        );
    }

    let (why, _) = work.images_ok(&helm, &["--config", arg(&config), "--why"]);
    let (_, under) = table_entry(&why, BUSYBOX);
    for place in [
        "platform/templates/controller.yaml",
        "web/templates/deployment.yaml",
        "initImage",
        "waitImage",
    ] {
        assert!(
            under.iter().any(|l| l.contains(place)),
            "{BUSYBOX}: a line under it says {place}: {under:#?}"
        );
    }
    assert!(under.len() >= 4, "one line per place: {under:#?}");
    let (_, under) = table_entry(&why, BACKUP);
    assert!(
        under
            .iter()
            .any(|l| l.contains("platform/templates/cronjob.yaml") && l.contains("CronJob")),
        "{under:#?}"
    );
    let (_, under) = table_entry(&why, OPERAND);
    assert!(
        under.len() == 1 && under[0].contains("artifacthub.io/images"),
        "{under:#?}"
    );
    let (_, under) = table_entry(&why, EXPORTER);
    assert!(
        under.iter().any(|l| l.contains("platform-metrics.yaml")),
        "the render's values file is named: {under:#?}"
    );
}

/// The images file: registry -> `images` -> path -> tags, of the needed images only.
fn images_file(path: &Path) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let text = std::fs::read_to_string(path).expect("the images file is written");
    let value: Value = serde_yaml_ng::from_str(&text)
        .unwrap_or_else(|e| panic!("the images file is YAML ({e}):\n{text}"));
    let registries = value.as_mapping().expect("registries at the top");
    registries
        .iter()
        .map(|(registry, entry)| {
            let registry = registry.as_str().expect("a registry name").to_owned();
            let images = entry
                .get("images")
                .and_then(Value::as_mapping)
                .unwrap_or_else(|| panic!("{registry}: no `images` in\n{text}"));
            let images = images
                .iter()
                .map(|(path, tags)| {
                    let tags = tags
                        .as_sequence()
                        .unwrap_or_else(|| panic!("{registry} {path:?}: tags are a list"))
                        .iter()
                        .map(|t| t.as_str().expect("a tag is a string").to_owned())
                        .collect();
                    (path.as_str().expect("a path").to_owned(), tags)
                })
                .collect();
            (registry, images)
        })
        .collect()
}

#[test]
fn the_images_file() {
    let Some(helm) = HelmFrom::flag("helm3") else {
        return;
    };
    let work = Work::new();
    let config = work.content(true);
    let out = work.path("images.yaml");
    work.images_ok(
        &helm,
        &["--config", arg(&config), "--images-file", arg(&out)],
    );
    let mut file = images_file(&out);
    let pinned = file
        .get_mut("docker.io")
        .and_then(|d| d.remove("library/busybox"))
        .unwrap_or_else(|| panic!("docker.io library/busybox: {file:#?}"));
    assert!(
        pinned.len() == 1 && (pinned[0].contains("1.36") || pinned[0].contains(PINNED)),
        "busybox, by its tag or digest: {pinned:?}"
    );
    let want = |entries: &[(&str, &str, &str)]| -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
        let mut map: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for (registry, path, tag) in entries {
            map.entry((*registry).to_owned())
                .or_default()
                .insert((*path).to_owned(), vec![(*tag).to_owned()]);
        }
        map
    };
    let mut expected = vec![
        ("docker.io", "library/nginx", "1.25.3"),
        ("docker.io", "library/alpine", "3.20"),
        ("docker.io", "example/agent", "0.3.0"),
        ("quay.io", "example/controller", "2.4.1"),
        ("quay.io", "example/config-reloader", "v0.9.2"),
        ("quay.io", "example/operand", "2.4.1"),
        ("registry.k8s.io", "example/backup", "v0.3"),
        ("ghcr.io", "example/exporter", "v1.0.0"),
    ];
    assert_eq!(
        file,
        want(&expected),
        "the needed images, with the exporter"
    );

    // Without the values file the exporter is not needed: not in the file.
    let config = work.content(false);
    work.images_ok(
        &helm,
        &["--config", arg(&config), "--images-file", arg(&out)],
    );
    let mut file = images_file(&out);
    file.get_mut("docker.io")
        .and_then(|d| d.remove("library/busybox"))
        .expect("busybox");
    expected.retain(|(registry, _, _)| *registry != "ghcr.io");
    assert_eq!(
        file,
        want(&expected),
        "the needed images, without the exporter"
    );
}

/// Chart folders named on the command line, a folder holding them, and a folder of packages,
/// with `--values CHART=FILE`: the same as the content file says.
#[test]
fn paths_and_values_on_the_command_line() {
    let Some(helm) = HelmFrom::flag("helm3") else {
        return;
    };
    let Some(helm4) = common::Helm::new("helm4") else {
        return;
    };
    let work = Work::new();
    let values = format!("platform={METRICS_VALUES}");
    let (listed, _) = work.listed(
        &helm,
        &["charts/platform", "charts/web", "--values", &values],
    );
    assert_listing(&listed, &everything(true), "chart folders");
    let (listed, _) = work.listed(&helm, &["charts", "--values", &values]);
    assert_listing(&listed, &everything(true), "a folder of chart folders");

    let packages = work.path("packages");
    for chart in ["platform", "web"] {
        helm4.ok(&[
            "package",
            arg(&work.path("charts").join(chart)),
            "-d",
            arg(&packages),
        ]);
    }
    let (listed, _) = work.listed(&helm, &["packages", "--values", &values]);
    assert_listing(&listed, &everything(true), "a folder of packages");
    let (listed, _) = work.listed(&helm, &["packages/web-1.0.0.tgz"]);
    assert_listing(
        &listed,
        &everything(true)
            .into_iter()
            .filter_map(|mut w| {
                w.found.retain(|(chart, _)| *chart == WEB);
                (!w.found.is_empty()).then_some(w)
            })
            .collect::<Vec<_>>(),
        "one package",
    );
}

/// An image on a registry with a port, set by a values file: served as `HOST_PORT/...`, and
/// the images file keeps the registry as written.
#[test]
fn a_registry_with_a_port() {
    let Some(helm) = HelmFrom::flag("helm4") else {
        return;
    };
    let work = Work::new();
    work.write(
        "values/web-local.yaml",
        "image:\n  repository: 127.0.0.1:5000/team/web\n  tag: \"1.0.0\"\n",
    );
    let out = work.path("images.yaml");
    let (listed, _) = work.listed(
        &helm,
        &[
            "charts/web",
            "--values",
            "web=values/web-local.yaml",
            "--images-file",
            arg(&out),
        ],
    );
    let local = entry(&listed, "127.0.0.1:5000/team/web:1.0.0");
    assert_eq!(local.repository, "127.0.0.1_5000/team/web");
    assert_parts(local, "a registry with a port");
    assert!(local.needed, "{local:#?}");
    let render = local.one(WEB, RENDER);
    assert!(
        render.values.len() == 1 && render.values[0].ends_with("values/web-local.yaml"),
        "{render:#?}"
    );
    // The static reading names the values file that sets the image, not the chart's own.
    let valued = local.one(WEB, "values");
    assert!(
        valued.at.ends_with("values/web-local.yaml image"),
        "{valued:#?}"
    );
    // nginx is no longer rendered: at most listed from values.yaml, not needed.
    if let Some(nginx) = listed.iter().find(|l| l.image == NGINX) {
        assert!(
            !nginx.needed && nginx.found_by(RENDER).next().is_none(),
            "{nginx:#?}"
        );
    }
    let file = images_file(&out);
    assert_eq!(
        file.get("127.0.0.1:5000")
            .and_then(|r| r.get("team/web"))
            .map(Vec::as_slice),
        Some(["1.0.0".to_owned()].as_slice()),
        "{file:#?}"
    );
    assert!(
        file.get("docker.io")
            .is_none_or(|r| !r.contains_key("library/nginx")),
        "nginx is not needed: {file:#?}"
    );
}
