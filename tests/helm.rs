//! Helm 3 (3.17, oras-go v1) and Helm 4 (oras-go v2) against the chartreg binary: pulls by
//! exact version, range, latest and `--devel` give byte-identical packages; `show` and
//! `template` work straight from the registry; `--verify` succeeds with the signing key and
//! fails without it; unknown charts fail; and what `helm push` stores in the CNCF
//! distribution registry has the same descriptors as what chartreg serves.
//!
//! Every test runs once per Helm version (the case name says which), each with its own
//! chartreg process and Helm home folders.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Distribution, Process, assert_same_bytes, assets_tag_digest, describe, root};
use rstest::rstest;
use serde_json::Value;

/// One Helm binary with private config, cache and data folders (and HOME), so that tests
/// share nothing with each other or with the user's Helm.
struct Helm {
    name: &'static str,
    bin: PathBuf,
    home: tempfile::TempDir,
}

impl Helm {
    /// `None` (the test is skipped) when this Helm is not installed.
    fn new(name: &'static str) -> Option<Helm> {
        let bin = common::tool(name)?;
        let home = tempfile::tempdir().expect("temp dir");
        Some(Helm { name, bin, home })
    }

    fn command(&self, args: &[&str]) -> Command {
        let home = self.home.path();
        let mut cmd = Command::new(&self.bin);
        cmd.args(args);
        common::isolate_helm(&mut cmd, home);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        common::output_of(&mut self.command(args), self.name)
    }

    /// Runs Helm and fails the test, naming this Helm and the command, unless it succeeds.
    fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{} {} failed: {}",
            self.name,
            args.join(" "),
            describe(&out)
        );
        out
    }

    /// Runs Helm and fails the test unless it fails.
    fn fails(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "{} {} should have failed: {}",
            self.name,
            args.join(" "),
            describe(&out)
        );
        out
    }
}

/// stdout and stderr together (Helm versions differ in where they print `Pulled:`/`Digest:`).
fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn charts_dir() -> PathBuf {
    root().join("charts")
}

fn str_path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// One file out of a chart package (a gzipped tar).
fn file_in_package(package: &Path, name: &str) -> String {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(package).expect("open package"));
    let mut archive = tar::Archive::new(gz);
    for entry in archive.entries().expect("package is a tar") {
        let mut entry = entry.expect("tar entry");
        if entry.path().expect("entry path").to_str() == Some(name) {
            let mut s = String::new();
            entry.read_to_string(&mut s).expect("UTF-8 file");
            return s;
        }
    }
    panic!("{} holds no {name}", package.display());
}

/// `helm pull` resolves the version the way Helm does (exact tag, semver range, latest stable,
/// `--devel`) and writes exactly the packaged bytes, from the manifest the layout tags.
#[rstest]
#[case::exact(&["--version", "1.0.0"], "hello-1.0.0.tgz", "1.0.0")]
#[case::exact_oldest(&["--version", "0.1.0"], "hello-0.1.0.tgz", "0.1.0")]
#[case::exact_with_build_metadata(&["--version", "1.0.1+build.7"], "hello-1.0.1+build.7.tgz", "1.0.1_build.7")]
#[case::exact_prerelease(&["--version", "1.1.0-rc.1"], "hello-1.1.0-rc.1.tgz", "1.1.0-rc.1")]
#[case::caret_range(&["--version", "^1.0"], "hello-1.0.1+build.7.tgz", "1.0.1_build.7")]
#[case::upper_bound_range(&["--version", "<1.0.0"], "hello-0.2.0.tgz", "0.2.0")]
#[case::latest_stable(&[], "hello-1.0.1+build.7.tgz", "1.0.1_build.7")]
#[case::devel(&["--devel"], "hello-1.1.0-rc.1.tgz", "1.1.0-rc.1")]
fn helm_pull_writes_the_packaged_chart(
    #[values("helm3", "helm4")] helm: &'static str,
    #[case] version_args: &[&str],
    #[case] package: &str,
    #[case] tag: &str,
) {
    let Some(helm) = Helm::new(helm) else { return };
    let server = Process::start();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://{}/charts/hello", server.host());
    let mut args = vec![
        "pull",
        &reference,
        "--plain-http",
        "-d",
        str_path(out_dir.path()),
    ];
    args.extend_from_slice(version_args);
    let out = helm.ok(&args);

    let context = format!("{} {}", helm.name, args.join(" "));
    assert_eq!(
        common::file_names(out_dir.path()),
        [package],
        "{context}: wrong file(s) written"
    );
    let got = common::read(&out_dir.path().join(package));
    assert_same_bytes(&got, &charts_dir().join(package), &context);
    let digest = assets_tag_digest("charts/hello", tag);
    assert!(
        text(&out).contains(&format!("Digest: {digest}")),
        "{context}: expected Helm to pull manifest {digest} (tag {tag}): {}",
        describe(&out)
    );
}

