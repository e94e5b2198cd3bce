//! chartreg-build: makes the content that the chartreg server embeds. It runs on the build
//! machine, never in the cluster, and never embeds anything itself.
//!
//! - [`pack`] turns inputs (chart packages, chart folders, OCI image layouts) into the OCI
//!   image layouts under `assets/` that the server embeds.
//! - [`content_file`] reads the content file that lists those inputs (`content.yaml`).
//! - [`cli`] is the command line, `chartreg-build pack ...`.
//!
//! Everything it shares with the server (OCI vocabulary, layout writing) comes from
//! `chartreg-core`; the server's HTTP stack is not a dependency, so nothing here can reach it.
#![forbid(unsafe_code)]

pub mod cli;
pub mod content_file;
pub mod pack;
