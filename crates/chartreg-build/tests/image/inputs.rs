//! Bad inputs: each is refused with a message naming it, a non-zero exit, and the layout
//! already at `OUT` left exactly as it was; an `OUT` that is not a layout is never replaced.

use rstest::rstest;

use super::*;

/// In `args`, `{bin}` is a static binary, `{out}` the layout written before, `{dir}` the
/// test's folder, `{me}` this test program (dynamically linked).
#[rstest]
#[case::bad_tag(&["--binary", "{bin}", "--tag", ".v1"], None, "cannot start with `.`")]
#[case::bad_platform(&["--binary", "linux/sparc={bin}"], None, "unknown architecture `sparc`")]
#[case::not_linux(&["--binary", "windows/amd64={bin}"], None, "the OS must be `linux`")]
#[case::missing_binary(&["--binary", "{dir}/missing"], None, "missing: No such file")]
#[case::not_elf(&["--binary", "{dir}/script"], None, "script is not an ELF executable")]
#[case::dynamic(&["--binary", "{me}"], None, "is dynamically linked (it asks for /")]
#[case::two_for_one_platform(&["--binary", "{bin}", "--binary", "linux/amd64={bin}"], None, "two binaries for linux/amd64")]
#[case::epoch(&["--binary", "{bin}"], Some("yesterday"), "SOURCE_DATE_EPOCH=\"yesterday\" is not a number")]
#[case::epoch_negative(&["--binary", "{bin}"], Some("-1"), "SOURCE_DATE_EPOCH=\"-1\"")]
#[case::label_set_by_tag(&["--binary", "{bin}", "--label", "org.opencontainers.image.version=9"], None, "org.opencontainers.image.version is set from the tag")]
#[case::bad_label(&["--binary", "{bin}", "--label", "novalue"], None, "`novalue` is not KEY=VALUE")]
#[case::bad_digest(&["--binary", "{bin}", "--content-digest", "sha256:xyz"], None, "sha256:xyz")]
#[case::base_not_a_layout(&["--binary", "{bin}", "--base", "{dir}"], None, "no oci-layout file")]
#[case::bad_base_tag(&["--binary", "{bin}", "--base", "{out}:-x"], None, "is not LAYOUT or LAYOUT:TAG")]
fn bad_inputs_are_named_and_leave_out_as_it_was(
    #[case] args: &[&str],
    #[case] epoch: Option<&str>,
    #[case] words: &str,
) {
    if args.contains(&"{me}") && cfg!(target_feature = "crt-static") {
        eprintln!("SKIPPED: this test program is static (crt-static), not a dynamic binary");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = write_binary(&dir.path().join("chartreg"), b"");
    fs::write(dir.path().join("script"), "#!/bin/sh\necho sha256:0\n").unwrap();
    let out = dir.path().join("oci");
    ok(image(&[
        "--binary",
        s(&bin),
        "--out",
        s(&out),
        "--tag",
        "before",
        "--content-digest",
        CONTENT,
    ]));
    let before = snapshot(&out);

    let me = std::env::current_exe().unwrap();
    let replace = |a: &str| {
        a.replace("{bin}", s(&bin))
            .replace("{out}", s(&out))
            .replace("{dir}", s(dir.path()))
            .replace("{me}", s(&me))
    };
    let mut full: Vec<String> = args.iter().map(|a| replace(a)).collect();
    full.extend(["--out".to_owned(), s(&out).to_owned()]);
    if !args.contains(&"--content-digest") {
        full.extend(["--content-digest".to_owned(), CONTENT.to_owned()]);
    }
    let full: Vec<&str> = full.iter().map(String::as_str).collect();
    let mut command = image(&full);
    if let Some(epoch) = epoch {
        command.env("SOURCE_DATE_EPOCH", epoch);
    }
    let failed = fails(&mut command);
    let stderr = text(&failed.stderr);
    assert!(stderr.contains(words), "expected `{words}` in:\n{stderr}");
    assert_eq!(snapshot(&out), before, "the layout at OUT is as it was");
}

#[test]
fn an_out_folder_that_is_not_a_layout_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let bin = write_binary(&dir.path().join("chartreg"), b"");
    let out = dir.path().join("mine");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("notes.txt"), "keep me").unwrap();
    let failed = fails(&mut image(&[
        "--binary",
        s(&bin),
        "--out",
        s(&out),
        "--content-digest",
        CONTENT,
    ]));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains(&format!("{} is not an OCI image layout", s(&out))),
        "{stderr}"
    );
    assert_eq!(
        snapshot(&out),
        BTreeMap::from([("notes.txt".to_owned(), b"keep me".to_vec())])
    );
    // A file is not a layout either.
    let file = dir.path().join("file");
    fs::write(&file, "x").unwrap();
    let failed = fails(&mut image(&[
        "--binary",
        s(&bin),
        "--out",
        s(&file),
        "--content-digest",
        CONTENT,
    ]));
    assert!(text(&failed.stderr).contains("it is not a folder"));
    assert_eq!(fs::read(&file).unwrap(), b"x");
}

