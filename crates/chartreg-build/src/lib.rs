//! chartreg-build: makes the content that the chartreg server embeds. It runs on the build
//! machine, never in the cluster, and never embeds anything itself.
//!
//! - [`pack`] turns inputs (chart packages, chart folders, OCI image layouts) into the OCI
//!   image layouts under `assets/` that the server embeds.
//! - [`fetch`] takes charts and images from upstream, as
//!   mindthegap's lists name them, into `charts/` and `images/`, pinned by a [`lock`].
//! - [`import`] takes mindthegap bundles (earlier releases' charts and images) into
//!   `assets/`, digests unchanged; `pack` keeps what it imported.
//! - [`compile`] compiles the server with that content inside, from the server kit that comes
//!   with the tool, offline (`chartreg-build build`); [`init`] writes a new content repository.
//! - [`image`] writes chartreg's container image (the static server binary, on scratch or a
//!   base) as an OCI image layout, with no container engine.
//! - [`chart_images`] finds the images each chart needs (`chartreg-build images`), which
//!   pack checks the content holds.
//! - [`content_file`] reads the content file that lists those inputs (`content.yaml`);
//!   [`verify`] is its `verify:` policy, checked by `chartreg_trust` for fetch and pack.
//! - [`yaml`] reads upstream's YAML (Chart.yaml, values.yaml, a bundle's lists) within bounds
//!   of size, nesting and expanded values; [`yaml_file`] reads a file a person wrote (the
//!   content file, the lists, the lock) with those bounds, every error naming the file and line.
//! - [`bounded`] runs every program the tool starts (Helm, cargo, the built server) within
//!   bounds of time, memory and output, with an environment it names.
//! - [`pin`] reads what an entry asks of an image repository: a tag, a digest, or both.
//! - [`cli`] is the command line, `chartreg-build pack ...`, `chartreg-build fetch ...`.
//!
//! Everything it shares with the server (OCI vocabulary, layout writing) comes from
//! `chartreg-core`; the server's HTTP stack is not a dependency, so nothing here can reach it.

pub mod bounded;
pub mod chart_images;
pub mod cli;
pub mod compile;
pub mod content_file;
pub mod fetch;
pub mod image;
pub mod import;
pub mod init;
pub mod lock;
pub mod pack;
pub mod pin;
#[cfg(test)]
mod samples;
pub mod verify;
pub mod yaml;
pub mod yaml_file;
