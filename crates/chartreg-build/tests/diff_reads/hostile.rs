//! A hostile NEW: its `/chartreg` writes a marker file and prints OLD's rows, so a `diff` that
//! ran it would say "no change" (the old diff did: it exited 0 and the marker appeared). Read
//! as data, it is never run, and what its image carries is reported.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::common;
use super::support::*;

/// OLD (a script, the user's own binary: asked), and NEW, a hand-made image whose listing
/// upgrades `demo` and adds `extra` while its `/chartreg` touches `marker` and prints OLD's.
fn sides(dir: &Path, marker: &Path) -> (std::path::PathBuf, Made) {
    let old = listing(VERSION, &content("old"), &rows(&[("demo", "1.0.0")]));
    let new = listing(
        VERSION,
        &content("new"),
        &rows(&[("demo", "1.1.0"), ("extra", "2.0.0")]),
    );
    let old_bin = install(&dir.join("old-chartreg"), &server_script(&old, None, dir));
    let hostile = server_script(&old, Some(marker), dir);
    let made = Parts::carrying(&new, hostile).write(&dir.join("new-oci"), "v2");
    (old_bin, made)
}

/// What diff must say of OLD and NEW: NEW's own versions, not what its binary prints.
fn says_what_new_carries(out: &std::process::Output) {
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    for line in [
        "- charts/demo:1.0.0  chart",
        "+ charts/demo:1.1.0  chart",
        "+ charts/extra:2.0.0  chart",
        "2 added, 1 removed, 0 changed",
    ] {
        assert!(
            printed.lines().any(|l| l.starts_with(line)),
            "{line}: {printed}"
        );
    }
    assert!(
        printed.lines().next().unwrap().contains(&content("new")),
        "{printed}"
    );
}

#[test]
fn a_hostile_layout_is_never_run_and_its_own_listing_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let (old_bin, new) = sides(dir.path(), &marker);
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let (out, _) = diff_within(
        &[s(&old_bin), s(&new.dir)],
        &[("TMPDIR", &tmp)],
        Duration::from_secs(60),
    );
    says_what_new_carries(&out);
    assert!(!marker.exists(), "NEW's /chartreg ran");
    // By tag, and as JSON: the same.
    let tagged = format!("{}:v2", s(&new.dir));
    let json = diff(&["--format", "json", s(&old_bin), &tagged]);
    assert_eq!(json.status.code(), Some(1), "{}", text(&json.stderr));
    let changes: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(changes["added"].as_array().unwrap().len(), 2);
    assert_eq!(changes["new"]["contentDigest"], content("new"));
    assert!(!marker.exists(), "NEW's /chartreg ran");
    assert_eq!(
        fs::read_dir(&tmp).unwrap().count(),
        0,
        "TMPDIR left as it was"
    );

    // A TMPDIR mounted noexec (where the old diff could not run what it took out) changes
    // nothing: nothing is run from it. In a private mount namespace, where user namespaces
    // allow one.
    let unshare = Command::new("unshare")
        .args(["--map-root-user", "--mount", "true"])
        .output();
    if !unshare.is_ok_and(|o| o.status.success()) {
        assert!(
            !common::ci(),
            "unshare --map-root-user --mount fails (CI=true)"
        );
        eprintln!("SKIPPED: a noexec TMPDIR (no user namespaces here)");
        return;
    }
    let script = format!(
        "mount -t tmpfs -o noexec,size=16m tmpfs '{tmp}' && TMPDIR='{tmp}' '{bin}' diff '{old}' '{new}'",
        tmp = tmp.display(),
        bin = env!("CARGO_BIN_EXE_chartreg-build"),
        old = old_bin.display(),
        new = new.dir.display(),
    );
    let out = Command::new("unshare")
        .args(["--map-root-user", "--mount", "sh", "-c", &script])
        .output()
        .unwrap();
    says_what_new_carries(&out);
    assert!(!marker.exists(), "NEW's /chartreg ran");
}

#[test]
fn a_hostile_image_from_a_registry_is_never_run_and_its_own_listing_is_reported() {
    let (Some(registry), Some(skopeo)) = (common::Distribution::start(), common::tool("skopeo"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let (old_bin, new) = sides(dir.path(), &marker);
    let at = format!("{}/team/chartreg", registry.addr);
    push(&skopeo, &new.dir, "v2", &at);
    let by_tag = diff(&[s(&old_bin), &format!("{at}:v2")]);
    says_what_new_carries(&by_tag);
    let digest = tagged(&new.dir, "v2");
    let by_digest = diff(&[s(&old_bin), &format!("{at}@{digest}")]);
    says_what_new_carries(&by_digest);
    assert!(!marker.exists(), "NEW's /chartreg ran");
}
