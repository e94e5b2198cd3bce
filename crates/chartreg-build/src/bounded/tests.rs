use super::*;

const MIB: u64 = 1024 * 1024;

fn limits() -> Limits {
    Limits {
        time: Duration::from_secs(60),
        memory: 512 * MIB,
        output: MIB,
    }
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
        Limits {
            time: Duration::from_millis(300),
            ..limits()
        },
    )
    .run()
    .unwrap_err();
    assert!(matches!(err, BoundedError::Time { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
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

/// The hog run within 128 MiB, bounded `how`.
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

fn with_python() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("python3").is_file()));
    assert!(
        found || std::env::var_os("CI").is_none_or(|v| v != "true"),
        "python3 is needed to allocate memory in the test"
    );
    found
}

#[test]
fn the_watchdog_stops_a_run_past_its_memory() {
    if !with_python() {
        return;
    }
    let err = hog(MemoryBound::Watchdog);
    assert!(matches!(err, BoundedError::Memory { .. }), "{err}");
    assert!(err.to_string().contains("more than 128 MiB"), "{err}");
}

#[test]
fn a_cgroup_stops_a_run_past_its_memory_where_one_can_be_made() {
    if !with_python() {
        return;
    }
    let can = cgroup::MemoryCgroup::create(128 * MIB).is_some();
    // Where none can be made, the watchdog: stopped all the same.
    let err = hog(MemoryBound::CgroupElseWatchdog);
    assert!(
        matches!(err, BoundedError::Memory { .. }),
        "{err} (cgroup: {can})"
    );
    // As root on Linux (CI), a cgroup can be made.
    if std::env::var_os("CI").is_some_and(|v| v == "true") && rustix::process::geteuid().is_root() {
        assert!(can, "as root, a memory cgroup should be made");
    }
}
