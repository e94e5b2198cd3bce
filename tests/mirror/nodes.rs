//! chartreg as the one mirror a node needs, proven with containerd: images fetched from two
//! upstream registries (the same path in both, different bytes) are packed, served by chartreg,
//! and pulled by `ctr images pull --hosts-dir` through the files `chartreg mirror-config` wrote,
//! each under its own registry's name. containerd sends `?ns=<registry>` to chartreg, which
//! resolves each pull in that registry's namespace.

use std::path::Path;
use std::process::ExitCode;

use bytes::Bytes;
use chartreg_core::content::{BuildFile, Content, Description, HeldFile, Registry};

use super::*;
use common::LoopbackCert;

/// Content made the way a team makes it: `chartreg-build fetch` from the two upstreams, then
/// `pack` of the lock and of the sample layout, kept for the registry `extra_namespace`.
struct Mirrored {
    upstreams: TwoUpstreams,
    /// The packed files, and the facts a binary would embed with them.
    files: Vec<HeldFile>,
    facts: Bytes,
    _work: tempfile::TempDir,
}

impl Mirrored {
    fn make(extra_namespace: &str) -> Option<Mirrored> {
        let upstreams = TwoUpstreams::start()?;
        let work = tempfile::tempdir().expect("temp dir");
        let fetch = common::output_of(
            Command::new(common::chartreg_build_bin())
                .args(["fetch", "--images-file"])
                .arg(&upstreams.images_file)
                .args(["--lock", "fetched/chartreg.lock"])
                .current_dir(work.path()),
            "chartreg-build fetch",
        );
        assert!(fetch.status.success(), "fetch: {}", describe(&fetch));
        let content = work.path().join("content.yaml");
        std::fs::write(
            &content,
            format!(
                "lock: fetched/chartreg.lock\nlayouts:\n  - from: {}\n    repository: images/sample\n    namespace: \"{extra_namespace}\"\n",
                common::root().join("images/sample").display()
            ),
        )
        .expect("write content.yaml");
        let assets = work.path().join("assets");
        common::chartreg_build(&[
            "pack",
            "--config",
            content.to_str().expect("UTF-8"),
            "--out",
            assets.to_str().expect("UTF-8"),
        ]);
        let files = common::files_in(&assets);
        let built: Vec<BuildFile> = files.iter().map(BuildFile::from).collect();
        let facts = Description::of(&built).facts().expect("facts");
        Some(Mirrored {
            upstreams,
            files,
            facts: Bytes::from(facts),
            _work: work,
        })
    }

    fn registry(&self) -> Registry {
        Registry::from_facts(&self.facts, &self.files).expect("packed content serves")
    }

