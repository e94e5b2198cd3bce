//! The files of an OCI image layout, checked before they are read:
//! 1. Paths: a blob's is `blobs/<algorithm>/<encoded>` of a parsed [`Digest`], whose grammar
//!    has no `/` and no `..` (`[a-z0-9]+([+._-][a-z0-9]+)*` and `[A-Za-z0-9=_-]+`), so it names
//!    a file under `blobs/` by construction; `index.json` and `oci-layout` are fixed names.
//! 2. Each file, its symbolic links followed, must lie inside the layout's folder and be a
//!    regular file: a FIFO would block the read, a link to `/dev/zero` never end it, a link to
//!    a file of the build machine would serve it.
//! 3. Documents are read whole, so each within a bound, checked before it is read and while
//!    it is: `oci-layout` [`MAX_MARKER`], `index.json` [`MAX_INDEX`], a manifest
//!    [`MAX_MANIFEST`] (its descriptor's size, checked against the file, is checked first).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::blob_path;

use super::super::imported::MAX_MANIFEST;
use super::super::{PackError, Problem, at, io_at};

/// The most of `oci-layout` read: it holds one short field.
pub const MAX_MARKER: u64 = 64 << 10;

/// The most of `index.json` read: a descriptor with its annotations takes some 300 to 500
/// bytes, so this holds tens of thousands of tags and referrers, while a layout written for
/// one image (skopeo, oras, crane, `chartreg-build fetch`) lists a few.
pub const MAX_INDEX: u64 = 16 << 20;

/// One layout's folder.
pub struct LayoutFiles<'a> {
    /// As given, for messages.
    dir: &'a Path,
    /// Its links resolved: where every file must lie.
    root: PathBuf,
}

impl<'a> LayoutFiles<'a> {
    pub fn open(dir: &'a Path) -> Result<Self, PackError> {
        let root = dir.canonicalize().map_err(io_at(dir))?;
        Ok(LayoutFiles { dir, root })
    }

    /// A file of the layout, by its path inside it.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The file holding `digest`.
    pub fn blob(&self, digest: &Digest) -> PathBuf {
        self.dir.join(blob_path(digest))
    }

    /// The size of the file at `path`, refused when its links lead out of the layout or it is
    /// not a regular file; `None` when there is nothing there.
    pub fn size(&self, path: &Path) -> Result<Option<u64>, PackError> {
        match self.resolve(path)? {
            Ok(size) => Ok(Some(size)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_at(path)(e)),
        }
    }

    /// The size of the file at `path` as [`LayoutFiles::size`] checks it, or why it could not
    /// be found.
    fn resolve(&self, path: &Path) -> Result<std::io::Result<u64>, PackError> {
        let real = match path.canonicalize() {
            Ok(real) => real,
            Err(e) => return Ok(Err(e)),
        };
        if !real.starts_with(&self.root) {
            return Err(at(path)(Problem::LayoutOutside(real)));
        }
        let meta = fs::metadata(&real).map_err(io_at(path))?;
        if !meta.is_file() {
            return Err(at(path)(Problem::LayoutNotFile));
        }
        Ok(Ok(meta.len()))
    }

    /// The bytes of the file at `path`, at most `limit` of them (see [`LayoutFiles::size`]).
    pub fn read(&self, path: &Path, limit: u64) -> Result<Vec<u8>, PackError> {
        let too_large = |size| at(path)(Problem::LayoutFileTooLarge { size, limit });
        let size = self.resolve(path)?.map_err(io_at(path))?;
        if size > limit {
            return Err(too_large(size));
        }
        let mut data = Vec::new();
        fs::File::open(path)
            .and_then(|f| f.take(limit + 1).read_to_end(&mut data))
            .map_err(io_at(path))?;
        if data.len() as u64 > limit {
            return Err(too_large(data.len() as u64));
        }
        Ok(data)
    }

    /// The document at `path`, at most `limit` bytes of JSON.
    pub fn json<T: serde::de::DeserializeOwned>(
        &self,
        path: &Path,
        limit: u64,
    ) -> Result<T, PackError> {
        let data = self.read(path, limit)?;
        serde_json::from_slice(&data).map_err(|e| at(path)(Problem::Json(e)))
    }

