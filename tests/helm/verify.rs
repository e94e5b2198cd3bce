//! `helm pull --verify`: accepted with the signing key, refused without it or for a swapped chart.

use super::*;

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
