//! `chartreg-build diff` reads what an image serves as data and never runs anything of it
//! (issue 54), through its binary:
//!
//! - [`hostile`]: an image whose `/chartreg` writes a marker file and prints OLD's rows is
//!   never run, from a layout or from CNCF distribution, and its own listing is what is
//!   reported; a `noexec` TMPDIR changes nothing;
//! - [`bounds`]: a gzip bomb for a listing, an oversized `index.json`, a blob that is a link to
//!   `/dev/zero`, a FIFO for a blob: each refused at once, by name;
//! - [`signed`]: with `--key` or `--policy`, signed sides are read and name their signer;
//!   unsigned and wrongly signed sides (and a binary, which has no signature) are refused by
//!   name, from a layout and from a registry;
//! - [`changes`]: another content digest or server version with the same rows is a change
//!   (exit 1); an image without a listing (from an older chartreg-build) is refused with what
//!   to do.
//!
//! The images are hand-made layouts ([`support`]) or written by `chartreg-build image` from a
//! minimal static binary with `--listing` (no server is compiled). OLD is mostly a shell script
//! answering as a server does: a binary given as a side is the user's own file, and is asked.
//! Missing tools (skopeo, docker-registry, PyNaCl) fail the test under `CI=true` and skip that
//! part elsewhere.
// Only a test crate: clippy.toml lets tests unwrap, expect, panic and index.
#![cfg(test)]

mod bounds;
mod changes;
#[path = "../common/mod.rs"]
mod common;
mod hostile;
#[allow(dead_code)]
#[path = "../image/support.rs"]
mod image_support;
mod signed;
mod support;
