//! Every program the build tool starts (Helm, cargo and the toolchain, the server binary it
//! built) runs through [`Bounded`]: nothing a chart or an upstream list holds can make such a run
//! endless, unbounded in memory, or flood the terminal; nothing it starts outlives it; none
//! inherits this process's environment.
//!
//! 1. The command is built with an empty environment; the caller names each variable it passes
//!    ([`Bounded::env`], [`Bounded::env_from_parent`]). Stdin is `/dev/null`. The program gets
//!    a process group of its own.
//! 2. Memory, the first [`Bound`] this machine allows:
//!    - a memory cgroup of the run's own ([`cgroup`]): cgroup v2 (as root, or in a subtree
//!      delegated to the user: this process first moves into a leaf cgroup so that its cgroup
//!      may enable `memory` for the run's), else cgroup v1's memory controller. The program
//!      enters it before it starts (a shell waits on a pipe until it has been moved, then
//!      `exec`s the program). On v1 the kernel stops the run at the limit; on v2 the kernel
//!      holds it there (`memory.high`) and this process stops it, the kernel's OOM killer
//!      waiting an eighth above (see [`cgroup`] for why).
//!    - else the watchdog ([`watch`]), which sums the anonymous resident memory of the run's
//!      whole tree, `setsid()` children and orphans included ([`procs`]), and stops the run past
//!      the limit. (`RLIMIT_AS` does not suit Go programs such as Helm: they reserve far more
//!      address space than they use.)
//!    - else, where `/proc` cannot be read either, the run is refused ([`BoundedError::NoBound`])
//!      unless the operator said `--unbounded` ([`allow_unbounded`]).
//! 3. An isolated run ([`Bounded::isolated`], Helm's) also gets a PID namespace and a network
//!    namespace of its own where the machine allows ([`isolate`]).
//! 4. Output: stdout and stderr are read by threads of their own, captured, or forwarded to this
//!    process's stderr as they arrive ([`Sink`]); past the limit on either, the run is stopped.
//! 5. Time: past the limit, the run is stopped.
//!
//! "Stopped" is SIGKILL to the run's whole tree: its cgroup (`cgroup.kill`, or every process
//! `cgroup.procs` lists), its PID namespace (its init), or the tree the watchdog tracks, and its
//! process group; then a [`BoundedError`] saying which limit it passed and which bound held its
//! memory. A run that ends by itself gives its status and what it printed ([`Finished`]), and
//! whatever it left running is killed the same way; judging the status is the caller's.

mod cgroup;
mod isolate;
mod output;
mod procs;
mod run;
mod start;
mod watch;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use procs::ProcError;

/// The bounds of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time from start to exit.
    pub time: Duration,
    /// Memory of the program and everything it starts, in bytes.
    pub memory: u64,
    /// Bytes on stdout, and again on stderr.
    pub output: u64,
}

/// How memory may be bounded: a cgroup where one can be made, else the watchdog; or the
/// watchdog alone (the tests prove each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryBound {
    #[default]
    CgroupElseWatchdog,
    Watchdog,
}

/// What bounded a run's memory, as messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    CgroupV2,
    CgroupV1,
    Watchdog,
    /// Nothing could, and the operator allowed it (`--unbounded`).
    Unbounded,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bound::CgroupV2 => "cgroup v2",
            Bound::CgroupV1 => "cgroup v1",
            Bound::Watchdog => "the watchdog",
            Bound::Unbounded => "none (--unbounded)",
        })
    }
}

/// Where a stream of the program goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// Kept, and given back in [`Finished`].
    Capture,
    /// Written to this process's stderr as it arrives (cargo's progress), and not kept.
    Forward,
}

/// A stream of the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// Why a run did not end by itself.
#[derive(Debug, thiserror::Error)]
pub enum BoundedError {
    #[error("{}: cannot start it: {source}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{}: not run: nothing on this machine can bound its memory ({why}); --unbounded runs it with its time and output bounds only",
        program.display()
    )]
    NoBound { program: PathBuf, why: String },
    #[error("{}: still running after {}, its time limit: stopped (memory bound: {bound})", program.display(), humantime::format_duration(*limit))]
    Time {
        program: PathBuf,
        limit: Duration,
        bound: Bound,
    },
    #[error(
        "{}: used more than {}, its memory limit: stopped (memory bound: {bound}{})",
        program.display(),
        mib(*limit),
        peak.map(|p| format!("; peak {}", mib(p))).unwrap_or_default()
    )]
    Memory {
        program: PathBuf,
        limit: u64,
        bound: Bound,
        /// The most its tree held, as the bound measured it.
        peak: Option<u64>,
    },
    #[error("{}: printed more than {} on {stream}, its output limit: stopped (memory bound: {bound})", program.display(), mib(*limit))]
    Output {
        program: PathBuf,
        stream: Stream,
        limit: u64,
        bound: Bound,
    },
    #[error("{}: its memory can no longer be watched ({source}): stopped", program.display())]
    Blind { program: PathBuf, source: ProcError },
    #[error("{}: waiting for it: {source}", program.display())]
    Wait {
        program: PathBuf,
        source: std::io::Error,
    },
}

