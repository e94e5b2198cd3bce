//! The content listing an image carries as data, `/chartreg.listing.json`, in a layer of its
//! own: what the server inside serves, as the server itself said it when `image` asked it.
//! `image` writes it; `diff` reads it instead of running the image's binary. It is covered by
//! the image's digest, so by its signature (the SBOM referrers are not).
//!
//! 1. [`Listing::ask`]: a server binary asked, each run bounded in time, memory and output,
//!    for its version (`chartreg --version`), its content digest (`ls --content-digest`) and
//!    every row of `ls --json` (tags and referrers, as it prints them).
//! 2. [`Listing::to_bytes`]: the document, JSON with its fields in a fixed order (the rows as
//!    the server printed them), characters that would reach a terminal written as escapes;
//!    the same binary gives the same bytes. At most [`MAX_BYTES`].
//! 3. `layout` lays it as a layer like the binary's (`layer::write_data`: one entry,
//!    [`FILE`], mode 0644), below the binary's layer, its descriptor annotated [`ANNOTATION`]
//!    so that a reader finds it without opening any other layer.
//! 4. [`Listing::from_layer`]: read back from a layer's bytes (gzip or plain tar), in memory:
//!    decompression is stopped past [`MAX_BYTES`] and the tar's own blocks, nothing is written
//!    to disk, an entry other than a regular file [`FILE`] is not taken.

use std::cell::Cell;
use std::io::{self, Read};
use std::path::Path;
use std::rc::Rc;

use chartreg_core::oci::Digest;
use serde::{Deserialize, Serialize};

use crate::bounded::{Bounded, BoundedError, Limits};

/// The listing's file in the image (and its entry in the layer, without the `/`).
pub const FILE: &str = "chartreg.listing.json";
/// The annotation on the listing layer's descriptor in the manifest (its value: [`FILE`]).
pub const ANNOTATION: &str = "io.chartreg.listing";
/// The document's schema: a reader refuses another.
pub const SCHEMA_VERSION: u32 = 1;
/// The most bytes of a listing, written or read: a row per version, about 300 bytes each, and
/// more for charts that list their images (10,000 versions: a few MiB).
pub const MAX_BYTES: u64 = 64 << 20;
/// What a tar adds around its files (headers, padding, the end blocks), over [`MAX_BYTES`],
/// before decompression of a layer is stopped.
const TAR_SLACK: u64 = 1 << 20;

/// The bounds of asking for the version and the content digest (one line each).
const LINE_LIMITS: Limits = Limits {
    time: std::time::Duration::from_secs(120),
    memory: 1024 * 1024 * 1024,
    output: 1024 * 1024,
};

/// The bounds of asking for the rows.
const ROWS_LIMITS: Limits = Limits {
    time: std::time::Duration::from_secs(120),
    memory: 2 * 1024 * 1024 * 1024,
    output: MAX_BYTES,
};

/// What a server serves, as it said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The server's version, as `chartreg --version` prints it after `chartreg `.
    pub version: String,
    /// `ls --content-digest`.
    pub content_digest: Digest,
    /// Every row of `ls --json`, as printed.
    pub rows: Vec<serde_json::Value>,
}

/// Why a binary gave no listing, or bytes hold none.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error("`chartreg {asked}`: {source}")]
    Run {
        asked: &'static str,
        #[source]
        source: BoundedError,
    },
    #[error("`chartreg {asked}` failed ({status}): {stderr}")]
    Status {
        asked: &'static str,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("`chartreg {asked}` printed no answer chartreg gives ({reason})")]
    Answer { asked: &'static str, reason: String },
    #[error("the listing is {bytes} bytes, more than {} MiB, the most an image carries", MAX_BYTES >> 20)]
    TooLarge { bytes: u64 },
    #[error(
        "it decompresses to more than {} MiB, the most read of a listing's layer: refused",
        (MAX_BYTES + TAR_SLACK) >> 20
    )]
    Decompression,
    #[error("no tar ({0})")]
    NotTar(#[source] io::Error),
    #[error("it holds no {FILE}")]
    NoFile,
    #[error("its {FILE} is no regular file (a {0}): refused")]
    NotFile(String),
    #[error("its {FILE} is no listing: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error(
        "its listing is of schema {0}; this chartreg-build reads schema {SCHEMA_VERSION}: use the chartreg-build that made it"
    )]
    Schema(u32),
}

