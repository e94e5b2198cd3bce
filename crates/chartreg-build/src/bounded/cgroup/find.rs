//! Where this process's cgroups are: its cgroup v2 folder and its folder in cgroup v1's memory
//! hierarchy, from `/proc/self/cgroup` and `/proc/self/mountinfo`.

use std::path::{Path, PathBuf};

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
pub fn v2_folder(cgroups: &str, mounts: &str) -> Option<PathBuf> {
    let path = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    folder(mounts, "cgroup2", None, path)
}

/// This process's folder in cgroup v1's memory hierarchy.
pub fn v1_memory_folder(cgroups: &str, mounts: &str) -> Option<PathBuf> {
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
            v1_memory_folder(cgroups, MOUNTS),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(
            v2_folder(cgroups, MOUNTS),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
    }

    #[test]
    fn a_v2_only_machine_has_no_v1_folder() {
        let mounts = "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        let cgroups = "0::/user.slice/session-1.scope\n";
        assert_eq!(
            v2_folder(cgroups, mounts),
            Some(PathBuf::from("/sys/fs/cgroup/user.slice/session-1.scope"))
        );
        assert_eq!(v1_memory_folder(cgroups, mounts), None);
    }

    #[test]
    fn a_mount_of_part_of_the_hierarchy_shows_the_paths_below_its_root() {
        let mounts =
            "40 35 0:36 /kubepods/pod1 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let cgroups = "4:memory:/kubepods/pod1/ctr\n";
        assert_eq!(
            v1_memory_folder(cgroups, mounts),
            Some(PathBuf::from("/sys/fs/cgroup/memory/ctr"))
        );
    }
}
