//! Log output: env_logger at `info` unless `RUST_LOG` says otherwise, as text or as one JSON
//! object per line. Structured fields (the access line's method, path, status, bytes,
//! duration_ms, peer) are key-values on the log record: text lines show the message, JSON
//! lines carry each field as its own key.
//!
//! Lines are formatted where they are logged, straight into one pending buffer, which a
//! background thread takes every 20 ms and writes to stderr in one go: a request never waits
//! for a write to stderr nor wakes a thread, and logging a line allocates nothing.
//! [`finish`] writes out what is pending before exit.
//!
//! Access lines, one per request, skip env_logger's general formatting: [`access`] checks the
//! filter and writes the line by hand.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, SystemTime};

use log::kv::{Key, Value, VisitSource};
use serde_json::{Map, Number};

use crate::cli::LogFormat;

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

/// Bytes of lines waiting for the writer thread; beyond this, loggers wait for it (back-pressure
/// rather than unbounded memory when stderr is blocked).
const PENDING_BYTES: usize = 8 * 1024 * 1024;

/// Lines logged and not yet written.
struct Pending {
    lines: Mutex<Vec<u8>>,
    /// Signalled each time the writer takes the lines.
    taken: Condvar,
    /// Held while lines are written, so that [`finish`] and the writer thread write in order.
    output: Mutex<()>,
}

/// Set once the writer thread runs.
static PENDING: OnceLock<&'static Pending> = OnceLock::new();

impl Pending {
    /// Appends one line (`write` writes it, without its newline).
    fn push(&self, write: impl FnOnce(&mut Vec<u8>)) {
        // A poisoned lock only means a logger panicked while writing: the lines stay usable.
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        while lines.len() >= PENDING_BYTES {
            lines = self.taken.wait(lines).unwrap_or_else(|e| e.into_inner());
        }
        write(&mut lines);
        lines.push(b'\n');
    }

    /// Writes out every line pending (`spare`: an empty buffer to leave in their place).
    fn write_out(&self, spare: &mut Vec<u8>) {
        let _order = self.output.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut *lines, spare);
        }
        self.taken.notify_all();
        if !spare.is_empty() {
            let _ = io::stderr().lock().write_all(spare);
            spare.clear();
        }
    }
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// The target access lines are logged under (`RUST_LOG=chartreg::access=off` turns them off).
pub const ACCESS_TARGET: &str = "chartreg::access";

/// One request, as the access line tells it.
#[derive(Debug)]
pub struct Access<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub status: u16,
    pub bytes: u64,
    pub duration: Duration,
    pub peer: Option<IpAddr>,
}

impl Access<'_> {
    /// Milliseconds, rounded to the microsecond as the text line shows them.
    fn duration_ms(&self) -> f64 {
        self.duration.as_secs_f64() * 1000.0
    }
}

#[derive(serde::Serialize)]
struct AccessJson<'a> {
    ts: String,
    level: &'static str,
    target: &'static str,
    message: String,
    method: &'a str,
    path: &'a str,
    status: u16,
    bytes: u64,
    duration_ms: f64,
    peer: Option<IpAddr>,
}

/// The peer address as the access line shows it: nothing when unknown.
struct Peer(Option<IpAddr>);

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(ip) => ip.fmt(f),
            None => Ok(()),
        }
    }
}

thread_local! {
    /// The last second this thread stamped a line with, and its RFC 3339 text without the
    /// `Z` (`2026-11-30T00:25:16`): lines of the same second only add their milliseconds.
    static SECOND: std::cell::RefCell<(u64, String)> = const {
        std::cell::RefCell::new((u64::MAX, String::new()))
    };
}

/// `value` in decimal, zero-padded to `width` digits.
fn push_padded(line: &mut Vec<u8>, value: u64, width: usize) {
    let mut digits = itoa::Buffer::new();
    let text = digits.format(value);
    line.extend(std::iter::repeat_n(b'0', width.saturating_sub(text.len())));
    line.extend_from_slice(text.as_bytes());
}

/// Writes `now` as `humantime::format_rfc3339_millis` does (`2026-11-30T00:25:16.142Z`).
fn write_timestamp(line: &mut Vec<u8>, now: SystemTime) {
    let since = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    SECOND.with_borrow_mut(|(second, text)| {
        if *second != since.as_secs() {
            let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(since.as_secs());
            text.clear();
            // Years past 9999 cannot be written: the line then has no date.
            let _ = write!(text, "{}", humantime::format_rfc3339_seconds(whole));
            text.pop(); // the `Z`
            *second = since.as_secs();
        }
        line.extend_from_slice(text.as_bytes());
    });
    line.push(b'.');
    push_padded(line, since.subsec_millis().into(), 3);
    line.push(b'Z');
}

