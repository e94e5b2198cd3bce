//! chartreg-build: makes the content that the chartreg server embeds. It runs on the build
//! machine, never in the cluster, and never embeds anything itself.
//!
//! On top, the command line: [`cli`] parses the arguments and runs one command, whose flags and
//! runner sit beside what it runs (`pack::command`, `chart_images::command`, which makes its
//! request as `pack::command` does, `fetch::command`, `import::command`, `compile::command`,
//! `image::command`, and [`init`], which writes a new content repository). Below it, from the
//! top down, each module uses only those after it:
//! - [`diff`] says what a rollout from one build (a server binary or an image layout) to
//!   another changes, asking each server what it serves; it reads layouts as [`image`] does.
//! - [`image`] writes chartreg's container image (the static server binary, on scratch or a
//!   base) as an OCI image layout, with no container engine, its SBOM attached and, with a
//!   cosign key, its signature.
//! - [`compile`] compiles the server with that content inside, from the server kit that comes
//!   with the tool, offline (`chartreg-build build`), after packing it.
//! - [`fetch`] takes charts and images from upstream, as mindthegap's lists name them, into
//!   the fetched folder (`fetched/`: `charts/`, `images/` and the [`lock`] that pins them,
//!   which `pack` reads too).
//! - [`import`] takes mindthegap bundles (earlier releases' charts and images) into
//!   `assets/`, digests unchanged; `pack` keeps what it imported.
//! - [`pack`] turns inputs (chart packages, chart folders, OCI image layouts) into the OCI
//!   image layouts under `assets/` that the server embeds; with the content file's `images:`
//!   section it finds the images the charts need with `chart_images`, and writes them down.
//! - [`chart_images`] finds the images each chart needs (`chartreg-build images`).
//! - [`chart`] reads a Helm chart package as Helm's loader does (its archive, its
//!   `Chart.yaml`, the budget of its subcharts): what pack, chart_images and fetch share.
//! - [`content_file`] reads the content file that lists the inputs (`content.yaml`); its
//!   layouts are [`layout_spec`]s (as `--layout DIR=REPOSITORY[:TAG]` gives them), its
//!   `verify:` policy is [`verify`]'s, checked by `chartreg_trust` for fetch and pack.
//! - [`yaml_file`] reads a file a person wrote (the content file, the lists, the lock) within
//!   [`yaml`]'s bounds, every error naming the file and line; [`yaml`] reads upstream's YAML
//!   (Chart.yaml, values.yaml, a bundle's lists) within bounds of size, nesting and expanded
//!   values.
//! - [`bounded`] runs every program the tool starts (Helm, cargo, the built server) within
//!   bounds of time, memory and output, with an environment it names, and ends whatever the
//!   program started with it; Helm in namespaces of its own, without network.
//! - [`pin`] reads what an entry asks of an image repository: a tag, a digest, or both.
//! - [`output`] prints the lines the commands show, escaped.
//! - [`durable`] is how every command that writes changes its folder: at one commit point (a
//!   new folder swapped in whole, fsync'd), stopping cleanly on SIGINT and SIGTERM.
//!
//! Everything it shares with the server (OCI vocabulary, layout writing) comes from
//! `chartreg-core`; the server's HTTP stack is not a dependency, so nothing here can reach it.

pub mod bounded;
pub mod chart;
pub mod chart_images;
pub mod cli;
pub mod compile;
pub mod content_file;
pub mod diff;
pub mod durable;
pub mod fetch;
pub mod image;
pub mod import;
pub mod init;
pub mod layout_spec;
pub mod lock;
pub mod output;
pub mod pack;
pub mod pin;
#[cfg(test)]
mod samples;
pub mod verify;
pub mod yaml;
pub mod yaml_file;
