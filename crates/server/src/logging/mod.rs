//! Log output: env_logger at `info` unless `RUST_LOG` says otherwise, as text or as one JSON
//! object per line. Structured fields (the access line's method, path, status, bytes,
//! duration_ms, peer) are key-values on the log record: text lines show the message, JSON
//! lines carry each field as its own key.
//!
//! Lines are formatted where they are logged, straight into one pending buffer, which a
//! background thread takes every 20 ms and writes to stderr in one go: a request never waits
//! for a write to stderr nor wakes a thread, and logging a line allocates nothing.
//!
//! Serving never depends on stderr being read. While the writer is blocked (a pipe or FIFO
//! nobody drains: a node's containerd restarting, a log shipper stalled), lines pile up to
//! [`PENDING_BYTES`]; past that, each further line is dropped and counted
//! (`chartreg_log_lines_dropped_total`, [`dropped`]), and once a write goes through again one
//! line says how many were lost. [`finish`] waits for what is pending to be written before exit,
//! at most [`FINISH_BOUND`].
//!
//! Access lines, one per request, skip env_logger's general formatting (module `access`).

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use log::kv::{Key, Value, VisitSource};
use prometheus_client::metrics::counter::Counter;
use serde_json::{Map, Number};

mod access;

pub use access::{ACCESS_TARGET, Access, access};

/// How log lines are written (the `--log-format` flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// actix-server's own start-up lines are noise next to chartreg's summary line.
const DEFAULT_FILTER: &str = "info,actix_server=warn";

struct Fields<'a>(&'a mut Map<String, serde_json::Value>);

impl<'kvs> VisitSource<'kvs> for Fields<'_> {
    fn visit_pair(&mut self, key: Key<'kvs>, value: Value<'kvs>) -> Result<(), log::kv::Error> {
        let json = if let Some(n) = value.to_u64() {
            serde_json::Value::from(n)
        } else if let Some(n) = value.to_i64() {
            serde_json::Value::from(n)
        } else if let Some(n) = value.to_f64().and_then(Number::from_f64) {
            serde_json::Value::Number(n)
        } else if let Some(b) = value.to_bool() {
            serde_json::Value::Bool(b)
        } else {
            serde_json::Value::String(value.to_string())
        };
        self.0.insert(key.as_str().to_owned(), json);
        Ok(())
    }
}

/// Bytes of lines waiting for the writer thread; past this, lines are dropped (and counted)
/// rather than held, so memory stays bounded and no logger ever waits for stderr.
const PENDING_BYTES: usize = 8 * 1024 * 1024;

/// The longest [`finish`] waits for pending lines to be written: past it the process exits
/// without them, as a blocked stderr would otherwise hold it past its grace period.
pub const FINISH_BOUND: Duration = Duration::from_secs(2);

/// Lines logged and not yet written.
struct Pending {
    lines: Mutex<Vec<u8>>,
    /// Lines dropped since the last report of them, and in all.
    dropped: AtomicU64,
    /// How many writes the writer thread has finished, and a signal at each.
    writes: Mutex<u64>,
    written: Condvar,
}

/// Set once the writer thread runs.
static PENDING: OnceLock<&'static Pending> = OnceLock::new();

/// Lines dropped because the log output was not being read (`chartreg_log_lines_dropped_total`).
pub fn dropped() -> &'static Counter {
    static DROPPED: OnceLock<Counter> = OnceLock::new();
    DROPPED.get_or_init(Counter::default)
}

impl Pending {
    /// Appends one line (`write` writes it, without its newline), or drops it when
    /// [`PENDING_BYTES`] are already waiting.
    fn push(&self, write: impl FnOnce(&mut Vec<u8>)) {
        // A poisoned lock only means a logger panicked while writing: the lines stay usable.
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() >= PENDING_BYTES {
            drop(lines);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            dropped().inc();
            return;
        }
        write(&mut lines);
        lines.push(b'\n');
    }

