//! The memory watchdog, where no cgroup could be made: the anonymous resident memory
//! (`RssAnon` and `RssShmem` in `/proc/PID/status`: what the kernel cannot reclaim by dropping
//! pages it can read back from a file) of every process in the run's process group, looked at
//! each tick. A run allocating fast passes the limit by what it allocates in one tick (Helm
//! rendering a runaway template grew ~220 MB/s here: ~5 MB a 20 ms tick).

/// Watches one process group.
#[derive(Debug)]
pub struct Watchdog {
    group: u32,
    /// The processes seen in the group at the last look (looked at first, then the rest of
    /// `/proc` every [`Watchdog::SCAN_EVERY`] looks, for processes that joined it).
    members: Vec<u32>,
    looks: u32,
}

impl Watchdog {
    const SCAN_EVERY: u32 = 5;

    /// The group whose leader is `leader`.
    pub fn new(leader: u32) -> Watchdog {
        Watchdog {
            group: leader,
            members: vec![leader],
            looks: 0,
        }
    }

    /// The group's anonymous resident memory now, in bytes.
    pub fn anonymous_bytes(&mut self) -> u64 {
        if self.looks.is_multiple_of(Self::SCAN_EVERY) {
            self.members = members(self.group);
        }
        self.looks = self.looks.wrapping_add(1);
        self.members.iter().filter_map(|pid| anonymous(*pid)).sum()
    }
}

/// The processes whose process group is `group`.
fn members(group: u32) -> Vec<u32> {
    let mut found = vec![group];
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != group && group_of(pid) == Some(group) {
            found.push(pid);
        }
    }
    found
}

/// The process group of `pid` (`/proc/PID/stat`'s fifth field; the second, the command name,
/// is in parentheses and may hold spaces).
fn group_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(2)?.parse().ok()
}

/// `RssAnon` + `RssShmem` of `pid`, in bytes.
fn anonymous(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_anonymous_memory_and_a_group() {
        let me = std::process::id();
        assert!(anonymous(me).is_some_and(|n| n > 0));
        assert!(group_of(me).is_some());
    }
}
