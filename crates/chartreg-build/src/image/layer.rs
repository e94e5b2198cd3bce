//! The image's own layers, each a gzipped tar holding one file and nothing else, written the
//! same way on every machine, from any folder: the binary's ([`write`]: `chartreg`, mode 0755)
//! and the content listing's ([`write_data`]: `chartreg.listing.json`, mode 0644, see
//! [`super::listing`]):
//!
//! - one entry: a regular file, uid and gid 0, no user or group names, mtime the image's
//!   `created` time, in a GNU header (as `pack` writes its tars);
//! - gzip with no file name and mtime 0 in its header, at flate2's default level;
//! - streamed from its source to the layer file in one pass, hashing both sides: the sha256 of
//!   the tar is the layer's `diff_id` (the config's `rootfs`), the sha256 of the gzip its
//!   digest. A binary that changes size while being read is an error naming it.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use chartreg_core::oci::Digest;
use chartreg_core::tree::BlobFile;
use flate2::{Compression, GzBuilder};
use sha2::{Digest as _, Sha256};

use super::Error;

/// The path of the binary in the image (and its entry in the layer, without the `/`).
pub const ENTRY: &str = "chartreg";

/// A written layer: the gzip file, and the digest of the tar inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub blob: BlobFile,
    pub diff_id: Digest,
}

/// A writer that hashes and counts what passes through it.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    len: u64,
}

