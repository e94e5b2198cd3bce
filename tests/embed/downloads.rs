//! Large downloads in flight: many clients at once, some slow, and a graceful shutdown that
//! lets a download finish.

use super::*;

fn status_of(addr: std::net::SocketAddr, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(addr).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.lines().next().map(str::to_owned)
}

/// A binary serving one blob (`demo/big`, tag v1): the blob's bytes and digest beside it.
struct BigBlob {
    bin: PathBuf,
    payload: Vec<u8>,
    digest: String,
}

/// Builds the binary serving a blob of `mib` MiB, its content under `target/embed-test`.
fn big_blob(mib: u32) -> BigBlob {
    let dir = common::root().join(format!("target/embed-test/content-big-{mib}"));
    let _ = fs::remove_dir_all(&dir);
    let payload: Vec<u8> = (0..mib * 1024 * 1024)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    write(&dir, &layout("demo/big", &payload));
    BigBlob {
        bin: build_with(&dir),
        digest: common::sha256(&payload),
        payload,
    }
}

/// The 64 MiB one, built once for the tests that share it.
fn big_64() -> &'static BigBlob {
    static BUILT: std::sync::OnceLock<BigBlob> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| big_blob(64))
}

/// What one download got: the response head, the body's length and sha256, and when it was
/// whole.
struct Downloaded {
    head: String,
    len: usize,
    digest: String,
    at: Instant,
}

