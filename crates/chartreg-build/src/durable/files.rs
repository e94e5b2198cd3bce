//! Files and folders on their way into a new generation: hard-linked from the old one
//! ([`link_tree`]), compared with it ([`same_tree`]), made durable ([`sync_new_files`],
//! [`sync_dir`]), and the one file written alone ([`replace_file`]).
//!
//! A new folder is made durable by one `syncfs` of its file system ([`sync_new_files`]: see
//! there for why, with the figures); a single file and a folder's entries by fsync
//! (`File::sync_all`).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::Error;

/// fsyncs the folder `dir` (its entries: names created, renamed or removed in it).
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(Error::io(dir))
}

/// How [`sync_new_files`] made the new folder durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synced {
    /// One `syncfs` of the file system that holds it.
    FileSystem,
    /// Where `syncfs` is missing: each new file and every folder, fsync'd.
    Each { files: u64, folders: u64 },
}

/// Makes what was written below `dir` durable: one `syncfs(2)` of its file system (data and
/// metadata of every file, folders included), or, where the kernel has none, an fsync of every
/// folder under `dir` and of every file there with one link (the files this run wrote; one
/// with more links was hard-linked from the generation it replaces, durable since the run that
/// wrote it).
///
/// One `syncfs` rather than a fsync a file, as measured: packing 10,000 chart versions (30,000
/// files, bench/gen_scale.py --versions 10000) took 72-86 s with a fsync of each file and
/// folder, 9-12 s with one syncfs, and 7.5-11 s with no sync at all (two runs each, this 2-core
/// machine, ext4). syncfs also writes back what other programs left dirty on that file system,
/// which the run then waits for.
pub fn sync_new_files(dir: &Path) -> Result<Synced, Error> {
    let folder = fs::File::open(dir).map_err(Error::io(dir))?;
    match rustix::fs::syncfs(&folder) {
        Ok(()) => return Ok(Synced::FileSystem),
        Err(rustix::io::Errno::NOSYS) => {}
        Err(e) => return Err(Error::io(dir)(e.into())),
    }
    let (mut files, mut folders) = (0, 0);
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder).map_err(Error::io(&folder))? {
            let path = entry.map_err(Error::io(&folder))?.path();
            let meta = fs::symlink_metadata(&path).map_err(Error::io(&path))?;
            if meta.is_dir() {
                pending.push(path);
            } else if meta.is_file() && meta.nlink() == 1 {
                fs::File::open(&path)
                    .and_then(|f| f.sync_all())
                    .map_err(Error::io(&path))?;
                files += 1;
            }
        }
        sync_dir(&folder)?;
        folders += 1;
    }
    Ok(Synced::Each { files, folders })
}

/// Writes `data` as the file `path`: beside it (hidden, `.<name>.new`), fsync'd, renamed over
/// it, its folder fsync'd; readers see the old bytes or the new, and so does a disk after a
/// power loss. A failure leaves the old file and no other.
pub fn replace_file(path: &Path, data: &[u8]) -> Result<(), Error> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staged = folder.join(format!(".{}.new", name.trim_start_matches('.')));
    let written = (|| {
        if fs::symlink_metadata(&staged).is_ok() {
            fs::remove_file(&staged)?;
        }
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&staged)?;
        file.write_all(data)?;
        file.sync_all()?;
        fs::rename(&staged, path)
    })();
    if let Err(source) = written {
        let _ = fs::remove_file(&staged);
        return Err(Error::Io {
            path: path.to_owned(),
            source,
        });
    }
    sync_dir(&folder)
}

/// What a path below a folder is, as [`same_tree`] compares it.
#[derive(Debug)]
enum Kind {
    Folder,
    File {
        dev: u64,
        ino: u64,
        len: u64,
        path: PathBuf,
    },
    Link(PathBuf),
}

/// Every path below `dir` (relative, `/`-separated) and what it is; empty when `dir` is absent.
fn kinds(dir: &Path) -> io::Result<BTreeMap<String, Kind>> {
    let mut found = BTreeMap::new();
    if fs::symlink_metadata(dir).is_err() {
        return Ok(found);
    }
    let mut pending = vec![(dir.to_owned(), String::new())];
    while let Some((folder, prefix)) = pending.pop() {
        for entry in fs::read_dir(&folder)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let path = entry.path();
            let meta = fs::symlink_metadata(&path)?;
            let kind = if meta.is_dir() {
                pending.push((path, relative.clone()));
                Kind::Folder
            } else if meta.file_type().is_symlink() {
                Kind::Link(fs::read_link(&path)?)
            } else {
                Kind::File {
                    dev: meta.dev(),
                    ino: meta.ino(),
                    len: meta.len(),
                    path,
                }
            };
            found.insert(relative, kind);
        }
    }
    Ok(found)
}