/// `helm show chart|values` and `helm template` read the chart straight from the registry.
#[rstest]
fn helm_show_and_template_read_the_chart(#[values("helm3", "helm4")] helm: &'static str) {
    let Some(helm) = Helm::new(helm) else { return };
    let server = Process::start();
    let reference = format!("oci://{}/charts/hello", server.host());
    let common_args = ["--version", "1.0.0", "--plain-http"];
    let package = charts_dir().join("hello-1.0.0.tgz");

    let mut args = vec!["show", "chart", reference.as_str()];
    args.extend_from_slice(&common_args);
    let chart = String::from_utf8(helm.ok(&args).stdout).expect("UTF-8");
    for line in [
        "name: hello",
        "version: 1.0.0",
        "appVersion: 1.27.4",
        "apiVersion: v2",
    ] {
        assert!(
            chart.lines().any(|l| l == line),
            "{}: `helm show chart` lacks `{line}`:\n{chart}",
            helm.name
        );
    }

    let mut args = vec!["show", "values", reference.as_str()];
    args.extend_from_slice(&common_args);
    let values = String::from_utf8(helm.ok(&args).stdout).expect("UTF-8");
    assert!(
        values.contains("message: Hello from Helm & chartreg!") && values.contains("greeting:"),
        "{}: `helm show values` lacks the greeting:\n{values}",
        helm.name
    );
    assert_eq!(
        values.trim_end(),
        file_in_package(&package, "hello/values.yaml").trim_end(),
        "{}: `helm show values` is not the packaged values.yaml",
        helm.name
    );

    let mut args = vec!["template", "myrel", reference.as_str()];
    args.extend_from_slice(&common_args);
    let rendered = String::from_utf8(helm.ok(&args).stdout).expect("UTF-8");
    let deployment = rendered
        .split("\n---")
        .find(|doc| doc.lines().any(|l| l == "kind: Deployment"))
        .unwrap_or_else(|| panic!("{}: no Deployment rendered:\n{rendered}", helm.name));
    assert!(
        deployment.contains("name: myrel-hello"),
        "{}: the Deployment is not named after the release:\n{deployment}",
        helm.name
    );
    assert!(
        deployment.contains("nginxinc/nginx-unprivileged:1.27.4"),
        "{}: the Deployment does not use the chart's appVersion 1.27.4:\n{deployment}",
        helm.name
    );
}

/// `helm pull --verify` with the signing key's public keyring: the signature and the chart's
/// hash check out, and both files are the packaged ones.
#[rstest]
fn helm_pull_verify_accepts_the_signed_chart(#[values("helm3", "helm4")] helm: &'static str) {
    let Some(helm) = Helm::new(helm) else { return };
    let server = Process::start();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://{}/charts/motd", server.host());
    let keyring = root().join("tests/fixtures/sample-signing-pubring.gpg");
    let args = [
        "pull",
        "--verify",
        "--keyring",
        str_path(&keyring),
        &reference,
        "--version",
        "1.0.0",
        "--plain-http",
        "-d",
        str_path(out_dir.path()),
    ];
    let out = helm.ok(&args);
    let context = format!("{} {}", helm.name, args.join(" "));

    let package = charts_dir().join("motd-1.0.0.tgz");
    let chart_digest = common::sha256(&common::read(&package));
    assert!(
        text(&out).contains(&format!("Chart Hash Verified: {chart_digest}")),
        "{context}: Helm did not report verifying the chart hash {chart_digest}: {}",
        describe(&out)
    );
    let files = common::file_names(out_dir.path());
    assert!(
        files.contains(&"motd-1.0.0.tgz".to_owned()),
        "{context}: no chart written: {files:?}"
    );
    assert_same_bytes(
        &common::read(&out_dir.path().join("motd-1.0.0.tgz")),
        &package,
        &context,
    );
    // Both Helm versions keep the provenance file beside the chart; if one stops doing so,
    // there is nothing to compare.
    let prov = out_dir.path().join("motd-1.0.0.tgz.prov");
    if prov.exists() {
        assert_same_bytes(
            &common::read(&prov),
            &charts_dir().join("motd-1.0.0.tgz.prov"),
            &context,
        );
    }
    assert!(
        files
            .iter()
            .all(|f| f == "motd-1.0.0.tgz" || f == "motd-1.0.0.tgz.prov"),
        "{context}: unexpected files written: {files:?}"
    );
}

