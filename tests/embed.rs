//! Binaries built with other content through the build-time switch `CHARTREG_ASSETS=DIR`:
//! files added to or removed from the folder are picked up by the next build; a binary whose
//! content is served from what the build found it to be (build-time facts); a binary whose
//! embedded content is corrupt refuses to start, naming the file (and `chartreg verify` names
//! it); files of 1 MiB and more are
//! linked in as objects (in `.lrodata`) and served byte for byte; and a large download in flight
//! survives a graceful shutdown.
//!
//! Builds go to their own target folder (`target/embed-test`), one at a time, and each binary
//! is copied out before use, so that they never disturb the binary the other tests run or each
//! other.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chartreg_core::oci::layout::ImageManifest;
use chartreg_core::oci::media_type;
use chartreg_core::tree::{Files, LayoutBuilder};

fn layout(name: &str, payload: &[u8]) -> Files {
    let mut layout = LayoutBuilder::new(name);
    let config = layout.blob("application/vnd.oci.image.config.v1+json", b"{}".to_vec());
    let layer = layout.blob("application/octet-stream", payload.to_vec());
    let manifest = ImageManifest::new(config, vec![layer]);
    let d = layout.manifest(media_type::OCI_MANIFEST, &manifest);
    layout.list(d, Some("v1"));
    layout.into_files().unwrap()
}

fn write(dir: &Path, files: &Files) {
    for (path, data) in files {
        let file = dir.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, data).unwrap();
    }
}

static BUILDS: Mutex<()> = Mutex::new(());

/// Builds the binary embedding `assets`; returns the path of a copy of it beside `assets`.
fn build_with(assets: &Path) -> PathBuf {
    build_with_env(assets, &[])
}

fn build_with_env(assets: &Path, env: &[(&str, &str)]) -> PathBuf {
    let _one_at_a_time = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    build_now(assets, env)
}

/// Builds now: the caller holds `BUILDS`.
fn build_now(assets: &Path, env: &[(&str, &str)]) -> PathBuf {
    build_logged(assets, env).0
}

