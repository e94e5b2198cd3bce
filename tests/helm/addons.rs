//! `chartreg addons-config`: the ConfigMap it prints for what the binary holds is applied to
//! `helm pull`: every entry, as written, pulls from the running binary, with Helm 3 and 4; keys
//! follow a mapping file and `--all-versions`; `--only-mapped` and `--exclude` choose the charts.

use super::*;

/// `chartreg addons-config ARGS`: its stdout, parsed, and the data entries' fields.
fn addons_config(args: &[&str]) -> (Value, Vec<(String, [String; 3])>) {
    let out = Command::new(common::chartreg_bin())
        .arg("addons-config")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let map: Value = serde_yaml_ng::from_slice(&out.stdout).expect("a YAML document");
    let mut entries = Vec::new();
    for (key, block) in map["data"].as_object().expect("data").iter() {
        let fields: serde_yaml_ng::Mapping =
            serde_yaml_ng::from_str(block.as_str().expect("a block of YAML")).unwrap();
        let keys: Vec<&str> = fields.keys().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(
            keys,
            ["ChartName", "ChartVersion", "RepositoryURL"],
            "in that order"
        );
        let field = |name: &str| fields[name].as_str().expect("a string").to_owned();
        entries.push((
            key.clone(),
            [
                field("ChartName"),
                field("ChartVersion"),
                field("RepositoryURL"),
            ],
        ));
    }
    (map, entries)
}

#[rstest]
fn every_entry_pulls_as_written(#[values("helm3", "helm4")] helm: &'static str) {
    let Some(helm) = Helm::new(helm) else {
        return;
    };
    let server = Process::start();
    let url = format!("oci://{}/charts", server.host());
    let (map, entries) = addons_config(&["--repository-url", &url, "--namespace", "caren-system"]);
    assert_eq!(map["kind"], "ConfigMap");
    assert_eq!(map["metadata"]["name"], "default-helm-addons-config");
    assert_eq!(map["metadata"]["namespace"], "caren-system");
    let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["chartreg", "hello", "motd"]);
    let hello = &entries[1].1;
    assert_eq!(
        hello[1], "1.0.1+build.7",
        "the newest stable version, `+` as in Chart.yaml"
    );

    let (_, all) = addons_config(&["--repository-url", &url, "--all-versions"]);
    assert!(
        all.iter()
            .any(|(k, f)| k == "hello-1.1.0-rc.1" && f[1] == "1.1.0-rc.1"),
        "{all:?}"
    );
    for (key, [chart, version, repository]) in entries.iter().chain(&all) {
        let out = tempfile::tempdir().unwrap();
        helm.ok(&[
            "pull",
            &format!("{repository}/{chart}"),
            "--version",
            version,
            "--plain-http",
            "--destination",
            str_path(out.path()),
        ]);
        assert_eq!(
            common::file_names(out.path()).len(),
            1,
            "{}: {key} pulled one package",
            helm.name
        );
    }
}

#[test]
fn a_mapping_file_names_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mapping = dir.path().join("mapping.yaml");
    std::fs::write(&mapping, "# key: chart\ngreeter: hello\n").unwrap();
    let (_, entries) = addons_config(&[
        "--repository-url",
        "oci://helm-repository.ns.svc/charts",
        "--mapping",
        str_path(&mapping),
    ]);
    let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["chartreg", "greeter", "motd"]);
    assert_eq!(entries[1].1[0], "hello");
    assert_eq!(entries[1].1[2], "oci://helm-repository.ns.svc/charts");

    std::fs::write(&mapping, "greeter: nothing-like-it\n").unwrap();
    let out = Command::new(common::chartreg_bin())
        .args([
            "addons-config",
            "--repository-url",
            "oci://h/charts",
            "--mapping",
            str_path(&mapping),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing-like-it"),
        "{}",
        describe(&out)
    );
}

/// `chartreg addons-config ARGS`, expected to fail: its exit code and stderr.
fn addons_config_fails(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(common::chartreg_bin())
        .arg("addons-config")
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", describe(&out));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn only_mapped_and_exclude_choose_the_charts() {
    let dir = tempfile::tempdir().unwrap();
    let mapping = dir.path().join("mapping.yaml");
    std::fs::write(&mapping, "greeter: hello\n").unwrap();
    let mapping = str_path(&mapping);
    let url = "oci://helm-repository.ns.svc/charts";
    let keys = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--repository-url", url];
        all.extend_from_slice(args);
        addons_config(&all).1.into_iter().map(|(k, _)| k).collect()
    };
    assert_eq!(keys(&["--exclude", "chartreg"]), ["hello", "motd"]);
    assert_eq!(
        keys(&["--exclude", "chartreg", "--exclude", "motd"]),
        ["hello"]
    );
    assert_eq!(keys(&["--mapping", mapping, "--only-mapped"]), ["greeter"]);
    assert_eq!(
        keys(&["--mapping", mapping, "--exclude", "motd"]),
        ["chartreg", "greeter"]
    );
    assert_eq!(
        keys(&["--all-versions", "--mapping", mapping, "--only-mapped"]),
        [
            "greeter-0.1.0",
            "greeter-0.2.0",
            "greeter-1.0.0",
            "greeter-1.0.1+build.7",
            "greeter-1.1.0-rc.1"
        ]
    );

    // A typo in --exclude would otherwise list the chart it meant to leave out.
    let (code, stderr) = addons_config_fails(&["--repository-url", url, "--exclude", "chartrge"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("--exclude names `chartrge`, which is not a chart"),
        "{stderr}"
    );
    // --only-mapped needs a mapping.
    let (code, stderr) = addons_config_fails(&["--repository-url", url, "--only-mapped"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--mapping"), "{stderr}");
    // Nothing left: an empty ConfigMap would remove every add-on from a cluster that applies it.
    let (code, stderr) = addons_config_fails(&[
        "--repository-url",
        url,
        "--mapping",
        mapping,
        "--only-mapped",
        "--exclude",
        "hello",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("no chart under `charts/` is left to list"),
        "{stderr}"
    );
}
