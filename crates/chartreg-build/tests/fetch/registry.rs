//! OCI sources: Debian's docker-registry behind htpasswd (charts pushed by `helm push`, the
//! sample image by `skopeo copy`, its signature, SBOM and attestation by oci-client), and a
//! bearer-token front before the chartreg library. Charts come out as the pushed packages,
//! images as the upstream manifests (their digests kept), with their referrers; chartreg
//! serves them again to Helm 3 and 4 and skopeo.

use std::process::Command;

use chartreg_core::oci::layout::{ImageIndex, ImageManifest, REF_NAME};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};

use super::sources::{BearerFront, Tls};
use super::*;
use common::{Distribution, curl};

const USER: &str = "fetcher";
const PASSWORD: &str = "s3cret-pw";

/// The sample image layout the tests push (committed, as `make assets` packs it).
fn sample_layout() -> PathBuf {
    root().join("images/sample")
}

fn sample_index() -> ImageIndex {
    let data = common::read(&sample_layout().join("index.json"));
    serde_json::from_slice(&data).expect("the sample layout's index.json")
}

/// The digest the sample layout tags `v1`.
fn sample_v1() -> String {
    sample_index()
        .manifests
        .iter()
        .find(|d| d.annotations.get(REF_NAME).map(String::as_str) == Some("v1"))
        .expect("v1 in the sample layout")
        .digest
        .to_string()
}

/// Helm pushes `packages` (with the `.prov` beside one, if any) to `oci://host/charts`,
/// logged in through its registry config; returns what each push printed.
fn helm_push(
    host: &str,
    packages: &[(&str, Vec<u8>)],
    prov: Option<(&str, Vec<u8>)>,
) -> Vec<String> {
    let Some(helm) = Helm::new("helm4") else {
        return Vec::new();
    };
    let config = helm.home.path().join("config/registry");
    std::fs::create_dir_all(&config).expect("create folder");
    std::fs::write(
        config.join("config.json"),
        serde_json::json!({"auths": {host: {"auth": super::sources::basic(USER, PASSWORD).trim_start_matches("Basic ")}}})
            .to_string(),
    )
    .expect("write registry config");
    let dir = tempfile::tempdir().expect("temp dir");
    if let Some((name, data)) = &prov {
        std::fs::write(dir.path().join(name), data).expect("write provenance");
    }
    packages
        .iter()
        .map(|(name, data)| {
            let file = dir.path().join(name);
            std::fs::write(&file, data).expect("write package");
            let out = helm.ok(&[
                "push",
                str_path(&file),
                &format!("oci://{host}/charts"),
                "--plain-http",
            ]);
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .collect()
}

/// The digest after `Digest: ` in Helm's output.
fn pushed_digest(output: &str) -> String {
    output
        .split("Digest: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no digest in {output}"))
        .to_owned()
}

/// skopeo copies the sample image (every platform, digests kept) to `host`.
fn skopeo_copy_image(host: &str, creds: Option<&str>) {
    let Some(skopeo) = common::tool("skopeo") else {
        return;
    };
    let mut cmd = Command::new(skopeo);
    cmd.args([
        "copy",
        "--all",
        "--preserve-digests",
        "--dest-tls-verify=false",
    ]);
    if let Some(creds) = creds {
        cmd.args(["--dest-creds", creds]);
    }
    cmd.arg(format!("oci:{}:v1", sample_layout().display()))
        .arg(format!("docker://{host}/images/sample:v1"));
    let out = common::output_of(&mut cmd, "skopeo copy");
    assert!(out.status.success(), "skopeo copy: {}", describe(&out));
}

/// oci-client pushes the sample image's referrers: the signature and SBOM (manifests with a
/// `subject`, listed in the referrers tag schema's index, as distribution 2.8 has no
/// referrers API) and the cosign `.att` tag.
fn push_referrers(host: &str, auth: &RegistryAuth) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // One crypto provider for rustls (ring, as the server and the build tool use).
    let _ = rustls::crypto::ring::default_provider().install_default();
    runtime.block_on(async {
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::Http,
            ..ClientConfig::default()
        });
        let repo = |at: &str| -> Reference {
            format!("{host}/images/sample{at}")
                .parse()
                .expect("reference")
        };
        client
            .auth(&repo(":v1"), auth, RegistryOperation::Push)
            .await
            .expect("push token");
        let v1 = sample_v1();
        let mut pushed = Vec::new();
        let mut listed = Vec::new();
        for d in sample_index().manifests {
            let digest = d.digest.to_string();
            if digest == v1 {
                continue;
            }
            let data = common::read(
                &sample_layout()
                    .join("blobs/sha256")
                    .join(d.digest.encoded()),
            );
            let manifest: ImageManifest = serde_json::from_slice(&data).expect("a manifest");
            for blob in std::iter::once(&manifest.config).chain(&manifest.layers) {
                let bytes = common::read(
                    &sample_layout()
                        .join("blobs/sha256")
                        .join(blob.digest.encoded()),
                );
                client
                    .push_blob(&repo(":v1"), bytes, blob.digest.as_str())
                    .await
                    .expect("push blob");
            }
            let at = match d.annotations.get(REF_NAME) {
                Some(tag) => format!(":{tag}"),
                None => format!("@{digest}"),
            };
            client
                .push_manifest_raw(&repo(&at), data, d.media_type.parse().expect("media type"))
                .await
                .expect("push manifest");
            if !d.annotations.contains_key(REF_NAME) {
                listed.push(d.clone());
            }
            pushed.push(digest);
        }
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
                &repo(&format!(":{}", v1.replace(':', "-"))),
                serde_json::to_vec(&fallback).expect("index"),
                "application/vnd.oci.image.index.v1+json"
                    .parse()
                    .expect("media type"),
            )
            .await
            .expect("push the referrers tag schema index");
        pushed.sort();
        pushed
    })
}

