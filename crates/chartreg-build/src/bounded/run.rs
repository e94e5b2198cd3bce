//! One run, start to end ([`run`]):
//! 1. The memory bound is chosen before anything starts: a cgroup of the run's own, else the
//!    watchdog if `/proc` can be read, else none, and then the run is refused unless the
//!    operator allowed it.
//! 2. The command line ([`start`]): the program (found on the run's `PATH`), in its namespaces
//!    when isolated, behind the gate when it has a cgroup, so that it is in its cgroup before it
//!    runs and nothing it forks is outside.
//! 3. It starts listed among the runs' programs ([`procs::ROOTS`]), is moved into its cgroup
//!    (or, if that fails, watched), and the gate opens.
//! 4. Its streams are read, and each tick its time and (watchdog) memory are looked at; past a
//!    limit, its whole tree is killed and the run gives the error that says why.
//! 5. When it ends, whatever it left running is killed the same way.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Instant;

use rustix::process::{Pid, PidfdFlags, Signal, kill_process_group, pidfd_open, pidfd_send_signal};

use super::cgroup::{RunCgroup, Version};
use super::isolate::Isolation;
use super::output::{Event, reader};
use super::procs::{self, ROOTS, Tree};
use super::start;
use super::watch::{self, Watchdog};
use super::{Bound, Bounded, BoundedError, Finished, MemoryBound, Stream, UNBOUNDED};

/// How often the run is looked at: its memory (watchdog) and its time.
const TICK: std::time::Duration = std::time::Duration::from_millis(20);

/// How long what the program printed is waited for once it has exited or been stopped (a
/// process that left the group may still hold the pipe).
const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// How many looks in a row a cgroup run's memory must be above its limit to be stopped (a
/// moment above it is page cache the kernel is reclaiming).
const SUSTAINED: u32 = 5;

/// A run that does not ask to be isolated.
static NOT_ASKED: Isolation = Isolation::None(String::new());

/// The started program: killed through a pidfd where the kernel has them (never another
/// process that took its pid after it was waited for).
struct Program {
    pid: u32,
    fd: Option<OwnedFd>,
}

impl Program {
    fn kill(&self) {
        match &self.fd {
            Some(fd) => {
                let _ = pidfd_send_signal(fd, Signal::KILL);
            }
            // Only while it has not been waited for: after, its pid may be another's.
            None => {
                let roots = procs::lock(&ROOTS);
                if roots.contains(&self.pid)
                    && let Some(pid) = Pid::from_raw(self.pid.try_into().unwrap_or(0))
                {
                    let _ = rustix::process::kill_process(pid, Signal::KILL);
                }
            }
        }
    }

    /// SIGKILL to its process group, as far as it has not left it.
    fn kill_group(&self) {
        if let Some(pid) = Pid::from_raw(self.pid.try_into().unwrap_or(0)) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}

/// What holds the run's memory and tree (dropped in this order: each kills what is left).
struct Hold {
    group: Option<RunCgroup>,
    watchdog: Option<Watchdog>,
    /// This run's turn among those whose orphans come to this process, until its tree is dead.
    _turn: Option<std::sync::MutexGuard<'static, ()>>,
}

impl Hold {
    /// Kills the run's whole tree.
    fn kill(&mut self, program: &Program) {
        program.kill_group();
        // The init of its PID namespace, or `unshare` whose death kills it: the namespace goes.
        program.kill();
        if let Some(group) = &self.group {
            for pid in group.kill_all() {
                procs::reap(pid);
            }
        }
        if let Some(watchdog) = &mut self.watchdog {
            watchdog.kill_all();
        }
    }