/// Whether the folders `a` and `b` hold the same paths with the same bytes (a file linked into
/// both is the same file; others are compared byte for byte).
pub fn same_tree(a: &Path, b: &Path) -> Result<bool, Error> {
    let left = kinds(a).map_err(Error::io(a))?;
    let right = kinds(b).map_err(Error::io(b))?;
    if left.len() != right.len() || !left.keys().eq(right.keys()) {
        return Ok(false);
    }
    for (x, y) in left.values().zip(right.values()) {
        let same = match (x, y) {
            (Kind::Folder, Kind::Folder) => true,
            (Kind::Link(x), Kind::Link(y)) => x == y,
            (
                Kind::File {
                    dev,
                    ino,
                    len,
                    path,
                },
                Kind::File {
                    dev: dev2,
                    ino: ino2,
                    len: len2,
                    path: path2,
                },
            ) => (dev, ino) == (dev2, ino2) || (len == len2 && same_bytes(path, path2)?),
            _ => false,
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

fn same_bytes(a: &Path, b: &Path) -> Result<bool, Error> {
    let mut x = fs::File::open(a).map_err(Error::io(a))?;
    let mut y = fs::File::open(b).map_err(Error::io(b))?;
    let (mut bx, mut by) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = read_full(&mut x, &mut bx).map_err(Error::io(a))?;
        let m = read_full(&mut y, &mut by).map_err(Error::io(b))?;
        if bx.get(..n) != by.get(..m) {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

/// Reads until `buf` is full or the file ends; how much was read.
fn read_full(file: &mut fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
        match file.read(rest)? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Hard-links every file below `from` into the same place below `to` (copied where the file
/// system cannot link), makes its folders, and makes its symbolic links again; paths (relative,
/// `/`-separated) that `skip` names are left out, with what is below them. Nothing when `from`
/// is absent. The stop flag ([`super::stop`]) is looked at before each file.
pub fn link_tree(from: &Path, to: &Path, skip: &dyn Fn(&str) -> bool) -> Result<(), Error> {
    if fs::symlink_metadata(from).is_err() {
        return Ok(());
    }
    fs::create_dir_all(to).map_err(Error::io(to))?;
    let mut pending = vec![String::new()];
    while let Some(prefix) = pending.pop() {
        let folder = from.join(&prefix);
        for entry in fs::read_dir(&folder).map_err(Error::io(&folder))? {
            super::stop::check()?;
            let entry = entry.map_err(Error::io(&folder))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if skip(&relative) {
                continue;
            }
            let (source, target) = (from.join(&relative), to.join(&relative));
            let meta = fs::symlink_metadata(&source).map_err(Error::io(&source))?;
            if meta.is_dir() {
                fs::create_dir_all(&target).map_err(Error::io(&target))?;
                pending.push(relative);
            } else if meta.is_file() {
                if fs::hard_link(&source, &target).is_err() {
                    fs::copy(&source, &target).map_err(Error::io(&target))?;
                }
            } else if meta.file_type().is_symlink() {
                let points_to = fs::read_link(&source).map_err(Error::io(&source))?;
                std::os::unix::fs::symlink(points_to, &target).map_err(Error::io(&target))?;
            } else {
                return Err(Error::Special(source));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(dir: &Path, name: &str, data: &str) {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, data).unwrap();
    }

    #[test]
    fn linked_trees_are_the_same_until_a_byte_or_a_name_differs() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        put(&a, "x/blob", "one");
        put(&a, "index.json", "{}");
        fs::create_dir_all(a.join("empty")).unwrap();
        std::os::unix::fs::symlink("x/blob", a.join("link")).unwrap();
        link_tree(&a, &b, &|_| false).unwrap();
        assert!(same_tree(&a, &b).unwrap());
        assert_eq!(
            fs::metadata(a.join("x/blob")).unwrap().ino(),
            fs::metadata(b.join("x/blob")).unwrap().ino(),
            "linked, not copied"
        );
        // The same bytes in another file are the same.
        fs::remove_file(b.join("index.json")).unwrap();
        put(&b, "index.json", "{}");
        assert!(same_tree(&a, &b).unwrap());
        fs::remove_file(b.join("index.json")).unwrap();
        put(&b, "index.json", "[]");
        assert!(!same_tree(&a, &b).unwrap());
        fs::remove_file(b.join("index.json")).unwrap();
        put(&b, "index.json", "{}");
        fs::create_dir_all(b.join("empty/more")).unwrap();
        assert!(!same_tree(&a, &b).unwrap(), "a folder more");
        assert!(!same_tree(&a, &dir.path().join("none")).unwrap());
    }

    #[test]
    fn what_skip_names_is_left_out_with_what_is_below_it() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        put(&a, "keep/one", "1");
        put(&a, "drop/two", "2");
        put(&a, "keep/.x.part-1-0", "partial");
        link_tree(&a, &b, &|p| p == "drop" || p.ends_with(".part-1-0")).unwrap();
        assert!(b.join("keep/one").is_file());
        assert!(!b.join("drop").exists());
        assert!(!b.join("keep/.x.part-1-0").exists());
    }

    #[test]
    fn a_new_folder_is_synced_with_its_file_system() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "sub/new", "new");
        assert_eq!(sync_new_files(dir.path()).unwrap(), Synced::FileSystem);
        assert!(sync_new_files(&dir.path().join("none")).is_err());
    }

    #[test]
    fn a_file_is_replaced_whole_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chartreg.lock");
        replace_file(&path, b"one").unwrap();
        replace_file(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        // A stale staged file of a killed run is replaced, not appended to.
        fs::write(dir.path().join(".chartreg.lock.new"), "stale").unwrap();
        replace_file(&path, b"three").unwrap();
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["chartreg.lock"]);
        let e = replace_file(&dir.path().join("none/x"), b"").unwrap_err();
        assert!(e.to_string().contains("none/x"), "{e}");
    }
}
