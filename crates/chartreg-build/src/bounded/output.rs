//! The threads that read a run's stdout and stderr: each keeps what it reads or forwards it to
//! this process's stderr, and says when its stream passes the output limit.

use std::io::{Read, Write};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::{Sink, Stream};

/// What the run's threads tell the loop that watches it.
pub enum Event {
    Exited(std::io::Result<std::process::ExitStatus>),
    Overflow(Stream),
}

/// A thread reading one stream.
pub struct Reader {
    handle: JoinHandle<Vec<u8>>,
    done: mpsc::Receiver<()>,
}

impl Reader {
    /// What it kept, once the stream ends, or nothing if it has not ended after `wait` (the
    /// thread is left to end with the pipe).
    pub fn join_within(self, wait: Duration) -> Vec<u8> {
        match self.done.recv_timeout(wait) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.handle.join().unwrap_or_default()
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Vec::new(),
        }
    }
}

/// Reads `pipe` into `sink` until it ends, or until more than `limit` bytes came
/// ([`Event::Overflow`] on `events`).
pub fn reader(
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
