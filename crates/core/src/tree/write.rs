//! Writing a tree into a new generation of an output folder: an unchanged tree is linked from
//! the current folder, a changed one written, blobs streamed from their files with their
//! digest checked again.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{Entry, Side, Tree, copy_hashing, files_below, hash_file};
use crate::oci::Digest;

/// Whether [`replace`] changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Unchanged,
    Written,
}

/// Why a tree could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "{}: its bytes do not have the digest {expected} ({size} bytes) they are packed under (the input is not what it says, or changed while being packed); nothing was written",
        path.display()
    )]
    Changed {
        path: PathBuf,
        expected: Digest,
        size: u64,
    },
}

/// Writes `tree`, whose paths all start with `<prefix>/`, into the folder `dir` (the paths
/// without the prefix), unless the folder `<current>/<prefix>` already holds exactly that:
/// then its files are linked into `dir` instead ([`Outcome::Unchanged`]). `dir` is a new
/// generation's folder (the build tool's `durable::Generation`), which replaces the whole
/// output at once; nothing outside `dir` is written.
pub fn write_into(
    tree: &Tree,
    current: &Path,
    prefix: &str,
    dir: &Path,
) -> Result<Outcome, WriteError> {
    let outcome = if holds(&current.join(prefix), current, tree)? {
        Outcome::Unchanged
    } else {
        Outcome::Written
    };
    put_into(tree, current, prefix, dir, outcome)?;
    Ok(outcome)
}

/// [`write_into`] once whether the current folder holds the tree is known (`outcome`, from
/// [`holds_tree`]): `Unchanged` links the current folder's files, `Written` writes the tree.
pub fn put_into(
    tree: &Tree,
    current: &Path,
    prefix: &str,
    dir: &Path,
    outcome: Outcome,
) -> Result<(), WriteError> {
    if outcome == Outcome::Unchanged {
        let existing = current.join(prefix);
        for path in tree.keys() {
            let relative = relative_to(path, prefix);
            let (from, to) = (existing.join(relative), dir.join(relative));
            if let Some(folder) = to.parent() {
                fs::create_dir_all(folder).map_err(io_at(folder))?;
            }
            if fs::hard_link(&from, &to).is_err() {
                fs::copy(&from, &to).map_err(io_at(&to))?;
            }
        }
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(io_at(dir))?;
    for (path, entry) in tree {
        write_entry(entry, &dir.join(relative_to(path, prefix)))?;
    }
    Ok(())
}

/// `path` without its leading `<prefix>/`.
fn relative_to<'a>(path: &'a str, prefix: &str) -> &'a str {
    path.strip_prefix(prefix)
        .and_then(|p| p.strip_prefix('/'))
        .unwrap_or(path)
}

/// Whether the folder `<out>/<prefix>` already holds exactly `tree` (whose paths all start
/// with `<prefix>/`): what [`replace`] would leave unchanged.
pub fn holds_tree(tree: &Tree, out: &Path, prefix: &str) -> Result<bool, WriteError> {
    holds(&out.join(prefix), out, tree)
}