/// The referrers (digests) `chartreg` lists for the sample image.
fn served_referrers(server: &InProcess) -> Vec<String> {
    let curl_bin = common::tool("curl").expect("curl");
    let r = curl(
        &curl_bin,
        "GET",
        &format!(
            "{}/v2/images/sample/referrers/{}",
            server.url(),
            sample_v1()
        ),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    let index: ImageIndex = serde_json::from_slice(&r.body).expect("a referrers index");
    let mut digests: Vec<String> = index
        .manifests
        .iter()
        .map(|d| d.digest.to_string())
        .collect();
    digests.sort();
    digests
}

/// The manifest digest chartreg serves for the sample image's `v1` (skopeo, from the raw
/// manifest it reads).
fn served_image_digest(server: &InProcess) -> String {
    served_digest_of(server, "images/sample:v1")
}

#[test]
fn registry_with_basic_auth_charts_images_and_referrers() {
    let Some(registry) = Distribution::start_with_user(USER, PASSWORD) else {
        return;
    };
    let host = registry.host();
    let hello = package("hello-1.0.0.tgz");
    let motd = package("motd-1.0.0.tgz");
    let pushed = helm_push(
        &host,
        &[
            ("hello-1.0.0.tgz", hello.clone()),
            ("motd-1.0.0.tgz", motd.clone()),
        ],
        Some(("motd-1.0.0.tgz.prov", package("motd-1.0.0.tgz.prov"))),
    );
    skopeo_copy_image(&host, Some(&format!("{USER}:{PASSWORD}")));
    let referrers = push_referrers(&host, &RegistryAuth::Basic(USER.into(), PASSWORD.into()));

    let work = Work::new();
    work.write(
        "charts.yaml",
        &format!(
            "chartURLs:\n  - oci://{host}/charts/hello:1.0.0\n  - oci://{host}/charts/motd:1.0.0\n"
        ),
    );
    let images = format!("\"{host}\":\n  images:\n    images/sample: [v1]\n");
    work.write("anonymous.yaml", &images);
    let e = work.fetch_fails(&[
        "--helm-charts-file",
        "charts.yaml",
        "--images-file",
        "anonymous.yaml",
    ]);
    for entry in [
        format!("chart oci://{host}/charts/hello:1.0.0: authentication refused"),
        format!("image {host}/images/sample:v1: authentication refused"),
    ] {
        assert!(e.contains(&entry), "`{entry}` in: {e}");
    }

    work.write(
        "images.yaml",
        &format!("\"{host}\":\n  credentials:\n    username: {USER}\n    password: {PASSWORD}\n  images:\n    images/sample: [v1]\n"),
    );
    let args = [
        "--helm-charts-file",
        "charts.yaml",
        "--images-file",
        "images.yaml",
    ];
    let out = work.fetch_ok(&args);
    assert!(out.contains("fetched 2 charts, 1 images"), "{out}");
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == hello);
    assert!(work.read("fetched/charts/motd-1.0.0.tgz") == motd);
    assert!(work.read("fetched/charts/motd-1.0.0.tgz.prov") == package("motd-1.0.0.tgz.prov"));
    let lock = work.lock();
    for digest in pushed.iter().map(|p| pushed_digest(p)) {
        assert!(
            lock.contains(&format!("    manifest: {digest}")),
            "upstream manifest {digest} not locked:\n{lock}"
        );
    }
    assert!(
        lock.contains(&format!("    digest: {}", sample_v1())),
        "{lock}"
    );
    for r in &referrers {
        assert!(
            lock.contains(&format!("    - {r}")),
            "referrer {r} not locked:\n{lock}"
        );
    }
    assert!(!lock.contains(PASSWORD), "a password in the lock");

    // Again: the same lock.
    work.fetch_ok(&args);
    assert_eq!(work.lock(), lock, "a second fetch wrote another lock");

    // Served again by chartreg: Helm 3 and 4 pull the pushed packages, skopeo the image with
    // its upstream digest, and its referrers are listed.
    let server = work.serve_locked();
    helm_pulls(&server, "hello", "1.0.0", &hello);
    helm_pulls(&server, "motd", "1.0.0", &motd);
    assert_eq!(served_image_digest(&server), sample_v1());
    let mut with_subject: Vec<String> = referrers
        .iter()
        .filter(|r| {
            let data = common::read(
                &sample_layout()
                    .join("blobs/sha256")
                    .join(r.trim_start_matches("sha256:")),
            );
            serde_json::from_slice::<serde_json::Value>(&data).expect("JSON")["subject"].is_object()
        })
        .cloned()
        .collect();
    with_subject.sort();
    assert_eq!(served_referrers(&server), with_subject);
    // Each chart's origin is the registry and tag it was pulled from.
    origins_are_recorded_shown_and_described(
        &work,
        &server,
        &[
            (
                "hello",
                "1.0.0",
                Some(format!("oci://{host}/charts/hello:1.0.0")),
            ),
            (
                "motd",
                "1.0.0",
                Some(format!("oci://{host}/charts/motd:1.0.0")),
            ),
        ],
    );

    // One platform: a new index of it, no longer upstream's digest (the lock names upstream's
    // as the index it was cut from), and fewer blobs.
    let amd64 = Work::new();
    amd64.write(
        "images.yaml",
        &std::fs::read_to_string(work.path("images.yaml")).expect("read"),
    );
    amd64.fetch_ok(&[
        "--images-file",
        "images.yaml",
        "--platform",
        "linux/amd64",
        "--no-referrers",
    ]);
    let lock = amd64.lock();
    assert!(
        lock.contains("    - linux/amd64") && !lock.contains("arm64"),
        "{lock}"
    );
    assert!(
        !lock.contains(&format!("    digest: {}", sample_v1()))
            && lock.contains(&format!("    upstream: {}", sample_v1())),
        "{lock}"
    );
    assert!(amd64.files("fetched/images").len() < work.files("fetched/images").len());

    // Upstream re-pushes hello 1.0.0 with other bytes: a locked fetch names it.
    let folder = tempfile::tempdir().expect("temp dir");
    let chart = common::chart_folder(folder.path(), "hello", "1.0.0");
    let helm = Helm::new("helm4").expect("helm4");
    helm.ok(&["package", str_path(&chart), "-d", str_path(folder.path())]);
    let other = common::read(&folder.path().join("hello-1.0.0.tgz"));
    assert!(other != hello);
    helm_push(&host, &[("hello-1.0.0.tgz", other)], None);
    let e = work.fetch_fails(&[
        "--helm-charts-file",
        "charts.yaml",
        "--images-file",
        "images.yaml",
        "--locked",
    ]);
    assert!(
        e.contains(&format!(
            "chart oci://{host}/charts/hello:1.0.0: the lock pins sha256:{}",
            hex_sha256(&hello)
        )),
        "{e}"
    );
    // Progress lines name every entry; the failure report names only what changed.
    let report = e.split("fetch failed:").nth(1).unwrap_or_default();
    assert!(
        report.contains("charts/hello")
            && !report.contains("motd")
            && !report.contains("images/sample"),
        "only hello changed: {e}"
    );
    assert!(
        work.read("fetched/charts/hello-1.0.0.tgz") == hello,
        "--locked replaced a file"
    );
}

