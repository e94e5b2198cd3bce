//! `verify.images` at pack: images' cosign signatures, made by an independent signer (Python's
//! cryptography, `tests/fixtures/signing/sign.py`) in both forms (the legacy `.sig` tag and the
//! Sigstore bundle referrer; key and keyless, under a test trusted root), checked against the
//! content file's policy. Each case is packed alone under `mode: require`: a valid signature is
//! printed with its key or identity and every signature byte is packed as it came; every other
//! case is refused naming the image, its digest, the rule and why, and nothing is written.
//! Then `warn`, artifacts no pattern names, and policies that cannot be read.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::*;

/// The fixtures, made once per test process (`None`: the signer is missing, outside CI).
fn fixtures() -> Option<&'static Path> {
    static MADE: OnceLock<Option<PathBuf>> = OnceLock::new();
    MADE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        common::signing_fixtures(&dir).map(|()| dir)
    })
    .as_deref()
}

/// The image digest `sign.py` recorded for `case`.
fn image_digest(fixtures: &Path, case: &str) -> String {
    let cases: serde_json::Value =
        serde_json::from_slice(&fs::read(fixtures.join("cases.json")).unwrap()).unwrap();
    cases
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == case)
        .unwrap_or_else(|| panic!("cases.json has no {case}"))["image_digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

const IDENTITY: &str = "https://github.com/example/app/.github/workflows/release.yaml@refs/tags/*";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

/// A content file in `dir` serving each of `cases`' layouts as `quay.io/example/<case>`, under
/// the `verify:` section `images` (keys, roots and keyless rules of the fixtures).
fn content_file(dir: &Path, fixtures: &Path, cases: &[&str], mode: &str, images: &str) -> PathBuf {
    let keys = fixtures.join("keys");
    let mut text = String::from("layouts:\n");
    for case in cases {
        text.push_str(&format!(
            "  - from: {}\n    repository: quay.io/example/{case}\n",
            fixtures.join("layouts").join(case).display()
        ));
    }
    text.push_str(&format!(
        "verify:\n  mode: {mode}\n  images:\n{}",
        images.replace("KEYS", keys.to_str().unwrap())
    ));
    let path = dir.join("content.yaml");
    fs::write(&path, text).unwrap();
    path
}

/// The policy the cases are written for: the test key, the test root for key-signed bundles'
/// log entries, the release workflow keylessly, and every quay.io repository required.
fn full_policy() -> String {
    format!(
        "    keys: [KEYS/cosign.pub]\n    trustedRoot: KEYS/trusted_root.json\n    keyless:\n      - {{identity: \"{IDENTITY}\", issuer: \"{ISSUER}\", trustedRoot: KEYS/trusted_root.json}}\n    require: [\"quay.io/*\"]\n"
    )
}

fn pack_config(config: &Path, out: &Path) -> Output {
    pack(&[
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

/// Every blob of the input layout is in the packed repository, byte for byte.
fn assert_packed_as_came(fixtures: &Path, case: &str, out: &Path) {
    let blobs = fixtures.join("layouts").join(case).join("blobs/sha256");
    let packed = out.join("quay.io/example").join(case).join("blobs/sha256");
    let mut n = 0;
    for entry in fs::read_dir(&blobs).unwrap() {
        let entry = entry.unwrap();
        let got = fs::read(packed.join(entry.file_name()))
            .unwrap_or_else(|e| panic!("{case}: {:?} not packed: {e}", entry.file_name()));
        assert_eq!(
            got,
            fs::read(entry.path()).unwrap(),
            "{case}: {:?}",
            entry.file_name()
        );
        n += 1;
    }
    assert!(
        n >= 4,
        "{case}: an image and its signature are at least 4 blobs, got {n}"
    );
}

#[rstest]
#[case::sig_valid("sig-valid", Ok("key sha256:"), ".sig")]
#[case::bundle_key_valid("bundle-key-valid", Ok("key sha256:"), "bundle")]
#[case::bundle_keyless_valid(
    "bundle-keyless-valid",
    Ok(
        "identity https://github.com/example/app/.github/workflows/release.yaml@refs/tags/v1.0.0 (issuer https://token.actions.githubusercontent.com"
    ),
    "bundle"
)]
#[case::unsigned("unsigned", Err("no signature"), "")]
#[case::attestation_only("attestation-only", Err("no signature"), "")]
#[case::sig_other_key("sig-other-key", Err("verifies with none of verify.images.keys"), "")]
#[case::sig_tampered("sig-tampered", Err("verifies with none of verify.images.keys"), "")]
#[case::sig_other_digest(
    "sig-other-digest",
    Err("digest mismatch: the signature is over sha256:"),
    ""
)]
#[case::sig_malformed(
    "sig-malformed",
    Err("malformed signature: the .sig signature is not base64"),
    ""
)]
#[case::bundle_key_other_key("bundle-key-other-key", Err("signed by another key (hint "), "")]
#[case::bundle_key_tampered(
    "bundle-key-tampered",
    Err("the signature does not verify with key sha256:"),
    ""
)]
#[case::bundle_key_other_digest(
    "bundle-key-other-digest",
    Err("digest mismatch: the signature is over sha256:"),
    ""
)]
#[case::bundle_key_bad_inclusion(
    "bundle-key-bad-inclusion",
    Err("transparency log: invalid inclusion proof"),
    ""
)]
#[case::bundle_key_no_tlog(
    "bundle-key-no-tlog",
    Err("transparency log: the bundle has no log entry"),
    ""
)]
#[case::keyless_wrong_identity(
    "bundle-keyless-wrong-identity",
    Err(
        "identity mismatch: the certificate names https://github.com/example/app/.github/workflows/nightly.yaml@refs/heads/main, the policy wants https://github.com/example/app/.github/workflows/release.yaml@refs/tags/*"
    ),
    ""
)]
#[case::keyless_wrong_issuer(
    "bundle-keyless-wrong-issuer",
    Err(
        "issuer mismatch: the certificate names https://accounts.google.com, the policy wants https://token.actions.githubusercontent.com"
    ),
    ""
)]
#[case::keyless_expired(
    "bundle-keyless-expired",
    Err("certificate: certificate chain is invalid"),
    ""
)]
#[case::keyless_other_ca("bundle-keyless-other-ca", Err("UnknownIssuer"), "")]
#[case::keyless_bad_tlog(
    "bundle-keyless-bad-tlog",
    Err("transparency log: invalid inclusion promise"),
    ""
)]
#[case::keyless_no_sct(
    "bundle-keyless-no-sct",
    Err("certificate is missing SCT extension"),
    ""
)]
fn each_case_alone(#[case] case: &str, #[case] expect: Result<&str, &str>, #[case] form: &str) {
    let Some(fixtures) = fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = content_file(dir.path(), fixtures, &[case], "require", &full_policy());
    let out = dir.path().join("assets");
    let done = pack_config(&config, &out);
    let (stdout, stderr) = (text(&done.stdout), text(&done.stderr));
    let image = format!("quay.io/example/{case}:v1");
    match expect {
        Ok(signer) => {
            assert!(done.status.success(), "{case}: {stderr}");
            let line = stdout
                .lines()
                .find(|l| l.contains(&format!("verified image {image}: ")))
                .unwrap_or_else(|| panic!("{case}: no verified line in {stdout}"));
            assert!(line.contains(signer), "{case}: {line}");
            assert!(line.ends_with(&format!("{form})")), "{case}: {line}");
            assert_packed_as_came(fixtures, case, &out);
        }
        Err(reason) => {
            assert!(!done.status.success(), "{case} was packed: {stdout}");
            let digest = image_digest(fixtures, case);
            let want = format!("{image} ({digest}): rule images.require \"quay.io/*\": ");
            let line = stderr
                .lines()
                .find(|l| l.contains(&want))
                .unwrap_or_else(|| panic!("{case}: no line `{want}` in {stderr}"));
            assert!(line.contains(reason), "{case}: `{reason}` not in {line}");
            assert!(stderr.contains(config.to_str().unwrap()), "{stderr}");
            assert!(
                !out.exists(),
                "{case}: a refused pack wrote {}",
                out.display()
            );
        }
    }
}

