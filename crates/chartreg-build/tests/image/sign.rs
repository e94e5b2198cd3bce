//! `image --sign-key`: a key cosign's format holds (written by PyNaCl and hashlib's scrypt,
//! `tests/fixtures/signing/cosign.py`) signs the image; the signature is checked independently
//! of chartreg (cosign.py: the payload's digest and the ECDSA signature with Python's
//! `cryptography`) and by chartreg's own policy check (`pack` with `verify:`, and `fetch` of a
//! copy skopeo pushed to CNCF distribution, the key in the lock), the layout is the same bytes
//! in another folder, and a wrong password, a file that is no cosign key, another key and a
//! signature moved onto another image are refused by name, and so is signing with no repository
//! for the signature to name. What the verifiers users run make of it: `verifiers.rs`.

use super::*;

/// Python with the tools `scripts/install-tools.sh` put in `.tools/python` (PyNaCl); `None`
/// (skipped) when missing, a failure under `CI=true`.
fn python() -> Option<Command> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut command = Command::new("python3");
    command.env("PYTHONPATH", root.join(".tools/python"));
    let has = Command::new("python3")
        .env("PYTHONPATH", root.join(".tools/python"))
        .args(["-c", "import nacl.secret, cryptography"])
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        assert!(
            !ci(),
            "python3 with PyNaCl and cryptography is missing (CI=true): run scripts/install-tools.sh"
        );
        eprintln!("SKIPPED: PyNaCl is not installed; run scripts/install-tools.sh");
        return None;
    }
    command.arg(root.join("tests/fixtures/signing/cosign.py"));
    Some(command)
}

const PASSWORD: &str = "correct horse";

/// The repository the signatures of these tests name (chartreg's own check does not compare it;
/// `verifiers.rs` pushes to the one it names).
const REPOSITORY: &str = "registry.example/team/chartreg";

/// `image ARGS --sign-key KEY --repository REPOSITORY` with `password` in COSIGN_PASSWORD.
fn signed(args: &[&str], key: &Path, password: &str) -> Command {
    let mut command = image(args);
    command
        .arg("--sign-key")
        .arg(key)
        .args(["--repository", REPOSITORY])
        .env("COSIGN_PASSWORD", password);
    command
}

/// A content file serving `layout` as `team/chartreg`, requiring its images signed by `key`.
fn policy(dir: &Path, layout: &Path, key: &Path) -> PathBuf {
    let path = dir.join("content.yaml");
    fs::write(
        &path,
        format!(
            "layouts:\n  - from: {}\n    repository: team/chartreg\nverify:\n  mode: require\n  images:\n    keys: [{}]\n    require: [\"team/*\"]\n",
            layout.display(),
            key.display()
        ),
    )
    .unwrap();
    path
}

fn pack(config: &Path, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .args(["pack", "--config", s(config), "--out", s(out)])
        .output()
        .unwrap()
}

