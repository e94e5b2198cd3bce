//! What `image` asks the server binary for this machine, each run bounded in time, memory and
//! output ([`Bounded`]) after the file is checked to be a static ELF executable
//! (`binary::inspect`), never found through PATH:
//!
//! - its content digest (`ls --content-digest`), unless `--content-digest` gives it;
//! - the SBOMs of each platform's binary (`ls --sbom spdx`, `ls --sbom cyclonedx`): the
//!   binary for this machine run as it is, another platform's under qemu-user (module
//!   `emulator`: `qemu-<arch>-static` or `qemu-<arch>`, the one program found through PATH,
//!   given the binary as its argument), since each platform's binary carries the crates of its
//!   own target; unless `--sbom FILE` gives them for the image (an SPDX 2.3 or a CycloneDX
//!   1.x JSON document, each recognised by its head, each format once) or `--no-sbom` leaves
//!   them out; each checked to be the format it is attached as;
//! - its content listing ([`super::listing`]: `--version`, `ls --content-digest`, `ls --json`),
//!   unless `--listing FILE` gives it (a listing an image carries, from an image of the same
//!   content built where the binary runs) or `--no-listing` leaves it out; either way its
//!   content digest must be the image's.
//!
//! With no binary for this machine (or, for the SBOMs, no qemu-user for another platform's),
//! each names the flag that gives what it would have asked.

use std::path::{Path, PathBuf};

use chartreg_core::oci::Digest;
use chartreg_core::oci::media_type::{CYCLONEDX_JSON, SPDX_JSON};

use super::Sbom;
use super::binary::{self, Binary, host_platform};
use super::emulator;
use super::listing::{self, Listing};
use crate::bounded::{Bounded, BoundedError, Limits};
use chartreg_core::oci::layout::Platform;

/// The bounds of asking for the content digest: the binary reads its embedded content's facts
/// (a few MiB at most) and prints one line.
const ASK_LIMITS: Limits = Limits {
    time: std::time::Duration::from_secs(120),
    memory: 1024 * 1024 * 1024,
    output: 1024 * 1024,
};

/// The bounds of asking for an SBOM: an item per version and per crate, about 1 KiB each
/// (10,000 versions: about 10 MiB).
const SBOM_LIMITS: Limits = Limits {
    time: std::time::Duration::from_secs(120),
    memory: 2 * 1024 * 1024 * 1024,
    output: 256 * 1024 * 1024,
};

const DIGEST_REMEDY: &str = "pass --content-digest sha256:...";
const SBOM_REMEDY: &str =
    "pass --sbom FILE (what `chartreg ls --sbom [cyclonedx]` prints) or --no-sbom";
const LISTING_REMEDY: &str = "pass --listing FILE (the chartreg.listing.json of an image of the same content) or --no-listing (`chartreg-build diff` then refuses the image)";

/// Why the binary could not be asked, or what it or a file gave is not what was asked for.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(
        "no binary is for this machine ({host}) to ask for its {what} (given: {given}): {remedy}"
    )]
    NoHostBinary {
        host: String,
        given: String,
        what: &'static str,
        remedy: &'static str,
    },
    #[error("{0}: to ask it for its SBOMs; else {SBOM_REMEDY}")]
    NoEmulator(#[from] emulator::NoEmulator),
    #[error(transparent)]
    Binary(#[from] super::Error),
    #[error("{} {asked}: {source}: {remedy}", path.display())]
    Run {
        path: PathBuf,
        asked: &'static str,
        remedy: &'static str,
        #[source]
        source: BoundedError,
    },
    #[error("{} {asked} failed ({status}): {stderr}: {remedy}", path.display())]
    Status {
        path: PathBuf,
        asked: &'static str,
        remedy: &'static str,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("{} ls --content-digest printed {printed:?}, not sha256:<64 hex digits>", path.display())]
    ContentDigestPrinted { path: PathBuf, printed: String },
    #[error("{} printed no {format} JSON document for {asked} ({reason}): {SBOM_REMEDY}", path.display())]
    SbomPrinted {
        path: PathBuf,
        asked: &'static str,
        format: &'static str,
        reason: String,
    },
    #[error("the SBOM {}: {source}", path.display())]
    SbomFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the SBOM {} is no SPDX 2.3 or CycloneDX 1.x JSON document ({reason})", path.display())]
    SbomUnknown { path: PathBuf, reason: String },
    #[error("{} gave no content listing: {source}: {LISTING_REMEDY}", path.display())]
    Listing {
        path: PathBuf,
        #[source]
        source: super::listing::ListingError,
    },
    #[error(
        "the listing {} is of content {listed}, not {content}, the image's content digest",
        path.display()
    )]
    ListingContent {
        path: PathBuf,
        listed: String,
        content: String,
    },
    #[error("the listing {}: {source}", path.display())]
    ListingFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("two {format} SBOMs given ({} and {}): attach one of each format at most", first.display(), second.display())]
    SbomTwice {
        format: &'static str,
        first: PathBuf,
        second: PathBuf,
    },
}

