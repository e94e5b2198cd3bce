//! The pages and the classic Helm repository with real clients, on the release binary (the
//! committed sample content) over HTTP and HTTPS: headless Chromium loads the pages (DOM and a
//! screenshot; a hostile chart's description stays text), Helm 3 and 4 use the classic
//! repository (`repo add`, `search repo --versions`, install, `pull --verify`, `dependency
//! update`), and the classic index and the OCI API are checked to describe the same charts;
//! `commands`: the Helm and skopeo commands the page shows, over HTTPS and HTTP, run as copied.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod browser;
mod commands;
#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{Helm, Process, curl, describe, root};

fn str_path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// The classic index the server at `base` serves, parsed (`ca` to trust for HTTPS).
fn index(base: &str, ca: Option<&Path>) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_slice(&fetched(&format!("{base}/charts/index.yaml"), ca, &[]))
        .expect("YAML")
}

/// The body of a successful GET of `url` with curl (`ca` to trust for HTTPS, extra `args`).
fn fetched(url: &str, ca: Option<&Path>, args: &[&str]) -> Vec<u8> {
    let mut cmd = Command::new(common::tool("curl").expect("curl"));
    cmd.arg("-sf").args(args);
    if let Some(ca) = ca {
        cmd.arg("--cacert").arg(ca);
    }
    let out = common::output_of(cmd.arg(url), "curl");
    assert!(out.status.success(), "{}", describe(&out));
    out.stdout
}

/// Every (chart, version) the classic index lists, with its package sha256.
fn index_entries(index: &serde_yaml_ng::Value) -> BTreeSet<(String, String, String)> {
    let mut found = BTreeSet::new();
    for (name, versions) in index["entries"].as_mapping().expect("entries") {
        for entry in versions.as_sequence().expect("versions") {
            found.insert((
                name.as_str().expect("name").to_owned(),
                entry["version"].as_str().expect("version").to_owned(),
                entry["digest"].as_str().expect("digest").to_owned(),
            ));
        }
    }
    found
}

/// Runs the classic-repository steps with one Helm against `url` (`ca` for HTTPS).
fn classic_steps(helm: &Helm, url: &str, ca: Option<&Path>) {
    let mut add = vec!["repo", "add", "x", url];
    if let Some(ca) = ca {
        add.extend(["--ca-file", str_path(ca)]);
    }
    helm.ok(&add);
    let out = helm.ok(&["search", "repo", "x/", "--versions", "--devel"]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    for (chart, version) in [
        ("hello", "1.1.0-rc.1"),
        ("hello", "1.0.1+build.7"),
        ("hello", "1.0.0"),
        ("hello", "0.2.0"),
        ("hello", "0.1.0"),
        ("motd", "1.0.0"),
        ("chartreg", "0.1.0"),
    ] {
        assert!(
            listed.lines().any(|l| {
                let mut columns = l.split_whitespace();
                columns.next() == Some(&format!("x/{chart}")) && columns.next() == Some(version)
            }),
            "{}: search lists {chart} {version}:\n{listed}",
            helm.name
        );
    }

    // Install, client-side (there is no cluster here): Helm 4's `--dry-run=client` needs no
    // cluster when no kubeconfig is set; Helm 3.17's still asks one for its version (the
    // chart has a kubeVersion), so Helm 3 renders with `template`, its cluster-free install.
    let args: &[&str] = if helm.name == "helm4" {
        &[
            "install",
            "r",
            "x/hello",
            "--version",
            "1.0.0",
            "--dry-run=client",
        ]
    } else {
        &["template", "r", "x/hello", "--version", "1.0.0"]
    };
    let mut cmd = helm.command(args);
    cmd.env_remove("KUBECONFIG");
    let install = common::output_of(&mut cmd, helm.name);
    assert!(
        install.status.success()
            && String::from_utf8_lossy(&install.stdout).contains("kind: Deployment"),
        "{} {}: {}",
        helm.name,
        args.join(" "),
        describe(&install)
    );

    // Pull, and pull --verify with the .prov beside the package.
    let dir = tempfile::tempdir().expect("temp dir");
    helm.ok(&[
        "pull",
        "x/hello",
        "--version",
        "1.0.0",
        "-d",
        str_path(dir.path()),
    ]);
    assert!(
        common::read(&dir.path().join("hello-1.0.0.tgz"))
            == common::read(&root().join("charts/hello-1.0.0.tgz")),
        "{}: the package's bytes",
        helm.name
    );
    let keyring = root().join("tests/fixtures/sample-signing-pubring.gpg");
    let out = helm.ok(&[
        "pull",
        "x/motd",
        "--version",
        "1.0.0",
        "--verify",
        "--keyring",
        str_path(&keyring),
        "-d",
        str_path(dir.path()),
    ]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Signed by"),
        "{}: {}",
        helm.name,
        describe(&out)
    );
    assert!(dir.path().join("motd-1.0.0.tgz.prov").is_file());

    // A chart that depends on one by a classic `repository:` URL.
    let app = common::chart_folder(dir.path(), "app", "0.1.0");
    std::fs::write(
        app.join("Chart.yaml"),
        format!(
            "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n  - name: hello\n    version: 1.0.0\n    repository: {url}\n"
        ),
    )
    .expect("write Chart.yaml");
    let mut update = vec!["dependency", "update", str_path(&app)];
    if let Some(ca) = ca {
        update.extend(["--ca-file", str_path(ca)]);
    }
    helm.ok(&update);
    assert!(
        common::read(&app.join("charts/hello-1.0.0.tgz"))
            == common::read(&root().join("charts/hello-1.0.0.tgz")),
        "{}: dependency update fetched the package",
        helm.name
    );
}

/// The overview page fetched from `base` (`ca` to trust for HTTPS).
fn overview(base: &str, ca: Option<&Path>) -> String {
    String::from_utf8(fetched(
        &format!("{base}/"),
        ca,
        &["-H", "Accept: text/html"],
    ))
    .expect("UTF-8")
}

#[test]
fn helm_uses_the_classic_repository_over_http() {
    let server = Process::start();
    // The page's commands name the scheme it was fetched with.
    let page = overview(&server.url(), None);
    assert!(page.contains(&format!("{}/charts", server.url())), "{page}");
    assert!(page.contains("--plain-http"), "{page}");
    for name in ["helm3", "helm4"] {
        let helm = Helm::new(name).expect("helm (run scripts/install-tools.sh)");
        classic_steps(&helm, &format!("{}/charts", server.url()), None);
    }
}

#[test]
fn helm_uses_the_classic_repository_over_https_with_its_ca_file() {
    let tls = common::TlsProcess::start(&[], &[]);
    let (server, ca) = (&tls.process, tls.ca_file());
    let url = format!("{}/charts", server.https_url());
    for name in ["helm3", "helm4"] {
        let helm = Helm::new(name).expect("helm (run scripts/install-tools.sh)");
        // Without the CA, the repository is refused on its certificate.
        let out = helm.fails(&["repo", "add", "x", &url]);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("certificate"),
            "{name}: {}",
            describe(&out)
        );
        classic_steps(&helm, &url, Some(&ca));
    }
    let served = index(&server.https_url(), Some(&ca));
    assert_eq!(served["apiVersion"], "v1");
    // Over TLS the page's commands say https, and Helm needs no --plain-http.
    let page = overview(&server.https_url(), Some(&ca));
    assert!(page.contains(&url), "{page}");
    assert!(!page.contains("--plain-http"), "{page}");
}

