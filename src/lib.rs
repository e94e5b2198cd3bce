//! chartreg: a read-only OCI registry for Helm charts (and other OCI content), built like a
//! static site.
//!
//! This crate is the server: it embeds content and serves it. The content model and OCI
//! vocabulary come from `chartreg-core` (its `content::Registry` is built from what the binary
//! embedded); content is made by the build tool, `chartreg-build`, which this crate does not
//! depend on.
//!
//! - [`http`] answers the OCI distribution read API from a registry.
//! - [`serve`] runs the HTTP server (with [`tls`], [`metrics`] and [`logging`]).
//! - [`cli`] is the command line: `serve` and `ls`.
//!
//! Dependencies point one way: `cli` -> `serve` -> `http` -> `chartreg_core`.
#![forbid(unsafe_code)]

pub mod cli;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod serve;
pub mod tls;