    fn peak(&self) -> Option<u64> {
        match (&self.group, &self.watchdog) {
            (Some(group), _) => group.peak(),
            (None, Some(watchdog)) => Some(watchdog.peak()),
            (None, None) => None,
        }
    }
}

/// Runs `run` to its end, or stops it at a bound (the steps above).
pub fn run(run: Bounded) -> Result<Finished, BoundedError> {
    let Bounded {
        program,
        args,
        env,
        dir,
        limits,
        memory,
        isolated,
        unbounded,
        proc,
        stdout,
        stderr,
    } = run;
    let allow_unbounded = unbounded.unwrap_or_else(|| UNBOUNDED.load(Ordering::Relaxed));
    let spawn_error = |source| BoundedError::Spawn {
        program: program.clone(),
        source,
    };
    let found = start::resolve(&program, &env, dir.as_deref()).map_err(spawn_error)?;

    // 1. The memory bound.
    let mut why_not = Vec::new();
    let mut group = match memory {
        MemoryBound::CgroupElseWatchdog => match RunCgroup::create(limits.memory) {
            Ok(group) => Some(group),
            Err(why) => {
                why_not.push(format!("no memory cgroup ({why})"));
                None
            }
        },
        MemoryBound::Watchdog => None,
    };
    let watchable = |why_not: &mut Vec<String>| match watch::readable(&proc) {
        Ok(()) => true,
        Err(e) => {
            why_not.push(format!("no watchdog ({e})"));
            false
        }
    };
    if group.is_none() && !watchable(&mut why_not) && !allow_unbounded {
        return Err(BoundedError::NoBound {
            program,
            why: why_not.join("; "),
        });
    }

    // 2. The command line.
    let isolation = if isolated {
        Isolation::find()
    } else {
        &NOT_ASKED
    };
    let mut argv = isolation.argv(
        std::iter::once(found.into_os_string())
            .chain(args)
            .collect(),
    );
    let gated = group.is_some() && start::gate(&mut argv, &env);
    let Some((first, rest)) = argv.split_first() else {
        return Err(spawn_error(std::io::Error::other("no command line")));
    };
    let mut command = Command::new(first);
    command
        .args(rest)
        .env_clear()
        .envs(env)
        .stdin(if gated { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = &dir {
        command.current_dir(dir);
    }

    // 3. Started, listed, moved in (else watched), let go. A run whose orphans come to this
    // process takes its turn first.
    let mut turn = (group.is_none() && !isolation.holds()).then(|| procs::lock(&procs::TRACKING));
    let mut child = {
        let mut roots = procs::lock(&ROOTS);
        let child = isolation.spawn(command).map_err(spawn_error)?;
        roots.push(child.id());
        child
    };
    let started = Instant::now();
    let me = Program {
        pid: child.id(),
        fd: pidfd_open(Pid::from_child(&child), PidfdFlags::empty()).ok(),
    };
    if let Some(g) = &group
        && let Err(e) = g.add(me.pid)
    {
        why_not.push(format!("cannot move it into its cgroup: {e}"));
        group = None;
        // Still behind its gate: it forked nothing yet.
        if turn.is_none() && !isolation.holds() {
            turn = Some(procs::lock(&procs::TRACKING));
        }
    }
    let bound = match &group {
        Some(g) if g.version() == Version::V2 => Bound::CgroupV2,
        Some(_) => Bound::CgroupV1,
        None if watch::readable(&proc).is_ok() => Bound::Watchdog,
        None if allow_unbounded => Bound::Unbounded,
        None => {
            // Still behind its gate, or never let go: it ran nothing.
            me.kill_group();
            me.kill();
            let _ = child.wait();
            procs::lock(&ROOTS).retain(|p| *p != me.pid);
            watchable(&mut why_not);
            return Err(BoundedError::NoBound {
                program,
                why: why_not.join("; "),
            });
        }
    };
    let watchdog = (bound == Bound::Watchdog).then(|| {
        // Without a namespace of its own, its orphans come to this process.
        let adopts = turn.is_some() && procs::adopt_orphans();
        Watchdog::new(&proc, Tree::new(me.pid, adopts))
    });
    let mut hold = Hold {
        group,
        watchdog,
        _turn: turn,
    };
    if let Some(mut gate) = child.stdin.take() {
        let _ = gate.write_all(b"go\n");
    }

    // 4. Watched until it ends or passes a limit.
    let (events, arrived) = mpsc::channel();
    let readers = [
        child
            .stdout
            .take()
            .map(|pipe| reader(pipe, Stream::Stdout, stdout, limits.output, events.clone())),
        child
            .stderr
            .take()
            .map(|pipe| reader(pipe, Stream::Stderr, stderr, limits.output, events.clone())),
    ];
    {
        let events = events.clone();
        let pid = me.pid;
        std::thread::spawn(move || {
            let status = child.wait();
            procs::lock(&ROOTS).retain(|p| *p != pid);
            let _ = events.send(Event::Exited(status));
        });
    }
    drop(events);

    let mut stopped: Option<BoundedError> = None;
    let mut over = 0;
    let status = loop {
        let why = match arrived.recv_timeout(TICK) {
            Ok(Event::Exited(status)) => break status,
            Ok(Event::Overflow(stream)) => Some(BoundedError::Output {
                program: program.clone(),
                stream,
                limit: limits.output,
                bound,
            }),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(std::io::Error::other("the waiting thread ended"));
            }
        };
        let why = why.or_else(|| {
            (started.elapsed() > limits.time).then(|| BoundedError::Time {
                program: program.clone(),
                limit: limits.time,
                bound,
            })
        });
        // cgroup v2: above memory.high (the limit) for a while, the kernel's reclaim could
        // not bring it back.
        let why = why.or_else(|| {
            let group = hold.group.as_ref()?;
            over = if group.over(limits.memory).is_some() {
                over + 1
            } else {
                0
            };
            (over >= SUSTAINED).then(|| BoundedError::Memory {
                program: program.clone(),
                limit: limits.memory,
                bound,
                peak: group.peak(),
            })
        });
        let why = why.or_else(|| {
            let watchdog = hold.watchdog.as_mut()?;
            match watchdog.anonymous_bytes() {
                Ok(now) if now > limits.memory => Some(BoundedError::Memory {
                    program: program.clone(),
                    limit: limits.memory,
                    bound,
                    peak: Some(watchdog.peak()),
                }),
                Ok(_) => None,
                Err(source) => Some(BoundedError::Blind {
                    program: program.clone(),
                    source,
                }),
            }
        });
        if let Some(why) = why
            && stopped.is_none()
        {
            hold.kill(&me);
            stopped = Some(why);
        }
    };

    // 5. Whatever it started and left behind goes with it.
    me.kill_group();
    let oom = hold.group.as_ref().is_some_and(RunCgroup::oom_killed);
    let peak = hold.peak();
    hold.kill(&me);
    drop(hold);
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
            bound,
            peak,
        });
    }
    Ok(Finished {
        status,
        stdout: out,
        stderr: err,
        bound,
        peak,
    })
}
