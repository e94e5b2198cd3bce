//! Access lines, one per request, written by hand straight into the pending buffer (they skip
//! env_logger's general formatting): [`access`] checks the filter and writes the line, as text
//! or as JSON.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use super::{FORMAT, LogFormat, PENDING};

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
