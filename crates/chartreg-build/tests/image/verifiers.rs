//! `image --sign-key` as the verifiers users run see it: a two-platform image signed with a key
//! `cosign generate-key-pair` (cosign 2.5) wrote, the repository taken from the values file
//! `init` writes, copied with every `.sig` tag to CNCF distribution under its repository and
//! under others; then
//!
//! - each signature's payload names the repository and the manifest it signs: the index and
//!   each platform's manifest (as `cosign sign --recursive` signs);
//! - containers/image (skopeo 1.18 built with sigstore, what CRI-O and Podman run) with
//!   docs/building.md's `policy.json` entry and `registries.d` file, as written, takes the image
//!   by tag, every platform (`--all`), and one platform by digest; with the same requirement it
//!   refuses the image copied under another repository, with another key, unsigned, with the
//!   default `signedIdentity` (cosign's signatures name no tag), through `remapIdentity`, and
//!   when the platforms' own signatures are missing; it takes the copy under another repository
//!   with `exactRepository` naming the signed one (a mirror's case);
//! - docs/building.md's `cosign verify` takes the image and one platform by digest, fails
//!   without `--insecure-ignore-tlog=true` (its Rekor keys are not reachable), and refuses
//!   another key. cosign compares the digest, not the repository: it takes the copy under
//!   another repository too.

use super::*;

const PASSWORD: &str = "correct horse";

/// The fenced block of docs/building.md in `language` that holds `holding`, as written.
fn documented(language: &str, holding: &str) -> String {
    let page =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/building.md"))
            .unwrap();
    page.split(&format!("```{language}\n"))
        .skip(1)
        .filter_map(|rest| rest.split_once("```").map(|(block, _)| block))
        .find(|block| block.contains(holding))
        .unwrap_or_else(|| panic!("docs/building.md has a {language} block holding {holding}"))
        .to_owned()
}

