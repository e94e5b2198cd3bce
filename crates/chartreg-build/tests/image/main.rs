//! `chartreg-build image` through its binary: the layout it writes is taken by real clients
//! (skopeo copies it, umoci unpacks it), its config and layer are the Containerfile's, the same
//! inputs give the same bytes in any folder, a base layout's layers are kept byte for byte,
//! several platforms make an index, and every bad input is refused by name with `OUT` left as
//! it was.
//!
//! Most tests need a static binary, not the server: `support::static_elf` writes a minimal statically
//! linked x86-64 executable (no interpreter) that prints a given text, with `--content-digest`
//! given or its text a digest. The real server (`CHARTREG_STATIC_BIN`, set by the Makefile) is
//! used where its own behaviour matters ([`the_real_server_binary`], and `scanners`: what trivy
//! and rust-audit-info find in it, and the SBOMs' validators).
//! Missing tools (skopeo, umoci) or `CHARTREG_STATIC_BIN` fail the test under `CI=true` and
//! skip it elsewhere.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod base;
#[path = "../common/mod.rs"]
mod common;
mod inputs;
mod platforms;
mod scanners;
mod sign;
mod support;
mod verifiers;

use support::*;

#[test]
fn skopeo_copies_and_umoci_unpacks_the_layout() {
    if !(runs_here() && have("skopeo") && have("umoci")) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = write_binary(&dir.path().join("chartreg"), b"hello\n");
    let out = dir.path().join("oci");
    let stdout = ok(image(&[
        "--binary",
        s(&binary),
        "--out",
        s(&out),
        "--tag",
        "v1",
        "--content-digest",
        CONTENT,
    ]));
    let digest = top(&out, "v1")["digest"].as_str().unwrap().to_owned();
    for words in [
        &format!("wrote {}", s(&out)),
        "tag v1",
        &format!("manifest {digest} for linux/amd64"),
        &format!("content {CONTENT}"),
        &format!("skopeo copy oci:{}:v1 docker://", s(&out)),
    ] {
        assert!(stdout.contains(words), "{words}: {stdout}");
    }
    assert_eq!(stdout.lines().count(), 1, "{stdout}");

    let copy = dir.path().join("copy");
    ok(Command::new("skopeo").args([
        "copy",
        "--quiet",
        &format!("oci:{}:v1", s(&out)),
        &format!("oci:{}:v1", s(&copy)),
    ]));
    assert_eq!(
        top(&copy, "v1")["digest"],
        digest,
        "skopeo copies the manifest as written"
    );
    let files = unpack(&out, "v1", &dir.path().join("bundle"));
    assert_eq!(
        files,
        BTreeMap::from([(
            "chartreg".to_owned(),
            (0o755, Some(fs::read(&binary).unwrap()))
        )]),
        "only /chartreg, executable"
    );
    // The unpacked binary is the one given, and runs.
    let unpacked = dir.path().join("bundle/rootfs/chartreg");
    assert_eq!(ok(&mut Command::new(unpacked)), "hello\n");
}