/// The classic index and the OCI API describe the same charts with the same bytes.
#[test]
fn the_classic_index_and_the_oci_api_hold_the_same_charts() {
    let server = Process::start();
    let curl_bin = common::tool("curl").expect("curl");
    let classic = index_entries(&index(&server.url(), None));

    // OCI -> classic: every chart version's chart layer, by its tags.
    let mut oci = BTreeSet::new();
    let catalog = curl(
        &curl_bin,
        "GET",
        &format!("{}/v2/_catalog", server.url()),
        &[],
    );
    let catalog: serde_json::Value = serde_json::from_slice(&catalog.body).expect("JSON");
    for repository in catalog["repositories"].as_array().expect("repositories") {
        let repository = repository.as_str().expect("a name");
        let Some(chart) = repository.strip_prefix("charts/") else {
            continue;
        };
        let tags = curl(
            &curl_bin,
            "GET",
            &format!("{}/v2/{repository}/tags/list", server.url()),
            &[],
        );
        let tags: serde_json::Value = serde_json::from_slice(&tags.body).expect("JSON");
        for tag in tags["tags"].as_array().expect("tags") {
            let tag = tag.as_str().expect("a tag");
            let m = curl(
                &curl_bin,
                "GET",
                &format!("{}/v2/{repository}/manifests/{tag}", server.url()),
                &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
            );
            let m: serde_json::Value = serde_json::from_slice(&m.body).expect("JSON");
            let layer = m["layers"]
                .as_array()
                .expect("layers")
                .iter()
                .find(|l| l["mediaType"] == "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
                .expect("a chart layer");
            let digest = layer["digest"]
                .as_str()
                .expect("digest")
                .trim_start_matches("sha256:");
            oci.insert((chart.to_owned(), tag.replace('_', "+"), digest.to_owned()));
        }
    }
    assert_eq!(
        classic, oci,
        "index.yaml and the OCI API hold the same chart versions"
    );

    // classic -> OCI: each version Helm pulls by oci:// has the classic package's bytes.
    let helm = Helm::new("helm4").expect("helm4");
    for (chart, version, _) in &classic {
        let package = curl(
            &curl_bin,
            "GET",
            &format!("{}/charts/{chart}-{version}.tgz", server.url()),
            &[],
        );
        assert_eq!(package.status, 200);
        let dir = tempfile::tempdir().expect("temp dir");
        helm.pull(&server.host(), chart, version, dir.path());
        let pulled = common::read(&dir.path().join(format!("{chart}-{version}.tgz")));
        assert!(
            pulled == package.body,
            "{chart} {version}: the same bytes both ways"
        );
    }
}
