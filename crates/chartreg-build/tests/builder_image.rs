//! The builder image as a CI job or a build machine without internet runs it: `make
//! builder-image` writes it as an OCI image layout, `target/dist/builder-oci` (`make test` does,
//! before the tests; `CHARTREG_BUILDER_OCI` names another), tagged with the version in
//! `builder-tag` beside it. Its config puts the image's Rust toolchain first on the `PATH` and
//! names the warm cache (`CHARTREG_CACHE`). Its root file system is unpacked from the layers,
//! and inside it, as a container runs it (a chroot with mount and network namespaces of its own,
//! so no network, and only the config's environment), `init` writes a content repository, a
//! chart package with a `v`-prefixed version (`helm package`) and a chart folder go in, and
//! `build` compiles the server: the warm cache leaves only the crate that embeds the content to
//! compile, as cargo's own output says; again after one more chart. The server it wrote runs on
//! this machine (it is static) and lists every chart, and `image` writes its image without
//! compiling again. The warm cache is the release archive's one cold compile in the suite
//! (offline, empty `CARGO_HOME`, every dependency from the kit's vendored source): its
//! dependency information names the kit's sources.
//!
//! Runs as root (chroot, namespaces); skipped otherwise, and without the layout or the tools,
//! except under `CI=true`, where each of those fails.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use common::{chart_folder, ci, compiled, describe, root};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Skips the test (returns false) when `present` is not, or fails under `CI=true`.
fn needed(present: bool, what: &str) -> bool {
    assert!(present || !ci(), "{what}");
    if !present {
        eprintln!("skipping: {what}");
    }
    present
}

/// The builder image's layout, if there is one.
fn layout() -> Option<PathBuf> {
    let dir = std::env::var_os("CHARTREG_BUILDER_OCI")
        .map_or_else(|| root().join("target/dist/builder-oci"), PathBuf::from);
    let what = format!(
        "no builder image at {}: `make builder-image` (make test does) writes it before the tests",
        dir.display()
    );
    needed(dir.join("index.json").is_file(), &what).then_some(dir)
}

/// A tool on the PATH, Helm 4 from `.tools/` (scripts/install-tools.sh installs both).
fn tool(name: &str) -> Option<PathBuf> {
    let found = match name {
        "helm4" => Some(root().join(".tools/helm4/helm")).filter(|p| p.is_file()),
        _ => std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        }),
    };
    let what = format!("{name} is not installed: scripts/install-tools.sh installs it");
    needed(found.is_some(), &what);
    found
}

fn is_root() -> bool {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}

fn json(path: &Path) -> Value {
    let data = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The builder image in a layout: its tag, manifest and config.
struct Image {
    layout: PathBuf,
    tag: String,
    manifest: Value,
    config: Value,
}

impl Image {
    fn open(layout: &Path) -> Image {
        let tag_file = layout.with_file_name("builder-tag");
        let tag = fs::read_to_string(&tag_file)
            .unwrap_or_else(|e| panic!("{}: {e}", tag_file.display()))
            .trim_end()
            .to_owned();
        let index = json(&layout.join("index.json"));
        let entry = index["manifests"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag.as_str())
            .unwrap_or_else(|| panic!("no manifest tagged {tag} (builder-tag) in {index}"));
        let blob = |digest: &Value| {
            let digest = digest.as_str().expect("a digest");
            let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
            layout.join("blobs/sha256").join(hex)
        };
        let manifest = json(&blob(&entry["digest"]));
        let config = json(&blob(&manifest["config"]["digest"]));
        Image {
            layout: layout.to_owned(),
            tag,
            manifest,
            config,
        }
    }

    /// The config's environment, `NAME=VALUE` each.
    fn env(&self) -> Vec<String> {
        let env = self.config["config"]["Env"].as_array();
        env.into_iter()
            .flatten()
            .map(|v| v.as_str().expect("Env holds strings").to_owned())
            .collect()
    }

    /// Unpacks every layer, in order, into `into` (the layers only add files: no whiteouts).
    fn unpack(&self, into: &Path) {
        for layer in self.manifest["layers"].as_array().expect("layers") {
            let media_type = layer["mediaType"].as_str().unwrap_or_default();
            assert_eq!(
                media_type, "application/vnd.oci.image.layer.v1.tar+gzip",
                "{layer}"
            );
            let digest = layer["digest"].as_str().expect("a layer digest");
            let path = self
                .layout
                .join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:"));
            let file = fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let gz = flate2::read::GzDecoder::new(std::io::BufReader::new(file));
            let mut archive = tar::Archive::new(gz);
            archive.set_preserve_permissions(true);
            archive.set_preserve_ownerships(true);
            archive.set_preserve_mtime(true);
            for entry in archive.entries().expect("a tar layer") {
                let mut entry = entry.expect("a tar entry");
                let name = entry.path().expect("a path").into_owned();
                let whiteout = name
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(".wh."));
                assert!(!whiteout, "{digest}: a whiteout, {}", name.display());
                entry
                    .unpack_in(into)
                    .unwrap_or_else(|e| panic!("{digest}: {}: {e}", name.display()));
            }
        }
    }
}