#[test]
fn a_cosign_key_signs_the_image_and_cosigns_check_takes_it() {
    if !runs_here() {
        return;
    }
    let Some(mut python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let other = dir.path().join("other");
    for folder in [&keys, &other] {
        fs::create_dir_all(folder).unwrap();
        let made = python_run(&mut python, &["key", s(folder), PASSWORD]);
        assert!(
            made.status.success(),
            "cosign.py key: {}",
            text(&made.stderr)
        );
        python = self::python().unwrap();
    }
    let key = keys.join("cosign.key");
    let binary = write_binary(&dir.path().join("chartreg"), b"hello\n");
    let out = dir.path().join("oci");
    // An SBOM attached too (as the server's `ls --sbom` would give it), so that the layout is
    // checked reproducible with both in place.
    let sbom = dir.path().join("sbom.spdx.json");
    fs::write(&sbom, r#"{"spdxVersion": "SPDX-2.3", "name": "test"}"#).unwrap();
    let args = |out: &Path| {
        [
            "--binary".to_owned(),
            s(&binary).to_owned(),
            "--out".to_owned(),
            s(out).to_owned(),
            "--tag".to_owned(),
            "v1".to_owned(),
            "--content-digest".to_owned(),
            CONTENT.to_owned(),
            "--sbom".to_owned(),
            s(&sbom).to_owned(),
        ]
    };
    let first = args(&out);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let stdout = ok(signed(&first, &key, PASSWORD));
    let digest = top_of(&out)["digest"].as_str().unwrap().to_owned();
    let sig_tag = format!("sha256-{}.sig", &digest[7..]);
    assert!(
        stdout.contains("signed by key sha256:")
            && stdout.contains(&format!(" as {REPOSITORY} ({sig_tag})")),
        "{stdout}"
    );
    // Independently: cosign's own check, in Python.
    let checked = python_run(
        &mut python,
        &["verify", s(&out), "v1", s(&keys.join("cosign.pub"))],
    );
    assert_eq!(
        text(&checked.stdout).trim(),
        "verified",
        "{}",
        text(&checked.stderr)
    );
    let checked = python_run(
        &mut self::python().unwrap(),
        &["verify", s(&out), "v1", s(&other.join("cosign.pub"))],
    );
    assert!(!checked.status.success());
    assert!(
        text(&checked.stdout).contains("does not verify"),
        "{}",
        text(&checked.stdout)
    );
    // Deterministic ECDSA: the same image and key give the same layout, byte for byte.
    let again = dir.path().join("again");
    let second = args(&again);
    let second: Vec<&str> = second.iter().map(String::as_str).collect();
    ok(signed(&second, &key, PASSWORD));
    assert_eq!(
        snapshot(&again),
        snapshot(&out),
        "the same bytes in another folder"
    );
    let index = json(&fs::read(out.join("index.json")).unwrap());
    let types: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["artifactType"].as_str())
        .collect();
    assert_eq!(
        types,
        [
            "application/spdx+json",
            "application/vnd.dev.cosign.artifact.sig.v1+json"
        ],
        "the SBOM and the signature as referrers: {index}"
    );

    // chartreg's own check: pack with a policy requiring the key takes it, another refuses it.
    let assets = dir.path().join("assets");
    let packed = pack(&policy(dir.path(), &out, &keys.join("cosign.pub")), &assets);
    assert!(packed.status.success(), "pack: {}", text(&packed.stderr));
    let refused = pack(
        &policy(dir.path(), &out, &other.join("cosign.pub")),
        &assets,
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("image team/chartreg:v1")
            && text(&refused.stderr).contains("signed by another key"),
        "{}",
        text(&refused.stderr)
    );

    // A changed image: another binary's image carrying the first one's signature.
    let changed = dir.path().join("changed");
    let other_binary = write_binary(&dir.path().join("other-chartreg"), b"bye\n");
    ok(image(&[
        "--binary",
        s(&other_binary),
        "--out",
        s(&changed),
        "--tag",
        "v1",
        "--content-digest",
        CONTENT,
    ]));
    let changed_digest = top_of(&changed)["digest"].as_str().unwrap().to_owned();
    move_signature(
        &out,
        &changed,
        &sig_tag,
        &format!("sha256-{}.sig", &changed_digest[7..]),
    );
    let checked = python_run(
        &mut self::python().unwrap(),
        &["verify", s(&changed), "v1", s(&keys.join("cosign.pub"))],
    );
    assert!(
        text(&checked.stdout).contains("digest mismatch"),
        "{}",
        text(&checked.stdout)
    );
    let refused = pack(
        &policy(dir.path(), &changed, &keys.join("cosign.pub")),
        &assets,
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("digest mismatch"),
        "{}",
        text(&refused.stderr)
    );

    // Copied to a registry (CNCF distribution) with skopeo, image and `.sig` tag: chartreg's own
    // check of what the registry serves (fetch under the policy) takes it, and the lock names
    // the key.
    if let Some(registry) = common::Distribution::start()
        && have("skopeo")
    {
        let at = format!("{}/team/chartreg", registry.addr);
        for tag in ["v1", sig_tag.as_str()] {
            ok(Command::new("skopeo")
                .args(["copy", "--quiet", "--dest-tls-verify=false"])
                .arg(format!("oci:{}:{tag}", s(&out)))
                .arg(format!("docker://{at}:{tag}")));
        }
        let fetched = dir.path().join("fetched");
        fs::create_dir_all(&fetched).unwrap();
        fs::write(
            fetched.join("images.yaml"),
            format!(
                "{}:
  images:
    team/chartreg:
      - v1
",
                registry.addr
            ),
        )
        .unwrap();
        fs::write(
            fetched.join("content.yaml"),
            format!(
                "verify:\n  mode: require\n  images:\n    keys: [{}]\n    require: [\"*\"]\n",
                keys.join("cosign.pub").display()
            ),
        )
        .unwrap();
        let taken = Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
            .current_dir(&fetched)
            .args([
                "fetch",
                "--images-file",
                "images.yaml",
                "--config",
                "content.yaml",
            ])
            .output()
            .unwrap();
        assert!(taken.status.success(), "fetch: {}", text(&taken.stderr));
        let lock = fs::read_to_string(fetched.join("fetched/chartreg.lock")).unwrap();
        let fingerprint = stdout
            .split("signed by key ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap();
        assert!(
            lock.contains(fingerprint),
            "the lock names the key {fingerprint}: {lock}"
        );
    }

    // A wrong password, and a file that is no cosign key: named, nothing written.
    let none = dir.path().join("none");
    let wrong = dir.path().join("none").to_str().unwrap().to_owned();
    let third = args(Path::new(&wrong));
    let third: Vec<&str> = third.iter().map(String::as_str).collect();
    let failed = fails(signed(&third, &key, "wrong"));
    let said = text(&failed.stderr);
    assert!(
        said.contains(s(&key)) && said.contains("COSIGN_PASSWORD"),
        "{said}"
    );
    let failed = fails(signed(&third, &keys.join("cosign.pub"), PASSWORD));
    let said = text(&failed.stderr);
    assert!(
        said.contains(s(&keys.join("cosign.pub"))) && said.contains("is not a cosign private key"),
        "{said}"
    );
    // No repository for the signatures to name (no --repository, no values file where the
    // command runs): refused naming the flag, before the key is even opened.
    let mut unnamed = image(&third);
    unnamed
        .current_dir(dir.path())
        .arg("--sign-key")
        .arg(&key)
        .env("COSIGN_PASSWORD", "wrong")
        .env_remove("CHARTREG_IMAGE_REPOSITORY");
    let failed = fails(unnamed);
    let said = text(&failed.stderr);
    assert!(
        said.contains("give --repository HOST/PATH") && said.contains("chartreg-values.yaml"),
        "{said}"
    );
    assert!(!none.exists());
}

fn python_run(python: &mut Command, args: &[&str]) -> Output {
    python.args(args).output().expect("python3 runs")
}

/// `index.json`'s entry tagged `v1`.
fn top_of(layout: &Path) -> Value {
    let index = json(&fs::read(layout.join("index.json")).unwrap());
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == "v1")
        .unwrap()
        .clone()
}

/// Copies the signature tagged `from_tag` in `from` (its manifest, config and payload) into
/// `to`, tagged `to_tag`: a signature of another image, as an attacker would move it.
fn move_signature(from: &Path, to: &Path, from_tag: &str, to_tag: &str) {
    let index = json(&fs::read(from.join("index.json")).unwrap());
    let mut entry = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == from_tag)
        .unwrap()
        .clone();
    let manifest = json(&blob(from, &entry["digest"]));
    let mut digests = vec![
        entry["digest"].clone(),
        manifest["config"]["digest"].clone(),
    ];
    digests.extend(
        manifest["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["digest"].clone()),
    );
    for d in digests {
        let name = d.as_str().unwrap().trim_start_matches("sha256:");
        fs::copy(
            from.join("blobs/sha256").join(name),
            to.join("blobs/sha256").join(name),
        )
        .unwrap();
    }
    entry["annotations"]["org.opencontainers.image.ref.name"] = Value::from(to_tag);
    let mut target = json(&fs::read(to.join("index.json")).unwrap());
    target["manifests"].as_array_mut().unwrap().push(entry);
    fs::write(to.join("index.json"), serde_json::to_vec(&target).unwrap()).unwrap();
}
