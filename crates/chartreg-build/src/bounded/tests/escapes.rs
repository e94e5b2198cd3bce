//! Nothing a run starts outlives it or escapes its memory bound, whatever it calls, on each way
//! a run can be held: its cgroup (v1 on this project's machines, as root), the watchdog with
//! orphans tracked (no cgroup, no namespace: this process adopts them), and each of those in a
//! PID namespace of its own (an isolated run). A child that calls `setsid()` leaves the run's
//! process group and session, which is all the runner once killed and counted.

use super::*;

/// Each way a run can be held here: its name, how memory is bounded, whether isolated.
const WAYS: [(&str, MemoryBound, bool); 4] = [
    ("cgroup", MemoryBound::CgroupElseWatchdog, false),
    ("cgroup, isolated", MemoryBound::CgroupElseWatchdog, true),
    ("watchdog, orphans tracked", MemoryBound::Watchdog, false),
    ("watchdog, isolated", MemoryBound::Watchdog, true),
];

fn held(run: Bounded, memory: MemoryBound, isolated: bool) -> Bounded {
    let run = run.memory_bound(memory);
    if isolated { run.isolated() } else { run }
}

/// Shell that writes, into `file`, the pid of the shell it runs in as this machine's `/proc`
/// numbers it (in a PID namespace, `$$` is the namespace's number); for a double-quoted
/// `sh -c "..."`, so `$` is escaped.
fn own_pid_into(file: &Path) -> String {
    format!(
        "read -r pid rest < /proc/self/stat; echo \\$pid > '{}'",
        file.display()
    )
}

/// The pid written into `file`.
fn written(file: &Path) -> String {
    let pid = std::fs::read_to_string(file).unwrap_or_default();
    assert!(!pid.trim().is_empty(), "{} holds no pid", file.display());
    pid.trim().to_owned()
}

/// Whether `pid` is gone: no such process, or a zombie its parent has yet to wait for.
fn gone(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.is_empty()
        || stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

/// A child that calls `setsid()` and sleeps; once it has written its pid, the run floods
/// stdout and is stopped at its output limit. The child goes with it.
#[test]
fn a_setsid_child_is_killed_when_its_run_is_stopped() {
    for (way, memory, isolated) in WAYS {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        let script = format!(
            "setsid sh -c \"{}; exec sleep 1000\" & while [ ! -s '{}' ]; do :; done; exec yes",
            own_pid_into(&file),
            file.display()
        );
        let err = held(sh(&script, limits()), memory, isolated)
            .run()
            .unwrap_err();
        assert!(matches!(err, BoundedError::Output { .. }), "{way}: {err}");
        let pid = written(&file);
        assert!(gone(&pid), "{way}: the setsid child {pid} survived its run");
    }
}

/// A run that ends by itself, leaving a `setsid()` child behind: the child goes with it.
#[test]
fn a_setsid_child_left_behind_is_killed_when_its_run_ends() {
    for (way, memory, isolated) in WAYS {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        let script = format!(
            "setsid sh -c \"{}; exec sleep 1000\" & while [ ! -s '{}' ]; do :; done; exit 0",
            own_pid_into(&file),
            file.display()
        );
        let done = held(sh(&script, limits()), memory, isolated)
            .run()
            .unwrap_or_else(|e| panic!("{way}: {e}"));
        assert_eq!(done.status.code(), Some(0), "{way}");
        let pid = written(&file);
        assert!(gone(&pid), "{way}: the setsid child {pid} outlived its run");
    }
}

/// A child that calls `setsid()` and allocates 512 MiB, in a run bounded to 128 MiB: its memory
/// is the run's, and the run is stopped at its memory bound, not its time.
#[test]
fn a_setsid_child_s_memory_is_the_run_s() {
    if !python() {
        return;
    }
    for (way, memory, isolated) in WAYS {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        let hog = format!(
            "import os; open('{}', 'w').write(os.readlink('/proc/self')); {HOG}",
            file.display()
        );
        let started = Instant::now();
        let run = Bounded::new(
            "/bin/sh",
            Limits {
                memory: 128 * MIB,
                ..limits()
            },
        )
        .env_from_parent(["PATH"])
        .args(["-c", "setsid python3 -c \"$0\" & wait", &hog]);
        let err = held(run, memory, isolated).run().unwrap_err();
        assert!(matches!(err, BoundedError::Memory { .. }), "{way}: {err}");
        assert!(started.elapsed() < Duration::from_secs(30), "{way}");
        if file.exists() {
            let pid = written(&file);
            assert!(gone(&pid), "{way}: the setsid hog {pid} survived its run");
        }
    }
}

/// Forks that leave the group and their parent at once (`setsid` in a subshell that exits):
/// orphans from the start, found and killed all the same.
#[test]
fn orphans_that_left_the_group_at_once_are_killed_with_the_run() {
    for (way, memory, isolated) in WAYS {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("pid{i}"))).collect();
        let mut script = String::new();
        for file in &files {
            script.push_str(&format!(
                "( setsid sh -c \"{}; exec sleep 1000\" & ); ",
                own_pid_into(file)
            ));
        }
        for file in &files {
            script.push_str(&format!(
                "while [ ! -s '{}' ]; do :; done; ",
                file.display()
            ));
        }
        script.push_str("exit 0");
        held(sh(&script, limits()), memory, isolated)
            .run()
            .unwrap_or_else(|e| panic!("{way}: {e}"));
        for file in &files {
            let pid = written(file);
            assert!(gone(&pid), "{way}: the orphan {pid} outlived its run");
        }
    }
}