    /// `chartreg mirror-config ARGS --out DIR`, the command line run over this content as the
    /// binary runs it over what it embeds; the folder it wrote.
    fn mirror_config(&self, args: &[&str]) -> tempfile::TempDir {
        let out = tempfile::tempdir().expect("temp dir");
        let mut all = vec!["chartreg", "mirror-config"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--out", out.path().to_str().expect("UTF-8")]);
        let content = Content {
            files: self.files.clone(),
            facts: self.facts.clone(),
        };
        let code = chartreg::cli::main(all.iter().map(Into::into), || content);
        assert_eq!(code, ExitCode::SUCCESS, "chartreg {}", all.join(" "));
        out
    }
}

/// A pull by tag and by digest of each upstream's `nutanix/demo-app:v1` gets that upstream's
/// digest and unpacks its own layer; the multi-platform index is pulled for one platform and
/// for all. `hosts` is the folder mirror-config wrote.
fn pulls_each_registrys_own_images(
    containerd: &Containerd,
    upstreams: &TwoUpstreams,
    hosts: &Path,
) {
    for upstream in [&upstreams.a, &upstreams.b] {
        let digest = upstream.digest(DEMO_APP);
        let by_digest = format!("{}/{DEMO_APP}@{digest}", upstream.host());
        for reference in [upstream.reference(DEMO_APP), by_digest] {
            containerd.pull_ok(&reference, hosts, &[]);
            assert_eq!(
                containerd.image_digest(&reference).as_deref(),
                Some(digest),
                "{reference}: the upstream's digest"
            );
            assert!(containerd.unpacked(&reference), "{reference} unpacked");
        }
        let platform = format!("linux/{}", host_arch());
        assert!(
            containerd
                .native_snapshots()
                .contains(&upstream.platform(DEMO_APP, &platform).chain_id),
            "{}'s own layer unpacked",
            upstream.reference(DEMO_APP)
        );
    }
    let multi = upstreams.a.reference(MULTI);
    containerd.pull_ok(&multi, hosts, &["--platform", "linux/arm64"]);
    assert_eq!(
        containerd.image_digest(&multi).as_deref(),
        Some(upstreams.a.digest(MULTI))
    );
    let arm64 = upstreams.a.platform(MULTI, "linux/arm64");
    assert!(containerd.content_digests().contains(&arm64.manifest));
    assert!(containerd.native_snapshots().contains(&arm64.chain_id));
    containerd.pull_ok(&multi, hosts, &["--all-platforms"]);
    for platform in MULTI_PLATFORMS {
        let image = upstreams.a.platform(MULTI, platform);
        assert!(
            containerd.content_digests().contains(&image.manifest),
            "{platform}"
        );
        assert!(
            containerd.native_snapshots().contains(&image.chain_id),
            "{platform}"
        );
    }
}

/// Over plain HTTP: the upstreams are stopped before the pulls, so every byte comes from
/// chartreg, and each registry's pulls get that registry's images.
#[test]
fn containerd_pulls_every_registrys_images_through_chartreg() {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let Some(mut mirrored) = Mirrored::make("quay.io") else {
        return;
    };
    let server = InProcess::start(mirrored.registry());
    let hosts = mirrored.mirror_config(&["--mirror-url", &server.url()]);
    for upstream in [&mirrored.upstreams.a, &mirrored.upstreams.b] {
        let toml = std::fs::read_to_string(hosts.path().join(upstream.host()).join("hosts.toml"))
            .expect("a hosts.toml per upstream");
        assert!(
            toml.contains(&format!("[host.\"{}\"]", server.url())),
            "{toml}"
        );
    }
    mirrored.upstreams.stop();
    pulls_each_registrys_own_images(&containerd, &mirrored.upstreams, hosts.path());
}

/// Over HTTPS, chartreg's certificate signed by a private CA that only the hosts.toml files
/// name (`--ca-file`).
#[test]
fn containerd_pulls_through_chartreg_over_https_with_a_private_ca() {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let Some(mut mirrored) = Mirrored::make("quay.io") else {
        return;
    };
    let cert = LoopbackCert::new("chartreg mirror test CA");
    let server = InProcess::start_tls(mirrored.registry(), cert.server_config());
    let work = tempfile::tempdir().expect("temp dir");
    let ca = work.path().join("ca.pem");
    std::fs::write(&ca, &cert.ca_pem).expect("write the CA");
    let hosts = mirrored.mirror_config(&[
        "--mirror-url",
        &server.url(),
        "--ca-file",
        ca.to_str().expect("UTF-8"),
    ]);
    mirrored.upstreams.stop();
    pulls_each_registrys_own_images(&containerd, &mirrored.upstreams, hosts.path());
}

/// With `--no-upstream-fallback`, a pull of an image chartreg does not hold fails, and nothing
/// asks upstream: the upstream is a recorder that counts connections. Without it, the same pull
/// does ask upstream (so a count of 0 means something). Held images still pull.
#[test]
fn without_upstream_fallback_nothing_reaches_upstream() {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let recorder = Recorder::start();
    let Some(mirrored) = Mirrored::make(&recorder.host()) else {
        return;
    };
    let server = InProcess::start(mirrored.registry());
    let held = format!("{}/images/sample:v1", recorder.host());
    let missing = format!("{}/nutanix/not-held:v1", recorder.host());
    let timeout = Duration::from_secs(5);

    let only = mirrored.mirror_config(&["--mirror-url", &server.url(), "--no-upstream-fallback"]);
    containerd.pull_ok(&held, only.path(), &[]);
    assert_eq!(
        containerd.image_digest(&held),
        Some(assets_tag_digest("images/sample", "v1"))
    );
    let out = containerd.pull_within(&missing, only.path(), &[], timeout);
    assert!(
        !out.status.success(),
        "{missing} pulled: {}",
        describe_pull(&out)
    );
    assert_eq!(
        recorder.connections(),
        0,
        "a request left for upstream: {}",
        describe_pull(&out)
    );

    let with_fallback = mirrored.mirror_config(&["--mirror-url", &server.url()]);
    let out = containerd.pull_within(&missing, with_fallback.path(), &[], timeout);
    assert!(!out.status.success());
    assert!(
        recorder.connections() > 0,
        "with fallback, upstream is asked: {}",
        describe_pull(&out)
    );
}

/// The binary over the content it embeds (the sample: no upstream registry) says there is
/// nothing to mirror and what to do; `--default --format kubeadm` gives a KubeadmConfigTemplate.
#[test]
fn the_binary_says_when_it_holds_nothing_to_mirror() {
    let err = mirror_config_fails(&["--out", "/nonexistent/never-written"]);
    assert!(
        err.contains("no images kept per upstream registry") && err.contains("--default"),
        "{err}"
    );
    assert!(!Path::new("/nonexistent/never-written").exists());

    let out = mirror_config_run(&["--default", "--format", "kubeadm"]);
    assert!(out.status.success(), "{}", describe(&out));
    let doc: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).expect("YAML");
    assert_eq!(doc["kind"], "KubeadmConfigTemplate");
    let files = doc["spec"]["template"]["spec"]["files"]
        .as_array()
        .expect("files");
    assert_eq!(
        files[0]["path"],
        "/etc/containerd/certs.d/_default/hosts.toml"
    );
    assert!(
        files[0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("https://chartreg.example:5000")
    );

    // Files need a folder; the template needs none.
    let err = mirror_config_fails(&["--default"]);
    assert!(err.contains("give --out DIR"), "{err}");

    let out = common::output_of(
        Command::new(common::chartreg_bin()).args([
            "mirror-config",
            "--mirror-url",
            "chartreg:5000",
            "--default",
        ]),
        "chartreg mirror-config with a bad URL",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("chartreg:5000") && err.contains("http://"),
        "{err}"
    );
}

/// `chartreg mirror-config --mirror-url https://chartreg.example:5000 ARGS`, the binary over
/// the content it embeds.
fn mirror_config_run(args: &[&str]) -> std::process::Output {
    common::output_of(
        Command::new(common::chartreg_bin())
            .args([
                "mirror-config",
                "--mirror-url",
                "https://chartreg.example:5000",
            ])
            .args(args),
        "chartreg mirror-config",
    )
}

/// [`mirror_config_run`], which must fail: what it said.
fn mirror_config_fails(args: &[&str]) -> String {
    let out = mirror_config_run(args);
    assert!(!out.status.success(), "mirror-config {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The CRI-O drop-in, read by containers/image as CRI-O and podman read it (skopeo with
/// `--registries-conf`): each registry's image comes from chartreg under the path form
/// (`chartreg/127.0.0.1_PORT/...`, containers/image sends no `ns`), the upstreams stopped.
#[test]
fn containers_image_pulls_through_the_cri_o_drop_in() {
    let Some(skopeo) = common::tool("skopeo") else {
        return;
    };
    let Some(mut mirrored) = Mirrored::make("quay.io") else {
        return;
    };
    let server = InProcess::start(mirrored.registry());
    let url = server.url();
    mirrored.upstreams.stop();
    for fallback in [true, false] {
        let mut args = vec!["--mirror-url", url.as_str()];
        if !fallback {
            args.push("--no-upstream-fallback");
        }
        let out = mirrored.mirror_config(&args);
        let conf = out
            .path()
            .join("containers/registries.conf.d/50-chartreg.conf");
        for upstream in [&mirrored.upstreams.a, &mirrored.upstreams.b] {
            let reference = upstream.reference(DEMO_APP);
            let inspected = common::output_of(
                Command::new(&skopeo)
                    .arg("--registries-conf")
                    .arg(&conf)
                    .args(["inspect", "--raw", &format!("docker://{reference}")]),
                "skopeo inspect",
            );
            assert!(
                inspected.status.success(),
                "{reference} through {}: {}",
                std::fs::read_to_string(&conf).unwrap_or_default(),
                describe(&inspected)
            );
            assert_eq!(
                common::sha256(&inspected.stdout),
                upstream.digest(DEMO_APP),
                "{reference}"
            );
        }
    }
}

/// `--default` writes `_default/hosts.toml`, which containerd (1.6.20 included) takes for a
/// registry without a folder of its own: with `quay.io`'s folder removed, a pull of a quay.io
/// image still goes to chartreg, which resolves it by `?ns=quay.io`.
#[test]
fn the_default_entry_sends_every_other_registry_to_chartreg() {
    let Some(containerd) = Containerd::start() else {
        return;
    };
    let Some(mirrored) = Mirrored::make("quay.io") else {
        return;
    };
    let server = InProcess::start(mirrored.registry());
    let hosts = mirrored.mirror_config(&["--mirror-url", &server.url(), "--default"]);
    std::fs::remove_dir_all(hosts.path().join("quay.io")).expect("remove quay.io's folder");
    let reference = "quay.io/images/sample:v1";
    containerd.pull_ok(reference, hosts.path(), &[]);
    assert_eq!(
        containerd.image_digest(reference),
        Some(assets_tag_digest("images/sample", "v1"))
    );
}