/// Whether the folder `target` holds exactly `tree` (keys relative to `base`).
fn holds(target: &Path, base: &Path, tree: &Tree) -> Result<bool, WriteError> {
    let present = files_below(target, base).map_err(io_at(target))?;
    if present.len() != tree.len() || !present.keys().eq(tree.keys()) {
        return Ok(false);
    }
    for (path, entry) in present.values().zip(tree.values()) {
        let same = match entry {
            Entry::Bytes(data) => fs::read(path).map_err(io_at(path))? == *data,
            Entry::File(blob) | Entry::Link(blob) => {
                fs::metadata(path).map_err(io_at(path))?.len() == blob.size
                    && Some(hash_file(path).map_err(io_at(path))?.1) == blob.digest.sha256()
            }
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Writes one entry to `file`, creating its folder; a blob is streamed from its file and must
/// still have the size and digest it was read with.
fn write_entry(entry: &Entry, file: &Path) -> Result<(), WriteError> {
    if let Some(dir) = file.parent() {
        fs::create_dir_all(dir).map_err(io_at(dir))?;
    }
    let blob = match entry {
        Entry::Bytes(data) => return fs::write(file, data).map_err(io_at(file)),
        Entry::Link(blob) if fs::hard_link(&blob.path, file).is_ok() => {
            let (size, sha256) = hash_file(file).map_err(io_at(file))?;
            if size != blob.size || Some(sha256) != blob.digest.sha256() {
                let _ = fs::remove_file(file);
                return Err(WriteError::Changed {
                    path: blob.path.clone(),
                    expected: blob.digest.clone(),
                    size: blob.size,
                });
            }
            return Ok(());
        }
        Entry::File(blob) | Entry::Link(blob) => blob,
    };
    let mut source = fs::File::open(&blob.path).map_err(io_at(&blob.path))?;
    let mut sink = io::BufWriter::new(fs::File::create(file).map_err(io_at(file))?);
    let (size, sha256) =
        copy_hashing(&mut source, &mut sink).map_err(|(side, source)| match side {
            Side::Reading => io_at(&blob.path)(source),
            Side::Writing => io_at(file)(source),
        })?;
    sink.flush().map_err(io_at(file))?;
    if size != blob.size || Some(sha256) != blob.digest.sha256() {
        return Err(WriteError::Changed {
            path: blob.path.clone(),
            expected: blob.digest.clone(),
            size: blob.size,
        });
    }
    Ok(())
}

fn io_at(path: &Path) -> impl Fn(io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{BlobFile, load, read_dir};

    /// What a run of the build tool does with `write_into`: a new `out` of only `prefix`'s
    /// tree, in place of the old one once written (the old one stays when it fails).
    fn replace(tree: &Tree, out: &Path, prefix: &str) -> Result<Outcome, WriteError> {
        let staging = out.with_extension("new");
        let _ = fs::remove_dir_all(&staging);
        let written = write_into(tree, out, prefix, &staging.join(prefix));
        if written.is_ok() {
            let _ = fs::remove_dir_all(out);
            fs::rename(&staging, out).unwrap();
        } else {
            fs::remove_dir_all(&staging).unwrap();
        }
        written
    }

    fn blob_file(dir: &Path, name: &str, data: &[u8]) -> BlobFile {
        let path = dir.join(name);
        fs::write(&path, data).unwrap();
        BlobFile::hash(&path).unwrap()
    }

    #[test]
    fn writes_documents_and_blobs_then_reports_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let blob = blob_file(dir.path(), "layer", b"layer bytes");
        assert_eq!(blob.size, 11);
        assert_eq!(blob.digest, Digest::sha256_of(b"layer bytes"));
        let out = dir.path().join("out");
        let mut tree = Tree::new();
        tree.insert("p/a/index.json".into(), b"{}".to_vec().into());
        tree.insert("p/a/blobs/sha256/x".into(), Entry::File(blob.clone()));
        assert_eq!(replace(&tree, &out, "p").unwrap(), Outcome::Written);
        assert_eq!(
            read_dir(&out, &out).unwrap(),
            load(tree.clone()).unwrap(),
            "the written folder holds the tree"
        );
        assert_eq!(replace(&tree, &out, "p").unwrap(), Outcome::Unchanged);

        // A blob that differs on disk (same size) is rewritten.
        fs::write(out.join("p/a/blobs/sha256/x"), b"LAYER BYTES").unwrap();
        assert_eq!(replace(&tree, &out, "p").unwrap(), Outcome::Written);
        assert_eq!(
            fs::read(out.join("p/a/blobs/sha256/x")).unwrap(),
            b"layer bytes"
        );
        // A file the tree does not hold makes it differ too.
        fs::write(out.join("p/a/extra"), b"").unwrap();
        assert_eq!(replace(&tree, &out, "p").unwrap(), Outcome::Written);
        assert!(!out.join("p/a/extra").exists());
    }

    #[test]
    fn a_blob_changed_since_it_was_read_is_refused_and_nothing_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut tree = Tree::new();
        tree.insert("p/old".into(), b"kept".to_vec().into());
        replace(&tree, &out, "p").unwrap();

        let blob = blob_file(dir.path(), "layer", b"first");
        fs::write(&blob.path, b"other").unwrap();
        let mut tree = Tree::new();
        tree.insert("p/blob".into(), Entry::File(blob.clone()));
        let err = replace(&tree, &out, "p").unwrap_err();
        assert!(
            matches!(&err, WriteError::Changed { path, .. } if *path == blob.path),
            "{err}"
        );
        assert!(err.to_string().contains("do not have the digest"), "{err}");
        assert_eq!(
            read_dir(&out, &out)
                .unwrap()
                .into_keys()
                .collect::<Vec<_>>(),
            ["p/old"],
            "the previous folder stays, and no staging folder is left"
        );
    }

    #[test]
    fn a_missing_blob_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut blob = blob_file(dir.path(), "layer", b"x");
        blob.path = dir.path().join("gone");
        let mut tree = Tree::new();
        tree.insert("p/blob".into(), Entry::File(blob));
        let err = replace(&tree, &dir.path().join("out"), "p").unwrap_err();
        assert!(err.to_string().contains("gone"), "{err}");
        let err = load(tree).unwrap_err();
        assert!(err.to_string().contains("gone"), "{err}");
    }

    #[test]
    fn linked_blobs_share_the_staged_file_and_are_checked_too() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let blob = blob_file(dir.path(), "staged", b"layer bytes");
        let mut tree = Tree::new();
        tree.insert("p/blob".into(), Entry::Link(blob.clone()));
        assert_eq!(replace(&tree, &out, "p").unwrap(), Outcome::Written);
        let ino = |p: &Path| fs::metadata(p).unwrap().ino();
        assert_eq!(
            ino(&out.join("p/blob")),
            ino(&blob.path),
            "linked, not copied"
        );
        assert_eq!(replace(&tree, &out, "p").unwrap(), Outcome::Unchanged);

        let changed = blob_file(dir.path(), "changed", b"first");
        fs::write(&changed.path, b"other").unwrap();
        let mut tree = Tree::new();
        tree.insert("q/blob".into(), Entry::Link(changed));
        let err = replace(&tree, &out, "q").unwrap_err();
        assert!(err.to_string().contains("do not have the digest"), "{err}");
        assert!(!out.join("q").exists(), "nothing is left of a refused tree");
    }
}
