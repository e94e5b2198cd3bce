//! A download into a file ([`Partial`]): written to a temporary file beside its target, hashed
//! as it arrives, at most its bound's bytes, checked against the digest it must have, and only
//! then renamed into place; dropped unfinished, it leaves nothing. Files already there are
//! hashed to skip downloading them again ([`existing_sha256`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::super::problem::Problem;
use super::bounds::Bounded;

/// A file being downloaded: written beside its target, at most its bound's bytes of it,
/// renamed into place once checked.
pub struct Partial {
    temp: PathBuf,
    target: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    hasher: Sha256,
    size: u64,
    bound: Bounded,
    /// Where the bytes come from (a URL, a digest), for the error that refuses more of them.
    from: String,
}

impl Partial {
    /// A download from `from` (a URL, a digest) of what `bound` says, to `target`.
    pub fn create(target: &Path, bound: Bounded, from: &str) -> Result<Partial, Problem> {
        let dir = target.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Problem::file(dir, e))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Downloads at once each write their own (two entries may name one file).
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.part-{}-{n}", std::process::id()));
        let file = std::fs::File::create(&temp).map_err(|e| Problem::file(&temp, e))?;
        Ok(Partial {
            temp,
            target: target.to_owned(),
            file: std::io::BufWriter::new(file),
            hasher: Sha256::new(),
            size: 0,
            bound,
            from: from.to_owned(),
        })
    }

    /// Appends `chunk`; refused (and nothing of it written) when it would pass the bound.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), Problem> {
        if self.size + chunk.len() as u64 > self.bound.bytes() {
            return Err(Problem::TooLarge {
                from: self.from.clone(),
                bound: self.bound,
            });
        }
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        self.file
            .write_all(chunk)
            .map_err(|e| Problem::file(&self.temp, e))
    }

    /// Checks the bytes against `expected` (a sha256) and renames them into place; returns
    /// their size and sha256. On a mismatch the file is removed and nothing is replaced.
    pub fn finish(mut self, expected: Option<[u8; 32]>) -> Result<(u64, [u8; 32]), Problem> {
        let flushed = self.file.flush();
        let actual: [u8; 32] = std::mem::take(&mut self.hasher).finalize().into();
        if let Err(e) = flushed {
            return Err(Problem::file(&self.temp, e));
        }
        if let Some(expected) = expected
            && expected != actual
        {
            return Err(Problem::DigestMismatch {
                expected: hex::encode(expected),
                actual: hex::encode(actual),
            });
        }
        std::fs::rename(&self.temp, &self.target).map_err(|e| Problem::file(&self.target, e))?;
        Ok((self.size, actual))
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        // Renamed away when finished; otherwise nothing partial stays behind.
        let _ = std::fs::remove_file(&self.temp);
    }
}

/// The sha256 of a file already there, if it is (to skip downloading it again).
pub fn existing_sha256(path: &Path) -> Option<[u8; 32]> {
    chartreg_core::tree::BlobFile::hash(path)
        .ok()?
        .digest
        .sha256()
}

/// `hex` as 32 bytes, if it is a sha256 in hex (with or without `sha256:`).
pub fn sha256_of_hex(hex: &str) -> Option<[u8; 32]> {
    let hex = hex
        .strip_prefix("sha256:")
        .unwrap_or(hex)
        .to_ascii_lowercase();
    chartreg_core::oci::decode_sha256(hex.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_download_never_replaces_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.tgz");
        std::fs::write(&target, b"old").unwrap();
        let mut partial = Partial::create(&target, Bounded::Package, "test").unwrap();
        partial.write(b"new").unwrap();
        let e = partial.finish(Some([0; 32])).unwrap_err();
        assert!(matches!(e, Problem::DigestMismatch { .. }), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        let mut partial = Partial::create(&target, Bounded::Package, "test").unwrap();
        partial.write(b"new").unwrap();
        drop(partial);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
    }

    #[test]
    fn a_download_past_its_bound_is_refused_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("blob");
        let mut partial = Partial::create(&target, Bounded::Blob(4), "sha256:abc").unwrap();
        partial.write(b"abc").unwrap();
        let e = partial.write(b"de").unwrap_err();
        assert_eq!(
            e.to_string(),
            "sha256:abc: more than the 4 bytes its descriptor gives"
        );
        drop(partial);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