/// Builds now (the caller holds `BUILDS`); returns the copy of the binary and what cargo
/// printed (the build script's warnings among it).
fn build_logged(assets: &Path, env: &[(&str, &str)]) -> (PathBuf, String) {
    let target = common::root().join("target/embed-test");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--locked", "--bin", "chartreg", "--target-dir"])
        .arg(&target)
        .env("CHARTREG_ASSETS", assets)
        .env_remove("CHARTREG_LINK_THRESHOLD")
        .envs(env.iter().copied())
        .current_dir(common::root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let name = assets.file_name().unwrap().to_string_lossy();
    let copy = assets.with_file_name(format!("chartreg-{name}"));
    fs::copy(target.join("debug/chartreg"), &copy).unwrap();
    (copy, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn listed(bin: &Path) -> Vec<String> {
    let out = Command::new(bin).args(["ls", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["repository"].as_str().unwrap(),
                r["tag"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn other_content_is_embedded_at_build_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("assets");
    let dir = dir.as_path();
    let one = layout("demo/one", b"first payload");
    write(dir, &one);

    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1"]);

    // Served from the binary, byte for byte, from what the build found the content to be.
    let server = common::Process::start_with(&bin, &[]);
    assert_checked_at_build(&server);
    let (blob_path, blob) = one
        .iter()
        .find(|(_, b)| b.as_slice() == b"first payload")
        .unwrap();
    let digest = format!("sha256:{}", blob_path.rsplit('/').next().unwrap());
    let out = Command::new("curl")
        .args([
            "-sS",
            "--fail",
            &format!("{}/v2/demo/one/blobs/{digest}", server.url()),
        ])
        .output()
        .unwrap();
    assert_eq!(&out.stdout, blob);
    drop(server);

    // A folder added: the next build embeds it.
    write(dir, &layout("demo/two", b"second payload"));
    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1", "demo/two:v1"]);

    // A folder removed: the next build drops it.
    fs::remove_dir_all(dir.join("demo/two")).unwrap();
    let bin = build_with(dir);
    assert_eq!(listed(&bin), ["demo/one:v1"]);

    // A blob whose bytes no longer match its name: the binary refuses to start.
    let tampered = dir.join(blob_path);
    fs::write(&tampered, b"first pay1oad").unwrap();
    refuses_to_start(&build_with(dir), blob_path);
}

/// The server built its registry from the build's facts (none were stale).
fn assert_checked_at_build(server: &common::Process) {
    let log = server.log();
    assert!(log.contains("content checked at build time"), "{log}");
    assert!(!log.contains("build-time facts"), "{log}");
}

/// `bin` will not serve: it exits 1 naming `path`, whose content does not match its name.
fn refuses_to_start(bin: &Path, path: &str) {
    refuses_to_start_with(
        bin,
        path,
        "content has digest",
        "not the digest it is stored under",
    );
}

/// `bin` will not serve: it exits 1 naming `path` and saying `why`; `chartreg verify` names it
/// too, saying `verify_says`.
fn refuses_to_start_with(bin: &Path, path: &str, why: &str, verify_says: &str) {
    let out = Command::new(bin)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(path) && stderr.contains(why), "{stderr}");
    // `chartreg verify` names the file too.
    let out = Command::new(bin).arg("verify").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "verify: {stderr}");
    assert!(
        stderr.contains(path) && stderr.contains(verify_says),
        "verify: {stderr}"
    );
}

/// The ELF sections of `bin` (name, address, size), from readelf.
fn sections(bin: &Path) -> Vec<(String, u64, u64)> {
    let out = Command::new("readelf")
        .args(["-SW"])
        .arg(bin)
        .output()
        .expect("readelf (binutils) runs");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(['[', ']']).nth(2)?.split_whitespace().collect();
            let hex = |i: usize| u64::from_str_radix(fields.get(i)?, 16).ok();
            Some((fields.first()?.to_string(), hex(2)?, hex(4)?))
        })
        .collect()
}

/// Content the build cannot serve (a manifest naming a missing blob, an index pointing at no
/// manifest, invalid JSON): `cargo build` succeeds with a warning naming the file, and the
/// binary refuses to start, naming it (`chartreg verify` too).
#[test]
fn content_that_cannot_be_served_builds_with_a_warning_and_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let good = layout("demo/one", b"a payload");
    let layer = good
        .iter()
        .find(|(_, data)| data.as_slice() == b"a payload")
        .map(|(path, _)| path.clone())
        .unwrap();
    let index: serde_json::Value = serde_json::from_slice(&good["demo/one/index.json"]).unwrap();
    let nowhere = format!("sha256:{}", "1".repeat(64));
    let mut pointing = index.clone();
    pointing["manifests"][0]["digest"] = nowhere.clone().into();
    // (folder, the tampering, the file named, what start-up and verify say of it)
    type Tamper = Box<dyn Fn(&mut Files)>;
    let layer_path = layer.clone();
    let cases: Vec<(&str, Tamper, String, &str)> = vec![
        (
            "missing",
            Box::new(move |files: &mut Files| {
                files.remove(&layer_path);
            }),
            layer.clone(),
            "is missing",
        ),
        (
            "nowhere",
            Box::new(move |files: &mut Files| {
                files.insert(
                    "demo/one/index.json".into(),
                    serde_json::to_vec(&pointing).unwrap(),
                );
            }),
            format!("demo/one/blobs/sha256/{}", "1".repeat(64)),
            "is missing",
        ),
        (
            "invalid",
            Box::new(|files: &mut Files| {
                files.insert("demo/one/index.json".into(), b"{\"manifests\": [".to_vec());
            }),
            "demo/one/index.json".to_owned(),
            "invalid JSON",
        ),
    ];
    for (name, tamper, path, why) in cases {
        let dir = tmp.path().join(name);
        let mut files = good.clone();
        tamper(&mut files);
        write(&dir, &files);
        let (bin, cargo) = {
            let _one_at_a_time = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
            build_logged(&dir, &[])
        };
        assert!(
            cargo.contains("warning")
                && cargo.contains("cannot be served")
                && cargo.contains(&path),
            "{name}: no warning naming {path}:\n{cargo}"
        );
        refuses_to_start_with(&bin, &path, why, why);
    }
}

/// Size of the ELF section `name` in `bin`.
fn section_size(bin: &Path, name: &str) -> Option<u64> {
    sections(bin)
        .into_iter()
        .find_map(|(section, _, size)| (section == name).then_some(size))
}

fn curl_bytes(url: &str, extra: &[&str]) -> Vec<u8> {
    let out = Command::new("curl")
        .args(["-sS", "--fail"])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn large_files_are_linked_in_and_served_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("large");
    let big: Vec<u8> = (0..3u32 * 1024 * 1024 + 17)
        .map(|i| (i.wrapping_mul(2246822519) >> 11) as u8)
        .collect();
    write(&dir, &layout("demo/big", &big));
    // The same layer in a second repository (a base layer of two images): stored once.
    write(&dir, &layout("demo/also", &big));
    write(&dir, &layout("demo/small", b"small payload"));
    let digest = common::sha256(&big);

    // Default threshold (1 MiB): the 3 MiB layer is linked in, the rest goes through rust-embed.
    // Built again with one more small repository, the layer's object is kept as it was (the
    // builds share their build folder: no other test's build between them).
    let bin = {
        let _one_at_a_time = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
        build_now(&dir, &[]);
        let object = object_of(&digest);
        let written = fs::metadata(&object).unwrap().modified().unwrap();
        write(&dir, &layout("demo/small2", b"another small payload"));
        let bin = build_now(&dir, &[]);
        assert_eq!(fs::metadata(&object).unwrap().modified().unwrap(), written);
        bin
    };
    let linked = section_size(&bin, ".lrodata").expect("a .lrodata section");
    assert!(
        linked >= big.len() as u64 && linked < 2 * big.len() as u64,
        "the shared layer is linked once: {linked}"
    );
    assert_eq!(
        listed(&bin),
        [
            "demo/also:v1",
            "demo/big:v1",
            "demo/small:v1",
            "demo/small2:v1"
        ]
    );
    let server = common::Process::start_with(&bin, &[]);
    assert_checked_at_build(&server);
    let url = format!("{}/v2/demo/big/blobs/{digest}", server.url());
    assert!(curl_bytes(&url, &[]) == big, "the linked blob differs");
    let also = format!("{}/v2/demo/also/blobs/{digest}", server.url());
    assert!(
        curl_bytes(&also, &[]) == big,
        "the shared blob differs in its second repository"
    );
    let middle = curl_bytes(&url, &["-H", "Range: bytes=1048570-2097160"]);
    assert!(middle == big[1048570..=2097160], "the range differs");
    let small = curl_bytes(
        &format!("{}/v2/demo/small/manifests/v1", server.url()),
        &["-H", "Accept: application/vnd.oci.image.manifest.v1+json"],
    );
    assert!(small.starts_with(b"{"));
    drop(server);
    assert_large_data_at_the_end(&bin);

    // A threshold above every file: nothing is linked, and the same content is served.
    let bin = build_with_env(&dir, &[("CHARTREG_LINK_THRESHOLD", "1000000000")]);
    assert_eq!(section_size(&bin, ".lrodata"), None);
    let server = common::Process::start_with(&bin, &[]);
    assert_checked_at_build(&server);
    let url = format!("{}/v2/demo/big/blobs/{digest}", server.url());
    assert!(curl_bytes(&url, &[]) == big, "the rust-embed blob differs");
    drop(server);

    // A linked file whose bytes no longer match its name: the binary refuses to start.
    let (path, _) = layout("demo/big", &big)
        .into_iter()
        .find(|(_, data)| data.len() == big.len())
        .unwrap();
    let mut tampered = big.clone();
    tampered[2 * 1024 * 1024] ^= 1;
    fs::write(dir.join(&path), &tampered).unwrap();
    refuses_to_start(&build_with(&dir), &path);
}

/// The object the build wrote for the file whose digest is `digest` (`sha256:<hex>`).
fn object_of(digest: &str) -> PathBuf {
    let name = format!("{}.o", digest.trim_start_matches("sha256:"));
    let build = common::root().join("target/embed-test/debug/build");
    fs::read_dir(&build)
        .unwrap()
        .flatten()
        .map(|entry| entry.path().join("out/objects").join(&name))
        .find(|object| object.exists())
        .unwrap_or_else(|| panic!("no object {name} under {}", build.display()))
}

/// The ELF symbol `name`'s address in `bin`, from nm.
fn symbol_address(bin: &Path, name: &str) -> Option<u64> {
    let out = Command::new("nm")
        .arg(bin)
        .output()
        .expect("nm (binutils) runs");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let address = fields.next()?;
            (fields.nth(1) == Some(name))
                .then(|| u64::from_str_radix(address, 16).ok())
                .flatten()
        })
}

