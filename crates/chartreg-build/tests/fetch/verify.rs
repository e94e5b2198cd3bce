//! `fetch --config content.yaml`: the content file's `verify:` policy checks what fetch takes
//! before it takes its place, and the lock records who signed it.
//!
//! Images: the signing fixtures (`tests/fixtures/signing/sign.py`, Python's cryptography, an
//! independent signer) pushed to CNCF distribution 2.8 as upstream: each case's image and its
//! `.sig` tag with skopeo (digests kept), its bundle referrers with oci-client (by digest, and
//! listed in the referrers tag schema's index: distribution 2.8 has no referrers API). Every
//! case is fetched under the policy pack's tests use: the valid ones with their signers in the
//! lock, every other one refused naming the image, its digest, the rule and why, with the lock
//! and the layout an earlier fetch wrote left as they were. Then `warn`; `--locked` checking
//! again with the policy the lock records (and failing, naming the entry, once the signature is
//! pushed again by another key); `--platform`, checked against the index upstream signed at
//! fetch and at pack (a platform relabelled is refused), recorded with upstream's index and
//! checked again by `chartreg verify`; and the signatures served byte for byte after pack
//! (skopeo, oci-client).
//!
//! Charts: packages Helm 4 signed (`helm package --sign`, a key gpg makes here) from a classic
//! repository, an http URL, a path and an OCI registry (`helm push`: a provenance layer), each
//! fetched with its `.prov` and verified, its signer (the key `helm verify` names) in the lock;
//! unsigned and another key's refused, nothing of them placed; `--locked` checking again.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use chartreg_build::lock::{Lock, LockedImage};
use chartreg_core::content::{Evidence, Form, VERIFICATION_FILE, VerificationFile};
use chartreg_core::oci::layout::{ImageIndex, REF_NAME};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use serde_json::Value;

use super::sources::HelmRepo;
use super::*;
use common::{Distribution, GpgKey, Skopeo};

/// The fixtures, made once per test process (`None`: the signer is missing, outside CI).
fn fixtures() -> Option<&'static Path> {
    static MADE: OnceLock<Option<PathBuf>> = OnceLock::new();
    MADE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir").keep();
        common::signing_fixtures(&dir).map(|()| dir)
    })
    .as_deref()
}

/// One case of `cases.json`.
struct Case {
    name: String,
    digest: String,
    verified: bool,
    record: Value,
}

fn cases(fixtures: &Path) -> Vec<Case> {
    let all: Vec<Value> =
        serde_json::from_slice(&common::read(&fixtures.join("cases.json"))).expect("cases.json");
    all.into_iter()
        .map(|c| Case {
            name: c["case"].as_str().expect("case").to_owned(),
            digest: c["image_digest"].as_str().expect("image_digest").to_owned(),
            verified: c["expect"] == "verified",
            record: c,
        })
        .collect()
}

fn case<'c>(cases: &'c [Case], name: &str) -> &'c Case {
    cases
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("cases.json has no {name}"))
}

/// Why each case that is not valid is refused (a part of the line), as pack says it.
fn refusal(case: &str) -> &'static str {
    match case {
        "unsigned" | "attestation-only" => "no signature",
        "sig-other-key" | "sig-tampered" => {
            "the .sig signature verifies with none of verify.images.keys"
        }
        "sig-other-digest" | "bundle-key-other-digest" => {
            "digest mismatch: the signature is over sha256:"
        }
        "sig-malformed" => "malformed signature: the .sig signature is not base64",
        "bundle-key-other-key" => "signed by another key (hint ",
        "bundle-key-tampered" => "the signature does not verify with key sha256:",
        "bundle-key-bad-inclusion" => "transparency log: invalid inclusion proof",
        "bundle-key-no-tlog" => "transparency log: the bundle has no log entry",
        "bundle-keyless-wrong-identity" => {
            "identity mismatch: the certificate names https://github.com/example/app/.github/workflows/nightly.yaml@refs/heads/main, the policy wants https://github.com/example/app/.github/workflows/release.yaml@refs/tags/*"
        }
        "bundle-keyless-wrong-issuer" => {
            "issuer mismatch: the certificate names https://accounts.google.com, the policy wants https://token.actions.githubusercontent.com"
        }
        "bundle-keyless-expired" => "certificate: certificate chain is invalid",
        "bundle-keyless-other-ca" => "UnknownIssuer",
        "bundle-keyless-bad-tlog" => "transparency log: invalid inclusion promise",
        "bundle-keyless-no-sct" => "certificate is missing SCT extension",
        other => panic!("no refusal written down for case {other}: add it"),
    }
}

/// Who signed a valid case, as the lock must record it.
fn signers(case: &Case) -> Vec<Evidence> {
    let key = |form| Evidence::Key {
        key: case.record["key_fingerprint"]
            .as_str()
            .expect("key_fingerprint")
            .to_owned(),
        subkey: None,
        form,
    };
    let mut signers = match case.record["form"].as_str() {
        Some("sig") => vec![key(Form::Sig)],
        Some("sig+bundle") => vec![key(Form::Sig), key(Form::Bundle)],
        Some("bundle") if case.record["signer"] == "key" => vec![key(Form::Bundle)],
        Some("bundle") => vec![Evidence::Identity {
            identity: case.record["identity"]
                .as_str()
                .expect("identity")
                .to_owned(),
            issuer: case.record["issuer"].as_str().expect("issuer").to_owned(),
            form: Form::Bundle,
        }],
        other => panic!("{}: form {other:?}", case.name),
    };
    signers.sort();
    signers
}

