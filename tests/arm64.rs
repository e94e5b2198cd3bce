//! The server for linux/arm64, built on this amd64 machine (`make build-arm64`: Debian's
//! rustc-web with the aarch64 standard library, the aarch64 cross gcc), run under qemu-user
//! (`qemu-aarch64-static BINARY`, named explicitly: no binfmt registration is needed), and the
//! image index of both platforms (`make image-multiplatform`) pulled by a node's containerd.
//!
//! - The binary: an aarch64 ELF executable without an interpreter (static), holding the sample
//!   content; a layer of the sample image is linked in as an AArch64 object (the Makefile builds
//!   it with a small `CHARTREG_LINK_THRESHOLD`), its symbol is in the binary, and it is served
//!   byte-exact.
//! - Under qemu-user it serves: Helm 3 and 4 pull the chart byte-exact, skopeo copies the
//!   two-platform sample image keeping every digest, the page answers, `chartreg verify` passes,
//!   and SIGTERM stops it with status 0.
//! - The image index: linux/amd64 and linux/arm64, each with the SBOMs its own binary prints,
//!   which list what trivy finds in it; pushed to CNCF distribution with skopeo;
//!   containerd pulls it with `--platform linux/arm64` and gets the arm64 server (its ELF
//!   header, read from what containerd stored), and with no platform the amd64 one; written
//!   again into another folder, it has the same digest.
//!
//! Run by `make test-arm64` (which builds both), not by `make test`: every test here is
//! `#[ignore]`d, and fails, saying what to build, when its binary or image is missing.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use common::{
    Containerd, Distribution, Helm, Process, Skopeo, assert_same_bytes, assets_tag_digest, root,
};

/// `EM_AARCH64` and `EM_X86_64`, the ELF header's `e_machine`.
const EM_AARCH64: u16 = 183;
const EM_X86_64: u16 = 62;

/// A file named by an environment variable the Makefile sets.
fn given(var: &str, what: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{var} is not set: `make test-arm64` builds {what} and sets it"));
    assert!(path.is_file(), "{var}={}: no such file", path.display());
    path
}

/// The arm64 server `make build-arm64` wrote.
fn arm64_bin() -> PathBuf {
    given("CHARTREG_ARM64_BIN", "the linux/arm64 server")
}

/// qemu-user for aarch64, run by name.
fn qemu() -> PathBuf {
    common::tool("qemu-aarch64-static")
        .expect("qemu-aarch64-static (qemu-user-static; make tools-cross installs it)")
}

/// A script that runs the arm64 server under qemu-user with its arguments, so that the
/// harness that starts, signals and stops chartreg runs it unchanged (the script `exec`s qemu,
/// which passes signals to the program it runs).
fn under_qemu(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let script = dir.join("chartreg-arm64");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
            qemu().display(),
            arm64_bin().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// The ELF header's `e_machine`, and whether the file asks for an interpreter (`PT_INTERP`).
fn elf_machine_and_interp(bytes: &[u8]) -> (u16, bool) {
    assert_eq!(&bytes[..4], b"\x7fELF", "an ELF file");
    assert_eq!(bytes[4], 2, "64-bit");
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let (phoff, phentsize, phnum) = (u64_at(32) as usize, u16_at(54) as usize, u16_at(56));
    let interp = (0..phnum as usize).any(|i| {
        let at = phoff + i * phentsize;
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) == 3
    });
    (u16_at(18), interp)
}

/// The sample image's blob that the arm64 build linked as an object: its largest (10 KiB,
/// above the Makefile's `ARM64_LINK_THRESHOLD`).
fn linked_sample_blob() -> (String, PathBuf) {
    let folder = root().join("assets/images/sample/blobs/sha256");
    let largest = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let hex = largest.file_name().unwrap().to_str().unwrap().to_owned();
    (hex, largest)
}