/// A public keyring of a freshly generated RSA key (Helm 3's OpenPGP library reads no
/// EdDSA keys), from a private GNUPGHOME whose agent is stopped afterwards. `None` when gpg
/// is missing.
fn other_keyring(dir: &Path) -> Option<PathBuf> {
    let gpg = common::tool("gpg")?;
    let home = dir.join("gnupg");
    std::fs::create_dir(&home).expect("create GNUPGHOME");
    std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod GNUPGHOME");
    let gpg_cmd = |args: &[&str]| {
        let mut cmd = Command::new(&gpg);
        cmd.args(["--batch", "--quiet"])
            .args(args)
            .env("GNUPGHOME", &home);
        common::output_of(&mut cmd, "gpg")
    };
    let generated = gpg_cmd(&[
        "--passphrase",
        "",
        "--quick-gen-key",
        "Someone Else <someone.else@example.com>",
        "rsa2048",
        "sign",
        "never",
    ]);
    let exported = gpg_cmd(&["--export"]);
    // Stop the agent that key generation started for this GNUPGHOME (only that one).
    if let Some(gpgconf) = common::tool("gpgconf") {
        let _ = common::output_of(
            Command::new(gpgconf)
                .args(["--kill", "gpg-agent"])
                .env("GNUPGHOME", &home),
            "gpgconf",
        );
    }
    assert!(
        generated.status.success(),
        "gpg --quick-gen-key: {}",
        describe(&generated)
    );
    assert!(
        exported.status.success() && !exported.stdout.is_empty(),
        "gpg --export: {}",
        describe(&exported)
    );
    let keyring = dir.join("other-pubring.gpg");
    std::fs::write(&keyring, &exported.stdout).expect("write keyring");
    Some(keyring)
}

/// `--verify` bites: the same signed chart is refused with a keyring that lacks the signer
/// (empty, or holding another key), and an unsigned chart is refused with the right keyring.
#[rstest]
fn helm_pull_verify_refuses_what_it_cannot_verify(#[values("helm3", "helm4")] helm: &'static str) {
    let Some(helm) = Helm::new(helm) else { return };
    let server = Process::start();
    let scratch = tempfile::tempdir().expect("temp dir");
    let empty = scratch.path().join("empty-pubring.gpg");
    std::fs::write(&empty, b"").expect("write empty keyring");
    let mut keyrings = vec![("an empty keyring", empty)];
    if let Some(other) = other_keyring(scratch.path()) {
        keyrings.push(("another key's keyring", other));
    }

    let motd = format!("oci://{}/charts/motd", server.host());
    for (what, keyring) in &keyrings {
        let out_dir = tempfile::tempdir().expect("temp dir");
        let out = helm.fails(&[
            "pull",
            "--verify",
            "--keyring",
            str_path(keyring),
            &motd,
            "--version",
            "1.0.0",
            "--plain-http",
            "-d",
            str_path(out_dir.path()),
        ]);
        assert!(
            text(&out).contains("signature made by unknown entity"),
            "{}: with {what}, --verify should fail on the signature: {}",
            helm.name,
            describe(&out)
        );
    }

    let out_dir = tempfile::tempdir().expect("temp dir");
    let hello = format!("oci://{}/charts/hello", server.host());
    let keyring = root().join("tests/fixtures/sample-signing-pubring.gpg");
    let out = helm.fails(&[
        "pull",
        "--verify",
        "--keyring",
        str_path(&keyring),
        &hello,
        "--version",
        "1.0.0",
        "--plain-http",
        "-d",
        str_path(out_dir.path()),
    ]);
    assert!(
        text(&out).contains("provenance"),
        "{}: --verify of the unsigned hello chart should fail for want of provenance: {}",
        helm.name,
        describe(&out)
    );
}