const IDENTITY: &str = "https://github.com/example/app/.github/workflows/release.yaml@refs/tags/*";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

/// A content file: the lock, and the policy pack's tests use (the fixtures' key, its trusted
/// root for key-signed bundles' log entries, the release workflow keylessly), requiring the
/// repositories `host`'s `example/...` is served as (`127.0.0.1_PORT/example/*`: the name
/// pack serves, which the patterns match at fetch as at pack).
fn content(fixtures: &Path, host: &str, mode: &str) -> String {
    let keys = fixtures.join("keys");
    let keys = keys.to_str().expect("UTF-8 path");
    format!(
        "lock: fetched/chartreg.lock\nverify:\n  mode: {mode}\n  images:\n    keys: [{keys}/cosign.pub]\n    trustedRoot: {keys}/trusted_root.json\n    keyless:\n      - {{identity: \"{IDENTITY}\", issuer: \"{ISSUER}\", trustedRoot: {keys}/trusted_root.json}}\n    require: [\"{}/example/*\"]\n",
        served_host(host)
    )
}

/// `127.0.0.1:PORT` as pack serves it: `127.0.0.1_PORT`.
fn served_host(host: &str) -> String {
    host.replace(':', "_")
}

/// The images file asking for `cases`' `v1` at `host`.
fn images_file(host: &str, cases: &[&str]) -> String {
    let mut text = format!("\"{host}\":\n  images:\n");
    for case in cases {
        text.push_str(&format!("    example/{case}: [v1]\n"));
    }
    text
}

/// The fixture layout of `case`.
fn layout_of(fixtures: &Path, case: &str) -> PathBuf {
    fixtures.join("layouts").join(case)
}

fn index_of(dir: &Path) -> ImageIndex {
    serde_json::from_slice(&common::read(&dir.join("index.json"))).expect("index.json")
}

/// A blob of the layout `dir`.
fn blob(dir: &Path, digest: &str) -> Vec<u8> {
    common::read(
        &dir.join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:")),
    )
}

/// Pushes `case`'s layout to `host` as `example/<case>`, as upstream holds it: the image and
/// every tag (its `.sig`) with skopeo, digests kept; the untagged referrers (bundles) with
/// oci-client, by digest, each listed in the referrers tag schema's index of its subject.
fn push_case(skopeo: &Skopeo, host: &str, dir: &Path, case: &str) {
    let index = index_of(dir);
    for d in &index.manifests {
        let Some(tag) = d.annotations.get(REF_NAME) else {
            continue;
        };
        skopeo.ok(&[
            "copy",
            "--all",
            "--preserve-digests",
            "--dest-tls-verify=false",
            &format!("oci:{}:{tag}", dir.display()),
            &format!("docker://{host}/example/{case}:{tag}"),
        ]);
    }
    let untagged: Vec<_> = index
        .manifests
        .iter()
        .filter(|d| !d.annotations.contains_key(REF_NAME))
        .cloned()
        .collect();
    if untagged.is_empty() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let _ = rustls::crypto::ring::default_provider().install_default();
    runtime.block_on(async {
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::Http,
            ..ClientConfig::default()
        });
        let at = |r: &str| -> Reference {
            format!("{host}/example/{case}{r}")
                .parse()
                .expect("reference")
        };
        client
            .auth(
                &at(":v1"),
                &RegistryAuth::Anonymous,
                RegistryOperation::Push,
            )
            .await
            .expect("push token");
        let mut by_subject: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for d in untagged {
            let data = blob(dir, d.digest.as_str());
            let manifest: Value = serde_json::from_slice(&data).expect("a manifest");
            let parts = std::iter::once(&manifest["config"])
                .chain(manifest["layers"].as_array().into_iter().flatten());
            for part in parts {
                let digest = part["digest"].as_str().expect("digest");
                client
                    .push_blob(&at(":v1"), blob(dir, digest), digest)
                    .await
                    .expect("push blob");
            }
            client
                .push_manifest_raw(
                    &at(&format!("@{}", d.digest)),
                    data,
                    d.media_type.parse().expect("media type"),
                )
                .await
                .expect("push manifest");
            let subject = manifest["subject"]["digest"]
                .as_str()
                .expect("a referrer's subject")
                .to_owned();
            by_subject.entry(subject).or_default().push(d);
        }
        for (subject, listed) in by_subject {
            let fallback = ImageIndex {
                schema_version: 2,
                media_type: Some("application/vnd.oci.image.index.v1+json".into()),
                artifact_type: None,
                manifests: listed,
                subject: None,
                annotations: Default::default(),
            };
            client
                .push_manifest_raw(
                    &at(&format!(":{}", subject.replace(':', "-"))),
                    serde_json::to_vec(&fallback).expect("index"),
                    "application/vnd.oci.image.index.v1+json"
                        .parse()
                        .expect("media type"),
                )
                .await
                .expect("push the referrers tag schema index");
        }
    });
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let data = common::read(&path);
                files.insert(path.strip_prefix(dir).expect("under dir").to_owned(), data);
            }
        }
    }
    files
}