#[test]
fn bearer_token_challenges_are_answered_with_the_images_file_credentials() {
    let front = BearerFront::start("robot", "t0ken-pw");
    let host = front.addr.to_string();
    let work = Work::new();
    work.write(
        "charts.yaml",
        &format!("chartURLs:\n  - oci://{host}/charts/hello:1.0.0\n"),
    );
    let images = |password: &str| {
        format!(
            "\"{host}\":\n  credentials:\n    username: robot\n    password: {password}\n  images:\n    images/sample: [v1]\n"
        )
    };
    work.write("wrong.yaml", &images("wrong"));
    let e = work.fetch_fails(&[
        "--helm-charts-file",
        "charts.yaml",
        "--images-file",
        "wrong.yaml",
    ]);
    assert!(
        e.contains(&format!(
            "image {host}/images/sample:v1: authentication refused"
        )),
        "{e}"
    );
    assert!(front.token_requests().contains(&false));

    work.write("images.yaml", &images("t0ken-pw"));
    work.fetch_ok(&[
        "--helm-charts-file",
        "charts.yaml",
        "--images-file",
        "images.yaml",
    ]);
    assert!(front.challenged() > 0, "the front never challenged");
    assert!(
        front.token_requests().contains(&true),
        "no token was asked for"
    );
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == package("hello-1.0.0.tgz"));
    let lock = work.lock();
    assert!(
        lock.contains(&format!("    digest: {}", sample_v1())),
        "{lock}"
    );
    let server = work.serve_locked();
    assert_eq!(served_image_digest(&server), sample_v1());
}

