//! A memory cgroup for one run, below this process's own: cgroup v2 (`memory.max`, where the
//! memory controller can be enabled for the child), else cgroup v1's memory controller
//! (`memory.limit_in_bytes`, and `memory.memsw.limit_in_bytes` where swap is accounted, so the
//! run cannot swap past it). Found through `/proc/self/cgroup` and `/proc/self/mountinfo`.
//! Anything that fails (no permission, no controller, a read-only mount) makes [`create`]
//! give `None`, and the caller watches memory itself.
//!
//! Dropping it kills what is left in it and removes the folder.
//!
//! [`create`]: MemoryCgroup::create

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::process::{Pid, Signal, kill_process};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One run's memory cgroup.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    version: Version,
}

/// Tells this process's cgroups apart.
static MADE: AtomicU64 = AtomicU64::new(0);

impl MemoryCgroup {
    /// A new cgroup limited to `limit` bytes, or `None` where none can be made.
    pub fn create(limit: u64) -> Option<MemoryCgroup> {
        let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let name = format!(
            "chartreg-build-{}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        if let Some(parent) = v2_parent(&cgroups, &mounts)
            && let Some(group) = Self::make(&parent, &name, Version::V2, limit)
        {
            return Some(group);
        }
        let parent = v1_parent(&cgroups, &mounts)?;
        Self::make(&parent, &name, Version::V1, limit)
    }

    fn make(parent: &Path, name: &str, version: Version, limit: u64) -> Option<MemoryCgroup> {
        let dir = parent.join(name);
        std::fs::create_dir(&dir).ok()?;
        let group = MemoryCgroup { dir, version };
        let limited = match version {
            Version::V2 => {
                if !group.dir.join("memory.max").exists() {
                    // The controller may be enabled for children of a cgroup that holds no
                    // process (the root, or a delegated one).
                    let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+memory");
                }
                group.write("memory.max", limit)
                    && (!group.dir.join("memory.swap.max").exists()
                        || group.write("memory.swap.max", 0))
            }
            Version::V1 => {
                group.write("memory.limit_in_bytes", limit)
                    && (!group.dir.join("memory.memsw.limit_in_bytes").exists()
                        || group.write("memory.memsw.limit_in_bytes", limit))
            }
        };
        // Dropped on failure, which removes the folder.
        limited.then_some(group)
    }

    fn write(&self, file: &str, value: u64) -> bool {
        std::fs::write(self.dir.join(file), value.to_string()).is_ok()
    }

    /// Moves the process `pid` into it.
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
    }

    /// Whether the kernel killed a process of it for passing the limit.
    pub fn oom_killed(&self) -> bool {
        let (file, key) = match self.version {
            Version::V2 => ("memory.events", "oom_kill"),
            Version::V1 => ("memory.oom_control", "oom_kill"),
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|text| {
                text.lines().find_map(|line| {
                    let (k, v) = line.split_once(' ')?;
                    (k == key).then(|| v.trim().parse::<u64>().ok())?
                })
            })
            .is_some_and(|n| n > 0)
    }

    /// SIGKILL to every process in it.
    pub fn kill_all(&self) {
        let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) else {
            return;
        };
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            if let Some(pid) = Pid::from_raw(pid) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // A killed process leaves the cgroup a moment after it dies.
        for _ in 0..100 {
            self.kill_all();
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// The folder of the cgroup `path` (as `/proc/self/cgroup` gives it) in the mounted hierarchy
/// whose filesystem type is `fstype` and, for v1, whose super options name `controller`.
fn folder(mounts: &str, fstype: &str, controller: Option<&str>, path: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mut after = after.split(' ');
        if after.next()? != fstype {
            return None;
        }
        if let Some(controller) = controller {
            let options = after.nth(1)?;
            if !options.split(',').any(|o| o == controller) {
                return None;
            }
        }
        // mount ID, parent ID, major:minor, root, mount point.
        let mut fields = before.split(' ');
        let root = fields.nth(3)?;
        let point = fields.next()?;
        // A mount of part of the hierarchy (a container's) shows the paths below its root.
        let below = Path::new(path).strip_prefix(root).ok()?;
        Some(Path::new(point).join(below))
    })
}

/// This process's cgroup v2 folder.
fn v2_parent(cgroups: &str, mounts: &str) -> Option<PathBuf> {
    let path = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    folder(mounts, "cgroup2", None, path)
}

/// This process's folder in cgroup v1's memory hierarchy.
fn v1_parent(cgroups: &str, mounts: &str) -> Option<PathBuf> {
    let path = cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let _id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then_some(path)
    })?;
    folder(mounts, "cgroup", Some("memory"), path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
35 30 0:31 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755
40 35 0:36 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 35 0:37 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
45 35 0:40 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_memory_folder_is_found_from_the_process_cgroup_and_the_mounts() {
        let cgroups = "8:pids:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(
            v1_parent(cgroups, MOUNTS),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(
            v2_parent(cgroups, MOUNTS),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
    }

    #[test]
    fn a_v2_only_machine_has_no_v1_folder() {
        let mounts = "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        let cgroups = "0::/user.slice/session-1.scope\n";
        assert_eq!(
            v2_parent(cgroups, mounts),
            Some(PathBuf::from("/sys/fs/cgroup/user.slice/session-1.scope"))
        );
        assert_eq!(v1_parent(cgroups, mounts), None);
    }

    #[test]
    fn a_mount_of_part_of_the_hierarchy_shows_the_paths_below_its_root() {
        let mounts =
            "40 35 0:36 /kubepods/pod1 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let cgroups = "4:memory:/kubepods/pod1/ctr\n";
        assert_eq!(
            v1_parent(cgroups, mounts),
            Some(PathBuf::from("/sys/fs/cgroup/memory/ctr"))
        );
    }
}
