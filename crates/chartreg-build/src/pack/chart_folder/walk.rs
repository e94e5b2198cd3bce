//! Reading a chart folder's files from disk as `helm package` reads them, within bounds:
//! 1. Every regular file under the folder, walked in name order, except what the folder's
//!    `.helmignore` rules ignore (see `helmignore`; `templates/.?*` always). `.helmignore`
//!    itself is read under the rules below.
//! 2. Symbolic links are followed, as `helm package` follows them, when they stay inside the
//!    chart folder, or inside the folder holding the content file (a team's content
//!    repository: upstream charts such as tigera-operator link `crds/` to a folder beside the
//!    chart; each such link is a warning); one that leads elsewhere, or back to a folder
//!    above it, is refused.
//! 3. What an entry is (links followed) is looked at before it is opened: a FIFO, a socket or a
//!    device is refused unread, so that nothing waits for a writer or reads without end.
//! 4. The files together: at most 100 MiB, the most Helm loads of a chart, which the folder
//!    packaged must be. Each file is read at most to what is left, so one that grows while it
//!    is read is caught too.
//!
//! A UTF-8 byte order mark is stripped from every file, as the loader strips it.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::super::helmignore::Rules;
use super::super::{PackError, Problem, at, io_at};
use crate::chart::MAX_DECOMPRESSED;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Every file of `folder` Helm's loader would take, by `/`-separated relative path; links
/// may lead inside `links_within` (the content file's folder) besides the folder.
pub(super) fn read_folder(
    folder: &Path,
    links_within: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, Vec<u8>>, PackError> {
    let root = folder.canonicalize().map_err(io_at(folder))?;
    let bound = match links_within {
        Some(within) => Some(within.canonicalize().map_err(io_at(within))?),
        None => None,
    };
    let mut walk = Walk {
        root: &root,
        bound: bound.as_deref(),
        left: MAX_DECOMPRESSED,
        walking: vec![root.clone()],
        files: BTreeMap::new(),
        warnings,
    };
    let ignore_file = folder.join(".helmignore");
    let rules = match fs::symlink_metadata(&ignore_file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Rules::default(),
        Err(e) => return Err(io_at(&ignore_file)(e)),
        Ok(_) => {
            let found = walk.resolve(&ignore_file)?;
            let data = walk.read(&ignore_file, &found)?;
            let text = String::from_utf8_lossy(&data);
            Rules::parse(&text)
                .map_err(|(line, e)| at(&ignore_file)(Problem::HelmIgnore { line, problem: e }))?
        }
    };
    walk.left = MAX_DECOMPRESSED;
    walk.folder(folder, "", &rules)?;
    Ok(walk.files)
}

/// A chart folder being read.
struct Walk<'a> {
    /// The chart folder, links resolved.
    root: &'a Path,
    /// Where links may lead besides `root` (the content file's folder).
    bound: Option<&'a Path>,
    /// Bytes still to read of the folder's files.
    left: u64,
    /// The folders being walked, links resolved (a link back to one is a loop).
    walking: Vec<PathBuf>,
    files: BTreeMap<String, Vec<u8>>,
    warnings: &'a mut Vec<String>,
}

/// An entry of the folder, its links followed.
struct Found {
    real: PathBuf,
    meta: fs::Metadata,
    /// A link that leaves the chart folder (for the content file's folder).
    leaves: bool,
}