#[test]
fn oci_repositories_in_the_charts_file_and_layouts_that_are_whole_or_not_at_all() {
    let Some(registry) = Distribution::start_with_user(USER, PASSWORD) else {
        return;
    };
    let host = registry.host();
    let hello = package("hello-1.0.0.tgz");
    let old_hello = package("hello-0.1.0.tgz");
    helm_push(
        &host,
        &[
            ("hello-1.0.0.tgz", hello.clone()),
            ("hello-0.1.0.tgz", old_hello.clone()),
        ],
        None,
    );
    skopeo_copy_image(&host, Some(&format!("{USER}:{PASSWORD}")));
    let work = Work::new();
    // A repository named by an oci:// URL, as teams moving from classic repositories write
    // it: its charts are CHART:VERSION under it, reached with the entry's credentials.
    let charts = |credentials: &str, versions: &str| {
        format!(
            "repositories:\n  reg:\n    repoURL: oci://{host}/charts\n{credentials}    charts:\n      hello: [{versions}]\n"
        )
    };
    let credentials = format!("    username: {USER}\n    password: {PASSWORD}\n");
    work.write("anonymous.yaml", &charts("", "\"1.0.0\""));
    let e = work.fetch_fails(&["--helm-charts-file", "anonymous.yaml"]);
    assert!(
        e.contains(&format!(
            "chart hello 1.0.0 from oci://{host}/charts: authentication refused"
        )),
        "{e}"
    );
    work.write("missing.yaml", &charts(&credentials, "\"1.0.9\""));
    let e = work.fetch_fails(&["--helm-charts-file", "missing.yaml"]);
    assert!(
        e.contains(&format!(
            "chart hello 1.0.9 from oci://{host}/charts: the source has no version 1.0.9 (nearest it has: 0.1.0, 1.0.0)"
        )),
        "{e}"
    );
    // docs/content.md's layout: lists in addons/, the fetched folder at the top.
    work.write(
        "addons/charts.yaml",
        &charts(&credentials, "\"1.0.0\", \"~0.1\""),
    );
    work.write(
        "addons/images.yaml",
        &format!("\"{host}\":\n  credentials:\n    username: {USER}\n    password: {PASSWORD}\n  images:\n    images/sample: [v1]\n"),
    );
    let lists = [
        "--helm-charts-file",
        "addons/charts.yaml",
        "--images-file",
        "addons/images.yaml",
    ];
    let out = work.fetch_ok(&lists);
    assert!(out.contains("fetched 2 charts, 1 images"), "{out}");
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == hello);
    assert!(work.read("fetched/charts/hello-0.1.0.tgz") == old_hello);
    let lock = work.lock();
    let layout = format!("images/{}/images/sample", host.replace(':', "_"));
    let layout_dir = format!("fetched/{layout}");
    for line in [
        format!("  hello ~0.1 from oci://{host}/charts:"),
        format!("    url: oci://{host}/charts/hello:0.1.0"),
        "    file: charts/hello-0.1.0.tgz".to_owned(),
        format!("    layout: {layout}"),
    ] {
        assert!(
            lock.lines().any(|l| l == line),
            "lock lacks `{line}`:\n{lock}"
        );
    }
    assert!(!lock.contains(PASSWORD), "a password in the lock");
    let server = work.serve("lock: fetched/chartreg.lock\n");
    helm_pulls(&server, "hello", "1.0.0", &hello);
    helm_pulls(&server, "hello", "0.1.0", &old_hello);
    assert_eq!(served_image_digest(&server), sample_v1());

    // A tag that fails after others were taken: the layout is the one that was there, with
    // nothing staged left beside it; fetched afresh, there is no layout at all.
    let before: Vec<(String, Vec<u8>)> = work
        .files(&layout_dir)
        .into_iter()
        .map(|f| {
            let data = work.read(&format!("{layout_dir}/{f}"));
            (f, data)
        })
        .collect();
    let failing = format!(
        "\"{host}\":\n  credentials:\n    username: {USER}\n    password: {PASSWORD}\n  images:\n    images/sample: [v1, zz-missing]\n"
    );
    work.write("addons/images.yaml", &failing);
    let e = work.fetch_fails(&lists);
    assert!(
        e.contains(&format!(
            "image {host}/images/sample:zz-missing: the source has no tag zz-missing (nearest it has: v1)"
        )),
        "{e}"
    );
    let after: Vec<(String, Vec<u8>)> = work
        .files(&layout_dir)
        .into_iter()
        .map(|f| {
            let data = work.read(&format!("{layout_dir}/{f}"));
            (f, data)
        })
        .collect();
    assert!(before == after, "a failed fetch changed the layout");
    let beside = work.path(&format!("fetched/images/{}/images", host.replace(':', "_")));
    assert_eq!(
        common::file_names(&beside),
        ["sample"],
        "staging left behind"
    );
    assert!(
        !common::file_names(work.dir.path())
            .iter()
            .any(|n| n.starts_with(".fetched")),
        "the new fetched folder was left behind"
    );
    let fresh = Work::new();
    fresh.write("images.yaml", &failing);
    fresh.fetch_fails(&["--images-file", "images.yaml"]);
    assert!(
        !fresh.path("fetched").exists(),
        "a failed fetch left a partial layout: {:?}",
        fresh.files("fetched/images")
    );
}