/// The binary for this machine (`what` it would be asked for, and how else to give it, name
/// it in the error when there is none), checked to be a static ELF executable.
fn host_binary<'a>(
    binaries: &'a [Binary],
    what: &'static str,
    remedy: &'static str,
) -> Result<&'a Binary, AskError> {
    let host = host_platform();
    let runnable = binaries.iter().find(|b| {
        host.as_ref()
            .is_some_and(|h| h.os == b.platform.os && h.architecture == b.platform.architecture)
    });
    let Some(binary) = runnable else {
        return Err(AskError::NoHostBinary {
            host: host.map_or_else(|| std::env::consts::ARCH.to_owned(), |h| h.to_string()),
            given: binaries
                .iter()
                .map(|b| format!("{}={}", b.platform, b.path.display()))
                .collect::<Vec<_>>()
                .join(", "),
            what,
            remedy,
        });
    };
    binary::inspect(binary)?;
    Ok(binary)
}

/// What the binary for this machine prints when `asked` (its arguments, split at spaces;
/// `what` it is asked for, and how else to give it, name it in errors): its path and stdout.
fn ask(
    binaries: &[Binary],
    asked: &'static str,
    what: &'static str,
    remedy: &'static str,
    limits: Limits,
) -> Result<(PathBuf, Vec<u8>), AskError> {
    let binary = host_binary(binaries, what, remedy)?;
    run(binary, None, asked, remedy, limits)
}

/// What `binary` prints when `asked`, run by `emulator` (qemu-user) when given.
fn run(
    binary: &Binary,
    emulator: Option<&Path>,
    asked: &'static str,
    remedy: &'static str,
    limits: Limits,
) -> Result<(PathBuf, Vec<u8>), AskError> {
    let bounded = match emulator {
        None => Bounded::new(&binary.path, limits),
        Some(qemu) => Bounded::new(qemu, limits).arg(&binary.path),
    };
    let output = bounded
        .args(asked.split(' '))
        .run()
        .map_err(|source| AskError::Run {
            path: binary.path.clone(),
            asked,
            remedy,
            source,
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(AskError::Status {
            path: binary.path.clone(),
            asked,
            remedy,
            status: output.status,
            stderr: stderr.trim().to_owned(),
        });
    }
    Ok((binary.path.clone(), output.stdout))
}

/// What the binary for this machine prints for `ls --content-digest`.
pub(super) fn content_digest(binaries: &[Binary]) -> Result<Digest, AskError> {
    let (path, stdout) = ask(
        binaries,
        "ls --content-digest",
        "content digest",
        DIGEST_REMEDY,
        ASK_LIMITS,
    )?;
    let printed = String::from_utf8_lossy(&stdout).trim().to_owned();
    match printed.parse::<Digest>() {
        Ok(digest) if digest.sha256().is_some() => Ok(digest),
        _ => Err(AskError::ContentDigestPrinted { path, printed }),
    }
}

/// The listing to carry: none with `none` (`--no-listing`), the `file` given, else what the
/// binary for this machine says; its content digest must be `content`.
pub(super) fn listing(
    binaries: &[Binary],
    file: Option<&Path>,
    none: bool,
    content: &Digest,
) -> Result<Option<Listing>, AskError> {
    if none {
        return Ok(None);
    }
    let (path, listing) = match file {
        Some(path) => {
            let read =
                chartreg_core::file::read_limited(path, listing::MAX_BYTES).map_err(|source| {
                    AskError::ListingFile {
                        path: path.to_owned(),
                        source,
                    }
                })?;
            let listing = Listing::from_bytes(&read).map_err(|source| AskError::Listing {
                path: path.to_owned(),
                source,
            })?;
            (path.to_owned(), listing)
        }
        None => {
            let binary = host_binary(binaries, "content listing", LISTING_REMEDY)?;
            let absolute = std::path::absolute(&binary.path).map_err(|source| {
                AskError::Binary(super::Error::Binary {
                    path: binary.path.clone(),
                    source,
                })
            })?;
            let listing = Listing::ask(&absolute).map_err(|source| AskError::Listing {
                path: binary.path.clone(),
                source,
            })?;
            (binary.path.clone(), listing)
        }
    };
    if listing.content_digest != *content {
        return Err(AskError::ListingContent {
            path,
            listed: listing.content_digest.to_string(),
            content: content.to_string(),
        });
    }
    Ok(Some(listing))
}

/// Why a document is no SBOM format this tool attaches.
#[derive(Debug, thiserror::Error)]
enum FormatError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("its spdxVersion is {0:?}")]
    SpdxVersion(String),
    #[error("its bomFormat is {format:?}, its specVersion {version:?}")]
    BomFormat {
        format: String,
        version: Option<String>,
    },
    #[error("neither spdxVersion nor bomFormat names its format")]
    Unnamed,
}