/// `mode: warn`: every case in one run; the failures are warnings with the same lines, the run
/// packs everything, and the valid ones are printed as verified.
#[test]
fn warn_packs_and_says_why() {
    let Some(fixtures) = fixtures() else { return };
    let cases = [
        "sig-valid",
        "bundle-keyless-valid",
        "unsigned",
        "sig-other-key",
        "bundle-key-other-digest",
        "bundle-keyless-wrong-identity",
    ];
    let dir = tempfile::tempdir().unwrap();
    let config = content_file(dir.path(), fixtures, &cases, "warn", &full_policy());
    let out = dir.path().join("assets");
    let done = pack_config(&config, &out);
    let (stdout, stderr) = (text(&done.stdout), text(&done.stderr));
    assert!(done.status.success(), "{stderr}");
    let all = format!("{stdout}{stderr}");
    for case in &cases[2..] {
        let want = format!("verify: image quay.io/example/{case}:v1 (");
        assert!(all.contains(&want), "no warning for {case}: {all}");
        assert!(
            out.join("quay.io/example").join(case).is_dir(),
            "{case} not packed"
        );
    }
    for case in &cases[..2] {
        assert!(
            stdout.contains(&format!("verified image quay.io/example/{case}:v1: ")),
            "{stdout}"
        );
    }
}

