//! Reading a whole file whose path input can name (a key, a keyring, a layout's documents and
//! blobs, a content file), bounded: it must be a regular file (a FIFO would block the reader for
//! ever, a device such as `/dev/zero` never ends), looked at before it is opened, and at most
//! `limit` bytes are read. Either refusal is an [`std::io::Error`] of kind `InvalidData`
//! saying which, so callers keep the error type they name the path with.

use std::io::{self, Read};
use std::path::Path;

/// The whole file at `path`, if it is a regular file of at most `limit` bytes.
pub fn read_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {}, the most read of it", shown_size(limit)),
        )
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::fs::File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut data)?;
    if data.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(data)
}

/// The same as text.
pub fn read_limited_to_string(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_limited(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// `limit` in MiB, or bytes below one.
fn shown_size(limit: u64) -> String {
    if limit >= 1 << 20 {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{limit} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, b"hello").unwrap();
        assert_eq!(read_limited(&path, 5).unwrap(), b"hello");
        let err = read_limited(&path, 4).unwrap_err();
        assert_eq!(err.to_string(), "larger than 4 bytes, the most read of it");
    }

    #[test]
    fn devices_and_folders_are_refused_without_reading() {
        let err = read_limited(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file");
        assert!(read_limited(Path::new("/"), 1 << 20).is_err());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(
            read_limited(&fifo, 1 << 20).unwrap_err().to_string(),
            "not a regular file"
        );
    }
}
