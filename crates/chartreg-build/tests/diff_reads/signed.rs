//! `diff --key` and `diff --policy`: each image's signature is verified first, by the trust
//! crate as fetch and pack verify images. Signed sides are read and name their signer; an
//! unsigned side, one signed by another key, and a server binary (no signature) are refused,
//! naming the side and why; from layouts and from CNCF distribution (the `.sig` tag pulled
//! beside the image).

use std::fs;
use std::path::Path;

use super::common;
use super::support::*;

/// The images: OLD and NEW signed by `key`, NEW unsigned, NEW signed by `other`.
struct Images {
    old: std::path::PathBuf,
    new: std::path::PathBuf,
    unsigned: std::path::PathBuf,
    other: std::path::PathBuf,
    old_bin: std::path::PathBuf,
}

fn images(dir: &Path, key: &Path, other: &Path) -> Images {
    let old = listing(VERSION, &content("old"), &rows(&[("demo", "1.0.0")]));
    let new = listing(VERSION, &content("new"), &rows(&[("demo", "1.1.0")]));
    let images = Images {
        old: dir.join("old-oci"),
        new: dir.join("new-oci"),
        unsigned: dir.join("unsigned-oci"),
        other: dir.join("other-oci"),
        old_bin: install(&dir.join("old-chartreg"), &server_script(&old, None, dir)),
    };
    image(&images.old, "v1", &old, Some(key));
    image(&images.new, "v2", &new, Some(key));
    image(&images.unsigned, "v2", &new, None);
    image(&images.other, "v2", &new, Some(other));
    images
}

/// The fingerprint `image` printed for the key, as `ls` and diff name it.
fn fingerprint(public: &Path) -> String {
    use base64::Engine as _;
    let pem = fs::read_to_string(public).unwrap();
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    content_of_bytes(&der)
}

fn content_of_bytes(data: &[u8]) -> String {
    chartreg_core::oci::Digest::sha256_of(data).to_string()
}

/// Refused: exit 2, the side named, with `words`.
fn refused(out: &std::process::Output, side: &str, words: &[&str]) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(side), "names {side}: {stderr}");
    for w in words {
        assert!(stderr.contains(w), "{w}: {stderr}");
    }
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

#[test]
fn only_sides_signed_by_the_key_or_policy_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let (Some((key, public)), Some((other, _))) = (
        cosign_key(&dir.path().join("key")),
        cosign_key(&dir.path().join("other")),
    ) else {
        return;
    };
    let i = images(dir.path(), &key, &other);
    let signer = format!("key {}", fingerprint(&public));
    let verified = diff(&["--key", s(&public), s(&i.old), s(&i.new)]);
    assert_eq!(
        verified.status.code(),
        Some(1),
        "{}",
        text(&verified.stderr)
    );
    let printed = text(&verified.stdout);
    for line in [
        format!("old: signed by {signer} (.sig)"),
        format!("new: signed by {signer} (.sig)"),
        "+ charts/demo:1.1.0  chart".to_owned(),
    ] {
        assert!(
            printed.lines().any(|l| l.starts_with(&line)),
            "{line}: {printed}"
        );
    }
    let json = diff(&[
        "--format",
        "json",
        "--key",
        s(&public),
        s(&i.old),
        s(&i.new),
    ]);
    let changes: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(changes["new"]["signedBy"][0], format!("{signer} (.sig)"));

    let unsigned = diff(&["--key", s(&public), s(&i.old), s(&i.unsigned)]);
    refused(&unsigned, s(&i.unsigned), &["refused", "no signature"]);
    let wrong = diff(&["--key", s(&public), s(&i.other), s(&i.new)]);
    refused(&wrong, s(&i.other), &["refused", "signed by another key"]);
    let binary = diff(&["--key", s(&public), s(&i.old_bin), s(&i.new)]);
    refused(
        &binary,
        s(&i.old_bin),
        &["a server binary carries no signature"],
    );
    // Unverified, the same images are read (the user asked for no signature).
    let plain = diff(&[s(&i.other), s(&i.unsigned)]);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));

    // A content file's policy, as fetch and pack read it: its images' keys.
    let policy = dir.path().join("content.yaml");
    fs::write(
        &policy,
        format!("verify:\n  images:\n    keys: [{}]\n", s(&public)),
    )
    .unwrap();
    let by_policy = diff(&["--policy", s(&policy), s(&i.old), s(&i.new)]);
    assert_eq!(
        by_policy.status.code(),
        Some(1),
        "{}",
        text(&by_policy.stderr)
    );
    assert!(text(&by_policy.stdout).contains(&signer));
    let refused_by_policy = diff(&["--policy", s(&policy), s(&i.old), s(&i.unsigned)]);
    refused(&refused_by_policy, s(&i.unsigned), &["no signature"]);

    // From a registry: the signature is the `.sig` tag beside the image.
    let (Some(registry), Some(skopeo)) = (common::Distribution::start(), common::tool("skopeo"))
    else {
        return;
    };
    let at = format!("{}/team/chartreg", registry.addr);
    push(&skopeo, &i.new, "v2", &at);
    let unsigned_at = format!("{}/team/unsigned", registry.addr);
    push(&skopeo, &i.unsigned, "v2", &unsigned_at);
    let pulled = diff(&["--key", s(&public), s(&i.old), &format!("{at}:v2")]);
    assert_eq!(pulled.status.code(), Some(1), "{}", text(&pulled.stderr));
    assert!(text(&pulled.stdout).contains(&format!("new: signed by {signer}")));
    let digest = tagged(&i.new, "v2");
    let by_digest = diff(&["--key", s(&public), s(&i.old), &format!("{at}@{digest}")]);
    assert_eq!(
        by_digest.status.code(),
        Some(1),
        "{}",
        text(&by_digest.stderr)
    );
    let side = format!("{unsigned_at}:v2");
    let unsigned = diff(&["--key", s(&public), s(&i.old), &side]);
    refused(
        &unsigned,
        &side,
        &["no signature", "no signature taken from"],
    );
    // An index of two platforms, signed: this machine's platform is taken (a new index of
    // it), and the signature over the index upstream serves still verifies it.
    let new = listing(VERSION, &content("new"), &rows(&[("demo", "1.1.0")]));
    let multi = dir.path().join("multi-oci");
    image_for(&multi, "v3", &new, Some(&key), &["linux/arm64"]);
    let multi_at = format!("{}/team/multi", registry.addr);
    push(&skopeo, &multi, "v3", &multi_at);
    let both = diff(&["--key", s(&public), s(&multi), &format!("{multi_at}:v3")]);
    assert_eq!(both.status.code(), Some(0), "{}", text(&both.stderr));
    assert!(text(&both.stdout).contains(&format!("new: signed by {signer}")));
    let other_multi = dir.path().join("other-multi-oci");
    image_for(&other_multi, "v3", &new, Some(&other), &["linux/arm64"]);
    let other_at = format!("{}/team/other-multi", registry.addr);
    push(&skopeo, &other_multi, "v3", &other_at);
    let side = format!("{other_at}:v3");
    let wrong = diff(&["--key", s(&public), s(&i.new), &side]);
    refused(&wrong, &side, &["signed by another key"]);
}
