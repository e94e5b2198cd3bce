//! The runner's bounds, on whatever this machine allows (as root on Linux, which CI is: a cgroup
//! v1 or v2 memory cgroup, and namespaces); [`escapes`] proves that nothing a run starts
//! outlives it on every path, [`isolation`] what an isolated run can reach.

mod escapes;
mod isolation;

use super::*;
use std::time::Instant;

const MIB: u64 = 1024 * 1024;

fn limits() -> Limits {
    Limits {
        time: Duration::from_secs(60),
        memory: 512 * MIB,
        output: MIB,
    }
}

pub fn ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| v == "true")
}

pub fn root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Why no cgroup can be made here, for a message.
fn why_no_cgroup() -> String {
    match cgroup::RunCgroup::create(64 * MIB) {
        Ok(_) => "a cgroup can be made now".to_owned(),
        Err(why) => why.to_string(),
    }
}

/// The bound a run that may have a cgroup must get here, when the caller says
/// (`CHARTREG_TEST_BOUND=cgroup v2`: the VM of scripts/cgroup-v2-vm.sh, per kind of host).
fn expected_bound() -> Option<String> {
    std::env::var("CHARTREG_TEST_BOUND").ok()
}

fn sh(script: &str, limits: Limits) -> Bounded {
    Bounded::new("/bin/sh", limits).arg("-c").arg(script)
}

#[test]
fn a_run_gives_its_status_and_both_streams() {
    let done = sh("printf out; printf err >&2; exit 3", limits())
        .run()
        .unwrap();
    assert_eq!(done.status.code(), Some(3));
    assert_eq!(done.stdout, b"out");
    assert_eq!(done.stderr, b"err");
}

#[test]
fn the_environment_holds_only_what_is_named() {
    let done = Bounded::new("/usr/bin/env", limits())
        .env("ONLY", "this")
        .env_from_parent(["PATH"])
        .run()
        .unwrap();
    let text = String::from_utf8(done.stdout).unwrap();
    let mut names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k)
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["ONLY", "PATH"], "{text}");
}

#[test]
fn a_run_past_its_time_is_stopped_with_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let started = Instant::now();
    let err = sh(
        &format!("sleep 300 & echo $! > '{}'; wait", pidfile.display()),
        // Long enough for the shell to start and write the pid under emulation (the VM of
        // scripts/cgroup-v2-vm.sh took more than 300 ms).
        Limits {
            time: Duration::from_secs(3),
            ..limits()
        },
    )
    .run()
    .unwrap_err();
    assert!(matches!(err, BoundedError::Time { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(err.to_string().contains("its time limit"), "{err}");
    // The background sleep was in the group: killed too (gone, or a zombie awaiting init).
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .map(|(_, s)| s.trim_start().chars().next());
    assert!(stat.is_empty() || state == Some(Some('Z')), "{stat}");
}

#[test]
fn a_run_printing_past_its_output_limit_is_stopped() {
    let err = Bounded::new("/usr/bin/yes", limits()).run().unwrap_err();
    assert!(
        matches!(
            err,
            BoundedError::Output {
                stream: Stream::Stdout,
                ..
            }
        ),
        "{err}"
    );
    let err = sh("yes >&2", limits()).run().unwrap_err();
    assert!(
        matches!(
            err,
            BoundedError::Output {
                stream: Stream::Stderr,
                ..
            }
        ),
        "{err}"
    );
}

/// 512 MiB written, then a long sleep.
const HOG: &str = "b = b'x' * (512 << 20); import time; time.sleep(300)";

/// python3 on the PATH; under `CI=true` the test fails without it.
pub fn python() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("python3").is_file()));
    assert!(
        found || !ci(),
        "python3 is needed to allocate memory in the test"
    );
    found
}

/// The hog run within 128 MiB, bounded `how`: the error that stopped it.
fn hog(how: MemoryBound) -> BoundedError {
    let started = Instant::now();
    let limit = Limits {
        memory: 128 * MIB,
        ..limits()
    };
    let done = Bounded::new("python3", limit)
        .env_from_parent(["PATH"])
        .args(["-c", HOG])
        .memory_bound(how)
        .run();
    let err = match done {
        Err(e) => e,
        Ok(done) => panic!("not stopped: {done:?}"),
    };
    assert!(started.elapsed() < Duration::from_secs(30));
    err
}