impl<W: Write> Hashing<W> {
    fn new(inner: W) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
            len: 0,
        }
    }

    fn finish(self) -> (W, Digest, u64) {
        (
            self.inner,
            Digest::from_sha256(self.hasher.finalize().into()),
            self.len,
        )
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let written = buf.get(..n).unwrap_or_default();
        self.hasher.update(written);
        self.len = self.len.saturating_add(written.len() as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The length of a tar holding one file of `size` bytes: its header, its data padded to
/// 512-byte blocks, and the two zero blocks that end the archive.
fn tar_len(size: u64) -> u64 {
    512u64
        .saturating_add(size.div_ceil(512).saturating_mul(512))
        .saturating_add(1024)
}

/// Writes the layer of `binary` (mtime `mtime`) into the file `into`.
pub fn write(binary: &Path, mtime: u64, into: &Path) -> Result<Layer, Error> {
    let reading = |source| Error::Binary {
        path: binary.to_owned(),
        source,
    };
    let source = File::open(binary).map_err(reading)?;
    let size = source.metadata().map_err(reading)?.len();
    let entry = Entry {
        name: ENTRY,
        mode: 0o755,
        size,
        mtime,
    };
    write_entry(&entry, source, into, reading, || Error::BinaryChanged {
        path: binary.to_owned(),
        size,
    })
}

/// Writes a layer holding `data` as the file `name` (mode 0644, mtime `mtime`) into `into`.
pub fn write_data(name: &str, data: &[u8], mtime: u64, into: &Path) -> Result<Layer, Error> {
    let failed = |source| Error::Io {
        path: into.to_owned(),
        source,
    };
    let entry = Entry {
        name,
        mode: 0o644,
        size: data.len() as u64,
        mtime,
    };
    write_entry(&entry, data, into, failed, || Error::Io {
        path: into.to_owned(),
        source: io::Error::other("the data changed size while being written"),
    })
}

/// The one file of a layer.
struct Entry<'a> {
    name: &'a str,
    mode: u32,
    size: u64,
    mtime: u64,
}

/// Writes the layer of `entry`, its bytes read from `source` (`reading` names a failed read;
/// `changed` a source that gave other than `entry.size` bytes).
fn write_entry(
    entry: &Entry<'_>,
    source: impl Read,
    into: &Path,
    reading: impl Fn(io::Error) -> Error,
    changed: impl Fn() -> Error,
) -> Result<Layer, Error> {
    let writing = |source| Error::Io {
        path: into.to_owned(),
        source,
    };
    let file = File::create(into).map_err(writing)?;
    let compressed = Hashing::new(BufWriter::new(file));
    let gzip = GzBuilder::new().write(compressed, Compression::default());
    let mut tar = tar::Builder::new(Hashing::new(gzip));
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(entry.size);
    header.set_mode(entry.mode);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(entry.mtime);
    // A reader that fails, rather than the tar being cut short, names the source.
    let mut data = ReadError {
        inner: source.take(entry.size),
        error: None,
    };
    let appended = tar.append_data(&mut header, entry.name, &mut data);
    if let Some(e) = data.error {
        return Err(reading(e));
    }
    appended.map_err(writing)?;
    let (gzip, diff_id, len) = tar.into_inner().map_err(writing)?.finish();
    if len != tar_len(entry.size) {
        return Err(changed());
    }
    let (buffered, digest, compressed_len) = gzip.finish().map_err(writing)?.finish();
    let file = buffered.into_inner().map_err(|e| writing(e.into_error()))?;
    file.sync_all().map_err(writing)?;
    Ok(Layer {
        blob: BlobFile {
            path: into.to_owned(),
            size: compressed_len,
            digest,
        },
        diff_id,
    })
}

/// A reader that remembers its own error, so that a failed read is told from a failed write.
struct ReadError<R> {
    inner: R,
    error: Option<io::Error>,
}

impl<R: Read> Read for ReadError<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            self.error = Some(io::Error::new(e.kind(), e.to_string()));
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use rstest::rstest;

    #[rstest]
    #[case(0, 1536)]
    #[case(1, 2048)]
    #[case(512, 2048)]
    #[case(513, 2560)]
    fn tar_lengths(#[case] size: u64, #[case] len: u64) {
        assert_eq!(tar_len(size), len);
    }

    #[test]
    fn one_entry_owned_by_root_and_the_same_bytes_every_time() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("anything");
        std::fs::write(&binary, b"\x7fELF not really").unwrap();
        let first = write(&binary, 1_700_000_000, &dir.path().join("a.tar.gz")).unwrap();
        let again = write(&binary, 1_700_000_000, &dir.path().join("b.tar.gz")).unwrap();
        assert_eq!(
            (&first.blob.digest, &first.diff_id),
            (&again.blob.digest, &again.diff_id)
        );
        let other_time = write(&binary, 0, &dir.path().join("c.tar.gz")).unwrap();
        assert_ne!(first.diff_id, other_time.diff_id);

        let gz = std::fs::read(&first.blob.path).unwrap();
        assert_eq!(first.blob.size, gz.len() as u64);
        assert_eq!(first.blob.digest, Digest::sha256_of(&gz));
        assert_eq!(&gz[4..8], &[0, 0, 0, 0], "gzip mtime 0");
        assert_eq!(gz[3] & 0x08, 0, "no file name in the gzip header");
        let mut tar = Vec::new();
        GzDecoder::new(gz.as_slice()).read_to_end(&mut tar).unwrap();
        assert_eq!(first.diff_id, Digest::sha256_of(&tar));
        let mut archive = tar::Archive::new(tar.as_slice());
        let entries: Vec<_> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().into_owned(),
                    h.entry_type(),
                    h.mode().unwrap(),
                    (h.uid().unwrap(), h.gid().unwrap()),
                    (
                        h.username().unwrap().map(str::to_owned),
                        h.groupname().unwrap().map(str::to_owned),
                    ),
                    h.mtime().unwrap(),
                    h.size().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            entries,
            [(
                Path::new("chartreg").to_owned(),
                tar::EntryType::Regular,
                0o755,
                (0, 0),
                (Some(String::new()), Some(String::new())),
                1_700_000_000,
                15
            )]
        );
    }

    #[test]
    fn a_missing_binary_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = write(&dir.path().join("gone"), 0, &dir.path().join("l")).unwrap_err();
        assert!(matches!(err, Error::Binary { .. }), "{err}");
        assert!(err.to_string().contains("gone"), "{err}");
    }
}
