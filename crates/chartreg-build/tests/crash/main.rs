//! A build is all or nothing: `chartreg-build fetch`, `pack` and `image`, killed just before
//! each of their file-changing system calls, leave the old state or the new one, never a
//! mix, and the next run gives exactly what an uninterrupted run gives, with nothing left
//! over; a run that fails without a kill changes nothing, and says so.
//!
//! - `directions`: fetch, then pack of what it fetched, between two list states (`states`:
//!   a chart re-published with other bytes under its version, an image tag dropped, charts and
//!   a classic repository added), A→B and B→A, each killed at its crash points (`sweep`, with
//!   `strace`'s fault injection), checked at rest after each kill (`checks`) and re-run.
//! - `image`: `image --out`, between two binaries, both ways, the same way; and with
//!   `--tag-file`, the layout and its tag file together.
//! - `errors`: the same runs (one way) with each file-changing call failing with EIO in turn
//!   instead of a kill: a failed run changed nothing and says so, and says so only then.
//! - `failures`: no kill: an entry missing upstream, the registry killed in the middle of a
//!   50 MB layer, a full disk (a 2 MiB tmpfs) under fetch and pack, SIGINT and SIGTERM in the
//!   middle of a run.
//!
//! Points are sampled unless `CHARTREG_CRASH_POINTS=all` (`make crash-points`); each sweep
//! prints its figures. `CHARTREG_CRASH_TOOL` runs the sweeps against another `chartreg-build`
//! (the one before fetched folders has its command line adapted: `tool`). Upstreams run on
//! 127.0.0.1 for one test each; strace, docker-registry and skopeo missing skip a test, and
//! fail it under `CI=true`; so does a tmpfs that cannot be mounted (it needs root).
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod checks;
#[path = "../common/mod.rs"]
mod common;
mod directions;
mod errors;
mod failures;
mod image;
// The fetch tests' upstreams: this target takes the classic repository from them.
#[allow(dead_code)]
#[path = "../fetch/sources.rs"]
mod sources;
mod states;
mod strace;
// The image tests' static test binary.
#[allow(dead_code)]
#[path = "../image/support.rs"]
mod support;
mod sweep;
mod tool;
mod tree;