/// `--verify` checks the bytes it was served: a registry whose signed chart's layer is
/// another package than the one the provenance file signs is refused.
#[rstest]
fn helm_pull_verify_refuses_a_swapped_chart(#[values("helm3", "helm4")] helm: &'static str) {
    let Some(helm) = Helm::new(helm) else { return };
    let motd = root().join("assets/charts/motd");
    let manifest_digest = assets_tag_digest("charts/motd", "1.0.0");
    let blob =
        |digest: &str| common::read(&motd.join("blobs/sha256").join(&digest["sha256:".len()..]));
    let manifest: Value = serde_json::from_slice(&blob(&manifest_digest)).expect("JSON");
    let config = blob(
        manifest["config"]["digest"]
            .as_str()
            .expect("config digest"),
    );
    let other_chart = common::read(&charts_dir().join("hello-1.0.0.tgz"));
    let prov = common::read(&charts_dir().join("motd-1.0.0.tgz.prov"));
    let layout = common::generated_layout(
        "charts/motd",
        "1.0.0",
        ("application/vnd.cncf.helm.config.v1+json", &config),
        &[
            (
                "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                &other_chart,
            ),
            ("application/vnd.cncf.helm.chart.provenance.v1.prov", &prov),
        ],
    );
    let registry =
        chartreg_core::content::Registry::from_files(layout.files).expect("swapped layout loads");
    let server = common::InProcess::start(registry);

    let out_dir = tempfile::tempdir().expect("temp dir");
    let keyring = root().join("tests/fixtures/sample-signing-pubring.gpg");
    let reference = format!("oci://{}/charts/motd", server.host());
    let out = helm.fails(&[
        "pull",
        "--verify",
        "--keyring",
        str_path(&keyring),
        &reference,
        "--version",
        "1.0.0",
        "--plain-http",
        "-d",
        str_path(out_dir.path()),
    ]);
    assert!(
        text(&out).contains("sha256 sum does not match"),
        "{}: --verify of a swapped chart should fail on its hash: {}",
        helm.name,
        describe(&out)
    );
}

/// Unknown repositories and unknown versions fail the pull, and write nothing.
#[rstest]
#[case::unknown_chart("charts/nope", &["--version", "1.0.0"])]
#[case::unknown_chart_latest("charts/nope", &[])]
#[case::unknown_version("charts/hello", &["--version", "9.9.9"])]
#[case::no_version_in_range("charts/hello", &["--version", "^2.0"])]
fn helm_pull_of_what_is_not_there_fails(
    #[values("helm3", "helm4")] helm: &'static str,
    #[case] repo: &str,
    #[case] version_args: &[&str],
) {
    let Some(helm) = Helm::new(helm) else { return };
    let server = Process::start();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let reference = format!("oci://{}/{repo}", server.host());
    let mut args = vec![
        "pull",
        &reference,
        "--plain-http",
        "-d",
        str_path(out_dir.path()),
    ];
    args.extend_from_slice(version_args);
    helm.fails(&args);
    assert_eq!(
        common::file_names(out_dir.path()),
        Vec::<String>::new(),
        "{} {}: a failed pull wrote files",
        helm.name,
        args.join(" ")
    );
}

/// `(mediaType, digest, size)` of a descriptor in a manifest.
fn descriptor(d: &Value) -> (String, String, u64) {
    (
        d["mediaType"].as_str().unwrap_or_default().to_owned(),
        d["digest"].as_str().unwrap_or_default().to_owned(),
        d["size"].as_u64().unwrap_or_default(),
    )
}

