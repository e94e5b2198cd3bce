//! The processes of a run, read from `/proc`: what the watchdog sums and what a run without a
//! cgroup kills when it ends or is stopped.
//!
//! A run's tree is its program, every process whose parent is in the tree, and every process in
//! its process group. A process that calls `setsid()` or `setpgid()` leaves the group but not
//! the tree while its parent lives; once its parent dies it is an orphan, adopted by the
//! nearest ancestor that is a subreaper:
//! - in a PID namespace of the run's own, its program (the namespace's init): still in the
//!   tree;
//! - otherwise this process, made a subreaper ([`adopt_orphans`]) before such a run starts.
//!   Such runs take turns ([`TRACKING`]: the tool renders one chart at a time anyway), so an
//!   orphan this process adopts is the running one's, unless it is a run's program
//!   ([`ROOTS`]) or in its group, in a run's cgroup, or in this process's own group (what a
//!   test harness spawns beside).

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::process::{Pid, Signal, WaitOptions, kill_process, waitpid};

/// `/proc` could not be read: nothing can be watched or tracked.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}")]
pub struct ProcError {
    pub path: String,
    pub source: std::io::Error,
}

/// One process, as `/proc/PID/stat` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    /// `Z` for a zombie.
    pub state: char,
    /// Clock ticks after boot: with the pid, names the process (pids are reused).
    pub start: u64,
}

/// `/proc/PID/stat`; the second field, the command name, is in parentheses and may hold
/// spaces or parentheses.
pub fn stat(proc: &Path, pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?;
    parse_stat(pid, &text)
}

