//! Shared by the build tool's integration tests: the repository root, `CI=true` and the crates
//! cargo said it compiled (for the tests that run a build machine, `dist.rs` and
//! `builder_image.rs`); and the harness the server's tests use too, included by path from
//! `tests/common` so there is one copy of each: the external tools (Helm, skopeo, curl, CNCF
//! distribution), content on disk (chart folders among it), a private CA, and the chartreg
//! library serving a registry in this process.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

#[path = "../../../../tests/common/certs.rs"]
mod certs;
#[path = "../../../../tests/common/clients.rs"]
mod clients;
#[path = "../../../../tests/common/content.rs"]
mod content;
#[path = "../../../../tests/common/in_process.rs"]
mod in_process;

#[allow(unused_imports)]
pub use certs::{LOOPBACK_NAME, LoopbackCert, server_config};
#[allow(unused_imports)]
pub use clients::*;
#[allow(unused_imports)]
pub use content::*;
#[allow(unused_imports)]
pub use in_process::{Background, InProcess};

/// The repository root (this crate lives in `crates/chartreg-build`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The crates of the `Compiling ...` lines cargo printed on stderr.
pub fn compiled(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Compiling "))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
        .collect()
}