/// The annotations of a manifest, without the creation time.
fn annotations_but_created(manifest: &Value) -> serde_json::Map<String, Value> {
    let mut a = manifest["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    a.remove("org.opencontainers.image.created");
    a
}

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// The chart's name and version from a package file name (`hello-1.0.1+build.7.tgz`).
fn name_and_version(package: &str) -> (&str, &str) {
    let stem = package.strip_suffix(".tgz").expect("a .tgz");
    let split = stem
        .char_indices()
        .find(|&(i, c)| c == '-' && stem[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
        .map(|(i, _)| i)
        .expect("NAME-VERSION.tgz");
    (&stem[..split], &stem[split + 1..])
}

/// `helm push` of every sample (motd with its provenance beside it) into CNCF distribution
/// stores manifests whose config and layer descriptors, layer order and annotations (all but
/// the creation time) equal those chartreg serves for the same tags; the tag lists agree too.
#[rstest]
fn helm_push_to_distribution_matches_what_chartreg_serves(
    #[values("helm3", "helm4")] helm: &'static str,
) {
    let Some(helm) = Helm::new(helm) else { return };
    let Some(curl) = common::tool("curl") else {
        return;
    };
    let Some(distribution) = Distribution::start() else {
        return;
    };
    let server = Process::start();

    let mut packages: Vec<String> = common::file_names(&charts_dir())
        .into_iter()
        .filter(|f| f.ends_with(".tgz"))
        .collect();
    packages.sort();
    assert_eq!(packages.len(), 6, "the samples in charts/: {packages:?}");

    let target = format!("oci://{}/charts", distribution.host());
    for package in &packages {
        let path = charts_dir().join(package);
        let out = helm.ok(&["push", str_path(&path), &target, "--plain-http"]);
        let (name, version) = name_and_version(package);
        let tag = version.replace('+', "_");
        let pushed = format!("Pushed: {}/charts/{name}:{tag}", distribution.host());
        assert!(
            text(&out).contains(&pushed),
            "{}: helm push {package}: expected `{pushed}`: {}",
            helm.name,
            describe(&out)
        );
    }

    let accept = [("Accept", OCI_MANIFEST)];
    for package in &packages {
        let (name, version) = name_and_version(package);
        let tag = version.replace('+', "_");
        let context = format!("{}: {package} (charts/{name}:{tag})", helm.name);
        let path = format!("/v2/charts/{name}/manifests/{tag}");

        let pushed = common::curl(&curl, "GET", &(distribution.url() + &path), &accept);
        assert_eq!(pushed.status, 200, "{context}: distribution: {pushed:?}");
        let served = common::curl(&curl, "GET", &(server.url() + &path), &accept);
        assert_eq!(
            served.status,
            200,
            "{context}: chartreg: {}",
            String::from_utf8_lossy(&served.body)
        );
        assert_eq!(
            served.header("content-type"),
            Some(OCI_MANIFEST),
            "{context}: chartreg's manifest Content-Type"
        );
        let served_digest = common::sha256(&served.body);
        assert_eq!(
            served.header("docker-content-digest"),
            Some(served_digest.as_str()),
            "{context}: chartreg's Docker-Content-Digest is not the digest of its body"
        );
        assert_eq!(
            served_digest,
            assets_tag_digest(&format!("charts/{name}"), &tag),
            "{context}: chartreg serves another manifest than assets/ tags"
        );

        let pushed: Value = serde_json::from_slice(&pushed.body).expect("distribution JSON");
        let served: Value = serde_json::from_slice(&served.body).expect("chartreg JSON");
        assert_eq!(
            descriptor(&served["config"]),
            descriptor(&pushed["config"]),
            "{context}: config descriptors differ (chartreg left, helm push right)"
        );
        let layers = |m: &Value| -> Vec<_> {
            m["layers"]
                .as_array()
                .map(|l| l.iter().map(descriptor).collect())
                .unwrap_or_default()
        };
        assert_eq!(
            layers(&served),
            layers(&pushed),
            "{context}: layer descriptors differ (chartreg left, helm push right)"
        );
        let chart_layer = layers(&served)
            .into_iter()
            .find(|(t, _, _)| t == "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
            .unwrap_or_else(|| panic!("{context}: no chart layer"));
        let package_bytes = common::read(&charts_dir().join(package));
        assert_eq!(
            (chart_layer.1, chart_layer.2),
            (common::sha256(&package_bytes), package_bytes.len() as u64),
            "{context}: the chart layer is not the package"
        );
        assert_eq!(
            annotations_but_created(&served),
            annotations_but_created(&pushed),
            "{context}: manifest annotations differ (chartreg left, helm push right)"
        );
        assert_eq!(served["schemaVersion"], 2, "{context}");
    }

    for name in ["hello", "motd"] {
        let path = format!("/v2/charts/{name}/tags/list");
        let tags = |url: String| -> Vec<String> {
            let r = common::curl(&curl, "GET", &url, &[]);
            assert_eq!(r.status, 200, "{}: GET {url}: {r:?}", helm.name);
            let list: Value = serde_json::from_slice(&r.body).expect("tags JSON");
            serde_json::from_value(list["tags"].clone()).expect("tags are strings")
        };
        // Distribution lists tags in storage order; chartreg sorts them by bytes.
        let mut pushed = tags(distribution.url() + &path);
        pushed.sort();
        assert_eq!(
            tags(server.url() + &path),
            pushed,
            "{}: tags of charts/{name} differ (chartreg left, distribution sorted right)",
            helm.name
        );
    }
}