    /// Writes out every line pending (`spare`: an empty buffer to leave in their place). Only
    /// the writer thread calls it, so lines are written in order.
    /// `lost`: lines dropped before the last write went through and not yet reported.
    fn write_out(&self, spare: &mut Vec<u8>, lost: &mut u64) {
        {
            let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut *lines, spare);
        }
        // Reported once the pending lines were taken: the buffer has room for the report
        // again (logged while it was full, the report itself would be dropped).
        if *lost > 0 {
            log::warn!(
                "{lost} log lines were dropped: the log output was not being read, and {} MiB of lines were waiting",
                PENDING_BYTES >> 20
            );
            *lost = 0;
        }
        if !spare.is_empty() {
            let _ = io::stderr().lock().write_all(spare);
            spare.clear();
        }
        // The write went through: what was lost while it could not is reported next time.
        *lost += self.dropped.swap(0, Ordering::Relaxed);
        let mut writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        *writes += 1;
        self.written.notify_all();
    }

    /// Waits until every line pushed before the call is written, at most `bound`; whether
    /// they were.
    fn wait_written(&self, bound: Duration) -> bool {
        let writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        // The write under way may have taken its lines before this call's; the next one takes
        // every line pushed by now.
        let target = *writes + 2;
        let (writes, _) = self
            .written
            .wait_timeout_while(writes, bound, |writes| *writes < target)
            .unwrap_or_else(|e| e.into_inner());
        *writes >= target
    }
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// How often the writer thread wakes to write what has queued up. It never sleeps on the queue
/// itself: a logger handing over a line would then have to wake it, a context switch per
/// request that cost as much as serving the request (measured with one CPU per server).
const WRITE_INTERVAL: Duration = Duration::from_millis(20);

/// The writer thread: every interval, write out every pending line.
fn write_lines(pending: &'static Pending) {
    let mut spare = Vec::new();
    let mut lost = 0;
    loop {
        thread::sleep(WRITE_INTERVAL);
        pending.write_out(&mut spare, &mut lost);
    }
}

/// What env_logger writes each formatted record into.
struct Background(&'static Pending);

impl Write for Background {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // env_logger hands over whole records, newline included.
        let record = buf.strip_suffix(b"\n").unwrap_or(buf);
        self.0.push(|lines| lines.extend_from_slice(record));
        Ok(buf.len())
    }

    /// env_logger flushes after every record; the writer thread writes on its own.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Waits for every line logged so far to be written, at most [`FINISH_BOUND`] (call before
/// the process exits); whether they were.
pub fn finish() -> bool {
    PENDING
        .get()
        .is_none_or(|pending| pending.wait_written(FINISH_BOUND))
}

/// Sets up the logger (once; a host program's logger is kept).
pub fn init(format: LogFormat) {
    let mut builder =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(DEFAULT_FILTER));
    // The formats below write no colours; `Always` keeps env_logger from scanning every line
    // for escape codes to strip.
    builder.write_style(env_logger::WriteStyle::Always);
    let _ = FORMAT.set(format);
    if PENDING.get().is_none() {
        // Lives as long as the process, like the thread that writes it out.
        let pending: &'static Pending = Box::leak(Box::new(Pending {
            lines: Mutex::new(Vec::with_capacity(64 * 1024)),
            dropped: AtomicU64::new(0),
            writes: Mutex::new(0),
            written: Condvar::new(),
        }));
        let spawned = thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_lines(pending));
        if spawned.is_ok() && PENDING.set(pending).is_ok() {
            builder.target(env_logger::Target::Pipe(Box::new(Background(pending))));
        }
    }
    match format {
        LogFormat::Text => {
            builder.format(|buf, record| {
                let ts = buf.timestamp_millis();
                writeln!(
                    buf,
                    "[{ts} {:5} {}] {}",
                    record.level(),
                    record.target(),
                    record.args()
                )
            });
        }
        LogFormat::Json => {
            builder.format(|buf, record| {
                let mut line = Map::new();
                line.insert("ts".into(), buf.timestamp_millis().to_string().into());
                line.insert("level".into(), record.level().as_str().into());
                line.insert("target".into(), record.target().into());
                line.insert("message".into(), record.args().to_string().into());
                let _ = record.key_values().visit(&mut Fields(&mut line));
                serde_json::to_writer(&mut *buf, &line)?;
                writeln!(buf)
            });
        }
    }
    let _ = builder.try_init();
}