impl Listing {
    /// Asks the server `binary` (an absolute path: never looked up in PATH) for its listing.
    pub fn ask(binary: &Path) -> Result<Listing, ListingError> {
        let ask = |asked: &'static str, limits: Limits| -> Result<Vec<u8>, ListingError> {
            let done = Bounded::new(binary, limits)
                .args(asked.split(' '))
                .run()
                .map_err(|source| ListingError::Run { asked, source })?;
            if !done.status.success() {
                return Err(ListingError::Status {
                    asked,
                    status: done.status,
                    stderr: String::from_utf8_lossy(&done.stderr).trim().to_owned(),
                });
            }
            Ok(done.stdout)
        };
        let answer = |asked: &'static str, reason: String| ListingError::Answer { asked, reason };
        let printed = ask("--version", LINE_LIMITS)?;
        let line = String::from_utf8_lossy(&printed).trim().to_owned();
        let version = line
            .strip_prefix("chartreg ")
            .filter(|v| !v.is_empty() && !v.contains(char::is_whitespace))
            .ok_or_else(|| answer("--version", format!("{line:?}")))?
            .to_owned();
        let printed = ask("ls --content-digest", LINE_LIMITS)?;
        let line = String::from_utf8_lossy(&printed).trim().to_owned();
        let content_digest = line
            .parse::<Digest>()
            .ok()
            .filter(|d| d.sha256().is_some())
            .ok_or_else(|| answer("ls --content-digest", format!("{line:?}")))?;
        let printed = ask("ls --json", ROWS_LIMITS)?;
        let rows = serde_json::from_slice(&printed)
            .map_err(|e| answer("ls --json", format!("not a JSON list of rows: {e}")))?;
        Ok(Listing {
            schema_version: SCHEMA_VERSION,
            version,
            content_digest,
            rows,
        })
    }

    /// The document (see the module's documentation, step 2).
    pub fn to_bytes(&self) -> Result<Vec<u8>, ListingError> {
        let json = serde_json::to_string_pretty(self).map_err(ListingError::NotJson)?;
        let mut bytes = chartreg_core::shown::escaped_json(&json).into_owned();
        bytes.push('\n');
        if bytes.len() as u64 > MAX_BYTES {
            return Err(ListingError::TooLarge {
                bytes: bytes.len() as u64,
            });
        }
        Ok(bytes.into_bytes())
    }

    /// The listing `bytes` hold, of this schema.
    pub fn from_bytes(bytes: &[u8]) -> Result<Listing, ListingError> {
        if bytes.len() as u64 > MAX_BYTES {
            return Err(ListingError::TooLarge {
                bytes: bytes.len() as u64,
            });
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Schema {
            schema_version: u32,
        }
        let schema: Schema = serde_json::from_slice(bytes).map_err(ListingError::NotJson)?;
        if schema.schema_version != SCHEMA_VERSION {
            return Err(ListingError::Schema(schema.schema_version));
        }
        serde_json::from_slice(bytes).map_err(ListingError::NotJson)
    }

    /// The listing in the layer `data` (a gzipped tar when `gzip`, else a tar), read in memory
    /// within bounds (see the module's documentation, step 4).
    pub fn from_layer(data: &[u8], gzip: bool) -> Result<Listing, ListingError> {
        let stopped = Rc::new(Cell::new(false));
        let reader: Box<dyn Read + '_> = if gzip {
            Box::new(flate2::read::GzDecoder::new(data))
        } else {
            Box::new(data)
        };
        let capped = Capped {
            inner: reader,
            left: MAX_BYTES + TAR_SLACK,
            stopped: Rc::clone(&stopped),
        };
        let failed = |e: io::Error| {
            if stopped.get() {
                ListingError::Decompression
            } else {
                ListingError::NotTar(e)
            }
        };
        let mut archive = tar::Archive::new(capped);
        for entry in archive.entries().map_err(failed)? {
            let mut entry = entry.map_err(failed)?;
            let name = entry.path().map_err(failed)?.into_owned();
            if name != Path::new(FILE) && name != Path::new(".").join(FILE) {
                continue;
            }
            let kind = entry.header().entry_type();
            if !kind.is_file() {
                return Err(ListingError::NotFile(format!("{kind:?}").to_lowercase()));
            }
            let size = entry.header().size().map_err(failed)?;
            if size > MAX_BYTES {
                return Err(ListingError::TooLarge { bytes: size });
            }
            let mut bytes = Vec::new();
            entry
                .by_ref()
                .take(MAX_BYTES)
                .read_to_end(&mut bytes)
                .map_err(failed)?;
            return Listing::from_bytes(&bytes);
        }
        Err(ListingError::NoFile)
    }
}