fn read_lock(work: &Work) -> Lock {
    Lock::read(&work.path("fetched/chartreg.lock"))
        .expect("a lock")
        .expect("the lock is there")
}

fn locked_image<'l>(lock: &'l Lock, host: &str, case: &str) -> &'l LockedImage {
    lock.images
        .get(&format!("{host}/example/{case}:v1"))
        .unwrap_or_else(|| panic!("{case} not in the lock: {lock:?}"))
}

#[test]
fn every_signing_case_is_fetched_with_its_signers_or_refused_by_name() {
    let Some(fixtures) = fixtures() else { return };
    let (Some(registry), Some(skopeo)) = (Distribution::start(), Skopeo::new()) else {
        return;
    };
    let host = registry.host();
    let all = cases(fixtures);
    assert!(all.len() >= 21, "cases.json lost cases: {}", all.len());
    for c in &all {
        push_case(&skopeo, &host, &layout_of(fixtures, &c.name), &c.name);
    }
    let valid: Vec<&str> = all
        .iter()
        .filter(|c| c.verified)
        .map(|c| c.name.as_str())
        .collect();
    let refused: Vec<&str> = all
        .iter()
        .filter(|c| !c.verified)
        .map(|c| c.name.as_str())
        .collect();
    assert!(
        valid.len() >= 4 && refused.len() >= 17,
        "{valid:?} {refused:?}"
    );
    let served = served_host(&host);

    // The valid cases: fetched, each with its signers in the lock and said on stdout.
    let work = Work::new();
    work.write("images.yaml", &images_file(&host, &valid));
    let text = content(fixtures, &host, "require");
    work.write("content.yaml", &text);
    let out = work.fetch_ok(&["--images-file", "images.yaml", "--config", "content.yaml"]);
    let lock = read_lock(&work);
    assert_eq!(lock.lists.policy.as_deref(), Some("../content.yaml"));
    for name in &valid {
        let c = case(&all, name);
        let image = locked_image(&lock, &host, name);
        assert_eq!(image.digest, c.digest, "{name}");
        assert_eq!(image.verified, signers(c), "{name}");
        assert!(
            out.contains(&format!("verified image {served}/example/{name}:v1: ")),
            "{name}: {out}"
        );
    }
    assert!(
        work.lock().contains("    verified:\n    - by: key\n"),
        "{}",
        work.lock()
    );

    // Packed with the same content file (pack checks again) and served: every signature
    // manifest and bundle blob is what sign.py wrote.
    let server = work.serve(&text);
    for name in &valid {
        served_signatures_are_upstreams(&server, &skopeo, fixtures, &served, name);
    }

    // The other cases: fetched first without the policy (a layout and a lock are there), then
    // refused with it, each named with its digest, the rule and why; the lock and the
    // layouts stay as they were.
    let work = Work::new();
    work.write("images.yaml", &images_file(&host, &refused));
    work.write("content.yaml", &text);
    work.fetch_ok(&["--images-file", "images.yaml"]);
    let lock_before = work.lock();
    let images_before = snapshot(&work.path("images"));
    let e = work.fetch_fails(&["--images-file", "images.yaml", "--config", "content.yaml"]);
    for name in &refused {
        let c = case(&all, name);
        let want = format!(
            "image {host}/example/{name}:v1: refused by content.yaml verify: image {served}/example/{name}:v1 ({}): rule images.require \"{served}/example/*\": ",
            c.digest
        );
        let line = e
            .lines()
            .find(|l| l.starts_with(&want))
            .unwrap_or_else(|| panic!("{name}: no line `{want}` in {e}"));
        assert!(
            line.contains(refusal(name)),
            "{name}: `{}` not in {line}",
            refusal(name)
        );
    }
    assert_eq!(work.lock(), lock_before, "a refused fetch wrote the lock");
    assert!(
        snapshot(&work.path("images")) == images_before,
        "a refused fetch changed the layouts"
    );
}