#[test]
#[ignore = "make test-arm64 builds the linux/arm64 server and runs it"]
fn the_arm64_server_is_a_static_aarch64_executable_with_objects_linked_in() {
    let bytes = common::read(&arm64_bin());
    assert_eq!(
        elf_machine_and_interp(&bytes),
        (EM_AARCH64, false),
        "aarch64, static"
    );
    let (hex, _) = linked_sample_blob();
    let symbol = format!("chartreg_blob_{hex}");
    assert!(
        bytes.windows(symbol.len()).any(|w| w == symbol.as_bytes()),
        "{symbol} is linked in (the sample's layer as an AArch64 object)"
    );
}

#[test]
#[ignore = "make test-arm64 builds the linux/arm64 server and runs it"]
fn the_arm64_server_serves_real_clients_under_qemu() {
    let dir = tempfile::tempdir().unwrap();
    let bin = under_qemu(dir.path());
    let mut server = Process::start_with(&bin, &[]);

    // Helm 3 and 4: the packaged chart, byte for byte.
    for name in ["helm3", "helm4"] {
        let helm = Helm::new(name).unwrap_or_else(|| panic!("{name}: make tools installs it"));
        let out = tempfile::tempdir().unwrap();
        helm.pull(&server.host(), "hello", "1.0.0", out.path());
        assert_same_bytes(
            &common::read(&out.path().join("hello-1.0.0.tgz")),
            &root().join("charts/hello-1.0.0.tgz"),
            &format!("{name} pull from the arm64 server"),
        );
    }

    // skopeo: the two-platform sample image, every digest kept.
    let skopeo = Skopeo::new().expect("skopeo: make tools installs it");
    let copy = dir.path().join("copy");
    skopeo.ok(&[
        "copy",
        "--all",
        "--preserve-digests",
        "--src-tls-verify=false",
        &format!("docker://{}/images/sample:v1", server.host()),
        &format!("oci:{}:v1", copy.to_str().unwrap()),
    ]);
    let copied: Value = serde_json::from_slice(&common::read(&copy.join("index.json"))).unwrap();
    assert_eq!(
        copied["manifests"][0]["digest"],
        assets_tag_digest("images/sample", "v1").as_str()
    );

    // The blob linked in as an object, and the page.
    let curl = common::tool("curl").expect("curl");
    let (hex, file) = linked_sample_blob();
    let blob = dir.path().join("blob");
    let got = Command::new(&curl)
        .args(["-fsS", "-o"])
        .arg(&blob)
        .arg(format!(
            "{}/v2/images/sample/blobs/sha256:{hex}",
            server.url()
        ))
        .status()
        .unwrap();
    assert!(got.success(), "GET the linked blob");
    assert_same_bytes(&common::read(&blob), &file, "the blob linked as an object");
    let page = common::curl(&curl, "GET", &format!("{}/", server.url()), &[]);
    assert_eq!(page.status, 200, "the page: {}", page.body_text());
    assert!(
        page.body_text().contains("hello"),
        "the page lists the charts"
    );

    // SIGTERM: a graceful stop, status 0.
    server.signal("TERM");
    let status = server.wait();
    assert_eq!(status.code(), Some(0), "{}", server.log());
}

#[test]
#[ignore = "make test-arm64 builds the linux/arm64 server and runs it"]
fn chartreg_verify_passes_under_qemu() {
    let out = common::output_of(
        Command::new(qemu()).arg(arm64_bin()).arg("verify"),
        "chartreg verify (arm64)",
    );
    assert!(out.status.success(), "{}", common::describe(&out));
}

/// The image index `make image-multiplatform` wrote, and its tag.
fn multiplatform_layout() -> (PathBuf, String) {
    let layout = root().join("target/image-multiplatform/oci");
    assert!(
        layout.join("index.json").is_file(),
        "{}: `make image-multiplatform` (make test-arm64 runs it) writes it",
        layout.display()
    );
    let tag = std::fs::read_to_string(layout.with_file_name("tag")).unwrap();
    (layout, tag.trim_end().to_owned())
}

