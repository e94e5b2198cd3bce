//! `image --out oci`, killed at every crash point (`sweep`), both ways between two images: the
//! image tests' static test binary printing `a` tagged `v1`, and printing `b` tagged `v2`.
//! The layout must be the old one or the new one, whole, after every kill.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

use super::common;
use super::directions::assert_clean;
use super::strace::Fault;
use super::support::{CONTENT, runs_here, static_elf};
use super::sweep::{Scenario, sweep};
use super::tool::{Tool, run};
use super::tree::Snapshot;

#[test]
fn image_layouts_at_every_crash_point_both_ways() {
    let Some((strace, scenarios)) = scenarios() else {
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

/// strace, and `image` from `a`/`v1` to `b`/`v2` and back; `None` (the test is skipped)
/// without strace or on a machine that cannot run the test binaries.
pub fn scenarios() -> Option<(PathBuf, Vec<Scenario>)> {
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
        tool.invocation(&[
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
        ])
    };
    let mut scenarios = Vec::new();
    for ((from, from_tag), (to, to_tag)) in [(("a", "v1"), ("b", "v2")), (("b", "v2"), ("a", "v1"))]
    {
        let _ = std::fs::remove_dir_all(work.join("oci"));
        let first = image(&format!("bin/{from}"), from_tag);
        let ran = run(first.command(&work), &scratch);
        assert!(ran.ok(), "{}: {}", first.describe(), ran.describe());
        scenarios.push(Scenario {
            name: format!("image {from_tag}→{to_tag}"),
            before: Snapshot::of(&work),
            invocation: image(&format!("bin/{to}"), to_tag),
            replaces: vec!["oci"],
            lock: None,
            layouts: vec!["oci"],
            // `image` is not one of the commands that say it.
            says_nothing_changed: false,
        });
    }
    Some((strace, scenarios))
}