/// The image's root file system, run as a container runs it, with no network.
struct Container<'a> {
    root: &'a Path,
    unshare: &'a Path,
    env: Vec<String>,
}

impl Container<'_> {
    /// `ARGS` in the root: new mount and network namespaces, then `scripts/in-root.sh` (/proc,
    /// a /dev of the nodes compilers open), the image's environment and HOME only, as
    /// make-builder-image.sh runs its checks.
    fn run(&self, args: &[&str]) -> Output {
        let script = root().join("scripts/in-root.sh");
        Command::new(self.unshare)
            .args(["--net", "--mount", "--fork", "--"])
            .arg(script)
            .arg(self.root)
            .args(&self.env)
            .arg("HOME=/root")
            .args(args)
            .env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .output()
            .expect("unshare runs")
    }

    /// `chartreg-build build` of the team's repository; the crates cargo compiled.
    fn build(&self) -> Vec<String> {
        let out = self.run(&[
            "chartreg-build",
            "build",
            "--config",
            "/work/team/content.yaml",
            "--out",
            "/work/team/chartreg",
        ]);
        assert!(out.status.success(), "build: {}", describe(&out));
        compiled(&out)
    }
}

#[test]
fn the_builder_image_builds_a_content_repository_offline_from_its_warm_cache() {
    let Some(layout) = layout() else { return };
    let (Some(unshare), Some(helm)) = (tool("unshare"), tool("helm4")) else {
        return;
    };
    if !needed(
        is_root(),
        "not root: the image is run with chroot in namespaces",
    ) {
        return;
    }
    let image = Image::open(&layout);
    assert_eq!(image.tag, env!("CARGO_PKG_VERSION"));
    let labels = &image.config["config"]["Labels"];
    assert_eq!(labels["org.opencontainers.image.title"], "chartreg-builder");
    assert_eq!(
        labels["org.opencontainers.image.version"],
        image.tag.as_str()
    );
    let env = image.env();
    assert!(
        env.iter()
            .any(|v| v == "CHARTREG_CACHE=/var/cache/chartreg"),
        "{env:?}"
    );
    assert!(
        env.iter()
            .any(|v| v.starts_with("PATH=/usr/local/rust/bin:")),
        "{env:?}"
    );

    let rootfs = tempfile::tempdir().unwrap();
    image.unpack(rootfs.path());
    let container = Container {
        root: rootfs.path(),
        unshare: &unshare,
        env,
    };
    // The warm cache is the release archive's cold compile (make-builder-image.sh's warm-up,
    // offline, with an empty CARGO_HOME): every dependency of the server, and the kit's own
    // crates, compiled from the kit's vendored source at the path the tool has in the image.
    warm_cache_was_compiled_from_the_kit(rootfs.path());

    let out = container.run(&["chartreg-build", "init", "/work/team"]);
    assert!(out.status.success(), "init: {}", describe(&out));

    // A package with a `v`-prefixed version, as `helm package` writes it, and a chart folder.
    let charts = rootfs.path().join("work/team/charts");
    let sources = tempfile::tempdir().unwrap();
    chart_folder(sources.path(), "web", "v1.2.3");
    let out = Command::new(&helm)
        .arg("package")
        .arg(sources.path().join("web"))
        .arg("--destination")
        .arg(&charts)
        .env("HOME", sources.path())
        .output()
        .expect("helm runs");
    assert!(out.status.success(), "helm package: {}", describe(&out));
    assert!(charts.join("web-v1.2.3.tgz").is_file());
    chart_folder(&charts, "api", "0.3.0");
    assert_eq!(
        container.build(),
        ["chartreg-bin"],
        "the warm cache leaves only the crate that embeds the content to compile"
    );

    chart_folder(&charts, "worker", "2.0.0");
    assert_eq!(container.build(), ["chartreg-bin"], "after one more chart");

    let server = rootfs.path().join("work/team/chartreg");
    let out = Command::new(&server)
        .args(["ls", "--json"])
        .output()
        .expect("the server runs here");
    assert!(out.status.success(), "ls: {}", describe(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("ls --json prints JSON");
    let listed: Vec<(String, String)> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (field("repository"), field("tag"))
        })
        .collect();
    for chart in [
        ("charts/web", "v1.2.3"),
        ("charts/api", "0.3.0"),
        ("charts/worker", "2.0.0"),
    ] {
        assert!(
            listed
                .iter()
                .any(|(r, t)| (r.as_str(), t.as_str()) == chart),
            "{chart:?} in {listed:?}"
        );
    }

    // Static: no interpreter, no shared library (it runs on this machine and in a scratch image).
    if let Some(readelf) = tool("readelf") {
        let headers = Command::new(readelf)
            .args(["--program-headers", "--dynamic"])
            .arg(&server)
            .output()
            .expect("readelf runs");
        let headers = String::from_utf8_lossy(&headers.stdout);
        assert!(
            !headers.contains("program interpreter") && !headers.contains("(NEEDED)"),
            "statically linked: {headers}"
        );
    }
    // Nothing came from a registry: cargo's home in the image holds none.
    assert!(
        !rootfs.path().join("root/.cargo/registry").exists(),
        "nothing was downloaded into CARGO_HOME"
    );

    // The image from the content file: the binary is up to date (nothing compiled); the layout
    // is written, tagged with the version and the content digest, as the tag file says.
    let out = container.run(&[
        "chartreg-build",
        "image",
        "--config",
        "/work/team/content.yaml",
        "--out",
        "/work/team/image",
        "--tag-file",
        "/work/team/image.tag",
    ]);
    assert!(out.status.success(), "image: {}", describe(&out));
    assert_eq!(compiled(&out), Vec::<String>::new(), "{}", describe(&out));
    let team = rootfs.path().join("work/team");
    let tag = fs::read_to_string(team.join("image.tag")).expect("image wrote its tag file");
    let tag = tag.trim_end();
    assert!(
        tag.starts_with(&format!("{}-", env!("CARGO_PKG_VERSION"))),
        "{tag}"
    );
    let index = fs::read_to_string(team.join("image/index.json")).expect("a layout");
    assert!(index.contains(&format!("\"{tag}\"")), "{index}");
    if let Some(skopeo) = tool("skopeo") {
        let inspect = Command::new(skopeo)
            .arg("inspect")
            .arg(format!("oci:{}:{tag}", team.join("image").display()))
            .output()
            .expect("skopeo runs");
        assert!(inspect.status.success(), "{}", describe(&inspect));
        let text = String::from_utf8_lossy(&inspect.stdout);
        assert!(text.contains("io.chartreg.content.digest"), "{text}");
    }
}

