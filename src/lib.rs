//! chartreg: a read-only OCI registry for Helm charts (and other OCI content), built like a
//! static site.
//!
//! - [`pack`] turns Helm chart packages into OCI image layouts (the build's input).
//! - [`content`] builds an immutable in-memory [`content::Registry`] from any set of
//!   (path, bytes) pairs holding such layouts; the binary feeds it what it embedded.
//! - [`http`] answers the OCI distribution read API from a registry.
//! - [`oci`] holds the grammar and document types all of them share.
//!
//! Dependencies point one way: `http` -> `content` -> `oci`, `pack` -> `oci`.
#![forbid(unsafe_code)]

pub mod cli;
pub mod content;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod oci;
pub mod pack;
pub mod serve;
pub mod tls;
