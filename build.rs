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
}
