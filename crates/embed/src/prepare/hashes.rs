//! The sha256 of large files, remembered between builds (`$OUT_DIR/hashes`), so that a rebuild
//! reads only the files that changed.
//!
//! A file is known by its identity and every time stamp the system keeps for it: device,
//! inode, size, modification and change time (nanoseconds). The change time cannot be set by
//! a program (it moves on every write or metadata change), so a file rewritten in place with
//! its old size and modification time is still seen as new, as git's index does. A hard link
//! of a file already hashed (the build tool links a blob shared by repositories) is the same
//! inode: hashed once.
//!
//! The record is one line per file, `<hex> <dev> <ino> <size> <mtime> <ctime>`, rewritten after
//! each build with the files of that build only; a line that cannot be read is ignored (the
//! file is hashed again).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{self, Metadata};
use std::io;
use std::path::Path;

use chartreg_core::tree::BlobFile;

/// What identifies a file's current contents without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: i128,
    ctime: i128,
}

impl Key {
    #[cfg(unix)]
    fn of(metadata: &Metadata) -> Option<Key> {
        use std::os::unix::fs::MetadataExt;
        let nanos = |seconds: i64, nanoseconds: i64| {
            i128::from(seconds) * 1_000_000_000 + i128::from(nanoseconds)
        };
        Some(Key {
            dev: metadata.dev(),
            ino: metadata.ino(),
            size: metadata.size(),
            mtime: nanos(metadata.mtime(), metadata.mtime_nsec()),
            ctime: nanos(metadata.ctime(), metadata.ctime_nsec()),
        })
    }

    /// Elsewhere nothing is remembered: every file is hashed on every build.
    #[cfg(not(unix))]
    fn of(_: &Metadata) -> Option<Key> {
        None
    }
}

/// Hashes remembered from the last build, and those of this one.
#[derive(Debug, Default)]
pub struct Hashes {
    before: HashMap<Key, [u8; 32]>,
    now: HashMap<Key, [u8; 32]>,
    /// Files read and hashed by this build (not remembered).
    pub hashed: usize,
}

impl Hashes {
    /// The record at `path`; none when there is none.
    pub fn load(path: &Path) -> Hashes {
        let before = fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(parse_line)
            .collect();
        Hashes {
            before,
            ..Hashes::default()
        }
    }

    /// The sha256 of `file`, remembered or read now.
    pub fn sha256(&mut self, file: &Path, metadata: &Metadata) -> io::Result<[u8; 32]> {
        let key = Key::of(metadata);
        if let Some(key) = key
            && let Some(&hash) = self.now.get(&key).or_else(|| self.before.get(&key))
        {
            self.now.insert(key, hash);
            return Ok(hash);
        }
        let hashed = BlobFile::hash(file)?;
        let hash = hashed
            .digest
            .sha256()
            .ok_or_else(|| io::Error::other("not sha256"))?;
        self.hashed += 1;
        if let Some(key) = key {
            self.now.insert(key, hash);
        }
        Ok(hash)
    }

    /// Writes this build's hashes to `path`.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let mut text = String::new();
        for (key, hash) in &self.now {
            let _ = writeln!(
                text,
                "{} {} {} {} {} {}",
                hex::encode(hash),
                key.dev,
                key.ino,
                key.size,
                key.mtime,
                key.ctime
            );
        }
        fs::write(path, text)
    }
}

fn parse_line(line: &str) -> Option<(Key, [u8; 32])> {
    let mut fields = line.split(' ');
    let mut hash = [0; 32];
    hex::decode_to_slice(fields.next()?, &mut hash).ok()?;
    let key = Key {
        dev: fields.next()?.parse().ok()?,
        ino: fields.next()?.parse().ok()?,
        size: fields.next()?.parse().ok()?,
        mtime: fields.next()?.parse().ok()?,
        ctime: fields.next()?.parse().ok()?,
    };
    fields.next().is_none().then_some((key, hash))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chartreg_core::oci::sha256;

    #[test]
    fn a_file_is_hashed_once_then_remembered_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("blob");
        let record = dir.path().join("hashes");
        fs::write(&file, b"first").unwrap();
        let mut hashes = Hashes::load(&record);
        let first = hashes.sha256(&file, &fs::metadata(&file).unwrap()).unwrap();
        assert_eq!(first, sha256(b"first"));
        hashes.save(&record).unwrap();

        let mut again = Hashes::load(&record);
        let hash = again.sha256(&file, &fs::metadata(&file).unwrap()).unwrap();
        assert_eq!((hash, again.hashed), (first, 0), "remembered");

        // Rewritten in place with the same size: the change time moves.
        std::thread::sleep(std::time::Duration::from_millis(10));
        fs::write(&file, b"other").unwrap();
        let mut changed = Hashes::load(&record);
        let hash = changed
            .sha256(&file, &fs::metadata(&file).unwrap())
            .unwrap();
        assert_eq!(hash, sha256(b"other"));
        assert_eq!(changed.hashed, 1);
    }

    #[test]
    fn unreadable_lines_are_ignored() {
        assert!(parse_line("zz 1 2 3 4 5").is_none());
        assert!(parse_line(&format!("{} 1 2 3 4", "00".repeat(32))).is_none());
        assert!(parse_line(&format!("{} 1 2 3 4 5 6", "00".repeat(32))).is_none());
        assert!(parse_line(&format!("{} 1 2 3 4 5", "00".repeat(32))).is_some());
    }
}
