//! Chooses the folder the binary embeds: `assets/` by default, or `$CHARTREG_ASSETS` (relative
//! to this package) when set, and makes cargo rebuild when anything under it changes, including
//! files being added or removed (rust-embed alone only notices changed contents).

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=CHARTREG_ASSETS");
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let chosen = env::var_os("CHARTREG_ASSETS");
    let folder = manifest_dir.join(chosen.as_deref().unwrap_or("assets".as_ref()));
    if chosen.is_none() && !folder.exists() {
        // A checkout without packed content: build an empty registry so `pack` can run.
        std::fs::create_dir_all(&folder).expect("the assets folder can be created");
    }
    if !folder.is_dir() {
        panic!(
            "the assets folder {} does not exist; run `make assets` (or point CHARTREG_ASSETS at a folder)",
            folder.display()
        );
    }
    let folder = folder
        .canonicalize()
        .expect("the assets folder can be resolved");
    println!("cargo:rerun-if-changed={}", folder.display());
    println!("cargo:rustc-env=CHARTREG_ASSETS_DIR={}", folder.display());
    git_revision(&manifest_dir);
}

/// `CHARTREG_GIT_REVISION` for the build-info metric: from the environment (builds without a
/// checkout, such as container builds, pass it in), else from git, else unset ("unknown").
fn git_revision(manifest_dir: &std::path::Path) {
    println!("cargo:rerun-if-env-changed=CHARTREG_GIT_REVISION");
    if let Ok(revision) = env::var("CHARTREG_GIT_REVISION") {
        println!("cargo:rustc-env=CHARTREG_GIT_REVISION={revision}");
        return;
    }
    let git = manifest_dir.join(".git");
    if !git.is_dir() {
        return;
    }
    // Rebuild when HEAD moves: HEAD itself, and the branch file it names.
    println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(branch) = head.trim().strip_prefix("ref: ")
    {
        println!("cargo:rerun-if-changed={}", git.join(branch).display());
    }
    let output = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(manifest_dir)
        .output();
    if let Ok(output) = output
        && output.status.success()
    {
        let revision = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        println!("cargo:rustc-env=CHARTREG_GIT_REVISION={revision}");
    }
}