/// Without `--content-digest`, the digest comes from running the host's binary: none for this
/// machine, or one that prints something else, is an error saying what to do.
#[test]
fn the_content_digest_needs_a_binary_that_runs_here() {
    if !runs_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = write_binary(&dir.path().join("chartreg"), b"hello\n");
    let out = dir.path().join("oci");
    let failed = fails(&mut image(&[
        "--binary",
        &format!("linux/arm64={}", s(&bin)),
        "--out",
        s(&out),
    ]));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains("no binary is for this machine (linux/amd64)")
            && stderr.contains("pass --content-digest sha256:"),
        "{stderr}"
    );
    let failed = fails(&mut image(&["--binary", s(&bin), "--out", s(&out)]));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains("ls --content-digest printed \"hello\""),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// The SBOMs come from `--sbom FILE` (SPDX or CycloneDX, each once) or each binary (`ls --sbom
/// spdx`, `ls --sbom cyclonedx`), or are left out with `--no-sbom`: a binary that prints no
/// SPDX 2.3 document, a file that is neither format, or two of one format, is refused by name,
/// and nothing is written.
#[test]
fn the_sbom_is_a_file_or_what_a_binary_here_prints() {
    if !runs_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = write_binary(&dir.path().join("chartreg"), b"hello\n");
    let out = dir.path().join("oci");
    let refused = |args: &[&str], words: &[&str]| {
        let mut full = vec!["--out", s(&out), "--content-digest", CONTENT];
        full.extend_from_slice(args);
        let failed = fails(&mut image_asking_sbom(&full));
        let stderr = text(&failed.stderr);
        for w in words {
            assert!(stderr.contains(w), "{args:?}: {w}: {stderr}");
        }
        assert!(!out.exists(), "{args:?}");
    };
    // A binary is asked as its ELF header says it runs: this machine's, given for arm64, is
    // run here (another machine's needs qemu-user: platforms.rs).
    let arm = format!("linux/arm64={}", s(&bin));
    refused(
        &["--binary", &arm],
        &[
            "printed no SPDX 2.3 JSON document for ls --sbom spdx",
            "pass --sbom FILE",
            "--no-sbom",
        ],
    );
    refused(
        &["--binary", s(&bin)],
        &[&format!(
            "{} printed no SPDX 2.3 JSON document for ls --sbom",
            s(&bin)
        )],
    );
    let missing = dir.path().join("missing.spdx.json");
    refused(
        &["--binary", &arm, "--sbom", s(&missing)],
        &[&format!("the SBOM {}", s(&missing))],
    );
    let old = dir.path().join("old.spdx.json");
    fs::write(&old, r#"{"spdxVersion": "SPDX-2.2"}"#).unwrap();
    refused(
        &["--binary", &arm, "--sbom", s(&old)],
        &[
            &format!(
                "the SBOM {} is no SPDX 2.3 or CycloneDX 1.x JSON document",
                s(&old)
            ),
            "SPDX-2.2",
        ],
    );
    refused(
        &["--binary", &arm, "--sbom", s(&old), "--no-sbom"],
        &["--no-sbom"],
    );
    let unknown = dir.path().join("swid.json");
    fs::write(&unknown, r#"{"bomFormat": "SWID"}"#).unwrap();
    refused(
        &["--binary", &arm, "--sbom", s(&unknown)],
        &[&format!("the SBOM {}", s(&unknown)), "\"SWID\""],
    );
    // Documents from a machine that runs the binary, attached to an image of another platform,
    // each as the referrer of its format.
    let given = dir.path().join("given.spdx.json");
    fs::write(&given, r#"{"spdxVersion": "SPDX-2.3", "name": "given"}"#).unwrap();
    let bom = dir.path().join("given.cdx.json");
    fs::write(&bom, r#"{"bomFormat": "CycloneDX", "specVersion": "1.6"}"#).unwrap();
    refused(
        &["--binary", &arm, "--sbom", s(&bom), "--sbom", s(&bom)],
        &[&format!(
            "two CycloneDX SBOMs given ({} and {})",
            s(&bom),
            s(&bom)
        )],
    );
    let stdout = ok(image(&[
        "--binary",
        &arm,
        "--out",
        s(&out),
        "--content-digest",
        CONTENT,
        "--sbom",
        s(&given),
        "--sbom",
        s(&bom),
    ]));
    assert!(
        stdout.contains(", SBOM sha256:") && stdout.contains(", CycloneDX SBOM sha256:"),
        "{stdout}"
    );
    let index = json(&fs::read(out.join("index.json")).unwrap());
    for (at, file, kind) in [
        (1, &given, "application/spdx+json"),
        (2, &bom, "application/vnd.cyclonedx+json"),
    ] {
        let referrer = json(&blob(&out, &index["manifests"][at]["digest"]));
        assert_eq!(referrer["artifactType"], kind);
        assert_eq!(
            blob(&out, &referrer["layers"][0]["digest"]),
            fs::read(file).unwrap()
        );
        assert_eq!(
            referrer["subject"]["digest"],
            index["manifests"][0]["digest"]
        );
    }
}

/// The content listing (what `diff` reads) comes from the host's binary or `--listing FILE`,
/// or is left out with `--no-listing`: no binary for this machine, or a listing of other
/// content, is refused by name and nothing is written; a listing given is carried in a layer
/// of its own below the binary's, annotated `io.chartreg.listing`, the same bytes every time.
#[test]
fn the_listing_is_a_file_or_what_a_binary_here_says() {
    if !runs_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = write_binary(&dir.path().join("chartreg"), b"hello\n");
    let arm = format!("linux/arm64={}", s(&bin));
    let out = dir.path().join("oci");
    let base = [
        "--binary",
        &arm,
        "--out",
        s(&out),
        "--content-digest",
        CONTENT,
    ];
    fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
        [base, more, &["--no-sbom"]].concat()
    }
    let failed = fails(image_asking_sbom(&with(&base, &[])));
    let stderr = text(&failed.stderr);
    for w in [
        "no binary is for this machine (linux/amd64) to ask for its content listing",
        "pass --listing FILE",
        "--no-listing",
    ] {
        assert!(stderr.contains(w), "{w}: {stderr}");
    }
    let listing = |content: &str| {
        serde_json::json!({
            "schemaVersion": 1,
            "version": "0.1.0",
            "contentDigest": content,
            "rows": [{"repository": "charts/a", "tag": "1.0.0", "digest": CONTENT,
                      "size": 1, "kind": "chart", "verified": null}],
        })
    };
    let other = dir.path().join("other.json");
    let other_content = format!("sha256:{}", "1".repeat(64));
    fs::write(&other, listing(&other_content).to_string()).unwrap();
    let failed = fails(image_asking_sbom(&with(&base, &["--listing", s(&other)])));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains(&format!(
            "the listing {} is of content {other_content}, not {CONTENT}",
            s(&other)
        )),
        "{stderr}"
    );
    assert!(!out.exists());
    let given = dir.path().join("listing.json");
    fs::write(&given, listing(CONTENT).to_string()).unwrap();
    ok(image_asking_sbom(&with(&base, &["--listing", s(&given)])));
    let (manifest, config) = manifest_and_config(&out, &format!("{VERSION}-0123456789ab"));
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 2, "{manifest}");
    assert_eq!(
        layers[0]["annotations"]["io.chartreg.listing"],
        "chartreg.listing.json"
    );
    assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 2);
    assert_eq!(config["history"].as_array().unwrap().len(), 2);
    let entries = layer_entries(&blob(&out, &layers[0]["digest"]));
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].path, "chartreg.listing.json");
    assert_eq!(entries[0].mode, 0o644);
    assert_eq!(json(&entries[0].data), listing(CONTENT));
    let again = dir.path().join("again");
    let args = [
        &[
            "--binary",
            &arm,
            "--out",
            s(&again),
            "--content-digest",
            CONTENT,
        ][..],
        &["--listing", s(&given), "--no-sbom"],
    ]
    .concat();
    ok(image_asking_sbom(&args));
    assert_eq!(snapshot(&again), snapshot(&out), "the same bytes elsewhere");
    // Left out: no listing layer.
    ok(image(&[
        "--binary",
        &arm,
        "--out",
        s(&out),
        "--content-digest",
        CONTENT,
    ]));
    let (manifest, _) = manifest_and_config(&out, &format!("{VERSION}-0123456789ab"));
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 1);
}