fn parse_stat(pid: u32, text: &str) -> Option<Stat> {
    let (_, after) = text.rsplit_once(')')?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // state(3) ppid(4) pgrp(5) ... starttime(22), counted from 1 with pid and comm.
    Some(Stat {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Every process `proc` lists.
pub fn table(proc: &Path) -> Result<Vec<Stat>, ProcError> {
    let entries = std::fs::read_dir(proc).map_err(|source| ProcError {
        path: proc.display().to_string(),
        source,
    })?;
    Ok(entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| stat(proc, pid))
        .collect())
}

/// `RssAnon` + `RssShmem` of `pid`, in bytes: what the kernel cannot reclaim by dropping pages
/// it can read back from a file. `None` once the process is gone.
pub fn anonymous(proc: &Path, pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(proc.join(pid.to_string()).join("status")).ok()?;
    Some(
        status
            .lines()
            .filter_map(|line| {
                let rest = line
                    .strip_prefix("RssAnon:")
                    .or_else(|| line.strip_prefix("RssShmem:"))?;
                let kb = rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
                Some(kb * 1024)
            })
            .sum(),
    )
}

/// The programs runs started, as this process's children: never claimed as orphans. Held
/// while a program is started, so that no tree sees it before it is listed.
pub static ROOTS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Held by a run whose tree is tracked through the orphans this process adopts, from before
/// its program runs to its end.
pub static TRACKING: Mutex<()> = Mutex::new(());

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Makes this process the subreaper of what its runs leave: an orphan comes to it, not to
/// init, and stays in reach. Whether it could.
pub fn adopt_orphans() -> bool {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok()
}

/// The processes of one run.
#[derive(Debug)]
pub struct Tree {
    root: u32,
    /// This process and its process group, when orphans come to it.
    adopter: Option<(u32, u32)>,
    /// What the last look found.
    members: Vec<Stat>,
}

impl Tree {
    /// The tree of the program `root`; `adopts` when orphans come to this process (the caller
    /// holds [`TRACKING`]).
    pub fn new(root: u32, adopts: bool) -> Tree {
        let me = rustix::process::getpid();
        let adopter = adopts.then(|| {
            let group = rustix::process::getpgrp();
            (
                me.as_raw_nonzero().get().unsigned_abs(),
                group.as_raw_nonzero().get().unsigned_abs(),
            )
        });
        Tree {
            root,
            adopter,
            members: Vec::new(),
        }
    }

    /// Looks again: the processes in the tree now.
    pub fn look(&mut self, proc: &Path) -> Result<&[Stat], ProcError> {
        let all = table(proc)?;
        let roots = lock(&ROOTS).clone();
        let mut inside: HashSet<u32> = HashSet::from([self.root]);
        // Orphans this run takes: adopted by this process, in no run's group or cgroup.
        if let Some((me, my_group)) = self.adopter {
            for s in &all {
                if s.ppid == me
                    && s.pgid != my_group
                    && !roots.contains(&s.pid)
                    && !roots.contains(&s.pgid)
                    && !in_a_run_cgroup(proc, s.pid)
                {
                    inside.insert(s.pid);
                }
            }
        }
        // Children of members, and the run's group, until nothing is added.
        loop {
            let before = inside.len();
            for s in &all {
                if inside.contains(&s.ppid) || s.pgid == self.root {
                    inside.insert(s.pid);
                }
            }
            if inside.len() == before {
                break;
            }
        }
        self.members = all
            .into_iter()
            .filter(|s| inside.contains(&s.pid))
            .collect();
        self.reap();
        Ok(&self.members)
    }

    /// The members the last look found.
    pub fn members(&self) -> &[Stat] {
        &self.members
    }

    /// SIGKILL to every member the last look found.
    pub fn kill(&self) {
        for s in &self.members {
            if let Some(pid) = Pid::from_raw(s.pid.try_into().unwrap_or(0)) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
    }

    /// Waits for the zombies among adopted members, which have no other parent to wait.
    fn reap(&self) {
        let Some((me, _)) = self.adopter else {
            return;
        };
        for s in &self.members {
            if s.ppid == me && s.state == 'Z' && s.pid != self.root {
                reap(s.pid);
            }
        }
    }
}

/// Whether `pid` is in a cgroup this process made for a run (held and killed by it).
fn in_a_run_cgroup(proc: &Path, pid: u32) -> bool {
    let mine = format!("/chartreg-build-{}-", std::process::id());
    std::fs::read_to_string(proc.join(pid.to_string()).join("cgroup"))
        .is_ok_and(|text| text.contains(&mine))
}

/// Waits for `pid` if it is an exited child of this process that is not a run's program (whose
/// own thread waits for it).
pub fn reap(pid: u32) {
    if lock(&ROOTS).contains(&pid) {
        return;
    }
    if let Some(pid) = Pid::from_raw(pid.try_into().unwrap_or(0)) {
        let _ = waitpid(Some(pid), WaitOptions::NOHANG);
    }
}

/// The anonymous memory of `members`, in bytes.
pub fn anonymous_sum(proc: &Path, members: &[Stat]) -> u64 {
    members.iter().filter_map(|s| anonymous(proc, s.pid)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_with_spaces_and_parentheses_is_skipped() {
        let text = "42 (a) b (c)) S 7 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        let s = parse_stat(42, text).unwrap();
        assert_eq!((s.ppid, s.pgid, s.state, s.start), (7, 42, 'S', 12345));
    }

    #[test]
    fn this_process_is_in_the_table_with_its_parent_and_memory() {
        let proc = Path::new("/proc");
        let me = std::process::id();
        let all = table(proc).unwrap();
        let mine = all.iter().find(|s| s.pid == me).unwrap();
        assert_eq!(mine.ppid, std::os::unix::process::parent_id());
        assert_eq!(
            i64::from(mine.pgid),
            i64::from(rustix::process::getpgrp().as_raw_nonzero().get())
        );
        assert!(anonymous(proc, me).is_some_and(|n| n > 0));
    }

    #[test]
    fn a_proc_that_cannot_be_read_is_an_error_not_an_empty_table() {
        let err = table(Path::new("/nonexistent/proc")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/proc"), "{err}");
    }
}