/// The warm cache in the unpacked image `rootfs` holds what a cold compile of the image's kit
/// leaves: the dependency information of the server's dependencies (actix-web, rustls) naming
/// their source in the kit's `vendor/`, and of the kit's own crates (chartreg-core).
fn warm_cache_was_compiled_from_the_kit(rootfs: &Path) {
    let kit = "/opt/chartreg-build/share/chartreg/kit";
    let kit_id = fs::read_to_string(rootfs.join(kit.trim_start_matches('/')).join("KIT_ID"))
        .expect("the image holds the kit's KIT_ID");
    let host = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let deps = rootfs.join(format!(
        "var/cache/chartreg/build-{}/{host}/release/deps",
        kit_id.trim_end()
    ));
    let infos: Vec<(String, String)> = fs::read_dir(&deps)
        .unwrap_or_else(|e| panic!("{}: {e}", deps.display()))
        .map(|e| e.expect("a cache entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "d"))
        .map(|p| {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let text = fs::read_to_string(&p).unwrap_or_default();
            (name, text)
        })
        .collect();
    for (krate, source) in [
        ("actix_web-", format!("{kit}/vendor/actix-web")),
        ("rustls-", format!("{kit}/vendor/rustls")),
        ("chartreg_core-", "crates/core/src/lib.rs".to_owned()),
    ] {
        assert!(
            infos
                .iter()
                .any(|(name, text)| name.starts_with(krate) && text.contains(&source)),
            "no {krate}*.d naming {source} in {}",
            deps.display()
        );
    }
}

/// The builder image `make builder-image-cross` writes (`target/dist/builder-cross/oci`:
/// make-builder-image.sh with `BUILDER_CROSS=arm64`) builds linux/arm64 servers too, offline,
/// from its warm cache: in its root file system, run as a container runs it, `build --platform
/// linux/arm64` of a new content repository compiles only the crate that embeds the content
/// (Debian's rustc, the aarch64 standard library and cross gcc it carries, and the arm64
/// dependencies its warm-up compiled), and the server it writes is a static aarch64 executable
/// that lists the chart under qemu-user. Run by `make test-builder-cross`, not by `make test`.
#[test]
#[ignore = "make test-builder-cross writes the builder image that builds linux/arm64 too"]
fn the_cross_builder_image_builds_an_arm64_server_offline_from_its_warm_cache() {
    let layout = root().join("target/dist/builder-cross/oci");
    assert!(
        layout.join("index.json").is_file(),
        "{}: `make builder-image-cross` writes it",
        layout.display()
    );
    let unshare = tool("unshare").expect("unshare (util-linux)");
    let qemu = tool("qemu-aarch64-static").expect("qemu-aarch64-static: make tools-cross");
    assert!(
        is_root(),
        "the image is run with chroot in namespaces: run as root"
    );
    let image = Image::open(&layout);
    let labels = &image.config["config"]["Labels"];
    assert!(
        labels["org.opencontainers.image.description"]
            .as_str()
            .unwrap_or_default()
            .ends_with("for linux/amd64 and linux/arm64"),
        "{labels}"
    );
    let rootfs = tempfile::tempdir().unwrap();
    image.unpack(rootfs.path());
    let container = Container {
        root: rootfs.path(),
        unshare: &unshare,
        env: image.env(),
    };
    let out = container.run(&["chartreg-build", "init", "/work/team"]);
    assert!(out.status.success(), "init: {}", describe(&out));
    chart_folder(&rootfs.path().join("work/team/charts"), "api", "0.3.0");
    let out = container.run(&[
        "chartreg-build",
        "build",
        "--config",
        "/work/team/content.yaml",
        "--platform",
        "linux/arm64",
        "--out",
        "/work/team/chartreg.arm64",
    ]);
    assert!(out.status.success(), "build: {}", describe(&out));
    assert_eq!(
        compiled(&out),
        ["chartreg-bin"],
        "the warm cache leaves only the crate that embeds the content to compile"
    );
    let server = rootfs.path().join("work/team/chartreg.arm64");
    let bytes = fs::read(&server).unwrap();
    assert_eq!(
        u16::from_le_bytes([bytes[18], bytes[19]]),
        183,
        "EM_AARCH64: an arm64 server"
    );
    let out = Command::new(&qemu)
        .arg(&server)
        .args(["ls", "--json"])
        .output()
        .expect("qemu-aarch64-static runs");
    assert!(out.status.success(), "ls: {}", describe(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("ls --json prints JSON");
    assert!(
        rows.as_array()
            .expect("rows")
            .iter()
            .any(|r| r["repository"] == "charts/api" && r["tag"] == "0.3.0"),
        "{rows}"
    );
}
