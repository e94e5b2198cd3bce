//! Empty: cargo resolves `[build-dependencies]` (here, syn's host features) only for a package
//! with a build script.
fn main() {}
