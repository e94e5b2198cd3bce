//! Log output: env_logger at `info` unless `RUST_LOG` says otherwise, as text or as one JSON
//! object per line. Structured fields (the access line's method, path, status, bytes,
//! duration_ms, peer) are key-values on the log record: text lines show the message, JSON
//! lines carry each field as its own key.

use std::io::Write;

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

/// Sets up the logger (once; a host program's logger is kept).
pub fn init(format: LogFormat) {
    let mut builder =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(DEFAULT_FILTER));
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
