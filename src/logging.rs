//! Log output: env_logger at `info` unless `RUST_LOG` says otherwise, as text or as one JSON
//! object per line. Structured fields (the access line's method, path, status, bytes,
//! duration_ms, peer) are key-values on the log record: text lines show the message, JSON
//! lines carry each field as its own key.
//!
//! Lines are formatted where they are logged, then handed to a background thread that writes
//! them to stderr in batches (flushing whenever it has nothing more to write), so a request
//! never waits for a write to stderr. [`finish`] writes out what is pending before exit.

use std::io::{self, BufWriter, Write};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

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

/// Lines waiting for the writer thread; beyond this, loggers wait (back-pressure rather than
/// unbounded memory when stderr is blocked).
const PENDING_LINES: usize = 64 * 1024;

enum Message {
    Line(Vec<u8>),
    /// Write out everything before this, then answer.
    Drain(SyncSender<()>),
}

static WRITER: OnceLock<SyncSender<Message>> = OnceLock::new();

/// The writer thread: append lines to a buffer, flush when the queue runs dry.
fn write_lines(queue: Receiver<Message>) {
    let mut out = BufWriter::with_capacity(64 * 1024, io::stderr());
    let handle = |message: Message, out: &mut BufWriter<io::Stderr>| match message {
        Message::Line(line) => {
            let _ = out.write_all(&line);
        }
        Message::Drain(done) => {
            let _ = out.flush();
            let _ = done.send(());
        }
    };
    while let Ok(message) = queue.recv() {
        handle(message, &mut out);
        while let Ok(more) = queue.try_recv() {
            handle(more, &mut out);
        }
        let _ = out.flush();
    }
}

/// What env_logger writes each formatted record into.
struct Background(SyncSender<Message>);

impl Write for Background {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .send(Message::Line(buf.to_vec()))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the log writer has stopped"))?;
        Ok(buf.len())
    }

    /// env_logger flushes after every record; the writer thread flushes on its own.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes out every line logged so far (call before the process exits).
pub fn finish() {
    if let Some(writer) = WRITER.get() {
        let (done, wait) = sync_channel(1);
        if writer.send(Message::Drain(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

/// Sets up the logger (once; a host program's logger is kept).
pub fn init(format: LogFormat) {
    let mut builder =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(DEFAULT_FILTER));
    if WRITER.get().is_none() {
        let (tx, rx) = sync_channel(PENDING_LINES);
        let spawned = thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_lines(rx));
        if spawned.is_ok() && WRITER.set(tx.clone()).is_ok() {
            builder.target(env_logger::Target::Pipe(Box::new(Background(tx))));
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
