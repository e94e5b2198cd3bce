//! The fetched folder (`fetched/` by default): the lock (`chartreg.lock`), the chart packages
//! (`charts/NAME-VERSION.tgz`, with `.prov`) and the image layouts
//! (`images/REGISTRY/REPOSITORY/`), and nothing else. A run replaces it whole
//! (`crate::durable::Generation`), so that the lock and the files it pins change together:
//!
//! 1. [`check`]: the folder holds only those three (anything else is a person's, and a run
//!    that replaces the folder would lose it).
//! 2. [`seed`]: the new folder starts as the current one, every file hard-linked, so that what
//!    has not changed upstream is not downloaded again; or, moving from a lock an earlier
//!    chartreg-build wrote beside the lists ([`moved`]), with the files that lock pins, wherever
//!    they lie, linked into their places in the new folder.
//! 3. The run fetches into the new folder; [`prune`] then removes what the new lock does not
//!    pin (charts and images the lists no longer ask for, what a download left).
//! 4. Once the new folder is in place, a move removes the earlier lock and the files it pinned
//!    ([`finish_move`]).
//!
//! [`is_fetch_folder_lock`] tells a lock of a fetched folder from an earlier one.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::FetchError;
use super::options::{CHARTS, IMAGES, LOCK_FILE};
use crate::lock::{Lock, recorded, resolved};

/// The names a fetched folder holds.
const NAMES: [&str; 3] = [LOCK_FILE, CHARTS, IMAGES];

/// The first name in the folder `dir` that no fetch wrote, if any (none when it is absent).
fn foreign(dir: &Path) -> Result<Option<String>, std::io::Error> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut names: Vec<String> = entries
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    Ok(names.into_iter().find(|n| !NAMES.contains(&n.as_str())))
}

/// Checks that the fetched folder `dir` holds only what a fetch writes.
pub(super) fn check(dir: &Path) -> Result<(), FetchError> {
    match foreign(dir) {
        Ok(None) => Ok(()),
        Ok(Some(name)) => Err(FetchError::NotFetched {
            dir: dir.to_owned(),
            name,
        }),
        Err(source) => Err(FetchError::Folder(crate::durable::Error::Io {
            path: dir.to_owned(),
            source,
        })),
    }
}

/// Whether `lock` is (or would be) the lock of a fetched folder: named `chartreg.lock`, in a
/// folder that holds only what a fetch writes, and pinning only files in it. A lock an
/// earlier chartreg-build wrote beside the lists is not: what it pins is moved.
pub fn is_fetch_folder_lock(lock: &Path) -> bool {
    let folder = match lock.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if lock.file_name() != Some(std::ffi::OsStr::new(LOCK_FILE))
        || !matches!(foreign(folder), Ok(None))
    {
        return false;
    }
    let Ok(Some(read)) = Lock::read(lock) else {
        // None yet, or one the run will refuse, naming it.
        return true;
    };
    let inside = |p: &str| {
        !p.split('/').any(|c| c == "..")
            && (p.starts_with(&format!("{CHARTS}/")) || p.starts_with(&format!("{IMAGES}/")))
    };
    read.charts.values().all(|c| inside(&c.file)) && read.images.values().all(|i| inside(&i.layout))
}

/// Where the lock at `old` (of an earlier chartreg-build: its paths relative to its own
/// folder, its files anywhere) puts the image layout of `key` in a fetched folder.
fn moved_layout(key: &str, layout: &str) -> String {
    key.split_once('/')
        .and_then(|(registry, rest)| {
            let (path, _) = crate::pin::split(rest)?;
            Some(format!("{IMAGES}/{}/{path}", registry.replace(':', "_")))
        })
        .unwrap_or_else(|| layout.to_owned())
}

/// The lock at `old` as the lock `new` (in a fetched folder) says it: the same entries, each
/// file and layout in its place in the folder, the lists named from there.
pub(super) fn moved(old: &Lock, old_path: &Path, new: &Path) -> Lock {
    let mut lock = old.clone();
    let again = |p: &String| recorded(new, &resolved(old_path, p));
    lock.lists.helm_charts_file = old.lists.helm_charts_file.as_ref().map(again);
    lock.lists.images_file = old.lists.images_file.as_ref().map(again);
    lock.lists.policy = old.lists.policy.as_ref().map(again);
    if let Some(values) = &mut lock.lists.chart_images {
        for files in values.values_mut() {
            *files = files.iter().map(again).collect();
        }
    }
    for chart in lock.charts.values_mut() {
        let name = chart
            .file
            .rsplit('/')
            .next()
            .unwrap_or(&chart.file)
            .to_owned();
        chart.file = format!("{CHARTS}/{name}");
    }
    for (key, image) in &mut lock.images {
        image.layout = moved_layout(key, &image.layout);
    }
    lock
}