/// The text access line, written by hand: formatting it through `std::fmt` (a float, an
/// address) cost as much as a fifth of what answering a small request costs.
fn write_access_line(line: &mut Vec<u8>, now: SystemTime, a: &Access<'_>) {
    let mut digits = itoa::Buffer::new();
    line.push(b'[');
    write_timestamp(line, now);
    line.extend_from_slice(b" INFO  ");
    line.extend_from_slice(ACCESS_TARGET.as_bytes());
    line.extend_from_slice(b"] ");
    line.extend_from_slice(a.method.as_bytes());
    line.push(b' ');
    line.extend_from_slice(a.path.as_bytes());
    line.push(b' ');
    line.extend_from_slice(digits.format(a.status).as_bytes());
    line.push(b' ');
    line.extend_from_slice(digits.format(a.bytes).as_bytes());
    line.push(b' ');
    // Milliseconds with three decimals, rounded to the microsecond.
    let micros =
        u64::try_from(a.duration.as_nanos().saturating_add(500) / 1000).unwrap_or(u64::MAX);
    line.extend_from_slice(digits.format(micros / 1000).as_bytes());
    line.push(b'.');
    push_padded(line, micros % 1000, 3);
    line.extend_from_slice(b"ms ");
    match a.peer {
        Some(IpAddr::V4(v4)) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    line.push(b'.');
                }
                line.extend_from_slice(digits.format(octet).as_bytes());
            }
        }
        Some(IpAddr::V6(v6)) => {
            let _ = write!(line, "{v6}");
        }
        None => {}
    }
}

/// The message of an access line (for JSON lines and for a logger chartreg did not set up).
fn access_message(a: &Access<'_>) -> String {
    format!(
        "{} {} {} {} {:.3}ms {}",
        a.method,
        a.path,
        a.status,
        a.bytes,
        a.duration_ms(),
        Peer(a.peer)
    )
}

/// Logs one access line (when the filter lets `chartreg::access` info lines through).
pub fn access(a: &Access<'_>) {
    if !log::log_enabled!(target: ACCESS_TARGET, log::Level::Info) {
        return;
    }
    let Some(pending) = PENDING.get() else {
        log::info!(target: ACCESS_TARGET, "{}", access_message(a));
        return;
    };
    let now = SystemTime::now();
    pending.push(|line| match FORMAT.get() {
        Some(LogFormat::Json) => {
            let json = AccessJson {
                ts: humantime::format_rfc3339_millis(now).to_string(),
                level: "INFO",
                target: ACCESS_TARGET,
                message: access_message(a),
                method: a.method,
                path: a.path,
                status: a.status,
                bytes: a.bytes,
                duration_ms: a.duration_ms(),
                peer: a.peer,
            };
            // Serialising strings and numbers into memory cannot fail.
            let _ = serde_json::to_writer(&mut *line, &json);
        }
        _ => write_access_line(line, now, a),
    });
}

/// How often the writer thread wakes to write what has queued up. It never sleeps on the queue
/// itself: a logger handing over a line would then have to wake it, a context switch per
/// request that cost as much as serving the request (measured with one CPU per server).
const WRITE_INTERVAL: Duration = Duration::from_millis(20);

/// The writer thread: every interval, write out every pending line.
fn write_lines(pending: &'static Pending) {
    let mut spare = Vec::new();
    loop {
        thread::sleep(WRITE_INTERVAL);
        pending.write_out(&mut spare);
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

/// Writes out every line logged so far (call before the process exits).
pub fn finish() {
    if let Some(pending) = PENDING.get() {
        pending.write_out(&mut Vec::new());
    }
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
            taken: Condvar::new(),
            output: Mutex::new(()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_as_humantime_writes_them() {
        let mut line = Vec::new();
        for offset_ms in [0, 1, 999, 1000, 59_999, 86_400_000] {
            let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_000_000_123 + offset_ms);
            line.clear();
            write_timestamp(&mut line, at);
            assert_eq!(
                String::from_utf8_lossy(&line),
                humantime::format_rfc3339_millis(at).to_string()
            );
        }
    }

    #[test]
    fn access_lines_read_as_the_formatted_message() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_000_000_007);
        let peers = [
            None,
            Some("127.0.0.1".parse().unwrap()),
            Some("10.200.3.255".parse().unwrap()),
            Some("::1".parse().unwrap()),
            Some("fd00:1:2::abcd".parse().unwrap()),
        ];
        let durations = [
            0,
            1,
            499,
            501,
            999_999,
            1_000_000,
            12_345_678,
            98_765_432_100,
        ];
        for peer in peers {
            for nanos in durations {
                let a = Access {
                    method: "HEAD",
                    path: "/v2/charts/hello/manifests/1.0.0",
                    status: 404,
                    bytes: 18_446_744_073_709_551_615,
                    duration: Duration::from_nanos(nanos),
                    peer,
                };
                let mut line = Vec::new();
                write_access_line(&mut line, at, &a);
                let expected = format!(
                    "[{} INFO  {ACCESS_TARGET}] {}",
                    humantime::format_rfc3339_millis(at),
                    access_message(&a)
                );
                assert_eq!(String::from_utf8_lossy(&line), expected);
            }
        }
    }
}
