//! `verify:` in the content file, for charts: pack checks each chart's `.prov` against the
//! policy's keyring, and Helm (`helm verify`, 3 and 4) agrees on every case. Signatures come
//! from real Helm: the committed sample (`motd`) and a chart signed here by `helm package
//! --sign` with a key gpg makes; a second key, a `.prov` edited after signing, an unsigned
//! chart; `require` refuses naming each, `warn` packs with warnings.

use super::*;
use common::GpgKey;

fn make_key(dir: &Path, name: &str, uid: &str) -> GpgKey {
    GpgKey::make(dir, name, uid).expect("gpg")
}

/// `chartreg-build pack` of `content` (written in `dir`); its output.
fn pack(dir: &Path, content: &str) -> Output {
    std::fs::write(dir.join("content.yaml"), content).expect("content file");
    common::output_of(
        Command::new(common::chartreg_build_bin())
            .args(["pack", "--config"])
            .arg(dir.join("content.yaml"))
            .arg("--out")
            .arg(dir.join("assets")),
        "chartreg-build pack",
    )
}

/// Whether `helm verify --keyring KEYRING PACKAGE` accepts, and the fingerprint it names.
fn helm_verify(helm: &Helm, keyring: &Path, package: &Path) -> Option<String> {
    let out = helm.run(&["verify", "--keyring", str_path(keyring), str_path(package)]);
    out.status.success().then(|| {
        text(&out)
            .lines()
            .find_map(|l| l.strip_prefix("Using Key With Fingerprint: "))
            .map(str::to_owned)
            .unwrap_or_default()
    })
}

#[test]
fn pack_verifies_charts_as_helm_verify_does() {
    let (Some(helm3), Some(helm4)) = (Helm::new("helm3"), Helm::new("helm4")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let dir = dir.path();
    let charts = dir.join("charts");
    std::fs::create_dir(&charts).expect("charts");
    for f in ["motd-1.0.0.tgz", "motd-1.0.0.tgz.prov", "hello-1.0.0.tgz"] {
        std::fs::copy(charts_dir().join(f), charts.join(f)).expect("copy a sample chart");
    }
    let sample = root().join("tests/fixtures/sample-signing-pubring.gpg");
    std::fs::copy(&sample, dir.join("sample.gpg")).expect("copy keyring");
    let team = make_key(dir, "team", "Chart Team <charts@example.com>");
    let other = make_key(dir, "other", "Someone Else <other@example.com>");
    // A chart signed here by Helm 4 with the team's key.
    let folder = common::chart_folder(dir, "signed", "2.0.0");
    helm4.ok(&[
        "package",
        str_path(&folder),
        "--sign",
        "--key",
        "Chart Team <charts@example.com>",
        "--keyring",
        str_path(&team.secret),
        "-d",
        str_path(&charts),
    ]);
    let signed = charts.join("signed-2.0.0.tgz");
    assert!(charts.join("signed-2.0.0.tgz.prov").is_file());
    // One keyring holding both keys that sign, as a team keeps it.
    let both = dir.join("both.gpg");
    let mut bytes = std::fs::read(&sample).expect("sample keyring");
    bytes.extend(std::fs::read(&team.public).expect("team keyring"));
    std::fs::write(&both, bytes).expect("keyring");

    let policy = |mode: &str, keyring: &Path, require: &str| {
        format!(
            "charts:\n  from: [charts]\nverify:\n  mode: {mode}\n  charts:\n    keyring: {}\n    require: [{require}]\n",
            keyring.display()
        )
    };

    // Both signed charts verify with the keyring of both keys, naming the key Helm names.
    let out = pack(dir, &policy("require", &both, "\"motd\", \"signed\""));
    assert!(out.status.success(), "{}", describe(&out));
    for (package, chart) in [
        (charts.join("motd-1.0.0.tgz"), "motd 1.0.0"),
        (signed.clone(), "signed 2.0.0"),
    ] {
        for helm in [&helm3, &helm4] {
            let fingerprint = helm_verify(helm, &both, &package)
                .unwrap_or_else(|| panic!("{} verify refused {chart}", helm.name));
            assert!(
                text(&out).contains(&format!("verified chart {chart}: key {fingerprint}")),
                "{}: {}",
                helm.name,
                describe(&out)
            );
        }
    }

    // pack records each chart's signer beside the repositories; the content built from the
    // folder checks them again from the embedded bytes (`chartreg verify`), and fails to once
    // the embedded keyring is another key's.
    recheck_charts(&dir.join("assets"), &other.public);

    // Another key's keyring: Helm refuses, and so does pack, naming the rule.
    let out = pack(dir, &policy("require", &other.public, "\"signed\""));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("chart signed 2.0.0: rule charts.require \"signed\": signed by another key"),
        "{err}"
    );
    for helm in [&helm3, &helm4] {
        assert!(
            helm_verify(helm, &other.public, &signed).is_none(),
            "{}",
            helm.name
        );
    }

    // A .prov edited after signing: both refuse.
    let prov = charts.join("signed-2.0.0.tgz.prov");
    let original = std::fs::read_to_string(&prov).expect("prov");
    std::fs::write(
        &prov,
        original.replacen("version: 2.0.0", "version: 2.0.1", 1),
    )
    .expect("edit prov");
    let out = pack(dir, &policy("require", &team.public, "\"signed\""));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("the signature does not match the signed text"),
        "{}",
        describe(&out)
    );
    for helm in [&helm3, &helm4] {
        assert!(
            helm_verify(helm, &team.public, &signed).is_none(),
            "{}",
            helm.name
        );
    }
    std::fs::write(&prov, original).expect("restore prov");

    // Unsigned, required by "*": refused naming it; warn packs, saying the same.
    let out = pack(dir, &policy("require", &both, "\"*\""));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("chart hello 1.0.0: rule charts.require \"*\": no signature"),
        "{}",
        describe(&out)
    );
    let out = pack(dir, &policy("warn", &both, "\"*\""));
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "warning: verify: chart hello 1.0.0: rule charts.require \"*\": no signature"
        ),
        "{}",
        describe(&out)
    );
    // Not required: an unsigned chart packs without a word.
    let out = pack(dir, &policy("require", &both, "\"motd\""));
    assert!(
        out.status.success() && !text(&out).contains("hello"),
        "{}",
        describe(&out)
    );
}

