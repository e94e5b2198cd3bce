//! An OCI image layout read as data by `diff`: nothing in it is run, and nothing of it is
//! taken for what it says it is.
//!
//! 1. [`Layout::open`] opens the folder the user named (following a link there is the user's
//!    choice) and checks that it holds an `oci-layout` file.
//! 2. Every file is then opened from that folder one name at a time, never following a
//!    symbolic link (`O_NOFOLLOW`, folders with `O_DIRECTORY`): it is first opened as a path
//!    only (`O_PATH`, which opens no device and waits on no FIFO) and must be a regular file,
//!    then opened for reading without blocking and checked to be that same file. So nothing
//!    outside the layout is read, and no FIFO or device hangs the reader.
//! 3. Bounded: `index.json` at most [`INDEX_LIMIT`]; a blob is read only when its descriptor's
//!    size is within the bound its reader gives (manifests and configs [`DOCUMENT_LIMIT`]),
//!    and its bytes must then be that size and digest. Only `sha256` blobs are read.
//! 4. The trust crate checks signatures through it (`signed::Layouts`, its `Store`).

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use chartreg_core::oci::Digest;
use chartreg_core::oci::layout::{Descriptor, INDEX_FILE, ImageIndex, OCI_LAYOUT_FILE};
use rustix::fs::{FileType, Mode, OFlags};

/// The most of `index.json` read: an image, its signature and SBOMs take a few KiB; 4 MiB
/// lists thousands of images.
pub const INDEX_LIMIT: u64 = 4 << 20;
/// The most of a manifest, index or config read (registries refuse larger manifests).
pub const DOCUMENT_LIMIT: u64 = 4 << 20;

/// A file of the layout that cannot be read, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct ReadError {
    pub path: PathBuf,
    pub problem: Problem,
}

