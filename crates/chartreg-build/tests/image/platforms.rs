//! Several `--binary OS/ARCH=FILE`: an image index of one manifest per platform, which skopeo
//! copies whole; and such an index as a base, each platform built on its own base manifest.

use super::*;

/// The image index `index.json` lists, tagged `tag`.
fn index(layout: &Path, tag: &str) -> Value {
    let top = top(layout, tag);
    assert_eq!(top["mediaType"], "application/vnd.oci.image.index.v1+json");
    json(&blob(layout, &top["digest"]))
}

/// Each manifest of an index: its platform as text, the manifest, the config.
fn per_platform(layout: &Path, index: &Value) -> Vec<(String, Value, Value)> {
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let p = &d["platform"];
            let platform = format!(
                "{}/{}",
                p["os"].as_str().unwrap(),
                p["architecture"].as_str().unwrap()
            );
            let manifest = json(&blob(layout, &d["digest"]));
            let config = json(&blob(layout, &manifest["config"]["digest"]));
            (platform, manifest, config)
        })
        .collect()
}

fn two_platforms(binary: &Path, out: &Path, extra: &[&str]) -> Output {
    let amd64 = format!("linux/amd64={}", s(binary));
    let arm64 = format!("linux/arm64={}", s(binary));
    let mut args = vec![
        "--binary",
        &amd64,
        "--binary",
        &arm64,
        "--out",
        s(out),
        "--tag",
        "v1",
        "--content-digest",
        CONTENT,
    ];
    args.extend(extra);
    let out = image(&args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    out
}

#[test]
fn two_platforms_make_an_index_that_skopeo_copies_whole() {
    let dir = tempfile::tempdir().unwrap();
    let binary = write_binary(&dir.path().join("chartreg"), b"");
    let out = dir.path().join("oci");
    let run = two_platforms(&binary, &out, &[]);
    let stdout = text(&run.stdout);
    assert!(
        stdout.contains("index sha256:") && stdout.contains("for linux/amd64, linux/arm64"),
        "{stdout}"
    );
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("for amd64, given for linux/arm64"),
        "the amd64 binary under arm64 is pointed out: {stderr}"
    );

    let index = index(&out, "v1");
    let images = per_platform(&out, &index);
    let platforms: Vec<&str> = images.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(platforms, ["linux/amd64", "linux/arm64"]);
    for (platform, manifest, config) in &images {
        assert_eq!(
            format!(
                "{}/{}",
                config["os"].as_str().unwrap(),
                config["architecture"].as_str().unwrap()
            ),
            *platform
        );
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(manifest["layers"].as_array().unwrap().len(), 1);
    }
    assert_eq!(
        images[0].1["layers"], images[1].1["layers"],
        "one binary, one layer"
    );

    if !have("skopeo") {
        return;
    }
    let copy = dir.path().join("copy");
    ok(Command::new("skopeo").args([
        "copy",
        "--quiet",
        "--all",
        &format!("oci:{}:v1", s(&out)),
        &format!("oci:{}:v1", s(&copy)),
    ]));
    assert_eq!(top(&copy, "v1")["digest"], top(&out, "v1")["digest"]);
    for arch in ["amd64", "arm64"] {
        let inspected = ok(Command::new("skopeo").args([
            "inspect",
            "--override-arch",
            arch,
            "--config",
            &format!("oci:{}:v1", s(&copy)),
        ]));
        assert_eq!(json(inspected.as_bytes())["architecture"], arch);
    }
}

#[test]
fn an_index_as_the_base_gives_each_platform_its_own() {
    let dir = tempfile::tempdir().unwrap();
    // The base: an index of two platforms, each with a layer of its own.
    let base = dir.path().join("base");
    let amd64 = write_binary(&dir.path().join("amd64/tool"), b"amd64");
    let arm64 = write_binary(&dir.path().join("arm64/tool"), b"arm64");
    ok(image(&[
        "--binary",
        &format!("linux/amd64={}", s(&amd64)),
        "--binary",
        &format!("linux/arm64={}", s(&arm64)),
        "--out",
        s(&base),
        "--tag",
        "base",
        "--content-digest",
        CONTENT,
    ]));
    let base_images = per_platform(&base, &index(&base, "base"));

    let binary = write_binary(&dir.path().join("chartreg"), b"");
    let out = dir.path().join("oci");
    two_platforms(&binary, &out, &["--base", &format!("{}:base", s(&base))]);
    let images = per_platform(&out, &index(&out, "v1"));
    for ((platform, manifest, config), (base_platform, base_manifest, base_config)) in
        images.iter().zip(&base_images)
    {
        assert_eq!(platform, base_platform);
        let layers = manifest["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 2, "the base's layer, then chartreg's");
        assert_eq!(layers[0], base_manifest["layers"][0], "{platform}");
        assert_eq!(
            config["rootfs"]["diff_ids"][0],
            base_config["rootfs"]["diff_ids"][0]
        );
        assert_eq!(config["history"].as_array().unwrap().len(), 2);
    }
    assert_ne!(images[0].1["layers"][0], images[1].1["layers"][0]);

    // A platform the base index does not have.
    let failed = fails(&mut image(&[
        "--binary",
        &format!("linux/riscv64={}", s(&binary)),
        "--out",
        s(&out),
        "--content-digest",
        CONTENT,
        "--base",
        &format!("{}:base", s(&base)),
    ]));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains("has no linux/riscv64 image (it has linux/amd64, linux/arm64)"),
        "{stderr}"
    );
}

/// Each platform's binary is asked for its own SBOMs; one built for another machine runs under
/// qemu-user, and with none on the PATH the image is refused before anything runs, naming the
/// program, the package and the flags that do without it.
#[test]
fn another_machines_binary_needs_qemu_user_for_its_sboms() {
    let dir = tempfile::tempdir().unwrap();
    let amd64 = write_binary(&dir.path().join("amd64/chartreg"), b"");
    let mut elf = static_elf(b"");
    elf[18..20].copy_from_slice(&183u16.to_le_bytes()); // e_machine: EM_AARCH64
    let arm64 = dir.path().join("arm64/chartreg");
    fs::create_dir_all(arm64.parent().unwrap()).unwrap();
    fs::write(&arm64, elf).unwrap();
    let empty = dir.path().join("bin");
    fs::create_dir_all(&empty).unwrap();
    let out = dir.path().join("oci");
    let run = image_asking_sbom(&[
        "--binary",
        &format!("linux/amd64={}", s(&amd64)),
        "--binary",
        &format!("linux/arm64={}", s(&arm64)),
        "--out",
        s(&out),
        "--tag",
        "v1",
        "--content-digest",
        CONTENT,
        "--no-listing",
    ])
    .env("PATH", &empty)
    .output()
    .unwrap();
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    for words in [
        "the linux/arm64 binary",
        "neither qemu-aarch64-static nor qemu-aarch64 is on the PATH",
        "qemu-user-static",
        "--sbom FILE",
        "--no-sbom",
    ] {
        assert!(stderr.contains(words), "{words}: {stderr}");
    }
    assert!(!out.exists(), "nothing was written");
}