fn blob_path(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

/// The `/chartreg` file of a layer (a tar, gzip or not).
fn chartreg_in_layer(data: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let reader: Box<dyn std::io::Read> = if data.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(data))
    } else {
        Box::new(data)
    };
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        if path.trim_start_matches("./").trim_start_matches('/') == "chartreg" {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            return Some(bytes);
        }
    }
    None
}

#[test]
#[ignore = "make test-arm64 builds the image index of both platforms"]
fn containerd_pulls_each_platform_of_the_image_index() {
    let (layout, tag) = multiplatform_layout();
    let index: Value = serde_json::from_slice(&common::read(&layout.join("index.json"))).unwrap();
    let top = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == tag.as_str())
        .expect("the tag in index.json");
    assert_eq!(top["mediaType"], "application/vnd.oci.image.index.v1+json");
    let top_digest = top["digest"].as_str().unwrap().to_owned();
    let image_index: Value =
        serde_json::from_slice(&common::read(&blob_path(&layout, &top_digest))).unwrap();
    // Each platform's manifest, by architecture, and the layer holding /chartreg.
    let mut platforms = Vec::new();
    for m in image_index["manifests"].as_array().unwrap() {
        let arch = m["platform"]["architecture"].as_str().unwrap().to_owned();
        let manifest: Value = serde_json::from_slice(&common::read(&blob_path(
            &layout,
            m["digest"].as_str().unwrap(),
        )))
        .unwrap();
        let layer = manifest["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["digest"].as_str().unwrap().to_owned())
            .find(|d| chartreg_in_layer(&common::read(&blob_path(&layout, d))).is_some())
            .expect("a layer holds /chartreg");
        platforms.push((arch, layer));
    }
    platforms.sort();
    let arches: Vec<&str> = platforms.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(arches, ["amd64", "arm64"]);

    // Pushed to CNCF distribution as it is (skopeo), then pulled by containerd.
    let registry = Distribution::start().expect("docker-registry: make tools installs it");
    let skopeo = Skopeo::new().expect("skopeo");
    let reference = format!("{}/chartreg:{tag}", registry.host());
    skopeo.ok(&[
        "copy",
        "--all",
        "--preserve-digests",
        "--dest-tls-verify=false",
        &format!("oci:{}:{tag}", layout.to_str().unwrap()),
        &format!("docker://{reference}"),
    ]);
    for (platform, want_arch, want_machine) in [
        (Some("linux/arm64"), "arm64", EM_AARCH64),
        (None, "amd64", EM_X86_64),
    ] {
        let containerd = Containerd::start().expect("containerd: make tools installs it");
        let hosts = tempfile::tempdir().unwrap();
        let folder = hosts.path().join(registry.host());
        std::fs::create_dir_all(&folder).unwrap();
        let url = registry.url();
        std::fs::write(
            folder.join("hosts.toml"),
            format!(
                "server = \"{url}\"\n\n[host.\"{url}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
            ),
        )
        .unwrap();
        let extra: Vec<&str> = platform.map_or(vec![], |p| vec!["--platform", p]);
        containerd.pull_ok(&reference, hosts.path(), &extra);
        assert_eq!(
            containerd.image_digest(&reference).as_deref(),
            Some(top_digest.as_str())
        );
        let stored = containerd.content_digests();
        for (arch, layer) in &platforms {
            assert_eq!(
                stored.contains(layer),
                arch == want_arch,
                "{platform:?}: containerd fetched the {arch} layer or not: {stored:?}"
            );
        }
        let layer = &platforms.iter().find(|(a, _)| a == want_arch).unwrap().1;
        let out = containerd.ctr(&["content", "get", layer]).output().unwrap();
        assert!(out.status.success(), "ctr content get {layer}");
        let binary = chartreg_in_layer(&out.stdout).expect("/chartreg in the layer pulled");
        assert_eq!(
            elf_machine_and_interp(&binary),
            (want_machine, false),
            "{platform:?}: the {want_arch} server, static"
        );
    }
}

