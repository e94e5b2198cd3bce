//! `image --out oci`, killed at every crash point (`sweep`), both ways between two images: the
//! image tests' static test binary printing `a` tagged `v1`, and printing `b` tagged `v2`.
//! The layout must be the old one or the new one, whole, after every kill; and so must the
//! layout and its tag file together.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

use super::common;
use super::directions::assert_clean;
use super::strace::Fault;
use super::support::{CONTENT, runs_here, static_elf};
use super::sweep::{Scenario, sweep};
use super::tool::{Shape, Tool, run};
use super::tree::Snapshot;

#[test]
fn image_layouts_at_every_crash_point_both_ways() {
    at_every_crash_point(false);
}

/// The tag file (`--tag-file`, which the README's commands read to push the image) names the
/// tag of the layout beside it: the two are replaced together, or neither is.
#[test]
fn image_layouts_and_their_tag_files_at_every_crash_point_both_ways() {
    at_every_crash_point(true);
}

fn at_every_crash_point(tag_file: bool) {
    let Some((strace, scenarios)) = scenarios(tag_file) else {
        return;
    };
    let found: Vec<_> = scenarios
        .iter()
        .map(|scenario| sweep(&strace, scenario, Fault::Kill).0)
        .collect();
    for (scenario, figures) in scenarios.iter().zip(&found) {
        assert_clean(scenario, figures);
    }
}

/// strace, and `image` from `a`/`v1` to `b`/`v2` and back (with `--tag-file image.tag`, which
/// each must then replace with its layout); `None` (the test is skipped) without strace or on
/// a machine that cannot run the test binaries.
pub fn scenarios(tag_file: bool) -> Option<(PathBuf, Vec<Scenario>)> {
    let strace = common::tool("strace")?;
    if !runs_here() {
        return None;
    }
    let tool = Tool::under_test();
    let root = tempfile::tempdir().expect("temp dir");
    let (work, scratch) = (root.path().join("work"), root.path().join("scratch"));
    std::fs::create_dir_all(&scratch).expect("create folder");
    std::fs::create_dir_all(work.join("bin")).expect("create folder");
    for (name, message) in [("a", b"a\n"), ("b", b"b\n")] {
        let path = work.join("bin").join(name);
        std::fs::write(&path, static_elf(message)).expect("write a binary");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let image = |binary: &str, tag: &str| {
        let mut args = vec![
            "image",
            "--binary",
            binary,
            "--out",
            "oci",
            "--tag",
            tag,
            "--content-digest",
            CONTENT,
            "--no-sbom",
        ];
        // The test's binaries answer nothing as chartreg would: no listing to carry (the old
        // tool has neither the listing nor the flag).
        if matches!(tool.shape, Shape::Folder) {
            args.push("--no-listing");
        }
        if tag_file {
            args.extend(["--tag-file", "image.tag"]);
        }
        tool.invocation(&args)
    };
    let mut scenarios = Vec::new();
    for ((from, from_tag), (to, to_tag)) in [(("a", "v1"), ("b", "v2")), (("b", "v2"), ("a", "v1"))]
    {
        let _ = std::fs::remove_dir_all(work.join("oci"));
        let _ = std::fs::remove_file(work.join("image.tag"));
        let first = image(&format!("bin/{from}"), from_tag);
        let ran = run(first.command(&work), &scratch);
        assert!(ran.ok(), "{}: {}", first.describe(), ran.describe());
        scenarios.push(Scenario {
            name: format!(
                "image {from_tag}→{to_tag}{}",
                if tag_file { " with its tag file" } else { "" }
            ),
            before: Snapshot::of(&work),
            invocation: image(&format!("bin/{to}"), to_tag),
            replaces: if tag_file {
                vec!["oci", "image.tag"]
            } else {
                vec!["oci"]
            },
            lock: None,
            layouts: vec!["oci"],
            // `image` is not one of the commands that say it.
            says_nothing_changed: false,
        });
    }
    Some((strace, scenarios))
}
