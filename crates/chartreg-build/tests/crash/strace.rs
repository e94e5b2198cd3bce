//! Crash points, found and hit with strace (Debian's 6.1), at the system-call level: what the
//! tool's libraries do with raw system calls (rustix, tempfile) is seen as well as libc's.
//!
//! 1. [`count`]: one uninterrupted run under `strace -f -o LOG -e trace=SET` ([`CHANGING`]),
//!    and [`parse`] of its log: every call that changes files (an `open`/`openat` counts only
//!    when its flags write or create: read from the log), each with the thread that made it
//!    and its number among that thread's calls of that system call.
//! 2. A crash point is `(SYSCALL, N)`: [`hit`] runs the command under `strace -f -o
//!    /dev/null -e inject=SYSCALL:signal=KILL:when=N`, which kills the process on entering
//!    that call, before the kernel carries it out (exit by SIGKILL: strace ends the same way);
//!    or, for a failure without a kill ([`Fault::Error`]), `inject=SYSCALL:error=EIO:when=N`,
//!    which fails that call (EIO: an I/O error any of them may meet) and lets the run go on.
//!
//! strace counts `when=N` per syscall and per thread (each thread has its own counter: checked
//! with two threads making the same calls, both of which had their second call hit). A
//! point therefore kills at the first call, in any thread, that is its thread's Nth of that
//! system call. So the points are the `N`s for which the first such call in the counting run
//! changes files; a file-changing call that another thread's Nth precedes is reached by no
//! point, and is counted as [`Points::shadowed`] (the tool makes its file changes on one
//! thread: none are, today). Thread scheduling may move a point to another call than the one
//! counted, or past the end of the run: such a point runs to the end, and is reported as not
//! reached; the checks after each point hold whatever call it hit.

use std::collections::BTreeMap;
use std::path::Path;

use super::tool::{Invocation, Ran, run};

/// The system calls that change files or make them durable. `open` beside `openat` (rustix
/// makes raw `open` calls); `fdatasync` and `syncfs` beside `fsync` (a new folder is made
/// durable by one `syncfs`).
pub const CHANGING: [&str; 17] = [
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "rmdir",
    "mkdir",
    "mkdirat",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "fsync",
    "fdatasync",
    "syncfs",
    "openat",
    "open",
];

/// Flags with which an `open` writes, creates or truncates.
const WRITING: [&str; 6] = [
    "O_WRONLY",
    "O_RDWR",
    "O_CREAT",
    "O_TRUNC",
    "O_TMPFILE",
    "O_APPEND",
];

/// One crash point: kill on entering the `n`th `syscall` of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    pub syscall: &'static str,
    pub n: usize,
    /// The call the counting run made there, as strace printed it.
    pub call: String,
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{} ({})", self.syscall, self.n, self.call)
    }
}

/// Every crash point of a run, in the order the run reaches them.
#[derive(Debug, Default)]
pub struct Points {
    pub all: Vec<Point>,
    /// File-changing calls the run made.
    pub calls: usize,
    /// File-changing calls no point reaches (another thread's call of the same number comes
    /// first).
    pub shadowed: usize,
    /// Threads that made file-changing calls.
    pub threads: usize,
}

/// How many points each system call has.
pub fn by_syscall(points: &[Point]) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for point in points {
        *counts.entry(point.syscall).or_default() += 1;
    }
    counts
}

/// One traced call.
struct Call {
    thread: String,
    syscall: &'static str,
    /// Its number among its thread's calls of `syscall` (from 1).
    nth: usize,
    changes: bool,
    line: String,
}

/// The text of a call after its first argument that is a string (the path), escapes heeded.
fn after_path(args: &str) -> &str {
    let Some(open) = args.find('"') else {
        return args;
    };
    let mut escaped = false;
    for (i, c) in args[open + 1..].char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return &args[open + 1 + i + 1..],
            _ => escaped = false,
        }
    }
    ""
}