/// No pattern names the repositories: unsigned images pack quietly, a signature that fails is
/// a warning ("signed, not required"), and a valid one is still reported.
#[test]
fn not_required_checks_what_is_signed() {
    let Some(fixtures) = fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let policy = full_policy().replace("[\"quay.io/*\"]", "[\"registry.k8s.io/*\"]");
    let config = content_file(
        dir.path(),
        fixtures,
        &["sig-valid", "unsigned", "sig-tampered"],
        "require",
        &policy,
    );
    let done = pack_config(&config, &dir.path().join("assets"));
    let (stdout, stderr) = (text(&done.stdout), text(&done.stderr));
    assert!(done.status.success(), "{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("verified image quay.io/example/sig-valid:v1: key sha256:"),
        "{all}"
    );
    assert!(!all.contains("image quay.io/example/unsigned:v1"), "{all}");
    assert!(
        all.contains("image quay.io/example/sig-tampered:v1 (")
            && all.contains("signed, not required, and the .sig signature verifies with none"),
        "{all}"
    );
}

/// Without `images.trustedRoot`, a key-signed bundle's signature is checked with the key and its
/// log entry is not: a bundle whose inclusion proof is wrong verifies, a changed one does not,
/// and one with no log entry at all is refused for that.
#[test]
fn key_bundles_without_a_root() {
    let Some(fixtures) = fixtures() else { return };
    let policy = "    keys: [KEYS/cosign.pub]\n    require: [\"*\"]\n";
    for (case, refused) in [
        ("bundle-key-valid", None),
        ("bundle-key-bad-inclusion", None),
        (
            "bundle-key-tampered",
            Some("the signature does not verify with key"),
        ),
        (
            "bundle-key-no-tlog",
            Some("transparency log: the bundle has no log entry"),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = content_file(dir.path(), fixtures, &[case], "require", policy);
        let done = pack_config(&config, &dir.path().join("assets"));
        let stderr = text(&done.stderr);
        match refused {
            None => assert!(done.status.success(), "{case}: {stderr}"),
            Some(why) => {
                assert!(!done.status.success(), "{case} was packed");
                assert!(stderr.contains(why), "{case}: `{why}` not in {stderr}");
            }
        }
    }
}

/// A policy that cannot be read is refused, naming the file: a missing key, a key that is not
/// PEM, a trusted root that is not one, an unknown key in the section.
#[test]
fn unreadable_policies_name_the_file() {
    let Some(fixtures) = fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    fs::write(&junk, "not a key\n").unwrap();
    let junk = junk.to_str().unwrap();
    for (policy, want) in [
        (
            "    keys: [KEYS/missing.pub]\n".to_owned(),
            "cannot read cosign key".to_owned(),
        ),
        (
            format!("    keys: [{junk}]\n"),
            format!("{junk} is not a PEM public key"),
        ),
        (
            format!("    keyless:\n      - {{identity: x, issuer: y, trustedRoot: {junk}}}\n"),
            format!("cannot use the trusted root {junk}"),
        ),
        (
            "    keyz: [KEYS/cosign.pub]\n".to_owned(),
            "unknown field `keyz`".to_owned(),
        ),
    ] {
        let config = content_file(dir.path(), fixtures, &["sig-valid"], "require", &policy);
        let done = pack_config(&config, &dir.path().join("assets"));
        let stderr = text(&done.stderr);
        assert!(!done.status.success(), "{policy}");
        assert!(stderr.contains(&want), "`{want}` not in {stderr}");
    }
}

/// pack writes what verified, with the policy's material, beside the repositories; the server
/// shows each tag's record and `chartreg verify` checks the signatures again from the embedded
/// bytes; a record another key would have to satisfy is a problem naming the image.
#[test]
fn the_record_is_embedded_and_checked_again() {
    use chartreg_core::content::{Evidence, Form, Registry, VERIFICATION_FILE, VerificationFile};
    let Some(fixtures) = fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        "sig-valid",
        "bundle-key-valid",
        "bundle-keyless-valid",
        "unsigned",
    ];
    let policy = full_policy().replace("[\"quay.io/*\"]", "[\"quay.io/example/*-valid\"]");
    let config = content_file(dir.path(), fixtures, &cases, "require", &policy);
    let out = dir.path().join("assets");
    let done = pack_config(&config, &out);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let record: VerificationFile =
        serde_json::from_slice(&fs::read(out.join(VERIFICATION_FILE)).unwrap()).unwrap();
    let images = record.policy.images.as_ref().unwrap();
    assert_eq!(
        images.keys,
        [fs::read_to_string(fixtures.join("keys/cosign.pub")).unwrap()]
    );
    assert_eq!(images.keyless.len(), 1);
    let key = {
        use sha2::Digest as _;
        let pem = fs::read_to_string(fixtures.join("keys/cosign.pub")).unwrap();
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(&der)))
    };
    let expect = [
        (
            "sig-valid",
            Evidence::Key {
                key: key.clone(),
                subkey: None,
                form: Form::Sig,
            },
        ),
        (
            "bundle-key-valid",
            Evidence::Key {
                key,
                subkey: None,
                form: Form::Bundle,
            },
        ),
        (
            "bundle-keyless-valid",
            Evidence::Identity {
                identity: IDENTITY.replace('*', "v1.0.0"),
                issuer: ISSUER.into(),
                form: Form::Bundle,
            },
        ),
    ];
    for (case, by) in &expect {
        let repository = format!("quay.io/example/{case}");
        let tags = &record.images[&repository.parse().unwrap()];
        assert_eq!(tags["v1"].verified, std::slice::from_ref(by), "{case}");
        assert_eq!(tags["v1"].digest.to_string(), image_digest(fixtures, case));
    }
    assert!(
        !record
            .images
            .keys()
            .any(|r| r.as_str().ends_with("unsigned")),
        "an unsigned image no rule names has no record"
    );
    // Served: each tag's record; verify: every signature checked again.
    let content = common::embedded(&out);
    let registry = Registry::from_files(content.files.clone()).unwrap();
    assert_eq!(
        registry
            .image_verification("quay.io/example/sig-valid", "v1")
            .map(|r| r.verified.clone()),
        Some(vec![expect[0].1.clone()])
    );
    assert!(
        registry
            .image_verification("quay.io/example/unsigned", "v1")
            .is_none()
    );
    let (problems, rechecked) = chartreg::inspect::verify_all(&content);
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(rechecked, Some(3));
    // The embedded key swapped for another: the .sig and key bundle no longer verify.
    let other = fs::read_to_string(fixtures.join("keys/other.pub")).unwrap();
    let mut swapped = record.clone();
    swapped.policy.images.as_mut().unwrap().keys = vec![other];
    let mut files = content.files.clone();
    for f in &mut files {
        if f.path.as_ref() == VERIFICATION_FILE {
            *f = HeldFile::new(VERIFICATION_FILE, swapped.to_bytes());
        }
    }
    let at_build: Vec<_> = files
        .iter()
        .map(chartreg_core::content::BuildFile::from)
        .collect();
    let facts = chartreg_core::content::Description::of(&at_build)
        .facts()
        .unwrap();
    let (problems, _) = chartreg::inspect::verify_all(&chartreg_core::content::Content {
        files,
        facts: facts.into(),
    });
    for case in ["sig-valid", "bundle-key-valid"] {
        assert!(
            problems.iter().any(|p| p.starts_with(&format!(
                "image quay.io/example/{case}:v1: does not verify now"
            ))),
            "{case}: {problems:#?}"
        );
    }
    assert_eq!(problems.len(), 2, "{problems:#?}");
}

