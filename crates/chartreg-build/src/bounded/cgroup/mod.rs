//! A memory cgroup for one run ([`RunCgroup`]), below the folder [`v2::base`] prepares, else
//! below this process's own in cgroup v1's memory hierarchy. Where neither can be made,
//! [`RunCgroup::create`] says why for each, and the run is bounded otherwise.
//!
//! - cgroup v1: `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes` where swap is
//!   accounted): the kernel's OOM killer stops the run at the limit.
//! - cgroup v2: `memory.high` at the limit, where the kernel throttles the run (it reclaims,
//!   then makes the allocating task sleep), and the run is stopped by this process once its
//!   memory stays above the limit ([`RunCgroup::over`]); `memory.max` an eighth above it, where
//!   the kernel's OOM killer stops it if this process did not (`memory.oom.group`: the whole
//!   run); `memory.swap.max` 0. The OOM killer is kept for that last resort because systemd
//!   answers an OOM kill anywhere in a unit it does not delegate by stopping the whole unit
//!   (`OOMPolicy=stop`, the default), this process with it: measured in a VM, a root service
//!   and a root scope were sent SIGTERM when a render hit `memory.max`.
//!
//! Every process of the run is in it whatever it calls (`setsid()`, `setpgid()`), so it is
//! counted and killed with the run: `cgroup.kill` where the kernel has it (v2, 5.14+), else
//! SIGKILL to each process `cgroup.procs` lists, in rounds until none is left. Dropping it does
//! that and removes the folder.

mod find;
pub mod v2;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

/// Why no cgroup holds a run.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("this process is in no {0} hierarchy")]
    NotInOne(&'static str),
    #[error(
        "{}: the memory controller is not among its controllers ({found:?})",
        dir.display()
    )]
    NoController { dir: PathBuf, found: String },
    #[error(
        "{}: {left} processes are left in it that cannot be moved into its leaf",
        dir.display()
    )]
    Crowded { dir: PathBuf, left: usize },
    #[error("cgroup v2: {v2}; cgroup v1: {v1}")]
    NoHierarchy {
        v2: Box<CgroupError>,
        v1: Box<CgroupError>,
    },
}

/// Which cgroup hierarchy bounds a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// One run's memory cgroup.
#[derive(Debug)]
pub struct RunCgroup {
    dir: PathBuf,
    version: Version,
}

/// Tells this process's cgroups apart.
static MADE: AtomicU64 = AtomicU64::new(0);

/// How long a killed run's processes are given to leave its cgroup.
const EMPTIED: Duration = Duration::from_secs(5);

impl RunCgroup {
    /// A new cgroup limited to `limit` bytes, or why none can be made (v2's reason, then
    /// v1's).
    pub fn create(limit: u64) -> Result<RunCgroup, CgroupError> {
        let name = format!(
            "chartreg-build-{}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        let own = |find: fn(&str, &str) -> Option<PathBuf>, what| {
            let cgroups = read(Path::new("/proc/self/cgroup"))?;
            let mounts = read(Path::new("/proc/self/mountinfo"))?;
            find(&cgroups, &mounts).ok_or(CgroupError::NotInOne(what))
        };
        let v2 = match v2::base(|| own(find::v2_folder, "cgroup v2")) {
            Ok(base) => match Self::make(&base, &name, Version::V2, limit) {
                Ok(group) => return Ok(group),
                Err(e) => e,
            },
            Err(e) => e,
        };
        own(find::v1_memory_folder, "cgroup v1 memory")
            .and_then(|parent| Self::make(&parent, &name, Version::V1, limit))
            .map_err(|v1| CgroupError::NoHierarchy {
                v2: Box::new(v2),
                v1: Box::new(v1),
            })
    }

    fn make(
        parent: &Path,
        name: &str,
        version: Version,
        limit: u64,
    ) -> Result<RunCgroup, CgroupError> {
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|source| CgroupError::Io {
            path: dir.clone(),
            source,
        })?;
        // Dropped on failure, which removes the folder.
        let group = RunCgroup { dir, version };
        match version {
            Version::V2 => {
                group.write("memory.high", limit)?;
                group.write("memory.max", limit.saturating_add(limit / 8))?;
                group.write_if_there("memory.swap.max", 0)?;
                group.write_if_there("memory.oom.group", 1)?;
            }
            Version::V1 => {
                group.write("memory.limit_in_bytes", limit)?;
                group.write_if_there("memory.memsw.limit_in_bytes", limit)?;
            }
        }
        Ok(group)
    }

    fn write(&self, file: &str, value: u64) -> Result<(), CgroupError> {
        let path = self.dir.join(file);
        std::fs::write(&path, value.to_string()).map_err(|source| CgroupError::Io { path, source })
    }

    fn write_if_there(&self, file: &str, value: u64) -> Result<(), CgroupError> {
        if self.dir.join(file).exists() {
            self.write(file, value)?;
        }
        Ok(())
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// Moves the process `pid` into it.
    pub fn add(&self, pid: u32) -> std::io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
    }

    /// Whether the kernel killed a process of it for passing the limit.
    pub fn oom_killed(&self) -> bool {
        let file = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|text| {
                text.lines().find_map(|line| {
                    let (k, v) = line.split_once(' ')?;
                    (k == "oom_kill").then(|| v.trim().parse::<u64>().ok())?
                })
            })
            .is_some_and(|n| n > 0)
    }

    /// The memory its processes hold now, if above `limit` (v2: what `memory.high` let pass).
    pub fn over(&self, limit: u64) -> Option<u64> {
        let file = match self.version {
            Version::V2 => "memory.current",
            Version::V1 => "memory.usage_in_bytes",
        };
        let now: u64 = std::fs::read_to_string(self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        (now > limit).then_some(now)
    }

    /// The most memory its processes held together, as the kernel counted it (v2 5.19+, v1).
    pub fn peak(&self) -> Option<u64> {
        let file = match self.version {
            Version::V2 => "memory.peak",
            Version::V1 => "memory.max_usage_in_bytes",
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The processes in it now.
    fn procs(&self) -> Vec<u32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Kills every process in it, and waits (a while) until none is left; gives those it
    /// found, for their parent to wait for them when that is this process.
    pub fn kill_all(&self) -> Vec<u32> {
        let mut killed = Vec::new();
        let until = Instant::now() + EMPTIED;
        let by_file = self.dir.join("cgroup.kill");
        loop {
            let procs = self.procs();
            if procs.is_empty() || Instant::now() > until {
                return killed;
            }
            let all_at_once = self.version == Version::V2
                && by_file.exists()
                && std::fs::write(&by_file, "1").is_ok();
            for &pid in &procs {
                if !all_at_once && let Some(pid) = Pid::from_raw(pid.try_into().unwrap_or(0)) {
                    let _ = kill_process(pid, Signal::KILL);
                }
                if !killed.contains(&pid) {
                    killed.push(pid);
                }
            }
            // A killed process leaves the cgroup a moment after it dies.
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        for pid in self.kill_all() {
            super::procs::reap(pid);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn read(path: &Path) -> Result<String, CgroupError> {
    std::fs::read_to_string(path).map_err(|source| CgroupError::Io {
        path: path.to_owned(),
        source,
    })
}