#[test]
#[ignore = "make test-arm64 builds the image index of both platforms"]
fn the_image_index_has_the_same_digest_from_another_folder() {
    let (layout, tag) = multiplatform_layout();
    let amd64 = given("CHARTREG_STATIC_BIN", "the linux/amd64 server");
    let digest_of = |layout: &Path| -> String {
        let index: Value =
            serde_json::from_slice(&common::read(&layout.join("index.json"))).unwrap();
        index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == tag.as_str())
            .unwrap()["digest"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let label = |key: &str| -> String {
        let index: Value =
            serde_json::from_slice(&common::read(&layout.join("index.json"))).unwrap();
        let top = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == tag.as_str())
            .unwrap()
            .clone();
        let image_index: Value = serde_json::from_slice(&common::read(&blob_path(
            &layout,
            top["digest"].as_str().unwrap(),
        )))
        .unwrap();
        let manifest: Value = serde_json::from_slice(&common::read(&blob_path(
            &layout,
            image_index["manifests"][0]["digest"].as_str().unwrap(),
        )))
        .unwrap();
        let config: Value = serde_json::from_slice(&common::read(&blob_path(
            &layout,
            manifest["config"]["digest"].as_str().unwrap(),
        )))
        .unwrap();
        config["config"]["Labels"][key]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // The same binaries, labels and time, copied to another folder first.
    let other = tempfile::tempdir().unwrap();
    let (a, b) = (
        other.path().join("a/chartreg"),
        other.path().join("b/chartreg"),
    );
    for (from, to) in [(&amd64, &a), (&arm64_bin(), &b)] {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
    let out = other.path().join("oci");
    let mut args = vec![
        "image".to_owned(),
        "--binary".to_owned(),
        format!("linux/amd64={}", a.display()),
        "--binary".to_owned(),
        format!("linux/arm64={}", b.display()),
        "--content-digest".to_owned(),
        label("io.chartreg.content.digest"),
        "--tag".to_owned(),
        tag.clone(),
        "--out".to_owned(),
        out.display().to_string(),
    ];
    for key in [
        "org.opencontainers.image.revision",
        "org.opencontainers.image.source",
    ] {
        let value = label(key);
        if !value.is_empty() {
            args.extend(["--label".to_owned(), format!("{key}={value}")]);
        }
    }
    let created = label("org.opencontainers.image.created");
    let epoch = Command::new("date")
        .args(["-u", "-d", &created, "+%s"])
        .output()
        .unwrap();
    let epoch = String::from_utf8(epoch.stdout).unwrap();
    let built = Command::new(common::chartreg_build_bin())
        .args(&args)
        .env("SOURCE_DATE_EPOCH", epoch.trim())
        .current_dir(other.path())
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", common::describe(&built));
    assert_eq!(digest_of(&out), digest_of(&layout), "the same index digest");
}

/// What a server binary prints when asked for an SBOM (`ls --sbom FORMAT`): the arm64 one run
/// under qemu-user.
fn printed_sbom(arch: &str, format: &str) -> Vec<u8> {
    let mut command = match arch {
        "arm64" => {
            let mut c = Command::new(qemu());
            c.arg(arm64_bin());
            c
        }
        _ => Command::new(given("CHARTREG_STATIC_BIN", "the linux/amd64 server")),
    };
    let out = command.args(["ls", "--sbom", format]).output().unwrap();
    assert!(out.status.success(), "{}", common::describe(&out));
    out.stdout
}

/// The index's SBOMs are each platform's own: every platform's manifest has an SPDX and a
/// CycloneDX referrer whose bytes are what that platform's binary prints (the arm64 one asked
/// under qemu-user), and none is about the index, which has no binary of its own; trivy finds
/// in each platform's image exactly the crates its SBOM lists.
#[test]
#[ignore = "make test-arm64 builds the image index of both platforms"]
fn each_platform_carries_the_sboms_its_own_binary_prints() {
    const SPDX: &str = "application/spdx+json";
    const CYCLONEDX: &str = "application/vnd.cyclonedx+json";
    let (layout, tag) = multiplatform_layout();
    let index: Value = serde_json::from_slice(&common::read(&layout.join("index.json"))).unwrap();
    let listed = index["manifests"].as_array().unwrap();
    let top = listed
        .iter()
        .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == tag.as_str())
        .expect("the tag in index.json");
    let top_digest = top["digest"].as_str().unwrap();
    // Every SBOM referrer index.json lists: (subject, artifact type, the document's bytes).
    let sboms: Vec<(String, String, Vec<u8>)> = listed
        .iter()
        .filter(|d| [SPDX, CYCLONEDX].contains(&d["artifactType"].as_str().unwrap_or("")))
        .map(|d| {
            let manifest: Value = serde_json::from_slice(&common::read(&blob_path(
                &layout,
                d["digest"].as_str().unwrap(),
            )))
            .unwrap();
            let layer = manifest["layers"][0]["digest"].as_str().unwrap();
            (
                manifest["subject"]["digest"].as_str().unwrap().to_owned(),
                d["artifactType"].as_str().unwrap().to_owned(),
                common::read(&blob_path(&layout, layer)),
            )
        })
        .collect();
    assert!(
        sboms.iter().all(|(subject, _, _)| subject != top_digest),
        "no SBOM is about the index"
    );
    let image_index: Value =
        serde_json::from_slice(&common::read(&blob_path(&layout, top_digest))).unwrap();
    let mut seen = Vec::new();
    for m in image_index["manifests"].as_array().unwrap() {
        let arch = m["platform"]["architecture"].as_str().unwrap();
        let digest = m["digest"].as_str().unwrap();
        for (media_type, format) in [(SPDX, "spdx"), (CYCLONEDX, "cyclonedx")] {
            let attached: Vec<&Vec<u8>> = sboms
                .iter()
                .filter(|(s, t, _)| s == digest && t == media_type)
                .map(|(_, _, data)| data)
                .collect();
            assert_eq!(
                attached.len(),
                1,
                "one {format} SBOM about the {arch} manifest"
            );
            assert!(
                *attached[0] == printed_sbom(arch, format),
                "the {arch} manifest's {format} SBOM is what the {arch} binary prints"
            );
            seen.push(format!("{arch} {format}"));
            if format == "cyclonedx" {
                let mut listed =
                    common::cyclonedx_libraries(&serde_json::from_slice(attached[0]).unwrap());
                listed.insert((
                    "chartreg-bin".to_owned(),
                    env!("CARGO_PKG_VERSION").to_owned(),
                ));
                assert_eq!(
                    trivy_finds(&layout, &tag, arch),
                    listed,
                    "trivy finds in the {arch} image the crates its SBOM lists (and the root)"
                );
            }
        }
    }
    assert_eq!(
        seen,
        [
            "amd64 spdx",
            "amd64 cyclonedx",
            "arm64 spdx",
            "arm64 cyclonedx"
        ]
    );
}

/// The crates trivy (`make tools` installs it) finds in the `arch` image of the index: what it
/// reads from that platform's binary (cargo-auditable's `.dep-v0`), offline. trivy's
/// `--platform` does not choose within a layout given as `--input` (it scans the first
/// manifest whatever it is told), so skopeo copies that platform's image out first, as a
/// registry pull by platform would.
fn trivy_finds(
    layout: &Path,
    tag: &str,
    arch: &str,
) -> std::collections::BTreeSet<(String, String)> {
    let trivy = common::tool("trivy").expect("trivy: make tools installs it");
    let skopeo = Skopeo::new().expect("skopeo: make tools installs it");
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("oci");
    skopeo.ok(&[
        "copy",
        "--override-arch",
        arch,
        &format!("oci:{}:{tag}", layout.to_str().unwrap()),
        &format!("oci:{}:scan", single.to_str().unwrap()),
    ]);
    let out = common::trivy_offline(&trivy, &dir.path().join("cache"), "image")
        .args(["--format", "cyclonedx", "--input"])
        .arg(&single)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::describe(&out));
    common::cyclonedx_libraries(&serde_json::from_slice(&out.stdout).unwrap())
}
