//! Every program the build tool starts (Helm, cargo and the toolchain, the server binary it
//! built) runs through [`Bounded`]: nothing a chart or an upstream list holds can make such a run
//! endless, unbounded in memory, or flood the terminal, and none inherits this process's
//! environment.
//!
//! 1. The command is built with an empty environment; the caller names each variable it passes
//!    ([`Bounded::env`], [`Bounded::env_from_parent`]). Stdin is `/dev/null`. The program gets
//!    a process group of its own, so that stopping it stops whatever it started.
//! 2. Memory: a memory cgroup of its own with the limit, where this machine lets one be made
//!    (`cgroup`: cgroup v2, or v1's memory controller, as root or with a delegated tree); the
//!    kernel then stops the group at the limit. Where none can be made, a watchdog sums the
//!    anonymous resident memory of the process group ([`watch`]) and stops it past the limit.
//!    (`RLIMIT_AS` does not suit Go programs such as Helm: they reserve far more address space
//!    than they use.)
//! 3. Output: stdout and stderr are read by threads of their own, captured, or forwarded to this
//!    process's stderr as they arrive ([`Sink`]); past the limit on either, the run is stopped.
//! 4. Time: past the limit, the run is stopped.
//!
//! "Stopped" is SIGKILL to the process group (and to every process left in the cgroup), then a
//! [`BoundedError`] saying which bound it passed. A run that ends by itself gives its status and
//! what it printed ([`Finished`]); judging the status is the caller's.

mod cgroup;
mod watch;

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

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

/// How memory is bounded: a cgroup where one can be made, else the watchdog; or the watchdog
/// alone (the tests prove each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryBound {
    #[default]
    CgroupElseWatchdog,
    Watchdog,
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
    #[error("{}: still running after {}, its time limit: stopped", program.display(), humantime::format_duration(*limit))]
    Time { program: PathBuf, limit: Duration },
    #[error("{}: used more than {}, its memory limit: stopped", program.display(), mib(*limit))]
    Memory { program: PathBuf, limit: u64 },
    #[error("{}: printed more than {} on {stream}, its output limit: stopped", program.display(), mib(*limit))]
    Output {
        program: PathBuf,
        stream: Stream,
        limit: u64,
    },
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
    stdout: Sink,
    stderr: Sink,
}

/// How often the run is looked at: its memory (watchdog) and its time.
const TICK: Duration = Duration::from_millis(20);

/// How long what the program printed is waited for once it has exited or been stopped (a
/// process that left the group may still hold the pipe).
const DRAIN: Duration = Duration::from_secs(2);

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

    /// The program, as messages name it.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Runs it to the end, or stops it at a bound.
    pub fn run(self) -> Result<Finished, BoundedError> {
        let Bounded {
            program,
            args,
            env,
            dir,
            limits,
            memory,
            stdout,
            stderr,
        } = self;
        let mut command = Command::new(&program);
        command
            .args(&args)
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(dir) = &dir {
            command.current_dir(dir);
        }
        // Made before the program starts, so that it is moved in before it reads any input.
        let group = match memory {
            MemoryBound::CgroupElseWatchdog => cgroup::MemoryCgroup::create(limits.memory),
            MemoryBound::Watchdog => None,
        };
        let mut child = command.spawn().map_err(|source| BoundedError::Spawn {
            program: program.clone(),
            source,
        })?;
        let pid = Pid::from_child(&child);
        let mut watchdog = None;
        match &group {
            Some(group) if group.add(child.id()).is_ok() => {}
            _ => watchdog = Some(watch::Watchdog::new(child.id())),
        }
        let (events, arrived) = mpsc::channel();
        let readers =
            [
                child.stdout.take().map(|pipe| {
                    reader(pipe, Stream::Stdout, stdout, limits.output, events.clone())
                }),
                child.stderr.take().map(|pipe| {
                    reader(pipe, Stream::Stderr, stderr, limits.output, events.clone())
                }),
            ];
        {
            let events = events.clone();
            std::thread::spawn(move || {
                let _ = events.send(Event::Exited(child.wait()));
            });
        }
        drop(events);

        let started = Instant::now();
        let mut stopped: Option<BoundedError> = None;
        let stop = |why: BoundedError, stopped: &mut Option<BoundedError>| {
            if stopped.is_none() {
                let _ = kill_process_group(pid, Signal::KILL);
                if let Some(group) = &group {
                    group.kill_all();
                }
                *stopped = Some(why);
            }
        };
        let status = loop {
            match arrived.recv_timeout(TICK) {
                Ok(Event::Exited(status)) => break status,
                Ok(Event::Overflow(stream)) => stop(
                    BoundedError::Output {
                        program: program.clone(),
                        stream,
                        limit: limits.output,
                    },
                    &mut stopped,
                ),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(std::io::Error::other("the waiting thread ended"));
                }
            }
            if started.elapsed() > limits.time {
                stop(
                    BoundedError::Time {
                        program: program.clone(),
                        limit: limits.time,
                    },
                    &mut stopped,
                );
            }
            if let Some(watchdog) = &mut watchdog
                && stopped.is_none()
                && watchdog.anonymous_bytes() > limits.memory
            {
                stop(
                    BoundedError::Memory {
                        program: program.clone(),
                        limit: limits.memory,
                    },
                    &mut stopped,
                );
            }
        };
        // Whatever it started and left behind goes with it.
        let _ = kill_process_group(pid, Signal::KILL);
        let oom = group.as_ref().is_some_and(cgroup::MemoryCgroup::oom_killed);
        drop(group);
        let [out, err] = readers.map(|r| r.map(|r| r.join_within(DRAIN)).unwrap_or_default());
        if let Some(why) = stopped {
            return Err(why);
        }
        let status = status.map_err(|source| BoundedError::Wait {
            program: program.clone(),
            source,
        })?;
        if oom {
            return Err(BoundedError::Memory {
                program,
                limit: limits.memory,
            });
        }
        Ok(Finished {
            status,
            stdout: out,
            stderr: err,
        })
    }
}

enum Event {
    Exited(std::io::Result<ExitStatus>),
    Overflow(Stream),
}

/// A thread reading one stream.
struct Reader {
    handle: JoinHandle<Vec<u8>>,
    done: mpsc::Receiver<()>,
}

impl Reader {
    /// What it kept, once the stream ends, or what is there after `wait` (the thread is left
    /// to end with the pipe).
    fn join_within(self, wait: Duration) -> Vec<u8> {
        match self.done.recv_timeout(wait) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.handle.join().unwrap_or_default()
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Vec::new(),
        }
    }
}

fn reader(
    mut pipe: impl Read + Send + 'static,
    stream: Stream,
    sink: Sink,
    limit: u64,
    events: mpsc::Sender<Event>,
) -> Reader {
    let (finished, done) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut total: u64 = 0;
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            total = total.saturating_add(n as u64);
            if total > limit {
                let _ = events.send(Event::Overflow(stream));
                break;
            }
            let chunk = buf.get(..n).unwrap_or_default();
            match sink {
                Sink::Capture => kept.extend_from_slice(chunk),
                Sink::Forward => {
                    let _ = std::io::stderr().write_all(chunk);
                }
            }
        }
        let _ = finished.send(());
        kept
    });
    Reader { handle, done }
}

#[cfg(test)]
mod tests;
