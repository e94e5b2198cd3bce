//! SIGINT and SIGTERM, taken as a request to stop ([`watch`]): a thread waits for either and
//! raises a flag that runs look at ([`check`], before each file they link and before their
//! commit point) or wait on ([`asked`], beside an async run). A run that sees it stops with
//! [`Stopped`], having changed nothing; the command line exits 130 (SIGINT) or 143 (SIGTERM).
//! A second signal ends the process at once, as an interrupted shell expects: what was staged
//! is then removed by the next run.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that asked to stop (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Woken when a stop is asked for.
static ASKED: OnceLock<tokio::sync::Notify> = OnceLock::new();

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// A run that stopped because a signal asked it to, before its commit point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stopped by {}: nothing was changed", self.name())]
pub struct Stopped {
    pub signal: i32,
}

impl Stopped {
    pub fn name(&self) -> &'static str {
        match self.signal {
            SIGINT => "SIGINT",
            SIGTERM => "SIGTERM",
            _ => "a signal",
        }
    }

    /// The exit code a shell gives a process this signal ended (128 + the signal).
    pub fn exit_code(&self) -> u8 {
        u8::try_from(128 + self.signal).unwrap_or(1)
    }
}

fn notify() -> &'static tokio::sync::Notify {
    ASKED.get_or_init(tokio::sync::Notify::new)
}

/// Takes SIGINT and SIGTERM as a request to stop, from now on (see the module doc). Without
/// it (or before it is in place) a signal ends the process as a kill does, which the runs
/// survive as well.
pub fn watch() {
    static STARTED: OnceLock<()> = OnceLock::new();
    if STARTED.set(()).is_err() {
        return;
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                let _ = ready_tx.send(());
                return;
            };
            runtime.block_on(async move {
                use tokio::signal::unix::{SignalKind, signal};
                let (Ok(mut int), Ok(mut term)) = (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                ) else {
                    let _ = ready_tx.send(());
                    return;
                };
                let _ = ready_tx.send(());
                loop {
                    let got = tokio::select! {
                        _ = int.recv() => SIGINT,
                        _ = term.recv() => SIGTERM,
                    };
                    if SIGNAL
                        .compare_exchange(0, got, Ordering::SeqCst, Ordering::SeqCst)
                        .is_err()
                    {
                        // Asked twice: at once.
                        std::process::exit(128 + got);
                    }
                    notify().notify_waiters();
                }
            });
        });
    if spawned.is_ok() {
        // Once it returns, the handlers are in place.
        let _ = ready_rx.recv();
    }
}

/// `Err` once a stop was asked for.
pub fn check() -> Result<(), Stopped> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => Ok(()),
        signal => Err(Stopped { signal }),
    }
}

/// Resolves when a stop is asked for (never, without [`watch`]).
pub async fn asked() -> Stopped {
    loop {
        let woken = notify().notified();
        tokio::pin!(woken);
        // Registered before the flag is read: a stop asked in between still wakes it.
        woken.as_mut().enable();
        if let Err(stopped) = check() {
            return stopped;
        }
        woken.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_a_shells() {
        assert_eq!(Stopped { signal: SIGINT }.exit_code(), 130);
        assert_eq!(Stopped { signal: SIGTERM }.exit_code(), 143);
        assert_eq!(
            Stopped { signal: SIGINT }.to_string(),
            "stopped by SIGINT: nothing was changed"
        );
    }
}
