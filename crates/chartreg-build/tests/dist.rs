//! The release archive as a build machine without internet uses it: `make dist` writes
//! `target/dist/chartreg-build-VERSION-ARCH-linux.tar.gz` (`make test` does, before the tests;
//! `CHARTREG_DIST` names another), which is unpacked outside the source tree; then, with the
//! network off (`unshare -n`) and an empty `CARGO_HOME`, `init` writes a content repository,
//! real-shaped charts go in (a package, a chart folder with a `v`-prefixed version), and `build`
//! compiles the server from the kit in the archive with an empty cache (the cold compile, every
//! dependency from the vendored source). A chart added afterwards recompiles only the crate that
//! embeds the content, as cargo's own output says. The binary is static and serves what was put
//! in; `image --config` writes its image without compiling again. Bad input (no kit, a platform not built for) is refused with a message saying what to do.
//!
//! The cold compile takes about 3 minutes of two cores here; it runs beside the other tests.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use common::{chart_folder, ci, compiled, describe, root};
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The release archive `make dist` wrote, if there is one (under `CI=true` there must be).
fn archive() -> Option<PathBuf> {
    let arch = std::env::consts::ARCH;
    let path = std::env::var_os("CHARTREG_DIST").map_or_else(
        || {
            root().join(format!(
                "target/dist/chartreg-build-{}-{arch}-linux.tar.gz",
                env!("CARGO_PKG_VERSION")
            ))
        },
        PathBuf::from,
    );
    if path.is_file() {
        return Some(path);
    }
    assert!(
        !ci(),
        "{} is missing: `make dist` (make test does) writes it before the tests",
        path.display()
    );
    eprintln!("skipping: no release archive ({})", path.display());
    None
}

/// A tool on the PATH, required under `CI=true`.
fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    assert!(found.is_some() || !ci(), "{name} is not installed");
    found
}

/// The real cargo and rustc (not rustup's proxies, which need a home of their own), so that the
/// build machine below has nothing from this one's cargo folders.
fn toolchain() -> (PathBuf, PathBuf) {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc runs");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (sysroot.join("bin/cargo"), sysroot.join("bin/rustc"))
}

/// A build machine: commands run with no network, an empty cargo home, and a home of their own.
struct Machine {
    dir: tempfile::TempDir,
    tool: PathBuf,
    unshare: PathBuf,
}

impl Machine {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `chartreg-build ARGS`, offline.
    fn run(&self, args: &[&str]) -> Output {
        let (cargo, rustc) = toolchain();
        let mut cmd = Command::new(&self.unshare);
        cmd.arg("-n")
            .arg(&self.tool)
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.path("home"))
            .env("CARGO_HOME", self.path("cargo-home"))
            .env("CARGO", cargo)
            .env("RUSTC", rustc);
        cmd.output().expect("unshare runs")
    }
}