impl Walk<'_> {
    /// Where `path` leads and what is there, refused when a link leads out of bounds.
    fn resolve(&self, path: &Path) -> Result<Found, PackError> {
        let root = self.root;
        let real = path.canonicalize().map_err(io_at(path))?;
        if !real.starts_with(self.bound.unwrap_or(root)) && !real.starts_with(root) {
            return Err(at(path)(Problem::SymlinkOutside {
                target: real,
                bound: self.bound.map(Path::to_owned),
            }));
        }
        let link = fs::symlink_metadata(path)
            .map_err(io_at(path))?
            .file_type()
            .is_symlink();
        let meta = fs::metadata(&real).map_err(io_at(path))?;
        Ok(Found {
            leaves: link && !real.starts_with(root),
            real,
            meta,
        })
    }

    /// The bytes of the file `found` (at `path`), a byte order mark stripped: refused unread
    /// when it is not a regular file, or when it would pass what is left to read.
    fn read(&mut self, path: &Path, found: &Found) -> Result<Vec<u8>, PackError> {
        if !found.meta.is_file() {
            return Err(at(path)(Problem::NotRegularFile));
        }
        if found.meta.len() > self.left {
            return Err(at(path)(Problem::FolderTooLarge));
        }
        let mut data = Vec::new();
        fs::File::open(&found.real)
            .and_then(|f| f.take(self.left + 1).read_to_end(&mut data))
            .map_err(io_at(path))?;
        let size = data.len() as u64;
        if size > self.left {
            return Err(at(path)(Problem::FolderTooLarge));
        }
        self.left -= size;
        if data.starts_with(UTF8_BOM) {
            data.drain(..UTF8_BOM.len());
        }
        Ok(data)
    }

    /// Walks `shown` (at `relative` in the chart).
    fn folder(&mut self, shown: &Path, relative: &str, rules: &Rules) -> Result<(), PackError> {
        let mut entries: Vec<_> = fs::read_dir(shown)
            .map_err(io_at(shown))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(io_at(shown))?;
        entries.sort();
        for name in entries {
            let path = shown.join(&name);
            let Some(name) = name.to_str() else {
                return Err(at(&path)(Problem::NotUtf8Name));
            };
            let inner = if relative.is_empty() {
                name.to_owned()
            } else {
                format!("{relative}/{name}")
            };
            let found = self.resolve(&path)?;
            if found.leaves {
                self.warnings.push(format!(
                    "{}: a symbolic link that leaves the chart folder, to {}: its files are packaged (as `helm package` does)",
                    path.display(),
                    found.real.display()
                ));
            }
            if found.meta.is_dir() {
                if rules.ignores(&inner, true) {
                    continue;
                }
                if self.walking.contains(&found.real) {
                    return Err(at(&path)(Problem::SymlinkLoop));
                }
                self.walking.push(found.real);
                self.folder(&path, &inner, rules)?;
                self.walking.pop();
                continue;
            }
            if rules.ignores(&inner, false) {
                continue;
            }
            let data = self.read(&path, &found)?;
            self.files.insert(inner, data);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::os::unix::fs::symlink;
    use std::os::unix::net::UnixListener;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A chart folder `chart` in `dir`, with a Chart.yaml.
    fn chart(dir: &Path) -> PathBuf {
        let chart = dir.join("chart");
        fs::create_dir_all(chart.join("templates")).unwrap();
        fs::write(chart.join("Chart.yaml"), "name: c\nversion: 1.0.0\n").unwrap();
        chart
    }

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    /// Reads `folder` on a thread of its own: a read that blocks fails the test after 10 s
    /// rather than hanging it.
    fn read_in_time(
        folder: &Path,
        within: Option<&Path>,
    ) -> Result<BTreeMap<String, Vec<u8>>, PackError> {
        let (folder, within) = (folder.to_owned(), within.map(Path::to_owned));
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(read_folder(&folder, within.as_deref(), &mut Vec::new()));
        });
        receiver
            .recv_timeout(Duration::from_secs(10))
            .expect("the folder is read without waiting on a special file")
    }

    /// What is put at `templates/x.yaml`, in a folder `base` (the content file's folder when
    /// links may lead there) holding the chart.
    enum Special {
        Fifo,
        Socket,
        LinkToDevZero,
        LinkToFifoInContentFolder,
        LinkToDevZeroWithRootAsContentFolder,
        LinkOutside,
        HelmIgnoreFifo,
        HelmIgnoreOutside,
    }

    #[rstest]
    #[case::fifo(Special::Fifo, "templates/x.yaml", "not a regular file")]
    #[case::socket(Special::Socket, "templates/x.yaml", "not a regular file")]
    #[case::link_to_dev_zero(
        Special::LinkToDevZero,
        "templates/x.yaml",
        "leaves the chart folder (to /dev/zero)"
    )]
    #[case::link_to_a_fifo_in_the_content_folder(
        Special::LinkToFifoInContentFolder,
        "templates/x.yaml",
        "not a regular file"
    )]
    #[case::a_device_inside_the_bound(
        Special::LinkToDevZeroWithRootAsContentFolder,
        "templates/x.yaml",
        "not a regular file"
    )]
    #[case::link_outside(Special::LinkOutside, "templates/x.yaml", "leaves the chart folder")]
    #[case::helmignore_fifo(Special::HelmIgnoreFifo, ".helmignore", "not a regular file")]
    #[case::helmignore_outside(Special::HelmIgnoreOutside, ".helmignore", "leaves the chart")]
    fn special_files_and_links_out_are_refused_unread(
        #[case] special: Special,
        #[case] named: &str,
        #[case] words: &str,
    ) {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let chart = chart(base.path());
        let target = chart.join(named);
        let mut within = None;
        let _listener;
        match special {
            Special::Fifo | Special::HelmIgnoreFifo => mkfifo(&target),
            Special::Socket => _listener = UnixListener::bind(&target).unwrap(),
            Special::LinkToDevZero => symlink("/dev/zero", &target).unwrap(),
            Special::LinkToFifoInContentFolder => {
                mkfifo(&base.path().join("fifo"));
                symlink(base.path().join("fifo"), &target).unwrap();
                within = Some(base.path().to_owned());
            }
            Special::LinkToDevZeroWithRootAsContentFolder => {
                symlink("/dev/zero", &target).unwrap();
                within = Some(PathBuf::from("/"));
            }
            Special::LinkOutside | Special::HelmIgnoreOutside => {
                fs::write(outside.path().join("secret"), "not the chart's\n").unwrap();
                symlink(outside.path().join("secret"), &target).unwrap();
            }
        }
        let e = read_in_time(&chart, within.as_deref())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&target.display().to_string()) && e.contains(words),
            "{e}"
        );
    }

    #[test]
    fn an_ignored_fifo_is_never_looked_at() {
        let base = tempfile::tempdir().unwrap();
        let chart = chart(base.path());
        fs::write(chart.join(".helmignore"), "fifo\n").unwrap();
        mkfifo(&chart.join("fifo"));
        let files = read_in_time(&chart, None).unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            [".helmignore", "Chart.yaml"]
        );
    }

    /// A file of `len` bytes that takes no disk.
    fn sparse(path: &Path, len: u64) {
        fs::File::create(path).and_then(|f| f.set_len(len)).unwrap();
    }

    #[test]
    fn the_folder_s_files_come_to_at_most_100_mib() {
        let base = tempfile::tempdir().unwrap();
        let chart = chart(base.path());
        for i in 0..3 {
            sparse(&chart.join(format!("big-{i}")), 40 << 20);
        }
        let e = read_in_time(&chart, None).unwrap_err();
        assert!(matches!(*e.problem, Problem::FolderTooLarge), "{e}");
        assert_eq!(e.path, chart.join("big-2"));
        assert!(e.to_string().contains("more than 100 MiB"), "{e}");
        // One file past 100 MiB is refused before it is read.
        fs::remove_file(chart.join("big-1")).unwrap();
        fs::remove_file(chart.join("big-2")).unwrap();
        sparse(&chart.join("big-0"), 101 << 20);
        let e = read_in_time(&chart, None).unwrap_err();
        assert_eq!(e.path, chart.join("big-0"));
    }
}
