//! Folders as values ([`Snapshot`]): every entry under a folder (hidden ones included) by its
//! path, with a file's bytes and whether it is executable, never its times. A state is written
//! into a fresh folder ([`Snapshot::restore`]), a part of it taken ([`Snapshot::part`]), and two
//! compared ([`Snapshot::differences`]): what differs, and whether it is only what a run left
//! under hidden names ([`Difference::is_leftover`]).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// One entry of a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Dir,
    File { data: Vec<u8>, executable: bool },
    Link(PathBuf),
}

/// Every entry under a folder, by its `/`-separated path relative to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    entries: BTreeMap<String, Node>,
}

/// How one path differs between a folder and the one it is compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// Only in the folder looked at.
    Extra(String),
    /// Only in the one it is compared with.
    Missing(String),
    /// In both, not the same.
    Changed(String),
}

impl Difference {
    /// An entry a run left under a hidden name (a staging folder, a partial download, an old
    /// folder being removed), or inside one.
    pub fn is_leftover(&self) -> bool {
        match self {
            Difference::Extra(path) => path.split('/').any(|c| c.starts_with('.')),
            Difference::Missing(_) | Difference::Changed(_) => false,
        }
    }
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Extra(p) => write!(f, "+{p}"),
            Difference::Missing(p) => write!(f, "-{p}"),
            Difference::Changed(p) => write!(f, "~{p}"),
        }
    }
}

/// Differences, a few of them named (for messages).
pub fn describe(differences: &[Difference]) -> String {
    let named: Vec<String> = differences
        .iter()
        .take(6)
        .map(ToString::to_string)
        .collect();
    let more = differences.len().saturating_sub(named.len());
    if more == 0 {
        named.join(" ")
    } else {
        format!("{} (and {more} more)", named.join(" "))
    }
}

impl Snapshot {
    /// What `dir` holds now (empty when it does not exist).
    pub fn of(dir: &Path) -> Snapshot {
        let mut entries = BTreeMap::new();
        let mut pending = vec![(dir.to_owned(), String::new())];
        while let Some((folder, prefix)) = pending.pop() {
            let Ok(read) = fs::read_dir(&folder) else {
                continue;
            };
            for entry in read {
                let entry = entry.unwrap_or_else(|e| panic!("list {}: {e}", folder.display()));
                let name = entry.file_name().to_string_lossy().into_owned();
                let relative = if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                };
                let path = entry.path();
                let meta = fs::symlink_metadata(&path)
                    .unwrap_or_else(|e| panic!("stat {}: {e}", path.display()));
                let node = if meta.file_type().is_symlink() {
                    Node::Link(fs::read_link(&path).expect("read link"))
                } else if meta.is_dir() {
                    pending.push((path, relative.clone()));
                    Node::Dir
                } else {
                    Node::File {
                        data: fs::read(&path)
                            .unwrap_or_else(|e| panic!("read {}: {e}", path.display())),
                        executable: meta.permissions().mode() & 0o111 != 0,
                    }
                };
                entries.insert(relative, node);
            }
        }
        Snapshot { entries }
    }

    /// Writes every entry into `dir` (which must be empty or absent).
    pub fn restore(&self, dir: &Path) {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        // Sorted by path: a folder comes before what is in it.
        for (relative, node) in &self.entries {
            let path = dir.join(relative);
            match node {
                Node::Dir => fs::create_dir_all(&path)
                    .unwrap_or_else(|e| panic!("create {}: {e}", path.display())),
                Node::File { data, executable } => {
                    fs::write(&path, data)
                        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
                    if *executable {
                        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
                            .expect("chmod");
                    }
                }
                Node::Link(target) => std::os::unix::fs::symlink(target, &path)
                    .unwrap_or_else(|e| panic!("link {}: {e}", path.display())),
            }
        }
    }

    /// The entries at or under each of `paths` (paths relative to the folder).
    pub fn part(&self, paths: &[&str]) -> Snapshot {
        let within = |p: &str| {
            paths
                .iter()
                .any(|top| p == *top || p.strip_prefix(top).is_some_and(|r| r.starts_with('/')))
        };
        Snapshot {
            entries: self
                .entries
                .iter()
                .filter(|(p, _)| within(p))
                .map(|(p, n)| (p.clone(), n.clone()))
                .collect(),
        }
    }

    /// How this snapshot differs from `other`, path by path.
    pub fn differences(&self, other: &Snapshot) -> Vec<Difference> {
        let mut found = Vec::new();
        for (path, node) in &self.entries {
            match other.entries.get(path) {
                None => found.push(Difference::Extra(path.clone())),
                Some(theirs) if theirs != node => found.push(Difference::Changed(path.clone())),
                Some(_) => {}
            }
        }
        for path in other.entries.keys() {
            if !self.entries.contains_key(path) {
                found.push(Difference::Missing(path.clone()));
            }
        }
        found
    }

    /// The paths that look like what a run stages in or leaves: a hidden name (starting with
    /// `.`) that says so (`-new`, `-old`, `.part`, `.tmp`, `download`), or inside one.
    pub fn staged(&self) -> Vec<String> {
        let staging = |c: &str| {
            c.starts_with('.')
                && ["-new", "-old", ".part", ".tmp", "download"]
                    .iter()
                    .any(|w| c.contains(w))
        };
        self.entries
            .keys()
            .filter(|p| p.split('/').any(staging))
            .cloned()
            .collect()
    }

    /// Whether it holds an entry at `path`.
    pub fn contains(&self, path: &str) -> bool {
        self.entries.contains_key(path)
    }
}