/// Linked files lie after every other section of the image, `_end` at their page-aligned
/// start: what keeps GiBs of them out of reach of 32-bit references (see chartreg_embed).
fn assert_large_data_at_the_end(bin: &Path) {
    // Allocated sections (address, name) in address order.
    let mut allocated: Vec<(u64, String)> = sections(bin)
        .into_iter()
        .filter(|(_, address, _)| *address != 0)
        .map(|(name, address, _)| (address, name))
        .collect();
    allocated.sort();
    let (start, last) = allocated.last().unwrap();
    assert_eq!(last, ".lrodata", "{allocated:?}");
    assert_eq!(start % 4096, 0, "page-aligned");
    assert_eq!(
        symbol_address(bin, "_end"),
        Some(*start),
        "_end at their start"
    );
}

/// GETs `path` and reads the response slowly (`chunk` bytes, then `pause`), returning the
/// status line and the body.
fn slow_get(
    addr: std::net::SocketAddr,
    path: &str,
    chunk: usize,
    pause: Duration,
) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    let mut buf = vec![0; chunk];
    loop {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        response.extend_from_slice(&buf[..n]);
        std::thread::sleep(pause);
    }
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    (head, response[split + 4..].to_vec())
}

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

/// Downloads `path` from `addr` on a connection of its own, reading `chunk` bytes at a time
/// and pausing `pause` after each; returns the body's sha256 and when it was whole.
fn download(
    addr: std::net::SocketAddr,
    path: &str,
    chunk: usize,
    pause: Duration,
) -> (String, Instant) {
    use sha2::{Digest as _, Sha256};
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = vec![0; chunk];
    let mut head = Vec::new();
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
            assert!(
                head.starts_with(b"HTTP/1.1 200"),
                "{}",
                String::from_utf8_lossy(&head)
            );
        }
        hasher.update(data);
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    (
        format!("sha256:{}", hex::encode(hasher.finalize())),
        Instant::now(),
    )
}

