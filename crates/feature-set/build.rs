//! Empty: cargo resolves `[build-dependencies]` (here, syn's host features) only for a package
//! with a build script. It runs again only when it changes: with no `rerun-if-changed`, cargo
//! would compare the newest time of every file in the package instead, which differs between
//! copies of the tree that share a build folder (tests/make.rs) and would recompile the build
//! tool after each.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