/// `n` bytes in MiB, as limits are given.
pub fn mib(n: u64) -> String {
    format!("{} MiB", n / (1024 * 1024))
}

/// A run that ended by itself.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    /// What it printed on a captured stream (empty for a forwarded one).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// What bounded its memory.
    pub bound: Bound,
    /// The most its tree held, as the bound measured it.
    pub peak: Option<u64>,
}

/// Whether runs that no bound can hold go ahead (`--unbounded`); set once by the command line.
static UNBOUNDED: AtomicBool = AtomicBool::new(false);

/// Lets runs whose memory nothing on this machine can bound go ahead, with their time and
/// output bounds only (the operator's `--unbounded`).
pub fn allow_unbounded(allow: bool) {
    UNBOUNDED.store(allow, Ordering::Relaxed);
}

/// One program to run within [`Limits`].
#[derive(Debug)]
pub struct Bounded {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    dir: Option<PathBuf>,
    limits: Limits,
    memory: MemoryBound,
    isolated: bool,
    unbounded: Option<bool>,
    /// Where processes are read (`/proc`; the tests point it elsewhere).
    proc: PathBuf,
    stdout: Sink,
    stderr: Sink,
}

impl Bounded {
    /// `program`, with no arguments and an empty environment, its output captured.
    pub fn new(program: impl Into<PathBuf>, limits: Limits) -> Bounded {
        Bounded {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            dir: None,
            limits,
            memory: MemoryBound::default(),
            isolated: false,
            unbounded: None,
            proc: PathBuf::from("/proc"),
            stdout: Sink::Capture,
            stderr: Sink::Capture,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Bounded {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Bounded
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Bounded {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Passes on each of `keys` this process has.
    pub fn env_from_parent<'k>(mut self, keys: impl IntoIterator<Item = &'k str>) -> Bounded {
        for key in keys {
            if let Some(value) = std::env::var_os(key) {
                self.env.push((key.into(), value));
            }
        }
        self
    }

    /// Passes on every variable of this process whose name `keep` accepts.
    pub fn env_from_parent_where(mut self, keep: impl Fn(&str) -> bool) -> Bounded {
        for (key, value) in std::env::vars_os() {
            if key.to_str().is_some_and(&keep) {
                self.env.push((key, value));
            }
        }
        self
    }

    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Bounded {
        self.dir = Some(dir.into());
        self
    }

    pub fn stdout(mut self, sink: Sink) -> Bounded {
        self.stdout = sink;
        self
    }

    pub fn stderr(mut self, sink: Sink) -> Bounded {
        self.stderr = sink;
        self
    }

    pub fn memory_bound(mut self, how: MemoryBound) -> Bounded {
        self.memory = how;
        self
    }

    /// Runs it in a PID namespace and a network namespace of its own where this machine
    /// allows ([`isolate`]): no network, and nothing it starts survives it.
    pub fn isolated(mut self) -> Bounded {
        self.isolated = true;
        self
    }

    /// Whether it goes ahead where nothing can bound its memory [default: what
    /// [`allow_unbounded`] set].
    pub fn unbounded(mut self, allow: bool) -> Bounded {
        self.unbounded = Some(allow);
        self
    }

    #[cfg(test)]
    fn proc_at(mut self, proc: impl Into<PathBuf>) -> Bounded {
        self.proc = proc.into();
        self
    }

    /// The program, as messages name it.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Runs it to the end, or stops it at a bound.
    pub fn run(self) -> Result<Finished, BoundedError> {
        run::run(self)
    }
}

/// How this machine isolates runs that ask ([`Bounded::isolated`]), for messages and notes.
pub fn isolation() -> String {
    isolate::Isolation::find().to_string()
}

#[cfg(test)]
mod tests;