/// The format of an SBOM document, by its head: its media type and name.
fn format_of(data: &[u8]) -> Result<(&'static str, &'static str), FormatError> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head {
        spdx_version: Option<String>,
        bom_format: Option<String>,
        spec_version: Option<String>,
    }
    let head: Head = serde_json::from_slice(data)?;
    match (head.spdx_version, head.bom_format, head.spec_version) {
        (Some(v), None, _) if v == "SPDX-2.3" => Ok((SPDX_JSON, "SPDX 2.3")),
        (Some(v), None, _) => Err(FormatError::SpdxVersion(v)),
        (None, Some(f), Some(v)) if f == "CycloneDX" && v.starts_with("1.") => {
            Ok((CYCLONEDX_JSON, "CycloneDX"))
        }
        (None, Some(format), version) => Err(FormatError::BomFormat { format, version }),
        _ => Err(FormatError::Unnamed),
    }
}

/// The SBOMs to attach: none with `none` (`--no-sbom`), the `files` given (about the image:
/// what `index.json` lists), else the SPDX and CycloneDX documents each binary prints, about
/// its platform's manifest (with one binary: the image).
pub(super) fn sboms(
    binaries: &[Binary],
    files: &[PathBuf],
    none: bool,
) -> Result<Vec<Sbom>, AskError> {
    if none {
        return Ok(Vec::new());
    }
    if !files.is_empty() {
        let mut given: Vec<(Sbom, &Path)> = Vec::new();
        for path in files {
            let data = std::fs::read(path).map_err(|source| AskError::SbomFile {
                path: path.clone(),
                source,
            })?;
            let (media_type, format) =
                format_of(&data).map_err(|reason| AskError::SbomUnknown {
                    path: path.clone(),
                    reason: reason.to_string(),
                })?;
            if let Some((_, first)) = given.iter().find(|(s, _)| s.media_type == media_type) {
                return Err(AskError::SbomTwice {
                    format,
                    first: first.to_path_buf(),
                    second: path.clone(),
                });
            }
            given.push((
                Sbom {
                    media_type,
                    data,
                    platform: None,
                },
                path,
            ));
        }
        return Ok(given.into_iter().map(|(sbom, _)| sbom).collect());
    }
    let mut printed = Vec::new();
    // Every binary's runner first: a missing qemu-user fails before anything runs.
    let runners = binaries
        .iter()
        .map(|binary| {
            let (built_for, _) = binary::machine(binary)?;
            let architecture = built_for.unwrap_or(binary.platform.architecture.as_str());
            Ok((binary, emulator::find(binary, architecture)?))
        })
        .collect::<Result<Vec<_>, AskError>>()?;
    for (binary, emulator) in &runners {
        let platform = (binaries.len() > 1).then(|| binary.platform.clone());
        printed.extend(sboms_of(binary, emulator.as_deref(), platform)?);
    }
    Ok(printed)
}

/// The SPDX and CycloneDX documents `binary` prints (run by `emulator` when given), about
/// `platform`'s manifest.
fn sboms_of(
    binary: &Binary,
    emulator: Option<&Path>,
    platform: Option<Platform>,
) -> Result<Vec<Sbom>, AskError> {
    let mut printed = Vec::new();
    for (asked, wanted) in [
        ("ls --sbom spdx", SPDX_JSON),
        ("ls --sbom cyclonedx", CYCLONEDX_JSON),
    ] {
        let (path, stdout) = run(binary, emulator, asked, SBOM_REMEDY, SBOM_LIMITS)?;
        let format = if wanted == SPDX_JSON {
            "SPDX 2.3"
        } else {
            "CycloneDX"
        };
        match format_of(&stdout) {
            Ok((media_type, _)) if media_type == wanted => printed.push(Sbom {
                media_type,
                data: stdout,
                platform: platform.clone(),
            }),
            Ok((_, other)) => {
                return Err(AskError::SbomPrinted {
                    path,
                    asked,
                    format,
                    reason: format!("it printed {other}"),
                });
            }
            Err(reason) => {
                return Err(AskError::SbomPrinted {
                    path,
                    asked,
                    format,
                    reason: reason.to_string(),
                });
            }
        }
    }
    Ok(printed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(r#"{"spdxVersion":"SPDX-2.3"}"#, Ok(SPDX_JSON))]
    #[case(r#"{"bomFormat":"CycloneDX","specVersion":"1.6"}"#, Ok(CYCLONEDX_JSON))]
    #[case(r#"{"bomFormat":"CycloneDX","specVersion":"1.4"}"#, Ok(CYCLONEDX_JSON))]
    #[case(r#"{"spdxVersion":"SPDX-2.2"}"#, Err("SPDX-2.2"))]
    #[case(r#"{"bomFormat":"CycloneDX","specVersion":"2.0"}"#, Err("2.0"))]
    #[case(r#"{"bomFormat":"SWID"}"#, Err("SWID"))]
    #[case(r#"{"name":"x"}"#, Err("neither"))]
    #[case("not json", Err("expected"))]
    fn formats(#[case] data: &str, #[case] want: Result<&str, &str>) {
        match (format_of(data.as_bytes()), want) {
            (Ok((media_type, _)), Ok(wanted)) => assert_eq!(media_type, wanted),
            (Err(reason), Err(words)) => assert!(reason.to_string().contains(words), "{reason}"),
            (got, want) => panic!("{data}: got {got:?}, want {want:?}"),
        }
    }
}