#[test]
fn an_oci_repository_over_tls_is_verified_with_the_ca_file_or_its_tls_verify() {
    // The chartreg library over TLS, reached as a name (loopback addresses are always plain
    // HTTP to fetch): the committed sample charts it serves are the upstream.
    let tls = Tls::new();
    let server = InProcess::start_tls(common::assets_registry(), tls.server_config());
    let port = server.addr.port();
    let work = Work::new();
    let hosts = work.write("hosts", &format!("127.0.0.1 {}\n", common::LOOPBACK_NAME));
    let repo_url = format!("oci://{}:{port}/charts", common::LOOPBACK_NAME);
    let list = |extra: &str| {
        format!(
            "repositories:\n  reg:\n    repoURL: {repo_url}\n{extra}    charts:\n      hello: [\"1.0.0\"]\n"
        )
    };
    let fetch = |list_file: &str, extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_chartreg-build"));
        cmd.args(["fetch", "--helm-charts-file", list_file])
            .args(extra)
            .current_dir(work.dir.path())
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR");
        let mut wrapped = common::with_hosts(&cmd, &hosts)?;
        Some(common::output_of(&mut wrapped, "chartreg-build fetch"))
    };
    work.write("verified.yaml", &list(""));
    let Some(untrusted) = fetch("verified.yaml", &[]) else {
        return;
    };
    let e = String::from_utf8_lossy(&untrusted.stderr);
    assert!(!untrusted.status.success(), "{}", describe(&untrusted));
    assert!(
        e.contains(&format!("chart hello 1.0.0 from {repo_url}: TLS failure"))
            && e.contains("a private CA is trusted with --ca-file FILE"),
        "{e}"
    );
    let ca = str_path(&work.write("ca.pem", &tls.ca_pem)).to_owned();
    let trusted = fetch("verified.yaml", &["--ca-file", &ca]).expect("unshare");
    assert!(trusted.status.success(), "{}", describe(&trusted));
    assert!(work.read("fetched/charts/hello-1.0.0.tgz") == package("hello-1.0.0.tgz"));

    // The entry's own `tlsVerify: false`, without a CA, into another fetched folder.
    work.write("unverified.yaml", &list("    tlsVerify: false\n"));
    let unverified = fetch("unverified.yaml", &["--out", "other"]).expect("unshare");
    assert!(unverified.status.success(), "{}", describe(&unverified));
    assert!(work.read("other/charts/hello-1.0.0.tgz") == package("hello-1.0.0.tgz"));
}