/// Fills the new folder `staging` with what the run starts from (see the module doc, step
/// 2): the current folder `dir`, or the files the lock at `moving` pins.
pub(super) fn seed(
    dir: &Path,
    moving: Option<(&Path, &Lock)>,
    staging: &Path,
) -> Result<(), FetchError> {
    let Some((old_path, old)) = moving else {
        return crate::durable::link_tree(dir, staging, &|_| false).map_err(FetchError::Folder);
    };
    let new = moved(old, old_path, &staging.join(LOCK_FILE));
    let link = |from: &Path, to: &Path| -> Result<(), FetchError> {
        if !from.is_file() {
            return Ok(());
        }
        let io = |source| {
            FetchError::Folder(crate::durable::Error::Io {
                path: to.to_owned(),
                source,
            })
        };
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(io)?;
        }
        if fs::hard_link(from, to).is_err() {
            fs::copy(from, to).map_err(io)?;
        }
        Ok(())
    };
    for (key, chart) in &old.charts {
        let (from, to) = match new.charts.get(key) {
            Some(moved) => (resolved(old_path, &chart.file), staging.join(&moved.file)),
            None => continue,
        };
        link(&from, &to)?;
        link(&with_prov(&from), &with_prov(&to))?;
    }
    for (key, image) in &old.images {
        if let Some(moved) = new.images.get(key) {
            let (from, to) = (
                resolved(old_path, &image.layout),
                staging.join(&moved.layout),
            );
            if !to.exists() {
                crate::durable::link_tree(&from, &to, &|_| false).map_err(FetchError::Folder)?;
            }
        }
    }
    Ok(())
}

fn with_prov(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".prov");
    PathBuf::from(name)
}

/// Removes from the new folder `staging` what `lock` does not pin (see the module doc, step
/// 3).
pub(super) fn prune(staging: &Path, lock: &Lock) -> Result<(), FetchError> {
    let mut files: BTreeSet<String> = BTreeSet::from([LOCK_FILE.to_owned()]);
    for chart in lock.charts.values() {
        files.insert(chart.file.clone());
        if chart.provenance_sha256.is_some() {
            files.insert(format!("{}.prov", chart.file));
        }
    }
    let layouts: BTreeSet<String> = lock.images.values().map(|i| i.layout.clone()).collect();
    let holds = |prefix: &str| {
        let inside = format!("{prefix}/");
        files.iter().chain(&layouts).any(|p| p.starts_with(&inside))
    };
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| FetchError::Folder(crate::durable::Error::Io { path, source })
    };
    let mut pending = vec![(staging.to_owned(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        for entry in fs::read_dir(&dir).map_err(io(&dir))? {
            let entry = entry.map_err(io(&dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let path = entry.path();
            let is_dir = entry.file_type().map_err(io(&path))?.is_dir();
            if files.contains(&relative) && !is_dir || layouts.contains(&relative) && is_dir {
                continue;
            }
            if is_dir && holds(&relative) {
                pending.push((path, relative));
            } else if is_dir {
                fs::remove_dir_all(&path).map_err(io(&path))?;
            } else {
                fs::remove_file(&path).map_err(io(&path))?;
            }
        }
    }
    Ok(())
}

/// After a move is in place: removes the earlier lock at `old_path` (first: from then on, the
/// fetched folder's is the only one), then each file and layout it pinned; what cannot be
/// removed is said, not failed on (the move is done).
pub(super) fn finish_move(old_path: &Path, old: &Lock, dir: &Path) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut remove = |path: &Path, all: bool| {
        // Never inside the fetched folder, whatever an edited lock says.
        let real = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
        if real(path).starts_with(real(dir)) || fs::symlink_metadata(path).is_err() {
            return;
        }
        let removed = if all {
            fs::remove_dir_all(path)
        } else {
            fs::remove_file(path)
        };
        if let Err(e) = removed {
            warnings.push(format!("{}: not removed ({e})", path.display()));
        }
    };
    remove(old_path, false);
    if let Some(folder) = old_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let _ = crate::durable::sync_dir(folder);
    }
    for chart in old.charts.values() {
        let file = resolved(old_path, &chart.file);
        remove(&with_prov(&file), false);
        remove(&file, false);
    }
    let mut folders = BTreeSet::new();
    for image in old.images.values() {
        let layout = resolved(old_path, &image.layout);
        folders.extend(layout.parent().map(Path::to_owned));
        remove(&layout, true);
    }
    for chart in old.charts.values() {
        folders.extend(resolved(old_path, &chart.file).parent().map(Path::to_owned));
    }
    // What interrupted runs of the earlier chartreg-build left beside those files: its staged
    // downloads and layouts.
    for folder in folders {
        let Ok(entries) = fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if earlier_leftover(&name) {
                let all = entry.file_type().is_ok_and(|t| t.is_dir());
                remove(&entry.path(), all);
            }
        }
    }
    warnings
}