/// What is wrong with a file of the layout.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("{0}")]
    Io(#[source] std::io::Error),
    #[error("a symbolic link: not followed (a layout's files are regular files inside it)")]
    Link,
    #[error("a {0}, not a regular file: refused")]
    NotFile(&'static str),
    #[error("it changed while being opened")]
    Changed,
    #[error("{size} bytes, more than {limit}, the most read of it: refused")]
    TooLarge { size: u64, limit: u64 },
    #[error("its bytes are not the {size} bytes of {digest} its descriptor names")]
    OtherBytes { size: u64, digest: Digest },
    #[error("{0}: only sha256 blobs are read")]
    NotSha256(Digest),
    #[error("not valid JSON of its kind: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("no oci-layout file: not an OCI image layout")]
    NotALayout,
}

/// An OCI image layout, read as the module's documentation says.
#[derive(Debug)]
pub struct Layout {
    /// As named, for messages.
    pub path: PathBuf,
    dir: OwnedFd,
}

impl Layout {
    /// Opens the layout folder `path`.
    pub fn open(path: &Path) -> Result<Layout, ReadError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| ReadError {
            path: path.to_owned(),
            problem: Problem::Io(e.into()),
        })?;
        let layout = Layout {
            path: path.to_owned(),
            dir,
        };
        layout
            .read(&[OCI_LAYOUT_FILE], 1 << 20)
            .map_err(|e| match e.problem {
                Problem::Io(io) if io.kind() == std::io::ErrorKind::NotFound => ReadError {
                    path: e.path,
                    problem: Problem::NotALayout,
                },
                _ => e,
            })?;
        Ok(layout)
    }

    /// `index.json`.
    pub fn index(&self) -> Result<ImageIndex, ReadError> {
        let data = self.read(&[INDEX_FILE], INDEX_LIMIT)?;
        serde_json::from_slice(&data).map_err(|e| ReadError {
            path: self.path.join(INDEX_FILE),
            problem: Problem::NotJson(e),
        })
    }

    /// The blob `d` names, when its size is at most `limit`: its bytes, checked.
    pub fn blob(&self, d: &Descriptor, limit: u64) -> Result<Vec<u8>, ReadError> {
        let path = self.blob_path(&d.digest);
        let fail = |problem| ReadError {
            path: path.clone(),
            problem,
        };
        if d.digest.sha256().is_none() {
            return Err(fail(Problem::NotSha256(d.digest.clone())));
        }
        if d.size > limit {
            return Err(fail(Problem::TooLarge {
                size: d.size,
                limit,
            }));
        }
        let data = self.blob_bytes(&d.digest, limit)?;
        if data.len() as u64 != d.size {
            return Err(fail(Problem::OtherBytes {
                size: d.size,
                digest: d.digest.clone(),
            }));
        }
        Ok(data)
    }

    /// A blob of this layout parsed as JSON of type `T`, at most [`DOCUMENT_LIMIT`].
    pub fn document<T: serde::de::DeserializeOwned>(&self, d: &Descriptor) -> Result<T, ReadError> {
        let data = self.blob(d, DOCUMENT_LIMIT)?;
        serde_json::from_slice(&data).map_err(|e| ReadError {
            path: self.blob_path(&d.digest),
            problem: Problem::NotJson(e),
        })
    }

    /// The bytes of the blob `digest`, at most `limit`, checked against the digest.
    pub(super) fn blob_bytes(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, ReadError> {
        let path = self.blob_path(digest);
        if digest.sha256().is_none() {
            return Err(ReadError {
                path,
                problem: Problem::NotSha256(digest.clone()),
            });
        }
        let data = self.read(&["blobs", "sha256", digest.encoded()], limit)?;
        if Digest::sha256_of(&data) != *digest {
            return Err(ReadError {
                path,
                problem: Problem::OtherBytes {
                    size: data.len() as u64,
                    digest: digest.clone(),
                },
            });
        }
        Ok(data)
    }

    /// Whether the layout holds a blob file for `digest` (whatever it holds).
    pub(super) fn has_blob(&self, digest: &Digest) -> bool {
        digest.sha256().is_some() && self.probe(&["blobs", "sha256", digest.encoded()]).is_ok()
    }

    fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.path
            .join("blobs")
            .join(digest.algorithm())
            .join(digest.encoded())
    }

    /// The file at `names` (one name per folder), opened as a path only and checked to be a
    /// regular file: the folder it is in, and it.
    fn probe(&self, names: &[&str]) -> Result<(OwnedFd, OwnedFd), ReadError> {
        let path = names.iter().fold(self.path.clone(), |p, n| p.join(n));
        let fail = |problem| ReadError {
            path: path.clone(),
            problem,
        };
        let io = |e: rustix::io::Errno| {
            fail(if e == rustix::io::Errno::LOOP {
                Problem::Link
            } else {
                Problem::Io(e.into())
            })
        };
        let (last, folders) = names
            .split_last()
            .ok_or_else(|| fail(Problem::NotFile("folder")))?;
        let mut parent = rustix::io::dup(&self.dir).map_err(io)?;
        for name in folders {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            parent = match rustix::fs::openat(&parent, *name, flags, Mode::empty()) {
                Ok(fd) => fd,
                // A link (O_DIRECTORY and O_NOFOLLOW refuse it as no folder): said as a link.
                Err(rustix::io::Errno::NOTDIR) => {
                    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                    let fd =
                        rustix::fs::openat(&parent, *name, flags, Mode::empty()).map_err(io)?;
                    return Err(fail(kind_problem(&fd).unwrap_or(Problem::NotFile("file"))));
                }
                Err(e) => return Err(io(e)),
            };
        }
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let file = rustix::fs::openat(&parent, *last, flags, Mode::empty()).map_err(io)?;
        match kind_problem(&file) {
            Some(problem) => Err(fail(problem)),
            None => Ok((parent, file)),
        }
    }

    /// The whole regular file at `names`, at most `limit` bytes.
    fn read(&self, names: &[&str], limit: u64) -> Result<Vec<u8>, ReadError> {
        let path = names.iter().fold(self.path.clone(), |p, n| p.join(n));
        let fail = |problem| ReadError {
            path: path.clone(),
            problem,
        };
        let (parent, probed) = self.probe(names)?;
        let last = names.last().copied().unwrap_or_default();
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let opened = rustix::fs::openat(&parent, last, flags, Mode::empty())
            .map_err(|e| fail(Problem::Io(e.into())))?;
        let (was, is) = (
            rustix::fs::fstat(&probed).map_err(|e| fail(Problem::Io(e.into())))?,
            rustix::fs::fstat(&opened).map_err(|e| fail(Problem::Io(e.into())))?,
        );
        if (was.st_dev, was.st_ino) != (is.st_dev, is.st_ino)
            || FileType::from_raw_mode(is.st_mode) != FileType::RegularFile
        {
            return Err(fail(Problem::Changed));
        }
        let size = u64::try_from(is.st_size).unwrap_or(u64::MAX);
        if size > limit {
            return Err(fail(Problem::TooLarge { size, limit }));
        }
        let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        File::from(opened)
            .take(limit.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(|e| fail(Problem::Io(e)))?;
        if data.len() as u64 > limit {
            return Err(fail(Problem::TooLarge {
                size: data.len() as u64,
                limit,
            }));
        }
        Ok(data)
    }
}