/// Downloads `path` from `addr` on a connection of its own, reading `chunk` bytes at a time
/// and pausing `pause` after each. The body is hashed as it arrives, never held: many
/// downloads of a large blob run at once.
fn download(addr: std::net::SocketAddr, path: &str, chunk: usize, pause: Duration) -> Downloaded {
    use sha2::{Digest as _, Sha256};
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = vec![0; chunk];
    let mut head = Vec::new();
    let mut len = 0;
    let mut hasher = Sha256::new();
    loop {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        let mut data = &buf[..n];
        if !head.ends_with(b"\r\n\r\n") {
            // Still in the head: take bytes up to its end.
            let mut taken = 0;
            while taken < data.len() && !head.ends_with(b"\r\n\r\n") {
                head.push(data[taken]);
                taken += 1;
            }
            data = &data[taken..];
        }
        hasher.update(data);
        len += data.len();
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    Downloaded {
        head: String::from_utf8_lossy(&head).trim_end().to_owned(),
        len,
        digest: format!("sha256:{}", hex::encode(hasher.finalize())),
        at: Instant::now(),
    }
}

/// Many clients download a large blob at once, a quarter of them reading slowly: every
/// download is byte-exact, the server's anonymous memory grows by at most the write buffer
/// each download in flight holds (1 MiB, docs/operations.md, "Footprint") and some slack, and the fast
/// clients finish while the slow ones are still reading (an order, not a timed bound).
/// `make test`: 16 clients, 64 MiB; `CHARTREG_STRESS=10` (`make stress`): 64 clients, 256 MiB.
#[test]
fn many_downloads_of_a_large_blob_are_exact_and_bounded() {
    let stress = std::env::var("CHARTREG_STRESS").is_ok_and(|s| s != "1");
    let (clients, built) = if stress {
        (64, Box::leak(Box::new(big_blob(256))) as &BigBlob)
    } else {
        (16, big_64())
    };
    let server = common::Process::start_with(&built.bin, &[]);
    let path = format!("/v2/demo/big/blobs/{}", built.digest);
    let anon_before = server.status_kib("RssAnon");
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(anon_before));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pid = server.pid();
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(kib) = common::status_kib_of(pid, "RssAnon") {
                    peak.fetch_max(kib, std::sync::atomic::Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    // About 12 MiB/s for a slow client (6 at full size): they take several times as long.
    let slow_pause = Duration::from_millis(if stress { 40 } else { 20 });
    let started = Instant::now();
    let downloads: Vec<_> = (0..clients)
        .map(|i| {
            let (addr, path) = (server.addr, path.clone());
            let slow = i % 4 == 0;
            let pause = if slow { slow_pause } else { Duration::ZERO };
            (
                slow,
                std::thread::spawn(move || download(addr, &path, 256 * 1024, pause)),
            )
        })
        .collect();
    let finished: Vec<(bool, Downloaded)> = downloads
        .into_iter()
        .map(|(slow, t)| (slow, t.join().expect("a download")))
        .collect();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    let last_fast = finished
        .iter()
        .filter(|f| !f.0)
        .map(|f| f.1.at)
        .max()
        .unwrap();
    let first_slow = finished
        .iter()
        .filter(|f| f.0)
        .map(|f| f.1.at)
        .min()
        .unwrap();
    eprintln!(
        "big downloads: {clients} clients ({} slow) x {} MiB in {:.1}s, all exact: {}; RssAnon {anon_before} KiB before, {peak} KiB at most ({:.2} MiB per download); fast done at {:.1}s, first slow at {:.1}s",
        clients / 4,
        built.payload.len() >> 20,
        started.elapsed().as_secs_f64(),
        finished.iter().all(|f| f.1.digest == built.digest),
        (peak - anon_before) as f64 / 1024.0 / clients as f64,
        (last_fast - started).as_secs_f64(),
        (first_slow - started).as_secs_f64()
    );
    for (slow, got) in &finished {
        let kind = if *slow { "slow" } else { "fast" };
        assert!(
            got.head.starts_with("HTTP/1.1 200"),
            "a {kind} download: {}",
            got.head
        );
        assert_eq!(got.digest, built.digest, "a {kind} download");
    }
    assert!(
        peak <= anon_before + clients * (1024 + 256) + 16 * 1024,
        "anonymous memory rose from {anon_before} KiB to {peak} KiB for {clients} downloads"
    );
    assert!(
        last_fast < first_slow,
        "the fast clients waited for the slow ones"
    );
    assert!(!server.log().contains("panicked"), "{}", server.log());
}

#[test]
fn sigterm_drains_a_large_download_and_exits_cleanly() {
    let BigBlob {
        bin,
        payload,
        digest,
    } = big_64();
    let (bin, digest) = (bin.as_path(), digest.clone());

    let mut server = common::Process::start_args(
        bin,
        &["--shutdown-delay", "1s", "--shutdown-timeout", "30s"],
        &[],
    );
    let addr = server.addr;
    assert_eq!(
        status_of(addr, "/readyz").as_deref(),
        Some("HTTP/1.1 200 OK")
    );

    // A download read at about 20 MiB/s: in flight for about 3 s.
    let path = format!("/v2/demo/big/blobs/{digest}");
    let download =
        std::thread::spawn(move || download(addr, &path, 256 * 1024, Duration::from_millis(12)));
    std::thread::sleep(Duration::from_millis(300));

    let signalled = Instant::now();
    server.signal("TERM");
    // Not ready at once, but still serving during the delay.
    let mut readyz = None;
    for _ in 0..50 {
        readyz = status_of(addr, "/readyz");
        if readyz.as_deref() == Some("HTTP/1.1 503 Service Unavailable") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        readyz.as_deref(),
        Some("HTTP/1.1 503 Service Unavailable"),
        "{}",
        server.log()
    );
    assert!(signalled.elapsed() < Duration::from_millis(900));
    assert_eq!(
        status_of(addr, "/v2/").as_deref(),
        Some("HTTP/1.1 200 OK"),
        "serving during the delay"
    );

    // After the delay the listener closes while the download goes on.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        TcpStream::connect(addr).is_err(),
        "no new connections after the delay"
    );
    if download.is_finished() {
        let got = download.join().unwrap();
        panic!("download ended early: {} {} bytes", got.head, got.len);
    }

    let got = download.join().unwrap();
    assert!(got.head.starts_with("HTTP/1.1 200"), "{}", got.head);
    assert_eq!(got.len, payload.len(), "the whole blob arrived");
    assert_eq!(got.digest, digest, "intact");

    let status = server.wait();
    assert_eq!(status.code(), Some(0), "{}", server.log());
    assert!(signalled.elapsed() >= Duration::from_secs(1));
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens afterwards"
    );
    let log = server.log();
    assert!(log.contains("SIGTERM: not ready"), "{log}");
    assert!(log.contains("stopped"), "{log}");
}