/// A policy.json refusing everything but what `scopes` (`transports.docker`) accept.
fn policy(dir: &Path, name: &str, scopes: Value) -> PathBuf {
    let document = serde_json::json!({
        "default": [{"type": "reject"}],
        "transports": {"docker": scopes},
    });
    let path = dir.join(name);
    fs::write(&path, serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    path
}

#[test]
fn containers_image_and_cosign_take_the_signatures_under_the_signed_repository() {
    if !(runs_here() && have("skopeo")) {
        return;
    }
    let (Some(skopeo_sigstore), Some(cosign)) =
        (common::tool("skopeo-sigstore"), common::tool("cosign"))
    else {
        return;
    };
    let Some(registry) = common::Distribution::start() else {
        return;
    };
    let host = registry.host();
    let repository = format!("{host}/platform/chartreg");
    let dir = tempfile::tempdir().unwrap();
    // cosign keeps its state under HOME, and reaches no network: a proxy that refuses every
    // connection (the registry, on loopback, is never proxied).
    let cosign_run = |args: &[&str], cwd: &Path| {
        Command::new(&cosign)
            .args(args)
            .current_dir(cwd)
            .env("HOME", dir.path())
            .env("COSIGN_PASSWORD", PASSWORD)
            .env("HTTPS_PROXY", "http://127.0.0.1:1")
            .env("HTTP_PROXY", "http://127.0.0.1:1")
            .output()
            .unwrap()
    };
    let keys = dir.path().join("keys");
    let other = dir.path().join("other");
    for folder in [&keys, &other] {
        fs::create_dir_all(folder).unwrap();
        let made = cosign_run(&["generate-key-pair"], folder);
        assert!(made.status.success(), "{}", text(&made.stderr));
    }

    // A content repository as `init` writes it, its values file naming where the image goes.
    let work = dir.path().join("work");
    ok(Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .arg("init")
        .arg(&work));
    let values = work.join("chartreg-values.yaml");
    let written = fs::read_to_string(&values).unwrap();
    let edited = written.replacen(
        "repository: chartreg ",
        &format!("repository: {repository} "),
        1,
    );
    assert_ne!(edited, written, "init's values file names image.repository");
    fs::write(&values, edited).unwrap();
    let binary = write_binary(&dir.path().join("chartreg"), b"");
    let out = dir.path().join("oci");
    let amd64 = format!("linux/amd64={}", s(&binary));
    let arm64 = format!("linux/arm64={}", s(&binary));
    let mut signed = image(&[
        "--binary",
        &amd64,
        "--binary",
        &arm64,
        "--out",
        s(&out),
        "--tag",
        "v1",
        "--content-digest",
        CONTENT,
    ]);
    signed
        .current_dir(&work)
        .arg("--sign-key")
        .arg(keys.join("cosign.key"))
        .env("COSIGN_PASSWORD", PASSWORD)
        .env_remove("CHARTREG_IMAGE_REPOSITORY");
    let said = ok(signed);
    assert!(said.contains(&format!(" as {repository} (")), "{said}");

    // Each signature: the index's and each platform's, naming the repository and its digest.
    let index = json(&fs::read(out.join("index.json")).unwrap());
    let entries = index["manifests"].as_array().unwrap();
    let top = entries
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == "v1")
        .unwrap();
    let platforms: Vec<String> = json(&blob(&out, &top["digest"]))["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["digest"].as_str().unwrap().to_owned())
        .collect();
    let mut wanted: Vec<String> = vec![top["digest"].as_str().unwrap().to_owned()];
    wanted.extend(platforms.iter().cloned());
    let tags: Vec<String> = entries
        .iter()
        .filter_map(|m| m["annotations"]["org.opencontainers.image.ref.name"].as_str())
        .map(str::to_owned)
        .collect();
    let mut signed_digests = Vec::new();
    for tag in tags.iter().filter(|t| t.ends_with(".sig")) {
        let entry = entries
            .iter()
            .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag.as_str())
            .unwrap();
        let manifest = json(&blob(&out, &entry["digest"]));
        let payload = json(&blob(&out, &manifest["layers"][0]["digest"]));
        let digest = payload["critical"]["image"]["docker-manifest-digest"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(*tag, format!("{}.sig", digest.replace(':', "-")));
        assert_eq!(
            payload["critical"]["identity"]["docker-reference"], repository,
            "{payload}"
        );
        assert_eq!(
            payload["critical"]["type"],
            "cosign container image signature"
        );
        signed_digests.push(digest);
    }
    assert_eq!(signed_digests, wanted, "the index, then each platform");
    let referred: Vec<&str> = entries
        .iter()
        .filter(|m| m["artifactType"] == "application/vnd.dev.cosign.artifact.sig.v1+json")
        .map(|m| json(&blob(&out, &m["digest"]))["subject"]["digest"].clone())
        .map(|d| {
            wanted
                .iter()
                .find(|w| d == w.as_str())
                .map(String::as_str)
                .unwrap_or_else(|| panic!("a referrer of {d}"))
        })
        .collect();
    assert_eq!(referred, wanted, "each signature as a referrer too");

    // Every tag copied, as docs/building.md copies them, under the signed repository and another.
    let copied_to = |path: &str| {
        for tag in &tags {
            ok(Command::new("skopeo")
                .args(["copy", "--all", "--quiet", "--dest-tls-verify=false"])
                .arg(format!("oci:{}:{tag}", s(&out)))
                .arg(format!("docker://{host}/{path}:{tag}")));
        }
    };
    copied_to("platform/chartreg");
    copied_to("mirror/chartreg");
    // A copy whose platforms lost their own signatures: only the index's `.sig` tag beside it.
    let index_signature = format!("{}.sig", wanted[0].replace(':', "-"));
    for tag in ["v1", index_signature.as_str()] {
        ok(Command::new("skopeo")
            .args(["copy", "--all", "--quiet", "--dest-tls-verify=false"])
            .arg(format!("oci:{}:{tag}", s(&out)))
            .arg(format!("docker://{host}/partial/chartreg:{tag}")));
    }
    ok(Command::new("skopeo")
        .args(["copy", "--all", "--quiet", "--dest-tls-verify=false"])
        .arg(format!("oci:{}:v1", s(&out)))
        .arg(format!("docker://{host}/unsigned/chartreg:v1")));

    // containers/image, configured as docs/building.md says (its names replaced by the test's).
    let config = dir.path().join("containers");
    let registries_d = config.join("registries.d");
    fs::create_dir_all(&registries_d).unwrap();
    let registries = documented("yaml", "use-sigstore-attachments");
    assert!(registries.contains("registry.example:"), "{registries}");
    fs::write(
        registries_d.join("chartreg.yaml"),
        registries.replace("registry.example", &host),
    )
    .unwrap();
    let registries_conf = config.join("registries.conf");
    fs::write(&registries_conf, "").unwrap();
    let public = keys.join("cosign.pub");
    let written = documented("json", "sigstoreSigned")
        .replace("/etc/containers/keys/chartreg.pub", s(&public))
        .replace("registry.example", &host);
    let as_written: Value = serde_json::from_str(&written).unwrap();
    let scopes = &as_written["transports"]["docker"];
    assert_eq!(
        scopes.as_object().unwrap().keys().collect::<Vec<_>>(),
        [&repository]
    );
    let requirement = scopes[&repository][0].clone();
    let with = |key: &str, value: Value| {
        let mut changed = requirement.clone();
        changed[key] = value;
        changed
    };
    let documented_policy = policy(&config, "documented.json", scopes.clone());
    let registry_wide = policy(
        &config,
        "registry-wide.json",
        serde_json::json!({&host: [requirement.clone()]}),
    );
    let other_key = policy(
        &config,
        "other-key.json",
        serde_json::json!({&host: [with("keyPath", Value::from(s(&other.join("cosign.pub"))))]}),
    );
    let mut unnamed = requirement.clone();
    unnamed.as_object_mut().unwrap().remove("signedIdentity");
    let by_default = policy(
        &config,
        "default.json",
        serde_json::json!({&repository: [unnamed]}),
    );
    let exact = with(
        "signedIdentity",
        serde_json::json!({"type": "exactRepository", "dockerRepository": repository}),
    );
    let mirror = policy(
        &config,
        "mirror.json",
        serde_json::json!({
            format!("{host}/mirror/chartreg"): [exact.clone()],
            format!("{host}/partial/chartreg"): [exact],
        }),
    );
    let remapped = policy(
        &config,
        "remap.json",
        serde_json::json!({format!("{host}/mirror/chartreg"): [with(
            "signedIdentity",
            serde_json::json!({
                "type": "remapIdentity",
                "prefix": format!("{host}/mirror"),
                "signedPrefix": format!("{host}/platform"),
            }),
        )]}),
    );
    let pull = |policy: &Path, reference: &str, all: bool| {
        let target = tempfile::tempdir_in(dir.path()).unwrap();
        let mut command = Command::new(&skopeo_sigstore);
        command
            .env("CONTAINERS_REGISTRIES_CONF", &registries_conf)
            .env("HOME", dir.path())
            .arg("copy")
            .args(all.then_some("--all"))
            .args(["--remove-signatures", "--src-tls-verify=false", "--policy"])
            .arg(policy)
            .arg("--registries.d")
            .arg(&registries_d)
            .arg(format!("docker://{host}/{reference}"))
            .arg(format!("oci:{}:pulled", s(&target.path().join("oci"))));
        let done = command.output().unwrap();
        (done.status.success(), text(&done.stderr))
    };
    let identity = format!("Signature for identity \\\"{repository}\\\" is not accepted");
    let missing = "A signature was required, but no signature exists";
    let platform = format!("platform/chartreg@{}", platforms[1]);
    for (what, policy, reference, all, refused) in [
        (
            "by tag",
            &documented_policy,
            "platform/chartreg:v1",
            false,
            None,
        ),
        (
            "every platform",
            &documented_policy,
            "platform/chartreg:v1",
            true,
            None,
        ),
        (
            "one platform by digest",
            &documented_policy,
            platform.as_str(),
            false,
            None,
        ),
        (
            "under another repository",
            &registry_wide,
            "mirror/chartreg:v1",
            true,
            Some(identity.as_str()),
        ),
        (
            "with another key",
            &other_key,
            "platform/chartreg:v1",
            true,
            Some("cryptographic signature verification failed"),
        ),
        (
            "unsigned",
            &registry_wide,
            "unsigned/chartreg:v1",
            true,
            Some(missing),
        ),
        (
            "with the default signedIdentity",
            &by_default,
            "platform/chartreg:v1",
            true,
            Some(identity.as_str()),
        ),
        (
            "through remapIdentity",
            &remapped,
            "mirror/chartreg:v1",
            true,
            Some(identity.as_str()),
        ),
        (
            "from a mirror, exactRepository",
            &mirror,
            "mirror/chartreg:v1",
            true,
            None,
        ),
        (
            "without its platforms' signatures",
            &mirror,
            "partial/chartreg:v1",
            true,
            Some(missing),
        ),
    ] {
        let (taken, said) = pull(policy, reference, all);
        match refused {
            None => assert!(taken, "skopeo 1.18 refused the image {what}: {said}"),
            Some(why) => assert!(
                !taken && said.contains(why),
                "skopeo 1.18 {} the image {what}, not saying {why}: {said}",
                if taken { "took" } else { "refused" }
            ),
        }
    }

    // cosign 2.5, as docs/building.md runs it (the test's registry is plain HTTP): offline, the
    // transparency log is skipped; the digest is what it compares.
    let command = documented("console", "cosign verify");
    let written: Vec<&str> = command
        .lines()
        .find(|l| l.starts_with("cosign verify"))
        .unwrap()
        .split_whitespace()
        .skip(1)
        .collect();
    assert_eq!(
        written,
        [
            "verify",
            "--key",
            "cosign.pub",
            "--insecure-ignore-tlog=true",
            "registry.example/platform/chartreg:$TAG"
        ]
    );
    let verify = |key: &Path, reference: &str, ignore_tlog: bool| {
        let mut args = vec!["verify", "--key", s(key), "--allow-http-registry"];
        if ignore_tlog {
            args.push("--insecure-ignore-tlog=true");
        }
        let reference = format!("{host}/{reference}");
        args.push(&reference);
        let done = cosign_run(&args, dir.path());
        (
            done.status.success(),
            text(&done.stdout),
            text(&done.stderr),
        )
    };
    for reference in [
        "platform/chartreg:v1",
        platform.as_str(),
        "mirror/chartreg:v1",
    ] {
        let (taken, stdout, stderr) = verify(&public, reference, true);
        assert!(taken, "cosign verify {reference}: {stderr}");
        assert!(
            stdout.contains(&format!(r#""docker-reference":"{repository}""#)),
            "{stdout}"
        );
    }
    let (taken, _, stderr) = verify(&public, "platform/chartreg:v1", false);
    assert!(
        !taken && stderr.contains("getting Rekor public keys"),
        "without --insecure-ignore-tlog: {stderr}"
    );
    let (taken, _, stderr) = verify(&other.join("cosign.pub"), "platform/chartreg:v1", true);
    assert!(
        !taken && stderr.contains("no matching signatures"),
        "another key: {stderr}"
    );
}
