//! chartreg: a read-only OCI registry for Helm charts (and other OCI content), built like a
//! static site.
//!
//! This crate is the server: it serves the content the binary (the root package, `chartreg-bin`)
//! embeds and hands it. The content model and OCI
//! vocabulary come from `chartreg-core` (its `content::Registry` is built from what the binary
//! embedded); content is made by the build tool, `chartreg-build`, which this crate does not
//! depend on.
//!
//! - [`http`] answers the OCI distribution read API from a registry, and the pages and the
//!   classic Helm repository through [`web`] (which renders them once, lazily).
//! - [`serve`] runs the HTTP server (its main listener built by [`listener`]; with [`tls`],
//!   [`metrics`] and [`logging`]).
//! - [`inspect`] lists what the binary holds and verifies it (`ls`, `verify`; [`recheck`]
//!   checks the build's signature records again); [`addons`] writes the add-ons ConfigMap of
//!   its charts (`addons-config`); [`mirror_config`] the files that make nodes pull its images
//!   through it (`mirror-config`).
//! - [`versions`] orders chart versions as Helm does, and names the one Helm takes by default
//!   with [`go_sort`] (Go's unstable sort, step for step).
//! - [`cli`] is the command line: `serve`, `ls`, `verify`, `addons-config`, `mirror-config`.
//! - [`this_build`] is what the binary recorded of its own build (revision, time, crates),
//!   for the metrics, the pages and the SBOM (`web::sbom`).
//!
//! Dependencies point one way: `cli` -> `serve` -> `listener` (-> `tls`) -> `http` -> `web` ->
//! `versions` -> `go_sort`, all -> `chartreg_core`; `cli` -> `addons` (-> `web`, `versions`),
//! `inspect` (-> `web`, `recheck` -> `chartreg_trust`), `mirror_config`; `http` -> `metrics`,
//! `logging` (neither imports the other modules); `web` and `metrics` -> `this_build`, which
//! imports nothing of the server.
//!
//! No `unsafe` code is written here (`[workspace.lints]` forbids it); the one `unsafe` in the
//! binary is in the expansion of `chartreg_embed::linked_blob!` (see the binary's `src/main.rs`,
//! the root package `chartreg-bin`).

pub mod addons;
pub mod cli;
pub mod go_sort;
pub mod http;
pub mod inspect;
pub mod listener;
pub mod logging;
pub mod metrics;
pub mod mirror_config;
pub mod recheck;
pub mod serve;
pub mod this_build;
pub mod tls;
pub mod versions;
pub mod web;
