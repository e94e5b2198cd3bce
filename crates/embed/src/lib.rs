//! Large content files in chartreg's binary, without the compiler holding them.
//!
//! `include_bytes!` (what rust-embed uses) holds about 12 times a file's size in compiler
//! memory, so a few GiB of image layers cannot be embedded that way. Instead:
//!
//! 1. At build time ([`prepare`], feature `prepare`, run by the server's build script), each large
//!    file is streamed into a relocatable ELF object of its own, one section and one symbol
//!    (`chartreg_blob_<sha256>`), named by its digest: a layer that several images share is
//!    linked once, and an object already written for a digest is reused by the next build.
//!    The build script passes the objects to the linker and writes a list naming them.
//! 2. At compile time, [`linked_blob!`] turns each name in that list into a `&'static [u8]`:
//!    an `extern` static the linker resolves to the object's bytes. Nothing is copied: the
//!    binary serves the pages the kernel maps from its own file.
//! 3. At start-up, `files` (feature `files`) reads the binary's content back: rust-embed's
//!    files, the linked ones and the aliases, with the facts the build wrote.
//!
//! Declaring an `extern` static and reading it is `unsafe`; that `unsafe` is in this macro's
//! expansion only, so the crates that use it keep `unsafe_code` forbidden (the lint does not
//! look into macros from other crates). It is sound because the build script writes the symbol
//! and its size together: the object's section holds exactly `len` bytes under that name, the
//! bytes never change (read-only section), and `chartreg verify` checks them against the
//! sha256 the build recorded (which start-up checks against the build's facts).
//!
//! The objects' sections are x86-64 *large* data (`.lrodata`, `SHF_X86_64_LARGE`), placed
//! after `.bss` so that GiBs of them never sit between code and the data it reaches with
//! 32-bit PC-relative references; the table of linked files refers to them with 64-bit
//! absolute addresses, which reach anywhere. See `prepare::link_args` (feature `prepare`).

#[cfg(feature = "files")]
pub mod files;
#[cfg(feature = "prepare")]
pub mod prepare;

/// The bytes of a file linked in by the build script: `linked_blob!("chartreg_blob_<hex>",
/// <len>)` is a `&'static [u8; len]`. Usable in a `static`'s initialiser, which is how the
/// generated list uses it (an absolute address, whatever the distance).
#[macro_export]
macro_rules! linked_blob {
    ($symbol:literal, $len:literal) => {{
        unsafe extern "C" {
            #[link_name = $symbol]
            static BLOB: [u8; $len];
        }
        // SAFETY: the build script linked an object whose read-only section holds exactly
        // `$len` bytes under `$symbol` (see the crate's documentation).
        unsafe { &BLOB }
    }};
}
