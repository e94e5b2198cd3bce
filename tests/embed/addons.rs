//! `chartreg addons-config` names, for each chart, the version `helm pull` without `--version`
//! gets: a binary built with charts whose tags make that choice hard (`0.14.5` beside
//! `v0.14.5`, a `v` tag newer than a plain one, a version that is not strict semver, versions
//! equal but for build metadata among more than 12 tags, only a prerelease) prints its
//! ConfigMap, serves, and Helm 3 and 4 pull each chart without `--version`: the package is the
//! one the ConfigMap's `ChartVersion` pulls, and its Chart.yaml says that version.

use std::io::Read;

use super::*;
use common::{Helm, chart_folder, describe};

/// The charts: (name, versions packed, what the ConfigMap names).
const CHARTS: &[(&str, &[&str], &str)] = &[
    ("both", &["0.14.5", "v0.14.5", "0.15.0-rc.1"], "0.14.5"),
    ("vnewer", &["0.14.5", "v0.14.6"], "v0.14.6"),
    ("short", &["1.1.0", "1.2"], "1.1.0"),
    (
        "ties",
        &[
            "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "0.9.0",
            "0.10.0", "0.11.0", "0.12.0", "0.13.0", "0.14.0", "2.0.0", "2.0.0+a", "2.0.0+b",
            "2.0.0+c",
        ],
        // Go's sort is not stable: of the four equal versions, Helm lists this one first.
        "2.0.0+c",
    ),
    // Helm pulls nothing without --version; the ConfigMap names the prerelease.
    ("pre", &["1.0.0-rc.1"], "1.0.0-rc.1"),
];

/// The `version:` line of the Chart.yaml in the package `path`.
fn packaged_version(path: &Path, chart: &str) -> String {
    let gz = flate2::read::GzDecoder::new(fs::File::open(path).unwrap());
    let mut archive = tar::Archive::new(gz);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some(&format!("{chart}/Chart.yaml")) {
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            let line = text.lines().find_map(|l| l.strip_prefix("version: "));
            return line.expect("a version line").trim().to_owned();
        }
    }
    panic!("{} holds no {chart}/Chart.yaml", path.display());
}

/// The one package `helm pull` wrote into `dir`.
fn pulled(dir: &Path) -> PathBuf {
    let names = common::file_names(dir);
    assert_eq!(names.len(), 1, "one package: {names:?}");
    dir.join(&names[0])
}

#[test]
fn addons_config_names_the_version_helm_pulls_without_a_version() {
    let helms: Vec<Helm> = ["helm3", "helm4"]
        .into_iter()
        .filter_map(Helm::new)
        .collect();
    if helms.is_empty() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for (name, versions, _) in CHARTS {
        for version in *versions {
            let parent = tmp.path().join("src").join(format!("{name}-{version}"));
            inputs.push(chart_folder(&parent, name, version));
        }
    }
    let assets = tmp.path().join("assets");
    let mut args = vec!["pack".to_owned()];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap().to_owned()));
    args.extend(["--out".to_owned(), assets.to_str().unwrap().to_owned()]);
    common::chartreg_build(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let bin = build_with(&assets);

    let server = common::Process::start_with(&bin, &[]);
    let url = format!("oci://{}/charts", server.host());
    let out = Command::new(&bin)
        .args(["addons-config", "--repository-url", &url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let map: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).expect("YAML");
    let named = |chart: &str| -> String {
        let block = map["data"][chart].as_str().expect("a key per chart");
        let fields: serde_yaml_ng::Value = serde_yaml_ng::from_str(block).unwrap();
        fields["ChartVersion"].as_str().unwrap().to_owned()
    };

    for helm in &helms {
        for (chart, _, want) in CHARTS {
            let version = named(chart);
            assert_eq!(&version, want, "{chart}");
            let reference = format!("{url}/{chart}");
            let latest = tempfile::tempdir().unwrap();
            let pull = |extra: &[&str], dir: &Path| {
                let mut args = vec!["pull", reference.as_str(), "--plain-http", "-d"];
                args.push(dir.to_str().unwrap());
                args.extend_from_slice(extra);
                helm.run(&args)
            };
            let without = pull(&[], latest.path());
            let exact = tempfile::tempdir().unwrap();
            let with = pull(&["--version", &version], exact.path());
            assert!(with.status.success(), "{}: {}", helm.name, describe(&with));
            if *chart == "pre" {
                assert!(
                    !without.status.success(),
                    "{}: {chart} has no stable version: {}",
                    helm.name,
                    describe(&without)
                );
                continue;
            }
            assert!(
                without.status.success(),
                "{}: {}",
                helm.name,
                describe(&without)
            );
            let (latest, exact) = (pulled(latest.path()), pulled(exact.path()));
            assert_eq!(
                packaged_version(&latest, chart),
                version,
                "{}: {chart} without --version",
                helm.name
            );
            assert!(
                fs::read(&latest).unwrap() == fs::read(&exact).unwrap(),
                "{}: {chart}: the package without --version is the one --version {version} pulls",
                helm.name
            );
        }
    }
}
