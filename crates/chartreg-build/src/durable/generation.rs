//! A folder replaced whole ([`Generation`]): see the module doc of `durable` for the shape.
//!
//! 1. [`Generation::begin`] holds the folder against other runs ([`Held`]), removes what an earlier run
//!    of the same kind left beside the folder (its staging and old folders), and makes the
//!    staging folder `.<name>.<run>-new` beside it (the same file system: links and the
//!    exchange need it).
//! 2. The run fills the staging folder ([`Generation::path`]), linking what stays from the
//!    current folder ([`Generation::current`]).
//! 3. [`Generation::commit`]: nothing is done when the staging folder holds what the current
//!    one does ([`Committed::Unchanged`]); otherwise, unless a stop was asked for, the new
//!    folder is made durable (`sync_new_files`), the two folders exchanged (renamed in when
//!    there was none), the parent fsync'd, and the old folder removed ([`Committed::Written`]).
//!
//! Dropped before its commit, a generation removes its staging folder: a failure leaves the
//! folder as it was, and nothing beside it.

use std::fs;
use std::path::{Path, PathBuf};

use rustix::fs::RenameFlags;

use super::files::{same_tree, sync_dir, sync_new_files};
use super::{Error, stop};

/// A place held against other runs: an abstract Unix socket named after it (no file on disk;
/// the kernel frees the name when the process ends, however it ends), so that two runs never
/// fill one staging folder, and runs on other places never wait on each other.
#[derive(Debug)]
pub struct Held {
    _socket: std::os::unix::net::UnixListener,
}

impl Held {
    /// Holds `path` (made absolute, its parent's links resolved), or says another run holds it.
    pub fn place(path: &Path) -> Result<Held, Error> {
        use sha2::Digest as _;
        use std::os::linux::net::SocketAddrExt as _;
        let absolute = std::path::absolute(path).map_err(Error::io(path))?;
        let name = format!(
            "chartreg-build/{}",
            hex::encode(sha2::Sha256::digest(
                absolute.as_os_str().as_encoded_bytes()
            ))
        );
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
            .map_err(Error::io(path))?;
        match std::os::unix::net::UnixListener::bind_addr(&address) {
            Ok(socket) => Ok(Held { _socket: socket }),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                Err(Error::Busy(path.to_owned()))
            }
            Err(e) => Err(Error::io(path)(e)),
        }
    }
}

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    /// The staging folder held what the folder did: the folder was left as it was.
    Unchanged,
    /// The new folder is in place.
    Written,
}

/// A folder being replaced whole (see the module doc).
#[derive(Debug)]
pub struct Generation {
    target: PathBuf,
    parent: PathBuf,
    staging: PathBuf,
    old: PathBuf,
    done: bool,
    _held: Held,
}

/// The names beside `target` that a run of kind `run` stages in and moves the old folder to.
fn beside(parent: &Path, leaf: &str, run: &str) -> (PathBuf, PathBuf) {
    (
        parent.join(format!(".{leaf}.{run}-new")),
        parent.join(format!(".{leaf}.{run}-old")),
    )
}

/// `target`'s parent (made if missing) and name, with links in the parent resolved, and the
/// folder `target` resolves to when it is a link to one.
fn place(target: &Path) -> Result<(PathBuf, String), Error> {
    let resolved = match fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(target).map_err(Error::io(target))?
        }
        Ok(meta) if !meta.is_dir() => return Err(Error::NotAFolder(target.to_owned())),
        _ => target.to_owned(),
    };
    let leaf = resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n != "..")
        .ok_or_else(|| Error::NotAFolder(target.to_owned()))?;
    let parent = match resolved.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(Error::io(&parent))?;
    let parent = fs::canonicalize(&parent).map_err(Error::io(&parent))?;
    Ok((parent, leaf))
}

/// What earlier runs of kind `run` left beside `target` (a staging or an old folder), if any.
pub fn leftovers(target: &Path, run: &str) -> Vec<PathBuf> {
    let Ok((parent, leaf)) = place(target) else {
        return Vec::new();
    };
    let (staging, old) = beside(&parent, &leaf, run);
    [staging, old]
        .into_iter()
        .filter(|p| fs::symlink_metadata(p).is_ok())
        .collect()
}

impl Generation {
    /// Begins replacing the folder `target` (absent, or a folder) by a run of kind `run`
    /// (`fetch`, `pack`, `image`): see the module doc, step 1.
    pub fn begin(target: &Path, run: &str) -> Result<Generation, Error> {
        let (parent, leaf) = place(target)?;
        let held = Held::place(&parent.join(&leaf))?;
        let (staging, old) = beside(&parent, &leaf, run);
        let target = parent.join(&leaf);
        // A run that died between renaming the folder aside and the new one in (where the
        // file system cannot exchange): the old folder is put back.
        if fs::symlink_metadata(&target).is_err() && fs::symlink_metadata(&old).is_ok() {
            fs::rename(&old, &target).map_err(Error::io(&target))?;
        }
        for leftover in [&staging, &old] {
            if fs::symlink_metadata(leftover).is_ok() {
                fs::remove_dir_all(leftover).map_err(Error::io(leftover))?;
            }
        }
        fs::create_dir(&staging).map_err(Error::io(&staging))?;
        Ok(Generation {
            target,
            parent,
            staging,
            old,
            done: false,
            _held: held,
        })
    }

    /// The folder being filled.
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// The folder it replaces (absent before the first run).
    pub fn current(&self) -> &Path {
        &self.target
    }

