//! Where cgroup v2 runs are made: a folder whose `cgroup.subtree_control` enables `memory`,
//! prepared once per process ([`base`]).
//!
//! cgroup v2 lets a cgroup enable a controller for its children only while it holds no process
//! itself (the "no internal processes" rule; the root is exempt), and this process starts in a
//! cgroup that holds it. So, as container runtimes (and Docker-in-Docker's entrypoint) do:
//! 1. In the root of the hierarchy, runs are made right there.
//! 2. Otherwise every process of this process's cgroup, this one first, moves into a leaf
//!    child of it, [`LEAF`] (a process may fork meanwhile: moved in rounds until none is
//!    left). They stay below the same cgroup, under the same limits.
//! 3. Then `+memory` is written to the cgroup's `cgroup.subtree_control`, and each run gets a
//!    sibling of the leaf.
//!
//! A later chartreg-build started from a moved process finds itself in the leaf, whose parent
//! already enables `memory`, and makes its runs there too. This needs write access to the
//! cgroup's files: root's, or a user's in a subtree delegated to it (`systemd-run --user
//! --scope -p Delegate=yes`, a unit with `Delegate=yes`). Anything that fails is given back as
//! the [`CgroupError`] that says why, and the run is bounded otherwise.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::CgroupError;

/// The leaf that this process, and every other process of its cgroup, moves into.
pub const LEAF: &str = "chartreg-build-leaf";

/// Rounds of moving processes into the leaf (2 ms apart) before giving up on a cgroup that
/// keeps filling.
const ROUNDS: usize = 50;

/// The folder this process's cgroup v2 runs are made in, prepared on first use; the error
/// says why there is none. Only the folder is kept: a failure (a process forking in the
/// cgroup while it was emptied, say) is tried again by the next run.
pub fn base(own: impl FnOnce() -> Result<PathBuf, CgroupError>) -> Result<PathBuf, CgroupError> {
    static BASE: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut base = BASE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(base) = &*base {
        return Ok(base.clone());
    }
    let made = own().and_then(|own| prepare(&own))?;
    *base = Some(made.clone());
    Ok(made)
}

/// Makes the cgroup this process was found in (`found`) able to hold runs with a memory
/// bound: the folder to make them in.
fn prepare(found: &Path) -> Result<PathBuf, CgroupError> {
    // In a leaf of ours (moved there by an earlier chartreg-build, or by a try of this one
    // that did not finish), its parent is the cgroup to prepare.
    let own = match found.parent() {
        Some(parent) if found.file_name().is_some_and(|n| n == LEAF) => parent,
        _ => found,
    };
    let controllers = read(&own.join("cgroup.controllers"))?;
    if !controllers.split_whitespace().any(|c| c == "memory") {
        return Err(CgroupError::NoController {
            dir: own.to_owned(),
            found: controllers.trim().to_owned(),
        });
    }
    // The root has no cgroup.type: exempt from the rule. A cgroup that enables memory holds
    // no process: prepared already.
    if !own.join("cgroup.type").exists() || enabled(own) {
        enable(own)?;
        return Ok(own.to_owned());
    }
    let leaf = own.join(LEAF);
    match std::fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(CgroupError::Io { path: leaf, source });
        }
    }
    // This process first: what its threads start from now on starts in the leaf.
    write(&leaf.join("cgroup.procs"), &std::process::id().to_string())?;
    let mut left = 0;
    for _ in 0..ROUNDS {
        let procs = read(&own.join("cgroup.procs"))?;
        for pid in procs.split_whitespace() {
            // A process that exits meanwhile cannot be moved: it is gone either way.
            let _ = std::fs::write(leaf.join("cgroup.procs"), pid);
        }
        left = read(&own.join("cgroup.procs"))?.split_whitespace().count();
        // A process left behind may have forked between the two reads: enabling then fails
        // (EBUSY), and the next round moves it.
        if left == 0 && enable(own).is_ok() {
            return Ok(own.to_owned());
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    Err(CgroupError::Crowded {
        dir: own.to_owned(),
        left,
    })
}

/// Whether `dir` enables the memory controller for its children.
fn enabled(dir: &Path) -> bool {
    read(&dir.join("cgroup.subtree_control"))
        .is_ok_and(|s| s.split_whitespace().any(|c| c == "memory"))
}

/// Enables the memory controller for the children of `dir`.
fn enable(dir: &Path) -> Result<(), CgroupError> {
    if enabled(dir) {
        return Ok(());
    }
    write(&dir.join("cgroup.subtree_control"), "+memory")
}

fn read(path: &Path) -> Result<String, CgroupError> {
    std::fs::read_to_string(path).map_err(|source| CgroupError::Io {
        path: path.to_owned(),
        source,
    })
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    std::fs::write(path, value).map_err(|source| CgroupError::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder laid out as a cgroup v2 folder (the kernel's rules aside).
    fn fake(dir: &Path, controllers: &str, subtree: &str, procs: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("cgroup.controllers"), controllers).unwrap();
        std::fs::write(dir.join("cgroup.subtree_control"), subtree).unwrap();
        std::fs::write(dir.join("cgroup.procs"), procs).unwrap();
        std::fs::write(dir.join("cgroup.type"), "domain\n").unwrap();
    }

    #[test]
    fn without_the_memory_controller_no_run_is_made_and_nothing_moves() {
        let dir = tempfile::tempdir().unwrap();
        fake(dir.path(), "cpu pids\n", "", "1\n");
        let err = prepare(dir.path()).unwrap_err();
        assert!(matches!(err, CgroupError::NoController { .. }), "{err}");
        assert!(err.to_string().contains("cpu pids"), "{err}");
        assert!(!dir.path().join(LEAF).exists());
    }

    #[test]
    fn a_process_in_an_earlier_leaf_makes_its_runs_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        fake(dir.path(), "memory pids\n", "memory\n", "");
        let leaf = dir.path().join(LEAF);
        fake(&leaf, "memory\n", "", "7\n");
        assert_eq!(prepare(&leaf).unwrap(), dir.path());
    }

    #[test]
    fn a_leaf_whose_parent_does_not_enable_memory_yet_is_prepared_from_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        fake(dir.path(), "memory pids\n", "", "");
        let leaf = dir.path().join(LEAF);
        // Its controllers are empty until the parent enables memory: not what is checked.
        fake(&leaf, "", "", "7\n");
        assert_eq!(prepare(&leaf).unwrap(), dir.path());
        let enabled = std::fs::read_to_string(dir.path().join("cgroup.subtree_control"));
        assert_eq!(enabled.unwrap(), "+memory");
    }
}
