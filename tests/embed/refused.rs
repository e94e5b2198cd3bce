//! Content the build cannot serve: built with a warning naming the file, refused at start-up.

use super::*;

/// Content the build cannot serve (a manifest naming a missing blob, an index pointing at no
/// manifest, invalid JSON): `cargo build` succeeds with a warning naming the file, and the
/// binary refuses to start, naming it (`chartreg verify` too).
#[test]
fn content_that_cannot_be_served_builds_with_a_warning_and_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let good = layout("demo/one", b"a payload");
    let layer = good
        .iter()
        .find(|(_, data)| data.as_slice() == b"a payload")
        .map(|(path, _)| path.clone())
        .unwrap();
    let index: serde_json::Value = serde_json::from_slice(&good["demo/one/index.json"]).unwrap();
    let nowhere = format!("sha256:{}", "1".repeat(64));
    let mut pointing = index.clone();
    pointing["manifests"][0]["digest"] = nowhere.clone().into();
    // (folder, the tampering, the file named, what start-up and verify say of it)
    type Tamper = Box<dyn Fn(&mut Files)>;
    let layer_path = layer.clone();
    let cases: Vec<(&str, Tamper, String, &str)> = vec![
        (
            "missing",
            Box::new(move |files: &mut Files| {
                files.remove(&layer_path);
            }),
            layer.clone(),
            "is missing",
        ),
        (
            "nowhere",
            Box::new(move |files: &mut Files| {
                files.insert(
                    "demo/one/index.json".into(),
                    serde_json::to_vec(&pointing).unwrap(),
                );
            }),
            format!("demo/one/blobs/sha256/{}", "1".repeat(64)),
            "is missing",
        ),
        (
            "invalid",
            Box::new(|files: &mut Files| {
                files.insert("demo/one/index.json".into(), b"{\"manifests\": [".to_vec());
            }),
            "demo/one/index.json".to_owned(),
            "invalid JSON",
        ),
    ];
    for (name, tamper, path, why) in cases {
        let dir = tmp.path().join(name);
        let mut files = good.clone();
        tamper(&mut files);
        write(&dir, &files);
        let (bin, cargo) = {
            let _one_at_a_time = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
            build_logged(&dir, &[])
        };
        assert!(
            cargo.contains("warning")
                && cargo.contains("cannot be served")
                && cargo.contains(&path),
            "{name}: no warning naming {path}:\n{cargo}"
        );
        refuses_to_start_with(&bin, &path, why, why);
    }
}