/// Many clients download a large blob at once, a quarter of them reading slowly: every
/// download is byte-exact, the server's anonymous memory grows by at most the write buffer
/// each download in flight holds (1 MiB, README "Footprint") and some slack, and the fast
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
    let finished: Vec<(bool, String, Instant)> = downloads
        .into_iter()
        .map(|(slow, t)| {
            let (digest, at) = t.join().expect("a download");
            (slow, digest, at)
        })
        .collect();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    let last_fast = finished.iter().filter(|f| !f.0).map(|f| f.2).max().unwrap();
    let first_slow = finished.iter().filter(|f| f.0).map(|f| f.2).min().unwrap();
    eprintln!(
        "big downloads: {clients} clients ({} slow) x {} MiB in {:.1}s, all exact: {}; RssAnon {anon_before} KiB before, {peak} KiB at most ({:.2} MiB per download); fast done at {:.1}s, first slow at {:.1}s",
        clients / 4,
        built.payload.len() >> 20,
        started.elapsed().as_secs_f64(),
        finished.iter().all(|f| f.1 == built.digest),
        (peak - anon_before) as f64 / 1024.0 / clients as f64,
        (last_fast - started).as_secs_f64(),
        (first_slow - started).as_secs_f64()
    );
    for (slow, digest, _) in &finished {
        assert_eq!(
            digest,
            &built.digest,
            "a {} download",
            if *slow { "slow" } else { "fast" }
        );
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
        std::thread::spawn(move || slow_get(addr, &path, 256 * 1024, Duration::from_millis(12)));
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
        let (head, body) = download.join().unwrap();
        panic!("download ended early: {head} {} bytes", body.len());
    }

    let (head, body) = download.join().unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body.len(), payload.len(), "the whole blob arrived");
    assert_eq!(common::sha256(&body), digest, "intact");

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
