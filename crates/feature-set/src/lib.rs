//! Nothing to call: this crate exists for its `Cargo.toml`, which gives the build tool's
//! dependencies the features the rest of the workspace turns on, so that `cargo build -p
//! chartreg-build` and `cargo test --workspace` compile the tool once (see the manifest).
