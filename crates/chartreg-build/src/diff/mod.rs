//! `chartreg-build diff OLD NEW`: what a rollout from one build to another changes, for the
//! person approving it (or CI).
//!
//! 1. Each side ([`side`]) is an OCI image layout `image` wrote, such an image in a registry,
//!    or a server binary. An image is read as data ([`layout`]: bounded, no link followed,
//!    nothing run): with `--key` or `--policy` its signature is verified first ([`signed`]),
//!    then the content listing it carries is read ([`carried`]): the server's version, its
//!    content digest, and what it serves (`ls --json`'s rows). Only a binary given as a side,
//!    the user's own file, is asked (`ls --json`, `ls --content-digest`, `--version`), bounded.
//! 2. [`compare`] matches versions by repository and tag: added, removed, and changed (digest,
//!    size, kind or signer), and the bytes the new versions add; another content digest or
//!    server version is a change too, even when every version is the same.
//! 3. Printed as lines (`+`, `-`, `~`, then a summary) or `--format json`. The exit status is 0
//!    when nothing changes, 1 when something does, 2 when a side cannot be read or is refused
//!    (as `diff`).

pub mod carried;
pub mod compare;
pub mod layout;
pub mod side;
pub mod signed;

use chartreg_core::shown::escaped_json;
use clap::{Args, ValueEnum};

use crate::output::print_line;
use compare::Changes;
use side::{Side, SideError};
use signed::{SignedError, Trust};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The build running now: a server binary, an OCI image layout (`LAYOUT[:TAG]`), or an
    /// image in a registry (`REGISTRY/PATH:TAG`, `@DIGEST`, `:TAG@DIGEST`).
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The build to roll out, as OLD.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// A registry (`host:port`) reached over plain HTTP, for an image reference (loopback
    /// always is); repeatable.
    #[arg(long, value_name = "HOST")]
    pub plain_http: Vec<String>,
    /// PEM certificates to trust for registries, besides the system's.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<std::path::PathBuf>,
    /// Verify each image's cosign signature with this public key (cosign.pub) before reading
    /// it; an unsigned or wrongly signed side is refused (a server binary, which has no
    /// signature, too).
    #[arg(long, value_name = "FILE", conflicts_with = "policy")]
    pub key: Option<std::path::PathBuf>,
    /// Verify each image's signature with the `verify.images` keys and keyless rules of this
    /// content file, as fetch and pack do, before reading it; every side must verify.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<std::path::PathBuf>,
    /// Lines for people, or one JSON document.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Why no diff was made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Side(#[from] SideError),
    #[error(transparent)]
    Trust(#[from] SignedError),
    #[error("a work folder: {0}")]
    Work(#[source] std::io::Error),
    #[error("the JSON of the changes: {0}")]
    Json(#[source] serde_json::Error),
}

/// Runs `diff` (see the module's documentation); whether anything changes.
pub fn run(args: &DiffArgs) -> Result<bool, Error> {
    let work = tempfile::tempdir().map_err(Error::Work)?;
    let old_work = work.path().join("old");
    let new_work = work.path().join("new");
    for dir in [&old_work, &new_work] {
        std::fs::create_dir(dir).map_err(Error::Work)?;
    }
    let reach = side::Reach {
        plain_http: args.plain_http.clone(),
        ca_file: args.ca_file.clone(),
    };
    let trust = match (&args.key, &args.policy) {
        (Some(key), _) => Some(Trust::key(key)?),
        (None, Some(policy)) => Some(Trust::policy(policy)?),
        (None, None) => None,
    };
    let old = Side::read(&args.old, &reach, trust.as_ref(), &old_work)?;
    let new = Side::read(&args.new, &reach, trust.as_ref(), &new_work)?;
    let changes = Changes::of(&old, &new);
    match args.format {
        Format::Text => {
            for line in changes.lines() {
                print_line(line);
            }
        }
        Format::Json => {
            // Text from the content (names, tags) in JSON's own escapes.
            let json = serde_json::to_string_pretty(&changes).map_err(Error::Json)?;
            println!("{}", escaped_json(&json));
        }
    }
    Ok(changes.any())
}
