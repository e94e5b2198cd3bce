//! chartreg's core, shared by the server (`chartreg`), its build script and the build tool
//! (`chartreg-build`):
//!
//! - [`oci`]: the grammar and document types everything else speaks (validated names, tags and
//!   digests; media types; the OCI image layout documents and an in-memory layout builder).
//! - [`content`]: the immutable in-memory [`content::Registry`] built from any set of
//!   (path, bytes) pairs holding OCI image layouts, its checks and its listings.
//! - [`tree`]: files to write (documents in memory, blobs by reference to the file holding
//!   them), reading a folder, and writing a tree into place without damaging what was there.
//!
//! Dependencies point one way: `content` -> `oci`, `tree` -> `oci`. This crate has no HTTP
//! server, async runtime, TLS or command line; Cargo holds the server and the build tool to
//! sharing only this.
#![forbid(unsafe_code)]

pub mod content;
pub mod oci;
pub mod tree;