/// `name`'s signatures, pulled from chartreg after fetch and pack, are the fixture's bytes:
/// its `.sig` manifest and payload (skopeo, oci-client), and its bundle referrers' manifests
/// and bundles (the referrers API, oci-client).
fn served_signatures_are_upstreams(
    server: &InProcess,
    skopeo: &Skopeo,
    fixtures: &Path,
    served: &str,
    name: &str,
) {
    let dir = layout_of(fixtures, name);
    let index = index_of(&dir);
    let repository = format!("{served}/example/{name}");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    });
    let at = |r: &str| -> Reference {
        format!("{}/{repository}{r}", server.host())
            .parse()
            .expect("reference")
    };
    let manifest_types = [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
    ];
    let pull_blob = |digest: &str| -> Vec<u8> {
        let mut data = Vec::new();
        runtime
            .block_on(client.pull_blob(&at(":v1"), digest, &mut data))
            .unwrap_or_else(|e| panic!("{name}: pull blob {digest}: {e}"));
        data
    };
    let mut checked = 0;
    for d in &index.manifests {
        let digest = d.digest.to_string();
        let want = blob(&dir, &digest);
        let manifest: Value = serde_json::from_slice(&want).expect("a manifest");
        match d.annotations.get(REF_NAME) {
            Some(tag) if tag.ends_with(".sig") => {
                let out = skopeo.ok(&[
                    "inspect",
                    "--raw",
                    "--tls-verify=false",
                    &format!("docker://{}/{repository}:{tag}", server.host()),
                ]);
                assert!(
                    out.stdout == want,
                    "{name}: {tag} is not sign.py's manifest"
                );
                let (got, _) = runtime
                    .block_on(client.pull_manifest_raw(
                        &at(&format!(":{tag}")),
                        &RegistryAuth::Anonymous,
                        &manifest_types,
                    ))
                    .expect("pull the .sig manifest");
                assert!(got == want, "{name}: {tag} (oci-client)");
                for layer in manifest["layers"].as_array().into_iter().flatten() {
                    let layer = layer["digest"].as_str().expect("digest");
                    assert!(
                        pull_blob(layer) == blob(&dir, layer),
                        "{name}: payload {layer}"
                    );
                }
                checked += 1;
            }
            Some(_) => {}
            None => {
                let subject = manifest["subject"]["digest"].as_str().expect("subject");
                let listed = runtime
                    .block_on(client.pull_referrers(&at(&format!("@{subject}")), None))
                    .unwrap_or_else(|e| panic!("{name}: referrers of {subject}: {e}"));
                assert!(
                    listed.manifests.iter().any(|m| m.digest == digest),
                    "{name}: chartreg does not list {digest} among {subject}'s referrers"
                );
                let (got, _) = runtime
                    .block_on(client.pull_manifest_raw(
                        &at(&format!("@{digest}")),
                        &RegistryAuth::Anonymous,
                        &manifest_types,
                    ))
                    .expect("pull the referrer");
                assert!(got == want, "{name}: referrer {digest}");
                for layer in manifest["layers"].as_array().into_iter().flatten() {
                    let layer = layer["digest"].as_str().expect("digest");
                    assert!(
                        pull_blob(layer) == blob(&dir, layer),
                        "{name}: bundle {layer}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "{name}: no signature checked");
}

#[test]
fn warn_fetches_and_says_why() {
    let Some(fixtures) = fixtures() else { return };
    let (Some(registry), Some(skopeo)) = (Distribution::start(), Skopeo::new()) else {
        return;
    };
    let host = registry.host();
    let served = served_host(&host);
    let all = cases(fixtures);
    let names = [
        "sig-valid",
        "unsigned",
        "sig-other-key",
        "bundle-keyless-wrong-identity",
    ];
    for name in names {
        push_case(&skopeo, &host, &layout_of(fixtures, name), name);
    }
    let work = Work::new();
    work.write("images.yaml", &images_file(&host, &names));
    work.write("content.yaml", &content(fixtures, &host, "warn"));
    let out = work.fetch(&["--images-file", "images.yaml", "--config", "content.yaml"]);
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for name in &names[1..] {
        let want = format!(
            "chartreg-build: warning: verify: image {served}/example/{name}:v1 ({}): rule images.require \"{served}/example/*\": {}",
            case(&all, name).digest,
            refusal(name)
        );
        assert!(
            stderr.lines().any(|l| l.starts_with(&want)),
            "no `{want}` in {stderr}"
        );
    }
    let lock = read_lock(&work);
    assert_eq!(
        locked_image(&lock, &host, "sig-valid").verified,
        signers(case(&all, "sig-valid"))
    );
    for name in &names[1..] {
        assert!(
            locked_image(&lock, &host, name).verified.is_empty(),
            "{name}"
        );
        assert!(
            work.path(&format!(
                "fetched/images/{served}/example/{name}/index.json"
            ))
            .is_file(),
            "{name} not fetched"
        );
    }
}

/// Upstream's `.sig` of sig-valid pushed again under the same tag, signed by another key.
fn resign_sig_valid(skopeo: &Skopeo, fixtures: &Path, all: &[Case], host: &str) {
    let resigned = fixtures.join("resigned/sig-valid");
    let sig_tag = format!(
        "sha256-{}.sig",
        case(all, "sig-valid").digest.trim_start_matches("sha256:")
    );
    skopeo.ok(&[
        "copy",
        "--preserve-digests",
        "--dest-tls-verify=false",
        &format!("oci:{}:{sig_tag}", resigned.display()),
        &format!("docker://{host}/example/sig-valid:{sig_tag}"),
    ]);
}

#[test]
fn locked_fetches_verify_again_and_name_a_signature_pushed_by_someone_else() {
    let Some(fixtures) = fixtures() else { return };
    let (Some(registry), Some(skopeo)) = (Distribution::start(), Skopeo::new()) else {
        return;
    };
    let host = registry.host();
    let served = served_host(&host);
    let all = cases(fixtures);
    let names = ["sig-valid", "bundle-keyless-valid"];
    for name in names {
        push_case(&skopeo, &host, &layout_of(fixtures, name), name);
    }
    let work = Work::new();
    work.write("images.yaml", &images_file(&host, &names));
    work.write("content.yaml", &content(fixtures, &host, "require"));
    work.fetch_ok(&["--images-file", "images.yaml", "--config", "content.yaml"]);
    let lock = work.lock();
    assert!(lock.contains("\n  policy: ../content.yaml\n"), "{lock}");

    // The lock alone: its lists and its policy, checked again.
    let out = work.fetch_ok(&["--locked", "--lock", "fetched/chartreg.lock"]);
    for name in names {
        assert!(
            out.contains(&format!("verified image {served}/example/{name}:v1: ")),
            "{out}"
        );
    }
    assert_eq!(work.lock(), lock);

    // Upstream's `.sig` pushed again under the same tag, signed by another key.
    resign_sig_valid(&skopeo, fixtures, &all, &host);
    let layout = work.path(&format!("fetched/images/{served}/example/sig-valid"));
    let before = snapshot(&layout);
    let key = match &signers(case(&all, "sig-valid"))[0] {
        Evidence::Key { key, .. } => key.clone(),
        other => panic!("{other:?}"),
    };
    let e = work.fetch_fails(&["--locked", "--lock", "fetched/chartreg.lock"]);
    let want = format!(
        "image {host}/example/sig-valid:v1: refused by content.yaml verify: image {served}/example/sig-valid:v1 ("
    );
    let line = e
        .lines()
        .find(|l| l.starts_with(&want))
        .unwrap_or_else(|| panic!("no `{want}` in {e}"));
    assert!(
        line.contains("the .sig signature verifies with none of verify.images.keys")
            && line.ends_with(&format!(
                "(the lock records it verified by key {key} (.sig))"
            )),
        "{line}"
    );
    assert!(
        !e.contains("bundle-keyless-valid:v1: "),
        "only sig-valid changed: {e}"
    );
    assert!(
        snapshot(&layout) == before,
        "a refused --locked fetch changed the layout"
    );
    assert_eq!(work.lock(), lock);

    // The same policy under `warn`: the signature no longer verifying is still an error, as
    // the lock records who signed it.
    work.write("warn.yaml", &content(fixtures, &host, "warn"));
    let e = work.fetch_fails(&[
        "--locked",
        "--lock",
        "fetched/chartreg.lock",
        "--config",
        "warn.yaml",
    ]);
    let want = format!(
        "image {host}/example/sig-valid:v1: the lock records it verified by key {key} (.sig); now it does not verify (image {served}/example/sig-valid:v1 ("
    );
    assert!(
        e.lines().any(|l| l.starts_with(&want)),
        "no `{want}` in {e}"
    );
    assert!(snapshot(&layout) == before);
}

#[test]
fn platforms_are_verified_against_the_index_upstream_signed() {
    let Some(fixtures) = fixtures() else { return };
    let (Some(registry), Some(skopeo)) = (Distribution::start(), Skopeo::new()) else {
        return;
    };
    let host = registry.host();
    let served = served_host(&host);
    let all = cases(fixtures);
    let index_case = case(&all, "index-valid");
    let dir = layout_of(fixtures, "index-valid");
    push_case(&skopeo, &host, &dir, "index-valid");
    // The same index, its signatures not pushed.
    skopeo.ok(&[
        "copy",
        "--all",
        "--preserve-digests",
        "--dest-tls-verify=false",
        &format!("oci:{}:v1", dir.display()),
        &format!("docker://{host}/example/index-unsigned:v1"),
    ]);

    let work = Work::new();
    work.write("images.yaml", &images_file(&host, &["index-valid"]));
    work.write("content.yaml", &content(fixtures, &host, "require"));
    let args = [
        "--images-file",
        "images.yaml",
        "--config",
        "content.yaml",
        "--platform",
        "linux/amd64",
    ];
    let out = work.fetch_ok(&args);
    let lock = read_lock(&work);
    let image = locked_image(&lock, &host, "index-valid");
    assert_ne!(
        image.digest, index_case.digest,
        "the index was not cut down"
    );
    assert_eq!(image.platforms, ["linux/amd64"]);
    assert_eq!(image.upstream.as_deref(), Some(index_case.digest.as_str()));
    assert_eq!(image.verified, signers(index_case));
    assert!(
        out.contains(&format!("verified image {served}/example/index-valid:v1: ")),
        "{out}"
    );
    // The layout: the new index tagged, naming upstream's, whose bytes and signatures (the
    // `.sig` tag, the bundle referrer) are beside it as upstream wrote them.
    let layout = work.path(&format!("fetched/images/{served}/example/index-valid"));
    let fetched = index_of(&layout);
    let tagged = fetched
        .manifests
        .iter()
        .find(|d| d.annotations.get(REF_NAME).map(String::as_str) == Some("v1"))
        .expect("v1");
    assert_eq!(tagged.digest.to_string(), image.digest);
    assert_eq!(
        tagged
            .annotations
            .get("io.chartreg.fetch.upstream-digest")
            .map(String::as_str),
        Some(index_case.digest.as_str())
    );
    assert!(blob(&layout, &index_case.digest) == blob(&dir, &index_case.digest));
    for d in index_of(&dir).manifests.iter().skip(1) {
        let digest = d.digest.to_string();
        assert!(
            fetched.manifests.iter().any(|f| f.digest == d.digest),
            "{digest} not in the layout"
        );
        assert!(blob(&layout, &digest) == blob(&dir, &digest), "{digest}");
    }
    // arm64 was left behind.
    let upstream: Value = serde_json::from_slice(&blob(&dir, &index_case.digest)).expect("index");
    let arm64 = upstream["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .find(|m| m["platform"]["architecture"] == "arm64")
        .expect("arm64")["digest"]
        .as_str()
        .expect("digest")
        .trim_start_matches("sha256:")
        .to_owned();
    assert!(!layout.join("blobs/sha256").join(arm64).exists());
    // Packed under the policy (pack checks the same) and served: the cut index, as the lock
    // pins it, with upstream's signatures byte for byte; the record names upstream's index,
    // and `chartreg verify` checks it again from what the binary would embed.
    let policy = content(fixtures, &host, "require");
    let server = work.serve(&policy);
    let out = skopeo.ok(&[
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{}/{served}/example/index-valid:v1", server.host()),
    ]);
    assert_eq!(common::sha256(&out.stdout), image.digest);
    served_signatures_are_upstreams(&server, &skopeo, fixtures, &served, "index-valid");
    let assets = work.path("assets");
    let record: VerificationFile =
        serde_json::from_slice(&std::fs::read(assets.join(VERIFICATION_FILE)).expect("read"))
            .expect("record");
    let tagged = &record.images[&format!("{served}/example/index-valid")
        .parse()
        .expect("name")]["v1"];
    assert_eq!(tagged.digest.to_string(), image.digest);
    assert_eq!(tagged.verified, signers(index_case));
    let upstream_index = tagged.upstream.as_ref().expect("upstream's index recorded");
    assert_eq!(upstream_index.digest.to_string(), index_case.digest);
    assert!(upstream_index.index.as_bytes() == blob(&dir, &index_case.digest));
    let (problems, rechecked) = chartreg::inspect::verify_all(&common::embedded(&assets));
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(rechecked, Some(1));

    // The cut index relabelled (amd64's manifest said to be arm64's, as upstream does not
    // list it): refused at pack, naming both indexes and the manifest.
    let mut cut: Value = serde_json::from_slice(&blob(&layout, &image.digest)).expect("cut");
    cut["manifests"][0]["platform"]["architecture"] = "arm64".into();
    let manifest = cut["manifests"][0]["digest"]
        .as_str()
        .expect("digest")
        .to_owned();
    let relabelled = serde_json::to_vec(&cut).expect("JSON");
    let relabelled_digest = common::sha256(&relabelled);
    std::fs::write(
        layout
            .join("blobs/sha256")
            .join(relabelled_digest.trim_start_matches("sha256:")),
        &relabelled,
    )
    .expect("write");
    let index_path = layout.join("index.json");
    let mut listed: Value =
        serde_json::from_slice(&std::fs::read(&index_path).expect("read")).expect("index");
    for entry in listed["manifests"].as_array_mut().expect("manifests") {
        if entry["digest"] == image.digest.as_str() {
            entry["digest"] = relabelled_digest.clone().into();
            entry["size"] = relabelled.len().into();
        }
    }
    std::fs::write(&index_path, serde_json::to_vec(&listed).expect("JSON")).expect("write");
    // Packed as a layout (the lock pins the cut index, and would refuse it first).
    let as_layout = work.write(
        "tampered.yaml",
        &policy.replace(
            "lock: fetched/chartreg.lock\n",
            &format!(
                "layouts:\n  - from: {}\n    repository: {served}/example/index-valid\n",
                layout.display()
            ),
        ),
    );
    let packed = common::output_of(
        std::process::Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
            .args(["pack", "--config"])
            .arg(&as_layout)
            .arg("--out")
            .arg(work.path("refused")),
        "chartreg-build pack",
    );
    let e = String::from_utf8_lossy(&packed.stderr);
    let want = format!(
        "image {served}/example/index-valid:v1 ({relabelled_digest}, platforms of upstream's {up}): rule images.require \"{served}/example/*\": the index keeps platforms of upstream's {up}, which does not list {manifest} as it does",
        up = index_case.digest
    );
    assert!(!packed.status.success(), "a relabelled platform was packed");
    assert!(e.contains(&want), "no `{want}` in {e}");
    assert!(!work.path("refused").exists());

    // Unsigned upstream: refused, naming the index upstream serves.
    let work = Work::new();
    work.write("images.yaml", &images_file(&host, &["index-unsigned"]));
    work.write("content.yaml", &content(fixtures, &host, "require"));
    let e = work.fetch_fails(&args);
    let want = format!(
        "image {host}/example/index-unsigned:v1: refused by content.yaml verify: image {served}/example/index-unsigned:v1 ({}, platforms of upstream's {}): rule images.require \"{served}/example/*\": no signature",
        image.digest, index_case.digest
    );
    assert!(e.lines().any(|l| l == want), "no `{want}` in {e}");
    assert!(!work.path("fetched/chartreg.lock").exists());
}

/// A chart folder `name` `version` packaged and signed by Helm 4 with `key` into `out`.
fn signed_package(helm: &Helm, dir: &Path, name: &str, version: &str, key: &GpgKey) -> Vec<u8> {
    let src = tempfile::tempdir_in(dir).expect("temp dir");
    let folder = common::chart_folder(src.path(), name, version);
    let out = tempfile::tempdir_in(dir).expect("temp dir");
    helm.ok(&[
        "package",
        str_path(&folder),
        "--sign",
        "--key",
        "Chart Team <charts@example.com>",
        "--keyring",
        str_path(&key.secret),
        "-d",
        str_path(out.path()),
    ]);
    let file = out.path().join(format!("{name}-{version}.tgz"));
    let prov = common::read(&with_prov(&file));
    let data = common::read(&file);
    std::fs::write(dir.join(format!("{name}-{version}.tgz.prov")), prov).expect("write .prov");
    data
}

fn with_prov(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.prov", path.display()))
}

#[test]
fn charts_helm_signed_are_fetched_with_their_prov_and_verified() {
    let Some(helm) = Helm::new("helm4") else {
        return;
    };
    let keys = tempfile::tempdir().expect("temp dir");
    let (Some(team), Some(other)) = (
        GpgKey::make(keys.path(), "team", "Chart Team <charts@example.com>"),
        GpgKey::make(keys.path(), "other", "Someone Else <other@example.com>"),
    ) else {
        return;
    };
    let made = tempfile::tempdir().expect("temp dir");
    let made = made.path();
    // Signed by Helm: from a classic repository, an http URL and a path.
    let in_repo = signed_package(&helm, made, "signed", "2.0.0", &team);
    let by_url = signed_package(&helm, made, "signed", "3.0.0", &team);
    let by_path = signed_package(&helm, made, "signed", "4.0.0", &team);
    let by_oci = signed_package(&helm, made, "signed", "5.0.0", &team);
    // Pushed to a registry by Helm with its .prov beside it (a provenance layer).
    let Some(registry) = Distribution::start() else {
        return;
    };
    let file = made.join("signed-5.0.0.tgz");
    std::fs::write(&file, &by_oci).expect("write package");
    helm.ok(&[
        "push",
        str_path(&file),
        &format!("oci://{}/charts", registry.host()),
        "--plain-http",
    ]);
    let repo = HelmRepo::start();
    let hello = package("hello-1.0.0.tgz");
    repo.publish(
        &[("signed-2.0.0.tgz", &in_repo), ("hello-1.0.0.tgz", &hello)],
        str::to_owned,
        |_, d| hex_sha256(d),
    );
    for version in ["2.0.0", "3.0.0"] {
        let prov = common::read(&made.join(format!("signed-{version}.tgz.prov")));
        repo.put(&format!("signed-{version}.tgz.prov"), &prov);
    }
    repo.put("direct/signed-3.0.0.tgz", &by_url);
    repo.put(
        "direct/signed-3.0.0.tgz.prov",
        &common::read(&made.join("signed-3.0.0.tgz.prov")),
    );
    // helm verify names the key that signed.
    let fingerprint = {
        let file = made.join("signed-2.0.0.tgz");
        std::fs::write(&file, &in_repo).expect("write package");
        let out = helm.ok(&[
            "verify",
            "--keyring",
            str_path(&team.public),
            str_path(&file),
        ]);
        String::from_utf8_lossy(&[out.stdout, out.stderr].concat())
            .lines()
            .find_map(|l| l.strip_prefix("Using Key With Fingerprint: "))
            .map(str::to_owned)
            .expect("helm verify names the key")
    };

    let setup = |keyring: &Path, require: &str, mode: &str| {
        let work = Work::new();
        std::fs::create_dir_all(work.path("vendor")).expect("create folder");
        std::fs::write(work.path("vendor/signed-4.0.0.tgz"), &by_path).expect("write package");
        std::fs::copy(
            made.join("signed-4.0.0.tgz.prov"),
            work.path("vendor/signed-4.0.0.tgz.prov"),
        )
        .expect("copy .prov");
        work.write(
            "charts.yaml",
            &format!(
                "repositories:\n  test:\n    repoURL: {}\n    charts:\n      signed: [\"2.0.0\"]\n      hello: [\"1.0.0\"]\nchartURLs:\n  - {}\n  - ./vendor/signed-4.0.0.tgz\n  - oci://{}/charts/signed:5.0.0\n",
                repo.url(""),
                repo.url("direct/signed-3.0.0.tgz"),
                registry.host()
            ),
        );
        work.write(
            "content.yaml",
            &format!(
                "verify:\n  mode: {mode}\n  charts:\n    keyring: {}\n    require: [{require}]\n",
                keyring.display()
            ),
        );
        work
    };
    let args = [
        "--helm-charts-file",
        "charts.yaml",
        "--config",
        "content.yaml",
    ];

    // The team's keyring: each signed chart fetched with its .prov, verified, its signer in
    // the lock; hello (no pattern names it) unsigned, without a word.
    let work = setup(&team.public, "\"signed\"", "require");
    let done = work.fetch(&args);
    assert!(done.status.success(), "{}", describe(&done));
    let out = String::from_utf8_lossy(&done.stdout).into_owned();
    assert!(
        !String::from_utf8_lossy(&done.stderr).contains("warning"),
        "{}",
        describe(&done)
    );
    let lock = read_lock(&work);
    for (version, data) in [
        ("2.0.0", &in_repo),
        ("3.0.0", &by_url),
        ("4.0.0", &by_path),
        ("5.0.0", &by_oci),
    ] {
        assert!(
            out.contains(&format!(
                "verified chart signed {version}: key {fingerprint} (.prov)"
            )),
            "{version}: {out}"
        );
        assert!(work.read(&format!("fetched/charts/signed-{version}.tgz")) == *data);
        let prov = common::read(&made.join(format!("signed-{version}.tgz.prov")));
        assert!(work.read(&format!("fetched/charts/signed-{version}.tgz.prov")) == prov);
        let chart = lock
            .charts
            .values()
            .find(|c| c.name == "signed" && c.version == version)
            .unwrap_or_else(|| panic!("signed {version} not locked"));
        assert_eq!(
            chart.verified,
            Some(Evidence::Key {
                key: fingerprint.clone(),
                subkey: None,
                form: Form::Prov
            }),
            "{version}"
        );
        assert_eq!(
            chart.provenance_sha256.as_deref(),
            Some(hex_sha256(&prov).as_str())
        );
    }
    let hello_locked = lock
        .charts
        .values()
        .find(|c| c.name == "hello")
        .expect("hello");
    assert_eq!(hello_locked.verified, None);
    assert!(!out.contains("verified chart hello"), "{out}");
    // Locked: checked again with the policy the lock records.
    let locked = work.fetch_ok(&["--locked", "--lock", "fetched/chartreg.lock"]);
    assert!(
        locked.contains("verified chart signed 2.0.0: key"),
        "{locked}"
    );
    // Locked with another keyring under warn: no longer verified as the lock records.
    work.write(
        "other.yaml",
        &format!(
            "verify:\n  mode: warn\n  charts:\n    keyring: {}\n    require: [\"signed\"]\n",
            other.public.display()
        ),
    );
    let e = work.fetch_fails(&[
        "--locked",
        "--lock",
        "fetched/chartreg.lock",
        "--config",
        "other.yaml",
    ]);
    assert!(
        e.contains(&format!(
            ": the lock records it verified by key {fingerprint} (.prov); now it does not verify (chart signed 2.0.0: rule charts.require \"signed\": signed by another key"
        )),
        "{e}"
    );

    // Another key's keyring: every signed chart refused, naming it, and nothing placed.
    let work = setup(&other.public, "\"signed\"", "require");
    let e = work.fetch_fails(&args);
    for version in ["2.0.0", "3.0.0", "4.0.0", "5.0.0"] {
        assert!(
            e.contains(&format!(
                ": refused by content.yaml verify: chart signed {version}: rule charts.require \"signed\": signed by another key"
            )),
            "{version}: {e}"
        );
        assert!(
            !work
                .path(&format!("fetched/charts/signed-{version}.tgz"))
                .exists()
        );
        assert!(
            !work
                .path(&format!("fetched/charts/signed-{version}.tgz.prov"))
                .exists()
        );
    }
    assert!(!work.path("fetched/chartreg.lock").exists());
    let left: Vec<String> = work.files("fetched/charts");
    assert!(
        left.iter().all(|f| f == "hello-1.0.0.tgz"),
        "staged files left behind: {left:?}"
    );

    // Unsigned, required by "*": hello refused, naming it.
    let work = setup(&team.public, "\"*\"", "require");
    let e = work.fetch_fails(&args);
    let want = format!(
        "chart hello 1.0.0 from {}: refused by content.yaml verify: chart hello 1.0.0: rule charts.require \"*\": no signature",
        repo.url("")
    );
    assert!(
        e.lines().any(|l| l.starts_with(&want)),
        "no `{want}` in {e}"
    );
    assert!(!work.path("fetched/charts/hello-1.0.0.tgz").exists());
}

/// Without a policy, `--locked` still holds the signatures to the lock: upstream's `.sig`
/// pushed again under the same tag makes the image's referrers differ from the lock's, and the
/// fetch fails naming the entry and both lists, with the layout and the lock left as they were.
#[test]
fn locked_fetches_refuse_changed_signatures_and_keep_the_layout() {
    let Some(fixtures) = fixtures() else { return };
    let (Some(registry), Some(skopeo)) = (Distribution::start(), Skopeo::new()) else {
        return;
    };
    let host = registry.host();
    let served = served_host(&host);
    let all = cases(fixtures);
    push_case(
        &skopeo,
        &host,
        &layout_of(fixtures, "sig-valid"),
        "sig-valid",
    );
    let work = Work::new();
    work.write("images.yaml", &images_file(&host, &["sig-valid"]));
    work.fetch_ok(&["--images-file", "images.yaml"]);
    let lock = work.lock();
    let locked = locked_image(&read_lock(&work), &host, "sig-valid")
        .referrers
        .clone();
    assert_eq!(locked.len(), 1, "the .sig manifest: {lock}");

    resign_sig_valid(&skopeo, fixtures, &all, &host);
    let layout = work.path(&format!("fetched/images/{served}/example/sig-valid"));
    let before = snapshot(&layout);
    let e = work.fetch_fails(&["--locked", "--lock", "fetched/chartreg.lock"]);
    let want = format!("image {host}/example/sig-valid:v1: its referrers are now sha256:",);
    let line = e
        .lines()
        .find(|l| l.contains(&want))
        .unwrap_or_else(|| panic!("no `{want}` in {e}"));
    assert!(
        line.ends_with(&format!("the lock pins {}", locked[0])),
        "{line}"
    );
    assert!(
        snapshot(&layout) == before,
        "a refused --locked fetch changed the layout"
    );
    assert_eq!(work.lock(), lock);
}