    /// The manifest `digest`, which its descriptor says is `size` bytes: refused unread past
    /// [`MAX_MANIFEST`].
    pub fn manifest(&self, digest: &Digest, size: u64) -> Result<Vec<u8>, PackError> {
        let path = self.blob(digest);
        if size > MAX_MANIFEST {
            return Err(at(&path)(Problem::LayoutManifestTooLarge { size }));
        }
        self.read(&path, MAX_MANIFEST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::os::unix::fs::symlink;

    enum Made {
        File,
        Fifo,
        LinkToDevZero,
        LinkOutside,
        LinkInside,
        BlobsFolderOutside,
        Missing,
    }

    /// What is at `blobs/sha256/<hex>` of a layout, and what `size` says of it.
    #[rstest]
    #[case::file(Made::File, Ok(Some(5)))]
    #[case::missing(Made::Missing, Ok(None))]
    #[case::link_inside(Made::LinkInside, Ok(Some(5)))]
    #[case::fifo(Made::Fifo, Err("is not a regular file"))]
    #[case::link_to_dev_zero(Made::LinkToDevZero, Err("leaves the layout (to /dev/zero)"))]
    #[case::link_outside(Made::LinkOutside, Err("is a symbolic link that leaves the layout"))]
    #[case::blobs_folder_outside(Made::BlobsFolderOutside, Err("leaves the layout"))]
    fn blobs_are_regular_files_inside_the_layout(
        #[case] made: Made,
        #[case] expected: Result<Option<u64>, &str>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let layout = dir.path().join("layout");
        let digest = Digest::sha256_of(b"hello");
        let files_outside = outside.path().join("blobs/sha256");
        fs::create_dir_all(&files_outside).unwrap();
        fs::write(files_outside.join(digest.encoded()), "hello").unwrap();
        let blobs = layout.join("blobs/sha256");
        if matches!(made, Made::BlobsFolderOutside) {
            fs::create_dir_all(&layout).unwrap();
            symlink(outside.path().join("blobs"), layout.join("blobs")).unwrap();
        } else {
            fs::create_dir_all(&blobs).unwrap();
        }
        let path = blobs.join(digest.encoded());
        match made {
            Made::File => fs::write(&path, "hello").unwrap(),
            Made::Fifo => {
                let made = std::process::Command::new("mkfifo")
                    .arg(&path)
                    .status()
                    .unwrap();
                assert!(made.success());
            }
            Made::LinkToDevZero => symlink("/dev/zero", &path).unwrap(),
            Made::LinkOutside => symlink(files_outside.join(digest.encoded()), &path).unwrap(),
            Made::LinkInside => {
                fs::write(layout.join("elsewhere"), "hello").unwrap();
                symlink(layout.join("elsewhere"), &path).unwrap();
            }
            Made::BlobsFolderOutside | Made::Missing => {}
        }
        let files = LayoutFiles::open(&layout).unwrap();
        assert_eq!(files.blob(&digest), path);
        match (files.size(&path), expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want),
            (Err(e), Err(words)) => {
                let e = e.to_string();
                assert!(e.starts_with(&path.display().to_string()), "{e}");
                assert!(e.contains(words), "{e}");
            }
            (got, want) => panic!("got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn documents_past_their_bound_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("index.json");
        // 8 GiB that take no disk: refused at the size, never read.
        fs::File::create(&index)
            .and_then(|f| f.set_len(8 << 30))
            .unwrap();
        let files = LayoutFiles::open(dir.path()).unwrap();
        let e = files
            .json::<serde_json::Value>(&index, MAX_INDEX)
            .unwrap_err();
        assert!(
            matches!(*e.problem, Problem::LayoutFileTooLarge { size, limit } if size == 8 << 30 && limit == MAX_INDEX),
            "{e}"
        );
        // A manifest whose descriptor claims 2 GiB is refused before its file is looked at.
        let digest = Digest::sha256_of(b"x");
        let e = files.manifest(&digest, 2 << 30).unwrap_err().to_string();
        assert!(e.contains("2147483648 bytes") && e.contains("4 MiB"), "{e}");
    }
}