/// A reader that fails, and says so in `stopped`, once more than `left` bytes are read.
struct Capped<R> {
    inner: R,
    left: u64,
    stopped: Rc<Cell<bool>>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                Ok(n)
            }
            None => {
                self.stopped.set(true);
                Err(io::Error::other("decompressed past its bound"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listing() -> Listing {
        Listing {
            schema_version: SCHEMA_VERSION,
            version: "0.1.0".into(),
            content_digest: Digest::sha256_of(b"content"),
            rows: vec![json!({"repository": "charts/a\u{1b}", "tag": "1.0.0", "size": 1})],
        }
    }

    fn tar_of(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (name, kind, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            tar.append_data(&mut header, name, *data).unwrap();
        }
        tar.into_inner().unwrap()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn written_and_read_back_the_same_bytes_every_time() {
        let bytes = listing().to_bytes().unwrap();
        assert_eq!(bytes, listing().to_bytes().unwrap());
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("charts/a\\u001b"), "escaped: {text}");
        assert!(text.starts_with("{\n  \"schemaVersion\": 1,\n  \"version\": \"0.1.0\""));
        let layer = tar_of(&[(FILE, tar::EntryType::Regular, &bytes)]);
        assert_eq!(Listing::from_layer(&layer, false).unwrap(), listing());
        assert_eq!(Listing::from_layer(&gzip(&layer), true).unwrap(), listing());
    }

    #[test]
    fn what_is_no_listing_is_refused_by_what_it_is() {
        let bytes = listing().to_bytes().unwrap();
        let link = tar_of(&[(FILE, tar::EntryType::Symlink, b"")]);
        assert!(matches!(
            Listing::from_layer(&link, false),
            Err(ListingError::NotFile(kind)) if kind == "symlink"
        ));
        let other = tar_of(&[("chartreg", tar::EntryType::Regular, &bytes)]);
        assert!(matches!(
            Listing::from_layer(&other, false),
            Err(ListingError::NoFile)
        ));
        let newer = br#"{"schemaVersion": 2, "whatever": true}"#;
        let newer = tar_of(&[(FILE, tar::EntryType::Regular, newer)]);
        assert!(matches!(
            Listing::from_layer(&newer, false),
            Err(ListingError::Schema(2))
        ));
        assert!(matches!(
            Listing::from_layer(b"not a gzip", true),
            Err(ListingError::NotTar(_))
        ));
    }

    #[test]
    fn a_layer_that_decompresses_past_the_bound_is_refused() {
        // A file of zeros before the listing: 80 MiB decompressed from about 80 KiB.
        let zeros = vec![0u8; 80 << 20];
        let bytes = listing().to_bytes().unwrap();
        let bomb = gzip(&tar_of(&[
            ("padding", tar::EntryType::Regular, &zeros),
            (FILE, tar::EntryType::Regular, &bytes),
        ]));
        drop(zeros);
        assert!(bomb.len() < 1 << 20, "{}", bomb.len());
        assert!(matches!(
            Listing::from_layer(&bomb, true),
            Err(ListingError::Decompression)
        ));
    }
}