/// Two upstream registries holding the same repository path with different images (the sample
/// image in one, an image generated here in the other): both are fetched, packed and served,
/// each in its registry's namespace. `?ns=` picks one and the answer says which; the full name
/// picks one; the path alone is ambiguous and the error names both.
#[test]
fn the_same_path_in_two_registries_is_kept_apart() {
    let (Some(a), Some(b)) = (Distribution::start(), Distribution::start()) else {
        return;
    };
    let skopeo = common::tool("skopeo").expect("skopeo");
    let copy = |from: String, to: String| {
        let out = common::output_of(
            Command::new(&skopeo).args([
                "copy",
                "--all",
                "--preserve-digests",
                "--dest-tls-verify=false",
                &from,
                &to,
            ]),
            "skopeo copy",
        );
        assert!(out.status.success(), "skopeo copy: {}", describe(&out));
    };
    copy(
        format!("oci:{}:v1", sample_layout().display()),
        format!("docker://{}/nutanix/demo-app:v1", a.host()),
    );
    let generated = common::generated_layout(
        "demo-app",
        "v1",
        (
            "application/vnd.oci.image.config.v1+json",
            b"{\"architecture\":\"amd64\",\"os\":\"linux\"}",
        ),
        &[(
            "application/vnd.oci.image.layer.v1.tar",
            b"registry b's layer",
        )],
    );
    let folder = tempfile::tempdir().expect("temp dir");
    for file in &generated.files {
        let path = folder.path().join(&*file.path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folder");
        std::fs::write(&path, &file.data).expect("write file");
    }
    copy(
        format!("oci:{}:v1", folder.path().join("demo-app").display()),
        format!("docker://{}/nutanix/demo-app:v1", b.host()),
    );

    let work = Work::new();
    work.write(
        "images.yaml",
        &format!(
            "\"{}\":\n  images:\n    nutanix/demo-app: [v1]\n\"{}\":\n  images:\n    nutanix/demo-app: [v1]\n",
            a.host(),
            b.host()
        ),
    );
    let out = work.fetch_ok(&["--images-file", "images.yaml", "--no-referrers"]);
    assert!(out.contains("fetched 0 charts, 2 images"), "{out}");
    let server = work.serve_locked();

    let curl_bin = common::tool("curl").expect("curl");
    let ask = |path: &str| curl(&curl_bin, "GET", &format!("{}{path}", server.url()), &[]);
    for (upstream, digest) in [(&a, sample_v1()), (&b, generated.manifest_digest.clone())] {
        let host = upstream.host();
        let r = ask(&format!("/v2/nutanix/demo-app/manifests/v1?ns={host}"));
        assert_eq!(r.status, 200, "{}", r.body_text());
        assert_eq!(r.header("docker-content-digest"), Some(digest.as_str()));
        assert_eq!(r.header("oci-namespace"), Some(host.as_str()));
        let full = format!("{}/nutanix/demo-app", host.replace(':', "_"));
        let r = ask(&format!("/v2/{full}/manifests/v1"));
        assert_eq!(r.header("docker-content-digest"), Some(digest.as_str()));
    }
    assert_ne!(sample_v1(), generated.manifest_digest);

    let r = ask("/v2/nutanix/demo-app/manifests/v1");
    assert_eq!(r.status, 404);
    let body = r.body_text();
    assert!(
        body.contains("NAME_UNKNOWN") && body.contains(&a.host()) && body.contains(&b.host()),
        "{body}"
    );
    // A registry the content holds nothing of: an OCI JSON 404 naming the ones it holds.
    let r = ask("/v2/nutanix/demo-app/manifests/v1?ns=docker.io");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("oci-namespace"), Some("docker.io"));
    let error: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON");
    assert_eq!(error["errors"][0]["code"], "NAME_UNKNOWN");
    let message = error["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("docker.io") && message.contains(&a.host()),
        "{message}"
    );
}

