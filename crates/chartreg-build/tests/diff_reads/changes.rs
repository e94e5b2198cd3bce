//! What counts as a change besides versions: another content digest (referrers no tag lists,
//! other files) or another server version with every row the same is a change, exit 1, said
//! so; the same listing is no change, exit 0. An image without a listing, as chartreg-build
//! wrote them before, is refused with what to do, and its binary is not run.

use rstest::rstest;

use super::support::*;

#[rstest]
#[case::same(
    "old",
    VERSION,
    0,
    "no change: both serve the same versions, content and server"
)]
#[case::content("other", VERSION, 1, "but the content digest differs")]
#[case::server("old", "0.2.0", 1, "but the server's version differs")]
fn the_same_rows_of_other_content_or_server(
    #[case] seed: &str,
    #[case] version: &str,
    #[case] status: i32,
    #[case] says: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let same = rows(&[("demo", "1.0.0")]);
    let old = listing(VERSION, &content("old"), &same);
    let new = listing(version, &content(seed), &same);
    let old_bin = install(
        &dir.path().join("old-chartreg"),
        &server_script(&old, None, dir.path()),
    );
    let new_oci = dir.path().join("new-oci");
    image(&new_oci, "v2", &new, None);
    for (a, b) in [(&old_bin, &new_oci), (&new_oci, &old_bin)] {
        let out = diff(&[s(a), s(b)]);
        assert_eq!(out.status.code(), Some(status), "{}", text(&out.stderr));
        let printed = text(&out.stdout);
        assert!(printed.lines().last().unwrap().contains(says), "{printed}");
        assert_eq!(
            printed.lines().any(|l| l.starts_with("~ server chartreg")),
            version != VERSION,
            "{printed}"
        );
    }
    let json = diff(&["--format", "json", s(&old_bin), s(&new_oci)]);
    let changes: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(changes["contentChanged"], seed != "old");
    assert_eq!(changes["versionChanged"], version != VERSION);
    assert_eq!(changes["new"]["version"], version);
}

/// An image as chartreg-build wrote them before it carried a listing: its one layer holds
/// `/chartreg` (here a script that would leave a marker), and nothing says what it serves.
#[test]
fn an_image_without_a_listing_is_refused_and_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let old = listing(VERSION, &content("old"), &rows(&[("demo", "1.0.0")]));
    let old_bin = install(
        &dir.path().join("old-chartreg"),
        &server_script(&old, None, dir.path()),
    );
    let mut parts = Parts::carrying(&old, server_script(&old, Some(&marker), dir.path()));
    parts.listing = None;
    let made = parts.write(&dir.path().join("before-oci"), "v1");
    let out = diff(&[s(&old_bin), s(&made.dir)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for words in [
        s(&made.dir),
        "carries no content listing (/chartreg.listing.json)",
        "rebuild it with this chartreg-build",
    ] {
        assert!(stderr.contains(words), "{words}: {stderr}");
    }
    assert!(!marker.exists(), "its /chartreg ran");
}