/// Why what `fd` (opened as a path) is no regular file, if it is not one.
fn kind_problem(fd: &OwnedFd) -> Option<Problem> {
    let stat = match rustix::fs::fstat(fd.as_fd()) {
        Ok(stat) => stat,
        Err(e) => return Some(Problem::Io(e.into())),
    };
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => None,
        FileType::Symlink => Some(Problem::Link),
        FileType::Directory => Some(Problem::NotFile("folder")),
        FileType::Fifo => Some(Problem::NotFile("FIFO")),
        FileType::CharacterDevice => Some(Problem::NotFile("character device")),
        FileType::BlockDevice => Some(Problem::NotFile("block device")),
        FileType::Socket => Some(Problem::NotFile("socket")),
        FileType::Unknown => Some(Problem::NotFile("file of an unknown kind")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn layout_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(OCI_LAYOUT_FILE),
            r#"{"imageLayoutVersion":"1.0.0"}"#,
        )
        .unwrap();
        fs::create_dir_all(dir.path().join("blobs/sha256")).unwrap();
        dir
    }

    fn descriptor(data: &[u8]) -> Descriptor {
        Descriptor::new("x", Digest::sha256_of(data), data.len() as u64)
    }

    #[test]
    fn a_blob_is_read_only_when_it_is_what_its_descriptor_names() {
        let dir = layout_dir();
        let d = descriptor(b"hello");
        fs::write(
            dir.path().join("blobs/sha256").join(d.digest.encoded()),
            b"hello",
        )
        .unwrap();
        let layout = Layout::open(dir.path()).unwrap();
        assert_eq!(layout.blob(&d, 5).unwrap(), b"hello");
        let e = layout.blob(&d, 4).unwrap_err();
        assert!(
            matches!(e.problem, Problem::TooLarge { size: 5, limit: 4 }),
            "{e}"
        );
        let mut lying = d.clone();
        lying.size = 4;
        assert!(matches!(
            layout.blob(&lying, 5).unwrap_err().problem,
            Problem::OtherBytes { .. }
        ));
        fs::write(
            dir.path().join("blobs/sha256").join(d.digest.encoded()),
            b"hellO",
        )
        .unwrap();
        assert!(matches!(
            layout.blob(&d, 5).unwrap_err().problem,
            Problem::OtherBytes { .. }
        ));
    }

    #[test]
    fn links_fifos_and_folders_are_refused_without_reading() {
        let dir = layout_dir();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        fs::write(&secret, b"hello").unwrap();
        let d = descriptor(b"hello");
        let blob = dir.path().join("blobs/sha256").join(d.digest.encoded());
        std::os::unix::fs::symlink(&secret, &blob).unwrap();
        let layout = Layout::open(dir.path()).unwrap();
        let e = layout.blob(&d, 5).unwrap_err();
        assert!(matches!(e.problem, Problem::Link), "{e}");
        assert!(e.to_string().contains(d.digest.encoded()), "{e}");
        fs::remove_file(&blob).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&blob)
            .status()
            .unwrap();
        assert!(made.success());
        let e = layout.blob(&d, 5).unwrap_err();
        assert!(matches!(e.problem, Problem::NotFile("FIFO")), "{e}");
        fs::remove_file(&blob).unwrap();
        fs::create_dir(&blob).unwrap();
        assert!(matches!(
            layout.blob(&d, 5).unwrap_err().problem,
            Problem::NotFile("folder")
        ));
        // A folder of the layout that is a link out of it.
        fs::remove_dir_all(dir.path().join("blobs")).unwrap();
        fs::create_dir_all(outside.path().join("sha256")).unwrap();
        fs::write(
            outside.path().join("sha256").join(d.digest.encoded()),
            b"hello",
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("blobs")).unwrap();
        let e = layout.blob(&d, 5).unwrap_err();
        assert!(matches!(e.problem, Problem::Link), "{e}");
    }

    #[test]
    fn a_folder_without_oci_layout_is_no_layout() {
        let dir = tempfile::tempdir().unwrap();
        let e = Layout::open(dir.path()).unwrap_err();
        assert!(matches!(e.problem, Problem::NotALayout), "{e}");
        fs::write(dir.path().join(OCI_LAYOUT_FILE), "{}").unwrap();
        fs::write(
            dir.path().join(INDEX_FILE),
            vec![b' '; (INDEX_LIMIT + 1) as usize],
        )
        .unwrap();
        let e = Layout::open(dir.path()).unwrap().index().unwrap_err();
        assert!(matches!(e.problem, Problem::TooLarge { .. }), "{e}");
    }
}