/// Whether `name` is what an interrupted run of a chartreg-build before the fetched folder left
/// beside a package or a layout: a staged package, `.prov` or layout (`.NAME.fetch-new`,
/// `.NAME.fetch-old`), a partial download (`.NAME.part-PID-N`), a download named by its digest
/// or URL (`.HEX.oci-download`, `.HEX.url-download`).
fn earlier_leftover(name: &str) -> bool {
    name.starts_with('.')
        && (name.ends_with(".fetch-new")
            || name.ends_with(".fetch-old")
            || name.contains(".part-")
            || name.ends_with(".oci-download")
            || name.ends_with(".url-download")
            || name.ends_with(".oci-download.prov")
            || name.ends_with(".url-download.prov"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::{LockedChart, LockedImage};

    fn chart(file: &str, prov: bool) -> LockedChart {
        LockedChart {
            name: "a".into(),
            version: "1.0.0".into(),
            url: "https://e.test/a-1.0.0.tgz".into(),
            sha256: "00".into(),
            provenance_sha256: prov.then(|| "11".into()),
            manifest: None,
            file: file.into(),
            verified: None,
        }
    }

    fn image(layout: &str) -> LockedImage {
        LockedImage {
            digest: "sha256:00".into(),
            platforms: Vec::new(),
            referrers: Vec::new(),
            layout: layout.into(),
            charts: Vec::new(),
            upstream: None,
            verified: Vec::new(),
        }
    }

    #[test]
    fn an_earlier_lock_is_moved_into_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        fs::create_dir_all(top.join("addons")).unwrap();
        let old_path = top.join("addons/chartreg.lock");
        let mut old = Lock::new();
        old.lists.helm_charts_file = Some("charts.yaml".into());
        old.charts
            .insert("a".into(), chart("../charts/a-1.0.0.tgz", true));
        old.images.insert(
            "127.0.0.1:5000/x/y:v1".into(),
            image("../images/127.0.0.1_5000/x/y"),
        );
        fs::create_dir_all(top.join("fetched")).unwrap();
        let moved = moved(&old, &old_path, &top.join("fetched/chartreg.lock"));
        assert_eq!(
            moved.lists.helm_charts_file.as_deref(),
            Some("../addons/charts.yaml")
        );
        assert_eq!(moved.charts["a"].file, "charts/a-1.0.0.tgz");
        assert_eq!(
            moved.images["127.0.0.1:5000/x/y:v1"].layout,
            "images/127.0.0.1_5000/x/y"
        );
        fs::write(&old_path, old.to_text().unwrap()).unwrap();
        assert!(
            !is_fetch_folder_lock(&old_path),
            "its files lie outside its folder"
        );
        fs::write(top.join("addons/charts.yaml"), "").unwrap();
        assert!(!is_fetch_folder_lock(&old_path), "the lists' folder");
        let new_path = top.join("fetched/chartreg.lock");
        assert!(is_fetch_folder_lock(&new_path), "none yet");
        fs::write(&new_path, moved.to_text().unwrap()).unwrap();
        assert!(is_fetch_folder_lock(&new_path));
        fs::write(top.join("fetched/notes.txt"), "mine").unwrap();
        assert!(!is_fetch_folder_lock(&new_path));
        let e = check(&top.join("fetched")).unwrap_err();
        assert!(e.to_string().contains("notes.txt"), "{e}");
    }

    #[test]
    fn what_the_lock_does_not_pin_is_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path();
        for file in [
            "chartreg.lock",
            "charts/a-1.0.0.tgz",
            "charts/a-1.0.0.tgz.prov",
            "charts/b-1.0.0.tgz",
            "charts/.a-1.0.0.tgz.part-1-0",
            "images/q.io/x/index.json",
            "images/q.io/x/blobs/sha256/00",
            "images/q.io/gone/index.json",
            "images/.q.io.fetch-new/index.json",
        ] {
            let path = s.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        let mut lock = Lock::new();
        lock.charts
            .insert("a".into(), chart("charts/a-1.0.0.tgz", true));
        lock.images
            .insert("q.io/x:v1".into(), image("images/q.io/x"));
        prune(s, &lock).unwrap();
        let mut left = Vec::new();
        let mut pending = vec![s.to_owned()];
        while let Some(d) = pending.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    pending.push(p);
                } else {
                    left.push(p.strip_prefix(s).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        left.sort();
        assert_eq!(
            left,
            [
                "chartreg.lock",
                "charts/a-1.0.0.tgz",
                "charts/a-1.0.0.tgz.prov",
                "images/q.io/x/blobs/sha256/00",
                "images/q.io/x/index.json",
            ]
        );
        assert!(!s.join("images/q.io/gone").exists());
    }
}
