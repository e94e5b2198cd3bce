//! How the lock names the files it pins: relative to its own folder, `/`-separated, so that it
//! reads the same on every machine and from every current folder ([`recorded`]), and where such
//! a name is on disk ([`resolved`]).

use std::path::{Path, PathBuf};

/// How the lock at `lock` names `path`: relative to the lock's folder, `/`-separated, with `..`
/// where `path` lies outside it, whatever the current folder is, so that the lock reads the same
/// on every machine and from every folder. Folders that exist are taken as they are on disk
/// (links followed, as `..` is when the path is opened), the rest as written.
pub fn recorded(lock: &Path, path: &Path) -> String {
    let folder = lock.parent().filter(|p| !p.as_os_str().is_empty());
    let from = real(folder.unwrap_or(Path::new(".")));
    let to = real(path);
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let up = from.len().saturating_sub(common);
    let parts: Vec<String> = std::iter::repeat_n("..".to_owned(), up)
        .chain(
            to.iter()
                .skip(common)
                .map(|c| c.as_os_str().to_string_lossy().into_owned()),
        )
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// Where the path the lock at `lock` records as `recorded` is: `fetched/../addons/charts.yaml`
/// is said `addons/charts.yaml` (a folder followed by `..` is dropped where the folder is one,
/// not a link to another, so the path names the same file).
pub fn resolved(lock: &Path, recorded: &str) -> PathBuf {
    let joined = lock.parent().unwrap_or(Path::new("")).join(recorded);
    let mut clean = PathBuf::new();
    for part in joined.components() {
        let is_folder = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
        match part {
            std::path::Component::ParentDir
                if matches!(
                    clean.components().next_back(),
                    Some(std::path::Component::Normal(_))
                ) && is_folder(&clean) =>
            {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    if clean.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        clean
    }
}

/// `path` made absolute, `.` and `..` taken lexically, with its longest existing ancestor as
/// the file system has it (links resolved).
fn real(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path)
        .or_else(|_| std::env::current_dir().map(|dir| dir.join(path)))
        .unwrap_or_else(|_| path.to_owned());
    let mut lexical = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    lexical
        .ancestors()
        .find_map(|ancestor| {
            let found = std::fs::canonicalize(ancestor).ok()?;
            Some(found.join(lexical.strip_prefix(ancestor).ok()?))
        })
        .unwrap_or(lexical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_recorded_relative_to_the_lock_folder_from_any_current_folder() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("addons")).unwrap();
        let lock = top.join("addons/chartreg.lock");
        assert_eq!(
            recorded(&lock, &top.join("charts/a.tgz")),
            "../charts/a.tgz"
        );
        assert_eq!(recorded(&lock, &top.join("addons/./x/../b.tgz")), "b.tgz");
        assert_eq!(recorded(&lock, &top.join("addons")), ".");
        // A lock named without a folder is in the current one.
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            recorded(Path::new("chartreg.lock"), &here.join("charts/a.tgz")),
            "charts/a.tgz"
        );
        assert_eq!(resolved(&lock, "../charts/a.tgz"), top.join("charts/a.tgz"));
        // Through a link, `..` is the link's target's parent: kept as written.
        std::os::unix::fs::symlink(top.join("addons"), top.join("link")).unwrap();
        assert_eq!(
            resolved(&top.join("link/chartreg.lock"), "../charts/a.tgz"),
            top.join("link/../charts/a.tgz")
        );
    }
}
