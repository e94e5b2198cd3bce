//! The Makefile as a build machine runs it: the binaries are found wherever cargo builds
//! (`CARGO_TARGET_DIR` absolute, relative, or cargo's configuration). `make -n` shows, for each
//! folder setting, the paths the recipes run (a table; instant).

mod common;

use std::process::{Command, Output};

use rstest::rstest;

/// `make ARGS` in the repository, with only `env` of the variables this file is about set (the
/// caller's and an enclosing make's removed).
fn make(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("make");
    cmd.args(args).current_dir(common::root());
    for name in [
        "MAKEFLAGS",
        "MFLAGS",
        "MAKELEVEL",
        "CARGO_MAKEFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CHARTREG_ASSETS",
        "IMAGE_TAG",
        "IMAGE_SOURCE",
        "IMAGE_OUT",
        "GIT_DIR",
        "GIT_WORK_TREE",
    ] {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    common::output_of(&mut cmd, &format!("make {}", args.join(" ")))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[rstest]
#[case::default(None, "target")]
#[case::absolute_outside(
    Some("CARGO_TARGET_DIR=/tmp/chartreg-elsewhere/t"),
    "/tmp/chartreg-elsewhere/t"
)]
#[case::relative(Some("CARGO_TARGET_DIR=build/out"), "build/out")]
#[case::cargo_configuration(
    Some("CARGO_BUILD_TARGET_DIR=/tmp/chartreg-configured"),
    "/tmp/chartreg-configured"
)]
fn the_recipes_run_the_binaries_where_cargo_builds_them(
    #[case] setting: Option<&str>,
    #[case] folder: &str,
) {
    if common::tool("make").is_none() {
        return;
    }
    let env: Vec<(&str, &str)> = setting
        .and_then(|s| s.split_once('='))
        .into_iter()
        .collect();
    // Relative to the folder make runs in, the repository, as cargo takes it.
    let folder = common::root().join(folder);
    let folder = folder.display();
    let out = make(&["-n", "assets", "run", "image", "assets-check"], &env);
    assert!(out.status.success(), "{}", common::describe(&out));
    let text = stdout(&out);
    for expected in [
        format!("'{folder}/release/chartreg-build' pack --config content.yaml --out assets\n"),
        format!(
            "'{folder}/release/chartreg-build' pack --config content.yaml --out assets --check\n"
        ),
        format!("'{folder}/release/chartreg' serve --listen"),
        format!("CARGO_TARGET_DIR='{folder}' IMAGE_BASE=scratch CARGO="),
    ] {
        assert!(
            text.contains(&expected),
            "{setting:?}: no `{expected}` in:\n{text}"
        );
    }
    assert!(!text.contains(" target/release"), "{setting:?}:\n{text}");
}