#[test]
fn the_config_and_labels_are_the_containerfiles() {
    let dir = tempfile::tempdir().unwrap();
    let binary = write_binary(&dir.path().join("chartreg"), b"");
    let out = dir.path().join("oci");
    ok(image(&[
        "--binary",
        s(&binary),
        "--out",
        s(&out),
        "--tag",
        "v1",
        "--content-digest",
        CONTENT,
        "--label",
        "org.opencontainers.image.revision=0123abc",
        "--label",
        "org.opencontainers.image.source=https://example.com/chartreg",
    ])
    .env("SOURCE_DATE_EPOCH", "1700000000"));
    let (manifest, config) = manifest_and_config(&out, "v1");
    let created = "2023-11-14T22:13:20Z";
    assert_eq!(config["created"], created);
    assert_eq!(config["architecture"], "amd64");
    assert_eq!(config["os"], "linux");
    let c = &config["config"];
    assert_eq!(c["User"], "65532:65532");
    assert_eq!(c["Entrypoint"], serde_json::json!(["/chartreg"]));
    assert_eq!(c["Cmd"], serde_json::json!(["serve"]));
    assert_eq!(c["ExposedPorts"], serde_json::json!({"5000/tcp": {}}));
    assert_eq!(
        c["Labels"],
        serde_json::json!({
            "io.chartreg.content.digest": CONTENT,
            "org.opencontainers.image.created": created,
            "org.opencontainers.image.description": "A read-only OCI registry serving the Helm charts and images built into it",
            "org.opencontainers.image.licenses": "Apache-2.0",
            "org.opencontainers.image.revision": "0123abc",
            "org.opencontainers.image.source": "https://example.com/chartreg",
            "org.opencontainers.image.title": "chartreg",
            "org.opencontainers.image.version": "v1",
        })
    );
    // The Containerfile's LABELs are its word for these.
    let containerfile =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Containerfile"))
            .unwrap();
    for key in ["title", "description", "licenses"] {
        let label = format!("org.opencontainers.image.{key}");
        let value = c["Labels"][&label].as_str().unwrap();
        assert!(
            containerfile.contains(&format!("{label}=\"{value}\"")),
            "{label}={value} is not the Containerfile's"
        );
    }
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let tar = {
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(blob(&out, &layers[0]["digest"]).as_slice())
            .read_to_end(&mut tar)
            .unwrap();
        tar
    };
    let diff_id = chartreg_core::oci::Digest::sha256_of(&tar);
    assert_eq!(
        config["rootfs"],
        serde_json::json!({"type": "layers", "diff_ids": [diff_id.as_str()]})
    );
    assert_eq!(config["history"][0]["created"], created);
}

#[test]
fn the_layer_holds_only_chartreg_owned_by_root() {
    let dir = tempfile::tempdir().unwrap();
    let binary = write_binary(&dir.path().join("bin/server"), b"x");
    let out = dir.path().join("oci");
    ok(image(&[
        "--binary",
        s(&binary),
        "--out",
        s(&out),
        "--tag",
        "v1",
        "--content-digest",
        CONTENT,
    ])
    .env("SOURCE_DATE_EPOCH", "1234567890"));
    let (manifest, _) = manifest_and_config(&out, "v1");
    let gz = blob(&out, &manifest["layers"][0]["digest"]);
    assert_eq!(&gz[4..8], &[0; 4], "gzip mtime 0");
    assert_eq!(gz[3] & 0x08, 0, "no file name in the gzip header");
    assert_eq!(
        layer_entries(&gz),
        [TarEntry {
            path: "chartreg".to_owned(),
            kind: tar::EntryType::Regular,
            mode: 0o755,
            owner: (0, 0),
            names: (String::new(), String::new()),
            mtime: 1_234_567_890,
            data: fs::read(&binary).unwrap(),
        }]
    );
}

