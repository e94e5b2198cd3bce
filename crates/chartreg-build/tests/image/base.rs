//! `--base LAYOUT[:TAG]`: a base image made with umoci (a layer adding `/etc/passwd`, an Env
//! and a WorkingDir), kept under chartreg's layer byte for byte; a tag or platform the base
//! does not have is refused by name.

use super::*;

/// A base image layout at `dir`, tagged `base`: one layer holding `/etc/passwd`, an Env and
/// a WorkingDir set, as distroless's `nonroot` has.
fn base_layout(dir: &Path, work: &Path) {
    let layout = s(dir);
    ok(Command::new("umoci").args(["init", "--layout", layout]));
    ok(Command::new("umoci").args(["new", "--image", &format!("{layout}:base")]));
    let bundle = work.join("base-bundle");
    ok(Command::new("umoci").args([
        "unpack",
        "--rootless",
        "--image",
        &format!("{layout}:base"),
        s(&bundle),
    ]));
    fs::create_dir_all(bundle.join("rootfs/etc")).unwrap();
    fs::write(
        bundle.join("rootfs/etc/passwd"),
        "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
    )
    .unwrap();
    ok(Command::new("umoci").args(["repack", "--image", &format!("{layout}:base"), s(&bundle)]));
    ok(Command::new("umoci").args([
        "config",
        "--image",
        &format!("{layout}:base"),
        "--config.env",
        "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
        "--config.workingdir",
        "/home/nonroot",
        "--config.user",
        "0:0",
    ]));
}

#[test]
fn a_base_layouts_layers_and_settings_are_kept() {
    if !(have("umoci") && have("skopeo")) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    base_layout(&base, dir.path());
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
        "--base",
        &format!("{}:base", s(&base)),
    ]));

    let (base_manifest, base_config) = manifest_and_config(&base, "base");
    let (manifest, config) = manifest_and_config(&out, "v1");
    let base_layers = base_manifest["layers"].as_array().unwrap();
    let layers = manifest["layers"].as_array().unwrap();
    assert!(!base_layers.is_empty());
    assert_eq!(layers.len(), base_layers.len() + 1);
    assert_eq!(&layers[..base_layers.len()], base_layers.as_slice());
    for layer in base_layers {
        assert_eq!(
            blob(&out, &layer["digest"]),
            blob(&base, &layer["digest"]),
            "byte for byte"
        );
    }
    let diff_ids = config["rootfs"]["diff_ids"].as_array().unwrap();
    assert_eq!(
        diff_ids[..base_layers.len()],
        base_config["rootfs"]["diff_ids"].as_array().unwrap()[..]
    );
    let c = &config["config"];
    assert_eq!(c["Env"], base_config["config"]["Env"]);
    assert_eq!(c["WorkingDir"], "/home/nonroot");
    assert_eq!(c["User"], "65532:65532", "chartreg's user over the base's");
    assert_eq!(c["Entrypoint"], serde_json::json!(["/chartreg"]));
    let base_top = top(&base, "base");
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.base.digest"],
        base_top["digest"]
    );

    // Real clients take it: the root file system holds the base's files and /chartreg.
    let files = unpack(&out, "v1", &dir.path().join("bundle"));
    assert_eq!(files["chartreg"].0, 0o755);
    assert!(
        files["etc/passwd"]
            .1
            .as_deref()
            .is_some_and(|p| p.starts_with(b"nonroot:")),
        "{:?}",
        files.keys()
    );
    ok(Command::new("skopeo").args([
        "copy",
        "--quiet",
        &format!("oci:{}:v1", s(&out)),
        &format!("oci:{}:v1", s(&dir.path().join("copy"))),
    ]));
}

#[test]
fn a_tag_or_platform_the_base_does_not_have_is_named() {
    if !have("umoci") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    base_layout(&base, dir.path());
    let binary = write_binary(&dir.path().join("chartreg"), b"");
    let out = dir.path().join("oci");
    let run = |base_arg: &str, platform: &str| {
        let binary_arg = format!("{platform}={}", s(&binary));
        let failed = fails(&mut image(&[
            "--binary",
            &binary_arg,
            "--out",
            s(&out),
            "--content-digest",
            CONTENT,
            "--base",
            base_arg,
        ]));
        text(&failed.stderr)
    };
    let missing_tag = run(&format!("{}:nope", s(&base)), "linux/amd64");
    assert!(
        missing_tag.contains("no image tagged nope") && missing_tag.contains("(it has base)"),
        "{missing_tag}"
    );
    // umoci made the base for this machine's platform; s390x is not one the tests run on.
    let missing_platform = run(&format!("{}:base", s(&base)), "linux/s390x");
    assert!(
        missing_platform.contains("has no linux/s390x image")
            && missing_platform.contains("(it has linux/"),
        "{missing_platform}"
    );
    let not_layout = run(s(dir.path()), "linux/amd64");
    assert!(
        not_layout.contains("not an OCI image layout"),
        "{not_layout}"
    );
    assert!(!out.exists(), "nothing written");
}