/// The verification record in `out` (what pack wrote for motd 1.0.0 and signed 2.0.0) checked
/// again as `chartreg verify` does; then with `other`'s keyring embedded instead.
fn recheck_charts(out: &Path, other: &Path) {
    use chartreg_core::content::{
        BuildFile, Content, Description, Evidence, Form, HeldFile, VERIFICATION_FILE,
        VerificationFile,
    };
    let content_of = |files: Vec<HeldFile>| {
        let at_build: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
        let facts = Description::of(&at_build).facts().expect("facts");
        Content {
            files,
            facts: facts.into(),
        }
    };
    let files = common::files_in(out);
    let record: VerificationFile = serde_json::from_slice(
        &std::fs::read(out.join(VERIFICATION_FILE)).expect("pack wrote the record"),
    )
    .expect("the record reads");
    for (repository, version) in [("charts/motd", "1.0.0"), ("charts/signed", "2.0.0")] {
        let verified = &record.charts[&repository.parse().unwrap()][version].verified;
        assert!(
            matches!(
                verified.as_slice(),
                [Evidence::Key {
                    form: Form::Prov,
                    ..
                }]
            ),
            "{repository} {version}: {verified:?}"
        );
    }
    let (problems, rechecked) = chartreg::inspect::verify_all(&content_of(files.clone()));
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(rechecked, Some(2));
    let mut swapped = record.clone();
    swapped
        .policy
        .charts
        .as_mut()
        .expect("a charts part")
        .keyring = hex::encode(std::fs::read(other).expect("keyring"));
    let files = files
        .into_iter()
        .map(|f| {
            if f.path.as_ref() == VERIFICATION_FILE {
                HeldFile::new(VERIFICATION_FILE, swapped.to_bytes())
            } else {
                f
            }
        })
        .collect();
    let (problems, _) = chartreg::inspect::verify_all(&content_of(files));
    for chart in ["chart charts/motd 1.0.0: ", "chart charts/signed 2.0.0: "] {
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with(chart) && p.contains("does not verify now")),
            "{chart}: {problems:#?}"
        );
    }
}