/// `skopeo inspect --raw` of `reference` on the chartreg `server`: the sha256 of what it got.
fn served_digest_of(server: &InProcess, reference: &str) -> String {
    let skopeo = common::tool("skopeo").expect("skopeo");
    let out = common::output_of(
        Command::new(skopeo).args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{}/{reference}", server.host()),
        ]),
        "skopeo inspect",
    );
    assert!(out.status.success(), "skopeo inspect: {}", describe(&out));
    common::sha256(&out.stdout)
}

/// Images named by digest: a multi-arch index pinned by its digest alone is taken whole (every
/// platform, even with `--platform`: a new index would be a digest nobody pinned), locked as
/// `REGISTRY/PATH@DIGEST`, served under `digest-sha256-<hex>` and pulled by its digest; a tag
/// pinned to a digest takes the digest (here one platform's manifest, not what the tag names
/// upstream) and serves it under the tag; `--locked` takes both again. An entry that is no
/// reference, a digest the registry lacks, and two entries served under one tag each fail the
/// run, naming them.
#[test]
fn images_pinned_by_digest_are_taken_by_it_and_served_under_it() {
    let Some(registry) = Distribution::start() else {
        return;
    };
    let host = registry.host();
    skopeo_copy_image(&host, None);
    let index = sample_v1();
    let hex = index.trim_start_matches("sha256:");
    let platforms: Vec<(String, String)> = {
        let data = common::read(&sample_layout().join("blobs/sha256").join(hex));
        let index: ImageIndex = serde_json::from_slice(&data).expect("the sample's index");
        index
            .manifests
            .iter()
            .filter_map(|d| {
                Some((
                    d.platform.as_ref()?.architecture.clone(),
                    d.digest.to_string(),
                ))
            })
            .collect()
    };
    assert!(
        platforms.len() > 1,
        "the sample image is multi-arch: {platforms:?}"
    );
    let (arch, one) = platforms[0].clone();

    let work = Work::new();
    work.write(
        "images.yaml",
        &format!("\"{host}\":\n  images:\n    images/sample: [\"{index}\", \"v1@{one}\"]\n"),
    );
    let args = [
        "--images-file",
        "images.yaml",
        "--platform",
        &format!("linux/{arch}"),
        "--no-referrers",
    ];
    let out = work.fetch_ok(&args);
    assert!(out.contains("fetched 0 charts, 2 images"), "{out}");
    let lock = work.lock();
    for (key, digest) in [
        (format!("{host}/images/sample@{index}:"), &index),
        (format!("{host}/images/sample:v1@{one}:"), &one),
    ] {
        let start = lock
            .find(&format!("\n  {key}\n"))
            .unwrap_or_else(|| panic!("{key} in the lock:\n{lock}"));
        let entry: String = lock[start + 1..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(entry.contains(&format!("digest: {digest}")), "{entry}");
    }
    for (arch, _) in &platforms {
        assert!(
            lock.contains(&format!("    - linux/{arch}")),
            "every platform of the pinned index: {lock}"
        );
    }
    let tags = std::fs::read_to_string(work.path(&format!(
        "fetched/images/{}/images/sample/index.json",
        host.replace(':', "_")
    )))
    .expect("the layout's index.json");
    assert!(
        tags.contains(&format!("\"digest-sha256-{hex}\"")) && tags.contains("\"v1\""),
        "{tags}"
    );

    // Served: by the digest (as a node pulls it), under its tags.
    let server = work.serve_locked();
    assert_eq!(
        served_digest_of(&server, &format!("images/sample@{index}")),
        index
    );
    assert_eq!(
        served_digest_of(&server, &format!("images/sample:digest-sha256-{hex}")),
        index
    );
    assert_eq!(served_digest_of(&server, "images/sample:v1"), one);
    drop(server);

    // Locked: the same, nothing written.
    let before = work.lock();
    work.fetch_ok(&[&args[..], &["--locked"]].concat());
    assert_eq!(work.lock(), before);

    // What fetch cannot take fails the run, naming the file and the entry.
    let zeros = format!("sha256:{}", "0".repeat(64));
    for (entry, says) in [
        (
            "\"sha256:b722\"".to_owned(),
            format!("images.yaml: {host}/images/sample: `sha256:b722`"),
        ),
        (
            format!("\"{zeros}\""),
            format!("image {host}/images/sample@{zeros}: not found"),
        ),
        (
            format!("v1, \"v1@{index}\""),
            format!(
                "{host}/images/sample:v1 and {host}/images/sample:v1@{index} would be served under one tag"
            ),
        ),
    ] {
        let bad = Work::new();
        bad.write(
            "images.yaml",
            &format!("\"{host}\":\n  images:\n    images/sample: [{entry}]\n"),
        );
        let e = bad.fetch_fails(&["--images-file", "images.yaml"]);
        assert!(e.contains(&says), "{entry}: `{says}` in: {e}");
        assert!(
            !bad.path("fetched/chartreg.lock").exists(),
            "{entry}: no lock written"
        );
    }
}
