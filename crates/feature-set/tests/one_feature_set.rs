//! The build tool resolves to one feature set whether cargo builds it alone (`make build-tool`)
//! or with the whole workspace's tests (`cargo test --workspace`), so `make test` compiles it
//! once: every package in the tool's dependency tree, with the features the tool alone turns
//! on, must appear with exactly those features in the workspace's resolution. Read with
//! `cargo tree` (no compile), `--frozen` (the lock as it is, no network).
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// `package version [(path)]` -> the feature sets it is resolved with (one per host and target
/// when they differ).
type Resolution = BTreeMap<String, BTreeSet<String>>;

fn resolution(args: &[&str]) -> Resolution {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args([
            "tree", "--frozen", "--prefix", "none", "--format", "{p}|{f}",
        ])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cargo tree {args:?}: {e}"));
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut packages = Resolution::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim_end_matches(" (*)");
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        packages
            .entry(package.to_owned())
            .or_default()
            .insert(features.to_owned());
    }
    packages
}

/// Every package in `alone`, with each feature set it has there, must have that feature set in
/// `workspace`: the lines that say what drifted.
fn drift(alone: &Resolution, workspace: &Resolution) -> Vec<String> {
    alone
        .iter()
        .flat_map(|(package, sets)| {
            let theirs = workspace.get(package);
            sets.iter()
                .filter(move |set| theirs.is_none_or(|t| !t.contains(*set)))
                .map(move |set| {
                    format!(
                        "{package}: [{set}] for the build tool alone, {:?} with the workspace's tests",
                        theirs.map(|t| t.iter().collect::<Vec<_>>()).unwrap_or_default()
                    )
                })
        })
        .collect()
}

#[test]
fn the_build_tool_compiles_with_one_feature_set() {
    // Packages compiled for the target (no build scripts, no proc-macros): the tool alone as
    // `cargo build -p chartreg-build` resolves it, the workspace as `cargo test --workspace`
    // does (dev-dependencies included). `cargo tree` does not say whether a line is a host or a
    // target package, so a host-only package with the same name could hide a target drift
    // without this view.
    let alone = resolution(&["-p", "chartreg-build", "-e", "normal,no-proc-macro"]);
    let workspace = resolution(&["--workspace", "-e", "normal,dev,no-proc-macro"]);
    assert!(
        alone.len() > 100,
        "the build tool's tree has {} packages",
        alone.len()
    );
    let mut drifted = drift(&alone, &workspace);
    // Then everything, host packages (syn and the proc-macros, build scripts' dependencies)
    // included.
    let alone = resolution(&["-p", "chartreg-build", "-e", "normal,build"]);
    let workspace = resolution(&["--workspace", "-e", "normal,build,dev"]);
    drifted.extend(drift(&alone, &workspace));
    drifted.dedup();
    assert!(
        drifted.is_empty(),
        "the build tool would compile twice in `make test`: add the workspace's features to \
         crates/feature-set/Cargo.toml:\n{}",
        drifted.join("\n")
    );
}