#[test]
fn the_watchdog_stops_a_run_past_its_memory_and_says_so() {
    if !python() {
        return;
    }
    let err = hog(MemoryBound::Watchdog);
    let BoundedError::Memory { bound, peak, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(*bound, Bound::Watchdog);
    assert!(peak.is_some_and(|p| p > 128 * MIB), "{err}");
    let text = err.to_string();
    assert!(text.contains("more than 128 MiB"), "{text}");
    assert!(text.contains("memory bound: the watchdog; peak"), "{text}");
}

#[test]
fn a_cgroup_stops_a_run_past_its_memory_where_one_can_be_made_and_says_which() {
    if !python() {
        return;
    }
    let err = hog(MemoryBound::CgroupElseWatchdog);
    let BoundedError::Memory { bound, .. } = &err else {
        panic!("{err}");
    };
    if let Some(want) = expected_bound() {
        assert_eq!(bound.to_string(), want, "{err} ({})", why_no_cgroup());
    }
    // As root on Linux (CI), a cgroup can be made: v1 on this project's machines.
    if ci() && root() {
        assert!(
            matches!(bound, Bound::CgroupV1 | Bound::CgroupV2),
            "as root, a memory cgroup should be made: {err}"
        );
    }
    assert!(
        err.to_string().contains(&format!("memory bound: {bound}")),
        "{err}"
    );
}

#[test]
fn a_run_that_ends_says_what_bounded_it() {
    let done = sh("exit 0", limits()).run().unwrap();
    if let Some(want) = expected_bound() {
        assert_eq!(done.bound.to_string(), want, "{}", why_no_cgroup());
    }
    if ci() && root() {
        assert!(
            matches!(done.bound, Bound::CgroupV1 | Bound::CgroupV2),
            "{done:?}"
        );
    }
    let done = sh("exit 0", limits())
        .memory_bound(MemoryBound::Watchdog)
        .run()
        .unwrap();
    assert_eq!(done.bound, Bound::Watchdog);
}

/// A `/proc` with nothing in it: no process can be watched.
fn blind() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn where_nothing_can_bound_memory_the_run_is_refused_and_runs_nothing() {
    let proc = blind();
    let marker = proc.path().join("ran");
    let err = sh(&format!("touch '{}'", marker.display()), limits())
        .memory_bound(MemoryBound::Watchdog)
        .proc_at(proc.path())
        .unbounded(false)
        .run()
        .unwrap_err();
    assert!(matches!(err, BoundedError::NoBound { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("no watchdog ("), "{text}");
    assert!(text.contains(&proc.path().display().to_string()), "{text}");
    assert!(text.contains("--unbounded"), "{text}");
    assert!(!marker.exists(), "it ran");
}

#[test]
fn where_nothing_can_bound_memory_unbounded_runs_it_and_says_so() {
    let proc = blind();
    let done = sh("printf ran", limits())
        .memory_bound(MemoryBound::Watchdog)
        .proc_at(proc.path())
        .unbounded(true)
        .run()
        .unwrap();
    assert_eq!(done.stdout, b"ran");
    assert_eq!(done.bound, Bound::Unbounded);
    // Its time is still bounded, and the message says nothing held its memory.
    let err = sh(
        "sleep 300",
        Limits {
            time: Duration::from_millis(200),
            ..limits()
        },
    )
    .memory_bound(MemoryBound::Watchdog)
    .proc_at(proc.path())
    .unbounded(true)
    .run()
    .unwrap_err();
    assert!(
        err.to_string().contains("memory bound: none (--unbounded)"),
        "{err}"
    );
}

#[test]
fn a_program_that_is_not_there_cannot_start() {
    let err = Bounded::new("/nonexistent/helm", limits())
        .run()
        .unwrap_err();
    assert!(matches!(err, BoundedError::Spawn { .. }), "{err}");
    let err = Bounded::new("no-such-program-here", limits())
        .env("PATH", "/usr/bin:/bin")
        .run()
        .unwrap_err();
    assert!(err.to_string().contains("not found on the PATH"), "{err}");
}
