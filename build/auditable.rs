//! The binary's dependency data in cargo-auditable's format, which trivy, grype, syft,
//! osv-scanner and `rust-audit-info` read: the crates linked in (module `crates`, the same list
//! the SBOM is written from) as cargo-auditable's JSON (`{"packages":[{name, version, source,
//! dependencies, root}],"format":1}`, every package a runtime one: build-only crates and
//! proc-macros are not listed), zlib-compressed, as the contents of a section `.dep-v0` in a relocatable ELF
//! object for the target. build.rs links the object into the binary and names its one symbol
//! to the linker as undefined (`--undefined`), which keeps the section through
//! `--gc-sections`.
//!
//! Written for ELF targets whose architecture the `object` crate is told of here (x86-64,
//! AArch64); elsewhere the binary carries no `.dep-v0` and the build says so.

use std::io::Write;
use std::path::{Path, PathBuf};

use object::write::{Object, Symbol, SymbolSection};
use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};

use crate::crates::{Linked, Source};

/// The symbol over the section's data, which the linker is told to keep.
pub const SYMBOL: &str = "chartreg_dep_v0";

/// Why the dependency data cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "the dependency data (.dep-v0): {name} has the version `{version}`, which is not semver"
    )]
    Version { name: String, version: String },
    #[error("the dependency data (.dep-v0): {0}")]
    Json(#[from] serde_json::Error),
    #[error("the dependency data (.dep-v0) cannot be compressed: {0}")]
    Compress(std::io::Error),
    #[error("the dependency data (.dep-v0): {0}")]
    Object(#[from] object::write::Error),
    #[error("the dependency data (.dep-v0) in {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The object file for `arch` (`CARGO_CFG_TARGET_ARCH`) holding `linked` as `.dep-v0`, written
/// to `dest`; `None` (nothing written) for an architecture it is not written for.
pub fn write(linked: &[Linked], arch: &str, dest: &Path) -> Result<Option<PathBuf>, Error> {
    let architecture = match arch {
        "x86_64" => Architecture::X86_64,
        "aarch64" => Architecture::Aarch64,
        _ => return Ok(None),
    };
    let compressed = compressed(linked)?;
    let mut object = Object::new(BinaryFormat::Elf, architecture, Endianness::Little);
    let section = object.add_section(
        Vec::new(),
        b".dep-v0".to_vec(),
        object::SectionKind::ReadOnlyData,
    );
    let offset = object.append_section_data(section, &compressed, 1);
    object.add_symbol(Symbol {
        name: SYMBOL.as_bytes().to_vec(),
        value: offset,
        size: compressed.len() as u64,
        kind: SymbolKind::Data,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Section(section),
        flags: SymbolFlags::None,
    });
    let bytes = object.write()?;
    let partial = dest.with_extension("partial");
    std::fs::write(&partial, bytes)
        .and_then(|()| std::fs::rename(&partial, dest))
        .map_err(|source| Error::Write {
            path: dest.to_owned(),
            source,
        })?;
    Ok(Some(dest.to_owned()))
}

/// `linked` as cargo-auditable's JSON, zlib-compressed.
fn compressed(linked: &[Linked]) -> Result<Vec<u8>, Error> {
    let json = serde_json::to_vec(&info(linked)?)?;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&json).map_err(Error::Compress)?;
    encoder.finish().map_err(Error::Compress)
}

/// cargo-auditable's JSON document, as its crate `auditable-serde` 0.9 writes it (fields left
/// out when they hold their default: `kind` runtime, no `dependencies`, `root` false). Written
/// here rather than with `auditable-serde`: that crate turns on semver's `serde` for every
/// build script of the workspace, which made `cargo test --workspace` compile the build tool's
/// dependencies (rustc_version, the dalek crates, pgp) a second time
/// (`scripts/one-compile.sh`). `rust-audit-info`, which parses with `auditable-serde`, reads
/// what this writes in the image tests.
#[derive(serde::Serialize)]
struct VersionInfo<'a> {
    packages: Vec<Package<'a>>,
    /// Format 1: the packages come from cargo's resolve of what is compiled for the target.
    format: u32,
}

#[derive(serde::Serialize)]
struct Package<'a> {
    name: &'a str,
    version: &'a str,
    /// `crates.io`, `git`, `local` or `registry`.
    source: &'static str,
    #[serde(skip_serializing_if = "<[usize]>::is_empty")]
    dependencies: &'a [usize],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    root: bool,
}

/// `linked` as cargo-auditable's document (format 1: proc-macros are not runtime crates).
fn info(linked: &[Linked]) -> Result<VersionInfo<'_>, Error> {
    let packages = linked
        .iter()
        .map(|c| {
            semver::Version::parse(&c.version).map_err(|_| Error::Version {
                name: c.name.clone(),
                version: c.version.clone(),
            })?;
            Ok(Package {
                name: &c.name,
                version: &c.version,
                source: match c.source {
                    Source::CratesIo => "crates.io",
                    Source::Local => "local",
                    Source::Git => "git",
                    Source::Registry => "registry",
                },
                dependencies: &c.dependencies,
                root: c.root,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(VersionInfo {
        packages,
        format: 1,
    })
}