    /// Puts the new folder in place, unless it holds what the current one does (see the
    /// module doc, step 3).
    pub fn commit(mut self) -> Result<Committed, Error> {
        let exists = fs::symlink_metadata(&self.target).is_ok();
        if exists && same_tree(&self.staging, &self.target)? {
            return Ok(Committed::Unchanged);
        }
        stop::check()?;
        sync_new_files(&self.staging)?;
        if exists {
            self.exchange()?;
        } else {
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                &self.staging,
                rustix::fs::CWD,
                &self.target,
                RenameFlags::NOREPLACE,
            )
            .map_err(|e| Error::Io {
                path: self.target.clone(),
                source: e.into(),
            })?;
        }
        // The swap is durable once the folder holding both says so; if it cannot, the swap is
        // undone, so that a run that fails has changed nothing.
        if let Err(e) = sync_dir(&self.parent) {
            let undone = if exists {
                self.exchange()
            } else {
                fs::rename(&self.target, &self.staging).map_err(Error::io(&self.target))
            };
            return match undone {
                Ok(()) => Err(e),
                Err(_) => {
                    self.done = true;
                    super::CHANGED_ON_FAILURE.store(true, std::sync::atomic::Ordering::SeqCst);
                    Err(Error::NotDurable {
                        path: self.target.clone(),
                        source: Box::new(e),
                    })
                }
            };
        }
        self.done = true;
        // The old folder, now at the staging name (or the old one): what the next run would
        // remove if this removal is cut short.
        for old in [&self.staging, &self.old] {
            if fs::symlink_metadata(old).is_ok() {
                let _ = fs::remove_dir_all(old);
            }
        }
        Ok(Committed::Written)
    }

    /// Exchanges the staging folder and the current one in one system call; where the file
    /// system cannot exchange, the current folder is renamed aside and the new one renamed in
    /// (a moment with neither in place).
    fn exchange(&self) -> Result<(), Error> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |e: rustix::io::Errno| Error::Io {
                path,
                source: e.into(),
            }
        };
        match rustix::fs::renameat_with(
            rustix::fs::CWD,
            &self.staging,
            rustix::fs::CWD,
            &self.target,
            RenameFlags::EXCHANGE,
        ) {
            Ok(()) => Ok(()),
            Err(
                rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::OPNOTSUPP,
            ) => {
                fs::rename(&self.target, &self.old).map_err(Error::io(&self.target))?;
                if let Err(e) = fs::rename(&self.staging, &self.target) {
                    let _ = fs::rename(&self.old, &self.target);
                    return Err(Error::Io {
                        path: self.target.clone(),
                        source: e,
                    });
                }
                Ok(())
            }
            Err(e) => Err(io(&self.target)(e)),
        }
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_dir_all(&self.staging);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_folder_is_replaced_whole_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("assets");
        let first = Generation::begin(&target, "pack").unwrap();
        fs::write(first.path().join("a"), "1").unwrap();
        assert_eq!(first.commit().unwrap(), Committed::Written);
        assert_eq!(names(&target), ["a"]);

        let second = Generation::begin(&target, "pack").unwrap();
        fs::write(second.path().join("b"), "2").unwrap();
        assert_eq!(second.commit().unwrap(), Committed::Written);
        assert_eq!(names(&target), ["b"]);
        assert_eq!(names(dir.path()), ["assets"]);
    }

    #[test]
    fn an_unchanged_folder_is_left_alone_and_a_dropped_one_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("fetched");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("chartreg.lock"), "x").unwrap();
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).unwrap());
        let before = ino(&target);
        let same = Generation::begin(&target, "fetch").unwrap();
        super::super::link_tree(&target, same.path(), &|_| false).unwrap();
        assert_eq!(same.commit().unwrap(), Committed::Unchanged);
        assert_eq!(ino(&target), before, "the very folder");
        let dropped = Generation::begin(&target, "fetch").unwrap();
        fs::write(dropped.path().join("other"), "y").unwrap();
        drop(dropped);
        assert_eq!(names(dir.path()), ["fetched"]);
        assert_eq!(names(&target), ["chartreg.lock"]);
    }

    #[test]
    fn a_killed_runs_folders_are_removed_and_reported_first() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("assets");
        fs::create_dir_all(dir.path().join(".assets.pack-new/x")).unwrap();
        fs::create_dir_all(dir.path().join(".assets.pack-old")).unwrap();
        assert_eq!(leftovers(&target, "pack").len(), 2);
        assert!(leftovers(&target, "fetch").is_empty());
        let generation = Generation::begin(&target, "pack").unwrap();
        assert!(names(generation.path()).is_empty());
        drop(generation);
        assert!(leftovers(&target, "pack").is_empty());
    }

    #[test]
    fn a_folder_renamed_aside_by_a_run_that_died_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("assets");
        fs::create_dir_all(dir.path().join(".assets.pack-old")).unwrap();
        fs::write(dir.path().join(".assets.pack-old/kept"), "old").unwrap();
        fs::create_dir_all(dir.path().join(".assets.pack-new")).unwrap();
        drop(Generation::begin(&target, "pack").unwrap());
        assert_eq!(names(&target), ["kept"]);
        assert_eq!(names(dir.path()), ["assets"]);
    }

    #[test]
    fn one_run_at_a_time_in_a_folder_and_runs_beside_it_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("assets");
        let first = Generation::begin(&target, "pack").unwrap();
        let e = Generation::begin(&target, "import").unwrap_err();
        assert!(matches!(e, Error::Busy(_)), "{e}");
        // Another folder in the same parent is another place.
        let beside = Generation::begin(&dir.path().join("fetched"), "fetch").unwrap();
        drop(first);
        Generation::begin(&target, "pack").unwrap();
        drop(beside);
    }

    #[test]
    fn a_file_in_the_way_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("assets");
        fs::write(&target, "a file").unwrap();
        let e = Generation::begin(&target, "pack").unwrap_err();
        assert!(matches!(e, Error::NotAFolder(_)), "{e}");
    }
}
