//! A binary built with content pack verified (`verification.json`): `chartreg verify` checks
//! every recorded signature again from the bytes it embeds, `ls --json` and the image's page,
//! served to curl, say who signed each tag at build; a record broken after packing (another
//! key embedded) makes `verify` fail naming the images.

use super::*;

#[test]
fn the_binary_checks_and_shows_what_verified_at_build() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = tmp.path().join("fixtures");
    if common::signing_fixtures(&fixtures).is_none() {
        return;
    }
    let keys = fixtures.join("keys");
    let key = |name: &str| keys.join(name).display().to_string();
    let mut config = String::from("layouts:\n");
    for case in ["sig-valid", "bundle-keyless-valid", "unsigned"] {
        config.push_str(&format!(
            "  - from: {}\n    repository: quay.io/example/{case}\n",
            fixtures.join("layouts").join(case).display()
        ));
    }
    config.push_str(&format!(
        "verify:\n  mode: require\n  images:\n    keys: [{}]\n    keyless:\n      - {{identity: \"https://github.com/example/app/.github/workflows/release.yaml@refs/tags/*\", issuer: \"https://token.actions.githubusercontent.com\", trustedRoot: {}}}\n    require: [\"quay.io/example/*-valid\"]\n",
        key("cosign.pub"),
        key("trusted_root.json")
    ));
    let config_path = tmp.path().join("content.yaml");
    fs::write(&config_path, config).unwrap();
    let assets = tmp.path().join("assets");
    let packed = common::pack_images(&config_path, &assets, None, false);
    assert!(packed.status.success(), "{}", common::describe(&packed));
    let bin = build_with(&assets);

    let verify = Command::new(&bin).arg("verify").output().unwrap();
    assert!(verify.status.success(), "{}", common::describe(&verify));
    assert!(
        String::from_utf8_lossy(&verify.stdout).contains(
            "re-checked 2 signed artifacts against the embedded policy: each verifies as the build recorded"
        ),
        "{}",
        common::describe(&verify)
    );

    let out = Command::new(&bin).args(["ls", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", common::describe(&out));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = |repository: &str| {
        rows.iter()
            .find(|r| r["repository"] == repository && r["tag"] == "v1")
            .unwrap_or_else(|| panic!("no row for {repository}:v1"))
            .clone()
    };
    let keyless = row("quay.io/example/bundle-keyless-valid");
    assert_eq!(
        keyless["verified"]["by"],
        serde_json::json!([{
            "by": "identity",
            "identity": "https://github.com/example/app/.github/workflows/release.yaml@refs/tags/v1.0.0",
            "issuer": "https://token.actions.githubusercontent.com",
            "form": "bundle",
        }]),
        "{keyless}"
    );
    assert_eq!(
        row("quay.io/example/sig-valid")["verified"]["by"][0]["form"],
        "sig"
    );
    assert!(row("quay.io/example/unsigned")["verified"].is_null());

    if let Some(curl) = common::tool("curl") {
        let server = common::Process::start_with(&bin, &[]);
        let page = common::curl(
            &curl,
            "GET",
            &format!("{}/ui/quay.io/example/sig-valid", server.url()),
            &[],
        );
        assert_eq!(page.status, 200);
        let html = page.body_text();
        assert!(
            html.contains("verified: key sha256:") && html.contains(" (.sig) at build"),
            "{html}"
        );
        let page = common::curl(
            &curl,
            "GET",
            &format!("{}/ui/quay.io/example/unsigned", server.url()),
            &[],
        );
        assert!(page.body_text().contains("not verified"));
    }

    // Another key embedded in the record: the .sig no longer verifies with it.
    let path = assets.join("verification.json");
    let mut record: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    record["policy"]["images"]["keys"] =
        serde_json::json!([fs::read_to_string(keys.join("other.pub")).unwrap()]);
    fs::write(&path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
    let bin = build_with(&assets);
    let verify = Command::new(&bin).arg("verify").output().unwrap();
    assert!(!verify.status.success(), "{}", common::describe(&verify));
    assert!(
        String::from_utf8_lossy(&verify.stderr)
            .contains("image quay.io/example/sig-valid:v1: does not verify now"),
        "{}",
        common::describe(&verify)
    );
}