#[test]
fn the_same_inputs_give_the_same_bytes_in_any_folder() {
    let dir = tempfile::tempdir().unwrap();
    let build = |folder: &str, binary_message: &[u8], epoch: &str| {
        let root = dir.path().join(folder);
        let binary = write_binary(&root.join("some/where/chartreg"), binary_message);
        let out = root.join(format!("{folder}-layout"));
        ok(image(&[
            "--binary",
            "chartreg",
            "--out",
            s(&out),
            "--tag",
            "v1",
            "--content-digest",
            CONTENT,
        ])
        .current_dir(binary.parent().unwrap())
        .env("SOURCE_DATE_EPOCH", epoch));
        out
    };
    let first = build("a", b"same", "1700000000");
    let second = build("b", b"same", "1700000000");
    let digest = |out: &Path| top(out, "v1")["digest"].clone();
    assert_eq!(digest(&first), digest(&second));
    assert_eq!(
        snapshot(&first),
        snapshot(&second),
        "every file, byte for byte"
    );
    assert_ne!(
        digest(&build("c", b"same", "1700000001")),
        digest(&first),
        "another time"
    );
    assert_ne!(
        digest(&build("d", b"other", "1700000000")),
        digest(&first),
        "another binary"
    );

    // Again into the same folder: left as it is.
    let before = fs::metadata(first.join("index.json"))
        .unwrap()
        .modified()
        .unwrap();
    let binary = dir.path().join("a/some/where/chartreg");
    let stdout = ok(image(&[
        "--binary",
        s(&binary),
        "--out",
        s(&first),
        "--tag",
        "v1",
        "--content-digest",
        CONTENT,
    ])
    .env("SOURCE_DATE_EPOCH", "1700000000"));
    assert!(stdout.starts_with("unchanged: "), "{stdout}");
    let after = fs::metadata(first.join("index.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after);
    let leftovers: Vec<_> = fs::read_dir(dir.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no work or staging folder left: {leftovers:?}"
    );
}

#[test]
fn the_default_tag_names_the_version_and_the_content_the_binary_prints() {
    if !runs_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let content = format!("sha256:{}", "3f2a9c1d4e5b".repeat(5) + "abcd");
    let binary = write_binary(
        &dir.path().join("chartreg"),
        format!("{content}\n").as_bytes(),
    );
    let out = dir.path().join("oci");
    let tag_file = dir.path().join("tag");
    let stdout = ok(image(&[
        "--binary",
        s(&binary),
        "--out",
        s(&out),
        "--tag-file",
        s(&tag_file),
    ]));
    let tag = format!("{VERSION}-3f2a9c1d4e5b");
    assert_eq!(fs::read_to_string(&tag_file).unwrap(), format!("{tag}\n"));
    assert!(stdout.contains(&format!("tag {tag}")), "{stdout}");
    let (_, config) = manifest_and_config(&out, &tag);
    let labels = &config["config"]["Labels"];
    assert_eq!(labels["io.chartreg.content.digest"], content.as_str());
    assert_eq!(labels["org.opencontainers.image.version"], tag.as_str());
    assert_eq!(
        config["created"], "1970-01-01T00:00:00Z",
        "no SOURCE_DATE_EPOCH: 0"
    );
}

/// The server itself, built static (`CHARTREG_STATIC_BIN`): its content digest, SBOMs and
/// listing read from it, the SPDX and CycloneDX SBOMs attached as referrers of the image (the
/// same bytes in another folder), the image unpacked by umoci (the binary, and the listing
/// below it: what the server prints), and the unpacked binary telling the same digest.
#[test]
fn the_real_server_binary() {
    let Some(server) = std::env::var_os("CHARTREG_STATIC_BIN").map(PathBuf::from) else {
        assert!(
            !ci(),
            "CHARTREG_STATIC_BIN is not set (CI=true): the Makefile sets it to the static server binary"
        );
        eprintln!("SKIPPED: CHARTREG_STATIC_BIN is not set (the static server binary)");
        return;
    };
    if !(have("skopeo") && have("umoci")) {
        return;
    }
    let printed = ok(Command::new(&server).args(["ls", "--content-digest"]));
    let content = printed.trim();
    let sbom = Command::new(&server)
        .args(["ls", "--sbom"])
        .output()
        .unwrap();
    assert!(sbom.status.success(), "{}", text(&sbom.stderr));
    let cyclonedx = Command::new(&server)
        .args(["ls", "--sbom", "cyclonedx"])
        .output()
        .unwrap();
    assert!(cyclonedx.status.success(), "{}", text(&cyclonedx.stderr));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("oci");
    let tag_file = dir.path().join("tag");
    let args = |out: &Path| {
        image_asking_sbom(&[
            "--binary",
            s(&server),
            "--out",
            s(out),
            "--tag-file",
            s(&tag_file),
        ])
    };
    let stdout = ok(args(&out));
    let (top, referrers) = sbom_referrers(&out);
    for ((entry, referrer), printed) in referrers.iter().zip([&sbom.stdout, &cyclonedx.stdout]) {
        assert_eq!(referrer["subject"]["digest"], top["digest"]);
        assert_eq!(referrer["subject"]["mediaType"], top["mediaType"]);
        assert_eq!(blob(&out, &referrer["layers"][0]["digest"]), *printed);
        assert_eq!(
            referrer["annotations"]["org.opencontainers.image.created"],
            "1970-01-01T00:00:00Z"
        );
        assert!(
            stdout.contains(&format!("SBOM {}", entry["digest"].as_str().unwrap())),
            "{stdout}"
        );
    }
    let entry = &referrers[0].0;
    let again = dir.path().join("again");
    ok(args(&again));
    assert_eq!(
        snapshot(&again),
        snapshot(&out),
        "the same bytes in another folder"
    );
    let tag = fs::read_to_string(&tag_file).unwrap().trim_end().to_owned();
    assert_eq!(tag, format!("{VERSION}-{}", &content[7..19]));
    // The layout copied with its referrers into a registry, chartreg's own: pack takes the
    // image with its SBOM, which the referrers of the image then list.
    let assets = dir.path().join("assets");
    let packed = Command::new(env!("CARGO_BIN_EXE_chartreg-build"))
        .args(["pack", "--out", s(&assets), "--layout"])
        .arg(format!("{}=team/chartreg:{tag}", s(&out)))
        .output()
        .unwrap();
    assert!(packed.status.success(), "pack: {}", text(&packed.stderr));
    let registry = chartreg_core::content::Registry::from_files(common::files_in(&assets)).unwrap();
    let repository = registry
        .repository(&"team/chartreg".parse().unwrap())
        .unwrap();
    let subject = repository.tag_digest(&tag).unwrap().clone();
    let sboms: Vec<_> = repository
        .referrers(&subject, Some("application/spdx+json"))
        .collect();
    assert_eq!(sboms.len(), 1, "the image's SBOM among its referrers");
    assert_eq!(sboms[0].digest.as_str(), entry["digest"].as_str().unwrap());
    let boms: Vec<_> = repository
        .referrers(&subject, Some("application/vnd.cyclonedx+json"))
        .collect();
    assert_eq!(
        boms.len(),
        1,
        "the image's CycloneDX SBOM among its referrers"
    );
    assert_eq!(
        boms[0].digest.as_str(),
        referrers[1].0["digest"].as_str().unwrap()
    );
    let manifest = json(&blob(&out, &top["digest"]));
    let config = json(&blob(&out, &manifest["config"]["digest"]));
    assert_eq!(
        config["config"]["Labels"]["io.chartreg.content.digest"],
        content
    );
    // Below the binary, the listing `diff` reads: what the server says it serves, as data.
    let files = unpack(&out, &tag, &dir.path().join("bundle"));
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["chartreg", "chartreg.listing.json"]
    );
    let (mode, listing) = &files["chartreg.listing.json"];
    assert_eq!(mode & 0o777, 0o644);
    let listing = json(listing.as_deref().unwrap());
    let rows = json(ok(Command::new(&server).args(["ls", "--json"])).as_bytes());
    let version = ok(Command::new(&server).arg("--version"));
    assert_eq!(
        listing,
        serde_json::json!({
            "schemaVersion": 1,
            "version": version.trim().trim_start_matches("chartreg "),
            "contentDigest": content,
            "rows": rows,
        })
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(
        layers[0]["annotations"]["io.chartreg.listing"], "chartreg.listing.json",
        "the listing's layer, found by its annotation: {manifest}"
    );
    let unpacked = dir.path().join("bundle/rootfs/chartreg");
    assert_eq!(
        ok(Command::new(unpacked).args(["ls", "--content-digest"])).trim(),
        content
    );
    ok(Command::new("skopeo").args([
        "copy",
        "--quiet",
        &format!("oci:{}:{tag}", s(&out)),
        &format!("oci:{}:{tag}", s(&dir.path().join("copy"))),
    ]));
}

/// The image `index.json` tags and the SBOMs referring to it: the first entry (tagged), and
/// the SPDX then the CycloneDX referrer, each its entry and manifest, checked to be an OCI 1.1
/// artifact of one layer of its type.
fn sbom_referrers(layout: &Path) -> (Value, Vec<(Value, Value)>) {
    let index = json(&fs::read(layout.join("index.json")).unwrap());
    let entries = index["manifests"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "the image and its two SBOMs: {index}");
    assert!(entries[0]["annotations"]["org.opencontainers.image.ref.name"].is_string());
    let mut referrers = Vec::new();
    for (entry, kind) in entries[1..]
        .iter()
        .zip(["application/spdx+json", "application/vnd.cyclonedx+json"])
    {
        assert_eq!(entry["artifactType"], kind, "{index}");
        assert!(
            entry["annotations"]
                .get("org.opencontainers.image.ref.name")
                .is_none(),
            "the referrer is untagged: {index}"
        );
        let referrer = json(&blob(layout, &entry["digest"]));
        assert_eq!(referrer["artifactType"], kind);
        assert_eq!(
            referrer["config"]["mediaType"],
            "application/vnd.oci.empty.v1+json"
        );
        assert_eq!(blob(layout, &referrer["config"]["digest"]), b"{}");
        assert_eq!(referrer["layers"].as_array().unwrap().len(), 1);
        assert_eq!(referrer["layers"][0]["mediaType"], kind);
        referrers.push((entry.clone(), referrer));
    }
    (entries[0].clone(), referrers)
}
