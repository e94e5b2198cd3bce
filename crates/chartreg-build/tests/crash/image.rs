//! `image --out oci`, killed at every crash point (`sweep`), both ways between two images: the
//! image tests' static test binary printing `a` tagged `v1`, and printing `b` tagged `v2`.
//! The layout must be the old one or the new one, whole, after every kill.

use std::os::unix::fs::PermissionsExt as _;

use super::common;
use super::support::{CONTENT, runs_here, static_elf};
use super::sweep::{Scenario, sweep};
use super::tool::{Tool, run};
use super::tree::Snapshot;

#[test]
fn image_layouts_at_every_crash_point_both_ways() {
    let Some(strace) = common::tool("strace") else {
        return;
    };
    if !runs_here() {
        return;
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
    let mut figures = Vec::new();
    for ((from, from_tag), (to, to_tag)) in [(("a", "v1"), ("b", "v2")), (("b", "v2"), ("a", "v1"))]
    {
        let _ = std::fs::remove_dir_all(work.join("oci"));
        let first = image(&format!("bin/{from}"), from_tag);
        let ran = run(first.command(&work), &scratch);
        assert!(ran.ok(), "{}: {}", first.describe(), ran.describe());
        let scenario = Scenario {
            name: format!("image {from_tag}→{to_tag}"),
            before: Snapshot::of(&work),
            invocation: image(&format!("bin/{to}"), to_tag),
            replaces: vec!["oci"],
            lock: None,
            layouts: vec!["oci"],
        };
        let (found, _) = sweep(&strace, &scenario);
        figures.push((scenario.name, found));
    }
    for (name, found) in figures {
        assert!(found.clean(), "{name}: {found:#?}");
        assert!(
            found.not_reached * 4 <= found.ran && found.ran > 0,
            "{name}: {} of {} points were not reached",
            found.not_reached,
            found.ran
        );
    }
}