#[test]
fn a_content_repository_builds_offline_from_the_release_archive() {
    let Some(archive) = archive() else { return };
    let (Some(unshare), Some(tar)) = (tool("unshare"), tool("tar")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    assert!(!dir.path().starts_with(root().canonicalize().unwrap()));
    let out = Command::new(tar)
        .arg("xzf")
        .arg(&archive)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let name = format!(
        "chartreg-build-{}-{}-linux",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    );
    let build_tool = dir.path().join(&name).join("bin/chartreg-build");
    assert!(build_tool.is_file(), "the archive holds bin/chartreg-build");
    fs::create_dir_all(dir.path().join("cargo-home")).unwrap();
    fs::create_dir_all(dir.path().join("home")).unwrap();
    let machine = Machine {
        dir,
        tool: build_tool,
        unshare,
    };

    // Offline indeed: nothing answers outside this machine.
    let probe = Command::new(&machine.unshare)
        .args(["-n", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/1"])
        .output()
        .unwrap();
    assert!(!probe.status.success(), "no network in the namespace");

    // 1. A new content repository, with a package and a folder whose version starts with `v`.
    let init = machine.run(&["init", "team"]);
    assert!(init.status.success(), "{}", describe(&init));
    let said = String::from_utf8_lossy(&init.stdout);
    assert!(
        said.contains("next:") && said.contains("chartreg-build build"),
        "{said}"
    );
    let team = machine.path("team");
    fs::copy(
        root().join("charts/hello-1.0.0.tgz"),
        team.join("charts/hello-1.0.0.tgz"),
    )
    .unwrap();
    chart_folder(&team.join("charts"), "tiller-free", "v2.0.0");

    // 2. The cold build: every crate from the kit, nothing from the network or a cargo home.
    let first = machine.run(&["build", "--config", "team/content.yaml", "--cache", "cache"]);
    assert!(first.status.success(), "{}", describe(&first));
    let cold = compiled(&first);
    assert!(
        cold.iter().any(|c| c == "chartreg") && cold.iter().any(|c| c == "actix-web"),
        "a cold build compiles the server and its dependencies: {cold:?}"
    );
    assert!(
        !machine.path("cargo-home/registry").exists(),
        "nothing was downloaded into CARGO_HOME"
    );
    let bin = team.join("chartreg");
    let listing = Command::new(&bin).arg("ls").output().unwrap();
    assert!(listing.status.success(), "{}", describe(&listing));
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    for (repository, tag) in [("charts/hello", "1.0.0"), ("charts/tiller-free", "v2.0.0")] {
        assert!(
            listing
                .lines()
                .any(|l| l.starts_with(repository) && l.split_whitespace().nth(1) == Some(tag)),
            "{repository}:{tag} is served:\n{listing}"
        );
    }
    if let Some(readelf) = tool("readelf") {
        let headers = Command::new(readelf)
            .args(["--program-headers", "--dynamic"])
            .arg(&bin)
            .output()
            .unwrap();
        let headers = String::from_utf8_lossy(&headers.stdout);
        assert!(
            !headers.contains("program interpreter") && !headers.contains("(NEEDED)"),
            "statically linked: {headers}"
        );
    }

    // 3. One chart more: only the crate that embeds the content is compiled again.
    fs::copy(
        root().join("charts/motd-1.0.0.tgz"),
        team.join("charts/motd-1.0.0.tgz"),
    )
    .unwrap();
    let second = machine.run(&["build", "--config", "team/content.yaml", "--cache", "cache"]);
    assert!(second.status.success(), "{}", describe(&second));
    assert_eq!(compiled(&second), ["chartreg-bin"], "{}", describe(&second));
    let listing = Command::new(&bin).arg("ls").output().unwrap();
    assert!(
        String::from_utf8_lossy(&listing.stdout).contains("charts/motd"),
        "{}",
        describe(&listing)
    );

    // 4. The image from the content file: the binary is up to date (nothing compiled), the
    //    layout written, tagged with the version and the content digest, as the tag file says.
    let image = machine.run(&[
        "image",
        "--config",
        "team/content.yaml",
        "--cache",
        "cache",
        "--out",
        "team/image",
        "--tag-file",
        "team/image.tag",
    ]);
    assert!(image.status.success(), "{}", describe(&image));
    assert_eq!(
        compiled(&image),
        Vec::<String>::new(),
        "{}",
        describe(&image)
    );
    let tag = fs::read_to_string(team.join("image.tag")).unwrap();
    let tag = tag.trim_end();
    assert!(
        tag.starts_with(&format!("{}-", env!("CARGO_PKG_VERSION"))),
        "{tag}"
    );
    let index = fs::read_to_string(team.join("image/index.json")).unwrap();
    assert!(index.contains(&format!("\"{tag}\"")), "{index}");
    if let Some(skopeo) = tool("skopeo") {
        let inspect = Command::new(skopeo)
            .arg("inspect")
            .arg(format!("oci:{}:{tag}", team.join("image").display()))
            .output()
            .unwrap();
        assert!(inspect.status.success(), "{}", describe(&inspect));
        let text = String::from_utf8_lossy(&inspect.stdout);
        assert!(text.contains("io.chartreg.content.digest"), "{text}");
    }

    // 5. Refused with what to do: a platform the server is not built for; a tool without its kit.
    let refused = machine.run(&[
        "build",
        "--config",
        "team/content.yaml",
        "--cache",
        "cache",
        "--platform",
        "linux/s390x",
    ]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("linux/s390x") && said.contains("linux/amd64"),
        "{said}"
    );
    let lone = machine.path("lone/bin");
    fs::create_dir_all(&lone).unwrap();
    fs::copy(&machine.tool, lone.join("chartreg-build")).unwrap();
    let kitless = Machine {
        dir: tempfile::tempdir().unwrap(),
        tool: lone.join("chartreg-build"),
        unshare: machine.unshare.clone(),
    };
    fs::create_dir_all(kitless.path("cargo-home")).unwrap();
    let out = kitless.run(&[
        "build",
        "--config",
        team.join("content.yaml").to_str().unwrap(),
        "--assets",
        kitless.path("assets").to_str().unwrap(),
        "--out",
        kitless.path("chartreg").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no server kit") && said.contains("share/chartreg/kit"),
        "{said}"
    );
    assert!(!kitless.path("chartreg").exists(), "no binary written");
}
