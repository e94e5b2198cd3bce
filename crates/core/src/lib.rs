//! chartreg's core, shared by the server (`chartreg`), its build script and the build tool
//! (`chartreg-build`):
//!
//! - [`oci`]: the grammar and document types everything else speaks (validated names, tags and
//!   digests; media types; the OCI image layout documents).
//! - [`content`]: the immutable in-memory [`content::Registry`] of OCI image layouts, built
//!   from a binary's files and the facts of them; the description the build makes of content
//!   (every check) and writes down as those facts; the listings. Its module doc maps its
//!   submodules (the registry, one repository, loading, facts, ...).
//! - [`file`]: whole files that input names, read bounded (regular files only, at most a limit).
//! - [`json`]: JSON strings quoted by functions that cannot fail.
//! - [`shown`]: upstream text as a terminal or a page shows it, control characters escaped.
//! - [`tree`]: files to write (documents in memory, blobs by reference to the file holding
//!   them), an in-memory layout builder, reading a folder, and writing a tree into a new
//!   generation of an output folder, linking what did not change.
//!
//! Dependencies point one way: `content` -> `oci`, `json`; `tree` -> `oci` (`content`'s tests
//! build layouts with `tree`). This crate has no HTTP
//! server, async runtime, TLS or command line; Cargo holds the server and the build tool to
//! sharing only this.
//!
//! The few small functions the server calls on every request (lookups by name, tag and
//! digest; a digest's text and hash; list pages) are `#[inline]`: without it (or LTO, which
//! would slow every release build of the tests) they cannot be inlined across the crate
//! boundary, which costs the request path several per cent.

pub mod content;
pub mod file;
pub mod json;
pub mod oci;
pub mod shown;
pub mod tree;