/// Content files packed into one folder share its `verification.json`: a run keeps the records
/// of what earlier runs packed and it leaves in place when the policies are the same, refuses
/// (naming them, writing nothing) when another policy would have to vouch for them, drops the
/// records of what it packs without a policy, and the file goes with its last record. A
/// repository named as the file is refused.
#[test]
fn one_folder_keeps_each_runs_records_under_one_policy() {
    use chartreg_core::content::{VERIFICATION_FILE, VerificationFile};
    let Some(fixtures) = fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("assets");
    let file = out.join(VERIFICATION_FILE);
    // One content file per case, in its own folder, under `images` (None: no `verify:`).
    let config = |case: &str, images: Option<&str>| {
        let at = dir.path().join(case);
        fs::create_dir_all(&at).unwrap();
        let path = content_file(&at, fixtures, &[case], "require", images.unwrap_or(""));
        if images.is_none() {
            let text = fs::read_to_string(&path).unwrap();
            fs::write(&path, &text[..text.find("verify:").unwrap()]).unwrap();
        }
        path
    };
    let recorded = || -> Vec<String> {
        let record: VerificationFile = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
        assert!(record.charts.is_empty());
        record
            .images
            .keys()
            .map(|r| r.as_str().to_owned())
            .collect()
    };
    let policy = full_policy();
    let a = config("sig-valid", Some(&policy));
    let b = config("bundle-key-valid", Some(&policy));
    for config in [&a, &b] {
        let done = pack_config(config, &out);
        assert!(done.status.success(), "{}", text(&done.stderr));
    }
    assert_eq!(
        recorded(),
        [
            "quay.io/example/bundle-key-valid",
            "quay.io/example/sig-valid"
        ]
    );
    // Each run's check agrees with the folder: neither run takes the other's records away.
    let check = |config: &Path| {
        pack(&[
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--check",
        ])
    };
    for config in [&a, &b] {
        let done = check(config);
        assert!(done.status.success(), "{}", text(&done.stderr));
    }

    // Another policy (no root for key-signed bundles' log entries): refused, nothing written.
    let other_policy = policy.replace("    trustedRoot: KEYS/trusted_root.json\n", "");
    assert_ne!(other_policy, policy);
    let c = config("bundle-keyless-valid", Some(&other_policy));
    let before = fs::read(&file).unwrap();
    let done = pack_config(&c, &out);
    let stderr = text(&done.stderr);
    assert!(!done.status.success(), "packed under another policy");
    assert!(
        stderr.contains(&format!(
            "{}: quay.io/example/bundle-key-valid, quay.io/example/sig-valid verified against another policy",
            file.display()
        )),
        "{stderr}"
    );
    assert_eq!(fs::read(&file).unwrap(), before);
    assert!(!out.join("quay.io/example/bundle-keyless-valid").exists());
    // The same policy: its record joins the others.
    let c = config("bundle-keyless-valid", Some(&policy));
    let done = pack_config(&c, &out);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(recorded().len(), 3);

    // Without a policy a run's own records go (not verified now); the others stay.
    for case in ["sig-valid", "bundle-keyless-valid"] {
        let done = pack_config(&config(case, None), &out);
        assert!(done.status.success(), "{}", text(&done.stderr));
    }
    assert_eq!(recorded(), ["quay.io/example/bundle-key-valid"]);
    let done = check(&b);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let done = pack_config(&config("bundle-key-valid", None), &out);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert!(!file.exists(), "the last record went, and the file with it");

    // A repository named as the file, with a policy or without.
    let named = dir.path().join("named.yaml");
    let a = config("sig-valid", Some(&policy));
    let text_of = fs::read_to_string(&a).unwrap().replace(
        "repository: quay.io/example/sig-valid",
        &format!("repository: {VERIFICATION_FILE}"),
    );
    for text_of in [
        text_of.clone(),
        text_of[..text_of.find("verify:").unwrap()].to_owned(),
    ] {
        fs::write(&named, text_of).unwrap();
        let done = pack_config(&named, &out);
        let stderr = text(&done.stderr);
        assert!(
            !done.status.success(),
            "packed a repository named {VERIFICATION_FILE}"
        );
        assert!(
            stderr.contains(&format!(
                "{}: a repository is named `{VERIFICATION_FILE}`",
                file.display()
            )),
            "{stderr}"
        );
        assert!(!file.exists());
    }
}
