//! The memory watchdog, where no cgroup could be made: the anonymous resident memory
//! (`RssAnon` and `RssShmem` in `/proc/PID/status`: what the kernel cannot reclaim by dropping
//! pages it can read back from a file) of every process of the run's tree ([`procs::Tree`]:
//! its descendants, its process group, and the orphans it left), looked at each tick. A run
//! allocating fast passes the limit by what it allocates in one tick (Helm rendering a runaway
//! template grew ~220 MB/s here: ~5 MB a 20 ms tick).
//!
//! It is never silently blind: where `/proc` cannot be read it cannot be made ([`Watchdog::new`]
//! says why), and a look that cannot read `/proc` is an error, not a sum of nothing.

use std::path::{Path, PathBuf};

use super::procs::{self, ProcError, Tree};

/// Whether a watchdog can read `proc`: its list of processes, and the memory of this one.
pub fn readable(proc: &Path) -> Result<(), ProcError> {
    procs::table(proc)?;
    let status = proc.join("self/status");
    let text = std::fs::read_to_string(&status).map_err(|source| ProcError {
        path: status.display().to_string(),
        source,
    })?;
    if !text.contains("RssAnon:") {
        return Err(ProcError {
            path: status.display().to_string(),
            source: std::io::Error::other("no RssAnon line to read memory from"),
        });
    }
    Ok(())
}

/// Watches one run's tree.
#[derive(Debug)]
pub struct Watchdog {
    proc: PathBuf,
    tree: Tree,
    looks: u32,
    peak: u64,
}

impl Watchdog {
    /// How often (in looks) the whole of `/proc` is read for processes that joined the tree;
    /// the members found last are looked at in between.
    const SCAN_EVERY: u32 = 5;

    /// A watchdog reading `proc` for the run whose tree is `tree` ([`readable`] first).
    pub fn new(proc: &Path, tree: Tree) -> Watchdog {
        Watchdog {
            proc: proc.to_owned(),
            tree,
            looks: 0,
            peak: 0,
        }
    }

    /// The tree's anonymous memory now, in bytes.
    pub fn anonymous_bytes(&mut self) -> Result<u64, ProcError> {
        if self.looks.is_multiple_of(Self::SCAN_EVERY) {
            self.tree.look(&self.proc)?;
        }
        self.looks = self.looks.wrapping_add(1);
        let now = procs::anonymous_sum(&self.proc, self.tree.members());
        self.peak = self.peak.max(now);
        Ok(now)
    }

    /// The most it saw.
    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// Kills the whole tree, looking again until it is empty (a process may fork meanwhile).
    pub fn kill_all(&mut self) {
        for _ in 0..20 {
            if self.tree.look(&self.proc).is_err() {
                break;
            }
            let alive = self.tree.members().iter().any(|s| s.state != 'Z');
            if !alive {
                break;
            }
            self.tree.kill();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.kill_all();
    }
}