/// The calls in a log of `strace -f -o LOG -e trace=SET` (see the module doc).
pub fn parse(log: &str) -> Points {
    let mut counters: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    let mut calls = Vec::new();
    for line in log.lines() {
        let Some((thread, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        // Resumed halves, exits and signals: the call was counted where it began.
        if rest.starts_with('<') || rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        let Some((name, args)) = rest.split_once('(') else {
            continue;
        };
        let Some(syscall) = CHANGING.iter().copied().find(|s| *s == name) else {
            continue;
        };
        let nth = counters.entry((thread.to_owned(), syscall)).or_default();
        *nth += 1;
        let changes = match syscall {
            "open" | "openat" => {
                let flags = after_path(args);
                WRITING.iter().any(|f| flags.contains(f))
            }
            _ => true,
        };
        calls.push(Call {
            thread: thread.to_owned(),
            syscall,
            nth: *nth,
            changes,
            line: rest.to_owned(),
        });
    }
    let mut points = Points {
        calls: calls.iter().filter(|c| c.changes).count(),
        threads: calls
            .iter()
            .filter(|c| c.changes)
            .map(|c| c.thread.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        ..Points::default()
    };
    let mut first: BTreeMap<(&'static str, usize), usize> = BTreeMap::new();
    for (i, call) in calls.iter().enumerate() {
        first.entry((call.syscall, call.nth)).or_insert(i);
    }
    let mut reached: Vec<usize> = first.values().copied().collect();
    reached.sort_unstable();
    for i in reached {
        let call = &calls[i];
        if call.changes {
            points.all.push(Point {
                syscall: call.syscall,
                n: call.nth,
                call: call.line.clone(),
            });
        }
    }
    points.shadowed = points.calls - points.all.len();
    points
}

/// The counting run (see the module doc, step 1): the run's own outcome, and its points.
pub fn count(strace: &Path, invocation: &Invocation, work: &Path, scratch: &Path) -> (Ran, Points) {
    let log = scratch.join("strace.log");
    let options = vec![
        "-f".to_owned(),
        "-s".to_owned(),
        "4096".to_owned(),
        "-o".to_owned(),
        log.to_string_lossy().into_owned(),
        "-e".to_owned(),
        format!("trace={}", CHANGING.join(",")),
    ];
    let ran = run(invocation.traced(strace, &options, work), scratch);
    let text =
        std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("read {}: {e}", log.display()));
    let _ = std::fs::remove_file(&log);
    (ran, parse(&text))
}

/// What a point does to the call it hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The process is killed on entering the call.
    Kill,
    /// The call fails with EIO, and the run goes on.
    Error,
}

/// The run with `fault` at `point` (see the module doc, step 2).
pub fn hit(
    strace: &Path,
    invocation: &Invocation,
    point: &Point,
    fault: Fault,
    work: &Path,
    scratch: &Path,
) -> Ran {
    let what = match fault {
        Fault::Kill => "signal=KILL",
        Fault::Error => "error=EIO",
    };
    let options = vec![
        "-f".to_owned(),
        "-o".to_owned(),
        "/dev/null".to_owned(),
        "-e".to_owned(),
        format!("inject={}:{what}:when={}", point.syscall, point.n),
    ];
    run(invocation.traced(strace, &options, work), scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the design rests on (see the module doc): strace's `when=N` counts each thread's
    /// calls apart. Two threads, one after the other, each open a file five times; with
    /// `inject=openat:error=ENOSPC:when=2`, each has its second call fail (a count over the
    /// process would fail only the first thread's second).
    #[test]
    fn strace_counts_when_per_thread() {
        let (Some(strace), Some(python)) = (
            super::super::common::tool("strace"),
            super::super::common::tool("python3"),
        ) else {
            return;
        };
        let script = [
            "import os, threading",
            "def opens(name):",
            "    got = []",
            "    for _ in range(5):",
            "        try:",
            "            os.close(os.open('/dev/null', os.O_RDONLY)); got.append('ok')",
            "        except OSError:",
            "            got.append('failed')",
            "    print(name, ' '.join(got), flush=True)",
            "for name in ['first', 'second']:",
            "    t = threading.Thread(target=opens, args=(name,)); t.start(); t.join()",
        ]
        .join("\n");
        let out = std::process::Command::new(strace)
            .args([
                "-f",
                "-o",
                "/dev/null",
                "-e",
                "inject=openat:error=ENOSPC:when=2",
                "--",
            ])
            .arg(python)
            .args(["-c", &script])
            .output()
            .expect("run strace");
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            said,
            "first ok failed ok ok ok\nsecond ok failed ok ok ok\n",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn points_are_each_threads_nth_call_and_reads_are_no_points() {
        let log = "\
10 execve(\"/bin/x\", [\"x\"], 0x0 /* 1 var */) = 0
10 openat(AT_FDCWD, \"/etc/ld.so.cache\", O_RDONLY|O_CLOEXEC) = 3
10 mkdir(\"/w/.f.fetch-new\", 0777) = 0
11 openat(AT_FDCWD, \"/w/a \\\"O_CREAT\\\"\", O_RDONLY <unfinished ...>
10 openat(AT_FDCWD, \"/w/.f.fetch-new/x\", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 4
11 <... openat resumed>) = 5
11 mkdir(\"/w/other\", 0777) = 0
10 renameat2(AT_FDCWD, \"/w/.f.fetch-new\", AT_FDCWD, \"/w/f\", RENAME_EXCHANGE) = 0
10 +++ exited with 0 +++
";
        let points = parse(log);
        let found: Vec<(&str, usize)> = points.all.iter().map(|p| (p.syscall, p.n)).collect();
        // openat#1 is a read in both threads; openat#2 is thread 10's write; mkdir#1 is
        // thread 10's (first), thread 11's mkdir#1 is shadowed.
        assert_eq!(found, [("mkdir", 1), ("openat", 2), ("renameat2", 1)]);
        assert_eq!(points.calls, 4);
        assert_eq!(points.shadowed, 1);
        assert_eq!(points.threads, 2);
    }
}
