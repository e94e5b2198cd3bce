//! Namespaces of a run's own, for a run that asks to be isolated ([`super::Bounded::isolated`]):
//! a PID namespace, whose init is the run's program, so that when it ends or is killed the
//! kernel kills every process left in it, `setsid()` or not; and a network namespace holding
//! only a loopback interface that is down, so that the program reaches no network.
//!
//! Made the first way this machine allows ([`Isolation::find`], once per process):
//! 1. [`Isolation::Kernel`], with `CAP_SYS_ADMIN` (root): a thread of its own calls
//!    `unshare(CLONE_NEWPID | CLONE_NEWNET)` and starts the program, which is born in both
//!    (namespaces are per thread, and the thread is used for nothing else).
//! 2. [`Isolation::UserNamespace`], where unprivileged user namespaces are allowed: util-linux's
//!    `unshare --user --map-root-user --pid --fork --kill-child --net` starts it. (A user
//!    namespace cannot be made by a process with threads, as this one is, and a child cannot
//!    be changed between fork and exec without unsafe code.)
//! 3. [`Isolation::None`]: the program runs in this process's namespaces, with the network;
//!    its tree is tracked instead ([`super::procs`]).

use std::path::Path;
use std::process::{Child, Command};
use std::sync::OnceLock;

use rustix::thread::UnshareFlags;

/// util-linux's `unshare`, where distributions install it.
const UNSHARE: [&str; 2] = ["/usr/bin/unshare", "/bin/unshare"];

/// Its flags: a user namespace (this user as root in it, no more), a PID namespace whose init
/// is the program (`--fork`), killed when `unshare` dies (`--kill-child`), no network.
const UNSHARE_FLAGS: [&str; 7] = [
    "--user",
    "--map-root-user",
    "--pid",
    "--fork",
    "--kill-child",
    "--net",
    "--",
];

/// How this machine isolates a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    Kernel,
    UserNamespace(&'static Path),
    /// Why neither could be had.
    None(String),
}

impl Isolation {
    /// What this machine allows, found once (a namespace made and dropped, or `unshare` run).
    pub fn find() -> &'static Isolation {
        static FOUND: OnceLock<Isolation> = OnceLock::new();
        FOUND.get_or_init(|| {
            let kernel = match std::thread::spawn(unshare_here).join() {
                Ok(Ok(())) => return Isolation::Kernel,
                Ok(Err(e)) => format!("unshare(CLONE_NEWPID | CLONE_NEWNET): {e}"),
                Err(_) => "unshare(CLONE_NEWPID | CLONE_NEWNET): the thread panicked".to_owned(),
            };
            match user_namespace() {
                Ok(unshare) => Isolation::UserNamespace(unshare),
                Err(why) => Isolation::None(format!("{kernel}; {why}")),
            }
        })
    }

    /// Whether the program gets namespaces of its own.
    pub fn holds(&self) -> bool {
        !matches!(self, Isolation::None(_))
    }

    /// The command line that starts `argv` isolated this way (the program first).
    pub fn argv(&self, argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
        match self {
            Isolation::UserNamespace(unshare) => std::iter::once(unshare.as_os_str().to_owned())
                .chain(UNSHARE_FLAGS.iter().map(Into::into))
                .chain(argv)
                .collect(),
            Isolation::Kernel | Isolation::None(_) => argv,
        }
    }

    /// Starts `command` isolated this way (its command line made by [`Isolation::argv`]).
    pub fn spawn(&self, mut command: Command) -> std::io::Result<Child> {
        match self {
            Isolation::Kernel => std::thread::spawn(move || {
                unshare_here()?;
                command.spawn()
            })
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the starting thread panicked"))),
            Isolation::UserNamespace(_) | Isolation::None(_) => command.spawn(),
        }
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Isolation::Kernel => f.write_str("PID and network namespaces"),
            Isolation::UserNamespace(_) => {
                f.write_str("PID and network namespaces in a user namespace")
            }
            Isolation::None(why) => write!(f, "no namespaces ({why})"),
        }
    }
}

/// This thread's children are born in a new PID namespace and a new network namespace.
fn unshare_here() -> std::io::Result<()> {
    // Deprecated for the flags that unshare what threads share (files, the file system); the
    // namespaces asked here are the calling thread's alone, which is used for nothing after.
    #[allow(deprecated)]
    rustix::thread::unshare(UnshareFlags::NEWPID | UnshareFlags::NEWNET)?;
    Ok(())
}

/// Why `unshare` makes no user namespace here.
#[derive(Debug, thiserror::Error)]
enum UserNamespaceError {
    #[error("no util-linux unshare in /usr/bin or /bin")]
    NoUnshare,
    #[error("{}: {source}", unshare.display())]
    Run {
        unshare: &'static Path,
        source: Box<super::BoundedError>,
    },
    #[error("{} {}: {stderr} ({status})", unshare.display(), UNSHARE_FLAGS.join(" "))]
    Refused {
        unshare: &'static Path,
        stderr: String,
        status: std::process::ExitStatus,
    },
}

/// `unshare`, if it makes a user namespace here.
fn user_namespace() -> Result<&'static Path, UserNamespaceError> {
    let Some(unshare) = UNSHARE.iter().map(Path::new).find(|p| p.is_file()) else {
        return Err(UserNamespaceError::NoUnshare);
    };
    let limits = super::Limits {
        time: std::time::Duration::from_secs(10),
        memory: 64 << 20,
        output: 64 << 10,
    };
    let done = super::Bounded::new(unshare, limits)
        .args(UNSHARE_FLAGS)
        .arg("/bin/true")
        .run()
        .map_err(|e| UserNamespaceError::Run {
            unshare,
            source: Box::new(e),
        })?;
    if done.status.success() {
        Ok(unshare)
    } else {
        Err(UserNamespaceError::Refused {
            unshare,
            stderr: String::from_utf8_lossy(&done.stderr).trim().to_owned(),
            status: done.status,
        })
    }
}
